//! ParaShares (Kambadur, Tang and Kim, §2–§3): basic blocks ranked by their share of parallel
//! execution. Each execution of a block counts `1/t`, with `t` the number of threads running
//! (started, not ended, not blocked in synchronization) when the execution starts, so a block
//! that runs while the rest of the machine waits weighs more than an equally frequent block of
//! a parallel phase: `ParaShare_b = Σ_t Execs_{b,t} / t × Weight_b`.
//!
//! **Blocks.** A block is keyed by the static index of its first executed instruction. A new
//! dynamic block starts at a thread's first instruction, after a branch, at an instruction
//! marked `block_start`, and wherever control does not fall through to the instruction at
//! `pc + size`. Its static extent ([`Blocks::members`]) is the fall-through run from the key
//! up to the next branch, block start or gap in the code; an execution entered in the middle
//! of a static block (which only happens without a branch, e.g. between two library calls)
//! is therefore its own, shorter block.
//!
//! **Running counts, exactly.** The [`Collector`] (an engine `Observer`) queues every block
//! start per thread with its dispatch time and resolves it once the engine's horizon has
//! passed that time: by then every activity change at or before it has been reported, and the
//! running count is the step function of those changes evaluated at the start (changes at the
//! same instant included; a thread stopping at the very dispatch time of its own block still
//! counts itself). The queues hold at most a few scheduling quanta of blocks. The result is the
//! parallel block vector [`Pbv`]: per block, executions per running-thread count, plus the
//! critical-path cycles charged to its executions (raw and divided by `t`).
//!
//! **Weights** ([`Weight`]): the block's static instruction count; the sum of per-op-class
//! latency factors over its instructions; or the simulated critical-path cycles of each
//! execution divided by its running count. [`analyze`] ranks the blocks and compares them with
//! the ranking not weighted by parallelism (the same weight without the division by `t`, i.e.
//! dynamic instructions for the instruction weight: the paper's Fig. 5).

use std::collections::{BTreeSet, VecDeque};

use serde::Serialize;
use sim_core::Observer;
use sim_core::core::InstResult;
use sim_frontend::model::{BranchKind, NO_SIDX, OpClass, Program, SrcLoc};

use crate::table::ReportTable;

/// Pending block starts that trigger a resolution at the next horizon (at least; the
/// threshold grows with what could not be resolved, so each start is looked at O(1) times).
const RESOLVE_BATCH: usize = 4096;

/// The static basic blocks of a program: for each instruction, the one that continues its
/// block when control falls through.
#[derive(Debug, Clone)]
pub struct Blocks {
    next: Vec<u32>,
}

impl Blocks {
    /// Derives the blocks of `program` (once per analysis: sorts the PCs).
    pub fn new(program: &Program) -> Blocks {
        let insts = &program.insts;
        let mut by_pc: Vec<(u64, u32)> = insts
            .iter()
            .enumerate()
            .map(|(i, s)| (s.pc, i as u32))
            .collect();
        by_pc.sort_unstable();
        let next = insts
            .iter()
            .map(|s| {
                if s.branch != BranchKind::None || s.size == 0 {
                    return NO_SIDX;
                }
                let Some(succ) = s.pc.checked_add(s.size as u64) else {
                    return NO_SIDX;
                };
                let k = by_pc.partition_point(|&(pc, _)| pc < succ);
                match by_pc.get(k) {
                    Some(&(pc, u)) if pc == succ && !insts[u as usize].block_start => u,
                    _ => NO_SIDX,
                }
            })
            .collect();
        Blocks { next }
    }

    /// True if executing `cur` right after `prev` continues `prev`'s block.
    #[inline]
    pub fn continues(&self, prev: u32, cur: u32) -> bool {
        self.next.get(prev as usize) == Some(&cur)
    }

    /// The static indices of the block keyed `key`, in order (the key first).
    pub fn members(&self, key: u32) -> impl Iterator<Item = u32> + '_ {
        // PCs strictly increase along the chain, so it ends; the bound is belt and braces.
        std::iter::successors(Some(key), |&s| {
            self.next.get(s as usize).copied().filter(|&n| n != NO_SIDX)
        })
        .take(self.next.len())
    }
}

/// One block's row of the parallel block vector.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockVector {
    /// The block's key: static index of its first instruction.
    pub key: u32,
    /// `execs[t]`: executions that started while `t` threads ran (`execs[0]` is always 0).
    pub execs: Vec<u64>,
    /// Critical-path cycles charged to the block's instructions, over all executions.
    pub critical: f64,
    /// The same, each execution's cycles divided by its running count.
    pub critical_par: f64,
}

impl BlockVector {
    /// Executions at any running count.
    pub fn executions(&self) -> u64 {
        self.execs.iter().sum()
    }

    /// `Σ_t execs[t] / t`: the parallelism-weighted execution count.
    pub fn weighted_executions(&self) -> f64 {
        self.execs
            .iter()
            .enumerate()
            .skip(1)
            .map(|(t, &n)| n as f64 / t as f64)
            .sum()
    }
}

/// The parallel block vector of a run: every executed block, by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Pbv {
    /// Threads of the run: the largest possible running count.
    pub threads: u32,
    /// Executed blocks in key order.
    pub blocks: Vec<BlockVector>,
    /// Block starts whose running count fell outside `1..=threads` and was clamped: 0 unless
    /// the engine broke its probe contract (a test checks it stays 0).
    pub clamped: u64,
    /// Most block starts queued at once, seen at a horizon (the collector's buffer size).
    pub max_pending: usize,
}

#[derive(Debug, Clone, Copy)]
struct Start {
    time: f64,
    block: u32,
    crit: f64,
    /// The thread stopped running at exactly `time` (it still counts itself).
    self_stop: bool,
}

#[derive(Debug, Clone)]
struct ThreadState {
    prev: u32,
    queue: VecDeque<Start>,
    /// Block of the execution in progress, or `NO_SIDX`.
    open: u32,
    /// Its start is still queued (at the back).
    open_queued: bool,
    /// Its running count, once resolved.
    open_t: u32,
    open_crit: f64,
}

/// The ParaShares collector: an [`Observer`] building the [`Pbv`] of a run. Per instruction it
/// does one array lookup and an addition; per block start, a queue push.
#[derive(Debug, Clone)]
pub struct Collector {
    blocks: Blocks,
    threads: Vec<ThreadState>,
    /// Activity changes not yet folded into `base`: (time, +1 or −1).
    events: Vec<(f64, i32)>,
    ready: Vec<(f64, i32)>,
    /// Running threads after every folded change.
    base: i32,
    horizon: f64,
    pending: usize,
    resolve_at: usize,
    /// Per static index: row of the block keyed there in `pbv`, or `NO_SIDX`.
    row_of: Vec<u32>,
    row_key: Vec<u32>,
    pbv: Vec<u64>,
    critical: Vec<f64>,
    critical_par: Vec<f64>,
    clamped: u64,
    batch: usize,
    max_pending: usize,
}

impl Collector {
    /// A collector for a run of `threads` threads of `program`.
    pub fn new(program: &Program, threads: usize) -> Collector {
        let n = program.insts.len();
        Collector {
            blocks: Blocks::new(program),
            threads: vec![
                ThreadState {
                    prev: NO_SIDX,
                    queue: VecDeque::new(),
                    open: NO_SIDX,
                    open_queued: false,
                    open_t: 1,
                    open_crit: 0.0,
                };
                threads
            ],
            events: Vec::new(),
            ready: Vec::new(),
            base: 0,
            horizon: f64::NEG_INFINITY,
            pending: 0,
            resolve_at: RESOLVE_BATCH,
            row_of: vec![NO_SIDX; n],
            row_key: Vec::new(),
            pbv: Vec::new(),
            critical: vec![0.0; n],
            critical_par: vec![0.0; n],
            clamped: 0,
            batch: RESOLVE_BATCH,
            max_pending: 0,
        }
    }

    /// Resolves queued starts once at least `n` are pending (default 4096; 1 resolves at
    /// every horizon). Only the memory held and the work per horizon change, not the result.
    pub fn with_resolve_batch(mut self, n: usize) -> Collector {
        self.batch = n.max(1);
        self.resolve_at = self.batch;
        self
    }

    fn width(&self) -> usize {
        self.threads.len() + 1
    }

    /// Ends thread `t`'s execution in progress: its cycles go to the queued start, or straight
    /// to the block when the start is already resolved.
    fn close(&mut self, t: usize) {
        let th = &mut self.threads[t];
        if th.open == NO_SIDX {
            return;
        }
        if th.open_queued {
            if let Some(s) = th.queue.back_mut() {
                s.crit = th.open_crit;
            }
        } else {
            let b = th.open as usize;
            self.critical[b] += th.open_crit;
            self.critical_par[b] += th.open_crit / th.open_t as f64;
        }
        th.open = NO_SIDX;
        th.open_queued = false;
        th.open_crit = 0.0;
    }

    /// Resolves every queued start before `h`, folding the activity changes before `h`.
    fn resolve(&mut self, h: f64) {
        self.ready.clear();
        let mut i = 0;
        while i < self.events.len() {
            if self.events[i].0 < h {
                self.ready.push(self.events.swap_remove(i));
            } else {
                i += 1;
            }
        }
        self.ready.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = self.threads.len() as i32;
        let width = self.width();
        for t in 0..self.threads.len() {
            let mut k = 0;
            let mut count = self.base;
            loop {
                let th = &mut self.threads[t];
                let Some(&s) = th.queue.front() else { break };
                if s.time >= h {
                    break;
                }
                while k < self.ready.len() && self.ready[k].0 <= s.time {
                    count += self.ready[k].1;
                    k += 1;
                }
                let mut run = count + s.self_stop as i32;
                if run < 1 || run > n {
                    self.clamped += 1;
                    run = run.clamp(1, n.max(1));
                }
                let still_open = th.open_queued && th.queue.len() == 1;
                th.queue.pop_front();
                if still_open {
                    th.open_queued = false;
                    th.open_t = run as u32;
                }
                self.pending -= 1;
                let b = s.block as usize;
                if self.row_of[b] == NO_SIDX {
                    self.row_of[b] = self.row_key.len() as u32;
                    self.row_key.push(s.block);
                    self.pbv.resize(self.pbv.len() + width, 0);
                }
                self.pbv[self.row_of[b] as usize * width + run as usize] += 1;
                if !still_open {
                    self.critical[b] += s.crit;
                    self.critical_par[b] += s.crit / run as f64;
                }
            }
        }
        self.base += self.ready.iter().map(|e| e.1).sum::<i32>();
    }

    /// Resolves everything left (call after the run) and returns the parallel block vector.
    pub fn finish(mut self) -> Pbv {
        for t in 0..self.threads.len() {
            self.close(t);
        }
        self.resolve(f64::INFINITY);
        let width = self.width();
        let mut order: Vec<usize> = (0..self.row_key.len()).collect();
        order.sort_by_key(|&r| self.row_key[r]);
        let blocks = order
            .into_iter()
            .map(|r| {
                let key = self.row_key[r];
                BlockVector {
                    key,
                    execs: self.pbv[r * width..(r + 1) * width].to_vec(),
                    critical: self.critical[key as usize],
                    critical_par: self.critical_par[key as usize],
                }
            })
            .collect();
        Pbv {
            threads: self.threads.len() as u32,
            blocks,
            clamped: self.clamped,
            max_pending: self.max_pending,
        }
    }
}

impl Observer for Collector {
    type Part<'a> = sim_core::NoParts;
    const STACKS: bool = false;

    #[inline]
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, _stack: &sim_core::CycleStack) {
        let t = tid as usize;
        let prev = self.threads[t].prev;
        if prev == NO_SIDX || !self.blocks.continues(prev, sidx) {
            self.close(t);
            let th = &mut self.threads[t];
            th.queue.push_back(Start {
                time: r.dispatch,
                block: sidx,
                crit: 0.0,
                self_stop: false,
            });
            th.open = sidx;
            th.open_queued = true;
            self.pending += 1;
        }
        let th = &mut self.threads[t];
        th.prev = sidx;
        th.open_crit += r.critical;
    }

    fn horizon(&mut self, at: f64) {
        if at > self.horizon {
            self.horizon = at;
        }
        self.max_pending = self.max_pending.max(self.pending);
        if self.pending >= self.resolve_at {
            self.resolve(self.horizon);
            self.resolve_at = self.batch.max(2 * self.pending);
        }
    }

    fn activity(&mut self, tid: u32, at: f64, running: bool) {
        self.events.push((at, if running { 1 } else { -1 }));
        // Only the latest start can share its time with a later change of its own thread:
        // stopping then marks that the thread still counts itself; resuming at the same
        // instant makes it count through the step function again.
        if let Some(s) = self.threads[tid as usize].queue.back_mut()
            && s.time == at
        {
            s.self_stop = !running;
        }
    }
}

/// The ParaShares paper's latency factor of an op class (§3 step 3: "multiplying conditional
/// operations by two, add instructions by one, and divide instructions by 30", after
/// Granlund's x86 latency tables, the paper's [10]). The paper names only those three; the
/// rest are the same kind of figure for an Intel core of the paper's time: integer multiply 3
/// (Granlund's tables: 64-bit `imul` on Intel's family-6 cores), floating-point add 3 and
/// multiply 5 (Agner Fog's instruction tables, Sandy Bridge `addsd`/`mulsd`: Granlund lists
/// integer operations only), and 1 for everything else, an instruction whose cost is not an
/// operation latency (loads, stores, jumps, calls, returns, fences): memory time is what the
/// `cycles` weight measures.
pub fn paper_latency_factor(class: OpClass) -> f64 {
    match class {
        OpClass::IntAlu => 1.0,
        OpClass::CondBranch => 2.0,
        OpClass::IntDiv | OpClass::FpDiv => 30.0,
        OpClass::IntMul | OpClass::FpAdd => 3.0,
        OpClass::FpMul => 5.0,
        OpClass::Load
        | OpClass::Store
        | OpClass::Jump
        | OpClass::Call
        | OpClass::Return
        | OpClass::Other
        | OpClass::Serializing => 1.0,
    }
}

/// [`paper_latency_factor`] of every op class, indexed by `OpClass as usize` (the table
/// [`analyze`] takes for [`Weight::Latency`]).
pub fn paper_latency_factors() -> [f64; OpClass::COUNT] {
    OpClass::ALL.map(paper_latency_factor)
}

/// What a block weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Weight {
    /// Static instruction count (the paper's default).
    Instructions,
    /// Sum of the paper's latency factors ([`paper_latency_factor`]) over the block's
    /// instructions.
    Latency,
    /// Sum of the machine's own op latencies (its config's `[core.latency]`) over the block's
    /// instructions: isim's variant of the latency weight.
    ConfigLatency,
    /// Simulated critical-path cycles of each execution (divided by its running count).
    Cycles,
}

impl Weight {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Weight::Instructions => "instructions",
            Weight::Latency => "latency",
            Weight::ConfigLatency => "config-latency",
            Weight::Cycles => "cycles",
        }
    }

    /// What the ranking not weighted by parallelism measures under this weight.
    pub fn unweighted_meaning(self) -> &'static str {
        match self {
            Weight::Instructions => "dynamic instructions",
            Weight::Latency => "executions x latency weight",
            Weight::ConfigLatency => "executions x config latency weight",
            Weight::Cycles => "critical-path cycles",
        }
    }
}

/// One ranked block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockShare {
    /// Rank by ParaShare, 1 = largest (ties: lower key first).
    pub rank: usize,
    /// Static index of the block's first instruction.
    pub key: u32,
    /// PC of the first instruction, hex.
    pub pc: String,
    /// Function of the first instruction.
    pub function: Option<String>,
    /// `file:line` of the first instruction.
    pub location: Option<String>,
    /// Line range of the block's instructions per file, `file:first-last`.
    pub lines: String,
    /// Static instructions in the block.
    pub instructions: u32,
    /// Sum of the latency factors of its instructions.
    pub latency_weight: f64,
    /// Executions.
    pub executions: u64,
    /// `[t, executions]` for every running count `t` the block started at.
    pub executions_by_threads: Vec<[u64; 2]>,
    /// Harmonic mean of the running count over executions (1 = always alone).
    pub parallelism: f64,
    /// Critical-path cycles charged to the block over all executions.
    pub critical_cycles: f64,
    /// Absolute ParaShare under the chosen weight.
    pub parashare: f64,
    /// Percent of the program's total ParaShare.
    pub share: f64,
    /// Percent held by this block and every block ranked above it.
    pub cumulative: f64,
    /// The same weight without the division by the running count.
    pub unweighted: f64,
    /// Percent of the total unweighted value.
    pub unweighted_share: f64,
    /// Rank by `unweighted` (ties: lower key first).
    pub unweighted_rank: usize,
    /// Rank by execution count alone (ties: lower key first).
    pub execution_rank: usize,
    /// `unweighted_rank − rank`: positive when ParaShares ranks the block higher.
    pub shift: i64,
}

/// How much of the share the top blocks, and the top functions, hold (the paper's Table 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Percent of the total ParaShare.
    pub percent: f64,
    /// Fewest top-ranked blocks holding at least that much.
    pub blocks: usize,
    /// Distinct (file, line) pairs of those blocks' instructions.
    pub source_lines: usize,
    /// Fewest functions holding at least that much, a function holding the ParaShare of the
    /// blocks that start in it (ranked by it, ties by name).
    pub functions: usize,
    /// Distinct (file, line) pairs of every instruction of those functions the trace knows:
    /// what a programmer reads when a profile names functions (Table 1's "by func lines").
    pub function_lines: usize,
}

/// Rank shifts of a set of top blocks against the unweighted ranking (the paper's Fig. 5).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankShifts {
    /// Which blocks: `"90%"` (those holding 90 % of the share) or `"top100"`.
    pub set: String,
    /// Blocks in the set.
    pub blocks: usize,
    /// Largest rise under ParaShares (≥ 0).
    pub max_up: i64,
    /// Largest fall under ParaShares (≥ 0).
    pub max_down: i64,
}

/// A ranked ParaShares analysis of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The weight used.
    pub weight: Weight,
    /// What the unweighted comparison ranking measures.
    pub unweighted_is: &'static str,
    /// Threads of the run.
    pub threads: u32,
    /// Blocks executed at least once.
    pub blocks_executed: usize,
    /// Block executions in all.
    pub executions: u64,
    /// Sum of every block's ParaShare (the shares are fractions of it).
    pub total_parashare: f64,
    /// Block starts whose running count was clamped (0 in a correct run).
    pub clamped: u64,
    /// Distinct (file, line) pairs of every instruction in the trace (Table 1's total lines,
    /// as far as the trace knows the program).
    pub source_lines_total: usize,
    /// 50 % and 90 % coverage.
    pub coverage: Vec<Coverage>,
    /// Rank shifts of the 90 % blocks and of the top 100.
    pub rank_shifts: Vec<RankShifts>,
    /// Every executed block, by rank.
    pub blocks: Vec<BlockShare>,
}

/// How a run's top blocks compare with a base run's (the paper's Fig. 6: the same program at
/// another thread count or input). Blocks are matched by PC, so both runs must come from the
/// same executable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overlap {
    /// The base run (its directory, as given).
    pub base: String,
    /// Threads of the base run.
    pub base_threads: u32,
    /// Blocks holding 90 % of this run's share.
    pub top90: usize,
    /// Blocks holding 90 % of the base run's share.
    pub base_top90: usize,
    /// Of this run's 90 % blocks, how many are among the base run's (Fig. 6's black part).
    pub common: usize,
    /// The base run's top blocks (up to 5) and where they rank here (`None`: not executed).
    pub base_top: Vec<MovedBlock>,
}

/// One of the base run's top blocks, and where it ranks in this run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MovedBlock {
    /// PC of the block's first instruction, hex.
    pub pc: String,
    /// Its source lines.
    pub lines: String,
    /// Rank and share in the base run.
    pub base_rank: usize,
    /// Percent of the base run's ParaShare.
    pub base_share: f64,
    /// Rank here, if executed.
    pub rank: Option<usize>,
    /// Percent of this run's ParaShare (0 if not executed).
    pub share: f64,
}

impl Analysis {
    /// The blocks holding 90 % of the share.
    fn top90(&self) -> &[BlockShare] {
        let k = self
            .coverage
            .iter()
            .find(|c| c.percent == 90.0)
            .map_or(0, |c| c.blocks);
        &self.blocks[..k.min(self.blocks.len())]
    }

    /// This run's top blocks against `base`'s (named `base_name`): Fig. 6's overlap.
    pub fn overlap(&self, base: &Analysis, base_name: &str) -> Overlap {
        let base_top: BTreeSet<&str> = base.top90().iter().map(|b| b.pc.as_str()).collect();
        let common = self
            .top90()
            .iter()
            .filter(|b| base_top.contains(b.pc.as_str()))
            .count();
        let moved = base
            .blocks
            .iter()
            .take(5)
            .map(|b| {
                let here = self.blocks.iter().find(|h| h.pc == b.pc);
                MovedBlock {
                    pc: b.pc.clone(),
                    lines: b.lines.clone(),
                    base_rank: b.rank,
                    base_share: b.share,
                    rank: here.map(|h| h.rank),
                    share: here.map_or(0.0, |h| h.share),
                }
            })
            .collect();
        Overlap {
            base: base_name.to_string(),
            base_threads: base.threads,
            top90: self.top90().len(),
            base_top90: base.top90().len(),
            common,
            base_top: moved,
        }
    }
}

impl Overlap {
    /// A terminal report of the overlap.
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "against {} ({} thread{}): {} blocks hold 90 % here, {} there; {} of the {} are among \
             the base's",
            self.base,
            self.base_threads,
            if self.base_threads == 1 { "" } else { "s" },
            self.top90,
            self.base_top90,
            self.common,
            self.top90
        );
        for m in &self.base_top {
            let here = match m.rank {
                Some(r) => format!("rank {r} here ({:.2} %)", m.share),
                None => "not executed here".to_string(),
            };
            let _ = writeln!(
                s,
                "  base rank {} ({:.2} %) {} {}: {here}",
                m.base_rank, m.base_share, m.pc, m.lines
            );
        }
        s
    }
}

/// Distinct (file, line) pairs of the instructions `sidxs` of `program` (those without a line
/// not counted).
fn distinct_lines(program: &Program, sidxs: impl Iterator<Item = u32>) -> usize {
    sidxs
        .map(|s| program.insts[s as usize].loc)
        .filter(|loc| loc.line != 0 && loc.file != SrcLoc::UNKNOWN)
        .map(|loc| (loc.file, loc.line))
        .collect::<BTreeSet<_>>()
        .len()
}

/// Ranks by `value` descending, ties by key; returns rank (1-based) per index of `value`.
fn ranks(value: &[f64], keys: &[u32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..value.len()).collect();
    order.sort_by(|&a, &b| value[b].total_cmp(&value[a]).then(keys[a].cmp(&keys[b])));
    let mut rank = vec![0; value.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r + 1;
    }
    rank
}

fn percent(x: f64, total: f64) -> f64 {
    if total > 0.0 { 100.0 * x / total } else { 0.0 }
}

/// `file:first-last` per file, in order of first appearance.
fn line_ranges(program: &Program, members: &[u32]) -> String {
    let mut files: Vec<(u32, u32, u32)> = Vec::new();
    for &s in members {
        let loc = program.insts[s as usize].loc;
        if loc.line == 0 || loc.file == SrcLoc::UNKNOWN {
            continue;
        }
        match files.iter_mut().find(|f| f.0 == loc.file) {
            Some(f) => {
                f.1 = f.1.min(loc.line);
                f.2 = f.2.max(loc.line);
            }
            None => files.push((loc.file, loc.line, loc.line)),
        }
    }
    if files.is_empty() {
        return "?".to_string();
    }
    files
        .iter()
        .map(|&(f, lo, hi)| {
            let name = program
                .source
                .files
                .get(f as usize)
                .map_or("?", String::as_str);
            if lo == hi {
                format!("{name}:{lo}")
            } else {
                format!("{name}:{lo}-{hi}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ranks the blocks of `pbv` (collected on `program`) by ParaShare under `weight`; `latency`
/// holds the latency factor of each op class, indexed by `OpClass as usize`
/// ([`paper_latency_factors`] for [`Weight::Latency`], the machine's latencies for
/// [`Weight::ConfigLatency`]); every block's `latency_weight` sums them.
pub fn analyze(
    pbv: &Pbv,
    program: &Program,
    latency: &[f64; OpClass::COUNT],
    weight: Weight,
) -> Analysis {
    let blocks = Blocks::new(program);
    let members: Vec<Vec<u32>> = pbv
        .blocks
        .iter()
        .map(|b| blocks.members(b.key).collect())
        .collect();
    let keys: Vec<u32> = pbv.blocks.iter().map(|b| b.key).collect();
    let mut par = Vec::with_capacity(keys.len());
    let mut unw = Vec::with_capacity(keys.len());
    let mut lat = Vec::with_capacity(keys.len());
    for (b, m) in pbv.blocks.iter().zip(&members) {
        let l: f64 = m
            .iter()
            .map(|&s| latency[program.insts[s as usize].class as usize])
            .sum();
        lat.push(l);
        let (w, u) = match weight {
            Weight::Instructions => {
                let n = m.len() as f64;
                (b.weighted_executions() * n, b.executions() as f64 * n)
            }
            Weight::Latency | Weight::ConfigLatency => {
                (b.weighted_executions() * l, b.executions() as f64 * l)
            }
            Weight::Cycles => (b.critical_par, b.critical),
        };
        par.push(w);
        unw.push(u);
    }
    let execs: Vec<f64> = pbv.blocks.iter().map(|b| b.executions() as f64).collect();
    let rank = ranks(&par, &keys);
    let unw_rank = ranks(&unw, &keys);
    let exec_rank = ranks(&execs, &keys);
    let total: f64 = par.iter().sum();
    let total_unw: f64 = unw.iter().sum();
    let mut out: Vec<BlockShare> = pbv
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let n = b.executions();
            let wx = b.weighted_executions();
            BlockShare {
                rank: rank[i],
                key: b.key,
                pc: format!("{:#x}", program.insts[b.key as usize].pc),
                function: program.function_name(b.key).map(str::to_string),
                location: program.file_line(b.key),
                lines: line_ranges(program, &members[i]),
                instructions: members[i].len() as u32,
                latency_weight: lat[i],
                executions: n,
                executions_by_threads: b
                    .execs
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| c > 0)
                    .map(|(t, &c)| [t as u64, c])
                    .collect(),
                parallelism: if wx > 0.0 { n as f64 / wx } else { 0.0 },
                critical_cycles: b.critical,
                parashare: par[i],
                share: percent(par[i], total),
                cumulative: 0.0,
                unweighted: unw[i],
                unweighted_share: percent(unw[i], total_unw),
                unweighted_rank: unw_rank[i],
                execution_rank: exec_rank[i],
                shift: unw_rank[i] as i64 - rank[i] as i64,
            }
        })
        .collect();
    out.sort_by_key(|b| b.rank);
    let mut cum = 0.0;
    for b in &mut out {
        cum += b.share;
        b.cumulative = cum;
    }
    let member_of: std::collections::HashMap<u32, usize> =
        keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    // Functions by the share of the blocks starting in them, largest first (ties by name).
    let mut by_function: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
    for b in &out {
        let f = program.insts[b.key as usize].loc.function;
        if f != SrcLoc::UNKNOWN {
            *by_function.entry(f).or_default() += b.share;
        }
    }
    let mut functions: Vec<(u32, f64)> = by_function.into_iter().collect();
    let name = |f: u32| {
        program
            .source
            .functions
            .get(f as usize)
            .map_or("", String::as_str)
    };
    functions.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| name(a.0).cmp(name(b.0))));
    let every = || 0..program.insts.len() as u32;
    let cover = |p: f64| -> Coverage {
        let k = if total > 0.0 {
            out.iter()
                .position(|b| b.cumulative >= p - 1e-9)
                .map_or(out.len(), |i| i + 1)
        } else {
            0
        };
        let block_lines = distinct_lines(
            program,
            out[..k]
                .iter()
                .flat_map(|b| members[member_of[&b.key]].iter().copied()),
        );
        let mut cum = 0.0;
        let mut top = BTreeSet::new();
        for &(f, share) in &functions {
            if total <= 0.0 || cum >= p - 1e-9 {
                break;
            }
            cum += share;
            top.insert(f);
        }
        Coverage {
            percent: p,
            blocks: k,
            source_lines: block_lines,
            functions: top.len(),
            function_lines: distinct_lines(
                program,
                every().filter(|&s| top.contains(&program.insts[s as usize].loc.function)),
            ),
        }
    };
    let coverage = vec![cover(50.0), cover(90.0)];
    let shifts = |set: &str, k: usize| -> RankShifts {
        let top = &out[..k.min(out.len())];
        RankShifts {
            set: set.to_string(),
            blocks: top.len(),
            max_up: top.iter().map(|b| b.shift).max().unwrap_or(0).max(0),
            max_down: top.iter().map(|b| -b.shift).max().unwrap_or(0).max(0),
        }
    };
    let rank_shifts = vec![shifts("90%", coverage[1].blocks), shifts("top100", 100)];
    Analysis {
        weight,
        unweighted_is: weight.unweighted_meaning(),
        threads: pbv.threads,
        blocks_executed: out.len(),
        executions: pbv.blocks.iter().map(BlockVector::executions).sum(),
        total_parashare: total,
        clamped: pbv.clamped,
        source_lines_total: distinct_lines(program, every()),
        coverage,
        rank_shifts,
        blocks: out,
    }
}

impl Analysis {
    /// The ranked table of the top `top` blocks, as strings.
    pub fn table(&self, top: usize) -> ReportTable {
        let columns = [
            "rank",
            "share %",
            "cum %",
            "executions",
            "exec rank",
            "unweighted rank",
            "shift",
            "parallelism",
            "pc",
            "function",
            "source",
        ];
        let rows = self
            .blocks
            .iter()
            .take(top)
            .map(|b| {
                vec![
                    b.rank.to_string(),
                    format!("{:.2}", b.share),
                    format!("{:.2}", b.cumulative),
                    b.executions.to_string(),
                    b.execution_rank.to_string(),
                    b.unweighted_rank.to_string(),
                    format!("{:+}", b.shift),
                    format!("{:.2}", b.parallelism),
                    b.pc.clone(),
                    b.function.clone().unwrap_or_else(|| "?".to_string()),
                    b.lines.clone(),
                ]
            })
            .collect();
        ReportTable {
            title: format!(
                "ParaShares by {} (top {} of {} blocks)",
                self.weight.name(),
                top.min(self.blocks.len()),
                self.blocks.len()
            ),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows,
        }
    }

    /// A terminal report: the ranked table of the top `top` blocks, coverage and rank shifts.
    pub fn render_text(&self, top: usize) -> String {
        use std::fmt::Write;
        let t = self.table(top);
        let mut width: Vec<usize> = t.columns.iter().map(String::len).collect();
        for r in &t.rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut s = String::new();
        let _ = writeln!(s, "{}", t.title);
        let line = |s: &mut String, cells: &[String]| {
            let mut l = String::new();
            for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
                // Numbers right-aligned, names (pc, function, source) left-aligned.
                if i >= 8 {
                    let _ = write!(l, "{c:<w$}  ");
                } else {
                    let _ = write!(l, "{c:>w$}  ");
                }
            }
            let _ = writeln!(s, "{}", l.trim_end());
        };
        line(&mut s, &t.columns);
        for r in &t.rows {
            line(&mut s, r);
        }
        let _ = writeln!(
            s,
            "\n{} blocks executed, {} executions, {} threads; unweighted ranking = {}",
            self.blocks_executed, self.executions, self.threads, self.unweighted_is
        );
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        for c in &self.coverage {
            let _ = writeln!(
                s,
                "{:.0} % of the share: {} block{}, {} source line{} (by function: {} function{}, {} line{})",
                c.percent,
                c.blocks,
                plural(c.blocks),
                c.source_lines,
                plural(c.source_lines),
                c.functions,
                plural(c.functions),
                c.function_lines,
                plural(c.function_lines),
            );
        }
        let _ = writeln!(
            s,
            "source lines the trace knows: {}",
            self.source_lines_total
        );
        for r in &self.rank_shifts {
            let what = if r.set == "90%" {
                format!("the {} blocks holding 90 %", r.blocks)
            } else {
                format!("the top {} blocks", r.blocks)
            };
            let _ = writeln!(
                s,
                "rank shift vs unweighted, {what}: up to {} up, {} down",
                r.max_up, r.max_down
            );
        }
        if self.clamped > 0 {
            let _ = writeln!(
                s,
                "warning: {} block starts had a running count outside 1..={} (clamped)",
                self.clamped, self.threads
            );
        }
        s
    }
}
