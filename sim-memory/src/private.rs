//! A core's own part of the memory system, borrowed apart from the rest so that cores can
//! run on several host threads at once: its L1I and L1D, its counters and its L1D
//! prefetcher. An access that finds every line it touches in the core's L1 with the
//! permission it needs, and is not the first use of a prefetched line, changes nothing
//! else in the machine (no coherence action, no fill, no bus or DRAM time, no prefetch
//! issued: the L1D prefetcher only learns the access), so it can be served here exactly as
//! [`Memory::access`] serves it; [`Private::serves`] tells which accesses those are.
//!
//! [`Port`] is what the core model calls for an access, implemented by the whole
//! [`Memory`] and by a [`Private`] part, so the model is written once for both.

use crate::cache::Cache;
use crate::hierarchy::{Erasure, Kind, Memory, Outcome, erased, l1_hit, lines};
use crate::prefetch::Prefetcher;
use crate::stats::CoreStats;

/// Where a core's accesses go: the whole memory system, or one core's [`Private`] part.
pub trait Port {
    /// One access of `size` bytes at `addr` by instruction `pc` of `core` at cycle `time`
    /// (see [`Memory::access`]).
    fn access(
        &mut self,
        core: u32,
        pc: u64,
        addr: u64,
        size: u32,
        kind: Kind,
        time: u64,
    ) -> Outcome;
}

impl Port for Memory {
    #[inline]
    fn access(
        &mut self,
        core: u32,
        pc: u64,
        addr: u64,
        size: u32,
        kind: Kind,
        time: u64,
    ) -> Outcome {
        Memory::access(self, core, pc, addr, size, kind, time)
    }
}

/// One core's L1 caches, counters and L1D prefetcher, borrowed from a [`Memory`] by
/// [`Memory::privates`].
pub struct Private<'m> {
    pub(crate) core: u32,
    pub(crate) l1i: &'m mut Cache,
    pub(crate) l1d: &'m mut Cache,
    pub(crate) stats: &'m mut CoreStats,
    pub(crate) prefetcher: &'m mut Prefetcher,
    pub(crate) erase: &'m [u64],
    pub(crate) erasure: Erasure,
    pub(crate) line_shift: u32,
    pub(crate) prefetching: bool,
}

impl Private<'_> {
    /// Whether an access of `size` bytes at `addr` of `kind` can be served by this part
    /// alone: each line it touches is valid in the L1 (a store: in `M`) and none is a
    /// prefetched line not yet used (its first use would trigger the prefetcher).
    #[inline]
    pub fn serves(&self, addr: u64, size: u32, kind: Kind) -> bool {
        let cache: &Cache = if kind == Kind::IFetch {
            self.l1i
        } else {
            self.l1d
        };
        let ok = |line: u64| cache.plain_hit(line, kind == Kind::Store).is_some();
        let (first, last) = lines(addr, size, self.line_shift);
        ok(first) && (last == first || ok(last))
    }
}

impl Port for Private<'_> {
    /// Serves an access [`Private::serves`] accepted, with the same outcome and the same
    /// changes as [`Memory::access`] (which, for such an access, touches only what this part
    /// borrows). Panics on another access: the caller must ask first.
    #[inline]
    fn access(
        &mut self,
        core: u32,
        pc: u64,
        addr: u64,
        size: u32,
        kind: Kind,
        time: u64,
    ) -> Outcome {
        debug_assert_eq!(core, self.core);
        let erased = erased(self.erase, pc, kind);
        // An erased access that hits is an ordinary hit without fill (`Memory::access_unfilled`),
        // an erased one with fill an L1 hit flagged erased if it waited.
        let unfilled = erased && self.erasure == Erasure::NoFill;
        let write = kind == Kind::Store;
        let line_shift = self.line_shift;
        let cache: &mut Cache = if kind == Kind::IFetch {
            self.l1i
        } else {
            self.l1d
        };
        let mut hit = |line: u64| {
            let slot = cache.find(line).expect(
                "Private::access of a line the L1 does not hold: ask Private::serves first",
            );
            let (o, first_use) = l1_hit(cache, slot, write, time, erased && !unfilled);
            assert!(
                !first_use,
                "Private::access of a prefetched line's first use"
            );
            o
        };
        let (first, last) = lines(addr, size, line_shift);
        let mut o = hit(first);
        if last != first {
            o.combine(hit(last));
        }
        self.stats.count(kind, &o);
        if self.prefetching && kind != Kind::IFetch && !unfilled && self.prefetcher.enabled() {
            // A hit that is no first use does not trigger: the prefetcher only learns it.
            self.prefetcher.learn(pc, addr);
        }
        o
    }
}
