//! Tree pseudo-LRU: `ways − 1` bits per set arranged as a binary tree; each access flips the
//! bits on its path to point away from it, and the victim is found by following the bits.
//! Associativities that are not a power of two use the next power of two and skip the
//! missing ways.

use super::Replacement;

/// Tree pseudo-LRU.
#[derive(Debug, Clone)]
pub struct TreePlru {
    ways: usize,
    leaves: usize,
    bits: Vec<bool>,
}

impl TreePlru {
    /// PLRU state for `sets` × `ways`.
    pub fn new(sets: usize, ways: usize) -> TreePlru {
        let leaves = ways.next_power_of_two().max(2);
        TreePlru {
            ways,
            leaves,
            bits: vec![false; sets * (leaves - 1)],
        }
    }

    /// Asks the host's caches for the bits of `set`.
    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        let n = self.leaves - 1;
        crate::host::prefetch(&self.bits[set * n..(set + 1) * n]);
    }
}

impl Replacement for TreePlru {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        let base = set * (self.leaves - 1);
        let mut node = 0;
        let mut lo = 0;
        let mut span = self.leaves;
        while span > 1 {
            span /= 2;
            let right = way >= lo + span;
            // Point away from the accessed half.
            self.bits[base + node] = !right;
            if right {
                lo += span;
                node = 2 * node + 2;
            } else {
                node = 2 * node + 1;
            }
        }
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        self.touch(set, way);
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        let base = set * (self.leaves - 1);
        let mut node = 0;
        let mut lo = 0;
        let mut span = self.leaves;
        while span > 1 {
            span /= 2;
            // Follow the bit, unless that half holds no real way.
            let right = self.bits[base + node] && lo + span < self.ways;
            if right {
                lo += span;
                node = 2 * node + 2;
            } else {
                node = 2 * node + 1;
            }
        }
        lo.min(self.ways - 1)
    }
}
