//! The data TLB of one core: a first-level TLB, a second-level TLB behind it, and page-table
//! walkers, timed as the core's loads and stores translate their addresses.
//!
//! Both levels are set-associative over virtual page numbers with true LRU. A translation
//! that hits the first level costs nothing beyond the cache access; one that misses it and
//! hits the second costs `l2_latency`; one that misses both needs a walker (one of
//! `walkers`, each busy for one walk) and costs `walk_latency` from the moment a walker is
//! free. The walk's own accesses to the page tables are not simulated (a fixed latency stands
//! for them). As in the caches, an entry records when its translation arrives: an access to a
//! page whose walk is still under way waits for that walk rather than hitting at once (the
//! TLB's counterpart of a miss merged into an MSHR). Instruction fetches are not translated.

/// The parameters of a core's data TLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbParams {
    /// log2 of the page size in bytes.
    pub page_shift: u32,
    /// First-level entries.
    pub l1_entries: u32,
    /// First-level ways (divides `l1_entries`; the quotient is a power of two).
    pub l1_ways: u32,
    /// Second-level entries.
    pub l2_entries: u32,
    /// Second-level ways.
    pub l2_ways: u32,
    /// Cycles a first-level miss that hits the second level adds.
    pub l2_latency: u32,
    /// Cycles a page walk takes once a walker has it.
    pub walk_latency: u32,
    /// Walks in flight at once.
    pub walkers: u32,
}

/// One set-associative level: per entry the page number (`u64::MAX` when empty), an LRU
/// stamp and the time its translation arrives.
struct Level {
    set_mask: u64,
    ways: usize,
    pages: Vec<u64>,
    stamps: Vec<u64>,
    ready: Vec<f64>,
}

impl Level {
    fn new(entries: u32, ways: u32) -> Level {
        let ways = ways.max(1) as usize;
        let sets = (entries as usize / ways).max(1);
        Level {
            set_mask: sets as u64 - 1,
            ways,
            pages: vec![u64::MAX; sets * ways],
            stamps: vec![0; sets * ways],
            ready: vec![0.0; sets * ways],
        }
    }

    fn set(&self, page: u64) -> std::ops::Range<usize> {
        let s = (page & self.set_mask) as usize * self.ways;
        s..s + self.ways
    }

    /// The arrival time of `page`'s translation if the level holds it (and marks it used).
    fn lookup(&mut self, page: u64, stamp: u64) -> Option<f64> {
        let r = self.set(page);
        let i = r.start + self.pages[r].iter().position(|&p| p == page)?;
        self.stamps[i] = stamp;
        Some(self.ready[i])
    }

    /// Puts `page` in its set, replacing the least recently used entry.
    fn fill(&mut self, page: u64, stamp: u64, ready: f64) {
        let r = self.set(page);
        let mut victim = r.start;
        for i in r {
            if self.pages[i] == u64::MAX {
                victim = i;
                break;
            }
            if self.stamps[i] < self.stamps[victim] {
                victim = i;
            }
        }
        self.pages[victim] = page;
        self.stamps[victim] = stamp;
        self.ready[victim] = ready;
    }
}

/// A core's data TLB and its walkers, with counters.
pub struct Tlb {
    p: TlbParams,
    l1: Level,
    l2: Level,
    stamp: u64,
    walkers: Vec<f64>,
    next_walker: usize,
    /// Translations that missed the first level.
    pub l1_misses: u64,
    /// Translations that missed both levels (page walks).
    pub walks: u64,
}

impl Tlb {
    /// An empty TLB.
    pub fn new(p: TlbParams) -> Tlb {
        Tlb {
            l1: Level::new(p.l1_entries, p.l1_ways),
            l2: Level::new(p.l2_entries, p.l2_ways),
            walkers: vec![0.0; p.walkers.max(1) as usize],
            next_walker: 0,
            stamp: 0,
            l1_misses: 0,
            walks: 0,
            p,
        }
    }

    /// Translates `addr` for an access presented at time `t`; returns the cycles the
    /// translation adds before the access can go to the cache.
    pub fn translate(&mut self, addr: u64, t: f64) -> f64 {
        let page = addr >> self.p.page_shift;
        self.stamp += 1;
        let stamp = self.stamp;
        if let Some(ready) = self.l1.lookup(page, stamp) {
            return (ready - t).max(0.0);
        }
        self.l1_misses += 1;
        let ready = if let Some(ready) = self.l2.lookup(page, stamp) {
            ready.max(t) + self.p.l2_latency as f64
        } else {
            self.walks += 1;
            let w = self.next_walker;
            self.next_walker = (w + 1) % self.walkers.len();
            let start = self.walkers[w].max(t);
            let done = start + self.p.walk_latency as f64;
            self.walkers[w] = done;
            self.l2.fill(page, stamp, done);
            done
        };
        self.l1.fill(page, stamp, ready);
        ready - t
    }

    /// Functional warming: the translation of `addr` is learnt, time does not move.
    pub fn warm(&mut self, addr: u64) {
        let page = addr >> self.p.page_shift;
        self.stamp += 1;
        let stamp = self.stamp;
        if self.l1.lookup(page, stamp).is_some() {
            return;
        }
        if self.l2.lookup(page, stamp).is_none() {
            self.l2.fill(page, stamp, 0.0);
        }
        self.l1.fill(page, stamp, 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TlbParams {
        TlbParams {
            page_shift: 12,
            l1_entries: 4,
            l1_ways: 4,
            l2_entries: 16,
            l2_ways: 4,
            l2_latency: 7,
            walk_latency: 100,
            walkers: 2,
        }
    }

    #[test]
    fn hits_second_level_hits_and_walks_cost_what_the_parameters_say() {
        let mut t = Tlb::new(params());
        // A walk, then a hit on the same page (other offset) after it arrived.
        assert_eq!(t.translate(0x1000, 0.0), 100.0);
        assert_eq!(t.translate(0x1ff8, 200.0), 0.0);
        // Five pages round-robin overflow the 4-entry first level but not the second.
        for p in 2..=5u64 {
            t.translate(p << 12, 300.0);
        }
        assert_eq!(
            t.translate(0x1000, 1000.0),
            7.0,
            "evicted from L1, held by L2"
        );
        assert_eq!((t.l1_misses, t.walks), (6, 5));
    }

    #[test]
    fn an_access_to_a_page_being_walked_waits_for_the_walk() {
        let mut t = Tlb::new(params());
        assert_eq!(t.translate(0x5000, 10.0), 100.0);
        // Issued 30 cycles later: waits the remaining 70, no second walk.
        assert_eq!(t.translate(0x5008, 40.0), 70.0);
        assert_eq!(t.walks, 1);
    }

    #[test]
    fn walks_beyond_the_walkers_queue() {
        let mut t = Tlb::new(params());
        // Three walks presented at once on two walkers: the third starts when one is free.
        assert_eq!(t.translate(0x10_000, 0.0), 100.0);
        assert_eq!(t.translate(0x20_000, 0.0), 100.0);
        assert_eq!(t.translate(0x30_000, 0.0), 200.0);
    }

    #[test]
    fn warming_fills_without_time() {
        let mut t = Tlb::new(params());
        t.warm(0x7000);
        assert_eq!(t.translate(0x7008, 0.0), 0.0);
        assert_eq!(t.walks, 0);
    }
}
