//! The model's engine: the indirect context engine, the doorbells, and the
//! H2C and C2H data movers.

use super::rss::{toeplitz, tuple};
use super::NoBuffer;
use super::{lock, Model, QdmaModel, Queue, H2C_DEPTH};
use crate::device::HostMemory;
use weft_driver::qdma::ctxt::{cmpt, fmap, pfch, sw, Context};
use weft_driver::qdma::regs::*;
use weft_driver::{Error, FramePorts, Port, Result};

fn refuse(why: String) -> Error {
    Error::Qdma {
        device: "sim:qdma".into(),
        why,
    }
}

impl Model {
    pub(super) fn context_cmd(&mut self, cmd: u32) -> Result<()> {
        let code = CMD_SEL.get(cmd);
        let sel = Sel::from_code(code).ok_or_else(|| {
            refuse(format!(
                "IND_CTXT_CMD {cmd:#x}: no context selector {code:#x}"
            ))
        })?;
        let qid = CMD_QID.get(cmd);
        let limit = if sel == Sel::Fmap {
            SHELL_FUNCTIONS
        } else {
            self.opts.queues
        };
        if qid >= limit {
            return Err(refuse(format!(
                "IND_CTXT_CMD {cmd:#x}: {sel:?} of {qid}, past the {limit} the IP has"
            )));
        }
        match CMD_OP.get(cmd) {
            0 => {
                self.contexts.remove(&(sel, qid));
                self.reset_queue(sel, qid);
            }
            1 => {
                let old = self.contexts.get(&(sel, qid)).copied().unwrap_or_default();
                let mut c = Context::default();
                for i in 0..CTXT_WORDS {
                    c.0[i] = (old.0[i] & !self.mask[i]) | (self.data[i] & self.mask[i]);
                }
                if let Some(why) = Self::unsupported(sel, &c) {
                    // The engine keeps nothing of a context it cannot run:
                    // the driver's read-back sees the old one.
                    self.fault(format!("queue {qid}: {sel:?} context refused: {why}"));
                    return Ok(());
                }
                self.contexts.insert((sel, qid), c);
                self.start_queue(sel, qid, &c);
            }
            2 => {
                self.data = self
                    .contexts
                    .get(&(sel, qid))
                    .copied()
                    .unwrap_or_default()
                    .0;
            }
            _ => {} // invalidate: nothing is cached
        }
        Ok(())
    }

    /// What the model (or the shell's build of the IP) cannot do with `c`.
    fn unsupported(sel: Sel, c: &Context) -> Option<&'static str> {
        match sel {
            Sel::SwH2c | Sel::SwC2h if c.get(sw::BYPASS) == 1 => {
                Some("descriptor bypass (the shell ties the bypass ports off)")
            }
            Sel::SwH2c | Sel::SwC2h if c.get(sw::IS_MM) == 1 => {
                Some("a memory-mapped queue (the shell builds streaming only)")
            }
            Sel::SwH2c | Sel::SwC2h if c.get(sw::IRQ_EN) == 1 => {
                Some("interrupts (not modelled; poll)")
            }
            Sel::SwH2c if c.get(sw::QEN) == 1 && c.get(sw::DESC_SZ) != 1 => {
                Some("H2C descriptors that are not 16 bytes")
            }
            Sel::SwC2h if c.get(sw::QEN) == 1 && c.get(sw::DESC_SZ) != 0 => {
                Some("C2H descriptors that are not 8 bytes")
            }
            Sel::Cmpt if c.get(cmpt::EN_INT) == 1 => Some("interrupts (not modelled; poll)"),
            Sel::Cmpt if c.get(cmpt::VALID) == 1 && c.get(cmpt::DESC_SZ) != 0 => {
                Some("completion entries that are not 8 bytes")
            }
            Sel::Pfch if c.get(pfch::BYPASS) == 1 => Some("prefetch bypass"),
            _ => None,
        }
    }

    fn reset_queue(&mut self, sel: Sel, qid: u32) {
        let q = self.queues.entry(qid).or_default();
        match sel {
            Sel::SwH2c => (q.h2c_pidx, q.h2c_cidx) = (0, 0),
            Sel::SwC2h => (q.c2h_pidx, q.c2h_cidx) = (0, 0),
            Sel::Cmpt => (q.cmpt_pidx, q.cmpt_cidx) = (0, 0),
            _ => {}
        }
    }

    fn start_queue(&mut self, sel: Sel, qid: u32, c: &Context) {
        let q = self.queues.entry(qid).or_default();
        match sel {
            Sel::SwH2c => {
                q.h2c_pidx = c.get(sw::PIDX) as usize;
                q.h2c_cidx = 0;
            }
            Sel::SwC2h => {
                q.c2h_pidx = c.get(sw::PIDX) as usize;
                q.c2h_cidx = 0;
            }
            Sel::Cmpt => {
                q.color = c.get(cmpt::COLOR) == 1;
                q.pkt_id = 0;
            }
            _ => {}
        }
    }

    fn ctx(&self, sel: Sel, qid: u32) -> Context {
        self.contexts.get(&(sel, qid)).copied().unwrap_or_default()
    }

    /// Ring slots (status included) of ring-size index `idx`.
    fn ring(&self, idx: u64) -> Option<usize> {
        let n = *self.globals.get(&(GLBL_RNG_SZ + 4 * idx as u32))? as usize;
        (n >= 3).then_some(n)
    }

    /// The function owning function-relative queue `q` of function 0 (the
    /// queue space the model's BAR0 is), as an absolute queue.
    fn absolute(&self, local: u32) -> u32 {
        self.ctx(Sel::Fmap, 0).get(fmap::QBASE) as u32 + local
    }

    pub(super) fn doorbell(&mut self, local: u32, reg: u32, v: u32) -> Result<()> {
        let qid = self.absolute(local);
        let idx = DB_IDX.get(v) as usize;
        let (sel, rng) = match reg {
            DB_H2C_PIDX => (Sel::SwH2c, sw::RNG_SZ),
            DB_C2H_PIDX => (Sel::SwC2h, sw::RNG_SZ),
            DB_CMPT_CIDX => (Sel::Cmpt, cmpt::QSIZE_IDX),
            _ => {
                return Err(QdmaModel::unmodelled(format!(
                    "queue {local}'s doorbell at +{reg:#x} (interrupt rings)"
                )))
            }
        };
        let Some(n) = self.ring(self.ctx(sel, qid).get(rng)) else {
            return Err(refuse(format!(
                "queue {local}'s {sel:?} doorbell rung ({v:#x}) before its context has a ring size"
            )));
        };
        if idx >= n - 1 {
            return Err(refuse(format!(
                "queue {local}'s {sel:?} doorbell index {idx} in a ring of {} descriptors",
                n - 1
            )));
        }
        if reg == DB_CMPT_CIDX && DB_CMPT_IRQ_ARM.get(v) == 1 {
            return Err(QdmaModel::unmodelled(
                "interrupts (CMPT CIDX irq_arm)".into(),
            ));
        }
        let q = self.queues.entry(qid).or_default();
        match reg {
            DB_H2C_PIDX => q.h2c_pidx = idx,
            DB_C2H_PIDX => q.c2h_pidx = idx,
            _ => q.cmpt_cidx = idx,
        }
        Ok(())
    }

    /// The function whose QCONF range holds `qid`.
    fn qconf_holds(&self, func: u32, qid: u32) -> bool {
        let v = self
            .shell
            .get(&(shell_function(func) + SHELL_QCONF))
            .copied()
            .unwrap_or(0);
        let (base, n) = (QCONF_QBASE.get(v), QCONF_NUMQ.get(v));
        (base..base + n).contains(&qid)
    }

    /// The absolute queue the shell picks for a C2H packet of function 0.
    fn rss_queue(&self, frame: &[u8]) -> u32 {
        let b = shell_function(0);
        let word = |o: u32| self.shell.get(&(b + o)).copied().unwrap_or(0);
        let key: Vec<u8> = (0..HASH_KEY_BYTES as u32 / 4)
            .flat_map(|i| word(SHELL_HASH_KEY + 4 * i).to_be_bytes())
            .collect();
        let h = tuple(frame).map_or(0, |t| toeplitz(&key, &t));
        let local = word(SHELL_INDIR + 4 * (h & 0x7f));
        QCONF_QBASE.get(word(SHELL_QCONF)) + local
    }
}

fn read_u64(mem: &mut HostMemory, iova: u64) -> Result<u64> {
    let mut b = [0u8; 8];
    mem.read_iova(iova, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

impl QdmaModel {
    /// Whether some enabled H2C queue has descriptors the engine has not
    /// fetched (and the stream is not stalled).
    pub(super) fn h2c_waiting(&self, st: &Model) -> bool {
        !st.h2c_stalled
            && st.queues.iter().any(|(&qid, q)| {
                st.ctx(Sel::SwH2c, qid).get(sw::QEN) == 1 && q.h2c_pidx != q.h2c_cidx
            })
    }

    /// Fetch H2C descriptors and hand their packets to the top while it
    /// keeps up.
    pub(super) fn h2c(&self, st: &mut Model) -> Result<()> {
        if st.h2c_stalled {
            return Ok(());
        }
        let qids: Vec<u32> = st.queues.keys().copied().collect();
        let mut mem = lock(&self.mem);
        for qid in qids {
            let c = st.ctx(Sel::SwH2c, qid);
            if c.get(sw::QEN) == 0 {
                continue;
            }
            let Some(n) = st.ring(c.get(sw::RNG_SZ)) else {
                st.fault(format!(
                    "queue {qid}: H2C ring size index {} is not programmed",
                    c.get(sw::RNG_SZ)
                ));
                continue;
            };
            let slots = n - 1;
            let base = c.get(sw::DSC_BASE);
            let func = c.get(sw::FNC) as u32;
            let mut moved = false;
            loop {
                let q = &st.queues[&qid];
                if q.h2c_cidx == q.h2c_pidx || self.card.backlog(Port::Host) >= H2C_DEPTH {
                    break;
                }
                if !st.qconf_holds(func, qid) {
                    st.h2c_stalled = true;
                    st.fault(format!("H2C stream stalled: a packet of queue {qid} is outside function {func}'s QCONF"));
                    return Ok(());
                }
                let cidx = q.h2c_cidx;
                let at = base + 16 * cidx as u64;
                let (lo, addr) = match (read_u64(&mut mem, at), read_u64(&mut mem, at + 8)) {
                    (Ok(lo), Ok(a)) => (lo, a),
                    (Err(e), _) | (_, Err(e)) => {
                        st.fault(format!("queue {qid}: H2C descriptor {cidx} fetch: {e}"));
                        st.contexts
                            .entry((Sel::SwH2c, qid))
                            .or_default()
                            .set(sw::QEN, 0);
                        break;
                    }
                };
                let len = ((lo >> 32) & 0xffff) as usize;
                let size = (lo & 0xffff) as usize;
                let mut data = vec![0u8; len];
                if let Err(e) = mem.read_iova(addr, &mut data) {
                    st.fault(format!(
                        "queue {qid}: H2C packet {cidx} ({len} bytes at {addr:#x}): {e}"
                    ));
                    st.contexts
                        .entry((Sel::SwH2c, qid))
                        .or_default()
                        .set(sw::QEN, 0);
                    break;
                }
                if len == 0 || size != len {
                    st.stats.h2c_bad_size += 1;
                } else {
                    self.card.send(Port::Host, &data)?;
                    st.stats.h2c_packets += 1;
                }
                st.queues.get_mut(&qid).expect("listed").h2c_cidx = (cidx + 1) % slots;
                moved = true;
            }
            if moved && c.get(sw::WBK_EN) == 1 {
                let q = &st.queues[&qid];
                let status = (q.h2c_pidx as u32) | ((q.h2c_cidx as u32) << 16);
                if let Err(e) = mem.write_iova(base + 16 * slots as u64, &status.to_le_bytes()) {
                    st.fault(format!("queue {qid}: H2C status write-back: {e}"));
                }
            }
        }
        Ok(())
    }

    /// The benchmark's engine: every posted H2C descriptor consumed at
    /// once, its status written back, nothing fetched.
    pub(super) fn sink_h2c(&self, st: &mut Model) {
        let mut mem = lock(&self.mem);
        for (&qid, q) in st.queues.iter_mut() {
            let c = st
                .contexts
                .get(&(Sel::SwH2c, qid))
                .copied()
                .unwrap_or_default();
            let n = st
                .globals
                .get(&(GLBL_RNG_SZ + 4 * c.get(sw::RNG_SZ) as u32))
                .copied();
            let (Some(n), true) = (n, q.h2c_cidx != q.h2c_pidx) else {
                continue;
            };
            q.h2c_cidx = q.h2c_pidx;
            let status = (q.h2c_pidx as u32) | ((q.h2c_cidx as u32) << 16);
            let at = c.get(sw::DSC_BASE) + 16 * (n as u64 - 1);
            let _ = mem.write_iova(at, &status.to_le_bytes());
        }
    }

    /// Take what the top sent: wire frames to the network (if CMAC 0
    /// transmits), host frames into the C2H FIFO.
    pub(super) fn collect(&self, st: &mut Model) -> Result<()> {
        for f in self.card.recv()? {
            match f.port {
                Port::Wire if st.cmac_tx() => st.wire_out.push(f),
                Port::Wire => st.stats.wire_tx_dropped += 1,
                Port::Host if st.c2h.len() >= st.opts.c2h_fifo => st.stats.c2h_dropped += 1,
                Port::Host => st.c2h.push_back(f.bytes),
            }
        }
        Ok(())
    }

    /// Write waiting C2H packets into their queues' buffers, each with its
    /// completion entry.
    pub(super) fn c2h(&self, st: &mut Model) -> Result<()> {
        let mut mem = lock(&self.mem);
        while let Some(frame) = st.c2h.front() {
            let qid = st.rss_queue(frame);
            let (sc, pf, cm) = (
                st.ctx(Sel::SwC2h, qid),
                st.ctx(Sel::Pfch, qid),
                st.ctx(Sel::Cmpt, qid),
            );
            let rings = (
                st.ring(sc.get(sw::RNG_SZ)),
                st.ring(cm.get(cmpt::QSIZE_IDX)),
            );
            let bufsz = st
                .globals
                .get(&(C2H_BUF_SZ + 4 * pf.get(pfch::BUFSZ_IDX) as u32))
                .copied()
                .unwrap_or(0) as usize;
            let ready =
                sc.get(sw::QEN) == 1 && pf.get(pfch::VALID) == 1 && cm.get(cmpt::VALID) == 1;
            let (Some(n), Some(cn), true, true) = (rings.0, rings.1, ready, bufsz > 0) else {
                st.fault(format!(
                    "C2H packet for queue {qid}, which is not up: dropped"
                ));
                st.stats.c2h_dropped += 1;
                st.c2h.pop_front();
                continue;
            };
            let (slots, cslots) = (n - 1, cn - 1);
            let len = frame.len();
            let need = len.div_ceil(bufsz).max(1);
            let q = st.queues.entry(qid).or_default().clone();
            let avail = (q.c2h_pidx + slots - q.c2h_cidx) % slots;
            let pending = (q.cmpt_pidx + cslots - q.cmpt_cidx) % cslots;
            if avail < need || pending + 1 >= cslots {
                if st.opts.no_buffer == NoBuffer::Stall {
                    return Ok(());
                }
                st.stats.c2h_dropped += 1;
                st.c2h.pop_front();
                continue;
            }
            let frame = st.c2h.pop_front().expect("front above");
            let mut q: Queue = q;
            let written = (|| -> Result<()> {
                for k in 0..need {
                    let d = sc.get(sw::DSC_BASE) + 8 * ((q.c2h_cidx + k) % slots) as u64;
                    let buf = read_u64(&mut mem, d)?;
                    let chunk = &frame[k * bufsz..len.min((k + 1) * bufsz)];
                    mem.write_iova(buf, chunk)?;
                }
                q.c2h_cidx = (q.c2h_cidx + need) % slots;
                q.pkt_id = q.pkt_id.wrapping_add(1);
                let entry =
                    ((q.color as u64) << 1) | ((len as u64) << 32) | ((q.pkt_id as u64) << 48);
                let base = cm.get(cmpt::BADDR_64) << 6;
                mem.write_iova(base + 8 * q.cmpt_pidx as u64, &entry.to_le_bytes())?;
                q.cmpt_pidx += 1;
                if q.cmpt_pidx == cslots {
                    q.cmpt_pidx = 0;
                    q.color = !q.color;
                }
                if cm.get(cmpt::EN_STAT_DESC) == 1 {
                    let s = q.cmpt_pidx as u64
                        | ((q.cmpt_cidx as u64) << 16)
                        | ((q.color as u64) << 32);
                    mem.write_iova(base + 8 * cslots as u64, &s.to_le_bytes())?;
                }
                Ok(())
            })();
            match written {
                Ok(()) => {
                    st.stats.c2h_packets += 1;
                    st.queues.insert(qid, q);
                }
                Err(e) => {
                    st.fault(format!("queue {qid}: C2H packet of {len} bytes: {e}"));
                    st.stats.c2h_dropped += 1;
                }
            }
        }
        Ok(())
    }
}
