//! A core's own part of the memory system, borrowed apart from the rest so that cores can
//! run on several host threads at once: its L1I and L1D, its L2 when no other core shares
//! it, its counters and its two prefetchers. Two kinds of access change nothing outside
//! that part, so they can be served here exactly as [`Memory::access`] serves them
//! ([`Private::reach`] tells which):
//! * an *L1 hit*: every line it touches is valid in the L1 with the permission it needs and
//!   none is a prefetched line not used yet (the L1D prefetcher only learns the access);
//! * an *L2 hit* (a private L2 only): one line, not erased, missing its L1 and valid in the
//!   L2 with the permission it needs, no prefetched line's first use there, and, for data,
//!   every line the L1D prefetcher then asks for valid in the L2 and no first use there
//!   either. Such an access fills the L1 from the L2 (the L1's victim goes back to the L2),
//!   acts on the core's other L1 if that holds the line, and trains both prefetchers
//!   without any request leaving the L2: no bus, no L3, no other core.
//!
//! [`Memory::access`] serves the same accesses with the same results by its general path (a
//! unit test compares the two, state and all).
//!
//! [`Port`] is what the core model calls for an access, implemented by the whole
//! [`Memory`] and by a [`Private`] part, so the model is written once for both.

use crate::cache::{Cache, INVALID, MODIFIED, NO_PARENT, SHARED};
use crate::config::Protocol;
use crate::hierarchy::{Erasure, Kind, Memory, Outcome, Served, erased, l1_hit, lines};
use crate::prefetch::Prefetcher;
use crate::stats::CoreStats;

/// The bits of a core's L1I and L1D in its private L2's sharer masks (`Memory::new` builds
/// them so).
pub(crate) const L1_BITS: [u32; 2] = [0, 1];

/// How far from the core an access must go ([`Private::reach`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Its L1 serves it alone.
    L1,
    /// Its private L2 serves it, and nothing beyond the L2 changes.
    L2,
    /// It needs the rest of the memory system.
    Beyond,
}

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
    #[inline(always)]
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

/// One core's L1 caches, its L2 if private, its counters and its prefetchers, borrowed from
/// a [`Memory`] by [`Memory::privates`] or [`Memory::private`].
pub struct Private<'m> {
    pub(crate) core: u32,
    pub(crate) l1i: &'m mut Cache,
    pub(crate) l1d: &'m mut Cache,
    /// The core's L2 when no other core shares it (else no access reaches [`Reach::L2`]).
    pub(crate) l2: Option<&'m mut Cache>,
    pub(crate) stats: &'m mut CoreStats,
    /// The L1D's and the L2's prefetcher.
    pub(crate) prefetchers: &'m mut [Prefetcher; 2],
    pub(crate) erase: &'m [u64],
    pub(crate) erasure: Erasure,
    pub(crate) protocol: Protocol,
    pub(crate) line_shift: u32,
    pub(crate) prefetching: bool,
}

/// Whether `l2` can serve `line` for an access of this part: valid (for a `write`: in `M`)
/// and not a prefetched line's first use.
#[inline]
fn l2_serves(l2: &Cache, line: u64, write: bool) -> bool {
    l2.find(line)
        .is_some_and(|s| (!write || l2.state(s) == MODIFIED) && !l2.prefetched(s))
}

/// An L1 with no children gives up its copy of `line` (`invalidate`) or, if in `M`, its
/// ownership: whether the copy was dirty and whether it was in `M` (`Memory`'s coherence
/// walk, for a leaf).
fn leaf_walk(c: &mut Cache, line: u64, invalidate: bool) -> (bool, bool) {
    let Some(slot) = c.find(line) else {
        return (false, false);
    };
    let modified = c.state(slot) == MODIFIED;
    if !invalidate && !modified {
        return (false, false);
    }
    let dirty = c.dirty(slot);
    c.give_up(slot, invalidate);
    (dirty, modified)
}

impl Private<'_> {
    /// The L1 an access of `kind` goes to.
    #[inline]
    fn l1(&self, kind: Kind) -> &Cache {
        if kind == Kind::IFetch {
            self.l1i
        } else {
            self.l1d
        }
    }

    /// How far an access of `size` bytes at `addr` of `kind` by instruction `pc` must go
    /// from this core (see the module's doc): [`Reach::L1`] and [`Reach::L2`] are served by
    /// this part alone.
    #[inline]
    pub fn reach(&self, pc: u64, addr: u64, size: u32, kind: Kind) -> Reach {
        if self.hits(addr, size, kind) {
            return Reach::L1;
        }
        let (first, last) = lines(addr, size, self.line_shift);
        self.reach_l2(pc, addr, first, last, kind)
    }

    /// Whether [`Private::reach`] is [`Reach::L1`]: each line the access touches is valid in
    /// the L1 with the permission it needs, and none is a prefetched line not used yet.
    #[inline]
    pub fn hits(&self, addr: u64, size: u32, kind: Kind) -> bool {
        let (l1, write) = (self.l1(kind), kind == Kind::Store);
        let ok = |line: u64| l1.plain_hit(line, write).is_some();
        let (first, last) = lines(addr, size, self.line_shift);
        ok(first) && (last == first || ok(last))
    }

    /// [`Private::reach`] for an access its L1 does not serve alone.
    #[inline(never)]
    fn reach_l2(&self, pc: u64, addr: u64, first: u64, last: u64, kind: Kind) -> Reach {
        let write = kind == Kind::Store;
        let Some(l2) = self.l2.as_deref() else {
            return Reach::Beyond;
        };
        let l1 = self.l1(kind);
        // One line, not erased, a miss in the L1 (a hit that first uses a prefetched line
        // triggers the L1D prefetcher on a line of its own: left to the whole memory).
        if last != first
            || erased(self.erase, pc, kind)
            || l1.holds(first, write).is_some()
            || !l2_serves(l2, first, write)
        {
            return Reach::Beyond;
        }
        if kind != Kind::IFetch && self.prefetching {
            // The miss triggers the L1D prefetcher: every line it asks for must come from the
            // L2 without a first use there (which would trigger the L2's prefetcher).
            let mut ok = true;
            self.prefetchers[0].peek(pc, addr, self.line_shift, |line| {
                ok &= l2_serves(l2, line, false)
            });
            if !ok {
                return Reach::Beyond;
            }
        }
        Reach::L2
    }

    /// Serves an access [`Private::reach`] found an L2 hit, as [`Memory::access`] does:
    /// the demand's fill from the L2, then the L1D prefetcher's requests, each also filled
    /// from the L2, and the L2 prefetcher's training on what reached the L2 (nothing
    /// triggers it: no miss there, no first use).
    #[inline(never)]
    fn serve_l2(&mut self, pc: u64, addr: u64, kind: Kind, t: u64) -> Outcome {
        let line = addr >> self.line_shift;
        let o = self.fill_from_l2(line, kind, t, false);
        self.stats.count(kind, &o);
        if self.prefetching && kind != Kind::IFetch {
            let shift = self.line_shift;
            if self.prefetchers[0].enabled() {
                // At most 32 lines (`Memory::new` bounds the degree).
                let (mut asked, mut n) = ([0u64; 32], 0);
                self.prefetchers[0].decide(pc, addr, shift, true, |l| {
                    asked[n] = l;
                    n += 1;
                });
                for &l in &asked[..n] {
                    if self.l1d.find(l).is_some() {
                        continue;
                    }
                    self.fill_from_l2(l, Kind::Load, t, true);
                    if self.prefetchers[1].enabled() {
                        self.prefetchers[1].learn(pc, l << shift);
                    }
                }
            }
            if self.prefetchers[1].enabled() {
                self.prefetchers[1].learn(pc, addr);
            }
        }
        o
    }

    /// A request for `line` (a demand of `kind`, or an L1D `prefetch`) that misses its L1
    /// and finds the line in the core's L2 with the permission it needs, no first use of a
    /// prefetched line there: the outcome and the changes of `Memory::slow` for it, which
    /// stay within the core's L1s and L2. (The L3 lists this L2 as a sharer already, by
    /// inclusion, and a level beyond the one that serves a request does not delay it.)
    fn fill_from_l2(&mut self, line: u64, kind: Kind, t: u64, prefetch: bool) -> Outcome {
        let write = kind == Kind::Store;
        let l1d_data = self.l1d.params.data_latency as u64;
        let (l1, other, pos, other_pos) = if kind == Kind::IFetch {
            (&mut *self.l1i, &mut *self.l1d, L1_BITS[0], L1_BITS[1])
        } else {
            (&mut *self.l1d, &mut *self.l1i, L1_BITS[1], L1_BITS[0])
        };
        let l2 = self
            .l2
            .as_deref_mut()
            .expect("an L2 hit needs a private L2");
        let tagged = l1.find_tag(line);
        let st = tagged.map_or(INVALID, |s| l1.state(s));
        let l2s = l2.find(line).expect("an L2 hit finds its line in the L2");
        let st2 = l2.state(l2s);
        debug_assert!(!write || st2 == MODIFIED);
        let mut coherence = false;
        if !prefetch {
            l1.stats.accesses += 1;
            match kind {
                Kind::IFetch => l1.stats.misses_ifetch += 1,
                Kind::Load => l1.stats.misses_load += 1,
                Kind::Store => l1.stats.misses_store += 1,
            }
            if st == INVALID && tagged.is_some() {
                l1.stats.coherence_misses += 1;
                coherence = true;
            }
            l2.stats.accesses += 1;
            l2.stats.hits += 1;
        }
        let mut lat = l1.params.tag_latency as u64;
        // The core's other L1, if it holds the line: invalidated for a store, downgraded
        // from `M` for a load.
        let sh = l2.sharers(l2s) & !(1u128 << pos);
        debug_assert!(sh & !(1u128 << other_pos) == 0, "an L2 of one core");
        let (mut dirty, mut modified) = (false, false);
        if sh != 0 {
            if write {
                (dirty, modified) = leaf_walk(other, line, true);
                l2.set_sharers(l2s, l2.sharers(l2s) & !(1u128 << other_pos));
            } else if other.state_of(line) == MODIFIED {
                (dirty, modified) = leaf_walk(other, line, false);
            }
            if dirty {
                l2.set_dirty(l2s, true);
            }
        }
        let mut served =
            if modified && (!write || st == INVALID) && (dirty || self.protocol == Protocol::Msi) {
                lat += l2.params.tag_latency as u64 + l1d_data;
                Served::L1Neighbor
            } else {
                lat += l2.params.data_latency as u64;
                Served::L2
            };
        // A copy still arriving (the L1's, for a store that upgrades it; the L2's): wait.
        let mut waited = false;
        if st != INVALID
            && let Some(s) = tagged
            && let Some((wait, src)) = l1.pending(s, t)
            && wait > lat
        {
            (lat, served, waited) = (wait, Served::ALL[src as usize], true);
            l1.stats.merged += 1;
        }
        if let Some((wait, src)) = l2.pending(l2s, t)
            && wait > lat
        {
            (lat, served, waited) = (wait, Served::ALL[src as usize], true);
            l2.stats.merged += 1;
        }
        if !prefetch
            && st != INVALID
            && let Some(s) = tagged
        {
            // (A miss triggers the L1D prefetcher whether or not this is a first use.)
            l1.first_use(s, waited);
        }
        let first_use = l2.first_use(l2s, waited);
        debug_assert!(!first_use, "an L2 hit of this part is no first use there");
        // Under MESI a load takes ownership from an L2 that owns the line if no other L1
        // holds it.
        let exclusive = !write && self.protocol == Protocol::Mesi && sh == 0 && st2 == MODIFIED;
        let new = if write || exclusive { MODIFIED } else { SHARED };
        l2.touch(l2s);
        if new == MODIFIED {
            l2.set_state(l2s, MODIFIED);
        }
        let slot = match tagged.filter(|&s| l1.state(s) != INVALID) {
            Some(s) => {
                l1.touch(s);
                if new == MODIFIED {
                    l1.set_state(s, MODIFIED);
                }
                s
            }
            None => {
                let (s, victim) = l1.fill_at(line, new, tagged);
                l1.set_fill(s, t, t + lat, served as u8);
                if let Some(v) = victim {
                    // Back to the L2, which holds it by inclusion in the slot the fill
                    // recorded.
                    debug_assert_eq!(v.sharers, 0);
                    let ps = (v.parent != NO_PARENT).then_some(v.parent as usize);
                    debug_assert_eq!(ps, l2.find(v.line));
                    if v.dirty {
                        l1.stats.writebacks += 1;
                        if let Some(ps) = ps {
                            l2.set_dirty(ps, true);
                        }
                    }
                    if let Some(ps) = ps {
                        l2.set_sharers(ps, l2.sharers(ps) & !(1u128 << pos));
                    }
                }
                s
            }
        };
        if write {
            l1.set_dirty(slot, true);
        }
        l2.set_sharers(l2s, l2.sharers(l2s) | 1u128 << pos);
        l1.set_parent(slot, l2s as u32);
        if prefetch {
            l1.set_prefetched(slot);
        }
        Outcome {
            latency: lat,
            served,
            missed: [true, false, false],
            coherence,
            erased: false,
            would_serve: served,
            merged: false,
            waited,
        }
    }
}

impl Port for Private<'_> {
    /// Serves an access [`Private::reach`] found served by this part, with the same outcome
    /// and the same changes as [`Memory::access`] (which, for such an access, touches only
    /// what this part borrows). Panics on another access: the caller must ask first.
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
        let write = kind == Kind::Store;
        let (first, last) = lines(addr, size, self.line_shift);
        let cache: &mut Cache = if kind == Kind::IFetch {
            self.l1i
        } else {
            self.l1d
        };
        let Some(slot) = cache.plain_hit(first, write) else {
            debug_assert_eq!(self.reach(pc, addr, size, kind), Reach::L2);
            return self.serve_l2(pc, addr, kind, time);
        };
        let erased = erased(self.erase, pc, kind);
        // An erased access that hits is an ordinary hit without fill (`Memory::access_unfilled`),
        // an erased one with fill an L1 hit flagged erased if it waited.
        let unfilled = erased && self.erasure == Erasure::NoFill;
        let second = (last != first).then(|| {
            cache
                .plain_hit(last, write)
                .expect("Private::access of an access it does not serve: ask Private::reach")
        });
        let mut hit = |slot: usize| {
            let (o, first_use) = l1_hit(cache, slot, write, time, erased && !unfilled);
            debug_assert!(!first_use, "a plain hit is no first use");
            o
        };
        let mut o = hit(slot);
        if let Some(slot) = second {
            o.combine(hit(slot));
        }
        self.stats.count(kind, &o);
        if self.prefetching && kind != Kind::IFetch && !unfilled && self.prefetchers[0].enabled() {
            // A hit that is no first use does not trigger: the prefetcher only learns it.
            self.prefetchers[0].learn(pc, addr);
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CacheParams, MemoryConfig};
    use crate::prefetch::{PrefetchKind, PrefetchParams};

    /// Four cores with tiny caches (so lines move between L1, L2, L3 and DRAM all the time)
    /// and both prefetchers.
    fn machine(protocol: Protocol, kind: PrefetchKind) -> MemoryConfig {
        let mut m = MemoryConfig::small(1, 4);
        let shrink = |p: CacheParams, size, associativity| CacheParams {
            size,
            associativity,
            ..p
        };
        m.l1i = shrink(m.l1i, 1 << 10, 2);
        // (An L1D slower than the L1I, so a neighbour's supply is timed by the right one.)
        m.l1d = CacheParams {
            data_latency: 4,
            ..shrink(m.l1d, 1 << 10, 2)
        };
        m.l2 = shrink(m.l2, 16 << 10, 4);
        m.l3 = m.l3.map(|p| shrink(p, 64 << 10, 8));
        m.protocol = protocol;
        m.l1d_prefetch = PrefetchParams { kind, degree: 2 };
        m.l2_prefetch = PrefetchParams { kind, degree: 4 };
        m
    }

    /// A machine's whole state, but for what one access uses as scratch (set afresh by the
    /// next).
    fn state(m: &Memory) -> String {
        let mut m = m.clone();
        m.first_use = [false; 2];
        m.would_miss = [false; 2];
        m.last_missed = [false; 3];
        m.candidates = [Vec::new(), Vec::new()];
        format!("{m:?}")
    }

    /// The oracle for [`Private`]: two machines take the same accesses, one serving what
    /// its core's private part can serve there (as the parallel model's lanes do), the other
    /// through [`Memory::access`] for everything. Every outcome, and at intervals the whole
    /// state of the two machines (every cache's lines, states, fills, sharers, counters and
    /// replacement state, the prefetchers' tables, the bus and DRAM), must be the same; and
    /// the L2 path must have served a good share of the accesses, prefetching included.
    #[test]
    fn the_l2_path_does_what_the_general_path_does() {
        for (protocol, pf, erase) in [
            (Protocol::Msi, PrefetchKind::Stride, false),
            (Protocol::Mesi, PrefetchKind::Stride, true),
            (Protocol::Mesi, PrefetchKind::NextLine, false),
            (Protocol::Mesi, PrefetchKind::None, false),
        ] {
            let mut near = Memory::new(machine(protocol, pf)).unwrap();
            let mut general = near.clone();
            if erase {
                near.set_erasure([0x4010]);
                general.set_erasure([0x4010]);
            }
            let (mut served_l2, mut with_prefetch) = (0, 0);
            let mut rand = crate::xorshift(0x2545_f491_4f6c_dd1d);
            let mut times = [0u64; 4];
            let mut strided = [[0x10_0000u64; 4]; 4];
            for i in 0..60_000u64 {
                let r = rand();
                let core = (r % 4) as u32;
                // Clocks advance by a few cycles, sometimes backwards (cores' accesses come
                // out of time order, as in both models).
                let t = &mut times[core as usize];
                *t = (*t + (r >> 8) % 40).saturating_sub(if (r >> 20) % 8 == 0 { 60 } else { 0 });
                let (addr, size, kind) = match (r >> 30) % 8 {
                    // Instruction fetch from a shared code region.
                    0 => (0x8000 + ((r >> 34) % 96) * 32, 4, Kind::IFetch),
                    // Strided streams per PC and core (the prefetchers learn them),
                    // each over 2 KiB of its own (the four fit the L2, so later passes hit there),
                    // loads and stores.
                    1..=4 => {
                        let k = ((r >> 34) % 4) as usize;
                        let s = &mut strided[core as usize][k];
                        let base = 0x10_0000 + ((core as u64 * 4 + k as u64) << 11);
                        *s = base + (s.wrapping_add([8, 64, 128, 200][k]) & 0x7ff);
                        let kind = if (r >> 37) % 3 == 0 {
                            Kind::Store
                        } else {
                            Kind::Load
                        };
                        (*s, 8, kind)
                    }
                    // Random lines of a small shared region, some straddling two lines.
                    _ => {
                        let a = 0x20_0000 + (r >> 34) % (48 << 10);
                        let kind = if (r >> 37) % 2 == 0 {
                            Kind::Store
                        } else {
                            Kind::Load
                        };
                        (a, [1, 4, 8, 16][((r >> 52) % 4) as usize], kind)
                    }
                };
                // A stream's own PC (one of them erased in one of the runs), four others for
                // the random accesses.
                let pc = match (r >> 30) % 8 {
                    0 => addr,
                    1..=4 => 0x4000 + 0x10 * ((r >> 34) % 4),
                    _ => 0x5000 + 0x10 * ((r >> 24) % 4),
                };
                let mut p = near.private(core);
                let a = match p.reach(pc, addr, size, kind) {
                    Reach::Beyond => near.access(core, pc, addr, size, kind, *t),
                    reach => {
                        if reach == Reach::L2 {
                            served_l2 += 1;
                            let mut asked = 0;
                            p.prefetchers[0].peek(pc, addr, 6, |_| asked += 1);
                            with_prefetch += (asked > 0 && kind != Kind::IFetch) as u32;
                        }
                        p.access(core, pc, addr, size, kind, *t)
                    }
                };
                let b = general.access(core, pc, addr, size, kind, *t);
                assert_eq!(
                    a, b,
                    "{protocol:?} {pf:?} access {i}: core {core} {addr:#x}"
                );
                if i % 1000 == 999 {
                    let (a, b) = (state(&near), state(&general));
                    if let Some(at) = a.bytes().zip(b.bytes()).position(|(x, y)| x != y) {
                        let from = at.saturating_sub(300);
                        panic!(
                            "{protocol:?} {pf:?}: the machines differ after access {i}:\n{}\n{}",
                            &a[from..(at + 100).min(a.len())],
                            &b[from..(at + 100).min(b.len())]
                        );
                    }
                    assert_eq!(a.len(), b.len());
                }
            }
            eprintln!("{protocol:?} {pf:?}: {served_l2} L2 hits, {with_prefetch} prefetching");
            assert!(
                served_l2 > 3_000,
                "{protocol:?} {pf:?}: only {served_l2} accesses took the L2 path"
            );
            if pf != PrefetchKind::None {
                assert!(
                    with_prefetch > 500,
                    "{protocol:?} {pf:?}: only {with_prefetch} with prefetches"
                );
            }
        }
    }
}
