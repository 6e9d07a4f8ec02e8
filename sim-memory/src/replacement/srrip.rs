//! SRRIP (Jaleel et al., ISCA 2010) with 2-bit re-reference prediction values: a hit sets the
//! line's value to 0 (near re-reference), a fill to 2 (long), and the victim is the first way
//! with value 3, ageing the whole set until one exists.

use super::Replacement;

const MAX: u8 = 3;

/// Static re-reference interval prediction.
#[derive(Debug, Clone)]
pub struct Srrip {
    ways: usize,
    rrpv: Vec<u8>,
}

impl Srrip {
    /// SRRIP state for `sets` × `ways`.
    pub fn new(sets: usize, ways: usize) -> Srrip {
        Srrip {
            ways,
            rrpv: vec![MAX; sets * ways],
        }
    }

    /// Asks the host's caches for the RRPVs of `set`.
    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        crate::host::prefetch(&self.rrpv[set * self.ways..(set + 1) * self.ways]);
    }
}

impl Replacement for Srrip {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        self.rrpv[set * self.ways + way] = 0;
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        self.rrpv[set * self.ways + way] = MAX - 1;
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        let s = &mut self.rrpv[set * self.ways..(set + 1) * self.ways];
        loop {
            if let Some(w) = s.iter().position(|&v| v >= MAX) {
                return w;
            }
            for v in s.iter_mut() {
                *v += 1;
            }
        }
    }
}
