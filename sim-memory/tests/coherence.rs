//! The memory hierarchy's coherence and erasure under test. Coherence: for several machine
//! shapes (one socket with private L2s, two sockets, L2s shared by two cores, no L3, two
//! sockets with shared L2s and no L3; MSI, and MESI on two of them, one with prefetchers), all with tiny caches so that evictions and inclusive
//! back-invalidations are frequent, random loads, stores and instruction fetches by random
//! cores over a small set of lines keep `check_all` true after every access (never two
//! modified copies, a modified line in no other private cache, inclusion and sharer masks).
//! Semantics: after core A stores X, another core's load of X is supplied by a neighbour (or
//! off-socket); after every core has read X and nobody writes, every further read hits L1 and
//! invalidates nothing. Erasure (LIME §5.4): erasing a PC turns exactly its data misses into L1
//! hits, at L1 latency, reporting where they would have been served, using no bus or DRAM
//! bandwidth, and leaves another PC that does not interact with it unchanged.

use std::cell::Cell;
use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sim_memory::{
    CacheParams, Kind, Memory, MemoryConfig, Outcome, PrefetchKind, PrefetchParams, Protocol,
    ReplacementKind, Served,
};

/// The machines under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One socket, four cores, private L2s.
    Private,
    /// Two sockets of four cores, private L2s (SRRIP in L2 and L3).
    TwoSockets,
    /// One socket, four cores, each L2 shared by two cores (tree PLRU in L2 and L3).
    SharedL2,
    /// One socket, four cores, private L2s, no L3.
    NoL3,
    /// Two sockets of four cores, L2s shared by two, no L3.
    TwoSocketsSharedNoL3,
    /// As `Private`, under MESI.
    MesiPrivate,
    /// Two sockets of four cores, L2s shared by two, an L3, under MESI, with a next-line
    /// prefetcher at the L1Ds and a stride prefetcher at the L2s.
    MesiTwoSocketsShared,
}

const SHAPES: [Shape; 7] = [
    Shape::Private,
    Shape::TwoSockets,
    Shape::SharedL2,
    Shape::NoL3,
    Shape::TwoSocketsSharedNoL3,
    Shape::MesiPrivate,
    Shape::MesiTwoSocketsShared,
];

/// Caches small enough that a few dozen lines overflow them: L1s 1 KiB 2-way (8 sets), L2s
/// 4 KiB 4-way (16 sets), L3 16 KiB 4-way (64 sets), 64-byte lines.
fn machine(shape: Shape) -> MemoryConfig {
    let (sockets, shared, l3) = match shape {
        Shape::Private => (1, 1, true),
        Shape::TwoSockets => (2, 1, true),
        Shape::SharedL2 => (1, 2, true),
        Shape::NoL3 => (1, 1, false),
        Shape::TwoSocketsSharedNoL3 => (2, 2, false),
        Shape::MesiPrivate => (1, 1, true),
        Shape::MesiTwoSocketsShared => (2, 2, true),
    };
    let mut c = MemoryConfig::small(sockets, 4);
    let sized = |p: CacheParams, size, associativity| CacheParams {
        size,
        associativity,
        ..p
    };
    c.l1i = sized(c.l1i, 1 << 10, 2);
    c.l1d = sized(c.l1d, 1 << 10, 2);
    c.l2 = sized(c.l2, 4 << 10, 4);
    c.l3 = if l3 {
        c.l3.map(|p| sized(p, 16 << 10, 4))
    } else {
        None
    };
    c.l2_shared_by = shared;
    let policy = match shape {
        Shape::TwoSockets => Some(ReplacementKind::Srrip),
        Shape::SharedL2 => Some(ReplacementKind::TreePlru),
        _ => None,
    };
    if matches!(shape, Shape::MesiPrivate | Shape::MesiTwoSocketsShared) {
        c.protocol = Protocol::Mesi;
    }
    if shape == Shape::MesiTwoSocketsShared {
        c.l1d_prefetch = PrefetchParams {
            kind: PrefetchKind::NextLine,
            degree: 2,
        };
        c.l2_prefetch = PrefetchParams {
            kind: PrefetchKind::Stride,
            degree: 2,
        };
    }
    if let Some(r) = policy {
        c.l2.replacement = r;
        if let Some(l3) = &mut c.l3 {
            l3.replacement = r;
        }
    }
    c
}

/// Socket of a core.
fn socket(cfg: &MemoryConfig, core: u32) -> u32 {
    core / cfg.cores_per_socket
}

/// One access of a random stream.
#[derive(Debug, Clone, Copy)]
struct Op {
    core: u32,
    kind: Kind,
    /// Index of the line in the stream's small universe.
    idx: u64,
    /// Byte offset in the line (with `size`, an access may straddle into the next line).
    offset: u64,
    size: u32,
}

/// Where the universe of lines lives: line `idx` is at `BASE + idx × spread × 64`.
const BASE: u64 = 0x4000_0000;

fn addr(idx: u64, spread: u64) -> u64 {
    BASE + idx * spread * 64
}

impl Op {
    fn addr(&self, spread: u64) -> u64 {
        addr(self.idx, spread) + self.offset
    }

    /// A PC per (core, kind), so instruction fetches of data lines happen too.
    fn pc(&self) -> u64 {
        0x1000 + self.core as u64 * 0x100 + self.kind as u64 * 8
    }
}

/// A stream over a small universe: `universe` lines `spread` lines apart (spread 8 maps
/// every line to one L1 set; 64 to one L3 set), so sharing is heavy and conflicts frequent.
#[derive(Debug, Clone)]
struct Stream {
    spread: u64,
    ops: Vec<Op>,
}

fn stream(cores: u32, len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Stream> {
    (
        2u64..=48,
        prop_oneof![Just(1u64), Just(2), Just(8), Just(64)],
    )
        .prop_flat_map(move |(universe, spread)| {
            let kind =
                prop_oneof![5 => Just(Kind::Load), 4 => Just(Kind::Store), 1 => Just(Kind::IFetch)];
            let size = prop_oneof![Just(1u32), Just(4), Just(8), Just(16)];
            let op = (0..cores, kind, 0..universe, 0u64..64, size).prop_map(
                |(core, kind, idx, offset, size)| Op {
                    core,
                    kind,
                    idx,
                    offset,
                    size,
                },
            );
            vec(op, len.clone()).prop_map(move |ops| Stream { spread, ops })
        })
}

/// Runs `body` on `cases` random cases of `strategy`, panicking with the minimal failure.
fn run<S: Strategy>(cases: u32, strategy: S, body: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 20_000,
        source_file: Some(file!()),
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, body) {
        panic!("{e}");
    }
}

/// Plays `s` from cycle `*t` on, advancing `*t`, and records in `seen` (a bit per [`Served`])
/// where accesses were served; with `check`, checks the invariants after every access and the
/// basic sanity of each outcome.
fn play(
    m: &mut Memory,
    s: &Stream,
    t: &mut u64,
    check: bool,
    seen: &Cell<u8>,
) -> Result<(), TestCaseError> {
    let cfg = m.config().clone();
    for (i, op) in s.ops.iter().enumerate() {
        *t += 1 + (i as u64 % 7);
        let o = m.access(op.core, op.pc(), op.addr(s.spread), op.size, op.kind, *t);
        seen.set(seen.get() | 1 << o.served as u8);
        if check {
            if let Err(e) = m.check_all() {
                return Err(TestCaseError::fail(format!(
                    "after access #{i} {op:?} at {:#x}: {e}",
                    op.addr(s.spread)
                )));
            }
            prop_assert!(!o.erased && o.would_serve == o.served, "{:?}", o);
            prop_assert!(cfg.sockets > 1 || o.served != Served::OffSocket, "{:?}", o);
            prop_assert!(cfg.l3.is_some() || o.served != Served::L3, "{:?}", o);
            // An L1 hit is served by the L1 unless the line was still arriving (merged).
            prop_assert_eq!(
                o.served == Served::L1 || o.merged,
                o.missed == [false; 3],
                "{:?}",
                o
            );
            if o.served == Served::L1 {
                prop_assert_eq!(o.latency, cfg.l1d.data_latency as u64);
            } else {
                prop_assert!(o.latency > cfg.l1d.data_latency as u64, "{:?}", o);
            }
        }
    }
    Ok(())
}

/// Invariants after every access for one shape, and (over all cases) coverage: the served
/// levels the shape can produce all occur, and evictions write back and back-invalidate.
fn invariants(shape: Shape, cases: u32) {
    let cfg = machine(shape);
    let seen = Cell::new(0u8);
    let writebacks = Cell::new(0u64);
    let invalidations = Cell::new(0u64);
    run(cases, stream(cfg.cores(), 1..=300), |s| {
        let mut m = Memory::new(cfg.clone()).unwrap();
        play(&mut m, &s, &mut 0, true, &seen)?;
        for (_, st) in m.cache_stats() {
            writebacks.set(writebacks.get() + st.writebacks);
            invalidations.set(invalidations.get() + st.invalidations);
        }
        Ok(())
    });
    let mut want = vec![
        Served::L1,
        Served::L2,
        Served::L1Neighbor,
        Served::L2Neighbor,
        Served::Dram,
    ];
    if cfg.l3.is_some() {
        want.push(Served::L3);
    }
    if cfg.sockets > 1 {
        want.push(Served::OffSocket);
    }
    for w in want {
        assert!(
            seen.get() & 1 << w as u8 != 0,
            "{shape:?}: no access served by {w:?}"
        );
    }
    assert!(
        writebacks.get() > 100 && invalidations.get() > 100,
        "{shape:?}: streams too tame"
    );
}

#[test]
fn invariants_hold_after_every_access_one_socket_private_l2() {
    invariants(Shape::Private, 48);
}

#[test]
fn invariants_hold_after_every_access_two_sockets() {
    invariants(Shape::TwoSockets, 32);
}

#[test]
fn invariants_hold_after_every_access_l2_shared_by_two() {
    invariants(Shape::SharedL2, 48);
}

#[test]
fn invariants_hold_after_every_access_without_l3() {
    invariants(Shape::NoL3, 48);
}

#[test]
fn invariants_hold_after_every_access_two_sockets_shared_l2_without_l3() {
    invariants(Shape::TwoSocketsSharedNoL3, 32);
}

#[test]
fn invariants_hold_after_every_access_under_mesi() {
    invariants(Shape::MesiPrivate, 48);
}

#[test]
fn invariants_hold_after_every_access_under_mesi_two_sockets_shared_l2() {
    invariants(Shape::MesiTwoSocketsShared, 32);
}

/// A shape, a random history, and a line of the universe (possibly untouched by it).
fn with_history() -> impl Strategy<Value = (Shape, Stream, u64)> {
    (0..SHAPES.len()).prop_flat_map(|i| {
        let shape = SHAPES[i];
        (
            Just(shape),
            stream(machine(shape).cores(), 0..=200),
            0u64..48,
        )
    })
}

#[test]
fn a_store_is_seen_by_another_core_through_its_neighbour() {
    run(
        256,
        (with_history(), 0u32..8, 1u32..8),
        |((shape, s, x), a, d)| {
            let cfg = machine(shape);
            let cores = cfg.cores();
            let a = a % cores;
            let b = (a + 1 + d % (cores - 1)) % cores;
            let mut m = Memory::new(cfg.clone()).unwrap();
            let mut t = 0;
            play(&mut m, &s, &mut t, false, &Cell::new(0))?;
            let x = addr(x, s.spread);
            // 10,000 cycles apart: every fill has arrived before the next access.
            m.access(a, 0x10, x, 8, Kind::Store, t + 10_000);
            let ld = m.access(b, 0x20, x, 8, Kind::Load, t + 20_000);
            if socket(&cfg, a) == socket(&cfg, b) {
                prop_assert!(
                    matches!(ld.served, Served::L1Neighbor | Served::L2Neighbor),
                    "{:?}: core {} stored {:#x}, core {} (same socket) loaded it: {:?}",
                    shape,
                    a,
                    x,
                    b,
                    ld
                );
            } else {
                prop_assert_eq!(
                    ld.served,
                    Served::OffSocket,
                    "{:?}: core {} stored {:#x}, core {} (other socket) loaded it",
                    shape,
                    a,
                    x,
                    b
                );
            }
            prop_assert!(ld.missed[0]);
            // Both now share it: the writer still reads it from its own L1.
            let again = m.access(a, 0x30, x, 8, Kind::Load, t + 30_000);
            prop_assert_eq!(again.served, Served::L1);
            prop_assert_eq!(m.check_all(), Ok(()));
            Ok(())
        },
    );
}

/// Invalidation counters of every cache instance.
fn invalidations(m: &Memory) -> BTreeMap<String, u64> {
    m.cache_stats()
        .into_iter()
        .map(|(n, s)| (n, s.invalidations))
        .collect()
}

#[test]
fn read_sharing_hits_l1_and_invalidates_nothing() {
    run(256, with_history(), |(shape, s, x)| {
        let cfg = machine(shape);
        let mut m = Memory::new(cfg.clone()).unwrap();
        let mut t = 0;
        play(&mut m, &s, &mut t, false, &Cell::new(0))?;
        let x = addr(x, s.spread);
        for core in 0..cfg.cores() {
            t += 5;
            m.access(core, 0x40, x, 8, Kind::Load, t);
        }
        // Every fill has arrived before the rounds start.
        t += 10_000;
        let before = invalidations(&m);
        for round in 0..3 {
            for core in (0..cfg.cores()).rev() {
                t += 5;
                let o = m.access(core, 0x40, x, 8, Kind::Load, t);
                prop_assert_eq!(
                    (o.served, o.missed),
                    (Served::L1, [false; 3]),
                    "{:?}: round {} load of shared {:#x} by core {}",
                    shape,
                    round,
                    x,
                    core
                );
                prop_assert_eq!(o.latency, cfg.l1d.data_latency as u64);
            }
        }
        prop_assert_eq!(invalidations(&m), before);
        prop_assert_eq!(m.check_all(), Ok(()));
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Miss erasure.

/// PC A: strides through a large array, one line per access, so every access misses L1.
const PC_A: u64 = 0x400a00;
/// PC B: loops over a small array, storing to one line in four, so it mostly hits.
const PC_B: u64 = 0x400b00;
/// A's array: 256 KiB, four times the L3, so A's lines come from DRAM and A's fills push B's
/// lines (some dirty) out of every level.
const A_BASE: u64 = 0x1000_0000;
const A_LINES: u64 = 4096;
/// B's array: 2.5 KiB (40 lines), five eighths of the L1.
const B_BASE: u64 = 0x2000_0000;
const B_LINES: u64 = 40;

/// One core, L1D 4 KiB 4-way, L2 16 KiB 8-way, L3 64 KiB 8-way.
fn erasure_machine() -> MemoryConfig {
    let mut c = MemoryConfig::small(1, 1);
    c.l1d.size = 4 << 10;
    c.l1d.associativity = 4;
    c.l2.size = 16 << 10;
    c.l3 = c.l3.map(|p| CacheParams {
        size: 64 << 10,
        associativity: 8,
        ..p
    });
    c
}

/// The two-PC workload: per step, an instruction fetch at A's PC, one A load (a store every
/// 16th step), then two B accesses. Returns (pc, kind, address) per access.
fn erasure_workload() -> Vec<(u64, Kind, u64)> {
    let mut w = Vec::new();
    let mut b = 0;
    for step in 0..2 * A_LINES {
        w.push((PC_A, Kind::IFetch, PC_A));
        let kind = if step % 16 == 15 {
            Kind::Store
        } else {
            Kind::Load
        };
        w.push((PC_A, kind, A_BASE + (step % A_LINES) * 64));
        for _ in 0..2 {
            let kind = if b % 4 == 0 { Kind::Store } else { Kind::Load };
            w.push((PC_B, kind, B_BASE + (b % B_LINES) * 64 + 8));
            b += 1;
        }
    }
    w
}

/// Transfers: (bus, DRAM).
type Traffic = (u64, u64);

/// Total transfers over all buses and over all DRAM controllers.
fn transfers(m: &Memory) -> Traffic {
    let sum = |v: Vec<(u64, u64)>| v.iter().map(|x| x.0).sum();
    (sum(m.bus_stats()), sum(m.dram_stats()))
}

/// Plays the workload; per access, its outcome and the bus and DRAM transfers it caused.
fn play_erasure(w: &[(u64, Kind, u64)], erase: &[u64]) -> (Memory, Vec<(Outcome, Traffic)>) {
    let mut m = Memory::new(erasure_machine()).unwrap();
    m.set_erasure(erase.iter().copied());
    let mut out = Vec::new();
    for (i, &(pc, kind, a)) in w.iter().enumerate() {
        let before = transfers(&m);
        let o = m.access(0, pc, a, 8, kind, 4 * i as u64);
        let after = transfers(&m);
        out.push((o, (after.0 - before.0, after.1 - before.1)));
    }
    (m, out)
}

#[test]
fn erasing_a_pc_turns_exactly_its_data_misses_into_l1_hits() {
    let w = erasure_workload();
    let (m1, plain) = play_erasure(&w, &[]);
    let (m2, erased) = play_erasure(&w, &[PC_A]);
    let l1 = erasure_machine().l1d.data_latency as u64;

    // The workload does what it is built for: A always misses L1 and often goes to DRAM,
    // some of A's fills write back B's dirty lines to DRAM, and B mostly hits but not always.
    let mut tally: BTreeMap<(u64, bool, Served), u64> = BTreeMap::new();
    let mut a_writebacks = 0;
    for (&(pc, kind, _), (o, (_, dram))) in w.iter().zip(&plain) {
        *tally
            .entry((pc, kind == Kind::IFetch, o.served))
            .or_default() += 1;
        if pc == PC_A && kind != Kind::IFetch && *dram > 1 {
            a_writebacks += 1;
        }
    }
    let count = |pc, served| tally.get(&(pc, false, served)).copied().unwrap_or(0);
    assert_eq!(count(PC_A, Served::L1), 0, "A hit L1: {tally:?}");
    assert!(count(PC_A, Served::Dram) > 1000, "{tally:?}");
    assert!(
        a_writebacks > 10,
        "A's fills wrote back only {a_writebacks} lines to DRAM"
    );
    let b_hits = count(PC_B, Served::L1);
    let b_misses: u64 = Served::ALL[1..].iter().map(|&s| count(PC_B, s)).sum();
    assert!(b_hits > 4 * b_misses && b_misses > 100, "{tally:?}");

    let mut a_transfers = (0, 0);
    for (i, ((&(pc, kind, a), (o1, t1)), (o2, t2))) in w.iter().zip(&plain).zip(&erased).enumerate()
    {
        let what =
            format!("access #{i}: pc {pc:#x} {kind:?} {a:#x}: without erasure {o1:?}, with {o2:?}");
        if pc == PC_A && kind != Kind::IFetch {
            a_transfers.0 += t1.0;
            a_transfers.1 += t1.1;
            if o1.served == Served::L1 {
                assert_eq!(o2, o1, "{what}");
            } else {
                assert_eq!(o2.served, Served::L1, "{what}");
                assert!(o2.erased, "{what}");
                assert_eq!(o2.would_serve, o1.served, "{what}");
                assert_eq!(o2.latency, l1, "{what}");
                assert_eq!(o2.missed, [false; 3], "{what}");
            }
            assert_eq!(*t2, (0, 0), "{what}: an erased access used the bus or DRAM");
        } else {
            // B, and A's instruction fetches (not data, so never erased), are served alike;
            // only their latencies may differ, since A no longer queues on the bus and DRAM.
            assert!(!o2.erased, "{what}");
            assert_eq!(
                (o2.served, o2.missed, o2.coherence),
                (o1.served, o1.missed, o1.coherence),
                "{what}"
            );
            assert_eq!(t2, t1, "{what}: different traffic");
        }
    }

    // Traffic is counted when requested, and which requests an access makes depends only on
    // the cache state, which erasure leaves as it was (erased accesses still fill, evict and
    // invalidate). So run 2's transfers are run 1's minus exactly those of A's data accesses.
    let (b1, d1) = transfers(&m1);
    let (b2, d2) = transfers(&m2);
    assert!(a_transfers.0 > 0 && a_transfers.1 > 0);
    assert_eq!((b2, d2), (b1 - a_transfers.0, d1 - a_transfers.1));

    // Per-core counters agree with the outcomes.
    let (s1, s2) = (m1.core_stats[0], m2.core_stats[0]);
    let a_data_misses = w
        .iter()
        .zip(&plain)
        .filter(|((pc, kind, _), (o, _))| {
            *pc == PC_A && *kind != Kind::IFetch && o.served != Served::L1
        })
        .count() as u64;
    assert_eq!(s2.erased.iter().sum::<u64>(), a_data_misses);
    assert_eq!(s2.served[0], s1.served[0] + a_data_misses);
    for s in Served::ALL {
        let a_here = count(PC_A, s);
        assert_eq!(
            s2.erased[s as usize],
            if s == Served::L1 { 0 } else { a_here },
            "{s:?}"
        );
    }
    // Coherence actions happen alike in both runs: the same invalidations and write-backs.
    let actions = |m: &Memory| {
        let v = m.cache_stats().into_iter();
        v.map(|(n, st)| (n, st.invalidations, st.writebacks))
            .collect::<Vec<_>>()
    };
    assert_eq!(actions(&m1), actions(&m2));
}

/// Erasure on random multicore streams (with sharing, coherence misses and line-straddling
/// accesses): erasing the loads of one core changes nothing but their own outcomes, which
/// become erased L1 hits reporting where they would have been served, with no traffic (nor
/// for the prefetches they trigger) — and the waits of accesses to lines an erased access
/// filled, which now arrive at once.
#[test]
fn erasure_changes_only_the_erased_accesses_on_random_streams() {
    run(128, (with_history(), 0u32..8), |((shape, s, _), e)| {
        let cfg = machine(shape);
        let e = e % cfg.cores();
        let erased_pc = Op {
            core: e,
            kind: Kind::Load,
            idx: 0,
            offset: 0,
            size: 0,
        }
        .pc();
        let play = |erase: &[u64]| {
            let mut m = Memory::new(cfg.clone()).unwrap();
            m.set_erasure(erase.iter().copied());
            let mut out = Vec::new();
            for (i, op) in s.ops.iter().enumerate() {
                let before = transfers(&m);
                let o = m.access(
                    op.core,
                    op.pc(),
                    op.addr(s.spread),
                    op.size,
                    op.kind,
                    3 * i as u64,
                );
                let after = transfers(&m);
                out.push((o, (after.0 - before.0, after.1 - before.1)));
            }
            out
        };
        let plain = play(&[]);
        let erased = play(&[erased_pc]);
        for (i, (op, ((o1, t1), (o2, t2)))) in
            s.ops.iter().zip(plain.iter().zip(&erased)).enumerate()
        {
            let what = format!(
                "{shape:?}, erasing core {e}'s loads; access #{i} {op:?} at {:#x}: \
                 without erasure {o1:?}, with {o2:?}",
                op.addr(s.spread)
            );
            if o1.waited || o2.waited {
                // The line was still arriving. With erasure an earlier erased fill of it
                // arrived at once (what a hit would have meant) and the bandwidth the erased
                // accesses no longer use moves other fills, so this access may wait for a
                // different fill or not at all: the misses, coherence and traffic are the
                // same, the place may not be; an erased access is still an L1 hit with no
                // traffic.
                if op.pc() == erased_pc {
                    prop_assert_eq!(
                        (o2.served, o2.latency, o2.missed, *t2),
                        (Served::L1, cfg.l1d.data_latency as u64, [false; 3], (0, 0)),
                        "{}",
                        what
                    );
                } else {
                    prop_assert!(!o2.erased, "{}", what);
                    prop_assert_eq!(
                        (o2.missed, o2.coherence, t2),
                        (o1.missed, o1.coherence, t1),
                        "{}",
                        what
                    );
                }
            } else if op.pc() == erased_pc && o1.served != Served::L1 {
                prop_assert!(o2.erased, "{}", what);
                prop_assert_eq!(
                    (o2.served, o2.latency),
                    (Served::L1, cfg.l1d.data_latency as u64),
                    "{}",
                    what
                );
                prop_assert_eq!(o2.would_serve, o1.served, "{}", what);
                prop_assert_eq!(o2.missed, [false; 3], "{}", what);
                prop_assert_eq!(*t2, (0, 0), "{}", what);
            } else {
                prop_assert!(!o2.erased, "{}", what);
                prop_assert_eq!(
                    (o2.served, o2.missed, o2.coherence),
                    (o1.served, o1.missed, o1.coherence),
                    "{}",
                    what
                );
                // An erased PC's hits may trigger prefetches, which are erased too.
                let want = if op.pc() == erased_pc { (0, 0) } else { *t1 };
                prop_assert_eq!(*t2, want, "{}", what);
            }
        }
        Ok(())
    });
}

/// An erased access that straddles a line held by the L3 and a line modified in another
/// core's L1 reports where it would have been served: the same level as without erasure.
#[test]
fn erased_straddling_access_reports_where_it_would_have_been_served() {
    let cfg = machine(Shape::Private);
    let play = |erase: &[u64]| {
        let mut m = Memory::new(cfg.clone()).unwrap();
        m.set_erasure(erase.iter().copied());
        // Core 0 modifies line 1 and reads line 0 (now in the L3 and core 0's caches).
        // (1000 cycles apart: each fill has arrived before the next access.)
        m.access(0, 0x10, BASE + 64, 1, Kind::Store, 0);
        m.access(0, 0x10, BASE, 1, Kind::Load, 1000);
        // Core 2 reads 16 bytes from offset 49: line 0 from the L3 (tag and data latency,
        // 40-odd cycles), line 1 from core 0's L1 (about 20 cycles).
        m.access(2, 0x20, BASE + 49, 16, Kind::Load, 2000)
    };
    let plain = play(&[]);
    let erased = play(&[0x20]);
    assert!(erased.erased && erased.served == Served::L1, "{erased:?}");
    assert_eq!(
        erased.would_serve, plain.served,
        "without erasure {plain:?}, with {erased:?}"
    );
}

/// An erased access that straddles two lines, of which only the second misses, is still an
/// erased L1 hit reporting the second line's level.
#[test]
fn erasing_a_line_straddling_access() {
    let mut m = Memory::new(erasure_machine()).unwrap();
    m.set_erasure([PC_A]);
    // Line 0 of A's array is brought in by another PC; line 1 is not in any cache.
    let first = m.access(0, PC_B, A_BASE, 8, Kind::Load, 0);
    assert_eq!(first.served, Served::Dram);
    // 8 bytes at offset 60: line 0 (an L1 hit) and line 1 (a DRAM miss, erased).
    let o = m.access(0, PC_A, A_BASE + 60, 8, Kind::Load, 1000);
    assert_eq!(o.served, Served::L1, "{o:?}");
    assert_eq!(o.would_serve, Served::Dram, "{o:?}");
    assert!(o.erased, "an erased miss reported as not erased: {o:?}");
    assert_eq!(
        m.core_stats[0].erased[Served::Dram as usize],
        1,
        "{:?}",
        m.core_stats[0]
    );
}
