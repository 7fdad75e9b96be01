//! The RTL's `Fifo4` (`weft_hdl::common::Fifo4`) as built, for the
//! cycle-level models whose outputs show a FIFO's head: a ring of four
//! entries with read and write pointers, so an empty FIFO shows the entry
//! its read pointer rests on (what was last popped; its power-on fill before
//! any wrap), exactly as the RTL.

/// Entries of a `Fifo4`.
pub const DEPTH: usize = 4;

/// A 4-entry ring FIFO: a push writes at the write pointer, a pop advances
/// the read pointer; the entries themselves never move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fifo4<T> {
    mem: [T; DEPTH],
    /// Read pointer (2 bits in the RTL).
    rd: usize,
    /// Write pointer (2 bits in the RTL).
    wr: usize,
    /// Entries held; a 3-bit register in the RTL, so a push into a full
    /// FIFO or a pop from an empty one (which no caller makes) wraps as it
    /// does there.
    count: u8,
}

impl<T: Clone + Default> Default for Fifo4<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: Clone> Fifo4<T> {
    /// An empty FIFO whose entries hold `fill` (the RTL's power-on zeros).
    pub fn new(fill: T) -> Self {
        Self {
            mem: std::array::from_fn(|_| fill.clone()),
            rd: 0,
            wr: 0,
            count: 0,
        }
    }

    /// The head: the entry under the read pointer, shown on the outputs
    /// even when empty.
    pub fn head(&self) -> &T {
        &self.mem[self.rd]
    }

    /// Entries held (0..=4 in any legal use).
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// One clock edge: `pop` drops the head, `push` stores a value.
    pub fn edge(&mut self, push: Option<T>, pop: bool) {
        let pushed = push.is_some();
        if let Some(v) = push {
            self.mem[self.wr] = v;
            self.wr = (self.wr + 1) % DEPTH;
        }
        if pop {
            self.rd = (self.rd + 1) % DEPTH;
        }
        match (pushed, pop) {
            (true, false) => self.count = (self.count + 1) & 7,
            (false, true) => self.count = self.count.wrapping_add(7) & 7,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_with_a_stale_head() {
        let mut f = Fifo4::new(0u32);
        for v in 1..=4 {
            f.edge(Some(v), false);
        }
        assert_eq!((f.count(), *f.head()), (4, 1));
        f.edge(Some(5), true);
        assert_eq!((f.count(), *f.head()), (4, 2));
        for want in [3, 4, 5] {
            f.edge(None, true);
            assert_eq!(*f.head(), want);
        }
        f.edge(None, true);
        // Empty: the read pointer has come round to entry 1, which still
        // holds the 2 popped long ago.
        assert_eq!((f.count(), *f.head()), (0, 2));
        f.edge(Some(6), false);
        assert_eq!((f.count(), *f.head()), (1, 6));
        f.edge(Some(7), true);
        assert_eq!((f.count(), *f.head()), (1, 7));
    }
}
