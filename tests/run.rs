//! Whole-system oracles for the core model and the engine, each an analytic expectation that
//! could fail (the formula is stated in every test), plus the cycle-stack sum invariant on
//! every golden run, determinism, and the watchdog.

mod common;

use std::path::{Path, PathBuf};

use isim::run::{RunOutcome, RunRequest, run};
use sim_core::{Component, Engine, EngineConfig, Model};
use sim_frontend::model::{BranchKind, Marker, OpClass, Order, Spin, StaticInst, TraceMeta};
use sim_frontend::{Trace, TraceWriter};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn simulate(dir: &Path, workload: &str, threads: u32, size: u64, sets: &[&str]) -> RunOutcome {
    let req = RunRequest {
        workload: Some(workload.into()),
        threads: Some(threads),
        size: Some(size),
        seed: 1,
        sets: sets.iter().map(|s| s.to_string()).collect(),
        out: dir.join(format!(
            "{workload}-{threads}-{size}-{}",
            sets.join(",").replace(['=', '/', '.'], "_")
        )),
        ..RunRequest::default()
    };
    run(&req, |_| {}).unwrap_or_else(|e| panic!("{workload}: {e:#}"))
}

/// A writer of a hand-made trace of workload `name` at `path`.
fn test_writer(path: &Path, name: &str) -> TraceWriter {
    TraceWriter::create(
        path,
        TraceMeta {
            isa: "test".into(),
            workload: name.into(),
            params: vec![],
            producer: "test".into(),
        },
    )
    .unwrap()
}

/// Writes thread 0's region of interest, `body`'s instructions, between its start and end
/// markers, and finishes the trace.
fn write_roi(mut w: TraceWriter, body: impl FnOnce(&mut TraceWriter)) {
    w.marker(0, Marker::ThreadStart).unwrap();
    w.marker(0, Marker::RoiBegin).unwrap();
    body(&mut w);
    w.marker(0, Marker::RoiEnd).unwrap();
    w.marker(0, Marker::ThreadEnd).unwrap();
    w.finish().unwrap();
}

fn comp(o: &RunOutcome, t: usize, c: Component) -> f64 {
    o.result.threads[t].stack.get(c)
}

/// Cycles thread `t` spent before its own end, excluding waiting.
fn busy(o: &RunOutcome, t: usize) -> f64 {
    let s = &o.result.threads[t].stack;
    s.total() - s.sync()
}

#[test]
fn dep_chain_cpi_equals_the_chain_op_latency() {
    // dep-chain: per iteration 8 dependent adds (one chain) + 3 loop ops off the chain.
    // Formula: cycles per iteration = 8 x int_alu latency, for latency 1 and 3.
    let dir = tempfile::tempdir().unwrap();
    for lat in [1u32, 3] {
        let iters = 20_000u64;
        let o = simulate(
            dir.path(),
            "dep-chain",
            1,
            iters,
            &[&format!("core.latency.int_alu={lat}")],
        );
        let per = busy(&o, 0) / iters as f64;
        let want = 8.0 * lat as f64;
        assert!(
            (per - want).abs() / want < 0.02,
            "latency {lat}: {per:.3} cycles/iteration, expected {want}"
        );
        assert!(
            comp(&o, 0, Component::DependInt) / busy(&o, 0) > 0.95,
            "{:?}",
            o.result.threads[0].stack
        );
    }
}

#[test]
fn independent_alu_ops_run_at_the_dispatch_width() {
    // indep-alu: 8 independent adds + 3 loop ops per iteration, no chain longer than one
    // op per iteration. Formula: IPC = dispatch width (4 and 2), cycles charged to base.
    let dir = tempfile::tempdir().unwrap();
    for width in [4u32, 2] {
        let iters = 20_000u64;
        let o = simulate(
            dir.path(),
            "indep-alu",
            1,
            iters,
            &[&format!("core.dispatch_width={width}")],
        );
        let t = &o.result.threads[0];
        let ipc = t.instructions as f64 / busy(&o, 0);
        assert!(
            (ipc - width as f64).abs() / (width as f64) < 0.02,
            "width {width}: IPC {ipc:.3}"
        );
        assert!(
            comp(&o, 0, Component::Base) / busy(&o, 0) > 0.95,
            "{:?}",
            t.stack
        );
    }
}

#[test]
fn pointer_chase_to_dram_costs_the_dram_latency_per_load() {
    // pointer-chase over 64 MiB of 64-byte nodes, each visited once: every load misses to
    // DRAM and depends on the previous one. Formula: cycles per load = latency of one idle
    // DRAM access (L1 tag + L2 tag + bus slot + L3 tag + DRAM slot + DRAM latency), charged
    // to mem-dram.
    let dir = tempfile::tempdir().unwrap();
    let nodes = 20_000u64;
    let o = simulate(dir.path(), "pointer-chase", 1, nodes, &[]);
    let mut mem = sim_memory::Memory::new(o.machine.memory().unwrap()).unwrap();
    let idle = mem
        .access(0, 0, 0x5000_0000, 8, sim_memory::Kind::Load, 0)
        .latency as f64;
    let per = busy(&o, 0) / nodes as f64;
    assert!(
        (per - idle).abs() / idle < 0.05,
        "{per:.1} cycles per load, idle DRAM latency {idle}"
    );
    assert!(
        comp(&o, 0, Component::MemDram) / busy(&o, 0) > 0.9,
        "{:?}",
        o.result.threads[0].stack
    );
}

#[test]
fn a_pointer_chase_pays_its_page_walks_and_charges_them_to_mem_tlb() {
    // pointer-chase over 20,000 nodes 64 bytes apart (1.28 MB: 313 pages of 4 KiB), each
    // visited once, with a TLB of 64 first-level entries, 1536 second-level entries, a
    // 7-cycle second level and 200-cycle walks. Formulas: every page is walked exactly once
    // (the second level holds all 313), so walks = 313; a random cycle over 313 pages finds
    // its page in the 64-entry first level about 64/313 of the time, so first-level misses
    // ≈ 80 % of the loads; cycles = loads × idle DRAM latency + walks × 200 + (misses −
    // walks) × 7 (± 5 %), and mem-tlb is that translation time's share (± 5 %).
    let dir = tempfile::tempdir().unwrap();
    let nodes = 20_000u64;
    let o = simulate(
        dir.path(),
        "pointer-chase",
        1,
        nodes,
        &["tlb.walk_latency=200", "tlb.l2_latency=7"],
    );
    let t = &o.result.threads[0];
    assert_eq!(t.page_walks, 313, "{t:?}");
    let miss_rate = t.tlb_misses as f64 / nodes as f64;
    assert!((0.7..0.9).contains(&miss_rate), "{t:?}");
    let mut mem = sim_memory::Memory::new(o.machine.memory().unwrap()).unwrap();
    let idle = mem
        .access(0, 0, 0x5000_0000, 8, sim_memory::Kind::Load, 0)
        .latency as f64;
    let translation = t.page_walks as f64 * 200.0 + (t.tlb_misses - t.page_walks) as f64 * 7.0;
    let want = nodes as f64 * idle + translation;
    let got = busy(&o, 0);
    assert!(
        (got - want).abs() / want < 0.05,
        "{got:.0} cycles, want {want:.0}"
    );
    let tlb = comp(&o, 0, Component::MemTlb);
    assert!(
        (tlb - translation).abs() / translation < 0.05,
        "mem-tlb {tlb:.0}, translation {translation:.0}"
    );
    assert!((t.stack.total() - t.cycles).abs() < 1e-6 * t.cycles);
    // Without a [tlb], nothing is translated and nothing charged to mem-tlb.
    let o = simulate(dir.path(), "pointer-chase", 1, nodes, &[]);
    let t = &o.result.threads[0];
    assert_eq!((t.tlb_misses, t.page_walks), (0, 0));
    assert_eq!(comp(&o, 0, Component::MemTlb), 0.0);
}

/// A one-thread trace of a chase through `nodes` 64-byte nodes in one random cycle, loading
/// each node's value (offset 8) and then its `next` pointer (offset 0) from the same line: the
/// value load misses and the `next` load, issued right after it, finds the line in flight.
fn two_load_chase_trace(path: &Path, nodes: u64) {
    let mut w = test_writer(path, "chase2");
    let (rax, rbx, flags) = (0u8, 3u8, 40u8);
    let load = |pc: u64, dst: u8| {
        let mut s = StaticInst::new(pc, 4, OpClass::Load);
        s.srcs = vec![rax];
        s.dsts = vec![dst];
        s.mem = vec![sim_frontend::model::MemSpec {
            size: 8,
            write: false,
        }];
        s
    };
    let val = w.add_static(load(0x1000, rbx)).unwrap();
    let next = w.add_static(load(0x1004, rax)).unwrap();
    let mut cmp = StaticInst::new(0x1008, 4, OpClass::IntAlu);
    cmp.srcs = vec![rax];
    cmp.dsts = vec![flags];
    let cmp = w.add_static(cmp).unwrap();
    let mut br = StaticInst::new(0x100c, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    br.srcs = vec![flags];
    let br = w.add_static(br).unwrap();
    let order = sim_frontend::workloads::micro::chase_cycle(nodes, 1, 0);
    let base = 0x4000_0000u64;
    let acc = |addr| sim_frontend::model::MemAccess {
        addr,
        size: 8,
        write: false,
    };
    write_roi(w, |w| {
        let mut node = 0u64;
        for i in 0..nodes {
            w.inst(0, val, false, &[acc(base + node * 64 + 8)]).unwrap();
            w.inst(0, next, false, &[acc(base + node * 64)]).unwrap();
            node = order[node as usize];
            w.inst(0, cmp, false, &[]).unwrap();
            w.inst(0, br, i + 1 < nodes, &[]).unwrap();
        }
    });
}

#[test]
fn a_second_load_of_a_line_in_flight_waits_for_it() {
    // Two loads per node of a pointer chase over 64 MiB: the `next` load follows the value
    // load of the same line, whose miss is still in flight, so it completes when the line
    // arrives. Formula: cycles per node = latency of one idle DRAM access (as for one load
    // per node), charged to mem-dram — not the L1 hit latency, which would run the chain
    // ~40x too fast.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("chase2.itrace");
    let nodes = 20_000u64;
    two_load_chase_trace(&p, nodes);
    let trace = Trace::open(&p).unwrap();
    let cfg = engine_config();
    let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
    let mut mem = sim_memory::Memory::new(cfg.memory.clone()).unwrap();
    let idle = mem
        .access(0, 0, 0x5000_0000, 8, sim_memory::Kind::Load, 0)
        .latency as f64;
    let s = &r.threads[0].stack;
    let per = s.total() / nodes as f64;
    assert!(
        (per - idle).abs() / idle < 0.05,
        "{per:.1} cycles per node, idle DRAM latency {idle}"
    );
    assert!(s.get(Component::MemDram) / s.total() > 0.9, "{s:?}");
}

/// A one-thread trace of `n` load-op instructions `add rax, [rbx + random line of 64 MiB]`
/// (each followed by a loop branch): the addresses depend on rbx, which nothing writes; the
/// data on rax, the accumulator. `addr_srcs` says whether the trace tells the two apart.
fn load_op_trace(path: &Path, n: u64, addr_srcs: Option<u8>) {
    let mut w = test_writer(path, "load-op");
    let (rax, rbx) = (0u8, 3u8);
    let mut add = StaticInst::new(0x1000, 4, OpClass::IntAlu);
    add.srcs = vec![rbx, rax];
    add.addr_srcs = addr_srcs;
    add.dsts = vec![rax];
    add.mem = vec![sim_frontend::model::MemSpec {
        size: 8,
        write: false,
    }];
    let add = w.add_static(add).unwrap();
    let mut br = StaticInst::new(0x1004, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let br = w.add_static(br).unwrap();
    let lines = 1u64 << 20;
    let order = sim_frontend::workloads::micro::chase_cycle(lines, 1, 0);
    write_roi(w, |w| {
        let mut line = 0u64;
        for i in 0..n {
            let a = sim_frontend::model::MemAccess {
                addr: 0x4000_0000 + line * 64,
                size: 8,
                write: false,
            };
            w.inst(0, add, false, &[a]).unwrap();
            w.inst(0, br, i + 1 < n, &[]).unwrap();
            line = order[line as usize];
        }
    });
}

#[test]
fn a_load_op_instruction_loads_before_its_other_operand_is_ready() {
    // `add rax, [rbx + x]` over random lines: the loads depend on rbx only, so an x86 core
    // issues them all and only the adds chain through rax. Formula: with the address
    // registers known, the misses overlap up to the miss slots (the window holds 112 of
    // them): cycles per load ≈ idle DRAM latency / outstanding_loads (12), and within 2x of
    // it (bandwidth and arrival skew); without (a trace that does not say), each load waits
    // for the previous add: cycles per load = the idle latency (± 5 %).
    let dir = tempfile::tempdir().unwrap();
    let cfg = engine_config_with(&["cache.l1d.prefetcher=none", "cache.l2.prefetcher=none"]);
    let mut mem = sim_memory::Memory::new(cfg.memory.clone()).unwrap();
    let idle = mem
        .access(0, 0, 0x7000_0000, 8, sim_memory::Kind::Load, 0)
        .latency as f64;
    let n = 20_000u64;
    let mut per = Vec::new();
    for addr_srcs in [Some(1u8), None] {
        let p = dir.path().join(format!("load-op-{addr_srcs:?}.itrace"));
        load_op_trace(&p, n, addr_srcs);
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        per.push(r.threads[0].stack.total() / n as f64);
    }
    let slots = cfg.core.settings.outstanding_loads as f64;
    assert!(
        per[0] < 2.0 * idle / slots && per[0] > 0.9 * idle / slots,
        "split: {:.1} cycles per load, idle latency {idle}, {slots} slots",
        per[0]
    );
    assert!(
        (per[1] - idle).abs() / idle < 0.05,
        "unsplit: {:.1} cycles per load, idle latency {idle}",
        per[1]
    );
}

/// Miss slots (the L1D's MSHRs) are a pool: a miss takes any free one. Loads with their
/// addresses always ready, in groups of four: one from DRAM (a new line) and three hitting the
/// L3 (lines 64 KiB apart, more than an L1 or L2 set holds). Formula: each group holds slots
/// for D + 3·S cycles (D the idle DRAM latency, S the L3 hit's), so with N slots a group
/// takes (D + 3·S) / N cycles (within -20 %/+30 %: arrival skew, the first pass's cold
/// misses). Slots taken in order, as a ring, would put every DRAM miss in the same few slots
/// and make them wait for each other: 4·D / N a group; the run must be well below that.
#[test]
fn a_miss_slot_freed_early_serves_the_next_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = engine_config_with(&["cache.l1d.prefetcher=none", "cache.l2.prefetcher=none"]);
    let far = |k: u64| 0x1000_0000 + k * (64 << 10);
    let mut mem = sim_memory::Memory::new(cfg.memory.clone()).unwrap();
    let load = |mem: &mut sim_memory::Memory, a: u64, t: u64| {
        mem.access(0, 0, a, 8, sim_memory::Kind::Load, t).latency as f64
    };
    let d = load(&mut mem, 0x7000_0000, 0);
    let mut t = 10_000;
    for k in 0..=48 {
        load(&mut mem, far(k % 48), t);
        t += 1_000;
    }
    let s = load(&mut mem, far(1), t);
    assert!(
        s > cfg.core.settings.long_latency_cutoff as f64 && s < d / 2.0,
        "L3 hit {s}, DRAM {d}"
    );

    let p = dir.path().join("mshr.itrace");
    let groups = 4_000u64;
    let mut w = test_writer(&p, "mshr-pool");
    let mut ld = StaticInst::new(0x1000, 4, OpClass::Load);
    ld.dsts = vec![0];
    ld.addr_srcs = Some(0);
    ld.mem = vec![sim_frontend::model::MemSpec {
        size: 8,
        write: false,
    }];
    let lds: Vec<_> = (0..4)
        .map(|i| {
            let mut l = ld.clone();
            l.pc = 0x1000 + 4 * i;
            w.add_static(l).unwrap()
        })
        .collect();
    let mut br = StaticInst::new(0x1010, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let br = w.add_static(br).unwrap();
    write_roi(w, |w| {
        let mut k = 0u64;
        for g in 0..groups {
            let at = |addr| sim_frontend::model::MemAccess {
                addr,
                size: 8,
                write: false,
            };
            w.inst(0, lds[0], false, &[at(0x4000_0000 + g * 64)])
                .unwrap();
            for l in &lds[1..] {
                w.inst(0, *l, false, &[at(far(k % 48))]).unwrap();
                k += 1;
            }
            w.inst(0, br, g + 1 < groups, &[]).unwrap();
        }
    });
    let trace = Trace::open(&p).unwrap();
    let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
    let per = r.threads[0].stack.total() / groups as f64;
    let n = cfg.core.settings.outstanding_loads as f64;
    let pool = (d + 3.0 * s) / n;
    let ring = 4.0 * d / n;
    assert!(
        per > 0.8 * pool && per < 1.3 * pool && per < 0.6 * ring,
        "{per:.1} cycles a group; pool formula {pool:.1}, ring {ring:.1} (D {d}, S {s}, {n} slots)"
    );
}

/// A one-thread trace of `n` iterations of a dependence chain through two instructions:
/// `mul r9 <- r23`, then an add that reads `srcs` (address sources first, `addr` of them)
/// and writes `dsts`, r9 among the sources and r23 among the destinations; then a loop
/// branch.
fn chain_trace(path: &Path, n: u64, srcs: &[u8], addr: u8, dsts: &[u8]) {
    let mut w = test_writer(path, "chain");
    let mut mul = StaticInst::new(0x1000, 4, OpClass::IntMul);
    mul.srcs = vec![23];
    mul.dsts = vec![9];
    let mul = w.add_static(mul).unwrap();
    let mut add = StaticInst::new(0x1004, 4, OpClass::IntAlu);
    add.srcs = srcs.to_vec();
    add.addr_srcs = Some(addr);
    add.dsts = dsts.to_vec();
    let add = w.add_static(add).unwrap();
    let mut br = StaticInst::new(0x1008, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let br = w.add_static(br).unwrap();
    write_roi(w, |w| {
        for i in 0..n {
            w.inst(0, mul, false, &[]).unwrap();
            w.inst(0, add, false, &[]).unwrap();
            w.inst(0, br, i + 1 < n, &[]).unwrap();
        }
    });
}

/// A one-thread trace of `n` steps of `x = op(x)` with `x` in memory, as `-O0` code keeps a
/// variable: `load r <- [slot]` (address from rsp), `op r <- r` (`class`), `store [slot'] <- r`
/// of `store_size` bytes at `slot + store_offset`, and a loop branch. `r` is xmm0 (register
/// 32) for floating-point classes, rax otherwise.
fn slot_trace(path: &Path, n: u64, class: OpClass, store_offset: u64, store_size: u8) {
    use sim_frontend::model::{MemAccess, MemSpec};
    let mut w = test_writer(path, "slot");
    let (rsp, r) = (4u8, if class == OpClass::FpMul { 32u8 } else { 0u8 });
    let mut load = StaticInst::new(0x1000, 4, OpClass::Load);
    load.srcs = vec![rsp];
    load.addr_srcs = Some(1);
    load.dsts = vec![r];
    load.mem = vec![MemSpec {
        size: 8,
        write: false,
    }];
    let load = w.add_static(load).unwrap();
    let mut op = StaticInst::new(0x1004, 4, class);
    op.srcs = vec![r];
    op.dsts = vec![r];
    let op = w.add_static(op).unwrap();
    let mut store = StaticInst::new(0x1008, 4, OpClass::Store);
    store.srcs = vec![rsp, r];
    store.addr_srcs = Some(1);
    store.mem = vec![MemSpec {
        size: store_size,
        write: true,
    }];
    let store = w.add_static(store).unwrap();
    let mut br = StaticInst::new(0x100c, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let br = w.add_static(br).unwrap();
    let slot = 0x7fff_0000u64;
    write_roi(w, |w| {
        for i in 0..n {
            let ld = MemAccess {
                addr: slot,
                size: 8,
                write: false,
            };
            let st = MemAccess {
                addr: slot + store_offset,
                size: store_size,
                write: true,
            };
            w.inst(0, load, false, &[ld]).unwrap();
            w.inst(0, op, false, &[]).unwrap();
            w.inst(0, store, false, &[st]).unwrap();
            w.inst(0, br, i + 1 < n, &[]).unwrap();
        }
    });
}

#[test]
fn a_value_kept_in_memory_waits_for_the_store_that_wrote_it() {
    // x = op(x) through a stack slot. Formula: each step's load takes its value from the
    // previous step's store, `[core.store_forward]` cycles after the store's data (the op's
    // result), so a step takes the op's latency plus that forwarding: `fp` for a load into a
    // vector register, `int` into an integer one (0: memory renamed), `partial` when the
    // 8-byte load reads a 4-byte store; within 1 %. The critical path runs through the
    // store's completion (its `store` latency after its data) to the load's value: depend-mem
    // is n times the forwarding beyond the store's latency, within 1 %. Control: a store to another word breaks the chain,
    // and a step costs no more than the op and the load's L1 latency.
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000u64;
    let cases: [(&str, OpClass, &[&str], u64, u8); 5] = [
        ("fp", OpClass::FpMul, &[], 0, 8),
        ("int", OpClass::IntMul, &[], 0, 8),
        (
            "int renamed",
            OpClass::IntMul,
            &["core.store_forward.int=0"],
            0,
            8,
        ),
        (
            "partial",
            OpClass::IntMul,
            &["core.store_forward.partial=20"],
            0,
            4,
        ),
        ("other word", OpClass::IntMul, &[], 8, 8),
    ];
    for (what, class, sets, offset, size) in cases {
        let cfg = engine_config_with(sets);
        let s = &cfg.core.settings;
        let (op, fwd) = match (class, what) {
            (OpClass::FpMul, _) => (s.latency.fp_mul, s.store_forward.fp),
            (_, "partial") => (s.latency.int_mul, s.store_forward.partial),
            _ => (s.latency.int_mul, s.store_forward.int),
        };
        let p = dir
            .path()
            .join(format!("slot-{}.itrace", what.replace(' ', "-")));
        slot_trace(&p, n, class, offset, size);
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        let stack = &r.threads[0].stack;
        let per = stack.total() / n as f64;
        let mem = stack.get(Component::DependMem) / n as f64;
        if what == "other word" {
            let l1 = cfg.memory.l1d.data_latency as f64;
            assert!(per <= op as f64 + l1, "{what}: {per:.3} cycles per step");
            assert!(mem == 0.0, "{what}: {mem:.3} depend-mem cycles per step");
            continue;
        }
        let want = (op + fwd) as f64;
        assert!(
            (per - want).abs() / want < 0.01,
            "{what}: {per:.3} cycles per step, want {op} + {fwd}"
        );
        let beyond = fwd.saturating_sub(s.latency.store) as f64;
        assert!(
            (mem - beyond).abs() <= 0.01 * want,
            "{what}: {mem:.3} depend-mem cycles per step, want {beyond}"
        );
    }
}

/// A one-thread trace of `n` steps of `r = op(r, [array + 8 * (i % 512)])`, a load-op
/// instruction of class `class` whose load reads a 4 KiB array (L1-resident after its first
/// lap) and whose operation also reads `r`, and a loop branch: a reduction `t += a[i]` as
/// `-O2` code compiles it (`addsd xmm0, [rax]`). `r` is xmm0 for floating-point classes.
fn reduction_trace(path: &Path, n: u64, class: OpClass) {
    use sim_frontend::model::{MemAccess, MemSpec};
    let mut w = test_writer(path, "reduction");
    let fp = matches!(class, OpClass::FpAdd | OpClass::FpMul | OpClass::Load);
    let (base, r) = (6u8, if fp { 32u8 } else { 0u8 });
    let mut op = StaticInst::new(0x1000, 4, class);
    op.srcs = vec![base, r];
    op.addr_srcs = Some(1);
    op.dsts = vec![r];
    op.mem = vec![MemSpec {
        size: 8,
        write: false,
    }];
    let op = w.add_static(op).unwrap();
    let mut br = StaticInst::new(0x1004, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let br = w.add_static(br).unwrap();
    write_roi(w, |w| {
        for i in 0..n {
            let ld = MemAccess {
                addr: 0x10_0000 + 8 * (i % 512),
                size: 8,
                write: false,
            };
            w.inst(0, op, false, &[ld]).unwrap();
            w.inst(0, br, i + 1 < n, &[]).unwrap();
        }
    });
}

#[test]
fn an_operation_on_a_loaded_value_takes_its_own_latency() {
    // r = op(r, [a + 8i]) n times, the array in the L1. Formula: the loads do not depend on r
    // and run ahead, so each step waits for the step before's operation: the op class's
    // latency per step (fp_add for `addsd xmm0, [rax]`, int_mul for `imul rax, [rdi]`),
    // within 1 %, charged to the op's depend component (>= 99 % of the cycles). Control: the
    // same instruction written as a plain load (a trace whose decoder did not keep the
    // operation's class, or a ChampSim import) is timed as before, one cycle after its other
    // operand: half as many cycles as the fp_add chain or fewer.
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000u64;
    let cfg = engine_config_with(&[]);
    let lat = &cfg.core.settings.latency;
    let mut per_step = Vec::new();
    for (class, want, dep) in [
        (OpClass::FpAdd, lat.fp_add, Component::DependFp),
        (OpClass::FpMul, lat.fp_mul, Component::DependFp),
        (OpClass::IntMul, lat.int_mul, Component::DependInt),
        (OpClass::Load, 1, Component::Base),
    ] {
        let p = dir
            .path()
            .join(format!("reduction-{}.itrace", class.name()));
        reduction_trace(&p, n, class);
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        let stack = &r.threads[0].stack;
        let per = stack.total() / n as f64;
        per_step.push(per);
        if class == OpClass::Load {
            assert!(
                per <= 0.5 * per_step[0],
                "as a load: {per:.3} cycles per step, the fp-add chain {:.3}",
                per_step[0]
            );
            continue;
        }
        let want = want as f64;
        assert!(
            (per - want).abs() / want < 0.01,
            "{}: {per:.3} cycles per step, want {want}",
            class.name()
        );
        let share = stack.get(dep) / stack.total();
        assert!(
            share >= 0.99,
            "{}: {dep:?} {share:.3} of the cycles",
            class.name()
        );
    }
}

/// One thread, ITERS times: `work` steps of x = mul(x) through stack slot A, then a lock,
/// `crit` steps through slot B, an unlock. With `fresh`, the work begins by storing a new
/// value into A (a function storing its argument, as a call's `mov %rdi,-8(%rsp)` does), so
/// its loads read only stores made after the unlock; without, its first load reads A as
/// the last iteration left it, before the lock.
fn locked_slots_trace(path: &Path, iters: u64, work: u64, crit: u64, fresh: bool) {
    use sim_frontend::model::{MemAccess, MemSpec};
    let mut w = test_writer(path, "locked-slots");
    let (rsp, seed) = (4u8, 8u8);
    let add = |w: &mut TraceWriter,
               pc: u64,
               class: OpClass,
               srcs: Vec<u8>,
               dsts: Vec<u8>,
               mem: Option<bool>| {
        let mut s = StaticInst::new(pc, 4, class);
        s.srcs = srcs;
        s.dsts = dsts;
        if let Some(write) = mem {
            s.addr_srcs = Some(1);
            s.mem = vec![MemSpec { size: 8, write }];
        }
        w.add_static(s).unwrap()
    };
    let new_seed = add(&mut w, 0x1000, OpClass::IntAlu, vec![], vec![seed], None);
    let store_seed = add(
        &mut w,
        0x1004,
        OpClass::Store,
        vec![rsp, seed],
        vec![],
        Some(true),
    );
    // (work's registers: rax = 0, crit's: rcx = 1)
    let steps = |w: &mut TraceWriter, base: u64, r: u8| {
        [
            add(w, base, OpClass::Load, vec![rsp], vec![r], Some(false)),
            add(w, base + 4, OpClass::IntMul, vec![r], vec![r], None),
            add(
                w,
                base + 8,
                OpClass::Store,
                vec![rsp, r],
                vec![],
                Some(true),
            ),
        ]
    };
    let a = steps(&mut w, 0x1100, 0);
    let b = steps(&mut w, 0x1200, 1);
    let (slot_a, slot_b, word) = (0x7fff_0000u64, 0x7fff_0040u64, 0x5000u64);
    let acc = |addr, write| MemAccess {
        addr,
        size: 8,
        write,
    };
    write_roi(w, |w| {
        for _ in 0..iters {
            if fresh {
                w.inst(0, new_seed, false, &[]).unwrap();
                w.inst(0, store_seed, false, &[acc(slot_a, true)]).unwrap();
            }
            for (chain, slot, n) in [(&a, slot_a, work), (&b, slot_b, crit)] {
                if std::ptr::eq(chain, &b) {
                    w.marker(
                        0,
                        Marker::MutexLock {
                            addr: word,
                            order: Order::SIM,
                            spin: Spin::NONE,
                            call: false,
                        },
                    )
                    .unwrap();
                }
                for _ in 0..n {
                    w.inst(0, chain[0], false, &[acc(slot, false)]).unwrap();
                    w.inst(0, chain[1], false, &[]).unwrap();
                    w.inst(0, chain[2], false, &[acc(slot, true)]).unwrap();
                }
            }
            w.marker(
                0,
                Marker::MutexUnlock {
                    addr: word,
                    plain: false,
                },
            )
            .unwrap();
        }
    });
}

#[test]
fn work_after_a_release_overlaps_the_critical_section_before_it() {
    // A lock's release (a locked instruction) holds its window entry until it performs, but
    // the loads after it do not wait for it: x86 cores execute them speculatively past a
    // locked instruction (`benches/host/kernels.c` `locked-mlp`: two independent misses a
    // step cost the same with a `lock xadd` between them). On the host (an Intel Xeon guest,
    // 2026-12-06) Rust's `mutex_counter -t 1 -w 40 -c 20`, whose work goes through a stack
    // slot (`black_box`) and begins by storing its argument, runs an iteration in 147 cycles,
    // the two chains' sum being 225 (docs/validation.md). Formula: an iteration takes about
    // the longer chain, `max(work, crit)` steps of int_mul + store_forward.int, not their
    // sum: under 0.75 of the sum, and no less than the longer chain; whether the work's slot
    // is freshly stored after the lock (its load reads the store buffer) or not (its load
    // reads what the slot held before the lock: until 2026-12-06 it waited for the
    // release's atomic, and the chains followed each other, at least the sum).
    let dir = tempfile::tempdir().unwrap();
    let cfg = engine_config_with(&[]);
    let s = &cfg.core.settings;
    let step = (s.latency.int_mul + s.store_forward.int) as f64;
    let (iters, work, crit) = (2_000u64, 40u64, 40u64);
    let per = |fresh: bool| {
        let p = dir.path().join(format!("slots-{fresh}.itrace"));
        locked_slots_trace(&p, iters, work, crit, fresh);
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        r.threads[0].stack.total() / iters as f64
    };
    let (sum, longer) = ((work + crit) as f64 * step, work.max(crit) as f64 * step);
    for fresh in [true, false] {
        let overlapped = per(fresh);
        assert!(
            overlapped >= longer && overlapped < 0.75 * sum,
            "slot fresh {fresh}: {overlapped:.1} cycles per iteration, want from {longer} to \
             under {:.1}",
            0.75 * sum
        );
    }
}

/// A serializing instruction at 0x1000: a locked `xadd` of register 1 into an 8-byte word
/// (a read and a write of it) when `locked`, else a fence with no memory access.
fn serializing_static(locked: bool) -> StaticInst {
    use sim_frontend::model::MemSpec;
    let mut s = StaticInst::new(0x1000, 4, OpClass::Serializing);
    if locked {
        s.srcs = vec![1];
        s.dsts = vec![1];
        s.addr_srcs = Some(0);
        s.mem = [false, true]
            .map(|write| MemSpec { size: 8, write })
            .to_vec();
    }
    s
}

/// One thread, ITERS times: a serializing instruction (a locked `xadd` of the word at 0x5000
/// when `locked`, else a fence with no memory access), then `work` steps of a multiply chain
/// that starts from a fresh value (`load` None) or from a load of `load` (warm in the L1),
/// and depends on nothing the first instruction does.
fn locked_work_trace(path: &Path, iters: u64, work: u64, locked: bool, load: Option<u64>) {
    use sim_frontend::model::{MemAccess, MemSpec};
    let mut w = test_writer(path, "locked-work");
    let x = 0u8;
    let first = w.add_static(serializing_static(locked)).unwrap();
    let mut seed = StaticInst::new(0x1004, 4, OpClass::IntAlu);
    if load.is_some() {
        seed = StaticInst::new(0x1004, 4, OpClass::Load);
        seed.addr_srcs = Some(0);
        seed.mem = vec![MemSpec {
            size: 8,
            write: false,
        }];
    }
    seed.dsts = vec![x];
    let seed = w.add_static(seed).unwrap();
    let mut step = StaticInst::new(0x1008, 4, OpClass::IntMul);
    step.srcs = vec![x];
    step.dsts = vec![x];
    let step = w.add_static(step).unwrap();
    let acc = |addr, write| MemAccess {
        addr,
        size: 8,
        write,
    };
    let rmw = [acc(0x5000, false), acc(0x5000, true)];
    let seed_acc: Vec<MemAccess> = load.map(|a| acc(a, false)).into_iter().collect();
    write_roi(w, |w| {
        for _ in 0..iters {
            let first_acc: &[MemAccess] = if locked { &rmw } else { &[] };
            w.inst(0, first, false, first_acc).unwrap();
            w.inst(0, seed, false, &seed_acc).unwrap();
            for _ in 0..work {
                w.inst(0, step, false, &[]).unwrap();
            }
        }
    });
}

#[test]
fn a_locked_instruction_orders_memory_and_lets_independent_work_run() {
    // x86 performs a locked read-modify-write once the older instructions have completed,
    // taking `[core.latency] locked` beyond its cache access; operations that access no
    // memory go on beside it (and loads of other lines:
    // `loads_run_past_a_locked_instruction_but_not_on_its_line`). On the host (an Intel Xeon
    // guest, 2026-12-06, benches/host/kernels.c): `lock xadd`s back to back 18.5 cycles each;
    // one a step beside 10 steps of a multiply-add chain 25 cycles a step, where the chain
    // alone is 40.
    // Formulas, on configs/default.toml: back to back, each takes its L1 access plus
    // `locked` (data latency + locked, plus at most the tag and a cycle); beside `work`
    // steps of an int_mul chain that starts afresh each step, a step takes what the
    // atomic takes, within 2 cycles (the chains of successive steps overlap each other and
    // the atomics, as the host's 40-step chains of 160 cycles ran at 66 cycles a step), not
    // the sum of atomic and chain. Control: a fence with no memory access drains the
    // window, so each step takes at least the chain.
    let dir = tempfile::tempdir().unwrap();
    let cfg = engine_config_with(&[]);
    let lat = &cfg.core.settings.latency;
    let l1 = &cfg.memory.l1d;
    let op = (l1.data_latency + lat.locked) as f64;
    let per = |work: u64, locked: bool| {
        let p = dir.path().join(format!("lw-{work}-{locked}.itrace"));
        let iters = 4_000u64;
        locked_work_trace(&p, iters, work, locked, None);
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        r.threads[0].stack.total() / iters as f64
    };
    let chained = per(0, true);
    assert!(
        chained >= op && chained <= op + l1.tag_latency as f64 + 1.0,
        "locked instructions back to back: {chained:.2} cycles each, want {op} to {}",
        op + l1.tag_latency as f64 + 1.0
    );
    let work = 10u64;
    let chain = work as f64 * lat.int_mul as f64;
    let beside = per(work, true);
    assert!(
        beside >= chained - 0.5 && beside <= chained + 2.0,
        "beside a {chain}-cycle chain: {beside:.2} cycles a step, want the atomic's {chained:.2}"
    );
    let fenced = per(work, false);
    assert!(
        fenced >= chain,
        "after a fence: {fenced:.2} cycles a step, want at least the chain's {chain}"
    );
}

#[test]
fn loads_run_past_a_locked_instruction_but_not_on_its_line() {
    // x86 executes a load younger than a locked instruction speculatively, before the atomic
    // performs (benches/host/kernels.c on the Intel host, 2026-12-06: `locked-mlp`, two
    // independent misses a step with a `lock xadd` between them, costs what `rand-load`
    // does; `locked-chase` 1.11 times the chase), but a load of the atomic's own line waits
    // for it: one thread passing `std::shared_ptr` copies by value (the count's increment,
    // the load of the object's field beside it, the decrement) takes 51 cycles an iteration
    // natively, 40 in isim, 38 with every load running past. Formulas, on
    // configs/default.toml: each step is an atomic, which waits for the work before it (the
    // previous step's chain), and a load starting a chain of `work` multiplies. A load of the
    // atomic's line starts the chain after the atomic: a step takes at least the atomic (L1
    // data + locked), the load's L1 data latency and the chain. A load of another line starts
    // it at once, beside the atomic: a step takes at most the atomic and the chain, not the
    // load's latency too.
    let dir = tempfile::tempdir().unwrap();
    let cfg = engine_config_with(&[]);
    let lat = &cfg.core.settings.latency;
    let l1 = cfg.memory.l1d.data_latency as f64;
    let (iters, work) = (4_000u64, 10u64);
    let chain = work as f64 * lat.int_mul as f64;
    let per = |addr: u64| {
        let p = dir.path().join(format!("ll-{addr:x}.itrace"));
        locked_work_trace(&p, iters, work, true, Some(addr));
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        r.threads[0].stack.total() / iters as f64
    };
    let atomic = l1 + lat.locked as f64;
    let same = per(0x5008);
    assert!(
        same >= atomic + l1 + chain,
        "a load of the atomic's line: {same:.2} cycles a step, want at least {}",
        atomic + l1 + chain
    );
    let other = per(0x9000);
    assert!(
        other <= atomic + chain + 2.0,
        "a load of another line: {other:.2} cycles a step, want at most {}",
        atomic + chain + 2.0
    );
}

#[test]
fn a_dependence_through_any_register_place_is_kept_however_many_registers() {
    // The core keeps up to 2 address sources, 3 other sources and 3 destinations of an
    // instruction in place, and more in a pool. Formula: the chain mul -> add -> mul runs at
    // the sum of their latencies per iteration (int_mul + int_alu; the window and the
    // dispatch width allow 3 instructions a cycle), whichever place of the add holds r9 and
    // r23, in place or in the pool. A register left out would break the chain: the loop
    // would run at the dispatch width, under a cycle per iteration.
    let dir = tempfile::tempdir().unwrap();
    let cfg = engine_config_with(&[]);
    let lat = &cfg.core.settings.latency;
    let want = (lat.int_mul + lat.int_alu) as f64;
    let n = 20_000u64;
    let cases: [(&str, &[u8], u8, &[u8]); 5] = [
        ("one source", &[9], 0, &[23]),
        ("last other place", &[1, 2, 4, 5, 9], 2, &[20, 21, 23]),
        ("last address place", &[1, 9, 4, 5, 6], 2, &[21, 22, 23]),
        ("pool: 3 address sources", &[1, 2, 9, 4], 3, &[23]),
        (
            "pool: 4 other sources, 4 destinations",
            &[1, 4, 5, 6, 9],
            1,
            &[20, 21, 22, 23],
        ),
    ];
    for (what, srcs, addr, dsts) in cases {
        let p = dir.path().join("chain.itrace");
        chain_trace(&p, n, srcs, addr, dsts);
        let trace = Trace::open(&p).unwrap();
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        let per = r.threads[0].stack.total() / n as f64;
        assert!(
            (per - want).abs() / want < 0.01,
            "{what}: {per:.3} cycles per iteration, want {want}"
        );
    }
}

#[test]
fn independent_stream_misses_overlap_up_to_the_window_or_the_miss_slots() {
    // stream: 8 instructions and 2 loads per iteration; each load touches a new line every 8
    // iterations, so the window (ROB) holds rob/8 iterations = rob/32 load misses.
    // Formula: overlap = misses x idle latency / cycles ≈ min(rob/32, outstanding_loads).
    // DRAM and bus bandwidth are made ample so that only the core limits the overlap, and the
    // prefetchers are off (they would fetch the lines before the core asks).
    let dir = tempfile::tempdir().unwrap();
    for (rob, slots) in [(256u32, 32u32), (256, 2)] {
        let n = 40_000u64;
        let o = simulate(
            dir.path(),
            "stream",
            1,
            n,
            &[
                &format!("core.rob_size={rob}"),
                &format!("core.outstanding_loads={slots}"),
                "dram.bandwidth=10000GB/s",
                "bus.bandwidth=10000GB/s",
                "cache.l1d.prefetcher=none",
                "cache.l2.prefetcher=none",
            ],
        );
        let mut mem = sim_memory::Memory::new(o.machine.memory().unwrap()).unwrap();
        let idle = mem
            .access(0, 0, 0x5000_0000, 8, sim_memory::Kind::Load, 0)
            .latency as f64;
        let misses = 2.0 * n as f64 / 8.0;
        let overlap = misses * idle / busy(&o, 0);
        let want = (rob as f64 / 32.0).min(slots as f64);
        assert!(
            (overlap - want).abs() / want < 0.25,
            "rob {rob}, slots {slots}: overlap {overlap:.2}, expected {want}"
        );
    }
}

#[test]
fn prefetchers_turn_a_latency_bound_stream_into_a_bandwidth_bound_one() {
    // stream (triad) over 3 x 2.4 MB with a 1 MiB L3: every line comes from DRAM. Without
    // prefetchers the core's window and miss slots bound the overlap; with the default
    // stride prefetchers (L1D degree 2, L2 degree 16) nearly every prefetch is used, the L2's
    // demand misses all but vanish (the first line of a page is left), and the run comes
    // within 2.5x of — but never beats — the DRAM bandwidth bound: per 8 elements 3 lines in
    // and 1 written back, 4 x 64 B at the controllers' total bytes per cycle (the restart at
    // every page, where no prefetch crosses, keeps it from the bound itself: 1.98x).
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000u64;
    let small_l3 = "cache.l3.size=1MiB";
    let none = simulate(
        dir.path(),
        "stream",
        1,
        n,
        &[
            small_l3,
            "cache.l1d.prefetcher=none",
            "cache.l2.prefetcher=none",
        ],
    );
    let pf = simulate(dir.path(), "stream", 1, n, &[small_l3]);
    let cache = |o: &RunOutcome, name: &str| {
        o.result
            .caches
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .unwrap()
    };
    for name in ["core0.l1d", "socket0.l2.0"] {
        let s = cache(&pf, name);
        assert!(
            s.prefetches > n / 16 && s.prefetch_useful as f64 >= 0.99 * s.prefetches as f64,
            "{name}: {s:?}"
        );
    }
    let l2_none = cache(&none, "socket0.l2.0").misses_load;
    let l2_pf = cache(&pf, "socket0.l2.0").misses_load;
    // Prefetches stay within a 4 KiB page: at most the first line of each page of the two
    // loaded arrays misses (and a few while training).
    let pages = 2 * n * 8 / 4096;
    assert!(
        l2_none >= n / 4 && l2_pf <= pages + 16,
        "L2 load misses {l2_none} -> {l2_pf}, {pages} pages"
    );
    let mem = pf.machine.memory().unwrap();
    let bound =
        (n as f64 / 8.0) * 4.0 * 64.0 / (mem.dram_bytes_per_cycle * mem.dram_controllers as f64);
    let (c_none, c_pf) = (busy(&none, 0), busy(&pf, 0));
    println!(
        "stream: {c_none:.0} cycles without prefetchers, {c_pf:.0} with; DRAM bound {bound:.0}"
    );
    assert!(c_pf < 0.6 * c_none, "{c_none:.0} -> {c_pf:.0} cycles");
    assert!(
        c_pf >= 0.95 * bound,
        "{c_pf:.0} cycles beat the DRAM bound {bound:.0}"
    );
    assert!(
        c_pf <= 2.5 * bound,
        "{c_pf:.0} cycles, DRAM bound {bound:.0}"
    );
}

#[test]
fn random_branches_mispredict_half_the_time_at_a_known_cost() {
    // random-branch: one branch taken with probability 1/2 per iteration. Formula: its
    // mispredictions ≈ 50 % (45–55 %), and branch cycles per misprediction = front-end depth
    // plus the branch's resolution time (its load + test, a few cycles).
    let dir = tempfile::tempdir().unwrap();
    let iters = 20_000u64;
    let o = simulate(dir.path(), "random-branch", 1, iters, &[]);
    let t = &o.result.threads[0];
    let rate = t.mispredictions as f64 / iters as f64;
    assert!((0.45..0.55).contains(&rate), "misprediction rate {rate:.3}");
    let per = t.stack.get(Component::Branch) / t.mispredictions as f64;
    let fe = o.machine.core.frontend_depth as f64;
    assert!(
        per >= fe && per <= fe + 12.0,
        "{per:.2} branch cycles per misprediction, front-end depth {fe}"
    );
}

/// A two-thread trace: thread 0 warms the code before the ROI, runs `before` independent
/// ops, creates thread 1, runs `w0` ops, waits at a barrier (unless `skip_barrier_in_0`) and
/// joins; thread 1 runs `w1` ops and waits at the barrier.
fn two_thread_trace(path: &Path, before: u64, w0: u64, w1: u64, skip_barrier_in_0: bool) {
    let participants = 2;
    let mut w = test_writer(path, "two");
    let mut ops = Vec::new();
    for i in 0..8u8 {
        let mut s = StaticInst::new(0x1000 + 4 * i as u64, 4, OpClass::IntAlu);
        s.srcs = vec![8 + i];
        s.dsts = vec![8 + i];
        ops.push(w.add_static(s).unwrap());
    }
    let mut br = StaticInst::new(0x1020, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let br = w.add_static(br).unwrap();
    let run = |w: &mut TraceWriter, t: u32, n: u64| {
        for k in 0..n / 8 {
            for &s in &ops {
                w.inst(t, s, false, &[]).unwrap();
            }
            w.inst(t, br, k + 1 < n / 8, &[]).unwrap();
        }
    };
    w.marker(0, Marker::ThreadStart).unwrap();
    // Warm the code and the predictor with the same loop length as the timed part (a loop
    // predictor that learned a different trip count would mispredict in the ROI).
    run(&mut w, 0, before.max(64));
    w.marker(0, Marker::RoiBegin).unwrap();
    run(&mut w, 0, before);
    w.marker(0, Marker::ThreadCreate { child: 1 }).unwrap();
    w.marker(1, Marker::ThreadStart).unwrap();
    run(&mut w, 0, w0);
    run(&mut w, 1, w1);
    if !skip_barrier_in_0 {
        w.marker(
            0,
            Marker::Barrier {
                id: 7,
                participants,
                lead: false,
            },
        )
        .unwrap();
    }
    w.marker(
        1,
        Marker::Barrier {
            id: 7,
            participants,
            lead: false,
        },
    )
    .unwrap();
    w.marker(1, Marker::ThreadEnd).unwrap();
    w.marker(0, Marker::ThreadJoin { child: 1 }).unwrap();
    w.marker(0, Marker::RoiEnd).unwrap();
    w.marker(0, Marker::ThreadEnd).unwrap();
    w.finish().unwrap();
}

fn engine_config() -> EngineConfig {
    engine_config_with(&[])
}

fn engine_config_with(sets: &[&str]) -> EngineConfig {
    common::engine_config(sets)
}

#[test]
fn the_faster_thread_waits_at_the_barrier_for_exactly_the_difference() {
    // Thread 0 does 8,000 independent ops, thread 1 does 40,000, both at the dispatch width
    // (9 instructions per 8 ops incl. the loop branch). Formula: thread 0's sync-barrier =
    // busy(thread 1 before the barrier) − busy(thread 0 before the barrier), within 2 %.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("two.itrace");
    two_thread_trace(&p, 0, 8_000, 40_000, false);
    let trace = Trace::open(&p).unwrap();
    let (r, _) = Engine::new(&trace, &engine_config(), ())
        .unwrap()
        .run(|_| {})
        .unwrap();
    let b = |t: usize| r.threads[t].stack.total() - r.threads[t].stack.sync();
    let wait = r.threads[0].stack.get(Component::SyncBarrier);
    let diff = b(1) - b(0);
    assert!(diff > 1000.0, "{r:?}");
    assert!(
        (wait - diff).abs() / diff < 0.02,
        "sync-barrier {wait:.1}, difference {diff:.1}"
    );
    assert!(r.threads[1].stack.get(Component::SyncBarrier) < 0.01 * diff);
    for t in &r.threads {
        assert!((t.stack.total() - t.cycles).abs() < 1e-6 * t.cycles);
    }
}

#[test]
fn a_late_created_thread_shows_imbalance_start() {
    // Thread 0 runs 16,000 ops before creating thread 1. Formula: thread 1's imbalance-start
    // = thread 0's busy time before the create = 16,000 x 9/8 / width cycles (within 2 %).
    // The static (backward-taken) predictor keeps mispredictions to the loop exit, whose one
    // penalty is well inside the tolerance.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("late.itrace");
    two_thread_trace(&p, 16_000, 800, 800, false);
    let trace = Trace::open(&p).unwrap();
    let cfg = engine_config_with(&["branch_predictor.type=static"]);
    let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
    let want = 16_000.0 * 9.0 / 8.0 / cfg.core.settings.dispatch_width as f64;
    let got = r.threads[1].stack.get(Component::ImbalanceStart);
    assert!(
        (got - want).abs() / want < 0.02,
        "imbalance-start {got:.1}, expected {want:.1}"
    );
}

#[test]
fn the_watchdog_names_what_each_thread_waits_on() {
    // Thread 1 waits at a 2-party barrier that thread 0 never reaches; thread 0 waits to
    // join thread 1: no thread can progress.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("stuck.itrace");
    two_thread_trace(&p, 0, 80, 80, true);
    let trace = Trace::open(&p).unwrap();
    let e = Engine::new(&trace, &engine_config(), ())
        .unwrap()
        .run(|_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("deadlock") && e.contains("thread 0") && e.contains("waits to join thread 1"),
        "{e}"
    );
    assert!(
        e.contains("thread 1") && e.contains("waits at barrier 0x7 (1 arrived)"),
        "{e}"
    );
}

#[test]
fn every_golden_run_stacks_sum_to_total_cycles() {
    // The invariant: per thread, the components sum to the thread's cycles, on every built-in
    // workload and every shipped config.
    let dir = tempfile::tempdir().unwrap();
    for cfg in ["default.toml", "penryn-4x4.toml", "lime-1ghz.toml"] {
        for w in sim_frontend::workloads::WORKLOADS {
            let req = RunRequest {
                config: Some(root().join("configs").join(cfg)),
                workload: Some(w.name.into()),
                threads: Some(4),
                size: Some((w.default_size / 32).max(2)),
                seed: 3,
                out: dir.path().join(format!("{cfg}-{}", w.name)),
                ..RunRequest::default()
            };
            let o = run(&req, |_| {}).unwrap_or_else(|e| panic!("{cfg} {}: {e:#}", w.name));
            for t in &o.result.threads {
                let sum = t.stack.total();
                assert!(
                    (sum - t.cycles).abs() <= 1e-6 * t.cycles.max(1.0),
                    "{cfg} {} thread {}: stack {sum} vs cycles {}",
                    w.name,
                    t.thread,
                    t.cycles
                );
                assert!(
                    t.stack.0.iter().all(|&c| c >= -1e-9),
                    "{cfg} {}: negative component {:?}",
                    w.name,
                    t.stack
                );
            }
            assert!(o.result.cycles > 0.0);
        }
    }
}

#[test]
fn the_same_run_twice_gives_byte_identical_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for k in 0..2 {
        let req = RunRequest {
            workload: Some("lock-contention".into()),
            threads: Some(4),
            size: Some(200),
            seed: 1,
            out: dir.path().join(format!("r{k}")),
            ..RunRequest::default()
        };
        let o = run(&req, |_| {}).unwrap();
        outs.push(std::fs::read(o.dir.join("summary.json")).unwrap());
        for f in [
            "config.toml",
            "attribution.json",
            "sections.json",
            "cycle-stacks.svg",
        ] {
            assert!(o.dir.join(f).exists(), "{f} missing");
        }
    }
    assert_eq!(outs[0], outs[1]);
}

/// Records the engine's probe events to check their contract.
#[derive(Default)]
struct Recorder {
    horizon: f64,
    violations: Vec<String>,
    /// Per thread: (time, running) changes.
    activity: Vec<Vec<(f64, bool)>>,
    starts: Vec<u32>,
    ends: Vec<u32>,
    joins: Vec<(u32, u32, f64, f64)>,
    barriers: u64,
}

impl sim_core::Observer for Recorder {
    type Part<'a> = sim_core::NoParts;
    fn inst(
        &mut self,
        tid: u32,
        _sidx: u32,
        r: &sim_core::core::InstResult,
        _stack: &sim_core::CycleStack,
    ) {
        if r.dispatch < self.horizon {
            self.violations.push(format!(
                "thread {tid} dispatched at {} before the horizon {}",
                r.dispatch, self.horizon
            ));
        }
    }
    fn barrier(&mut self, _tid: u32, _site: u32, _arrival: f64, _release: f64) {
        self.barriers += 1;
    }
    fn thread_start(&mut self, tid: u32, _at: f64) {
        self.starts.push(tid);
    }
    fn thread_end(&mut self, tid: u32, _at: f64) {
        self.ends.push(tid);
    }
    fn join(&mut self, tid: u32, _site: u32, child: u32, arrival: f64, release: f64) {
        self.joins.push((tid, child, arrival, release));
    }
    fn horizon(&mut self, at: f64) {
        if at < self.horizon {
            self.violations
                .push(format!("horizon went back from {} to {at}", self.horizon));
        }
        self.horizon = at;
    }
    fn activity(&mut self, tid: u32, at: f64, running: bool) {
        if at < self.horizon {
            self.violations.push(format!(
                "thread {tid} activity {running} at {at} before the horizon {}",
                self.horizon
            ));
        }
        let t = tid as usize;
        if self.activity.len() <= t {
            self.activity.resize(t + 1, Vec::new());
        }
        self.activity[t].push((at, running));
    }
}

/// The probe contract that time-resolved collectors (ParaShares) rely on: running/blocked
/// changes alternate per thread, never precede the horizon, and the blocked time between a
/// thread's start and end equals the synchronization cycles of its stack (an independent
/// account: the stack is charged by the cores, the activity by the engine's state changes).
#[test]
fn activity_events_follow_the_horizon_and_match_the_sync_cycles() {
    let dir = tempfile::tempdir().unwrap();
    for (name, threads, size) in [
        ("lu-owner", 8, 6),
        ("lock-contention", 6, 200),
        ("serial-phases", 4, 256),
    ] {
        let w = sim_frontend::workloads::find(name).unwrap();
        let path = dir.path().join(format!("{name}.itrace"));
        let params = sim_frontend::workloads::Params {
            threads,
            size,
            seed: 1,
        };
        w.generate(&params, &path).unwrap();
        let trace = Trace::open(&path).unwrap();
        let engine = Engine::new(&trace, &engine_config(), Recorder::default()).unwrap();
        let (result, rec) = engine.run(|_| {}).unwrap();
        assert!(
            rec.violations.is_empty(),
            "{name}: {:?}",
            &rec.violations[..3.min(rec.violations.len())]
        );
        let mut starts = rec.starts.clone();
        starts.sort();
        assert_eq!(starts, (0..threads).collect::<Vec<_>>(), "{name}: starts");
        // Thread 0 ends after the ROI end, so only the workers' ends are timed.
        assert_eq!(rec.ends.len(), threads as usize - 1, "{name}: ends");
        assert_eq!(rec.activity.len(), threads as usize, "{name}");
        for (t, changes) in rec.activity.iter().enumerate() {
            assert!(
                changes.first().is_some_and(|c| c.1),
                "{name} thread {t} starts running"
            );
            assert!(
                changes.last().is_some_and(|c| !c.1),
                "{name} thread {t} ends stopped"
            );
            let mut blocked = 0.0;
            for pair in changes.windows(2) {
                assert_ne!(pair[0].1, pair[1].1, "{name} thread {t} alternates");
                assert!(pair[1].0 >= pair[0].0, "{name} thread {t} in time order");
                if !pair[0].1 {
                    blocked += pair[1].0 - pair[0].0;
                }
            }
            let s = &result.threads[t].stack;
            let sync = s.get(Component::SyncBarrier)
                + s.get(Component::SyncCritSect)
                + s.get(Component::SyncCond)
                + s.get(Component::SyncJoin);
            assert!(
                (blocked - sync).abs() < 1e-6 * sync.max(1.0),
                "{name} thread {t}: blocked {blocked} vs sync cycles {sync}"
            );
        }
        // Thread 0 joins every other thread once.
        let mut joined: Vec<u32> = rec.joins.iter().map(|j| j.1).collect();
        joined.sort();
        assert_eq!(joined, (1..threads).collect::<Vec<_>>(), "{name}: joins");
        assert!(
            rec.joins.iter().all(|j| j.0 == 0 && j.3 >= j.2),
            "{name}: joins"
        );
        if name == "lu-owner" {
            assert!(rec.barriers > 0);
        }
    }
}

/// `RunDir::replay` re-simulates a run directory exactly (the analyses rely on it), applies
/// `--set` overrides, and a directory that is not a run is named in the error.
#[test]
fn a_run_directory_replays_to_the_same_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let o = simulate(dir.path(), "lu-owner", 4, 6, &[]);
    let rd = isim::run::RunDir::open(&o.dir).unwrap();
    let (again, ()) = rd.replay(&[], &[], (), |_| {}).unwrap();
    assert_eq!(again.cycles, o.result.cycles);
    for (a, b) in again.threads.iter().zip(&o.result.threads) {
        assert_eq!(a.stack, b.stack);
    }
    let (slow, ()) = rd
        .replay(&["dram.latency=\"200ns\"".to_string()], &[], (), |_| {})
        .unwrap();
    assert!(
        slow.cycles > o.result.cycles,
        "{} vs {}",
        slow.cycles,
        o.result.cycles
    );
    let e = isim::run::RunDir::open(dir.path())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not an isim run directory"), "{e}");
}

/// Every way a marker makes threads runnable or not, with the simulator's own semantics
/// (no recorded order): creation, a condition variable's wait, its broadcast under the mutex
/// (each woken thread then waits for it) and its signals with the mutex free (each woken
/// thread takes it at once), contended mutexes, a barrier, the region of interest's end
/// while the workers run (it drains their windows), and joins, over seven threads. In a debug
/// build (the tests'), the engine checks on every turn that its scheduler's tree
/// (`sim-core/src/sched.rs`) chose what a scan of every thread would, so a change the tree is
/// not told of fails here. The run must also end, with each thread's instructions timed up
/// to the region's end and the waits charged where they belong, the same on one and two host
/// threads, in both models.
#[test]
fn the_scheduler_hears_of_every_thread_a_marker_wakes_or_blocks() {
    const WORKERS: u32 = 6;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sync.itrace");
    let mut w = test_writer(&p, "sync");
    let op = w
        .add_static({
            let mut s = StaticInst::new(0x1000, 4, OpClass::IntAlu);
            s.srcs = vec![8];
            s.dsts = vec![9];
            s
        })
        .unwrap();
    let work = |w: &mut TraceWriter, t: u32, n: u64| {
        for _ in 0..n {
            w.inst(t, op, false, &[]).unwrap();
        }
    };
    let lock = |addr| Marker::MutexLock {
        addr,
        order: Order::SIM,
        spin: Spin::NONE,
        call: false,
    };
    let unlock = |addr| Marker::MutexUnlock { addr, plain: false };
    let (gate, gate_cond, counter) = (0x100, 0x200, 0x300);
    let mut written = vec![0u64; WORKERS as usize + 1];
    w.marker(0, Marker::ThreadStart).unwrap();
    w.marker(0, Marker::RoiBegin).unwrap();
    for c in 1..=WORKERS {
        w.marker(0, Marker::ThreadCreate { child: c }).unwrap();
        w.marker(c, Marker::ThreadStart).unwrap();
        // Each worker waits at the gate at once; the main thread opens it much later.
        w.marker(c, lock(gate)).unwrap();
        w.marker(
            c,
            Marker::CondWait {
                cond: gate_cond,
                mutex: gate,
                wake: Order::SIM,
                relock: Order::SIM,
            },
        )
        .unwrap();
        w.marker(c, unlock(gate)).unwrap();
        for k in 0..3 {
            work(&mut w, c, 200 * c as u64 + 50 * k);
            w.marker(c, lock(counter)).unwrap();
            work(&mut w, c, 100);
            w.marker(c, unlock(counter)).unwrap();
            written[c as usize] += 200 * c as u64 + 50 * k + 100;
        }
        w.marker(
            c,
            Marker::Barrier {
                id: 9,
                participants: WORKERS,
                lead: false,
            },
        )
        .unwrap();
        work(&mut w, c, 300 * c as u64);
        written[c as usize] += 300 * c as u64;
        w.marker(c, lock(gate)).unwrap();
        w.marker(
            c,
            Marker::CondWait {
                cond: gate_cond + 1,
                mutex: gate,
                wake: Order::SIM,
                relock: Order::SIM,
            },
        )
        .unwrap();
        w.marker(c, unlock(gate)).unwrap();
        // Still running when the main thread ends the region of interest, which drains
        // every running core's window.
        work(&mut w, c, 5_000);
        written[c as usize] += 5_000;
        w.marker(c, Marker::ThreadEnd).unwrap();
    }
    work(&mut w, 0, 20_000);
    w.marker(0, lock(gate)).unwrap();
    w.marker(0, Marker::CondBroadcast { cond: gate_cond })
        .unwrap();
    w.marker(0, unlock(gate)).unwrap();
    // Long after every worker waits at the second gate, one signal each, the mutex free:
    // each woken worker takes it at once.
    work(&mut w, 0, 40_000);
    for _ in 1..=WORKERS {
        w.marker(
            0,
            Marker::CondSignal {
                cond: gate_cond + 1,
            },
        )
        .unwrap();
    }
    // Long enough for the woken workers (each after a hand-over of the gate's line) to run
    // some of their last 5,000 before the region ends, beyond the scheduler's quantum.
    work(&mut w, 0, 4_000);
    w.marker(0, Marker::RoiEnd).unwrap();
    for c in 1..=WORKERS {
        w.marker(0, Marker::ThreadJoin { child: c }).unwrap();
    }
    written[0] = 64_000;
    w.marker(0, Marker::ThreadEnd).unwrap();
    w.finish().unwrap();

    let trace = Trace::open(&p).unwrap();
    let cfg = engine_config();
    let run = |model: Model, hosts: usize| {
        Engine::new(&trace, &cfg, ())
            .unwrap()
            .model(model)
            .host_threads(hosts)
            .run(|_| {})
            .unwrap()
            .0
    };
    for model in [Model::Exact, Model::Parallel] {
        let r = run(model, 1);
        // Timed: everything before the region's end, so all of the main thread's, and of
        // each worker's, all but part of its last 5,000.
        assert_eq!(r.threads[0].instructions, written[0], "{model:?}");
        for (c, (th, &all)) in r.threads.iter().zip(&written).enumerate().skip(1) {
            let n = th.instructions;
            assert!(n > all - 5_000 && n < all, "{c} {model:?}: {n} of {all}");
        }
        for c in 1..=WORKERS as usize {
            let s = &r.threads[c].stack;
            // Waited for the gate from its creation to the broadcast: most of the main
            // thread's 20,000 instructions.
            assert!(s.get(Component::SyncCond) > 1_000.0, "{c} {model:?}: {s:?}");
        }
        assert!(
            (1..=WORKERS as usize).any(|c| r.threads[c].stack.get(Component::SyncBarrier) > 0.0),
            "{model:?}"
        );
        let again = run(model, 2);
        assert_eq!(format!("{r:?}"), format!("{again:?}"), "{model:?}");
    }
}

#[test]
fn a_full_scheduler_bounds_how_far_independent_chains_overlap() {
    // K chains of L dependent one-cycle operations, each chain's head independent of what came
    // before. Formula (`scheduler_size` S below L, 2S within the window and the width): the
    // scheduler fills with the S operations of the running chain that wait for their operands
    // and then takes one more as one issues; the next chain's head comes when the last
    // operation of the chain before it is dispatched, S cycles before that chain ends, so each
    // chain ends L - S cycles after the one before: (K - 1)(L - S) + L cycles in all after the
    // first fetch, within 1 %. With no limit (0) only the window bounds the overlap: fewer
    // cycles than either.
    let dir = tempfile::tempdir().unwrap();
    let (k, l) = (50u64, 200u64);
    let p = dir.path().join("chains.itrace");
    let mut w = test_writer(&p, "chains");
    let mut head = StaticInst::new(0x1000, 4, OpClass::IntAlu);
    head.dsts = vec![0];
    let head = w.add_static(head).unwrap();
    let mut step = StaticInst::new(0x1004, 4, OpClass::IntAlu);
    step.srcs = vec![0];
    step.dsts = vec![0];
    let step = w.add_static(step).unwrap();
    write_roi(w, |w| {
        for _ in 0..k {
            w.inst(0, head, false, &[]).unwrap();
            for _ in 1..l {
                w.inst(0, step, false, &[]).unwrap();
            }
        }
    });
    let trace = Trace::open(&p).unwrap();
    let cycles = |s: u32| {
        let cfg = engine_config_with(&[&format!("core.scheduler_size={s}")]);
        let c = &cfg.core.settings;
        assert!(c.latency.int_alu == 1 && 2 * s < c.rob_size && c.dispatch_width >= 2);
        let (r, _) = Engine::new(&trace, &cfg, ()).unwrap().run(|_| {}).unwrap();
        let stack = &r.threads[0].stack;
        assert!(
            (stack.total() - r.cycles).abs() <= 1e-9 * r.cycles,
            "the stack sums to the run"
        );
        // Less the first instruction's fetch from memory, before anything is dispatched.
        stack.total() - stack.get(Component::Ifetch)
    };
    let unlimited = cycles(0);
    for s in [16u64, 64] {
        let got = cycles(s as u32);
        let want = ((k - 1) * (l - s) + l) as f64;
        assert!(
            (got - want).abs() / want < 0.01,
            "scheduler {s}: {got} cycles, want (K - 1)(L - S) + L = {want}"
        );
        assert!(
            unlimited < got,
            "no limit: {unlimited} cycles, scheduler {s}: {got}"
        );
    }
}

/// The host oracle's program (`benches/host/kernels.c` with `realcode.c`, as
/// `benches/host/run.sh` builds it) compiles warning-free at both levels and each plain-C
/// kernel runs, checks its own result where that is cheap (sorted output, the hash table's
/// hits, an element of L·U) and reports its time: a kernel broken by an edit fails here, not
/// in a benchmark run that would time it anyway. Small sizes; the timings are not looked at.
#[test]
fn the_host_oracles_kernels_build_and_check_their_results_at_o2_and_o0() {
    assert!(common::tools_present(&["gcc"]), "needs gcc");
    let dir = tempfile::tempdir().unwrap();
    let host = root().join("benches/host");
    let gcc = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new("gcc")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "gcc {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let warn = ["-g", "-Wall", "-Wextra", "-Werror", "-c", "-o"].map(std::ffi::OsStr::new);
    let kernels_o = dir.path().join("kernels.o");
    let inc = root().join("include");
    let kernels_c = host.join("kernels.c");
    let mut a: Vec<&std::ffi::OsStr> = vec!["-O2".as_ref(), "-pthread".as_ref(), "-I".as_ref()];
    a.push(inc.as_os_str());
    a.extend(warn);
    a.extend([kernels_o.as_os_str(), kernels_c.as_os_str()]);
    gcc(&a);
    let realcode_c = host.join("realcode.c");
    for level in ["-O2", "-O0"] {
        let real_o = dir.path().join(format!("realcode{level}.o"));
        let exe = dir.path().join(format!("kernels{level}"));
        let mut a: Vec<&std::ffi::OsStr> = vec![level.as_ref()];
        a.extend(warn);
        a.extend([real_o.as_os_str(), realcode_c.as_os_str()]);
        gcc(&a);
        gcc(&[
            "-pthread".as_ref(),
            "-o".as_ref(),
            exe.as_os_str(),
            kernels_o.as_os_str(),
            real_o.as_os_str(),
        ]);
        for args in [
            "hist 2 4096",
            "alias-sum 2 4096",
            "alias-fp 2 4096",
            "reduce 2 4096",
            "matmul 1 24",
            "qsort 5000",
            "hash 2000 65536",
            "list 2 65536",
            "words 2 8192",
            "colsum 1 64",
            "transpose 1 64",
            "stencil 2 64",
            "lu 1 48",
            "fft 2 1024",
            "radix 1 65536",
            "false-share 100000 0 2",
            "prodcons 20000 0 2",
        ] {
            let out = std::process::Command::new(&exe)
                .args(args.split(' '))
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "kernels{level} {args}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let ns: f64 = stdout
                .strip_prefix("ns ")
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or_else(|| panic!("kernels{level} {args} printed {stdout:?}"));
            assert!(ns > 0.0, "kernels{level} {args}: {ns} ns");
        }
        // a bad size is refused with a message, not timed
        let out = std::process::Command::new(&exe)
            .args(["hash", "100", "1000"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("power-of-two"));
    }
}
