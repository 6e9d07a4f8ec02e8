//! Per-thread call-path profiles: the input of thread aggregation (`aggregate`) and of the
//! CUBE4 export (`cube`). [`ProfileCollector`] is an [`Observer`] that keeps a shadow call
//! stack per thread and charges cycles, instructions, visits and misses to the thread's current
//! call path; [`Profile`] is the result: a call tree shared by all threads and, per thread, one
//! row of [`METRICS`] values per call-tree node.
//!
//! **Call paths.** A call path is the chain of functions (from the source map) from an
//! artificial root region `threads` down to the function executing; with `block_level` the
//! basic block executing is appended as a last element (a callee then hangs under the block
//! that called it). The shadow stack follows the trace's control flow:
//! * a call instruction pushes a frame for the function of the next instruction — unless the
//!   next instruction is the call's own fall-through in the same function (the callee was not
//!   traced, as with library calls), in which case nothing changes;
//! * a return pops a frame; a return with no caller frame (the ROI began inside a callee, or
//!   the thread's entry function returned) keeps the root frame;
//! * an instruction in another function than the top frame's without a call or return: if that
//!   function is in a caller frame, the stack unwinds to it (a missed return, `longjmp`);
//!   otherwise the top frame is replaced, as a **tail call** or jump into another function
//!   would (the built-in workloads' `main` jumps into the worker function this way, so thread 0
//!   and the workers share the worker's call path).
//!
//! **What a path is charged.** Visits: entering the path (a push, a replacement, a thread's
//! first instruction; at block level every entry into the block, including a loop back-edge or
//! a return into it). Instructions and misses: those of the instructions executed while it is
//! current. Cycles: the engine reports the thread's *cumulative* cycle stack with every
//! instruction; whenever the current path changes, the difference since the previous change is
//! charged to the path that was current, and at the end the final stack of `RunResult` closes
//! the last path. A path therefore owns the interval from the dispatch of its first instruction
//! to the dispatch of the next path's first instruction, including synchronization waits and
//! window drains in between; the time before a thread's first instruction (`imbalance-start`)
//! goes to its first path, the time after its end (`imbalance-end`) to its last. Waiting in
//! synchronization is the exception: the `sync-barrier`, `sync-crit-sect`, `sync-cond` and
//! `sync-join` cycles of an interval go to a **synchronization region** child of the path
//! ([`SYNC_REGIONS`]: `barrier`, `lock`, `condition wait`, `join`), as Score-P instruments
//! those calls, and each wait the engine reports is a visit of it. Each thread's
//! values summed over paths equal its cycle stack (up to floating-point rounding) and its
//! instruction count (exactly). A thread that executed nothing is charged at the root.
//!
//! **Hot path.** Per instruction: a compare of the instruction's function (and block) with the
//! current frame's and a few additions into the current path's row. Frames and paths are
//! interned (a hash lookup) only when the path changes; block children are found through a
//! dense per-function table.

use std::collections::HashMap;

use serde::Serialize;
use sim_core::core::InstResult;
use sim_core::{COMPONENTS, Component, CycleStack, Observer, RunResult};
use sim_frontend::model::{BranchKind, Program, SrcLoc};

/// Number of metrics per call path and thread.
pub const METRICS: usize = 30;
/// Index of total cycles (sum of every component).
pub const M_CYCLES: usize = 0;
/// Index of work cycles (every component that is not synchronization or imbalance).
pub const M_WORK: usize = 1;
/// Index of synchronization and imbalance cycles ([`Component::is_sync`]).
pub const M_SYNC: usize = 2;
/// Index of the first cycle-stack component; component `c` is at `M_COMPONENT + c as usize`.
pub const M_COMPONENT: usize = 3;
/// Index of executed instructions.
pub const M_INSTRUCTIONS: usize = M_COMPONENT + COMPONENTS;
/// Index of visits (entries into the call path).
pub const M_VISITS: usize = M_INSTRUCTIONS + 1;
/// Index of L1 misses; L2 and L3 follow.
pub const M_MISSES: usize = M_VISITS + 1;
/// Index of the fewest cycles of one visit of the path (inclusive of callees and waits).
pub const M_MIN_VISIT: usize = M_MISSES + 3;
/// Index of the most cycles of one visit of the path.
pub const M_MAX_VISIT: usize = M_MIN_VISIT + 1;

/// How values of a metric combine across threads (and visits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Combine {
    /// Added up.
    Sum,
    /// The smallest, over the threads that visited the path.
    Min,
    /// The largest.
    Max,
}

/// One row of metric values (cycles are fractional; counts are whole numbers held exactly).
pub type Values = [f64; METRICS];

/// What a metric is, for outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MetricDef {
    /// Stable name (JSON keys, CUBE `uniq_name`).
    pub name: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// True for counts (whole numbers).
    pub integer: bool,
    /// How values combine across threads.
    pub combine: Combine,
    /// One-line description.
    pub description: &'static str,
}

const fn cycles(name: &'static str, description: &'static str) -> MetricDef {
    MetricDef {
        name,
        unit: "cycles",
        integer: false,
        combine: Combine::Sum,
        description,
    }
}

const fn count(name: &'static str, unit: &'static str, description: &'static str) -> MetricDef {
    MetricDef {
        name,
        unit,
        integer: true,
        combine: Combine::Sum,
        description,
    }
}

const fn per_visit(name: &'static str, combine: Combine, description: &'static str) -> MetricDef {
    MetricDef {
        name,
        unit: "cycles",
        integer: false,
        combine,
        description,
    }
}

/// Every metric, in index order.
pub const METRIC_DEFS: [MetricDef; METRICS] = [
    cycles("cycles", "all cycles charged to the call path"),
    cycles("work", "cycles outside synchronization and imbalance"),
    cycles("sync", "synchronization and imbalance cycles"),
    cycles("base", "cycle-stack component base"),
    cycles("depend-int", "cycle-stack component depend-int"),
    cycles("depend-fp", "cycle-stack component depend-fp"),
    cycles("depend-mem", "cycle-stack component depend-mem"),
    cycles("branch", "cycle-stack component branch"),
    cycles("ifetch", "cycle-stack component ifetch"),
    cycles("mem-l1d", "cycle-stack component mem-l1d"),
    cycles("mem-l1-neighbor", "cycle-stack component mem-l1-neighbor"),
    cycles("mem-l2", "cycle-stack component mem-l2"),
    cycles("mem-l2-neighbor", "cycle-stack component mem-l2-neighbor"),
    cycles("mem-l3", "cycle-stack component mem-l3"),
    cycles("mem-off-socket", "cycle-stack component mem-off-socket"),
    cycles("mem-dram", "cycle-stack component mem-dram"),
    cycles("mem-tlb", "cycle-stack component mem-tlb"),
    cycles("sync-barrier", "cycle-stack component sync-barrier"),
    cycles("sync-crit-sect", "cycle-stack component sync-crit-sect"),
    cycles("sync-join", "cycle-stack component sync-join"),
    cycles("sync-cond", "cycle-stack component sync-cond"),
    cycles("imbalance-start", "cycle-stack component imbalance-start"),
    cycles("imbalance-end", "cycle-stack component imbalance-end"),
    count("instructions", "instructions", "instructions executed"),
    count("visits", "visits", "entries into the call path"),
    count(
        "l1-misses",
        "misses",
        "L1 misses of the path's memory accesses",
    ),
    count(
        "l2-misses",
        "misses",
        "L2 misses of the path's memory accesses",
    ),
    count(
        "l3-misses",
        "misses",
        "L3 misses of the path's memory accesses",
    ),
    per_visit(
        "min-visit",
        Combine::Min,
        "fewest cycles of one visit, callees and waits included (0 if never timed)",
    ),
    per_visit(
        "max-visit",
        Combine::Max,
        "most cycles of one visit, callees and waits included",
    ),
];

/// What a region of the call tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegionKind {
    /// The artificial root every thread starts in.
    Root,
    /// A function of the source map.
    Function,
    /// A basic block (block-level profiles).
    Block,
    /// A synchronization operation (barrier, lock, condition wait, join) as a call path under
    /// the code that called it, the way Score-P instruments it: its cycles are the waiting.
    Sync,
}

/// The synchronization regions, by the cycle-stack component whose waiting they hold:
/// `(component, region name)`. Score-P's pthread and OpenMP adapters name the calls
/// (`pthread_barrier_wait`, `!$omp barrier`, …); a trace records the operation, not the API.
pub const SYNC_REGIONS: [(Component, &str); 4] = [
    (Component::SyncBarrier, "barrier"),
    (Component::SyncCritSect, "lock"),
    (Component::SyncCond, "condition wait"),
    (Component::SyncJoin, "join"),
];

/// A code region: the root, a function or a basic block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Region {
    /// Display name (`main`, or `phases_worker bb2` for a block).
    pub name: String,
    /// Kind.
    pub kind: RegionKind,
    /// Source file ("" when unknown).
    pub file: String,
    /// First and last source line (0 when unknown).
    pub lines: (u32, u32),
}

/// One call-tree node: a call path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CallNode {
    /// The caller's node; `None` for the root (node 0).
    pub parent: Option<u32>,
    /// Index into [`Profile::regions`].
    pub region: u32,
}

/// One thread's profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadProfile {
    /// Thread id.
    pub thread: u32,
    /// `values[node]`: exclusive values of the call path (`len` = number of nodes).
    pub values: Vec<Values>,
}

/// Per-thread call-path profiles over one call tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// Regions referred to by nodes.
    pub regions: Vec<Region>,
    /// The call tree; node 0 is the root, every parent precedes its children.
    pub nodes: Vec<CallNode>,
    /// One profile per thread, in thread order.
    pub threads: Vec<ThreadProfile>,
    /// True when paths end in basic blocks.
    pub block_level: bool,
}

impl Profile {
    /// Children of every node, in node order.
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut ch = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(p) = n.parent {
                ch[p as usize].push(i as u32);
            }
        }
        ch
    }

    /// Nodes in depth-first pre-order (children in node order), with their depth.
    pub fn preorder(&self) -> Vec<(u32, usize)> {
        let ch = self.children();
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<(u32, usize)> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.parent.is_none())
            .map(|(i, _)| (i as u32, 0))
            .rev()
            .collect();
        while let Some((n, d)) = stack.pop() {
            out.push((n, d));
            for &c in ch[n as usize].iter().rev() {
                stack.push((c, d + 1));
            }
        }
        out
    }

    /// The region names from the root to `node`, joined by ` / ` (root omitted).
    pub fn path_name(&self, node: u32) -> String {
        let mut parts = Vec::new();
        let mut n = Some(node);
        while let Some(i) = n {
            let nd = self.nodes[i as usize];
            if nd.parent.is_some() {
                parts.push(self.regions[nd.region as usize].name.as_str());
            }
            n = nd.parent;
        }
        parts.reverse();
        if parts.is_empty() {
            self.regions[self.nodes[node as usize].region as usize]
                .name
                .clone()
        } else {
            parts.join(" / ")
        }
    }

    /// Thread `t`'s values summed over every call path.
    pub fn thread_total(&self, t: usize) -> Values {
        let mut s = [0.0; METRICS];
        for v in &self.threads[t].values {
            for (a, b) in s.iter_mut().zip(v) {
                *a += b;
            }
        }
        s
    }
}

const NONE: u32 = u32::MAX;
/// Key bit marking a block child (function children use the function index).
const BLOCK_KEY: u32 = 1 << 31;
/// Key bit marking a synchronization child; the low bits index [`SYNC_REGIONS`].
const SYNC_KEY: u32 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Pending {
    None,
    /// The previous instruction was this call.
    Call(u32),
    /// The previous instruction was a return.
    Return,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    func: u32,
    /// The function's node.
    node: u32,
    /// The thread's total cycles when the visit began.
    entry: f64,
}

struct ThreadState {
    frames: Vec<Frame>,
    /// The current path (the top frame's node, or its block child).
    cur: u32,
    /// Function of the top frame (`NONE` before the first instruction).
    top_func: u32,
    /// Block of the current path (block level only).
    cur_block: u32,
    pending: Pending,
    /// The stack at the last change of path.
    last: CycleStack,
    values: Vec<Values>,
    /// Per node, visits whose length was recorded into min-visit/max-visit.
    timed: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    parent: u32,
    /// Function index, or `BLOCK_KEY | block`.
    key: u32,
}

/// The profile collector: feed it to the engine, then call [`ProfileCollector::finish`].
pub struct ProfileCollector {
    block_level: bool,
    // Per static instruction (flat arrays, read on every instruction).
    func_of: Vec<u32>,
    kind_of: Vec<BranchKind>,
    block_of: Vec<u32>,
    block_start: Vec<bool>,
    pc_of: Vec<u64>,
    size_of: Vec<u8>,
    // Blocks: function and index within the function.
    block_func: Vec<u32>,
    block_local: Vec<u32>,
    blocks_per_func: Vec<u32>,
    // Names.
    functions: Vec<String>,
    files: Vec<String>,
    func_loc: Vec<(u32, u32, u32)>,
    block_lines: Vec<(u32, u32)>,
    // The call tree.
    nodes: Vec<Node>,
    index: HashMap<(u32, u32), u32>,
    block_children: Vec<Vec<u32>>,
    threads: Vec<ThreadState>,
}

impl ProfileCollector {
    /// A collector for `threads` threads of `program`; `block_level` appends basic blocks to
    /// call paths.
    pub fn new(program: &Program, threads: usize, block_level: bool) -> ProfileCollector {
        let nfunc = program.source.functions.len() as u32;
        let unknown = nfunc; // instructions without a known function
        let mut functions = program.source.functions.clone();
        functions.push("<unknown>".to_string());
        let n = program.insts.len();
        let mut func_of = Vec::with_capacity(n);
        let mut kind_of = Vec::with_capacity(n);
        let mut block_of = Vec::with_capacity(n);
        let mut block_start = Vec::with_capacity(n);
        let mut pc_of = Vec::with_capacity(n);
        let mut size_of = Vec::with_capacity(n);
        let mut block_func = Vec::new();
        let mut block_local = Vec::new();
        let mut block_lines: Vec<(u32, u32)> = Vec::new();
        let mut blocks_per_func = vec![0u32; functions.len()];
        let mut func_loc = vec![(SrcLoc::UNKNOWN, 0u32, 0u32); functions.len()];
        for (i, s) in program.insts.iter().enumerate() {
            let f = if s.loc.function < nfunc {
                s.loc.function
            } else {
                unknown
            };
            // A block starts where the trace says so, and wherever the function changes.
            let starts = i == 0 || s.block_start || func_of[i - 1] != f;
            if starts {
                block_func.push(f);
                block_local.push(blocks_per_func[f as usize]);
                blocks_per_func[f as usize] += 1;
                block_lines.push((s.loc.line, s.loc.line));
            }
            let b = block_func.len() as u32 - 1;
            if s.loc.line > 0 {
                let bl = &mut block_lines[b as usize];
                if bl.0 == 0 || s.loc.line < bl.0 {
                    bl.0 = s.loc.line;
                }
                bl.1 = bl.1.max(s.loc.line);
                let fl = &mut func_loc[f as usize];
                if fl.0 == SrcLoc::UNKNOWN {
                    fl.0 = s.loc.file;
                }
                if fl.1 == 0 || s.loc.line < fl.1 {
                    fl.1 = s.loc.line;
                }
                fl.2 = fl.2.max(s.loc.line);
            }
            func_of.push(f);
            kind_of.push(s.branch);
            block_of.push(b);
            block_start.push(s.block_start);
            pc_of.push(s.pc);
            size_of.push(s.size);
        }
        ProfileCollector {
            block_level,
            func_of,
            kind_of,
            block_of,
            block_start,
            pc_of,
            size_of,
            block_func,
            block_local,
            blocks_per_func,
            functions,
            files: program.source.files.clone(),
            func_loc,
            block_lines,
            nodes: vec![Node {
                parent: NONE,
                key: NONE,
            }],
            index: HashMap::new(),
            block_children: vec![Vec::new()],
            threads: (0..threads)
                .map(|_| ThreadState {
                    frames: Vec::new(),
                    cur: 0,
                    top_func: NONE,
                    cur_block: NONE,
                    pending: Pending::None,
                    last: CycleStack::default(),
                    values: Vec::new(),
                    timed: Vec::new(),
                })
                .collect(),
        }
    }

    fn intern(&mut self, parent: u32, key: u32) -> u32 {
        if let Some(&n) = self.index.get(&(parent, key)) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push(Node { parent, key });
        self.block_children.push(Vec::new());
        self.index.insert((parent, key), n);
        n
    }

    /// The block child of function node `fnode` for block `b` (dense table per node).
    fn block_node(&mut self, fnode: u32, b: u32) -> u32 {
        let local = self.block_local[b as usize] as usize;
        let table = &self.block_children[fnode as usize];
        if let Some(&c) = table.get(local)
            && c != NONE
        {
            return c;
        }
        let c = self.intern(fnode, BLOCK_KEY | b);
        let table = &mut self.block_children[fnode as usize];
        if table.is_empty() {
            let f = self.block_func[b as usize] as usize;
            *table = vec![NONE; self.blocks_per_func[f] as usize];
        }
        table[local] = c;
        c
    }

    /// The path changes (or may change) at instruction `s` of thread `tid`: charge the cycles
    /// since the last change to the current path, then follow the call, return or jump.
    #[cold]
    fn switch(&mut self, tid: usize, s: usize, stack: &CycleStack) {
        let f = self.func_of[s];
        let th = &mut self.threads[tid];
        let pending = std::mem::replace(&mut th.pending, Pending::None);
        let mut visit_fn = None;
        if th.frames.is_empty() {
            // The thread's first instruction: its stack so far (time before it started) goes
            // to this first path, so `last` stays at zero.
            let node = self.intern(0, f);
            let th = &mut self.threads[tid];
            th.frames.push(Frame {
                func: f,
                node,
                entry: stack.total(),
            });
            visit_fn = Some(node);
        } else {
            let (cur, last) = (th.cur, th.last);
            self.charge(tid, cur, stack, &last);
            let th = &mut self.threads[tid];
            th.last = *stack;
            match pending {
                Pending::Call(c) => {
                    let c = c as usize;
                    let fallthrough = self.pc_of[c] + self.size_of[c] as u64;
                    if self.pc_of[s] != fallthrough || f != th.top_func {
                        let parent = th.cur;
                        let node = self.intern(parent, f);
                        let th = &mut self.threads[tid];
                        th.frames.push(Frame {
                            func: f,
                            node,
                            entry: stack.total(),
                        });
                        visit_fn = Some(node);
                    }
                }
                Pending::Return => {
                    if th.frames.len() > 1 {
                        let done = th.frames.pop().expect("a frame");
                        self.end_visit(tid, done, stack.total());
                    }
                }
                Pending::None => {}
            }
            let th = &mut self.threads[tid];
            let top = *th.frames.last().expect("a thread with frames");
            if top.func != f {
                let deeper = th.frames[..th.frames.len() - 1]
                    .iter()
                    .rposition(|fr| fr.func == f);
                let now = stack.total();
                match deeper {
                    Some(i) => {
                        let done: Vec<Frame> = th.frames.drain(i + 1..).collect();
                        for fr in done.into_iter().rev() {
                            self.end_visit(tid, fr, now);
                        }
                    }
                    None => {
                        self.end_visit(tid, top, now);
                        let parent = self.nodes[top.node as usize].parent;
                        let node = self.intern(parent, f);
                        let th = &mut self.threads[tid];
                        *th.frames.last_mut().expect("a frame") = Frame {
                            func: f,
                            node,
                            entry: now,
                        };
                        visit_fn = Some(node);
                    }
                }
            }
        }
        let top = *self.threads[tid].frames.last().expect("a frame");
        let (cur, block) = if self.block_level {
            let b = self.block_of[s];
            (self.block_node(top.node, b), b)
        } else {
            (top.node, NONE)
        };
        let block_visit = self.block_level
            && (visit_fn.is_some() || block != self.threads[tid].cur_block || self.block_start[s]);
        let th = self.grown(tid);
        if let Some(n) = visit_fn {
            th.values[n as usize][M_VISITS] += 1.0;
        }
        if block_visit {
            th.values[cur as usize][M_VISITS] += 1.0;
        }
        th.cur = cur;
        th.top_func = top.func;
        th.cur_block = block;
    }

    /// Closes every thread's last path with its final stack from `result` and returns the
    /// profile.
    pub fn finish(mut self, result: &RunResult) -> Profile {
        let nnodes = self.nodes.len();
        let mut to_charge = Vec::with_capacity(self.threads.len());
        for (t, th) in self.threads.iter_mut().enumerate() {
            th.values.resize(nnodes, [0.0; METRICS]);
            let fin = result.threads.get(t).map(|r| r.stack).unwrap_or_default();
            // A thread that executed nothing is charged at the root.
            let cur = if th.frames.is_empty() {
                0
            } else {
                th.cur as usize
            };
            let last = th.last;
            to_charge.push((t, cur as u32, fin, last));
        }
        for (t, cur, fin, last) in to_charge {
            self.charge(t, cur, &fin, &last);
            let open = std::mem::take(&mut self.threads[t].frames);
            for fr in open.into_iter().rev() {
                self.end_visit(t, fr, fin.total());
            }
        }
        let nnodes = self.nodes.len();
        for th in &mut self.threads {
            th.values.resize(nnodes, [0.0; METRICS]);
            th.values[0][M_VISITS] += 1.0;
            for v in &mut th.values {
                derive(v);
            }
        }
        // Regions: the root, then each function and block in order of first use.
        let mut regions = vec![Region {
            name: "threads".to_string(),
            kind: RegionKind::Root,
            file: String::new(),
            lines: (0, 0),
        }];
        let mut region_of_key: HashMap<u32, u32> = HashMap::new();
        let mut nodes = Vec::with_capacity(nnodes);
        for (i, n) in self.nodes.iter().enumerate() {
            if i == 0 {
                nodes.push(CallNode {
                    parent: None,
                    region: 0,
                });
                continue;
            }
            let region = *region_of_key.entry(n.key).or_insert_with(|| {
                regions.push(self.region(n.key));
                regions.len() as u32 - 1
            });
            nodes.push(CallNode {
                parent: Some(n.parent),
                region,
            });
        }
        Profile {
            regions,
            nodes,
            threads: self
                .threads
                .into_iter()
                .enumerate()
                .map(|(t, th)| ThreadProfile {
                    thread: t as u32,
                    values: th.values,
                })
                .collect(),
            block_level: self.block_level,
        }
    }

    /// Charges thread `tid` the cycles `now − last` on path `cur`: the waiting of each
    /// synchronization component to that operation's region under `cur`, the rest to `cur`.
    fn charge(&mut self, tid: usize, cur: u32, now: &CycleStack, last: &CycleStack) {
        let mut own = *now;
        for (k, &(c, _)) in SYNC_REGIONS.iter().enumerate() {
            let waited = now.0[c as usize] - last.0[c as usize];
            if waited != 0.0 {
                let node = self.sync_node(tid, cur, k);
                self.threads[tid].values[node as usize][M_COMPONENT + c as usize] += waited;
                own.0[c as usize] = last.0[c as usize];
            }
        }
        charge(&mut self.threads[tid].values[cur as usize], &own, last);
    }

    /// The synchronization child `k` of path `cur` for thread `tid`, its row allocated.
    fn sync_node(&mut self, tid: usize, cur: u32, k: usize) -> u32 {
        let node = self.intern(cur, SYNC_KEY | k as u32);
        self.grown(tid);
        node
    }

    /// Thread `tid`'s state with a row (values, timed visits) for every node of the tree.
    fn grown(&mut self, tid: usize) -> &mut ThreadState {
        let n = self.nodes.len();
        let th = &mut self.threads[tid];
        if th.values.len() < n {
            th.values.resize(n, [0.0; METRICS]);
            th.timed.resize(n, 0);
        }
        th
    }

    /// A wait of kind `c` by thread `tid` lasting `cycles`: a visit of that synchronization
    /// region under the thread's current path (its cycles arrive with the thread's stack).
    fn visit_sync(&mut self, tid: u32, c: Component, cycles: f64) {
        let t = tid as usize;
        if self.threads[t].frames.is_empty() {
            return;
        }
        if let Some(k) = SYNC_REGIONS.iter().position(|&(s, _)| s == c) {
            let cur = self.threads[t].cur;
            let node = self.sync_node(t, cur, k);
            self.threads[t].values[node as usize][M_VISITS] += 1.0;
            self.time_visit(t, node, cycles);
        }
    }

    /// Frame `fr` of thread `tid` ends with the thread's total cycles at `now`.
    fn end_visit(&mut self, tid: usize, fr: Frame, now: f64) {
        self.time_visit(tid, fr.node, (now - fr.entry).max(0.0));
    }

    /// Records one visit of `cycles` on `node` into min-visit and max-visit.
    fn time_visit(&mut self, tid: usize, node: u32, cycles: f64) {
        let th = self.grown(tid);
        let v = &mut th.values[node as usize];
        let k = &mut th.timed[node as usize];
        if *k == 0 {
            v[M_MIN_VISIT] = cycles;
            v[M_MAX_VISIT] = cycles;
        } else {
            v[M_MIN_VISIT] = v[M_MIN_VISIT].min(cycles);
            v[M_MAX_VISIT] = v[M_MAX_VISIT].max(cycles);
        }
        *k += 1;
    }

    fn region(&self, key: u32) -> Region {
        let file_name = |f: u32| self.files.get(f as usize).cloned().unwrap_or_default();
        if key & SYNC_KEY != 0 && key & BLOCK_KEY == 0 {
            return Region {
                name: SYNC_REGIONS[(key & !SYNC_KEY) as usize].1.to_string(),
                kind: RegionKind::Sync,
                file: String::new(),
                lines: (0, 0),
            };
        }
        if key & BLOCK_KEY != 0 {
            let b = (key & !BLOCK_KEY) as usize;
            let f = self.block_func[b] as usize;
            Region {
                name: format!("{} bb{}", self.functions[f], self.block_local[b]),
                kind: RegionKind::Block,
                file: file_name(self.func_loc[f].0),
                lines: self.block_lines[b],
            }
        } else {
            let f = key as usize;
            Region {
                name: self.functions[f].clone(),
                kind: RegionKind::Function,
                file: file_name(self.func_loc[f].0),
                lines: (self.func_loc[f].1, self.func_loc[f].2),
            }
        }
    }
}

/// Adds `now − last` of every component to `v`.
fn charge(v: &mut Values, now: &CycleStack, last: &CycleStack) {
    for c in 0..COMPONENTS {
        v[M_COMPONENT + c] += now.0[c] - last.0[c];
    }
}

/// Fills the derived cycle metrics (total, work, sync) from the components.
fn derive(v: &mut Values) {
    let (mut work, mut sync) = (0.0, 0.0);
    for c in Component::ALL {
        let x = v[M_COMPONENT + c as usize];
        if c.is_sync() {
            sync += x;
        } else {
            work += x;
        }
    }
    v[M_CYCLES] = work + sync;
    v[M_WORK] = work;
    v[M_SYNC] = sync;
}

impl Observer for ProfileCollector {
    type Part<'a> = sim_core::NoParts;
    #[inline]
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, stack: &CycleStack) {
        let s = sidx as usize;
        let t = tid as usize;
        let th = &self.threads[t];
        if th.pending != Pending::None
            || self.func_of[s] != th.top_func
            || (self.block_level && (self.block_of[s] != th.cur_block || self.block_start[s]))
        {
            self.switch(t, s, stack);
        }
        let th = &mut self.threads[t];
        let v = &mut th.values[th.cur as usize];
        v[M_INSTRUCTIONS] += 1.0;
        v[M_MISSES] += r.misses[0] as f64;
        v[M_MISSES + 1] += r.misses[1] as f64;
        v[M_MISSES + 2] += r.misses[2] as f64;
        match self.kind_of[s] {
            BranchKind::DirectCall | BranchKind::IndirectCall => th.pending = Pending::Call(sidx),
            BranchKind::Return => th.pending = Pending::Return,
            _ => {}
        }
    }

    fn barrier(&mut self, tid: u32, _site: u32, arrival: f64, release: f64) {
        self.visit_sync(tid, Component::SyncBarrier, release - arrival);
    }

    fn wait(&mut self, tid: u32, kind: Component, from: f64, until: f64) {
        self.visit_sync(tid, kind, until - from);
    }

    fn join(&mut self, tid: u32, _site: u32, _child: u32, arrival: f64, release: f64) {
        self.visit_sync(tid, Component::SyncJoin, release - arrival);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_frontend::model::{OpClass, StaticInst};

    /// A program of functions laid out one after another; `code[f]` lists each instruction's
    /// branch kind and whether it starts a block.
    fn program(code: &[&[(BranchKind, bool)]]) -> (Program, Vec<Vec<u32>>) {
        let mut p = Program::default();
        let mut idx = Vec::new();
        let mut pc = 0x1000u64;
        for (f, insts) in code.iter().enumerate() {
            p.source.functions.push(format!("f{f}"));
            let mut v = Vec::new();
            for (i, &(kind, bs)) in insts.iter().enumerate() {
                let mut s = StaticInst::new(pc, 4, OpClass::IntAlu);
                s.branch = kind;
                s.block_start = bs || i == 0;
                s.loc = SrcLoc {
                    function: f as u32,
                    file: 0,
                    line: 10 * f as u32 + i as u32 + 1,
                };
                pc += 4;
                v.push(p.insts.len() as u32);
                p.insts.push(s);
            }
            idx.push(v);
        }
        p.source.files.push("t.c".into());
        (p, idx)
    }

    /// Feeds thread 0 the instructions `seq`, each adding one base cycle, and returns the
    /// profile with the final stack equal to the last one reported.
    fn run(p: &Program, seq: &[u32], block_level: bool) -> Profile {
        let mut c = ProfileCollector::new(p, 1, block_level);
        let mut stack = CycleStack::default();
        for &s in seq {
            stack.add(Component::Base, 1.0);
            c.inst(0, s, &InstResult::default(), &stack);
        }
        let result = RunResult {
            cycles: stack.total(),
            threads: vec![sim_core::ThreadResult {
                thread: 0,
                core: 0,
                instructions: seq.len() as u64,
                cycles: stack.total(),
                stack,
                branches: 0,
                mispredictions: 0,
                tlb_misses: 0,
                page_walks: 0,
                end: stack.total(),
                after_roi: 0,
            }],
            memory_cores: Vec::new(),
            caches: Vec::new(),
            dram: Vec::new(),
            sync: Default::default(),
        };
        c.finish(&result)
    }

    /// `(path, visits, instructions, cycles)` of every node with instructions or visits.
    fn rows(p: &Profile) -> Vec<(String, f64, f64, f64)> {
        p.preorder()
            .into_iter()
            .skip(1)
            .map(|(n, _)| {
                let v = &p.threads[0].values[n as usize];
                (p.path_name(n), v[M_VISITS], v[M_INSTRUCTIONS], v[M_CYCLES])
            })
            .collect()
    }

    fn row(path: &str, visits: f64, insts: f64, cycles: f64) -> (String, f64, f64, f64) {
        (path.to_string(), visits, insts, cycles)
    }

    #[test]
    fn calls_and_returns_nest_and_cycles_go_to_the_path_until_the_next_change() {
        use BranchKind::*;
        // f0: a, call f1, b ; f1: x, ret
        let (p, i) = program(&[
            &[(None, false), (DirectCall, false), (None, true)],
            &[(None, false), (Return, false)],
        ]);
        let seq = [
            i[0][0], i[0][1], i[1][0], i[1][1], i[0][2], i[0][0], i[0][1],
        ];
        let pr = run(&p, &seq, false);
        // The switch at x charges a, call and x's dispatch to f0 (3 cycles); the switch at b
        // charges ret and b's dispatch to f1 (2); the end closes f0 with a and call (2).
        assert_eq!(
            rows(&pr),
            vec![row("f0", 1.0, 5.0, 5.0), row("f0 / f1", 1.0, 2.0, 2.0)]
        );
        assert_eq!(pr.thread_total(0)[M_CYCLES], seq.len() as f64);
    }

    #[test]
    fn a_call_to_an_untraced_function_changes_nothing() {
        use BranchKind::*;
        let (p, i) = program(&[&[(None, false), (DirectCall, false), (None, true)]]);
        let pr = run(&p, &[i[0][0], i[0][1], i[0][2]], false);
        assert_eq!(rows(&pr), vec![row("f0", 1.0, 3.0, 3.0)]);
    }

    #[test]
    fn a_jump_into_another_function_is_a_tail_call_and_a_jump_back_unwinds() {
        use BranchKind::*;
        // f0 jumps to f1 (tail call: f1 replaces f0 at the root), f1 jumps back to f0 (again a
        // root-level replacement, a second visit of f0).
        let (p, i) = program(&[
            &[(None, false), (DirectJump, false)],
            &[(DirectJump, false)],
        ]);
        let pr = run(&p, &[i[0][0], i[0][1], i[1][0], i[0][0]], false);
        assert_eq!(
            rows(&pr),
            vec![row("f0", 2.0, 3.0, 3.0), row("f1", 1.0, 1.0, 1.0)]
        );
        // Inside a callee, a jump to the caller's function unwinds (no new visit).
        let (p, i) = program(&[
            &[(DirectCall, false), (None, true)],
            &[(None, false)],
            &[(None, false)],
        ]);
        let pr = run(&p, &[i[0][0], i[1][0], i[2][0], i[0][1]], false);
        assert_eq!(
            rows(&pr),
            vec![
                row("f0", 1.0, 2.0, 2.0),
                row("f0 / f1", 1.0, 1.0, 1.0),
                row("f0 / f2", 1.0, 1.0, 1.0),
            ]
        );
    }

    #[test]
    fn returns_without_calls_keep_the_root_frame() {
        use BranchKind::*;
        // The ROI begins inside f1 (no call seen): its return lands in f0, which replaces it.
        let (p, i) = program(&[&[(None, false), (Return, false)], &[(Return, false)]]);
        let pr = run(&p, &[i[1][0], i[0][0], i[0][1], i[0][0]], false);
        assert_eq!(
            rows(&pr),
            vec![row("f1", 1.0, 1.0, 2.0), row("f0", 1.0, 3.0, 2.0)]
        );
    }

    #[test]
    fn block_level_paths_end_in_blocks_and_count_block_entries() {
        use BranchKind::*;
        // f0: bb0 = {a, br}, bb1 = {b}; a loop bb0 bb0 bb1, then a call from bb1 into f1.
        let (p, i) = program(&[
            &[(None, false), (Conditional, false), (DirectCall, true)],
            &[(Return, false)],
        ]);
        let seq = [i[0][0], i[0][1], i[0][0], i[0][1], i[0][2], i[1][0]];
        let pr = run(&p, &seq, true);
        assert_eq!(
            rows(&pr),
            vec![
                row("f0", 1.0, 0.0, 0.0),
                row("f0 / f0 bb0", 2.0, 4.0, 5.0),
                row("f0 / f0 bb1", 1.0, 1.0, 1.0),
                row("f0 / f0 bb1 / f1", 1.0, 0.0, 0.0),
                row("f0 / f0 bb1 / f1 / f1 bb0", 1.0, 1.0, 0.0),
            ]
        );
        assert_eq!(pr.thread_total(0)[M_CYCLES], seq.len() as f64);
        assert_eq!(pr.thread_total(0)[M_INSTRUCTIONS], seq.len() as f64);
    }
}
