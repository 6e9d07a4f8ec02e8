//! Rule tests of the memory hierarchy: each probes one rule of the coherence, latency or
//! bandwidth model (DESIGN.md §4, `docs/memory.md`, `hierarchy.rs`, `slots.rs`) on both sides
//! of its boundary, against an expectation computed here from the configuration — never a
//! number copied from a run. Coherence: ping-pong, read sharing, false sharing. Latency: what
//! an access costs on an idle machine, by where it is served. Bandwidth: the bus and the DRAM
//! controllers saturate at their configured rate and never beyond it, arbitration divides the
//! bus as its policy says (LIME §5.4: an arbiter favouring some cores caused imbalance), and
//! requests presented out of time order neither exceed the bandwidth nor wait behind requests
//! later than them.
//!
//! Debug builds check the coherence invariants of the touched line after every access that is
//! not an L1 hit (cost O(cache instances)), so each streaming case keeps to a few thousand
//! accesses.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sim_memory::{
    Arbitration, CacheStats, Kind, Memory, MemoryConfig, PrefetchKind, PrefetchParams, Protocol,
    Served,
};

/// Gap between the accesses of the coherence and latency tests: far longer than any latency,
/// so every access finds the bus and the DRAM idle.
const GAP: u64 = 1 << 12;

fn line(cfg: &MemoryConfig) -> u64 {
    cfg.l1d.line_size as u64
}

/// Cycles one line transfer costs on an idle resource, as `slots.rs` charges it.
fn slot(cfg: &MemoryConfig, bytes_per_cycle: f64) -> u64 {
    (line(cfg) as f64 / bytes_per_cycle).ceil() as u64
}

fn l1d(mem: &Memory, core: u32) -> CacheStats {
    mem.path_stats(core)[0]
}

fn load(mem: &mut Memory, core: u32, addr: u64, t: &mut u64) -> sim_memory::Outcome {
    *t += GAP;
    mem.access(core, 0, addr, 8, Kind::Load, *t)
}

fn store(mem: &mut Memory, core: u32, addr: u64, t: &mut u64) -> sim_memory::Outcome {
    *t += GAP;
    mem.access(core, 0, addr, 8, Kind::Store, *t)
}

// ---------------------------------------------------------------------------------------------
// Coherence
// ---------------------------------------------------------------------------------------------

#[test]
fn ping_pong_stores_are_neighbour_coherence_misses_but_private_lines_hit() {
    const ROUNDS: u64 = 40;
    let cfg = MemoryConfig::small(1, 2);
    let a = 0x10_0000;

    // One line, two cores storing to it in turn.
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    for r in 0..ROUNDS {
        for core in 0..2 {
            let o = store(&mut mem, core, a, &mut t);
            if r == 0 && core == 0 {
                assert_eq!(
                    o.served,
                    Served::Dram,
                    "the first store finds the line nowhere"
                );
                continue;
            }
            assert_eq!(
                o.served,
                Served::L1Neighbor,
                "round {r}, core {core}: {o:?}"
            );
            assert!(o.missed[0], "round {r}, core {core}: {o:?}");
            // Core 1's first store is a cold miss; every later one is on a line it lost.
            assert_eq!(o.coherence, r > 0, "round {r}, core {core}: {o:?}");
        }
    }
    for core in 0..2 {
        let s = l1d(&mem, core);
        assert_eq!(
            (s.accesses, s.hits, s.misses_store),
            (ROUNDS, 0, ROUNDS),
            "core {core}: {s:?}"
        );
        assert_eq!(s.coherence_misses, ROUNDS - 1, "core {core}: {s:?}");
    }
    // Core 0's copy is invalidated by each of core 1's stores; core 1's by each of core 0's
    // stores after core 1 first took the line.
    assert_eq!(l1d(&mem, 0).invalidations, ROUNDS);
    assert_eq!(l1d(&mem, 1).invalidations, ROUNDS - 1);

    // Each core storing to its own line: L1 hits after the first store.
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    for r in 0..ROUNDS {
        for core in 0..2 {
            let o = store(&mut mem, core, a + core as u64 * line(&cfg), &mut t);
            let want = if r == 0 { Served::Dram } else { Served::L1 };
            assert_eq!(o.served, want, "round {r}, core {core}: {o:?}");
            assert!(!o.coherence);
        }
    }
    for core in 0..2 {
        let s = l1d(&mem, core);
        assert_eq!(
            (s.hits, s.coherence_misses, s.invalidations),
            (ROUNDS - 1, 0, 0),
            "core {core}: {s:?}"
        );
    }
}

#[test]
fn read_sharing_never_invalidates_until_a_store() {
    const CORES: u32 = 4;
    const ROUNDS: u64 = 30;
    let cfg = MemoryConfig::small(1, CORES);
    let a = 0x20_0040;
    let mut mem = Memory::new(cfg).unwrap();
    let mut t = 0;
    for r in 0..ROUNDS {
        for core in 0..CORES {
            let o = load(&mut mem, core, a, &mut t);
            let want = match (r, core) {
                (0, 0) => Served::Dram,
                (0, _) => Served::L3,
                _ => Served::L1,
            };
            assert_eq!(o.served, want, "round {r}, core {core}: {o:?}");
        }
    }
    for (name, s) in mem.cache_stats() {
        assert_eq!(
            (s.invalidations, s.coherence_misses),
            (0, 0),
            "{name}: {s:?}"
        );
    }
    for core in 0..CORES {
        let s = l1d(&mem, core);
        assert_eq!(
            (s.accesses, s.hits),
            (ROUNDS, ROUNDS - 1),
            "core {core}: {s:?}"
        );
    }

    // The other side of the rule: one store invalidates every other copy, once each.
    let o = store(&mut mem, 0, a, &mut t);
    assert_eq!(
        o.served,
        Served::L3,
        "an upgrade takes ownership from the L3: {o:?}"
    );
    for core in 0..CORES {
        let want = if core == 0 { 0 } else { 1 };
        assert_eq!(l1d(&mem, core).invalidations, want, "core {core}");
    }
    for core in 1..CORES {
        let o = load(&mut mem, core, a, &mut t);
        assert!(o.coherence && o.missed[0], "core {core}: {o:?}");
        // The first reader finds the line modified in core 0's L1; later readers find it
        // shared (the first read downgraded it) and read it from the L3.
        let want = if core == 1 {
            Served::L1Neighbor
        } else {
            Served::L3
        };
        assert_eq!(o.served, want, "core {core}: {o:?}");
    }
}

/// Two cores each increment their own variable (a load then a store), in turn; `offset` is
/// the distance between the two variables. Returns per access (core, kind, outcome).
fn increments(offset: u64, rounds: u64) -> (Memory, Vec<(u32, Kind, sim_memory::Outcome)>) {
    let mut mem = Memory::new(MemoryConfig::small(1, 2)).unwrap();
    let a = 0x30_0000;
    let mut t = 0;
    let mut out = Vec::new();
    for _ in 0..rounds {
        for core in 0..2u32 {
            let x = a + core as u64 * offset;
            out.push((core, Kind::Load, load(&mut mem, core, x, &mut t)));
            out.push((core, Kind::Store, store(&mut mem, core, x, &mut t)));
        }
    }
    (mem, out)
}

#[test]
fn false_sharing_misses_on_one_line_but_not_on_two() {
    const ROUNDS: u64 = 30;
    let ln = line(&MemoryConfig::small(1, 2));

    // Two words of one line: every load after the very first is served by the other core's
    // L1 (it holds the line modified), every store misses for ownership (an upgrade, granted
    // by the L3): misses on every access, the neighbour serving every alternate one.
    let (mem, out) = increments(8, ROUNDS);
    for (i, &(core, kind, o)) in out.iter().enumerate() {
        assert!(o.missed[0], "access {i} (core {core}, {kind:?}): {o:?}");
        let want = match (i, kind) {
            (0, _) => Served::Dram,
            (_, Kind::Load) => Served::L1Neighbor,
            _ => Served::L3,
        };
        assert_eq!(o.served, want, "access {i} (core {core}, {kind:?}): {o:?}");
        // A load is a coherence miss once its core has held the line and lost it.
        assert_eq!(
            o.coherence,
            kind == Kind::Load && i >= 4,
            "access {i}: {o:?}"
        );
    }
    for core in 0..2 {
        let s = l1d(&mem, core);
        assert_eq!(s.hits, 0, "core {core}: {s:?}");
        assert_eq!(s.coherence_misses, ROUNDS - 1, "core {core}: {s:?}");
    }

    // The same variables a line apart: after the first increment, only L1 hits.
    let (mem, out) = increments(ln, ROUNDS);
    for (i, &(core, kind, o)) in out.iter().enumerate() {
        let want = match (i % 4, i < 4) {
            (0 | 2, true) => Served::Dram,
            (_, true) => Served::L3,
            _ => Served::L1,
        };
        assert_eq!(o.served, want, "access {i} (core {core}, {kind:?}): {o:?}");
    }
    for core in 0..2 {
        let s = l1d(&mem, core);
        assert_eq!(
            (s.hits, s.invalidations, s.coherence_misses),
            (2 * ROUNDS - 2, 0, 0),
            "core {core}: {s:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Latency on an idle machine
// ---------------------------------------------------------------------------------------------

/// `n` lines that share `a`'s L1 set but not its L2 set.
fn l1_only_conflicts(cfg: &MemoryConfig, a: u64, n: u32) -> Vec<u64> {
    let l1_stride = cfg.l1d.sets() * line(cfg);
    let ratio = cfg.l2.sets() / cfg.l1d.sets();
    assert!(ratio > 1, "the test needs an L2 with more sets than the L1");
    (1..)
        .filter(|k| k % ratio != 0)
        .take(n as usize)
        .map(|k| a + k * l1_stride)
        .collect()
}

/// `n` lines that share `a`'s L2 set (and L1 set) but not its L3 set.
fn l2_conflicts(cfg: &MemoryConfig, a: u64, n: u32) -> Vec<u64> {
    let l2_stride = cfg.l2.sets() * line(cfg);
    let l3 = cfg.l3.expect("an L3");
    let ratio = l3.sets() / cfg.l2.sets();
    assert!(ratio > 1, "the test needs an L3 with more sets than the L2");
    (1..)
        .filter(|k| k % ratio != 0)
        .take(n as usize)
        .map(|k| a + k * l2_stride)
        .collect()
}

#[test]
fn l2_hit_costs_l1_tag_plus_l2_data() {
    let cfg = MemoryConfig::small(1, 1);
    let a = 0x40_0000;
    // One conflicting line fewer than the L1's ways leaves `a` in the L1; as many evict it
    // from the L1 only.
    for (n, want, lat) in [
        (cfg.l1d.associativity - 1, Served::L1, cfg.l1d.data_latency),
        (
            cfg.l1d.associativity,
            Served::L2,
            cfg.l1d.tag_latency + cfg.l2.data_latency,
        ),
    ] {
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let mut t = 0;
        load(&mut mem, 0, a, &mut t);
        for x in l1_only_conflicts(&cfg, a, n) {
            load(&mut mem, 0, x, &mut t);
        }
        let o = load(&mut mem, 0, a, &mut t);
        assert_eq!(
            (o.served, o.latency),
            (want, lat as u64),
            "{n} conflicts: {o:?}"
        );
    }
}

#[test]
fn l3_hit_costs_tags_bus_slot_and_l3_data() {
    let cfg = MemoryConfig::small(1, 1);
    let l3 = cfg.l3.unwrap();
    let a = 0x40_0000;
    // Fewer conflicting lines than the L2's ways leave `a` in the L2 (the L1-only conflicts
    // then take it out of the L1); as many take it out of the L2 but not the L3.
    for (n, want, lat) in [
        (
            cfg.l2.associativity - 1,
            Served::L2,
            (cfg.l1d.tag_latency + cfg.l2.data_latency) as u64,
        ),
        (
            cfg.l2.associativity,
            Served::L3,
            (cfg.l1d.tag_latency + cfg.l2.tag_latency + l3.data_latency) as u64
                + slot(&cfg, cfg.bus_bytes_per_cycle),
        ),
    ] {
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let mut t = 0;
        load(&mut mem, 0, a, &mut t);
        for x in l2_conflicts(&cfg, a, n)
            .into_iter()
            .chain(l1_only_conflicts(&cfg, a, cfg.l1d.associativity))
        {
            load(&mut mem, 0, x, &mut t);
        }
        let o = load(&mut mem, 0, a, &mut t);
        assert_eq!((o.served, o.latency), (want, lat), "{n} conflicts: {o:?}");
    }
}

/// What reaching into another core's private caches costs: `snoop_latency` on top of the
/// tags and data when a neighbour supplies a modified line, when a store invalidates another
/// core's shared copy, and when a load downgrades a clean exclusive owner (MESI); nothing more
/// when the line is only read-shared.
#[test]
fn reaching_another_cores_caches_costs_the_snoop_latency() {
    let mut cfg = MemoryConfig::small(1, 2);
    cfg.snoop_latency = 77;
    let l3 = cfg.l3.unwrap();
    let bus = slot(&cfg, cfg.bus_bytes_per_cycle);
    let to_l3 = (cfg.l1d.tag_latency + cfg.l2.tag_latency) as u64 + bus;
    let neighbour = to_l3 + (l3.tag_latency + cfg.l1d.data_latency) as u64;
    let l3_hit = to_l3 + l3.data_latency as u64;
    let snoop = cfg.snoop_latency as u64;
    assert_eq!(cfg.neighbour_latency(), neighbour + snoop);
    let a = 0x80_0000;

    // Modified in core 0's L1: core 1's load takes it from there.
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    store(&mut mem, 0, a, &mut t);
    let o = load(&mut mem, 1, a, &mut t);
    assert_eq!(
        (o.served, o.latency),
        (Served::L1Neighbor, neighbour + snoop),
        "{o:?}"
    );
    // Both share it now: a third look by core 0 is a hit, nothing reached.
    let o = load(&mut mem, 0, a, &mut t);
    assert_eq!(
        (o.served, o.latency),
        (Served::L1, cfg.l1d.data_latency as u64),
        "{o:?}"
    );
    // Core 1 stores: an upgrade from S granted by the L3, invalidating core 0's copy.
    let o = store(&mut mem, 1, a, &mut t);
    assert_eq!((o.served, o.latency), (Served::L3, l3_hit + snoop), "{o:?}");
    // Core 0 stores: it takes the dirty line from core 1.
    let o = store(&mut mem, 0, a, &mut t);
    assert_eq!(
        (o.served, o.latency),
        (Served::L1Neighbor, neighbour + snoop),
        "{o:?}"
    );

    // Read sharing without an owner: a line both cores load after it came from the L3 in S
    // reaches nobody (MSI here: nothing is exclusive).
    let b = 0x90_0000;
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    load(&mut mem, 0, b, &mut t);
    let o = load(&mut mem, 1, b, &mut t);
    assert_eq!((o.served, o.latency), (Served::L3, l3_hit), "{o:?}");

    // Under MESI a clean exclusive copy in core 0 is downgraded by core 1's load: the data
    // comes from the L3, but core 0 had to be asked.
    cfg.protocol = Protocol::Mesi;
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    load(&mut mem, 0, b, &mut t);
    let o = load(&mut mem, 1, b, &mut t);
    assert_eq!((o.served, o.latency), (Served::L3, l3_hit + snoop), "{o:?}");
}

/// The latency of a load from DRAM through a local controller on an idle machine.
fn dram_latency(cfg: &MemoryConfig) -> u64 {
    let l3 = cfg.l3.unwrap();
    (cfg.l1d.tag_latency + cfg.l2.tag_latency + l3.tag_latency + cfg.dram_latency) as u64
        + slot(cfg, cfg.bus_bytes_per_cycle)
        + slot(cfg, cfg.dram_bytes_per_cycle)
}

#[test]
fn off_socket_hit_costs_tags_bus_slot_and_off_socket_latency() {
    let cfg = MemoryConfig::small(2, 1);
    let l3 = cfg.l3.unwrap();
    let a = 0x50_0000;
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    // Socket 1 (core 1) reads a line that socket 0 holds: off-socket.
    load(&mut mem, 0, a, &mut t);
    let o = load(&mut mem, 1, a, &mut t);
    let off = (cfg.l1d.tag_latency + cfg.l2.tag_latency + l3.tag_latency + cfg.off_socket_latency)
        as u64
        + slot(&cfg, cfg.bus_bytes_per_cycle);
    assert_eq!((o.served, o.latency), (Served::OffSocket, off), "{o:?}");
    // A line of the same controller that socket 0 does not hold comes from DRAM.
    let o = load(&mut mem, 1, a + line(&cfg), &mut t);
    assert_eq!(o.served, Served::Dram, "{o:?}");
}

#[test]
fn dram_access_costs_tags_bus_slot_dram_slot_and_dram_latency() {
    let cfg = MemoryConfig::small(1, 1);
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut t = 0;
    let o = load(&mut mem, 0, 0x60_0000, &mut t);
    assert_eq!(
        (o.served, o.latency),
        (Served::Dram, dram_latency(&cfg)),
        "{o:?}"
    );

    // With two sockets, a line interleaved onto the other socket's controller also pays the
    // off-socket latency; one on the local controller does not.
    let mut cfg = MemoryConfig::small(2, 1);
    cfg.dram_controllers = 1;
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let local = 0x60_0000 * 2 * cfg.dram_interleave;
    let remote = local + cfg.dram_interleave;
    let o = load(&mut mem, 0, local, &mut t);
    assert_eq!(
        (o.served, o.latency),
        (Served::Dram, dram_latency(&cfg)),
        "local: {o:?}"
    );
    let o = load(&mut mem, 0, remote, &mut t);
    let want = dram_latency(&cfg) + cfg.off_socket_latency as u64;
    assert_eq!((o.served, o.latency), (Served::Dram, want), "remote: {o:?}");
}

/// With `[dram] banks`, a read from DRAM costs what its bank's row buffer says: the full
/// latency for a row conflict (as without banks), `t_rp` less for a bank with no row open,
/// `t_rp + t_rcd` less for the open row; the counters say which, and a bank busy with one
/// access delays the next.
#[test]
fn a_dram_read_costs_what_its_banks_open_row_says() {
    let mut cfg = MemoryConfig::small(1, 1);
    cfg.dram_banks = sim_memory::dram::BankParams {
        banks: 8,
        row_bytes: 2048,
        t_rp: 30,
        t_rcd: 40,
        t_cas: 50,
        t_refi: 0,
        t_rfc: 0,
    };
    let full = dram_latency(&cfg);
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let l = line(&cfg);
    // Bank of line n: n % 8; its row: n / 8 / 32. Lines 8 apart share a bank and, within
    // 256 lines, a row.
    let base = 0x100_0000;
    let mut t = 0;
    let o = load(&mut mem, 0, base, &mut t);
    assert_eq!(
        (o.served, o.latency),
        (Served::Dram, full - 30),
        "empty bank: {o:?}"
    );
    t += 10_000;
    let o = load(&mut mem, 0, base + 8 * l, &mut t);
    assert_eq!(o.latency, full - 70, "row hit: {o:?}");
    t += 10_000;
    let o = load(&mut mem, 0, base + 256 * l, &mut t);
    assert_eq!(o.latency, full, "row conflict: {o:?}");
    // Two reads of one bank issued together: the second waits for the first's bank time
    // (its row access and burst), then hits the row the first opened.
    t += 10_000;
    let a = mem.access(0, 0, base + 16 * l, 8, Kind::Load, t);
    let b = mem.access(0, 0, base + 24 * l, 8, Kind::Load, t);
    assert_eq!(a.latency, full, "{a:?}");
    let burst = slot(&cfg, cfg.dram_bytes_per_cycle);
    assert_eq!(b.latency, full + 50 + burst, "{b:?}");
    let st = mem.bank_stats();
    assert_eq!(st.len(), 1);
    assert_eq!(st[0].row_empty, [1, 0]);
    assert_eq!(st[0].row_hits, [2, 0]);
    assert_eq!(st[0].row_conflicts, [2, 0]);
    // The second came to the controller one bus slot after the first, which held the bank
    // for its conflict (120 cycles) and its burst.
    let bus = slot(&cfg, cfg.bus_bytes_per_cycle);
    assert_eq!(st[0].bank_wait_cycles, [120 + burst - bus, 0]);
    // Without banks there are no row counters and every read costs the full latency.
    let mut plain = Memory::new(MemoryConfig::small(1, 1)).unwrap();
    assert!(plain.bank_stats().is_empty());
    let mut t = 0;
    assert_eq!(load(&mut plain, 0, base + 8 * l, &mut t).latency, full);
}

#[test]
fn idle_latency_does_not_depend_on_the_request_phase() {
    // An idle resource costs one slot (line ÷ bandwidth, rounded up) whenever the request
    // comes, whether or not the request falls on a slot boundary — including bandwidths that
    // do not divide the line.
    for (bus, dram) in [(32.0, 16.0), (24.0, 10.0), (48.0, 6.0)] {
        let mut cfg = MemoryConfig::small(1, 1);
        cfg.bus_bytes_per_cycle = bus;
        cfg.dram_bytes_per_cycle = dram;
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let mut t = 0;
        for phase in 0..16 {
            let at = t + GAP + phase;
            let o = mem.access(0, 0, 0x70_0000 + phase * line(&cfg), 8, Kind::Load, at);
            t = at;
            assert_eq!(
                (o.served, o.latency),
                (Served::Dram, dram_latency(&cfg)),
                "bus {bus} B/cycle, DRAM {dram} B/cycle, time {at}: {o:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bandwidth: closed-loop streams
// ---------------------------------------------------------------------------------------------

/// One core's stream of loads: `outstanding` in flight, each issued at the completion of the
/// previous one in its slot (plus a deterministic pseudo-random `think` of 0 to `think`
/// cycles), cycling over `addrs`. The stream is presented to the memory `ahead` cycles before
/// the others (it runs ahead in simulated time).
#[derive(Debug, Clone)]
struct Stream {
    core: u32,
    outstanding: u32,
    addrs: Vec<u64>,
    ahead: u64,
    think: u64,
}

/// One completed access.
#[derive(Debug, Clone, Copy)]
struct Done {
    core: u32,
    addr: u64,
    done: u64,
}

/// Runs the streams from `start`, issuing until `end`; returns every completed access.
fn run(mem: &mut Memory, streams: &[Stream], start: u64, end: u64) -> Vec<Done> {
    let max_ahead = streams.iter().map(|s| s.ahead).max().unwrap_or(0);
    let mut next = vec![0usize; streams.len()];
    // (presentation key, stream, issue time)
    let mut heap = BinaryHeap::new();
    for (i, s) in streams.iter().enumerate() {
        for _ in 0..s.outstanding {
            heap.push(Reverse((start + max_ahead - s.ahead, i, start)));
        }
    }
    let mut out = Vec::new();
    while let Some(Reverse((_, i, t))) = heap.pop() {
        if t >= end {
            continue;
        }
        let s = &streams[i];
        let addr = s.addrs[next[i] % s.addrs.len()];
        next[i] += 1;
        let o = mem.access(s.core, 0, addr, 8, Kind::Load, t);
        let done = t + o.latency;
        out.push(Done {
            core: s.core,
            addr,
            done,
        });
        let next_t = done + (next[i] as u64 * 7919) % (s.think + 1);
        heap.push(Reverse((next_t + max_ahead - s.ahead, i, next_t)));
    }
    out
}

/// Bytes per cycle of the accesses completed in `[lo, hi)` that `keep` selects.
fn rate(cfg: &MemoryConfig, dones: &[Done], lo: u64, hi: u64, keep: impl Fn(&Done) -> bool) -> f64 {
    let n = dones
        .iter()
        .filter(|d| d.done >= lo && d.done < hi && keep(d))
        .count();
    (n as u64 * line(cfg)) as f64 / (hi - lo) as f64
}

/// The largest number of accesses completed within any `window` cycles.
fn peak(dones: &[Done], window: u64) -> usize {
    let mut t: Vec<u64> = dones.iter().map(|d| d.done).collect();
    t.sort_unstable();
    let mut best = 0;
    let mut j = 0;
    for i in 0..t.len() {
        while t[i] - t[j] >= window {
            j += 1;
        }
        best = best.max(i + 1 - j);
    }
    best
}

/// Start of the timed phase: far beyond any warm-up traffic.
const START: u64 = 1 << 30;

/// A socket of `cores` cores whose L2 (64 KiB) is small enough that a footprint of twice its
/// size, warmed into the L3, makes every access of the timed phase an L3 hit — one bus
/// transfer and nothing else.
fn l3_machine(cores: u32, arbitration: Arbitration) -> MemoryConfig {
    let mut cfg = MemoryConfig::small(1, cores);
    cfg.l2.size = 64 << 10;
    cfg.arbitration = arbitration;
    cfg
}

/// Latency of an L3 hit on an idle bus.
fn l3_latency(cfg: &MemoryConfig) -> u64 {
    (cfg.l1d.tag_latency + cfg.l2.tag_latency + cfg.l3.unwrap().data_latency) as u64
        + slot(cfg, cfg.bus_bytes_per_cycle)
}

/// Per-core footprints (twice the L2) warmed into the L3, and streams over them with
/// `outstanding` accesses in flight per core.
fn l3_streams(mem: &mut Memory, outstanding: u32) -> Vec<Stream> {
    let cfg = mem.config().clone();
    let lines = 2 * cfg.l2.size / line(&cfg);
    let mut streams = Vec::new();
    // Warm-up accesses spaced just enough never to queue: thousands queued on one cycle would
    // cost a quadratic search for free slots, wide gaps a long slide of the calendars.
    let gap = slot(&cfg, cfg.bus_bytes_per_cycle).max(slot(&cfg, cfg.dram_bytes_per_cycle));
    let mut t = 0;
    for core in 0..cfg.cores() {
        let addrs: Vec<u64> = (0..lines)
            .map(|k| ((core as u64 + 1) << 28) + k * line(&cfg))
            .collect();
        for &a in &addrs {
            t += gap;
            mem.access(core, 0, a, 8, Kind::Load, t);
        }
        streams.push(Stream {
            core,
            outstanding,
            addrs,
            ahead: 0,
            think: 0,
        });
    }
    streams
}

/// Enough accesses in flight per core for `cores` cores together to offer twice what a
/// resource of `slot_cycles` per transfer can carry at an access latency of `latency`.
fn saturating(latency: u64, slot_cycles: f64, cores: u32) -> u32 {
    ((2.0 * latency as f64 / slot_cycles) / cores as f64).ceil() as u32
}

/// Timed phase of the bus tests, in bus slots: a few thousand transfers.
const BUS_SLOTS: u64 = 4000;

#[test]
fn bus_bandwidth_saturates_at_the_configured_rate() {
    for cores in [1, 2, 4, 8] {
        let cfg = l3_machine(cores, Arbitration::Fifo);
        let bw = cfg.bus_bytes_per_cycle;
        let sc = line(&cfg) as f64 / bw;
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let streams = l3_streams(&mut mem, saturating(l3_latency(&cfg), sc, cores));
        let end = START + (BUS_SLOTS as f64 * sc) as u64;
        let dones = run(&mut mem, &streams, START, end);
        assert!(
            dones
                .iter()
                .all(|d| mem.config().l3.is_some() && d.done > START)
        );
        let served_l3 = mem
            .core_stats
            .iter()
            .map(|c| c.served[Served::L3 as usize])
            .sum::<u64>();
        assert_eq!(
            served_l3 as usize,
            dones.len(),
            "{cores} cores: every timed access is an L3 hit"
        );
        let lo = START + (end - START) / 4;
        let got = rate(&cfg, &dones, lo, end, |_| true);
        eprintln!("bus, {cores} cores saturating: {got:.3} B/cycle of {bw}");
        assert!(
            (got - bw).abs() <= 0.02 * bw,
            "{cores} cores: {got} B/cycle, bus {bw}"
        );
        // Never more than one transfer per slot, over any stretch of time.
        let w = (64.0 * sc) as u64;
        assert!(
            peak(&dones, w) as f64 <= w as f64 / sc + 1.0,
            "{cores} cores: {} transfers in {w} cycles",
            peak(&dones, w)
        );
    }
}

#[test]
fn one_slow_core_leaves_the_bus_below_its_bandwidth() {
    let cfg = l3_machine(1, Arbitration::Fifo);
    let bw = cfg.bus_bytes_per_cycle;
    let sc = line(&cfg) as f64 / bw;
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let streams = l3_streams(&mut mem, 1);
    let end = START + (BUS_SLOTS as f64 * sc) as u64;
    let dones = run(&mut mem, &streams, START, end);
    // One access in flight: one line per unloaded L3-hit latency.
    let want = line(&cfg) as f64 / l3_latency(&cfg) as f64;
    let got = rate(&cfg, &dones, START, end, |_| true);
    eprintln!(
        "bus, one core with one access in flight: {got:.3} B/cycle (expected {want:.3}) of {bw}"
    );
    assert!(
        (got - want).abs() <= 0.02 * want,
        "{got} B/cycle, expected {want}"
    );
    assert!(got < 0.98 * bw);
}

/// Per-core bus bandwidth (bytes per cycle) on `cfg` when core `c` keeps `outstanding[c]`
/// accesses in flight, 0 meaning enough to saturate the bus alone.
fn shares_with(cfg: &MemoryConfig, outstanding: &[u32]) -> Vec<f64> {
    let sc = line(cfg) as f64 / cfg.bus_bytes_per_cycle;
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let mut streams = l3_streams(&mut mem, saturating(l3_latency(cfg), sc, 1));
    for (s, &n) in streams.iter_mut().zip(outstanding) {
        if n > 0 {
            s.outstanding = n;
        }
    }
    let end = START + (BUS_SLOTS as f64 * sc) as u64;
    let dones = run(&mut mem, &streams, START, end);
    let lo = START + (end - START) / 4;
    (0..cfg.cores())
        .map(|c| rate(cfg, &dones, lo, end, |d| d.core == c))
        .collect()
}

/// Per-core shares of the bus with `cores` cores each able to saturate it alone; checks that
/// the bus as a whole stays saturated.
fn shares(cores: u32, arbitration: Arbitration) -> Vec<f64> {
    let cfg = l3_machine(cores, arbitration);
    let s = shares_with(&cfg, &[]);
    let total: f64 = s.iter().sum();
    eprintln!("{arbitration:?}, {cores} cores: shares {s:.2?} B/cycle, total {total:.2}");
    assert!(
        (total - cfg.bus_bytes_per_cycle).abs() <= 0.02 * cfg.bus_bytes_per_cycle,
        "{arbitration:?}: {total} B/cycle in all"
    );
    s
}

#[test]
fn round_robin_and_fifo_share_the_bus_equally() {
    for cores in [2, 4] {
        for arbitration in [Arbitration::RoundRobin, Arbitration::Fifo] {
            let s = shares(cores, arbitration);
            let mean = s.iter().sum::<f64>() / cores as f64;
            for (c, &x) in s.iter().enumerate() {
                assert!(
                    (x - mean).abs() <= 0.10 * mean,
                    "{arbitration:?}, {cores} cores: core {c} gets {x}, mean {mean}"
                );
            }
        }
    }
}

#[test]
fn fixed_priority_starves_the_low_priority_cores() {
    for cores in [2, 4] {
        let rr = shares(cores, Arbitration::RoundRobin);
        let fp = shares(cores, Arbitration::FixedPriority);
        let last = cores as usize - 1;
        for c in 1..cores as usize {
            assert!(
                fp[0] > 4.0 * fp[c],
                "{cores} cores: core 0 gets {}, core {c} {}",
                fp[0],
                fp[c]
            );
        }
        assert!(
            fp[last] < 0.25 * rr[last],
            "{cores} cores: core {last} gets {} under fixed priority, {} under round-robin",
            fp[last],
            rr[last]
        );
    }
}

#[test]
fn fixed_priority_serves_a_light_high_priority_core_and_leaves_the_rest() {
    // The other side of starvation: core 0 keeps only one (or eight) accesses in flight, so it
    // asks for that many lines per unloaded L3-hit latency. Priority gives it (nearly) that,
    // and the low-priority core is not starved: it gets most of what is left. (Not all: a
    // calendar commits each transfer to a slot when it is requested, so serving core 0
    // promptly means holding open slots it often does not use — see `slots.rs`.)
    for outstanding in [1, 8] {
        let cfg = l3_machine(2, Arbitration::FixedPriority);
        let bw = cfg.bus_bytes_per_cycle;
        let asks = outstanding as f64 * line(&cfg) as f64 / l3_latency(&cfg) as f64;
        let fp = shares_with(&cfg, &[outstanding, 0]);
        eprintln!("FixedPriority, core 0 with {outstanding} in flight (asks {asks:.2}): {fp:.2?}");
        assert!(
            fp[0] >= 0.85 * asks,
            "{outstanding} in flight: core 0 gets {}, asks for {asks}",
            fp[0]
        );
        assert!(
            fp[1] >= 0.5 * (bw - asks),
            "{outstanding} in flight: core 1 gets {}, {} is left",
            fp[1],
            bw - asks
        );
    }
}

// ---------------------------------------------------------------------------------------------
// DRAM bandwidth
// ---------------------------------------------------------------------------------------------

/// Measured DRAM bandwidth, total and per controller, with `controllers` controllers and a
/// bus fast enough never to be the bottleneck; every access is a fresh line from DRAM.
fn dram_rates(controllers: u32) -> (f64, Vec<f64>) {
    const CORES: u32 = 4;
    let mut cfg = MemoryConfig::small(1, CORES);
    cfg.dram_controllers = controllers;
    cfg.bus_bytes_per_cycle = 16.0 * line(&cfg) as f64;
    let sc = line(&cfg) as f64 / cfg.dram_bytes_per_cycle;
    let timed_slots = 3000 * controllers as u64;
    let per_core = (timed_slots / CORES as u64) * 2;
    let streams: Vec<Stream> = (0..CORES)
        .map(|core| Stream {
            core,
            outstanding: saturating(dram_latency(&cfg), sc / controllers as f64, CORES),
            addrs: (0..per_core)
                .map(|k| ((core as u64 + 1) << 28) + k * line(&cfg))
                .collect(),
            ahead: 0,
            think: 0,
        })
        .collect();
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let end = START + (timed_slots as f64 * sc / controllers as f64) as u64;
    let dones = run(&mut mem, &streams, START, end);
    let dram = mem
        .core_stats
        .iter()
        .map(|c| c.served[Served::Dram as usize])
        .sum::<u64>();
    assert_eq!(dram as usize, dones.len(), "every access is served by DRAM");
    let lo = START + (end - START) / 4;
    let total = rate(&cfg, &dones, lo, end, |_| true);
    let per: Vec<f64> = (0..controllers as u64)
        .map(|c| {
            rate(&cfg, &dones, lo, end, |d| {
                (d.addr / cfg.dram_interleave) % controllers as u64 == c
            })
        })
        .collect();
    eprintln!(
        "DRAM, {controllers} controller(s) of {} B/cycle: {total:.3} B/cycle, per controller {per:.3?}",
        cfg.dram_bytes_per_cycle
    );
    (total, per)
}

#[test]
fn dram_bandwidth_saturates_per_controller_and_in_total() {
    let bw = MemoryConfig::small(1, 1).dram_bytes_per_cycle;
    for controllers in [1, 2] {
        let (total, per) = dram_rates(controllers);
        let want = bw * controllers as f64;
        assert!(
            (total - want).abs() <= 0.02 * want,
            "{controllers} controllers: {total} B/cycle, expected {want}"
        );
        for (c, &x) in per.iter().enumerate() {
            assert!(
                (x - bw).abs() <= 0.02 * bw,
                "controller {c} of {controllers}: {x} B/cycle, expected {bw}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Out-of-order requests
// ---------------------------------------------------------------------------------------------

#[test]
fn out_of_order_requests_never_exceed_the_bus_bandwidth() {
    for arbitration in [
        Arbitration::Fifo,
        Arbitration::RoundRobin,
        Arbitration::FixedPriority,
    ] {
        for ahead in [0, 500, 3000] {
            let cfg = l3_machine(2, arbitration);
            let bw = cfg.bus_bytes_per_cycle;
            let sc = line(&cfg) as f64 / bw;
            let w = (64.0 * sc) as u64;
            let end = START + (BUS_SLOTS as f64 * sc) as u64;
            let lo = START + (end - START) / 4;

            // Both cores saturating: the bus stays saturated, and no faster than its rate.
            let mut mem = Memory::new(cfg.clone()).unwrap();
            let mut streams = l3_streams(&mut mem, saturating(l3_latency(&cfg), sc, 1));
            streams[1].ahead = ahead;
            let dones = run(&mut mem, &streams, START, end);
            let p = peak(&dones, w);
            let got = rate(&cfg, &dones, lo, end, |_| true);
            eprintln!(
                "{arbitration:?}, core 1 ahead by {ahead}: {got:.3} B/cycle of {bw}, \
                 peak {p} transfers in {w} cycles"
            );
            assert!(
                p as f64 <= w as f64 / sc + 1.0,
                "{arbitration:?}, core 1 ahead by {ahead}: {p} transfers in {w} cycles"
            );
            assert!(
                (got - bw).abs() <= 0.02 * bw,
                "{arbitration:?}, core 1 ahead by {ahead}: {got} B/cycle"
            );

            // Offering about 80 % of the bus at irregular times, so that requests fall at
            // every phase of a slot and many find the slot containing them free.
            let mut mem = Memory::new(cfg.clone()).unwrap();
            // Each access takes the unloaded latency plus 2 cycles of think on average.
            let per_core = 0.8 * bw * (l3_latency(&cfg) + 2) as f64 / line(&cfg) as f64 / 2.0;
            let outstanding = per_core.round() as u32;
            let mut streams = l3_streams(&mut mem, outstanding);
            for s in &mut streams {
                s.think = 4;
            }
            streams[1].ahead = ahead;
            let dones = run(&mut mem, &streams, START, end);
            let got = rate(&cfg, &dones, lo, end, |_| true);
            for slots in [2.0, 4.0, 64.0] {
                let w = (slots * sc) as u64;
                let p = peak(&dones, w);
                eprintln!(
                    "{arbitration:?}, irregular at 80 %, core 1 ahead by {ahead}: \
                     {got:.3} B/cycle, peak {p} transfers in {w} cycles"
                );
                assert!(
                    p as f64 <= slots + 1.0,
                    "{arbitration:?}, irregular, core 1 ahead by {ahead}: {p} transfers in {w} cycles"
                );
            }
        }
    }
}

#[test]
fn a_late_early_request_uses_an_idle_slot() {
    for arbitration in [Arbitration::Fifo, Arbitration::RoundRobin] {
        let cfg = l3_machine(2, arbitration);
        let sc = slot(&cfg, cfg.bus_bytes_per_cycle);
        let idle = l3_latency(&cfg);
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let streams = l3_streams(&mut mem, 1);
        // Core 1 runs ahead: 1000 accesses, one every other slot from T to T + 2000 slots.
        let t0 = START;
        for k in 0..1000 {
            let o = mem.access(
                1,
                0,
                streams[1].addrs[k as usize],
                8,
                Kind::Load,
                t0 + 2 * sc * k,
            );
            assert_eq!(o.latency, idle, "core 1 alone, access {k}: {o:?}");
        }
        // Core 0 then presents requests from the past of core 1's. One landing on a free slot
        // (odd slots) is not delayed; one landing on a slot core 1 holds (even slots) waits
        // exactly one slot under FIFO; one before all of them is not delayed.
        let a = &streams[0].addrs;
        let o = mem.access(0, 0, a[0], 8, Kind::Load, t0 - 1000 * sc);
        assert_eq!(
            o.latency, idle,
            "{arbitration:?}, before core 1's requests: {o:?}"
        );
        for (i, k) in [10u64, 500, 999].into_iter().enumerate() {
            let o = mem.access(0, 0, a[1 + 2 * i], 8, Kind::Load, t0 + 2 * sc * k + sc);
            assert_eq!(
                o.latency,
                idle,
                "{arbitration:?}, between core 1's requests {k} and {}: {o:?}",
                k + 1
            );
            if arbitration == Arbitration::Fifo {
                // Core 1's request k - 1 holds this slot; the next one (odd) is free.
                let o = mem.access(0, 0, a[2 + 2 * i], 8, Kind::Load, t0 + 2 * sc * (k - 1));
                assert_eq!(
                    o.latency,
                    idle + sc,
                    "{arbitration:?}, on core 1's request {}: {o:?}",
                    k - 1
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Misses in flight
// ---------------------------------------------------------------------------------------------

/// A second access to a line whose miss is still in flight merges into that miss (as an MSHR
/// does) and completes when the line arrives, charged to where the line comes from; one made
/// at or after the arrival is an L1 hit. Both sides of the boundary, for loads and stores
/// after a load or store miss. A store to a line a load is still bringing in shared state
/// is an upgrade (a miss of its own under MSI), which also waits for the data.
#[test]
fn an_access_to_a_line_in_flight_completes_when_the_line_arrives() {
    let cfg = MemoryConfig::small(1, 1);
    let d = dram_latency(&cfg);
    let hit = cfg.l1d.data_latency as u64;
    for (first_kind, kind) in [
        (Kind::Load, Kind::Load),
        (Kind::Store, Kind::Store),
        (Kind::Store, Kind::Load),
        (Kind::Load, Kind::Store),
    ] {
        for (i, k) in [1, d / 2, d - hit - 1, d - hit, d, d + 1]
            .into_iter()
            .enumerate()
        {
            let mut mem = Memory::new(cfg.clone()).unwrap();
            let a = 0x70_0000 + 4096 * i as u64;
            let t0 = GAP;
            let first = mem.access(0, 0, a, 8, first_kind, t0);
            assert_eq!((first.served, first.latency), (Served::Dram, d));
            // Another word of the same line, `k` cycles after the miss was issued.
            let o = mem.access(0, 0, a + 8, 8, kind, t0 + k);
            let what = format!("{kind:?} {k} cycles after a {first_kind:?} miss of {d}: {o:?}");
            let wait = d.saturating_sub(k);
            let upgrade = first_kind == Kind::Load && kind == Kind::Store;
            if upgrade {
                // Ownership from the L3 (the only holder) costs the tags and a bus slot.
                let own = (cfg.l1d.tag_latency + cfg.l2.tag_latency + cfg.l3.unwrap().tag_latency)
                    as u64
                    + slot(&cfg, cfg.bus_bytes_per_cycle);
                assert!(o.missed[0] && !o.merged, "{what}");
                assert_eq!(o.latency, wait.max(own), "{what}");
                assert_eq!(o.waited, wait > own, "{what}");
                continue;
            }
            if wait > hit {
                // Still arriving: wait for it, served by DRAM, no miss of its own.
                assert_eq!((o.served, o.latency), (Served::Dram, wait), "{what}");
                assert!(o.merged && o.waited && o.missed == [false; 3], "{what}");
                assert_eq!(l1d(&mem, 0).merged, 1, "{what}");
            } else {
                assert_eq!((o.served, o.latency), (Served::L1, hit), "{what}");
                assert!(!o.merged && !o.waited, "{what}");
                assert_eq!(l1d(&mem, 0).merged, 0, "{what}");
            }
            assert_eq!(
                l1d(&mem, 0).misses(),
                1,
                "{what}: a merged access is no miss"
            );
        }
    }
}

/// The same at a shared level: another core whose access finds the line in the shared L3 but
/// still arriving there waits for it (its own L1 and L2 miss); after the arrival it is an L3
/// hit. An access presented in simulated time before the miss was issued (cores run ahead of
/// each other) takes the whole fill latency, as if it had missed itself.
#[test]
fn another_core_waits_for_a_line_arriving_in_the_shared_l3() {
    let cfg = MemoryConfig::small(1, 2);
    let d = dram_latency(&cfg);
    let l3 = cfg.l3.unwrap();
    // As `l3_hit_costs_tags_bus_slot_and_l3_data` computes it.
    let l3_hit = (cfg.l1d.tag_latency + cfg.l2.tag_latency + l3.data_latency) as u64
        + slot(&cfg, cfg.bus_bytes_per_cycle);
    let t0 = GAP;
    for (i, at) in [t0 - 50, t0 + 20, t0 + d - l3_hit - 1, t0 + d, t0 + 10 * d]
        .into_iter()
        .enumerate()
    {
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let a = 0x80_0000 + 4096 * i as u64;
        assert_eq!(mem.access(0, 0, a, 8, Kind::Load, t0).latency, d);
        let o = mem.access(1, 0, a, 8, Kind::Load, at);
        let what = format!(
            "core 1 at {at}, core 0's miss at {t0} arriving at {}: {o:?}",
            t0 + d
        );
        assert_eq!(o.missed, [true, true, false], "{what}");
        assert!(!o.merged, "{what}: an L1 miss needs a miss slot of its own");
        let wait = (t0 + d).saturating_sub(at.max(t0));
        if wait > l3_hit {
            assert_eq!((o.served, o.latency), (Served::Dram, wait), "{what}");
            assert!(o.waited, "{what}");
        } else {
            assert_eq!((o.served, o.latency), (Served::L3, l3_hit), "{what}");
            assert!(!o.waited, "{what}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MSI and MESI
// ---------------------------------------------------------------------------------------------

/// A core that loads a line nobody else holds and then stores to it: under MSI the store is an
/// upgrade (an L1 miss and a bus transaction for ownership); under MESI the load filled in the
/// exclusive state and the store is an L1 hit with no bus transaction. Once another core has
/// read the line, it is shared under both, and a store is an upgrade again. Under MESI a clean
/// exclusive line another core reads comes from the shared level, not from the neighbour.
#[test]
fn a_private_load_then_store_needs_no_bus_transaction_under_mesi() {
    for protocol in [Protocol::Msi, Protocol::Mesi] {
        let mut cfg = MemoryConfig::small(1, 2);
        cfg.protocol = protocol;
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let mut t = 0;
        let a = 0x90_0000;
        let bus = |m: &Memory| m.bus_stats()[0].0;
        assert_eq!(load(&mut mem, 0, a, &mut t).served, Served::Dram);
        let before = bus(&mem);
        let st = store(&mut mem, 0, a, &mut t);
        let what = format!("{protocol:?}: {st:?}");
        if protocol == Protocol::Mesi {
            assert_eq!((st.served, st.missed), (Served::L1, [false; 3]), "{what}");
            assert_eq!(st.latency, cfg.l1d.data_latency as u64, "{what}");
            assert_eq!(bus(&mem), before, "{what}: no bus transaction");
        } else {
            assert!(st.missed[0], "{what}: an upgrade");
            assert_eq!(bus(&mem), before + 1, "{what}: one bus transaction");
        }
        // The dirty line is supplied to core 1 by core 0's L1 under both.
        assert_eq!(
            load(&mut mem, 1, a, &mut t).served,
            Served::L1Neighbor,
            "{protocol:?}"
        );
        // Both share it now: core 0's next store is an upgrade under both.
        assert!(store(&mut mem, 0, a, &mut t).missed[0], "{protocol:?}");

        // A clean line core 0 loaded first: under MESI core 0 holds it exclusive but clean,
        // and core 1's load is served by the L3 (the copy is downgraded); under MSI it is
        // shared from the start, an L3 hit as well.
        let b = a + 64 * 1024;
        load(&mut mem, 0, b, &mut t);
        assert_eq!(
            load(&mut mem, 1, b, &mut t).served,
            Served::L3,
            "{protocol:?}"
        );
        assert!(
            store(&mut mem, 0, b, &mut t).missed[0],
            "{protocol:?}: shared now"
        );
        assert_eq!(mem.check_all(), Ok(()));
    }
}

/// A line that left the core's L1 and L2 but stayed in the L3 with no other core holding it
/// comes back exclusive under MESI: the L3's directory knows no other private cache has it,
/// so the core's next store needs no bus transaction (an upgrade under MSI). With another
/// core holding a copy, the reload is shared and the store an upgrade under both.
#[test]
fn a_line_reloaded_from_the_l3_with_no_other_copy_comes_back_exclusive_under_mesi() {
    for protocol in [Protocol::Msi, Protocol::Mesi] {
        let mut cfg = MemoryConfig::small(1, 2);
        cfg.protocol = protocol;
        let mut mem = Memory::new(cfg.clone()).unwrap();
        let mut t = 0;
        let bus = |m: &Memory| m.bus_stats()[0].0;
        // Eight more lines of the same L1 set and L2 set (32 KiB apart; the L2 has 512 sets
        // of 8 ways) push `a` out of core 0's L1 and L2; the 4 MiB L3 keeps all nine.
        let evict = |mem: &mut Memory, core: u32, a: u64, t: &mut u64| {
            for k in 1..=8 {
                load(mem, core, a + k * (32 << 10), t);
            }
        };
        let a = 0x100_0000;
        load(&mut mem, 0, a, &mut t);
        evict(&mut mem, 0, a, &mut t);
        assert_eq!(
            load(&mut mem, 0, a, &mut t).served,
            Served::L3,
            "{protocol:?}: reloaded from the L3"
        );
        let before = bus(&mem);
        let st = store(&mut mem, 0, a, &mut t);
        let what = format!("{protocol:?}: {st:?}");
        if protocol == Protocol::Mesi {
            assert_eq!((st.served, st.missed), (Served::L1, [false; 3]), "{what}");
            assert_eq!(bus(&mem), before, "{what}: no bus transaction");
        } else {
            assert!(st.missed[0], "{what}: an upgrade");
            assert_eq!(bus(&mem), before + 1, "{what}: one bus transaction");
        }
        // Core 1 holds `b` when core 0 reloads it: shared, so core 0's store is an upgrade.
        let b = a + 0x40;
        load(&mut mem, 0, b, &mut t);
        evict(&mut mem, 0, b, &mut t);
        load(&mut mem, 1, b, &mut t);
        assert_eq!(
            load(&mut mem, 0, b, &mut t).served,
            Served::L3,
            "{protocol:?}"
        );
        let before = bus(&mem);
        let st = store(&mut mem, 0, b, &mut t);
        assert!(st.missed[0], "{protocol:?}: {st:?}: an upgrade");
        assert_eq!(bus(&mem), before + 1, "{protocol:?}: one bus transaction");
        assert_eq!(mem.check_all(), Ok(()));
    }
}

// ---------------------------------------------------------------------------------------------
// Prefetchers
// ---------------------------------------------------------------------------------------------

fn prefetching(l1d: PrefetchParams, l2: PrefetchParams) -> MemoryConfig {
    let mut cfg = MemoryConfig::small(1, 1);
    cfg.l1d_prefetch = l1d;
    cfg.l2_prefetch = l2;
    cfg
}

fn pf(kind: PrefetchKind, degree: u32) -> PrefetchParams {
    PrefetchParams { kind, degree }
}

fn transfers(mem: &Memory) -> (u64, u64) {
    (
        mem.bus_stats().iter().map(|b| b.0).sum(),
        mem.dram_stats().iter().map(|d| d.0).sum(),
    )
}

/// A next-line prefetch is a load: it takes a bus and a DRAM transfer like the miss that
/// triggered it; a demand access that reaches the line while it is still arriving waits for
/// the rest of its latency (a late prefetch, still useful) and, as its first use, triggers the
/// next prefetch; one that comes after the arrival is an L1 hit.
#[test]
fn a_next_line_prefetch_moves_a_line_like_a_miss_and_counts_its_use() {
    let cfg = prefetching(pf(PrefetchKind::NextLine, 1), PrefetchParams::default());
    let d = dram_latency(&cfg);
    let mut mem = Memory::new(cfg.clone()).unwrap();
    let a = 0xa0_0000;
    let t0 = GAP;
    let before = transfers(&mem);
    assert_eq!(mem.access(0, 0, a, 8, Kind::Load, t0).served, Served::Dram);
    assert_eq!(
        transfers(&mem),
        (before.0 + 2, before.1 + 2),
        "demand + prefetch"
    );
    assert_eq!(l1d(&mem, 0).prefetches, 1);
    // The prefetch of a+64 was issued with the demand; 10 cycles later it is still arriving.
    let o = mem.access(0, 0, a + 64, 8, Kind::Load, t0 + 10);
    assert!(o.merged && o.served == Served::Dram, "{o:?}");
    assert!(
        o.latency > d - 10 - 1 && o.latency < d + 10,
        "{o:?}, DRAM {d}"
    );
    let s = l1d(&mem, 0);
    assert_eq!(
        (s.prefetches, s.prefetch_useful, s.prefetch_late, s.misses()),
        (2, 1, 1, 1),
        "{s:?}"
    );
    // a+128, prefetched at the first use of a+64, has arrived long before this access.
    let o = mem.access(0, 0, a + 128, 8, Kind::Load, t0 + 10 * d);
    assert_eq!(
        (o.served, o.latency),
        (Served::L1, cfg.l1d.data_latency as u64)
    );
    let s = l1d(&mem, 0);
    assert_eq!(
        (s.prefetch_useful, s.prefetch_late, s.misses()),
        (2, 1, 1),
        "{s:?}"
    );
    assert_eq!(mem.check_all(), Ok(()));
}

/// A stride prefetcher at the L2 covers a 256-byte-stride stream after a short training:
/// every L2 miss but the first of each page disappears, each line still crosses the bus and DRAM once, and the L1
/// (which it does not fill) misses as before. On random accesses it issues nothing.
#[test]
fn a_stride_prefetcher_covers_a_strided_stream_and_stays_quiet_on_random_accesses() {
    let n = 400u64;
    let degree = 4;
    let run = |l2: PrefetchParams, random: bool| {
        let cfg = prefetching(PrefetchParams::default(), l2);
        let mut mem = Memory::new(cfg).unwrap();
        let mut t = 0;
        let mut x = 7u64;
        for i in 0..n {
            let addr = if random {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                0x1000_0000 + ((x >> 24) % (1 << 20)) * 64
            } else {
                0x1000_0000 + 256 * i
            };
            t += GAP;
            mem.access(0, 0x400, addr, 8, Kind::Load, t);
        }
        (mem.path_stats(0), transfers(&mem))
    };
    let (plain, plain_moves) = run(PrefetchParams::default(), false);
    let (s, moves) = run(pf(PrefetchKind::Stride, degree), false);
    assert_eq!(plain[1].misses(), n);
    // Prefetches stay in the demand's 4 KiB page: the first access of each page misses (16
    // strides of 256 B per page), and the first three train the prefetcher.
    let pages = n * 256 / 4096;
    assert!(
        s[1].misses() <= pages + 3,
        "L2 misses with the prefetcher: {:?}, {pages} pages",
        s[1]
    );
    assert!(s[1].prefetch_useful >= n - pages - 3, "{:?}", s[1]);
    assert_eq!(s[0].misses(), n, "the L2 prefetcher does not fill the L1");
    assert_eq!(plain_moves, (n, n));
    assert!(
        moves.1 >= n && moves.1 <= n + degree as u64,
        "each line once from DRAM (plus the last prefetches): {moves:?}"
    );
    let (r, _) = run(pf(PrefetchKind::Stride, degree), true);
    assert_eq!(r[1].prefetches, 0, "{:?}", r[1]);
}

/// Prefetches that are never used still cost: a stream touching every other line with a
/// next-line prefetcher moves twice the lines over DRAM and counts the unused ones as they are
/// evicted.
#[test]
fn useless_prefetches_cost_bandwidth_and_are_counted_unused() {
    let cfg = prefetching(pf(PrefetchKind::NextLine, 1), PrefetchParams::default());
    let l1_lines = cfg.l1d.size / 64;
    let mut mem = Memory::new(cfg).unwrap();
    let n = 4 * l1_lines;
    let mut t = 0;
    for i in 0..n {
        t += GAP;
        mem.access(0, 0x400, 0x2000_0000 + 128 * i, 8, Kind::Load, t);
    }
    let s = l1d(&mem, 0);
    assert_eq!(
        (s.misses(), s.prefetches, s.prefetch_useful),
        (n, n, 0),
        "{s:?}"
    );
    assert!(s.prefetch_unused >= n - l1_lines, "{s:?}");
    assert_eq!(transfers(&mem).1, 2 * n);
}

/// Every shape the model cannot build is refused with an error that says which rule, never
/// a panic or a machine built wrong.
#[test]
fn unbuildable_machines_are_typed_errors() {
    use sim_memory::{MachineError, Memory, MemoryConfig, PrefetchKind};
    let err = |f: &dyn Fn(&mut MemoryConfig)| {
        let mut c = MemoryConfig::small(1, 4);
        f(&mut c);
        Memory::new(c).err()
    };
    assert_eq!(
        err(&|c| c.l2.line_size = 128),
        Some(MachineError::LineSizes { got: 128, l1d: 64 })
    );
    assert_eq!(
        err(&|c| c.l1d.size = 48 << 10),
        Some(MachineError::Sets {
            size: 48 << 10,
            ways: 8,
            line: 64
        })
    );
    assert_eq!(
        err(&|c| c.l2_shared_by = 3),
        Some(MachineError::L2Groups {
            sockets: 1,
            cores_per_socket: 4,
            l2_shared_by: 3
        })
    );
    assert_eq!(
        err(&|c| c.dram_controllers = 0),
        Some(MachineError::Bandwidth)
    );
    let e = err(&|c| {
        c.l1d_prefetch.kind = PrefetchKind::NextLine;
        c.l1d_prefetch.degree = 33;
    })
    .unwrap();
    assert_eq!(
        e,
        MachineError::PrefetchDegree {
            level: "L1D",
            degree: 33
        }
    );
    assert_eq!(
        e.to_string(),
        "the L1D prefetcher's degree must be 1 to 32 (got 33)"
    );
    assert!(err(&|_| {}).is_none(), "the unchanged machine builds");
    // An L2 shared by 128 cores would have 256 private caches below it: more than its
    // 128-bit sharer masks hold (64 cores is the most).
    let wide = |cores: u32| {
        let mut c = MemoryConfig::small(1, cores);
        c.l2_shared_by = cores;
        c
    };
    assert_eq!(Memory::new(wide(128)).err(), Some(MachineError::TooWide));
    assert!(Memory::new(wide(64)).is_ok());
}

/// The LIME paper's 64-core chip: one L2 shared by all 64 cores (128 private caches below
/// it). Coherence reaches the highest sharer bits: a line loaded by every core is then stored
/// by core 63, which invalidates the 63 other copies, and core 0's next load finds it in
/// core 63's L1.
#[test]
fn an_l2_shared_by_64_cores_keeps_every_core_coherent() {
    let mut c = MemoryConfig::small(1, 64);
    c.l2_shared_by = 64;
    let mut mem = Memory::new(c).unwrap();
    let (a, mut t) = (0x40_0000, 0);
    for core in 0..64 {
        load(&mut mem, core, a, &mut t);
    }
    let o = store(&mut mem, 63, a, &mut t);
    assert!(o.missed[0] || o.served == Served::L1, "{o:?}");
    for core in 0..63 {
        assert_eq!(l1d(&mem, core).invalidations, 1, "core {core}");
    }
    let o = load(&mut mem, 0, a, &mut t);
    assert_eq!(o.served, Served::L1Neighbor, "{o:?}");
    assert!(o.coherence, "{o:?}");
}

/// Miss erasure, both semantics, on an idle machine. An erased PC's miss costs the L1's
/// latency in both and reports where it would have been served (memory). isim's `fill`
/// still brings the line in (with no bus or DRAM traffic), so another instruction's load of
/// the line then hits; the paper's `no-fill` leaves every cache as it was, so that load
/// misses to memory, and it alone uses the bus.
#[test]
fn erasure_fills_or_leaves_the_caches_untouched() {
    use sim_memory::{Erasure, Served};
    const ERASED_PC: u64 = 0x40;
    let cfg = MemoryConfig::small(1, 2);
    for mode in Erasure::ALL {
        let mut mem = Memory::new(cfg.clone()).unwrap();
        mem.set_erasure([ERASED_PC]);
        mem.set_erasure_mode(mode);
        let addr = 0x10_0000;
        let o = mem.access(0, ERASED_PC, addr, 8, Kind::Load, 10);
        assert_eq!(o.latency, cfg.l1d.data_latency as u64, "{mode:?}");
        assert!(o.erased, "{mode:?}");
        assert_eq!(o.would_serve, Served::Dram, "{mode:?}");
        assert_eq!(
            mem.bus_stats()[0].0,
            0,
            "{mode:?}: no transfer for the erased miss"
        );
        let later = mem.access(0, 0x80, addr, 8, Kind::Load, 10_000);
        match mode {
            Erasure::Fill => {
                assert_eq!(later.served, Served::L1, "the line was filled");
                assert_eq!(mem.bus_stats()[0].0, 0);
            }
            Erasure::NoFill => {
                assert_eq!(later.served, Served::Dram, "nothing was filled");
                assert_eq!(mem.bus_stats()[0].0, 1, "one transfer: the later load's");
            }
        }
        assert_eq!(mem.check_all(), Ok(()), "{mode:?}");
    }
}
