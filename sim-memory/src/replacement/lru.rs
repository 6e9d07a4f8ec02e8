//! True LRU: a per-way timestamp from a per-cache counter; the victim is the oldest stamp.
//! O(ways) per victim choice, O(1) per hit, exact.

use super::Replacement;

/// True least-recently-used.
#[derive(Debug, Clone)]
pub struct Lru {
    ways: usize,
    stamp: Vec<u64>,
    clock: u64,
}

impl Lru {
    /// LRU state for `sets` × `ways`.
    pub fn new(sets: usize, ways: usize) -> Lru {
        Lru {
            ways,
            stamp: vec![0; sets * ways],
            clock: 0,
        }
    }

    /// Asks the host's caches for the stamps of `set`.
    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        crate::host::prefetch(&self.stamp[set * self.ways..(set + 1) * self.ways]);
    }
}

impl Replacement for Lru {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamp[set * self.ways + way] = self.clock;
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        self.touch(set, way);
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        // The first way of the oldest stamp (stamps are distinct once set; never-touched ways
        // share 0, and the first of them goes).
        let s = &self.stamp[set * self.ways..(set + 1) * self.ways];
        let (mut best, mut oldest) = (0, s[0]);
        for (w, &t) in s.iter().enumerate().skip(1) {
            if t < oldest {
                (best, oldest) = (w, t);
            }
        }
        best
    }
}
