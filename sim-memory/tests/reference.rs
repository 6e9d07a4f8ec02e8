//! The cache arrays against a deliberately simple reference: a true-LRU model kept as one
//! `Vec` of lines per set in most-recently-used order, evicting the last element. For random
//! geometries (1–64 sets, 1–16 ways, 16–128-byte lines) and random address streams (strided,
//! looping and random segments over a region a few times the cache's capacity, so that hits,
//! misses and evictions all occur), `Cache` with LRU agrees with the reference on every access:
//! hit or miss and, on a miss, which line was evicted. `Cache` is driven exactly as the
//! hierarchy drives it: `find` → hit → `touch`; miss → `fill(line, SHARED)`, whose `Victim` is
//! the evicted line. Then replacement policies on cases whose answer is known by hand: tree
//! PLRU on A B C D A E (it evicts C, where LRU evicts B), 2-way PLRU = LRU, SRRIP's scan
//! resistance, associativity 1 = direct-mapped for every policy, and set-content sanity for
//! every policy and associativity.

use std::cell::Cell;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sim_memory::cache::{Cache, SHARED};
use sim_memory::{CacheParams, ReplacementKind};

/// What one access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// The line was present.
    Hit,
    /// The line was not present; it displaced the given line, if the set was full.
    Miss(Option<u64>),
}

/// True LRU, as simply as possible: per set, the lines in most-recently-used order.
struct RefLru {
    sets: Vec<Vec<u64>>,
    ways: usize,
}

impl RefLru {
    fn new(sets: usize, ways: usize) -> RefLru {
        RefLru {
            sets: vec![Vec::new(); sets],
            ways,
        }
    }

    fn access(&mut self, line: u64) -> Access {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        if let Some(i) = set.iter().position(|&l| l == line) {
            let l = set.remove(i);
            set.insert(0, l);
            return Access::Hit;
        }
        let victim = if set.len() == self.ways {
            set.pop()
        } else {
            None
        };
        set.insert(0, line);
        Access::Miss(victim)
    }
}

/// One access to `cache`, the way `Memory` performs it.
fn cache_access(cache: &mut Cache, line: u64) -> Access {
    match cache.find(line) {
        Some(slot) => {
            cache.touch(slot);
            Access::Hit
        }
        None => {
            let (slot, victim) = cache.fill(line, SHARED);
            assert_eq!(cache.line(slot), line, "fill put the line elsewhere");
            assert_eq!(cache.find(line), Some(slot), "filled line not found");
            if let Some(v) = victim {
                assert_eq!(
                    v.state, SHARED,
                    "victim {v:?} had a state it was never given"
                );
                assert!(
                    !v.dirty && v.sharers == 0,
                    "victim {v:?} is dirty or has sharers"
                );
                assert_eq!(cache.find(v.line), None, "victim {v:?} still present");
            }
            Access::Miss(victim.map(|v| v.line))
        }
    }
}

/// Geometry of a cache under test.
#[derive(Debug, Clone, Copy)]
struct Geom {
    sets: u64,
    ways: u32,
    line: u32,
}

impl Geom {
    fn params(self, replacement: ReplacementKind) -> CacheParams {
        CacheParams {
            size: self.sets * self.ways as u64 * self.line as u64,
            associativity: self.ways,
            line_size: self.line,
            data_latency: 1,
            tag_latency: 1,
            replacement,
        }
    }

    /// Capacity in lines.
    fn cap(self) -> u64 {
        self.sets * self.ways as u64
    }
}

/// A piece of an address stream, in line numbers relative to the stream's base.
#[derive(Debug, Clone)]
enum Seg {
    /// `count` lines from `start`, `stride` lines apart.
    Strided { start: u64, stride: u64, count: u64 },
    /// `reps` passes over `len` consecutive lines from `start`.
    Loop { start: u64, len: u64, reps: u64 },
    /// The given lines, drawn at random from a small window.
    Random(Vec<u64>),
}

/// Segments over a region of four times the capacity, with lengths around the capacity so
/// that loops sometimes fit (hits) and sometimes do not (misses), and strides that are
/// multiples of the number of sets (conflicts).
fn segment(g: Geom) -> BoxedStrategy<Seg> {
    let cap = g.cap();
    let sets = g.sets;
    let region = 4 * cap;
    let stride = prop_oneof![1u64..=4, Just(sets), Just(2 * sets), 1u64..=2 * sets + 1];
    prop_oneof![
        (0..region, stride, 1..=2 * cap + 2).prop_map(|(start, stride, count)| Seg::Strided {
            start,
            stride,
            count
        }),
        (0..region, 1..=(2 * cap).min(600), 1u64..=4).prop_map(|(start, len, reps)| Seg::Loop {
            start,
            len,
            reps
        }),
        (0..region, 1..=2 * cap)
            .prop_flat_map(|(start, span)| vec(start..start + span, 1..=96).prop_map(Seg::Random)),
    ]
    .boxed()
}

/// A geometry whose associativity `ways` chooses (or random 1–16), and a stream for it: its
/// segments and a base line (0 or far away, so that tags use high bits).
fn case(ways: Option<u32>) -> impl Strategy<Value = (Geom, Vec<Seg>, u64)> {
    let ways = match ways {
        Some(w) => Just(w).boxed(),
        None => (1u32..=16).boxed(),
    };
    (
        0u32..=6,
        ways,
        prop_oneof![Just(16u32), Just(32), Just(64), Just(128)],
    )
        .prop_map(|(sb, ways, line)| Geom {
            sets: 1 << sb,
            ways,
            line,
        })
        .prop_flat_map(|g| {
            (
                Just(g),
                vec(segment(g), 1..=6),
                prop_oneof![Just(0u64), Just(1u64 << 40)],
            )
        })
}

/// Byte addresses of a stream (each at some offset inside its line).
fn addresses(g: Geom, segs: &[Seg], base: u64) -> Vec<u64> {
    let mut lines = Vec::new();
    for s in segs {
        match s {
            Seg::Strided {
                start,
                stride,
                count,
            } => lines.extend((0..*count).map(|i| start + i * stride)),
            Seg::Loop { start, len, reps } => {
                for _ in 0..*reps {
                    lines.extend(*start..start + len);
                }
            }
            Seg::Random(l) => lines.extend_from_slice(l),
        }
    }
    let line = g.line as u64;
    lines
        .into_iter()
        .map(|l| (base + l) * line + (l.wrapping_mul(2_654_435_761) % line))
        .collect()
}

/// Hits, misses and evictions seen, to check that the streams exercise all three.
#[derive(Default)]
struct Tally {
    hits: Cell<u64>,
    misses: Cell<u64>,
    evictions: Cell<u64>,
}

impl Tally {
    fn add(&self, a: Access) {
        let c = match a {
            Access::Hit => &self.hits,
            Access::Miss(None) => &self.misses,
            Access::Miss(Some(_)) => &self.evictions,
        };
        c.set(c.get() + 1);
    }

    fn assert_covered(&self) {
        let (h, m, e) = (self.hits.get(), self.misses.get(), self.evictions.get());
        assert!(
            h > 100 && m > 100 && e > 100,
            "streams too tame: {h} hits, {m} cold misses, {e} evictions"
        );
        let total = (h + m + e) as f64;
        assert!(
            h as f64 > 0.1 * total && (m + e) as f64 > 0.1 * total,
            "{h} hits of {total} accesses"
        );
    }
}

/// Runs `cases` random cases of policy `kind` (associativity `ways`, or random) against the
/// LRU reference and checks that the streams exercised hits, misses and evictions.
fn agree_with_reference(kind: ReplacementKind, ways: Option<u32>, cases: u32) {
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config {
        cases,
        source_file: Some(file!()),
        ..Config::default()
    });
    let result = runner.run(&case(ways), |(g, segs, base)| {
        let mut cache = Cache::new(g.params(kind));
        let mut reference = RefLru::new(g.sets as usize, g.ways as usize);
        let shift = g.line.trailing_zeros();
        for (i, addr) in addresses(g, &segs, base).into_iter().enumerate() {
            let line = addr >> shift;
            let got = cache_access(&mut cache, line);
            let want = reference.access(line);
            prop_assert_eq!(
                got,
                want,
                "access #{} to {:#x} (line {:#x}) in {:?}",
                i,
                addr,
                line,
                g
            );
            tally.add(got);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{kind:?}: {e}");
    }
    tally.assert_covered();
}

#[test]
fn lru_cache_agrees_with_the_reference_model() {
    agree_with_reference(ReplacementKind::Lru, None, 1024);
}

#[test]
fn two_way_tree_plru_is_lru() {
    agree_with_reference(ReplacementKind::TreePlru, Some(2), 512);
}

#[test]
fn associativity_one_is_direct_mapped_for_every_policy() {
    // With one way the reference is a direct-mapped cache: each miss evicts the set's line.
    for kind in [
        ReplacementKind::Lru,
        ReplacementKind::TreePlru,
        ReplacementKind::Srrip,
    ] {
        agree_with_reference(kind, Some(1), 256);
        // And by hand: two lines of the same set evict each other every time.
        let g = Geom {
            sets: 8,
            ways: 1,
            line: 64,
        };
        let mut c = Cache::new(g.params(kind));
        assert_eq!(cache_access(&mut c, 3), Access::Miss(None));
        assert_eq!(cache_access(&mut c, 3), Access::Hit);
        assert_eq!(
            cache_access(&mut c, 4),
            Access::Miss(None),
            "{kind:?}: another set"
        );
        for _ in 0..3 {
            assert_eq!(cache_access(&mut c, 11), Access::Miss(Some(3)), "{kind:?}");
            assert_eq!(cache_access(&mut c, 3), Access::Miss(Some(11)), "{kind:?}");
        }
        assert_eq!(
            cache_access(&mut c, 4),
            Access::Hit,
            "{kind:?}: other set disturbed"
        );
    }
}

/// Every policy, every associativity: a hit exactly when the line is in its set, a victim
/// only when the set is full and always a line of that set; LRU and tree PLRU never evict
/// the line the set used last (SRRIP may: that is its scan resistance).
#[test]
fn every_policy_keeps_set_contents_consistent() {
    for kind in [
        ReplacementKind::Lru,
        ReplacementKind::TreePlru,
        ReplacementKind::Srrip,
    ] {
        let mut runner = TestRunner::new(Config {
            cases: 256,
            source_file: Some(file!()),
            ..Config::default()
        });
        let result = runner.run(&case(None), |(g, segs, base)| {
            let mut cache = Cache::new(g.params(kind));
            let mut sets: Vec<Vec<u64>> = vec![Vec::new(); g.sets as usize];
            let mut last: Vec<Option<u64>> = vec![None; g.sets as usize];
            let shift = g.line.trailing_zeros();
            for addr in addresses(g, &segs, base) {
                let line = addr >> shift;
                let s = (line % g.sets) as usize;
                let present = sets[s].contains(&line);
                match cache_access(&mut cache, line) {
                    Access::Hit => {
                        prop_assert!(present, "hit on absent line {:#x} in {:?}", line, g)
                    }
                    Access::Miss(v) => {
                        prop_assert!(!present, "miss on present line {:#x} in {:?}", line, g);
                        let full = sets[s].len() == g.ways as usize;
                        prop_assert_eq!(
                            v.is_some(),
                            full,
                            "victim {:?} with {} of {} ways used",
                            v,
                            sets[s].len(),
                            g.ways
                        );
                        if let Some(v) = v {
                            prop_assert!(
                                sets[s].contains(&v),
                                "victim {:#x} was not in set {}",
                                v,
                                s
                            );
                            if kind != ReplacementKind::Srrip && g.ways > 1 {
                                prop_assert_ne!(
                                    Some(v),
                                    last[s],
                                    "{:?} evicted the most recent line in {:?}",
                                    kind,
                                    g
                                );
                            }
                            sets[s].retain(|&l| l != v);
                        }
                        sets[s].push(line);
                    }
                }
                last[s] = Some(line);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{kind:?}: {e}");
        }
    }
}

/// One set of `ways` ways under `kind`.
fn one_set(kind: ReplacementKind, ways: u32) -> Cache {
    Cache::new(
        Geom {
            sets: 1,
            ways,
            line: 64,
        }
        .params(kind),
    )
}

#[test]
fn tree_plru_four_ways_on_a_b_c_d_a_e_evicts_c() {
    // Lines A..F fill ways 0..3 in order (invalid ways first). Tree: root bit chooses the
    // half {0,1} or {2,3}, then one bit per half; an access points the bits on its path away
    // from it. After A B C D: root → {0,1} (set by D), left bit → way 0 (set by B), right
    // bit → way 2 (set by D).
    // A hits way 0: root → {2,3}, left → 1. E misses: root → {2,3}, right bit → way 2 = C.
    // (True LRU would evict B, the least recently used; PLRU only approximates it.)
    let [a, b, c, d, e, f] = [10u64, 11, 12, 13, 14, 15];
    let mut p = one_set(ReplacementKind::TreePlru, 4);
    for x in [a, b, c, d] {
        assert_eq!(cache_access(&mut p, x), Access::Miss(None));
    }
    assert_eq!(cache_access(&mut p, a), Access::Hit);
    assert_eq!(
        cache_access(&mut p, e),
        Access::Miss(Some(c)),
        "tree PLRU: A B C D A E evicts C"
    );
    // E in way 2: root → {0,1}, right → 3; the left bit still points at way 1 (B).
    assert_eq!(
        cache_access(&mut p, f),
        Access::Miss(Some(b)),
        "then F evicts B"
    );
    // F in way 1: root → {2,3}, whose bit points at way 3 (D).
    assert_eq!(
        cache_access(&mut p, c),
        Access::Miss(Some(d)),
        "then C evicts D"
    );

    // The same pattern under true LRU evicts B, then C, then D.
    let mut l = one_set(ReplacementKind::Lru, 4);
    for x in [a, b, c, d, a] {
        cache_access(&mut l, x);
    }
    assert_eq!(
        cache_access(&mut l, e),
        Access::Miss(Some(b)),
        "LRU: A B C D A E evicts B"
    );
    assert_eq!(cache_access(&mut l, f), Access::Miss(Some(c)));
    assert_eq!(cache_access(&mut l, c), Access::Miss(Some(d)));
}

/// Fills line X, hits it once, then streams distinct single-use lines through the set;
/// returns how many stream lines X survives (the next one evicts it).
fn survival(kind: ReplacementKind, ways: u32) -> u64 {
    let mut c = one_set(kind, ways);
    let x = 1000;
    assert_eq!(cache_access(&mut c, x), Access::Miss(None));
    assert_eq!(cache_access(&mut c, x), Access::Hit);
    for i in 0..1000 {
        if let Access::Miss(Some(v)) = cache_access(&mut c, i) {
            if v == x {
                return i;
            }
        }
        assert!(c.find(x).is_some(), "X left without being evicted");
    }
    panic!("{kind:?} with {ways} ways never evicted X");
}

#[test]
fn srrip_keeps_a_rereferenced_line_through_a_scan_longer_than_lru() {
    // LRU: X is most recent after its hit, so ways − 1 new lines fit beside it and the next
    // evicts it. SRRIP: X's hit sets its value to 0 and fills enter at 2; the set must age
    // three times before X reaches 3, and each ageing round lets ways − 1 scan lines replace
    // one another: X survives 3 × (ways − 1) of them. With 4 ways: 3 against 9.
    assert_eq!(survival(ReplacementKind::Lru, 4), 3);
    assert_eq!(survival(ReplacementKind::Srrip, 4), 9);
    for ways in 2..=16 {
        let lru = survival(ReplacementKind::Lru, ways);
        let srrip = survival(ReplacementKind::Srrip, ways);
        assert_eq!(lru, ways as u64 - 1);
        assert_eq!(srrip, 3 * (ways as u64 - 1), "{ways} ways");
        assert!(srrip > lru);
    }
}
