//! The workers' side of a run: iterations, picking and sending packets,
//! and their timeouts.

use super::super::jobs::MAX_CYCLES;
use super::{Run, State, MAX_BACKOFF};
use rand::Rng;
use weft_model::grad_agg::host::HostMerge;
use weft_model::grad_agg::packet::{self, Header};

impl Run<'_> {
    /// Job `j` starts an iteration now: every worker computes, for the
    /// job's compute cycles plus its straggler delay, then streams.
    pub(super) fn start_iteration(&mut self, j: usize) {
        let now = self.now;
        let jitter = self.file.jitter;
        let job = &mut self.jobs[j];
        self.host_duplicates += job.merge.dropped;
        job.complete.fill(false);
        job.done = 0;
        job.low = 0;
        job.merge = HostMerge::new(self.geo);
        job.host_have.clear();
        job.resend_at.clear();
        job.at_host.clear();
        job.host_rounds.clear();
        job.iter_bytes = 0;
        let compute = job.spec.compute;
        let mut total = 0u64;
        for w in &mut job.workers {
            let extra = (compute as f64 * jitter * self.rng.gen::<f64>()) as u64;
            w.ready_at = now + compute + extra;
            w.next = 0;
            w.resend.clear();
            total += compute + extra;
        }
        job.iter_compute = total / job.workers.len() as u64;
    }

    /// The next packet for the stream, round-robin over the workers:
    /// `Some(Some(bytes))` to deliver, `Some(None)` when the network lost
    /// it, `None` when no worker has anything to send.
    ///
    /// With traffic classes (`srpt`), the switch port in front of the card
    /// serves its classes strictly: only workers of the highest class that
    /// has a packet send, round-robin among themselves.
    pub(super) fn pick(&mut self) -> Option<Option<Vec<u8>>> {
        let n = self.flat.len();
        let now = self.now;
        let class = self.top_class();
        for k in 0..n {
            let idx = (self.rr + k) % n;
            let (j, w) = self.flat[idx];
            if class.is_some_and(|c| self.classes[j] != c) {
                continue;
            }
            let job = &mut self.jobs[j];
            if job.state != State::Running {
                continue;
            }
            let low = job.low;
            let chunks = job.chunks;
            let wk = &mut job.workers[w];
            // Completed chunks' copies are cancelled: the worker has the
            // result.
            while wk
                .resend
                .front()
                .is_some_and(|&(c, _)| job.complete[c as usize])
            {
                wk.resend.pop_front();
            }
            let (c, copy) = if let Some((c, suspect)) = wk.resend.pop_front() {
                (c, Some(suspect))
            } else if wk.ready_at <= now && wk.next < chunks && wk.next < low + self.window {
                wk.next += 1;
                (wk.next - 1, None)
            } else {
                continue;
            };
            self.rr = idx + 1;
            return Some(self.send(j, w, c, copy));
        }
        None
    }

    /// The highest traffic class with a packet to send, when the running
    /// jobs are not all in one class (`None`: every worker may send).
    fn top_class(&self) -> Option<u8> {
        let mut running = (0..self.jobs.len())
            .filter(|&j| self.jobs[j].state == State::Running)
            .map(|j| self.classes[j]);
        let first = running.next()?;
        if running.all(|c| c == first) {
            return None;
        }
        self.flat
            .iter()
            .filter(|&&(j, w)| self.has_packet(j, w))
            .map(|&(j, _)| self.classes[j])
            .max()
    }

    /// Whether worker `w` of job `j` has a packet to send now: a copy of a
    /// chunk still incomplete, or its next chunk, computed and inside the
    /// window (as [`Self::pick`] takes them).
    fn has_packet(&self, j: usize, w: usize) -> bool {
        let job = &self.jobs[j];
        let wk = &job.workers[w];
        job.state == State::Running
            && (wk.resend.iter().any(|&(c, _)| !job.complete[c as usize])
                || wk.ready_at <= self.now
                    && wk.next < job.chunks
                    && wk.next < job.low + self.window)
    }

    /// Send chunk `c` of worker `w` of job `j`; `copy` is `Some(suspect)`
    /// for a copy.
    pub(super) fn send(
        &mut self,
        j: usize,
        w: usize,
        c: u32,
        copy: Option<bool>,
    ) -> Option<Vec<u8>> {
        let cv = self.geo.chunk_values();
        let job = &mut self.jobs[j];
        let slot = (c % self.window) as usize;
        let wk = &mut job.workers[w];
        match copy {
            None => {
                wk.tries[slot] = 0;
                wk.sent[slot] = (self.now, false);
                wk.acked[slot] = false;
            }
            Some(true) => {
                wk.tries[slot] = wk.tries[slot].saturating_add(1).min(MAX_BACKOFF);
                wk.sent[slot].1 = true;
                wk.acked[slot] = false;
            }
            Some(false) => wk.sent[slot].1 = true,
        }
        wk.xmit[slot] = self.now;
        // The timeout t adapts to how long chunks take (RFC 6298's SRTT +
        // 4 RTTVAR, the file's timeout its floor), so stragglers or a host
        // that has fallen behind do not set timers off; it doubles with
        // every timeout of the chunk (up to 32x), so such a host is not
        // buried under copies either (congestion collapse). The deadline is
        // drawn from [t, 1.5 t): the workers' copies of one chunk then come
        // apart, the first that completes it cancels the others, and few
        // arrive after completion to claim a slot nobody will finish (as
        // TCP randomises its timers).
        let rto = (job.srtt + 4.0 * job.rttvar) as u64;
        let t = self.file.timeout.max(rto).min(MAX_CYCLES) << wk.tries[slot];
        let deadline = self.now + t + self.rto_rng.gen_range(0..t / 2 + 1);
        wk.deadline[slot] = deadline;
        self.next_rto = Some(self.next_rto.map_or(deadline, |t| t.min(deadline)));
        // Tail-loss probe (RFC 8985, section 7): after a worker's last chunk
        // of the iteration no later completion can reveal a loss to RACK,
        // so its chunks still outstanding time out at the probe timeout
        // rather than the full one (each completion re-arms it). Only with
        // a completion time measured: before it, stragglers could look
        // like losses.
        // A copy sent then (the probe's, or RACK's) is a tail chunk too:
        // its own timeout is the probe's, doubled per copy, not the file's
        // conservative floor, which would stall the iteration for it.
        // So does a copy sent while the worker's window is full: nothing it
        // sends after could reveal the copy's loss to RACK either, and a
        // copy lost again there used to wait out the file's floor, doubled
        // per copy (1.6 M cycles after three), with the job's window
        // stalled behind it. First sends keep the full timeout there: a
        // leader whose window fills while a straggler still computes would
        // otherwise probe chunks that are only waiting.
        let tail = wk.next == job.chunks;
        let stuck_copy = copy.is_some() && wk.next >= job.low + self.window;
        if (tail || stuck_copy) && job.srtt > 0.0 {
            let pto = super::outputs::probe_timeout(&self.file.host, job.srtt, job.rttvar);
            let chunks = if tail { job.low..wk.next } else { c..c + 1 };
            for x in chunks {
                let k = (x % self.window) as usize;
                let due = self.now + (pto << wk.tries[k]);
                if !job.complete[x as usize]
                    && !wk.acked[k]
                    && !job.at_host.contains(&x)
                    && wk.deadline[k] > due
                {
                    wk.deadline[k] = due;
                    self.next_rto = Some(self.next_rto.map_or(due, |t| t.min(due)));
                }
            }
        }
        job.packets += 1;
        job.iter_bytes += (cv * packet::VALUE_BYTES) as u64;
        if copy == Some(true) {
            self.suspects += 1;
        }
        if self.opts.loss > 0.0 && self.rng.gen_bool(self.opts.loss) {
            job.lost += 1;
            return None;
        }
        let h = Header::data(
            self.geo,
            job.id,
            job.iter * job.chunks + c,
            w as u8,
            job.spec.workers,
        );
        let len = job.spec.values;
        let vals: Vec<i32> = (0..cv as u64)
            .map(|k| {
                let idx = c as u64 * cv as u64 + k;
                if idx < len {
                    self.vals.value(j, w, job.iter, idx)
                } else {
                    0
                }
            })
            .collect();
        // A header of this geometry with a full chunk of values always
        // encodes.
        let bytes = packet::encode(self.geo, &h, &vals).ok()?;
        self.network(bytes)
    }

    /// The network between the workers and the card's wire port, after
    /// the loss: the packet to put on the wire now, if any. A duplicate
    /// arrives right behind its original; a held-back packet later, while
    /// later ones pass it. Either may reach a slot after its chunk
    /// completed, so each counts among the copies the flush clears up
    /// after.
    fn network(&mut self, bytes: Vec<u8>) -> Option<Vec<u8>> {
        let before = self.net.stats();
        self.net.send(self.now, 0, 0, bytes);
        let after = self.net.stats();
        self.suspects += after.duplicated - before.duplicated + after.reordered - before.reordered;
        self.due_from_network()
    }

    /// A packet the network delivers to the wire now, ahead of new ones.
    pub(super) fn due_from_network(&mut self) -> Option<Vec<u8>> {
        let now = self.now;
        self.arrived
            .extend(self.net.deliver_due(now).into_iter().map(|d| d.payload));
        self.arrived.pop_front()
    }

    /// The host's acknowledgement reaches workers `bits` of chunk `c`.
    pub(super) fn ack(&mut self, j: usize, iter: u32, c: u32, bits: u32) {
        let window = self.window;
        let job = &mut self.jobs[j];
        if job.state != State::Running || job.iter != iter || job.complete[c as usize] {
            return;
        }
        job.at_host.insert(c);
        for (w, wk) in job.workers.iter_mut().enumerate() {
            if bits & (1 << w) != 0 && c < wk.next {
                wk.acked[(c % window) as usize] = true;
            }
        }
    }

    /// Queue a copy of every chunk whose timeout has passed, and note when
    /// the next one does.
    pub(super) fn scan_timeouts(&mut self) {
        let now = self.now;
        let window = self.window;
        let mut next: Option<u64> = None;
        for job in &mut self.jobs {
            if job.state != State::Running {
                continue;
            }
            for w in &mut job.workers {
                for c in job.low..w.next {
                    if job.complete[c as usize]
                        || w.acked[(c % window) as usize]
                        || w.resend.iter().any(|&(x, _)| x == c)
                    {
                        continue;
                    }
                    let due = w.deadline[(c % window) as usize];
                    if due <= now {
                        w.resend.push_back((c, true));
                        job.retransmissions += 1;
                    } else {
                        next = Some(next.map_or(due, |t| t.min(due)));
                    }
                }
            }
        }
        self.next_rto = next;
    }
}
