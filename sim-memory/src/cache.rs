//! One set-associative cache instance: tags, MSI state, dirty bits, a sharer mask over the
//! instance's children (for coherence), a replacement policy and statistics. Flat arrays
//! indexed by `set * ways + way` ("slot"): the tags and the states, which a lookup and the
//! search for a free way scan (a set's tags are one host cache line at 8 ways, its states a
//! few bytes), everything else about a slot but its sharers in one 24-byte record, so that a
//! hit touches one more line, and the sharer masks, as many 32-bit words per slot as the
//! children need (one for up to 32: a 16-way set's masks are then one host cache line, not
//! the four a 128-bit mask per slot took, which a miss in a large L3 paid for in host misses).
//!
//! An invalidated line keeps its tag with state `I`, so a later miss on it can be recognised
//! as a coherence miss.
//!
//! Each slot also remembers its fill in flight, as a miss-status holding register does: when
//! the fill was requested, when the line arrives and where it comes from, so that an access
//! to a line that is present but not yet arrived waits for it (see [`Cache::pending`]); and,
//! in a cache with a parent, the parent's slot holding the same line ([`Cache::parent`]), so
//! that an eviction reaches the parent's copy without searching the parent's set (in a large
//! parent that search is host cache misses, most of a simulated miss's host time).

use crate::config::CacheParams;
use crate::replacement::{Policy, Replacement};
use crate::stats::CacheStats;

/// Line state: not present.
pub const INVALID: u8 = 0;
/// Line state: readable, other copies may exist.
pub const SHARED: u8 = 1;
/// Line state: this instance's subtree holds the only copies and may write.
pub const MODIFIED: u8 = 2;

const NO_TAG: u64 = u64::MAX;

/// A line pushed out by a fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    /// Line address (byte address >> log2(line size)).
    pub line: u64,
    /// Its state before eviction.
    pub state: u8,
    /// Whether it was dirty.
    pub dirty: bool,
    /// Children that held copies.
    pub sharers: u128,
    /// The parent's slot holding it, as recorded by [`Cache::set_parent`] ([`NO_PARENT`] if
    /// none was).
    pub parent: u32,
}

/// [`Cache::parent`] of a slot whose parent slot was never recorded.
pub const NO_PARENT: u32 = u32::MAX;

/// Everything about one slot but its tag.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The cycle the fill was requested and the cycle the line arrives (equal, 0, when no
    /// fill is in flight).
    fill_start: u64,
    fill_done: u64,
    dirty: bool,
    /// Where the fill is served from (a `Served` index).
    fill_src: u8,
    /// Brought by a prefetch and not yet used by a demand access.
    prefetched: bool,
    /// The parent cache's slot holding the same line ([`Cache::parent`]).
    parent: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        fill_start: 0,
        fill_done: 0,
        dirty: false,
        fill_src: 0,
        prefetched: false,
        parent: NO_PARENT,
    };
}

/// A set-associative cache.
#[derive(Debug, Clone)]
pub struct Cache {
    /// Geometry and timing.
    pub params: CacheParams,
    ways: usize,
    set_mask: u64,
    tags: Vec<u64>,
    state: Vec<u8>,
    slots: Vec<Slot>,
    /// Sharer masks, [`Cache::sharer_words`] 32-bit words per slot (low word first), for a
    /// cache with children ([`Cache::track_sharers`]); empty for a private (leaf) cache.
    sharers: Vec<u32>,
    /// Words of a slot's sharer mask (0 without children).
    sharer_words: usize,
    policy: Policy,
    /// Counters of this instance.
    pub stats: CacheStats,
}

impl Cache {
    /// An empty cache. `params` must describe a power-of-two number of sets.
    pub fn new(params: CacheParams) -> Cache {
        let sets = params.sets() as usize;
        let ways = params.associativity as usize;
        assert!(
            sets.is_power_of_two() && ways > 0,
            "invalid cache geometry {params:?}"
        );
        let n = sets * ways;
        Cache {
            params,
            ways,
            set_mask: sets as u64 - 1,
            tags: vec![NO_TAG; n],
            state: vec![INVALID; n],
            slots: vec![Slot::EMPTY; n],
            sharers: Vec::new(),
            sharer_words: 0,
            policy: Policy::new(params.replacement, sets, ways),
            stats: CacheStats::default(),
        }
    }

    #[inline]
    fn set_of(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// Asks the host's caches for everything of the set `line` maps to: its tags, states,
    /// fill records, sharer masks and replacement state (a hint: see `host.rs`).
    #[inline]
    pub fn prefetch_set(&self, line: u64) {
        let set = self.set_of(line);
        let r = set * self.ways..(set + 1) * self.ways;
        crate::host::prefetch(&self.tags[r.clone()]);
        crate::host::prefetch(&self.state[r.clone()]);
        crate::host::prefetch(&self.slots[r.clone()]);
        if self.sharer_words > 0 {
            let w = self.sharer_words;
            crate::host::prefetch(&self.sharers[r.start * w..r.end * w]);
        }
        self.policy.prefetch(set);
    }

    /// The slot holding `line` with its tag (valid or invalidated), if any.
    #[inline]
    pub fn find_tag(&self, line: u64) -> Option<usize> {
        let base = self.set_of(line) * self.ways;
        // Every way is compared, without an early exit: a set holds a tag at most once
        // (`fill` reuses the slot of its own tag), and where the line sits in its set is as
        // unpredictable to the host as the simulated accesses, so an early exit mispredicted.
        let mut hit = usize::MAX;
        for (w, &t) in self.tags[base..base + self.ways].iter().enumerate() {
            if t == line {
                hit = w;
            }
        }
        (hit != usize::MAX).then(|| base + hit)
    }

    /// The slot holding a valid copy of `line`, if any.
    #[inline]
    pub fn find(&self, line: u64) -> Option<usize> {
        self.find_tag(line).filter(|&s| self.state[s] != INVALID)
    }

    /// The slot holding `line` with the permission an access needs (a write: `M`), if any:
    /// the L1-hit test.
    #[inline]
    pub fn holds(&self, line: u64, write: bool) -> Option<usize> {
        self.find(line)
            .filter(|&slot| !write || self.state[slot] == MODIFIED)
    }

    /// [`Cache::holds`], unless the line was prefetched and not used yet (its first use
    /// trains the prefetchers as a trigger): a hit that changes nothing but this cache's
    /// replacement state and counters.
    #[inline]
    pub fn plain_hit(&self, line: u64, write: bool) -> Option<usize> {
        self.holds(line, write)
            .filter(|&slot| !self.prefetched(slot))
    }

    /// State of `line` (INVALID if absent).
    #[inline]
    pub fn state_of(&self, line: u64) -> u8 {
        self.find(line).map_or(INVALID, |s| self.state[s])
    }

    /// State in a slot.
    #[inline]
    pub fn state(&self, slot: usize) -> u8 {
        self.state[slot]
    }

    /// Sets the state in a slot.
    #[inline]
    pub fn set_state(&mut self, slot: usize, st: u8) {
        self.state[slot] = st;
    }

    /// Dirty bit of a slot.
    #[inline]
    pub fn dirty(&self, slot: usize) -> bool {
        self.slots[slot].dirty
    }

    /// Sets the dirty bit of a slot.
    #[inline]
    pub fn set_dirty(&mut self, slot: usize, d: bool) {
        self.slots[slot].dirty = d;
    }

    /// Keeps a sharer mask per slot: for a cache with `children` children (1 to 128).
    pub fn track_sharers(&mut self, children: usize) {
        assert!(
            (1..=128).contains(&children),
            "a cache has 1 to 128 children, not {children}"
        );
        self.sharer_words = children.div_ceil(32);
        self.sharers = vec![0; self.slots.len() * self.sharer_words];
    }

    /// Sharer mask (children holding copies) of a slot; 0 for a cache without children.
    #[inline(always)]
    pub fn sharers(&self, slot: usize) -> u128 {
        match self.sharer_words {
            0 => 0,
            1 => self.sharers[slot] as u128,
            w => self.wide_sharers(slot, w),
        }
    }

    #[cold]
    fn wide_sharers(&self, slot: usize, w: usize) -> u128 {
        let mut m = 0u128;
        for (i, &x) in self.sharers[slot * w..(slot + 1) * w].iter().enumerate() {
            m |= (x as u128) << (32 * i);
        }
        m
    }

    /// Replaces the sharer mask of a slot (of a cache that [`Cache::track_sharers`]; `m` has
    /// no bit at or above its number of words × 32).
    #[inline(always)]
    pub fn set_sharers(&mut self, slot: usize, m: u128) {
        debug_assert!(
            self.sharer_words >= 4 || m >> (32 * self.sharer_words) == 0,
            "sharer mask {m:#x} wider than {} words",
            self.sharer_words
        );
        match self.sharer_words {
            1 => self.sharers[slot] = m as u32,
            w => self.set_wide_sharers(slot, w, m),
        }
    }

    #[cold]
    fn set_wide_sharers(&mut self, slot: usize, w: usize, m: u128) {
        assert!(w > 0, "sharers set in a cache without children");
        for (i, x) in self.sharers[slot * w..(slot + 1) * w]
            .iter_mut()
            .enumerate()
        {
            *x = (m >> (32 * i)) as u32;
        }
    }

    /// Clears the sharer mask of a slot (nothing without children).
    #[inline(always)]
    fn clear_sharers(&mut self, slot: usize) {
        match self.sharer_words {
            0 => {}
            1 => self.sharers[slot] = 0,
            w => self.set_wide_sharers(slot, w, 0),
        }
    }

    /// Line address in a slot (meaningful when valid).
    #[inline]
    pub fn line(&self, slot: usize) -> u64 {
        self.tags[slot]
    }

    /// Records a hit on a slot for replacement.
    #[inline]
    pub fn touch(&mut self, slot: usize) {
        // A hit slot holds its line, whose low bits are the set: no division by the ways.
        let set = self.set_of(self.tags[slot]);
        self.policy.touch(set, slot - set * self.ways);
    }

    /// Marks a slot invalid (the tag stays, to recognise coherence misses).
    #[inline]
    pub fn invalidate(&mut self, slot: usize) {
        self.state[slot] = INVALID;
        self.slots[slot].dirty = false;
        self.clear_sharers(slot);
    }

    /// Gives up the copy in `slot` to another cache's request: invalidated (and counted), or
    /// kept as a clean `S` copy (`invalidate` false).
    #[inline]
    pub fn give_up(&mut self, slot: usize, invalidate: bool) {
        if invalidate {
            self.invalidate(slot);
            self.stats.invalidations += 1;
        } else {
            self.state[slot] = SHARED;
            self.slots[slot].dirty = false;
        }
    }

    /// Installs `line` (not currently valid here) in state `st`; returns its slot and the
    /// valid line it displaced, if any. An invalid way is used before any valid one.
    pub fn fill(&mut self, line: u64, st: u8) -> (usize, Option<Victim>) {
        self.fill_at(line, st, self.find_tag(line))
    }

    /// The first slot of the set starting at slot `base` whose state is `INVALID`, if any.
    /// Eight states at a time: the zero bytes of a word of states (`INVALID` is 0), the
    /// lowest of which the word arithmetic finds exactly. (Way by way, the search of a full
    /// set was a third of a simulated DRAM miss's fills.)
    #[inline]
    fn first_invalid(&self, base: usize) -> Option<usize> {
        const _: () = assert!(INVALID == 0);
        const LOW_BITS: u64 = 0x0101_0101_0101_0101;
        const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
        let mut words = self.state[base..base + self.ways].chunks_exact(8);
        let mut at = base;
        for w in &mut words {
            let x = u64::from_le_bytes(w.try_into().expect("eight states"));
            // The high bit of each zero byte, and perhaps of a byte above one (a borrow):
            // the lowest is a zero byte.
            let zero = x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS;
            if zero != 0 {
                return Some(at + (zero.trailing_zeros() / 8) as usize);
            }
            at += 8;
        }
        let rest = words.remainder();
        rest.iter().position(|&s| s == INVALID).map(|w| at + w)
    }

    /// [`Cache::fill`] for a caller that has just looked the tag up: `tagged` is
    /// `self.find_tag(line)`.
    pub fn fill_at(&mut self, line: u64, st: u8, tagged: Option<usize>) -> (usize, Option<Victim>) {
        debug_assert_eq!(tagged, self.find_tag(line));
        let set = self.set_of(line);
        let base = set * self.ways;
        let slot = match tagged {
            Some(s) => s,
            None => match self.first_invalid(base) {
                Some(s) => s,
                None => base + self.policy.victim(set),
            },
        };
        let m = self.slots[slot];
        let old = self.state[slot];
        let victim = (old != INVALID && self.tags[slot] != line).then(|| Victim {
            line: self.tags[slot],
            state: old,
            dirty: m.dirty,
            sharers: self.sharers(slot),
            parent: m.parent,
        });
        self.clear_sharers(slot);
        if m.prefetched && old != INVALID {
            self.stats.prefetch_unused += 1;
        }
        self.tags[slot] = line;
        // (The source of a finished fill is kept, as before; nothing reads it.)
        self.state[slot] = st;
        self.slots[slot] = Slot {
            fill_src: m.fill_src,
            ..Slot::EMPTY
        };
        self.policy.insert(set, slot - base);
        (slot, victim)
    }

    /// Records that the line in `slot` was requested at cycle `start` and arrives at `done`,
    /// served from `src` (a `Served` index).
    #[inline]
    pub fn set_fill(&mut self, slot: usize, start: u64, done: u64, src: u8) {
        let m = &mut self.slots[slot];
        m.fill_start = start;
        m.fill_done = done;
        m.fill_src = src;
    }

    /// For an access at cycle `t` to the line in `slot`: if the line has not arrived by `t`,
    /// the cycles until it is usable and where its fill is served from. An access made after
    /// the fill was requested merges into it and waits for the arrival; one made (in simulated
    /// time) before the request would have missed itself, so it takes the fill's whole
    /// latency.
    #[inline]
    pub fn pending(&self, slot: usize, t: u64) -> Option<(u64, u8)> {
        let m = &self.slots[slot];
        let done = m.fill_done;
        (done > t).then(|| (done - t.max(m.fill_start), m.fill_src))
    }

    /// Records `parent`, the slot of the parent cache that holds the line in `slot`. The
    /// caller keeps it true while the line is valid here (by inclusion the parent's copy
    /// stays in its slot as long as a child holds the line).
    #[inline]
    pub fn set_parent(&mut self, slot: usize, parent: u32) {
        self.slots[slot].parent = parent;
    }

    /// The parent's slot recorded for the line in `slot` ([`NO_PARENT`] if none was).
    #[inline]
    pub fn parent(&self, slot: usize) -> u32 {
        self.slots[slot].parent
    }

    /// Marks the line in `slot` as brought by a prefetch.
    #[inline]
    pub fn set_prefetched(&mut self, slot: usize) {
        self.slots[slot].prefetched = true;
        self.stats.prefetches += 1;
    }

    /// Whether the line in `slot` was brought by a prefetch and not yet used.
    #[inline]
    pub fn prefetched(&self, slot: usize) -> bool {
        self.slots[slot].prefetched
    }

    /// A demand access uses the line in `slot`: true (and the line counted useful, `late` if
    /// it was still in flight) if this is the first use of a prefetched line.
    #[inline]
    pub fn first_use(&mut self, slot: usize, late: bool) -> bool {
        if !self.slots[slot].prefetched {
            return false;
        }
        self.slots[slot].prefetched = false;
        self.stats.prefetch_useful += 1;
        self.stats.prefetch_late += late as u64;
        true
    }

    /// Every valid line, for invariant checks.
    pub fn valid_lines(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
        (0..self.tags.len())
            .filter(|&s| self.state[s] != INVALID)
            .map(|s| (self.tags[s], self.state[s]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReplacementKind;

    fn cache() -> Cache {
        Cache::new(CacheParams {
            size: 4 << 10,
            associativity: 4,
            line_size: 64,
            data_latency: 1,
            tag_latency: 1,
            replacement: ReplacementKind::Lru,
        })
    }

    /// Sharer masks of every width (one to four 32-bit words per slot) read back as written,
    /// slot by slot without touching the neighbours, and an invalidation or a fill over a
    /// line clears its mask.
    #[test]
    fn sharer_masks_of_every_width_read_back_and_clear() {
        for children in [1, 2, 8, 31, 32, 33, 64, 65, 96, 127, 128] {
            let mut c = cache();
            c.track_sharers(children);
            let all = if children == 128 {
                u128::MAX
            } else {
                (1u128 << children) - 1
            };
            let masks = [
                all,
                1,
                1u128 << (children - 1),
                all & 0x5555_5555_5555_5555_5555_5555_5555_5555,
            ];
            let slots = c.slots.len();
            for (k, &m) in masks.iter().enumerate() {
                c.set_sharers(k, m);
            }
            for (k, &m) in masks.iter().enumerate() {
                assert_eq!(c.sharers(k), m, "{children} children, slot {k}");
            }
            assert!(
                (masks.len()..slots).all(|s| c.sharers(s) == 0),
                "{children} children"
            );
            // A line in slot 0 (set 0, way 0), then invalidated: its mask is gone, the
            // others stay.
            let (slot, _) = c.fill(0, SHARED);
            assert_eq!(slot, 0);
            c.set_sharers(slot, all);
            c.invalidate(slot);
            assert_eq!(c.sharers(slot), 0, "{children} children");
            assert_eq!(c.sharers(1), masks[1], "{children} children");
            // A fill reusing a slot clears the mask it held.
            c.set_sharers(slot, all);
            c.fill(0, MODIFIED);
            assert_eq!(c.sharers(slot), 0, "{children} children");
        }
        // A leaf cache has no masks.
        assert_eq!(cache().sharers(3), 0);
    }

    /// The word-at-a-time search for a free way finds what a way-by-way scan finds: sets of
    /// 1 to 40 ways (whole words, a remainder, both), states drawn so that sets are empty,
    /// full or anything between, in every set of the cache.
    #[test]
    fn the_free_way_search_is_a_scan_way_by_way() {
        let mut rnd = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut found = [0usize; 2];
        for ways in 1..=40u32 {
            let mut c = Cache::new(CacheParams {
                size: 4 * ways as u64 * 64,
                associativity: ways,
                line_size: 64,
                data_latency: 1,
                tag_latency: 1,
                replacement: ReplacementKind::Lru,
            });
            for round in 0..50 {
                // The chance of a free way, from none (a full set: a quarter of the rounds)
                // to all.
                let free = if round % 4 == 0 { 0 } else { rnd() % 101 };
                for st in c.state.iter_mut() {
                    *st = if rnd() % 100 < free {
                        INVALID
                    } else {
                        [SHARED, MODIFIED, 3, 0x80, 0xff][(rnd() % 5) as usize]
                    };
                }
                for set in 0..4 {
                    let base = set * ways as usize;
                    let naive = (base..base + ways as usize).find(|&s| c.state[s] == INVALID);
                    assert_eq!(c.first_invalid(base), naive, "{ways} ways, round {round}");
                    found[naive.is_some() as usize] += 1;
                }
            }
        }
        assert!(
            found.iter().all(|&n| n > 1000),
            "both outcomes often: {found:?}"
        );
    }
}
