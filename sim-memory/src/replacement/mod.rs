//! Replacement policies. One trait, one file per policy; a cache holds the policy chosen in
//! the config in an enum, so the per-access call is a match, not a virtual call.
//!
//! Contract: a policy keeps its own per-set state for a fixed geometry; `touch` is called on
//! every hit, `insert` on every fill (after `victim` chose the way, or for a way that was
//! invalid); `victim` is called only when every way of the set is valid and must return a way
//! of that set. Policies never see addresses and never allocate after construction.

mod lru;
mod plru;
mod srrip;

pub use lru::Lru;
pub use plru::TreePlru;
pub use srrip::Srrip;

use crate::config::ReplacementKind;

/// A replacement policy over `sets` × `ways`.
pub trait Replacement {
    /// The line in (`set`, `way`) was hit.
    fn touch(&mut self, set: usize, way: usize);
    /// A line was filled into (`set`, `way`).
    fn insert(&mut self, set: usize, way: usize);
    /// The way to evict from a full `set`.
    fn victim(&mut self, set: usize) -> usize;
}

/// The policy of one cache.
#[derive(Debug, Clone)]
pub enum Policy {
    /// True LRU.
    Lru(Lru),
    /// Tree pseudo-LRU.
    TreePlru(TreePlru),
    /// SRRIP.
    Srrip(Srrip),
}

impl Policy {
    /// Builds the policy `kind` for the geometry.
    pub fn new(kind: ReplacementKind, sets: usize, ways: usize) -> Policy {
        match kind {
            ReplacementKind::Lru => Policy::Lru(Lru::new(sets, ways)),
            ReplacementKind::TreePlru => Policy::TreePlru(TreePlru::new(sets, ways)),
            ReplacementKind::Srrip => Policy::Srrip(Srrip::new(sets, ways)),
        }
    }

    /// Asks the host's caches for the state of `set` (a hint: see `host.rs`).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        match self {
            Policy::Lru(p) => p.prefetch(set),
            Policy::TreePlru(p) => p.prefetch(set),
            Policy::Srrip(p) => p.prefetch(set),
        }
    }
}

impl Replacement for Policy {
    #[inline(always)]
    fn touch(&mut self, set: usize, way: usize) {
        match self {
            Policy::Lru(p) => p.touch(set, way),
            Policy::TreePlru(p) => p.touch(set, way),
            Policy::Srrip(p) => p.touch(set, way),
        }
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        match self {
            Policy::Lru(p) => p.insert(set, way),
            Policy::TreePlru(p) => p.insert(set, way),
            Policy::Srrip(p) => p.insert(set, way),
        }
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        match self {
            Policy::Lru(p) => p.victim(set),
            Policy::TreePlru(p) => p.victim(set),
            Policy::Srrip(p) => p.victim(set),
        }
    }
}
