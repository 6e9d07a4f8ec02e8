//! One set-associative cache instance: tags, MSI state, dirty bits, a sharer mask over the
//! instance's children (for coherence), a replacement policy and statistics. Flat arrays
//! indexed by `set * ways + way` ("slot"); a lookup scans one set and allocates nothing.
//!
//! An invalidated line keeps its tag with state `I`, so a later miss on it can be recognised
//! as a coherence miss.
//!
//! Each slot also remembers its fill in flight, as a miss-status holding register does: when
//! the fill was requested, when the line arrives and where it comes from, so that an access
//! to a line that is present but not yet arrived waits for it (see [`Cache::pending`]).

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
    pub sharers: u64,
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
    dirty: Vec<bool>,
    sharers: Vec<u64>,
    /// Per slot: the cycle the fill was requested and the cycle the line arrives (equal, 0,
    /// when no fill is in flight), and where the fill is served from (a `Served` index).
    fill_start: Vec<u64>,
    fill_done: Vec<u64>,
    fill_src: Vec<u8>,
    /// Per slot: brought by a prefetch and not yet used by a demand access.
    prefetched: Vec<bool>,
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
            dirty: vec![false; n],
            sharers: vec![0; n],
            fill_start: vec![0; n],
            fill_done: vec![0; n],
            fill_src: vec![0; n],
            prefetched: vec![false; n],
            policy: Policy::new(params.replacement, sets, ways),
            stats: CacheStats::default(),
        }
    }

    #[inline]
    fn set_of(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// The slot holding `line` with its tag (valid or invalidated), if any.
    #[inline]
    pub fn find_tag(&self, line: u64) -> Option<usize> {
        let base = self.set_of(line) * self.ways;
        (base..base + self.ways).find(|&s| self.tags[s] == line)
    }

    /// The slot holding a valid copy of `line`, if any.
    #[inline]
    pub fn find(&self, line: u64) -> Option<usize> {
        self.find_tag(line).filter(|&s| self.state[s] != INVALID)
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
        self.dirty[slot]
    }

    /// Sets the dirty bit of a slot.
    #[inline]
    pub fn set_dirty(&mut self, slot: usize, d: bool) {
        self.dirty[slot] = d;
    }

    /// Sharer mask (children holding copies) of a slot.
    #[inline]
    pub fn sharers(&self, slot: usize) -> u64 {
        self.sharers[slot]
    }

    /// Replaces the sharer mask of a slot.
    #[inline]
    pub fn set_sharers(&mut self, slot: usize, m: u64) {
        self.sharers[slot] = m;
    }

    /// Line address in a slot (meaningful when valid).
    #[inline]
    pub fn line(&self, slot: usize) -> u64 {
        self.tags[slot]
    }

    /// Records a hit on a slot for replacement.
    #[inline]
    pub fn touch(&mut self, slot: usize) {
        self.policy.touch(slot / self.ways, slot % self.ways);
    }

    /// Marks a slot invalid (the tag stays, to recognise coherence misses).
    #[inline]
    pub fn invalidate(&mut self, slot: usize) {
        self.state[slot] = INVALID;
        self.dirty[slot] = false;
        self.sharers[slot] = 0;
    }

    /// Installs `line` (not currently valid here) in state `st`; returns its slot and the
    /// valid line it displaced, if any. An invalid way is used before any valid one.
    pub fn fill(&mut self, line: u64, st: u8) -> (usize, Option<Victim>) {
        let set = self.set_of(line);
        let base = set * self.ways;
        let slot = match self.find_tag(line) {
            Some(s) => s,
            None => match (base..base + self.ways).find(|&s| self.state[s] == INVALID) {
                Some(s) => s,
                None => base + self.policy.victim(set),
            },
        };
        let victim = (self.state[slot] != INVALID && self.tags[slot] != line).then(|| Victim {
            line: self.tags[slot],
            state: self.state[slot],
            dirty: self.dirty[slot],
            sharers: self.sharers[slot],
        });
        if self.prefetched[slot] && self.state[slot] != INVALID {
            self.stats.prefetch_unused += 1;
        }
        self.prefetched[slot] = false;
        self.tags[slot] = line;
        self.state[slot] = st;
        self.dirty[slot] = false;
        self.sharers[slot] = 0;
        self.fill_start[slot] = 0;
        self.fill_done[slot] = 0;
        self.policy.insert(set, slot - base);
        (slot, victim)
    }

    /// Records that the line in `slot` was requested at cycle `start` and arrives at `done`,
    /// served from `src` (a `Served` index).
    #[inline]
    pub fn set_fill(&mut self, slot: usize, start: u64, done: u64, src: u8) {
        self.fill_start[slot] = start;
        self.fill_done[slot] = done;
        self.fill_src[slot] = src;
    }

    /// For an access at cycle `t` to the line in `slot`: if the line has not arrived by `t`,
    /// the cycles until it is usable and where its fill is served from. An access made after
    /// the fill was requested merges into it and waits for the arrival; one made (in simulated
    /// time) before the request would have missed itself, so it takes the fill's whole
    /// latency.
    #[inline]
    pub fn pending(&self, slot: usize, t: u64) -> Option<(u64, u8)> {
        let done = self.fill_done[slot];
        (done > t).then(|| (done - t.max(self.fill_start[slot]), self.fill_src[slot]))
    }

    /// Marks the line in `slot` as brought by a prefetch.
    #[inline]
    pub fn set_prefetched(&mut self, slot: usize) {
        self.prefetched[slot] = true;
        self.stats.prefetches += 1;
    }

    /// A demand access uses the line in `slot`: true (and the line counted useful, `late` if
    /// it was still in flight) if this is the first use of a prefetched line.
    #[inline]
    pub fn first_use(&mut self, slot: usize, late: bool) -> bool {
        if !self.prefetched[slot] {
            return false;
        }
        self.prefetched[slot] = false;
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
