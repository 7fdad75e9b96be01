//! The card's outputs and the host fallback: RESULTs complete chunks,
//! EVICTs and FALLBACKs go to the modelled host, which merges them,
//! acknowledges what it holds and asks for split chunks again.

use super::super::host::HostModel;
use super::super::GradError;
use super::{Run, State};
use std::cmp::Reverse;
use weft_model::grad_agg::host::MergeError;
use weft_model::grad_agg::model::OutPacket;
use weft_model::grad_agg::packet::{self, Header, Kind};

/// The workers whose contributions a card output to the host carries: a
/// FALLBACK its one worker, an EVICT its bitmap.
fn contributors(kind: Kind, h: &Header) -> u32 {
    match kind {
        Kind::Fallback => 1u32.checked_shl(h.worker as u32).unwrap_or(0),
        _ => h.bitmap,
    }
}

/// RACK's reordering window: an eighth of the smoothed completion time,
/// and at least the host's latency, the time its acknowledgement of a
/// split chunk takes to reach the workers (who then leave that chunk to
/// the host). The completion time includes waiting for stragglers and for
/// slots, so it is many network round trips; a quarter of it (RACK's
/// default fraction of the round trip) held each loss at the window's base
/// that much longer and windows stalled behind it (`weft bench goodput
/// --only grad --seeds 40` when it was chosen, at 5%: 1.215x the lossless average JCT with a
/// quarter, 1.204x with an eighth, 1.209x with a sixteenth; at 1%: 1.078x,
/// 1.059x, 1.070x).
pub(super) fn reorder_window(h: &HostModel, srtt: f64) -> u64 {
    ((srtt / 8.0) as u64).max(h.latency)
}

/// The tail-loss probe timeout (RFC 8985, section 7): twice the smoothed
/// completion time or RFC 6298's estimate without the file's floor,
/// whichever is larger, and at least RACK's window.
pub(super) fn probe_timeout(h: &HostModel, srtt: f64, rttvar: f64) -> u64 {
    ((2.0 * srtt).max(srtt + 4.0 * rttvar) as u64).max(reorder_window(h, srtt))
}

impl Run<'_> {
    /// Where a card output belongs: (job, chunk of the current iteration),
    /// or `None` when it is stale.
    pub(super) fn locate(&self, h: &Header) -> Result<Option<(usize, u32)>, GradError> {
        let j = h.job as usize;
        let job = self.jobs.get(j).ok_or_else(|| {
            GradError::Card(format!(
                "a packet of job {} which is not running (chunk {})",
                h.job, h.chunk
            ))
        })?;
        let (iter, c) = (h.chunk / job.chunks, h.chunk % job.chunks);
        let live = job.state == State::Running && iter == job.iter && !job.complete[c as usize];
        Ok(live.then_some((j, c)))
    }

    pub(super) fn card_output(&mut self, p: &OutPacket) -> Result<(), GradError> {
        let pk = packet::decode(self.geo, &p.bytes)
            .map_err(|e| GradError::Card(format!("undecodable {:?} packet: {e}", p.kind)))?;
        let h = pk.header;
        if h.job as usize >= self.jobs.len() {
            return Err(GradError::Card(format!(
                "a {:?} packet of job {}, which does not exist",
                p.kind, h.job
            )));
        }
        match p.kind {
            Kind::Result => match self.locate(&h)? {
                Some((j, c)) => self.complete(j, c, true, &pk.values),
                None => self.stale_results += 1,
            },
            Kind::Evict | Kind::Fallback => {
                // The host reads the header when the packet lands in its
                // memory and acknowledges the contributions it now holds to
                // their workers (a small message; the host model's latency
                // covers the way there and back): their timeouts stop.
                let live = self.locate(&h)?;
                if let Some((j, c)) = live {
                    let bits = contributors(p.kind, &h);
                    let at = self.now + self.file.host.latency;
                    self.acks.push_back((at, j, self.jobs[j].iter, c, bits));
                }
                let job = &mut self.jobs[h.job as usize];
                if p.kind == Kind::Fallback {
                    job.fallbacks += 1;
                } else if !self.flush_written {
                    // Flushes are written only with the engine drained, so
                    // an EVICT outside one is a preemption, unless it is a
                    // stale claim (a late copy of a completed chunk) that a
                    // newer chunk of its job evicted.
                    if live.is_some() {
                        job.preempted += 1;
                    } else {
                        self.stale_evictions += 1;
                    }
                }
                self.host.push(self.now, p.clone());
            }
            Kind::Nack => {
                self.nacks += 1;
                if let Some((j, c)) = self.locate(&h)? {
                    self.nack(j, c, h.bitmap);
                }
            }
            Kind::Data => return Err(GradError::Card("the card sent a DATA packet out".into())),
        }
        Ok(())
    }

    /// Whether merging `p` would add a worker to a chunk in progress (what
    /// the host tells from the header and its own state).
    pub(super) fn useful(&self, p: &OutPacket) -> bool {
        let Some(h) = Header::decode(&p.bytes) else {
            return false;
        };
        let Ok(Some((j, c))) = self.locate(&h) else {
            return false;
        };
        let have = self.jobs[j].host_have.get(&c).copied().unwrap_or(0);
        contributors(p.kind, &h) & !have != 0
    }

    pub(super) fn host_merge(&mut self, p: OutPacket) -> Result<(), GradError> {
        let Some(h) = Header::decode(&p.bytes) else {
            return Err(GradError::Card("a short packet reached the host".into()));
        };
        let Some((j, c)) = self.locate(&h)? else {
            self.host_stale += 1;
            return Ok(());
        };
        let job = &mut self.jobs[j];
        match job.merge.accept(&p.bytes) {
            Ok(Some(done)) => {
                let sums = done.sums;
                self.complete(j, c, false, &sums);
            }
            Ok(None) => {
                *job.host_have.entry(c).or_default() |= contributors(p.kind, &h);
                self.arm(j, c);
            }
            Err(MergeError::Conflict { .. }) => {
                // The host's partials and this one overlap in a way sums
                // cannot separate (copies after losses): every worker sends
                // the chunk to the card again, where it completes whole
                // (a worker that has not sent it yet will, in its turn).
                for wk in &mut job.workers {
                    if c < wk.next && !wk.resend.iter().any(|&(x, _)| x == c) {
                        wk.resend.push_back((c, true));
                        job.host_resends += 1;
                    }
                }
                self.arm(j, c);
            }
            Err(e) => return Err(GradError::Merge(e)),
        }
        Ok(())
    }

    /// A NACK of chunk `c` reached the workers missing from `bitmap`: a
    /// copy found the chunk's slot waiting without them. Each sends again
    /// once its last send is older than RACK's reordering window (a packet
    /// of its still in the network may yet arrive). The workers the bitmap
    /// names know the card holds their contribution: their timers for the
    /// chunk stop, as the host's acknowledgement stops them (a slot's
    /// partial leaves the card only to the host, which asks again).
    pub(super) fn nack(&mut self, j: usize, c: u32, bitmap: u32) {
        let now = self.now;
        let window = self.window;
        let job = &mut self.jobs[j];
        let reo = reorder_window(&self.file.host, job.srtt);
        // A chunk the host holds part of is mostly the host's to complete
        // (RACK leaves it to the host): a worker missing from the slot may
        // be one whose packet the host holds or has not acknowledged yet.
        // Its missing workers wait a host round first (skipping them
        // altogether left a split chunk with a lost packet to the host's
        // rounds alone: 1.085x against 1.060x at 1%, 40 seeds).
        let split = job.at_host.contains(&c);
        let host_round = self.file.host.resend_after;
        for (w, wk) in job.workers.iter_mut().enumerate() {
            if c >= wk.next {
                continue;
            }
            let k = (c % window) as usize;
            if bitmap & 1 << w != 0 {
                wk.acked[k] = true;
                continue;
            }
            let due = if split { now + host_round } else { now }.max(wk.xmit[k] + reo);
            if wk.deadline[k] > due {
                wk.deadline[k] = due;
                self.next_rto = Some(self.next_rto.map_or(due, |t| t.min(due)));
            }
        }
    }

    pub(super) fn host_timer(&mut self, t: u64, j: usize, iter: u32, c: u32) {
        let now = self.now;
        let resend_after = self.file.host.resend_after;
        let job = &mut self.jobs[j];
        if job.state != State::Running
            || job.iter != iter
            || job.complete[c as usize]
            || job.resend_at.get(&c) != Some(&t)
        {
            return;
        }
        // Packets of the chunk waiting in the host's inbox: their merge
        // re-arms the timer if the chunk is still incomplete then.
        let wire = iter * job.chunks + c;
        if self.host.holds(now, job.id, wire) {
            job.resend_at.remove(&c);
            return;
        }
        let have = job.host_have.get(&c).copied().unwrap_or(0);
        // The host asks exactly for what it holds: the card's partial
        // completes with the last of these copies, and none is left to
        // arrive after. If that did not complete the chunk, a packet of a
        // worker it does not hold was lost too (their timers leave a chunk
        // the host holds to the host): from the second round on it asks
        // every worker, the others' copies marked as possibly late. Asking
        // them only once left a chunk whose copy was lost again to that
        // worker's full timeout, with the job's window stalled behind it
        // (at 5% loss, 1.79x the lossless average JCT against 1.24x).
        let again = *job
            .host_rounds
            .entry(c)
            .and_modify(|r| *r += 1)
            .or_insert(0)
            >= 1;
        for (w, wk) in job.workers.iter_mut().enumerate() {
            let held = have & (1 << w) != 0;
            // Only workers that sent the chunk: one still computing, or
            // behind, sends it in its turn (asking it too sent a chunk
            // before the worker had computed it, and its peers' RACK took
            // the early completion for a sign of loss).
            let sent = c < wk.next;
            if (held || again && sent) && !wk.resend.iter().any(|&(x, _)| x == c) {
                wk.resend.push_back((c, !held));
                job.host_resends += 1;
            }
        }
        let d = now + resend_after;
        job.resend_at.insert(c, d);
        self.timers.push(Reverse((d, j, iter, c)));
    }

    pub(super) fn arm(&mut self, j: usize, c: u32) {
        let d = self.now + self.file.host.resend_after;
        let job = &mut self.jobs[j];
        job.resend_at.insert(c, d);
        self.timers.push(Reverse((d, j, job.iter, c)));
    }

    pub(super) fn complete(&mut self, j: usize, c: u32, on_card: bool, sums: &[i32]) {
        self.last_progress = self.now;
        let cv = self.geo.chunk_values();
        let job = &mut self.jobs[j];
        let base = c as u64 * cv as u64;
        if sums.len() != cv && self.first_difference.is_none() {
            self.first_difference = Some(format!(
                "job {} chunk {c}: {} values, a chunk has {cv}",
                job.spec.name,
                sums.len()
            ));
        }
        for (k, &got) in sums.iter().enumerate().take(cv) {
            let idx = base + k as u64;
            let want: i64 = if idx < job.spec.values {
                (0..job.workers.len())
                    .map(|w| self.vals.value(j, w, job.iter, idx) as i64)
                    .sum()
            } else {
                0
            };
            if got as i64 != want && self.first_difference.is_none() {
                self.first_difference = Some(format!(
                    "job {} iteration {} value {idx}: {} {got}, exact {want}",
                    job.spec.name,
                    job.iter,
                    if on_card { "card" } else { "host" }
                ));
            }
        }
        self.checked += 1;
        if let Some(r) = &mut job.result {
            for (d, s) in r.iter_mut().skip(base as usize).zip(sums) {
                *d = *s;
            }
        }
        // The time from the chunk's first send (by its leading worker) to
        // now, unless a copy was sent.
        let slot = (c % self.window) as usize;
        let firsts = job
            .workers
            .iter()
            .filter(|w| c < w.next)
            .map(|w| w.sent[slot]);
        if firsts.clone().all(|(_, copied)| !copied) {
            if let Some(t0) = firsts.map(|(t, _)| t).min() {
                let r = self.now.saturating_sub(t0) as f64;
                if job.srtt == 0.0 {
                    job.srtt = r;
                    job.rttvar = r / 2.0;
                } else {
                    job.rttvar = 0.75 * job.rttvar + 0.25 * (job.srtt - r).abs();
                    job.srtt = 0.875 * job.srtt + 0.125 * r;
                }
            }
        }
        job.complete[c as usize] = true;
        // RACK (RFC 8985): every worker sends its chunks in order and a chunk
        // completes with its last worker's packet, so an older chunk still
        // incomplete once `c` is has lost a packet, or waits on the host
        // (which acknowledges what it holds, stopping those timers). Its
        // timer is brought forward to the reordering window: a loss costs
        // that, not a whole timeout, and no window stalls behind it.
        // The window doubles with each copy of the chunk, as its timeout
        // does: a chunk the host is slow to complete is not buried.
        let reo = reorder_window(&self.file.host, job.srtt);
        let window = self.window;
        let pto = probe_timeout(&self.file.host, job.srtt, job.rttvar);
        let n = job.workers.len();
        for (wi, w) in job.workers.iter_mut().enumerate() {
            // Progress re-arms a tail-loss probe (as an ack does TCP's):
            // chunks sent after `c` with nothing above them complete yet
            // probe `pto` from now, not from the last send.
            if w.next == job.chunks && job.srtt > 0.0 {
                let mut above = false;
                for x in (c + 1..w.next).rev() {
                    let k = (x % window) as usize;
                    above |= job.complete[x as usize];
                    let due = self.now + (pto << w.tries[k]);
                    if !above && w.deadline[k] < due {
                        w.deadline[k] = due;
                    }
                }
            }
            let sent_c = w.xmit[(c % window) as usize];
            for x in job.low..c.min(w.next) {
                let k = (x % window) as usize;
                // One worker per chunk probes (its copy completes the chunk,
                // or meets the slot and brings back the card's NACK naming
                // who is missing); the others wait a window longer, in case
                // the probe is lost too. Every worker copying, as before,
                // sent a copy per worker for each loss, and the wire carried
                // them all.
                let prober = x as usize % n == wi;
                let wait = if prober { reo } else { 2 * reo };
                let due = self.now + (wait << w.tries[k]);
                if !job.complete[x as usize]
                    && !w.acked[k]
                    && !job.at_host.contains(&x)
                    && w.xmit[k] < sent_c
                    && w.deadline[k] > due
                {
                    w.deadline[k] = due;
                    self.next_rto = Some(self.next_rto.map_or(due, |t| t.min(due)));
                }
            }
        }
        job.done += 1;
        if on_card {
            job.on_card += 1;
        } else {
            job.by_host += 1;
        }
        job.host_have.remove(&c);
        job.resend_at.remove(&c);
        job.at_host.remove(&c);
        job.host_rounds.remove(&c);
        while job.low < job.chunks && job.complete[job.low as usize] {
            job.low += 1;
        }
        if job.done == job.chunks {
            job.obs.bytes += job.iter_bytes;
            job.obs.compute += job.iter_compute;
            job.iter += 1;
            if job.iter == job.spec.iterations {
                job.state = State::Done;
                job.finish = self.now;
                self.prio_dirty = true;
            } else {
                self.start_iteration(j);
            }
        }
    }
}
