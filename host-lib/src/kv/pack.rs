//! Packing tuples into packets: ASK's key partitioning onto the card's lanes.
//!
//! Every lane of the card owns one bank of slots, and a tuple is aggregated
//! in the bank of the lane it arrives in ([`Config::position`]). If a key
//! always arrives in the same lane it occupies one slot in one bank; if it
//! wanders between lanes it takes a slot in each bank it visits, and those
//! slots crowd out other keys. So every key gets a **home lane** from a hash
//! of the key, and the packer tries to put each tuple in its home lane.
//!
//! The packet format has no empty lanes (tuples are contiguous after the
//! header), so tuple `j` of a packet always lands in lane
//! `Config::position(j).1`. The packer keeps one queue per lane and fills
//! position `j` from the queue of that position's lane. When that queue is
//! empty it takes the head of the longest other queue instead (a
//! *misplaced* tuple) rather than end the packet early.
//!
//! The trade-off: keeping every key strictly at home would need a packet to
//! end, or wait for more input, whenever one lane runs dry. Short packets
//! waste beats on headers and the card's line rate is counted in beats.
//! Filling keeps packets full, which costs some efficiency on the card: a
//! misplaced key may take a second slot in another bank, collide there, or
//! be spilled. Correctness never depends on placement, because the host
//! merges every partial sum the card returns. Misplacement is counted in the
//! job's stats (`misplaced`).
//!
//! Lanes are not equally big: the header takes lanes 0 and 1 of a packet's
//! first beat, so a full packet has fewer positions in those lanes. To
//! balance the queues, a key's hash picks a *position* of a full packet
//! uniformly, and its home lane is that position's lane. Each lane then gets
//! a share of the keys equal to its share of a packet's positions.

use std::collections::VecDeque;
use weft_model::kv_agg::Config;

/// murmur3's 32-bit finaliser: a bijection on `u32` with full avalanche.
/// The card picks a key's slot from its low bits (`slot_of`); a lane taken
/// from the same bits would leave most slots of every bank unreachable for
/// dense key ranges, so the lane comes from a well-mixed hash instead.
pub fn mix(key: u32) -> u32 {
    let mut h = key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Which lane each key calls home, for one card geometry and packet size.
#[derive(Clone, Debug)]
pub struct Placement {
    /// Lane of each position of a full packet.
    lane_of_position: Vec<usize>,
    cfg: Config,
}

impl Placement {
    /// Home lanes for packets of up to `max_tuples` tuples (at least 1) on a
    /// card with geometry `cfg`.
    pub fn new(cfg: &Config, max_tuples: usize) -> Self {
        Self {
            lane_of_position: (0..max_tuples.max(1)).map(|j| cfg.position(j).1).collect(),
            cfg: *cfg,
        }
    }

    /// The home lane of `key`.
    pub fn home(&self, key: u32) -> usize {
        // Multiply-shift maps the 32-bit hash uniformly onto the positions.
        let n = self.lane_of_position.len() as u64;
        self.lane_of_position[((mix(key) as u64 * n) >> 32) as usize]
    }

    /// Lanes of the card.
    pub fn lanes(&self) -> usize {
        self.cfg.lanes
    }

    /// The lane tuple `j` of a packet arrives in.
    pub fn lane_of(&self, j: usize) -> usize {
        self.cfg.position(j).1
    }
}

/// One sender's tuples waiting to be packed, queued by home lane.
#[derive(Clone, Debug)]
pub struct Packer {
    placement: Placement,
    queues: Vec<VecDeque<(u32, i32)>>,
    pending: usize,
}

impl Packer {
    /// An empty packer.
    pub fn new(placement: Placement) -> Self {
        Self {
            queues: vec![VecDeque::new(); placement.lanes()],
            placement,
            pending: 0,
        }
    }

    /// Queue one tuple in its key's home lane.
    pub fn push(&mut self, key: u32, value: i32) {
        let lane = self.placement.home(key);
        self.queues[lane].push_back((key, value));
        self.pending += 1;
    }

    /// Tuples waiting.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Take up to `max` tuples in packet order, and how many of them are
    /// misplaced (not in their home lane).
    pub fn take(&mut self, max: usize) -> (Vec<(u32, i32)>, usize) {
        let n = max.min(self.pending);
        let mut out = Vec::with_capacity(n);
        let mut misplaced = 0;
        for j in 0..n {
            let lane = self.placement.lane_of(j);
            let t = match self.queues[lane].pop_front() {
                Some(t) => t,
                None => {
                    misplaced += 1;
                    // The longest queue, so the backlog shrinks evenly.
                    let q = self
                        .queues
                        .iter_mut()
                        .max_by_key(|q| q.len())
                        .and_then(|q| q.pop_front());
                    match q {
                        Some(t) => t,
                        // Unreachable: n <= pending, so some queue has a tuple.
                        None => break,
                    }
                }
            };
            out.push(t);
        }
        self.pending -= out.len();
        (out, misplaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: Config = Config::DEFAULT;

    #[test]
    fn home_lanes_follow_the_packet_shape() {
        let max = 182; // a 1472-byte payload: 23 beats
        let p = Placement::new(&CFG, max);
        let mut per_lane = [0usize; 8];
        for k in 0..182_000u32 {
            per_lane[p.home(k)] += 1;
        }
        // Lanes 0 and 1 have 22 positions of 182, the others 23.
        for (lane, &n) in per_lane.iter().enumerate() {
            let want = if lane < 2 { 22_000.0 } else { 23_000.0 };
            assert!((n as f64 - want).abs() < 0.05 * want, "lane {lane}: {n}");
        }
    }

    #[test]
    fn tuples_land_in_their_home_lane_when_every_lane_has_work() {
        let p = Placement::new(&CFG, 182);
        let mut pk = Packer::new(p.clone());
        for k in 0..5000u32 {
            pk.push(k, 1);
        }
        let (pkt, misplaced) = pk.take(182);
        assert_eq!(pkt.len(), 182);
        assert_eq!(misplaced, 0);
        for (j, (k, _)) in pkt.iter().enumerate() {
            assert_eq!(p.home(*k), CFG.position(j).1);
        }
    }

    #[test]
    fn a_dry_lane_is_filled_from_the_others() {
        let p = Placement::new(&CFG, 182);
        let key = 77;
        let mut pk = Packer::new(p.clone());
        for _ in 0..10 {
            pk.push(key, 2);
        }
        let (pkt, misplaced) = pk.take(182);
        assert_eq!(pkt, vec![(key, 2); 10]);
        let home = p.home(key);
        let at_home = (0..10).filter(|&j| CFG.position(j).1 == home).count();
        assert_eq!(misplaced, 10 - at_home);
        assert_eq!(pk.pending(), 0);
        assert_eq!(pk.take(182).0, vec![]);
    }
}
