//! Statistics of the memory system: plain structs that derive `Serialize` and add up, so that
//! per-instance and per-core figures merge without hand-written field lists.

use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// A counter field: adds another of its kind in place (a count, or an array of counts).
trait Counter {
    fn add(&mut self, o: &Self);
}

impl Counter for u64 {
    fn add(&mut self, o: &u64) {
        *self += *o;
    }
}

impl<const N: usize> Counter for [u64; N] {
    fn add(&mut self, o: &[u64; N]) {
        for (a, b) in self.iter_mut().zip(o) {
            *a += *b;
        }
    }
}

/// Declares a struct of counters and its `AddAssign` (field by field) from one field list,
/// so a new counter cannot be left out of the sum.
macro_rules! counters {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
        }

        impl AddAssign for $name {
            fn add_assign(&mut self, o: Self) {
                $(Counter::add(&mut self.$f, &o.$f);)*
            }
        }
    };
}

counters! {
/// Counters of one cache instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    /// Accesses that reached this cache (for L2/L3: misses or upgrades from below).
    pub accesses: u64,
    /// Accesses that found the line with sufficient permission.
    pub hits: u64,
    /// Misses of instruction fetches.
    pub misses_ifetch: u64,
    /// Misses of loads.
    pub misses_load: u64,
    /// Misses of stores (including upgrades of a shared copy).
    pub misses_store: u64,
    /// Misses on a line this cache lost to an invalidation (subset of the three above).
    pub coherence_misses: u64,
    /// Hits on a line whose fill was still in flight: the access merged into the outstanding
    /// miss and waited for the line (counted in `hits`, not as a miss).
    pub merged: u64,
    /// Lines a prefetcher of this cache brought in (not counted in `accesses`).
    pub prefetches: u64,
    /// Prefetched lines a demand access then used (the first use of each).
    pub prefetch_useful: u64,
    /// Of those, lines still in flight at their first use (the demand waited for them).
    pub prefetch_late: u64,
    /// Prefetched lines evicted before any demand access used them.
    pub prefetch_unused: u64,
    /// Dirty lines written back to the level above on eviction.
    pub writebacks: u64,
    /// Copies invalidated by another core's store or by an inclusive eviction above.
    pub invalidations: u64,
}
}

impl CacheStats {
    /// All misses.
    pub fn misses(&self) -> u64 {
        self.misses_ifetch + self.misses_load + self.misses_store
    }
}

counters! {
/// Per-core counters: where this core's accesses were served. Aligned to two host cache
/// lines: cores simulated on different host threads count into neighbouring entries at every
/// access.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[repr(align(128))]
pub struct CoreStats {
    /// Instruction fetches.
    pub ifetches: u64,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Accesses by where they were served, indexed by [`crate::Served`].
    pub served: [u64; 7],
    /// Data accesses served as L1 hits by miss erasure, by where they would have been served.
    pub erased: [u64; 7],
    /// Sum of latencies in cycles.
    pub latency_cycles: u64,
}
}

impl CoreStats {
    /// Counts one access of `kind` with outcome `o`.
    #[inline]
    pub(crate) fn count(&mut self, kind: crate::Kind, o: &crate::Outcome) {
        match kind {
            crate::Kind::IFetch => self.ifetches += 1,
            crate::Kind::Load => self.loads += 1,
            crate::Kind::Store => self.stores += 1,
        }
        self.served[o.served as usize] += 1;
        if o.erased {
            self.erased[o.would_serve as usize] += 1;
        }
        self.latency_cycles += o.latency;
    }
}
