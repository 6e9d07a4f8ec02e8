//! Accuracy tests of every predictor on synthetic branch streams whose best achievable
//! accuracy is known: constant, alternating, loop, random, call/return and indirect streams,
//! and for TAGE nested loops and a correlation further back than gshare's history.
//! Each stream runs a warm-up of [`WARMUP`] branches, then mispredictions are counted over
//! [`MEASURE`] branches. Predictors use isim's default table sizes (each settings `Default`).

use super::*;

const WARMUP: usize = 1_000;
const MEASURE: usize = 10_000;

/// A backward conditional branch (a loop's closing branch) and its target.
const LOOP_PC: u64 = 0x40_1040;
const LOOP_TARGET: u64 = 0x40_1000;
/// A forward conditional branch and its target.
const FWD_PC: u64 = 0x40_2000;
const FWD_TARGET: u64 = 0x40_2080;

fn static_cfg() -> BpredConfig {
    BpredConfig::Static
}
fn bimodal_cfg() -> BpredConfig {
    BpredConfig::Bimodal(BimodalConfig::default())
}
fn gshare_cfg() -> BpredConfig {
    BpredConfig::Gshare(GshareConfig::default())
}
fn tournament_cfg() -> BpredConfig {
    BpredConfig::Tournament(TournamentConfig::default())
}
fn pentium_m_cfg() -> BpredConfig {
    BpredConfig::PentiumM(PentiumMConfig::default())
}
fn tage_cfg() -> BpredConfig {
    BpredConfig::Tage(TageConfig::default())
}

/// The predictor `cfg` describes (every configuration here is valid).
fn build(cfg: &BpredConfig) -> Predictor {
    super::build(cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"))
}

fn all_cfgs() -> [BpredConfig; 6] {
    [
        static_cfg(),
        bimodal_cfg(),
        gshare_cfg(),
        tournament_cfg(),
        pentium_m_cfg(),
        tage_cfg(),
    ]
}

/// The dynamic predictors (everything but static).
fn learning_cfgs() -> [BpredConfig; 5] {
    [
        bimodal_cfg(),
        gshare_cfg(),
        tournament_cfg(),
        pentium_m_cfg(),
        tage_cfg(),
    ]
}

/// Runs `WARMUP + MEASURE` executions of one conditional branch whose `i`-th outcome is
/// `outcome(i)`; returns the mispredictions in the measured window.
fn run_cond(cfg: &BpredConfig, pc: u64, target: u64, outcome: impl Fn(usize) -> bool) -> usize {
    let mut p = build(cfg);
    let mut wrong = 0;
    for i in 0..WARMUP + MEASURE {
        let w = p.predict_and_update(pc, BranchKind::Conditional, outcome(i), target);
        if i >= WARMUP && w {
            wrong += 1;
        }
    }
    wrong
}

/// Outcome `i` of a loop of `n` executions: `n - 1` taken, then one not-taken exit.
fn loop_of(n: usize) -> impl Fn(usize) -> bool {
    move |i| i % n != n - 1
}

/// Loop exits in the measured window: the best a predictor without history can do.
fn exits_in_window(n: usize) -> usize {
    (WARMUP..WARMUP + MEASURE)
        .filter(|i| i % n == n - 1)
        .count()
}

/// A seeded xorshift64 stream of fair coin flips.
fn coin_flips(seed: u64) -> Vec<bool> {
    let mut next = crate::xorshift(seed);
    (0..WARMUP + MEASURE).map(|_| next() >> 63 == 1).collect()
}

// --- always taken ------------------------------------------------------------------------

#[test]
fn always_taken_is_learned_by_every_dynamic_predictor() {
    for cfg in learning_cfgs() {
        assert_eq!(run_cond(&cfg, FWD_PC, FWD_TARGET, |_| true), 0, "{cfg:?}");
        assert_eq!(run_cond(&cfg, LOOP_PC, LOOP_TARGET, |_| true), 0, "{cfg:?}");
    }
}

#[test]
fn static_predicts_backward_taken_and_forward_not_taken() {
    assert_eq!(run_cond(&static_cfg(), LOOP_PC, LOOP_TARGET, |_| true), 0);
    assert_eq!(
        run_cond(&static_cfg(), FWD_PC, FWD_TARGET, |_| true),
        MEASURE
    );
    assert_eq!(run_cond(&static_cfg(), FWD_PC, FWD_TARGET, |_| false), 0);
    assert_eq!(
        run_cond(&static_cfg(), LOOP_PC, LOOP_TARGET, |_| false),
        MEASURE
    );
}

// --- alternating -------------------------------------------------------------------------

/// A 2-bit counter starting weakly not-taken (1) that sees T, N, T, N, ... oscillates between
/// 1 and 2 and is wrong every time; seeing N, T, N, T, ... it oscillates between 0 and 1 and
/// is wrong exactly on every taken outcome.
#[test]
fn bimodal_on_alternation_is_wrong_always_or_half_the_time_depending_on_phase() {
    let starts_taken = run_cond(&bimodal_cfg(), FWD_PC, FWD_TARGET, |i| i % 2 == 0);
    assert_eq!(starts_taken, MEASURE);
    let starts_not_taken = run_cond(&bimodal_cfg(), FWD_PC, FWD_TARGET, |i| i % 2 == 1);
    assert_eq!(starts_not_taken, MEASURE / 2);
}

#[test]
fn history_predictors_learn_alternation() {
    for cfg in [gshare_cfg(), tournament_cfg(), pentium_m_cfg(), tage_cfg()] {
        for phase in 0..2 {
            let wrong = run_cond(&cfg, FWD_PC, FWD_TARGET, |i| i % 2 == phase);
            assert!(
                wrong < MEASURE / 100,
                "{cfg:?} phase {phase}: {wrong} wrong"
            );
        }
    }
}

// --- loops -------------------------------------------------------------------------------

/// Without history the best is one miss per loop exit: the saturated counter absorbs the
/// single not-taken and stays taken.
#[test]
fn bimodal_and_static_miss_exactly_each_loop_exit() {
    for n in [4, 10, 32] {
        for cfg in [static_cfg(), bimodal_cfg()] {
            let wrong = run_cond(&cfg, LOOP_PC, LOOP_TARGET, loop_of(n));
            assert_eq!(wrong, exits_in_window(n), "{cfg:?} loop of {n}");
        }
    }
}

/// 14 bits of history hold a loop of up to 15 executions (the exit follows 14 taken); in a
/// loop of 32 the last 18 executions share the all-taken history, whose counter saturates
/// taken and costs one miss per exit, like bimodal.
#[test]
fn gshare_learns_loops_that_fit_in_its_history() {
    for n in [4, 10, 15] {
        let wrong = run_cond(&gshare_cfg(), LOOP_PC, LOOP_TARGET, loop_of(n));
        assert!(wrong < MEASURE / 100, "loop of {n}: {wrong} wrong");
    }
    let wrong = run_cond(&gshare_cfg(), LOOP_PC, LOOP_TARGET, loop_of(32));
    assert_eq!(wrong, exits_in_window(32), "loop of 32");
}

/// The local predictor's 10-bit histories hold loops of up to 11 executions.
#[test]
fn tournament_learns_loops_that_fit_in_its_local_history() {
    for n in [4, 10, 11] {
        let wrong = run_cond(&tournament_cfg(), LOOP_PC, LOOP_TARGET, loop_of(n));
        assert!(wrong < MEASURE / 100, "loop of {n}: {wrong} wrong");
    }
    let wrong = run_cond(&tournament_cfg(), LOOP_PC, LOOP_TARGET, loop_of(32));
    assert_eq!(wrong, exits_in_window(32), "loop of 32");
}

/// The loop predictor needs no history: with 15 bits of path history it still predicts
/// every exit of loops up to 64 executions (63 taken + exit), and none beyond.
#[test]
fn pentium_m_loop_predictor_handles_loops_longer_than_its_history() {
    for n in [4, 10, 32, 64] {
        let wrong = run_cond(&pentium_m_cfg(), LOOP_PC, LOOP_TARGET, loop_of(n));
        assert_eq!(wrong, 0, "loop of {n}");
    }
    for n in [65, 100] {
        let wrong = run_cond(&pentium_m_cfg(), LOOP_PC, LOOP_TARGET, loop_of(n));
        assert!(
            wrong >= exits_in_window(n) / 2,
            "loop of {n}: {wrong} wrong, {} exits",
            exits_in_window(n)
        );
    }
}

/// Forward loop-exit branches (not taken while looping, taken to leave) are loops too.
#[test]
fn pentium_m_loop_predictor_handles_forward_exit_branches() {
    let wrong = run_cond(&pentium_m_cfg(), FWD_PC, FWD_TARGET, |i| i % 40 == 39);
    assert_eq!(wrong, 0);
}

// --- TAGE ---------------------------------------------------------------------------------

/// Loop executions before counting, and counted, in the TAGE loop tests.
const WARMUP_LOOPS: usize = 200;
const MEASURED_LOOPS: usize = 2_000;

/// Runs `WARMUP_LOOPS + MEASURED_LOOPS` executions of a loop whose closing branch runs `n`
/// times (`n - 1` taken, then the not-taken exit); returns the mispredictions of the
/// measured loop executions.
fn loop_misses(cfg: &BpredConfig, n: usize) -> usize {
    let mut p = build(cfg);
    let mut wrong = 0;
    for l in 0..WARMUP_LOOPS + MEASURED_LOOPS {
        for i in 0..n {
            let w = p.predict_and_update(LOOP_PC, BranchKind::Conditional, i != n - 1, LOOP_TARGET);
            if l >= WARMUP_LOOPS && w {
                wrong += 1;
            }
        }
    }
    wrong
}

/// After warm-up TAGE predicts every iteration of loops of 16, 32 and 64, exit included (at
/// most one miss per 1000 loop executions), where the tournament predictor, whose 10-bit
/// local histories cannot see 32 or 64 iterations back, misses every exit.
#[test]
fn tage_predicts_loops_of_16_32_and_64_after_warm_up() {
    for n in [16, 32, 64] {
        let tage = loop_misses(&tage_cfg(), n);
        assert!(
            tage * 1000 <= MEASURED_LOOPS,
            "loop of {n}: TAGE missed {tage} in {MEASURED_LOOPS} loop executions"
        );
        if n > 16 {
            let tournament = loop_misses(&tournament_cfg(), n);
            assert!(
                tournament >= MEASURED_LOOPS * 9 / 10 && tage * 100 <= tournament,
                "loop of {n}: TAGE missed {tage}, tournament {tournament}"
            );
        }
    }
}

/// A loop of 16 whose body holds another branch (taken every third iteration), nested in an
/// outer loop of 8 that also runs a branch alternating per outer iteration: every pattern is
/// fixed, so after warm-up TAGE predicts all of them, the inner loop's exit included. The
/// tournament predictor cannot: 12 bits of global history look the same at the 13th and
/// 16th inner iterations, and the inner branch's local history is all taken at both.
#[test]
fn tage_predicts_a_loop_of_16_nested_in_a_loop_with_other_branches() {
    const X_PC: u64 = 0x40_1010;
    const INNER_PC: u64 = 0x40_1030;
    const Y_PC: u64 = 0x40_1050;
    const OUTER_PC: u64 = 0x40_1070;
    fn run(cfg: &BpredConfig) -> (usize, usize) {
        let mut p = build(cfg);
        let (mut inner_wrong, mut all_wrong) = (0, 0);
        for o in 0..WARMUP_LOOPS + MEASURED_LOOPS {
            let counted = o >= WARMUP_LOOPS;
            let mut branch = |pc: u64, taken: bool, target: u64| {
                let w = p.predict_and_update(pc, BranchKind::Conditional, taken, target);
                if counted && w {
                    all_wrong += 1;
                }
                w
            };
            for i in 0..16 {
                branch(X_PC, i % 3 == 0, X_PC + 0x10);
                if branch(INNER_PC, i != 15, X_PC - 0x10) && counted {
                    inner_wrong += 1;
                }
            }
            branch(Y_PC, o % 2 == 0, Y_PC + 0x10);
            branch(OUTER_PC, o % 8 != 7, LOOP_TARGET);
        }
        (inner_wrong, all_wrong)
    }
    let (tage_inner, tage_all) = run(&tage_cfg());
    let (tournament_inner, _) = run(&tournament_cfg());
    assert!(
        tage_inner * 1000 <= MEASURED_LOOPS,
        "TAGE missed {tage_inner} inner-loop branches in {MEASURED_LOOPS} inner loops"
    );
    assert!(
        tage_all * 1000 <= MEASURED_LOOPS * 34,
        "TAGE missed {tage_all} of {} branches",
        MEASURED_LOOPS * 34
    );
    assert!(
        tournament_inner >= MEASURED_LOOPS / 2,
        "tournament missed only {tournament_inner} inner-loop branches"
    );
}

/// Branch B repeats the random outcome of branch A from 24 branches earlier; the 23
/// branches between are always taken. gshare's 14 bits and the tournament's 12 bits of
/// global history see only those 23; TAGE's 25-outcome table sees A and learns B. (The
/// tournament does better than a coin toss for another reason: A and B have the same local
/// history, so they share a local counter, and A's update, just before B, leans it towards
/// B's outcome.)
#[test]
fn tage_learns_a_correlation_24_branches_back() {
    const K: u64 = 24;
    fn run(cfg: &BpredConfig) -> usize {
        let mut p = build(cfg);
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut wrong_b = 0;
        for i in 0..5000 {
            let x = next();
            let a = x >> 63 == 1;
            p.predict_and_update(0x2000, BranchKind::Conditional, a, 0x2100);
            for j in 1..K {
                p.predict_and_update(0x3000 + 0x10 * j, BranchKind::Conditional, true, 0x2f00);
            }
            let w = p.predict_and_update(0x2040, BranchKind::Conditional, a, 0x2100);
            if i >= 2000 && w {
                wrong_b += 1;
            }
        }
        wrong_b
    }
    let tage = run(&tage_cfg());
    let gshare = run(&gshare_cfg());
    let tournament = run(&tournament_cfg());
    assert!(
        tage < 3000 / 50,
        "TAGE missed {tage} of 3000 correlated branches"
    );
    assert!(
        gshare > 3000 * 4 / 10,
        "gshare missed only {gshare} of 3000"
    );
    assert!(
        tournament > 3000 * 3 / 10,
        "tournament missed only {tournament} of 3000"
    );
}

/// Four branches with independent coin-flip outcomes stay between 40 % and 60 % wrong:
/// neither the tagged tables nor the loop predictor invent a pattern.
#[test]
fn tage_stays_near_half_wrong_on_random_branches() {
    for seed in [3u64, 0xdead_beef_cafe_f00d] {
        let mut p = build(&tage_cfg());
        let mut next = crate::xorshift(seed);
        let (warmup, measured) = (5_000, 50_000);
        let mut wrong = 0;
        for i in 0..warmup + measured {
            let x = next();
            let pc = 0x40_3000 + 0x40 * (i as u64 % 4);
            let w = p.predict_and_update(pc, BranchKind::Conditional, x >> 63 == 1, pc + 0x80);
            if i >= warmup && w {
                wrong += 1;
            }
        }
        assert!(
            (measured * 40 / 100..=measured * 60 / 100).contains(&wrong),
            "seed {seed:#x}: {wrong} of {measured} wrong"
        );
    }
}

/// The same stream gives the same answers: two predictors, and a clone taken half-way,
/// agree on every branch of a mixed stream of loops, coin flips, calls, returns and
/// indirect jumps long enough to cross the usefulness reset (2^18 conditional branches).
#[test]
fn tage_is_deterministic() {
    let mut a = build(&tage_cfg());
    let mut b = build(&tage_cfg());
    let mut c: Option<Predictor> = None;
    let mut next = crate::xorshift(11u64);
    let mut answers = Vec::new();
    for i in 0..400_000u64 {
        let x = next();
        let (pc, kind, taken, target) = match i % 10 {
            0..=5 => (LOOP_PC, BranchKind::Conditional, i % 37 != 36, LOOP_TARGET),
            6 => (
                FWD_PC + (x & 0x70),
                BranchKind::Conditional,
                x >> 63 == 1,
                FWD_TARGET,
            ),
            7 => {
                a.note_call(0x50_0005);
                b.note_call(0x50_0005);
                if let Some(c) = c.as_mut() {
                    BranchPredictor::note_call(c, 0x50_0005);
                }
                (0x50_0000, BranchKind::DirectCall, true, 0x60_0000)
            }
            8 => (0x60_0040, BranchKind::Return, true, 0x50_0005),
            _ => (
                0x70_0000,
                BranchKind::IndirectJump,
                true,
                0x71_0000 + (x & 0x40),
            ),
        };
        let wa = a.predict_and_update(pc, kind, taken, target);
        assert_eq!(
            wa,
            b.predict_and_update(pc, kind, taken, target),
            "branch {i}"
        );
        if let Some(c) = c.as_mut() {
            assert_eq!(
                wa,
                c.predict_and_update(pc, kind, taken, target),
                "clone, branch {i}"
            );
        }
        if i == 200_000 {
            c = Some(a.clone());
        }
        answers.push(wa);
    }
    let wrong = answers.iter().filter(|&&w| w).count();
    assert!(wrong > 0 && wrong < answers.len() / 4, "{wrong} wrong");
}

// --- random ------------------------------------------------------------------------------

#[test]
fn nobody_predicts_coin_flips() {
    for seed in [1, 0x5eed_1234_abcd_ef01] {
        let flips = coin_flips(seed);
        for cfg in all_cfgs() {
            let wrong = run_cond(&cfg, FWD_PC, FWD_TARGET, |i| flips[i]);
            assert!(
                (MEASURE * 45 / 100..=MEASURE * 55 / 100).contains(&wrong),
                "{cfg:?} seed {seed:#x}: {wrong} of {MEASURE} wrong"
            );
        }
    }
}

// --- returns -----------------------------------------------------------------------------

/// `rounds` of a call chain `depth` deep and its returns; returns mispredicted returns.
/// Odd levels use indirect calls, even levels direct ones.
fn call_chain(cfg: &BpredConfig, depth: u64, rounds: u64) -> u64 {
    let mut p = build(cfg);
    let mut wrong = 0;
    for _ in 0..rounds {
        for d in 0..depth {
            let call_pc = 0x50_0000 + 0x100 * d;
            let kind = if d % 2 == 1 {
                BranchKind::IndirectCall
            } else {
                BranchKind::DirectCall
            };
            p.note_call(call_pc + 5);
            // Each call site always calls the same function: never mispredicted after the
            // first round (and direct calls never).
            p.predict_and_update(call_pc, kind, true, 0x60_0000 + 0x100 * d);
        }
        for d in (0..depth).rev() {
            let ret_pc = 0x60_0000 + 0x100 * d + 0x40;
            wrong +=
                p.predict_and_update(ret_pc, BranchKind::Return, true, 0x50_0000 + 0x100 * d + 5)
                    as u64;
        }
    }
    wrong
}

/// The rule on both sides of the stack's documented capacity of 16: a chain of 16 returns
/// is predicted perfectly; each level beyond costs one mispredicted (outermost) return.
#[test]
fn return_stack_predicts_chains_up_to_its_depth() {
    let r = 16;
    assert_eq!(
        RAS_ENTRIES, 16,
        "the documented depth changed: update docs and this test"
    );
    for cfg in all_cfgs() {
        assert_eq!(call_chain(&cfg, 8, 100), 0, "{cfg:?}");
        assert_eq!(call_chain(&cfg, r, 100), 0, "{cfg:?}");
        assert_eq!(call_chain(&cfg, r + 1, 100), 100, "{cfg:?}");
        assert_eq!(call_chain(&cfg, r + 4, 100), 400, "{cfg:?}");
    }
}

#[test]
fn a_return_without_a_call_is_mispredicted() {
    for cfg in all_cfgs() {
        let mut p = build(&cfg);
        assert!(
            p.predict_and_update(0x100, BranchKind::Return, true, 0x200),
            "{cfg:?}"
        );
    }
}

// --- indirect branches and direct jumps ---------------------------------------------------

/// Runs `n` executions of an indirect branch whose `i`-th target is `target(i)`.
fn run_indirect(
    cfg: &BpredConfig,
    kind: BranchKind,
    n: usize,
    target: impl Fn(usize) -> u64,
) -> usize {
    let mut p = build(cfg);
    (0..n)
        .filter(|&i| p.predict_and_update(0x70_0000, kind, true, target(i)))
        .count()
}

#[test]
fn btb_predicts_a_constant_target_after_the_first_execution() {
    for cfg in all_cfgs() {
        for kind in [BranchKind::IndirectJump, BranchKind::IndirectCall] {
            assert_eq!(run_indirect(&cfg, kind, 1000, |_| 0x71_0000), 1, "{cfg:?}");
        }
    }
}

#[test]
fn btb_mispredicts_every_switch_between_two_targets() {
    for cfg in all_cfgs() {
        let wrong = run_indirect(&cfg, BranchKind::IndirectJump, 1000, |i| {
            0x71_0000 + 0x40 * (i as u64 % 2)
        });
        assert_eq!(wrong, 1000, "{cfg:?}");
    }
}

/// `n` distinct indirect branches in one aligned block, each with a constant target: the
/// mispredictions of the second pass over them.
fn btb_second_pass_misses(cfg: &BpredConfig, n: u64) -> usize {
    let mut p = build(cfg);
    let mut wrong = 0;
    for pass in 0..2 {
        for pc in 0x80_0000..0x80_0000 + n {
            let w = p.predict_and_update(pc, BranchKind::IndirectJump, true, pc + 0x1000);
            if pass == 1 && w {
                wrong += 1;
            }
        }
    }
    wrong
}

/// The default BTB is direct-mapped with `DEFAULT_BTB_ENTRIES` entries: that many branches
/// fit, twice as many collide pairwise and thrash; the Pentium M's 2048-entry BTB holds them.
#[test]
fn btb_capacity_is_as_documented() {
    let n = DEFAULT_BTB_ENTRIES as u64;
    for cfg in [
        static_cfg(),
        bimodal_cfg(),
        gshare_cfg(),
        tournament_cfg(),
        tage_cfg(),
    ] {
        assert_eq!(btb_second_pass_misses(&cfg, n), 0, "{cfg:?}");
        assert_eq!(
            btb_second_pass_misses(&cfg, 2 * n),
            2 * n as usize,
            "{cfg:?}"
        );
    }
    assert_eq!(btb_second_pass_misses(&pentium_m_cfg(), 2048), 0);
    assert_eq!(btb_second_pass_misses(&pentium_m_cfg(), 4096), 4096);
}

#[test]
fn direct_jumps_and_calls_are_never_mispredicted_and_non_branches_are_ignored() {
    for cfg in all_cfgs() {
        let mut p = build(&cfg);
        for i in 0..100u64 {
            assert!(!p.predict_and_update(0x90_0000, BranchKind::DirectJump, true, 0x90_0000 + i));
            assert!(!p.predict_and_update(0x90_1000, BranchKind::DirectCall, true, 0x90_2000 + i));
            assert!(!p.predict_and_update(0x90_3000, BranchKind::None, false, 0));
        }
    }
}

/// A non-branch never touches any state: a predictor fed extra `BranchKind::None` calls
/// between its branches predicts exactly like one that was not.
#[test]
fn non_branches_change_nothing() {
    for cfg in all_cfgs() {
        let flips = coin_flips(7);
        let mut a = build(&cfg);
        let mut b = build(&cfg);
        for (i, &f) in flips.iter().enumerate().take(2000) {
            b.predict_and_update(0x1234 + i as u64, BranchKind::None, f, 0x99);
            let pc = 0x40_0000 + 0x10 * (i as u64 % 7);
            assert_eq!(
                a.predict_and_update(pc, BranchKind::Conditional, f, LOOP_TARGET),
                b.predict_and_update(pc, BranchKind::Conditional, f, LOOP_TARGET),
                "{cfg:?} branch {i}"
            );
        }
    }
}
