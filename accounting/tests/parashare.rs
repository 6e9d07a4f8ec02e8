//! ParaShares without the engine: block boundaries on a hand-made program, the paper's Fig. 1
//! example (from a parallel block vector and from probe events), shares summing to 100 % for
//! every weight, the cycles weight, the tie rules of the running count, and the collector's
//! running counts against a brute-force recomputation on random schedules delivered in the
//! engine's order (out of time order across threads, bounded by a horizon).

use accounting::parashare::{
    Analysis, BlockVector, Blocks, Collector, Pbv, Weight, analyze, paper_latency_factor,
    paper_latency_factors,
};
use sim_core::core::InstResult;
use sim_core::{CycleStack, Observer};
use sim_frontend::model::{BranchKind, OpClass, Program, SourceMap, SrcLoc, StaticInst};

/// Latency factors: 1 for everything but FP multiply (4) and integer divide (30).
fn factors() -> [f64; 14] {
    let mut f = [1.0; 14];
    f[OpClass::FpMul as usize] = 4.0;
    f[OpClass::IntDiv as usize] = 30.0;
    f
}

fn inst(pc: u64, class: OpClass, line: u32) -> StaticInst {
    let mut s = StaticInst::new(pc, 4, class);
    s.loc = SrcLoc {
        function: 0,
        file: 0,
        line,
    };
    s
}

fn branch(pc: u64, line: u32) -> StaticInst {
    let mut s = inst(pc, OpClass::CondBranch, line);
    s.branch = BranchKind::Conditional;
    s
}

fn program(insts: Vec<StaticInst>) -> Program {
    Program {
        insts,
        source: SourceMap {
            functions: vec!["f".into()],
            files: vec!["t.c".into()],
            sections: Vec::new(),
        },
    }
}

/// Two 3-instruction loop blocks: A (sidx 0..3, lines 10-11) and B (sidx 3..6, line 20-21).
/// A holds an FP multiply, B an integer divide, so the latency weights differ (6 vs 32).
fn two_blocks() -> Program {
    let mut a0 = inst(0x1000, OpClass::FpMul, 10);
    a0.block_start = true;
    let mut b0 = inst(0x100c, OpClass::IntDiv, 20);
    b0.block_start = true;
    program(vec![
        a0,
        inst(0x1004, OpClass::IntAlu, 11),
        branch(0x1008, 11),
        b0,
        inst(0x1010, OpClass::IntAlu, 21),
        branch(0x1014, 21),
    ])
}

fn pbv_row(key: u32, threads: usize, at: &[(usize, u64)]) -> BlockVector {
    let mut execs = vec![0; threads + 1];
    for &(t, n) in at {
        execs[t] += n;
    }
    BlockVector {
        key,
        execs,
        critical: 0.0,
        critical_par: 0.0,
    }
}

fn by_key(a: &Analysis, key: u32) -> &accounting::parashare::BlockShare {
    a.blocks
        .iter()
        .find(|b| b.key == key)
        .expect("block present")
}

fn result(dispatch: f64, critical: f64) -> InstResult {
    InstResult {
        dispatch,
        critical,
        ..InstResult::default()
    }
}

#[test]
fn blocks_end_at_branches_block_starts_and_gaps() {
    let mut insts = vec![
        inst(0x10, OpClass::IntAlu, 1), // 0
        inst(0x14, OpClass::IntAlu, 2), // 1
        branch(0x18, 3),                // 2: ends the block
        inst(0x1d, OpClass::Load, 4),   // 3: 0x18 + 4 = 0x1c holds nothing, a gap
        inst(0x21, OpClass::IntAlu, 5), // 4
        inst(0x25, OpClass::IntAlu, 6), // 5: next is a block start
        inst(0x29, OpClass::IntAlu, 7), // 6
    ];
    insts[6].block_start = true;
    let p = program(insts);
    let b = Blocks::new(&p);
    let m = |k| b.members(k).collect::<Vec<_>>();
    assert_eq!(m(0), [0, 1, 2]);
    assert_eq!(
        m(1),
        [1, 2],
        "an entry in the middle has the rest of the run"
    );
    assert_eq!(
        m(3),
        [3, 4, 5],
        "0x1c is not an instruction: 3 starts after a gap"
    );
    assert_eq!(m(6), [6]);
    assert!(b.continues(0, 1) && b.continues(4, 5));
    assert!(!b.continues(2, 3), "after a branch");
    assert!(!b.continues(5, 6), "at a block start");
    assert!(!b.continues(1, 0), "control did not fall through");
}

#[test]
fn fig1_serial_block_a_outranks_more_frequent_parallel_block_b() {
    // Block A: 4 executions with 1 thread running; block B: 9 executions with 4.
    let p = two_blocks();
    let pbv = Pbv {
        threads: 4,
        blocks: vec![pbv_row(0, 4, &[(1, 4)]), pbv_row(3, 4, &[(4, 9)])],
        clamped: 0,
        max_pending: 0,
    };
    let a = analyze(&pbv, &p, &factors(), Weight::Instructions);
    let (ba, bb) = (by_key(&a, 0), by_key(&a, 3));
    assert_eq!((ba.rank, bb.rank), (1, 2), "A above B");
    // ParaShare_A = 4/1 x 3 = 12, ParaShare_B = 9/4 x 3 = 6.75.
    assert_eq!(ba.parashare, 12.0);
    assert_eq!(bb.parashare, 6.75);
    assert!((ba.share - 100.0 * 12.0 / 18.75).abs() < 1e-9);
    // Counting executions (or dynamic instructions) puts B first: A rises one place.
    assert_eq!((ba.unweighted_rank, bb.unweighted_rank), (2, 1));
    assert_eq!((ba.execution_rank, bb.execution_rank), (2, 1));
    assert_eq!((ba.shift, bb.shift), (1, -1));
    assert_eq!((ba.parallelism, bb.parallelism), (1.0, 4.0));
    assert_eq!(ba.lines, "t.c:10-11");
    assert_eq!(a.coverage[0].blocks, 1, "A alone holds 64 % >= 50 %");
    assert_eq!(a.coverage[0].source_lines, 2);
    assert_eq!(a.coverage[1].blocks, 2);
    assert_eq!(a.coverage[1].source_lines, 4);
    assert_eq!(a.rank_shifts[0].max_up, 1);
    assert_eq!(a.rank_shifts[0].max_down, 1);
    // Latency weights: A = 4 + 1 + 1, B = 30 + 1 + 1. B now wins: 9/4 x 32 = 72 > 4 x 6.
    let l = analyze(&pbv, &p, &factors(), Weight::Latency);
    assert_eq!(by_key(&l, 0).latency_weight, 6.0);
    assert_eq!(by_key(&l, 3).parashare, 72.0);
    assert_eq!(by_key(&l, 3).rank, 1);
    // The paper's factors: A = fp-mul 5 + add 1 + conditional branch 2 = 8, B = divide 30 +
    // 1 + 2 = 33, so ParaShare_A = 4 x 8 = 32 < ParaShare_B = 9/4 x 33 = 74.25.
    let paper = analyze(&pbv, &p, &paper_latency_factors(), Weight::Latency);
    assert_eq!(by_key(&paper, 0).latency_weight, 8.0);
    assert_eq!(by_key(&paper, 0).parashare, 32.0);
    assert_eq!(by_key(&paper, 3).parashare, 74.25);
}

/// The factors the ParaShares paper states (§3 step 3): conditional operations x2, adds x1,
/// divides x30; the others as their doc comment sources them.
#[test]
fn paper_latency_factors_are_the_papers() {
    assert_eq!(paper_latency_factor(OpClass::CondBranch), 2.0);
    assert_eq!(paper_latency_factor(OpClass::IntAlu), 1.0);
    assert_eq!(paper_latency_factor(OpClass::IntDiv), 30.0);
    assert_eq!(paper_latency_factor(OpClass::FpDiv), 30.0);
    assert_eq!(paper_latency_factor(OpClass::IntMul), 3.0);
    assert_eq!(paper_latency_factor(OpClass::FpMul), 5.0);
    let all = paper_latency_factors();
    for c in OpClass::ALL {
        assert_eq!(all[c as usize], paper_latency_factor(c));
    }
    assert_eq!(Weight::ConfigLatency.name(), "config-latency");
}

/// Feeds the Fig. 1 schedule as probe events: thread 0 runs A four times alone, creates
/// threads 1..3, then the four threads run B nine times between them and all stop together.
#[test]
fn fig1_from_probe_events() {
    let p = two_blocks();
    let mut c = Collector::new(&p, 4).with_resolve_batch(1);
    let s = CycleStack::default();
    c.activity(0, 0.0, true);
    c.horizon(0.0);
    let mut t = 1.0;
    for _ in 0..4 {
        for sidx in 0..3 {
            c.inst(0, sidx, &result(t, 1.0), &s);
            t += 1.0;
        }
    }
    for tid in 1..4 {
        c.activity(tid, t, true);
    }
    c.horizon(t);
    let per_thread = [3, 2, 2, 2];
    for (tid, &n) in per_thread.iter().enumerate() {
        let mut u = t + 0.5;
        for _ in 0..n {
            for sidx in 3..6 {
                c.inst(tid as u32, sidx, &result(u, 2.0), &s);
                u += 1.0;
            }
        }
        c.activity(tid as u32, t + 10.0, false);
    }
    let pbv = c.finish();
    assert_eq!(pbv.clamped, 0);
    assert_eq!(pbv.blocks.len(), 2);
    assert_eq!(pbv.blocks[0].execs, [0, 4, 0, 0, 0]);
    assert_eq!(pbv.blocks[1].execs, [0, 0, 0, 0, 9]);
    // Cycles weight: A 4 executions x 3 cycles alone = 12; B 9 x 6 cycles / 4 = 13.5.
    assert_eq!(pbv.blocks[0].critical_par, 12.0);
    assert_eq!(pbv.blocks[1].critical_par, 13.5);
    assert_eq!(pbv.blocks[1].critical, 54.0);
    let a = analyze(&pbv, &p, &factors(), Weight::Instructions);
    assert_eq!(by_key(&a, 0).rank, 1);
    let cy = analyze(&pbv, &p, &factors(), Weight::Cycles);
    assert_eq!(by_key(&cy, 3).rank, 1, "B's executions are twice as long");
    assert_eq!(by_key(&cy, 0).unweighted, 12.0);
}

#[test]
fn shares_sum_to_100_for_every_weight() {
    let p = two_blocks();
    let mut b0 = pbv_row(0, 8, &[(1, 7), (3, 100), (8, 5)]);
    b0.critical = 900.0;
    b0.critical_par = 350.0;
    let mut b1 = pbv_row(3, 8, &[(2, 11), (8, 1000)]);
    b1.critical = 5000.0;
    b1.critical_par = 640.0;
    let mut b2 = pbv_row(4, 8, &[(5, 3)]);
    b2.critical = 12.0;
    b2.critical_par = 2.4;
    let pbv = Pbv {
        threads: 8,
        blocks: vec![b0, b1, b2],
        clamped: 0,
        max_pending: 0,
    };
    for w in [Weight::Instructions, Weight::Latency, Weight::Cycles] {
        let a = analyze(&pbv, &p, &factors(), w);
        let sum: f64 = a.blocks.iter().map(|b| b.share).sum();
        assert!((sum - 100.0).abs() < 1e-9, "{w:?}: {sum}");
        let unw: f64 = a.blocks.iter().map(|b| b.unweighted_share).sum();
        assert!((unw - 100.0).abs() < 1e-9, "{w:?}: {unw}");
        assert!((a.blocks.last().unwrap().cumulative - 100.0).abs() < 1e-9);
        let ranks: Vec<usize> = a.blocks.iter().map(|b| b.rank).collect();
        assert_eq!(ranks, [1, 2, 3]);
        assert!(a.blocks.windows(2).all(|w| w[0].share >= w[1].share));
    }
}

/// Ties at one instant: a thread resuming at `t` counts at `t`, one stopping at `t` does not,
/// except the thread whose own block starts at `t`; stopping and resuming at `t` counts once.
#[test]
fn running_count_ties_at_one_instant() {
    let p = two_blocks();
    let s = CycleStack::default();
    let mut c = Collector::new(&p, 4);
    for tid in 0..3 {
        c.activity(tid, 0.0, true);
    }
    c.horizon(0.0);
    // Thread 0 starts A at 5 and stops at 5; thread 1 stops at 5; thread 3 starts at 5.
    c.inst(0, 0, &result(5.0, 0.0), &s);
    c.activity(0, 5.0, false);
    c.activity(1, 5.0, false);
    c.activity(3, 5.0, true);
    // Thread 2 starts B at 5: running are 2 (itself) and 3 -> 2.
    c.inst(2, 3, &result(5.0, 0.0), &s);
    // Thread 3 starts B at 6 (running 2, 3), stops at 6 and resumes at 6: still 2.
    c.inst(3, 3, &result(6.0, 0.0), &s);
    c.activity(3, 6.0, false);
    c.activity(3, 6.0, true);
    c.horizon(10.0);
    let pbv = c.finish();
    assert_eq!(pbv.clamped, 0);
    // A at 5 on thread 0: threads 2, 3 and itself -> 3.
    assert_eq!(pbv.blocks[0].execs, [0, 0, 0, 1, 0]);
    assert_eq!(pbv.blocks[1].execs, [0, 0, 2, 0, 0]);
}

/// SplitMix64, for reproducible random schedules.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy)]
enum Ev {
    Act(bool),
    Inst(u32, f64),
}

/// One thread's schedule in its own time order.
struct Schedule {
    events: Vec<(f64, Ev)>,
    /// Running intervals `[from, to)`.
    runs: Vec<(f64, f64)>,
}

/// A program of 16 instructions with branches, block starts and a gap in the code.
fn random_program() -> Program {
    let mut insts = Vec::new();
    let mut pc = 0x2000;
    for i in 0..16u32 {
        if i == 9 {
            pc += 16;
        }
        let mut s = if i % 5 == 4 {
            branch(pc, i)
        } else {
            inst(pc, OpClass::IntAlu, i)
        };
        s.block_start = i % 7 == 0;
        insts.push(s);
        pc += 4;
    }
    program(insts)
}

/// Random running intervals on integer times (so changes and block starts coincide often,
/// including zero-length waits and a last dispatch at the stop time), with a random walk
/// through the program that mostly falls through.
fn random_schedule(rng: &mut Rng, p: &Program) -> Schedule {
    let mut events = Vec::new();
    let mut runs = Vec::new();
    let mut t = rng.below(20) as f64;
    let mut sidx = rng.below(p.insts.len() as u64) as u32;
    for _ in 0..(2 + rng.below(5)) {
        let from = t;
        events.push((from, Ev::Act(true)));
        let n = 1 + rng.below(40);
        for _ in 0..n {
            t += 1.0;
            let crit = rng.below(4) as f64 * 0.5;
            events.push((t, Ev::Inst(sidx, crit)));
            sidx = if rng.below(10) < 7 {
                (sidx + 1) % p.insts.len() as u32
            } else {
                rng.below(p.insts.len() as u64) as u32
            };
        }
        let to = t + rng.below(3) as f64;
        events.push((to, Ev::Act(false)));
        runs.push((from, to));
        t = to + rng.below(15) as f64;
    }
    Schedule { events, runs }
}

/// Independent recomputation: block starts by the documented rule, running counts by
/// scanning every other thread's intervals.
fn brute_force(p: &Program, sched: &[Schedule]) -> Vec<(u32, usize, f64, f64)> {
    let mut out = Vec::new(); // (block, running, crit, crit / running) per execution
    for (tid, s) in sched.iter().enumerate() {
        let mut prev: Option<u32> = None;
        for &(time, ev) in &s.events {
            let Ev::Inst(sidx, crit) = ev else { continue };
            let cur = &p.insts[sidx as usize];
            let new = match prev {
                None => true,
                Some(q) => {
                    let q = &p.insts[q as usize];
                    q.branch != BranchKind::None
                        || cur.block_start
                        || cur.pc != q.pc + q.size as u64
                }
            };
            if new {
                let others = sched
                    .iter()
                    .enumerate()
                    .filter(|&(u, o)| {
                        u != tid && o.runs.iter().any(|&(a, b)| a <= time && time < b)
                    })
                    .count();
                out.push((sidx, others + 1, 0.0, 0.0));
            }
            let last = out.last_mut().expect("a block is open");
            last.2 += crit;
            last.3 = last.2 / last.1 as f64;
            prev = Some(sidx);
        }
    }
    out
}

/// Delivers the schedules like the engine: the thread with the smallest clock runs a quantum
/// past the next smallest; the horizon (smallest clock) is announced before each slice.
fn deliver(sched: &[Schedule], c: &mut Collector, quantum: f64) {
    let stack = CycleStack::default();
    let mut pos = vec![0usize; sched.len()];
    loop {
        let clock = |t: usize, pos: &[usize]| sched[t].events.get(pos[t]).map(|e| e.0);
        let mut live: Vec<(f64, usize)> = (0..sched.len())
            .filter_map(|t| clock(t, &pos).map(|c| (c, t)))
            .collect();
        if live.is_empty() {
            break;
        }
        live.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let (h, t) = live[0];
        c.horizon(h);
        let limit = live.get(1).map_or(f64::INFINITY, |x| x.0 + quantum);
        while let Some(&(time, ev)) = sched[t].events.get(pos[t]) {
            if time > limit {
                break;
            }
            match ev {
                Ev::Act(r) => c.activity(t as u32, time, r),
                Ev::Inst(sidx, crit) => c.inst(t as u32, sidx, &result(time, crit), &stack),
            }
            pos[t] += 1;
        }
    }
}

#[test]
fn running_counts_match_brute_force_on_random_schedules() {
    let p = random_program();
    let mut rng = Rng(7);
    for case in 0..300 {
        let threads = 1 + rng.below(6) as usize;
        let sched: Vec<Schedule> = (0..threads)
            .map(|_| random_schedule(&mut rng, &p))
            .collect();
        let truth = brute_force(&p, &sched);
        let mut want = vec![vec![0u64; threads + 1]; p.insts.len()];
        let mut crit = vec![(0.0, 0.0); p.insts.len()];
        for &(b, run, c, cp) in &truth {
            want[b as usize][run] += 1;
            crit[b as usize].0 += c;
            crit[b as usize].1 += cp;
        }
        for (batch, quantum) in [(1, 0.0), (1, 5.0), (3, 2.0), (1 << 20, 7.0)] {
            let mut c = Collector::new(&p, threads).with_resolve_batch(batch);
            deliver(&sched, &mut c, quantum);
            let pbv = c.finish();
            assert_eq!(pbv.clamped, 0, "case {case}");
            let mut got = vec![vec![0u64; threads + 1]; p.insts.len()];
            for b in &pbv.blocks {
                got[b.key as usize] = b.execs.clone();
                let (c0, c1) = crit[b.key as usize];
                assert!(
                    (b.critical - c0).abs() < 1e-9,
                    "case {case} block {}",
                    b.key
                );
                assert!(
                    (b.critical_par - c1).abs() < 1e-9,
                    "case {case} block {}",
                    b.key
                );
            }
            assert_eq!(got, want, "case {case}, batch {batch}, quantum {quantum}");
        }
    }
}
