//! The RTL's `Fifo4` (`weft_hdl::common::Fifo4`) as built, for the
//! cycle-level models whose outputs show a FIFO's head: four entries with
//! the head always in entry 0, so an empty FIFO shows entry 0 as the last
//! pop left it (its power-on fill before any pop), exactly as the RTL.

/// Entries of a `Fifo4`.
pub const DEPTH: usize = 4;

/// A 4-entry FIFO: a pop moves every entry one place towards the head, a
/// push writes the first free entry after this edge's pop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fifo4<T> {
    mem: [T; DEPTH],
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
            count: 0,
        }
    }

    /// The head: entry 0, shown on the outputs even when empty.
    pub fn head(&self) -> &T {
        &self.mem[0]
    }

    /// Entries held (0..=4 in any legal use).
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// One clock edge: `pop` drops the head, `push` stores a value.
    pub fn edge(&mut self, push: Option<T>, pop: bool) {
        let n = self.count;
        let pushed = push.is_some();
        if pop {
            self.mem.rotate_left(1);
            // Entry 3 keeps its value (the RTL shifts it down, not out).
            self.mem[DEPTH - 1] = self.mem[DEPTH - 2].clone();
        }
        if let Some(v) = push {
            let at = n.wrapping_sub(u8::from(pop)) & 7;
            if let Some(slot) = self.mem.get_mut(at as usize) {
                *slot = v;
            }
        }
        match (pushed, pop) {
            (true, false) => self.count = (n + 1) & 7,
            (false, true) => self.count = n.wrapping_add(7) & 7,
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
        // Empty: entry 0 holds what the last pop moved there, the last
        // entry's copy.
        assert_eq!((f.count(), *f.head()), (0, 5));
        f.edge(Some(6), false);
        assert_eq!((f.count(), *f.head()), (1, 6));
        f.edge(Some(7), true);
        assert_eq!((f.count(), *f.head()), (1, 7));
    }
}
