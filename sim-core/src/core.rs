//! The interval core model with critical-path cycle accounting (cycle-stacks paper §2.1–2.2).
//!
//! **Timing.** The core keeps a window of the last `rob_size` instructions. Instruction `i` is
//! dispatched at `d_i = max(d_{i-1} + 1/width, commit time of the instruction rob_size places
//! older, front-end redirect)`: the dispatch width, the full window, and miss events that stop
//! the front end (a mispredicted branch redirects fetch at its completion plus the front-end
//! depth — the branch resolution time plus the refill; an I-cache miss delays fetch by its
//! latency); with a `scheduler_size` S, also not before the earliest issue of the S
//! instructions waiting for their operands when all S scheduler entries are held (an
//! instruction that waits more than a cycle holds one from its dispatch until it issues: an
//! access when its address is ready, an operation when its operands are; those times kept
//! in order). It starts when its sources are ready (`max(d_i, ready(srcs))`; a serializing
//! instruction also waits for everything older to commit); its loads start when the address
//! registers are ready, when the trace tells them apart (`StaticInst::addr_srcs`: a
//! load-op instruction's load micro-op does not wait for the other operand), and the
//! operation completes one cycle after its last other operand if that is later than the
//! load's data; an operation that takes several cycles (the decoder keeps the class of a
//! multiply, divide or floating-point operation on a loaded value: `addsd xmm0, [rax]`)
//! takes its latency after the later of the two. It completes after its latency (loads:
//! the memory model's latency, or later when the load reads bytes an older store wrote: the
//! store's data plus `[core.store_forward]`, a dependence through memory; a long-latency
//! load needs one of `outstanding_loads` miss slots, unless it merges into a miss in flight
//! to the same line, whose arrival it waits for), and commits in order. Independent long-latency loads within the window therefore
//! overlap (memory-level parallelism), bounded by the miss slots and the window; a dependence
//! chain limits the rate to window ÷ chain length; an independent stream runs at the dispatch
//! width.
//!
//! **Accounting.** Each instruction entering the window extends the critical path — the
//! latest completion time so far — by `max(0, completion − previous end)`; that increase is
//! credited to the instruction's type (`depend-int`, `depend-fp`, the `mem-*` component of
//! the level that served its load, or `depend-mem` for a load whose value an older store
//! forwarded later than the cache would have) and removed when the instruction leaves the
//! window.
//! Instructions that complete in the shadow of older ones add nothing. The time between two
//! dispatches is charged:
//! * to `base` when the dispatch width bound it;
//! * over the current critical-path contributors, in proportion, when the full window bound it
//!   (to `base` if there are none);
//! * to `branch` or `ifetch` for the part a front-end redirect added.
//!
//! Draining the window before a synchronization point or at the end is charged like a full
//! window; waiting is charged to the matching sync component by the engine. A lock's atomic,
//! which the engine executes, is an entry of the window ([`Core::atomic`]): it performs once
//! everything older has completed and younger stores perform after it ([`Core::fence`]);
//! younger operations do not wait for it, nor do younger loads, which x86 cores execute
//! speculatively past a locked instruction, except loads of its own line (`line_fence`) and
//! what the lock orders: a load after an acquisition waits until the lock was free (the
//! previous holder's stores done) or, if the thread waited, until it has the lock, unless its
//! bytes come from the thread's own stores made after it ([`Core::own_since_fence`]). Every
//! advance of the core's clock is charged exactly once, so the stack sums to the elapsed
//! cycles.

use std::collections::VecDeque;

use sim_frontend::model::{BranchKind, MemAccess, NO_SIDX, OpClass, StaticInst};
use sim_memory::{Kind, Memory, Port, Private, Reach};

use serde::{Deserialize, Serialize};

use crate::bpred::{BranchPredictor, Predictor};
use crate::stack::{COMPONENTS, Component, CycleStack};
use crate::tlb::{Tlb, TlbParams};

/// Address sources, other sources and destinations a [`TimingInst`] holds in place; an
/// instruction with more of any kind keeps them all in [`TimingTable::regs`] instead (the
/// traced programs measured have none: at most 2, 3 and 3).
const ADDR_SRCS: usize = 2;
const OTHER_SRCS: usize = 3;
const DSTS: usize = 3;

/// Slots of a core's register ready times: the ISA's 256 registers, [`NO_SRC`] and
/// [`NO_DST`], rounded up to a power of two so that an index masked with `REG_SLOTS - 1`
/// needs no bounds check.
const REG_SLOTS: usize = 512;

/// The slot an unused source place reads: always ready at time 0, which adds nothing to a
/// maximum of times (times are never negative).
const NO_SRC: u16 = 256;

/// The slot an unused destination place writes; nothing reads it.
const NO_DST: u16 = 257;

/// [`TimingInst::wide`] of an instruction whose registers fit in place.
const NOT_WIDE: u32 = u32::MAX;

/// What the core needs of one static instruction, 32 bytes: the simulation reads one of
/// these per instruction, where a [`StaticInst`] is two host cache lines and three heap
/// blocks. The registers are in place, unused places naming [`NO_SRC`] or [`NO_DST`], so the
/// core reads and writes a fixed number of ready times without a loop whose trip count
/// changes from one instruction to the next (a host branch mispredicted often).
#[derive(Debug, Clone, Copy)]
pub struct TimingInst {
    /// Program counter.
    pub pc: u64,
    /// Sources the loads wait for (`StaticInst::addr_srcs`, or all).
    addr: [u16; ADDR_SRCS],
    /// The other sources.
    other: [u16; OTHER_SRCS],
    /// Destinations.
    dst: [u16; DSTS],
    /// [`NOT_WIDE`], or where the registers of an instruction with more than fit in place
    /// start in [`TimingTable::regs`]: counts of sources, address sources and destinations,
    /// then the sources, then the destinations.
    wide: u32,
    /// Encoded length in bytes.
    pub size: u8,
    /// Operation class.
    pub class: OpClass,
    /// Control-flow kind.
    pub branch: BranchKind,
    /// [`HAS_OTHER`] and [`VECTOR_DST`].
    flags: u8,
}

/// [`TimingInst::flags`]: it has sources the loads do not wait for.
const HAS_OTHER: u8 = 1;
/// [`TimingInst::flags`]: it writes a floating-point or vector register (its loads take
/// `store_forward.fp`).
const VECTOR_DST: u8 = 2;

/// The vector registers of the x86-64 and synthetic numbering (docs/trace-format.md).
const VECTOR_REGS: std::ops::RangeInclusive<u8> = 32..=63;

/// Slots of a core's table of recent stores (see [`Core::forwarded`]), one per 8-byte word,
/// direct-mapped: more than the stores a window holds (a 512-entry window of code with one
/// store in four holds 128).
const FWD_SLOTS: usize = 256;

/// One store of a core's table of recent stores, 24 bytes: the bytes it wrote (`key`: the
/// address shifted left by 8 over the size; 0, no bytes, in an empty slot), when its
/// data was ready, and how many locked instructions were older than it.
#[derive(Debug, Clone, Copy, Default)]
struct StoreRec {
    key: u64,
    data: f64,
    /// [`Core::fences`] when the store was made: a store made after the latest locked
    /// instruction forwards to a load that need not wait for it.
    fences: u64,
}

impl StoreRec {
    /// The bytes it wrote, `[first, end)`.
    #[inline(always)]
    fn span(&self) -> (u64, u64) {
        (self.key >> 8, (self.key >> 8) + (self.key & 0xff))
    }

    /// Whether it wrote every byte of `[start, end)`.
    #[inline(always)]
    fn covers(&self, start: u64, end: u64) -> bool {
        let (s0, s1) = self.span();
        s0 <= start && end <= s1
    }
}

/// A program's static instructions as the core reads them (see [`TimingInst`]), indexed
/// like `Program::insts`, and their branch targets.
#[derive(Debug, Clone, Default)]
pub struct TimingTable {
    insts: Vec<TimingInst>,
    /// Target PC of each direct branch; 0 for other instructions. Only the predictor reads
    /// it, so it is kept apart from what the core reads.
    targets: Vec<u64>,
    /// Registers of the wide instructions (see [`TimingInst::wide`]).
    regs: Vec<u8>,
}

impl TimingTable {
    /// The timing view of `insts`, instructions of a trace of `isa` (whose register numbers
    /// tell the vector registers apart: not in `champsim` traces, whose loads all forward as
    /// integer loads).
    ///
    /// # Panics
    /// If an instruction has more than 255 source or destination registers (the trace
    /// format's bound).
    pub fn new(insts: &[StaticInst], isa: &str) -> TimingTable {
        let numbered = isa != sim_frontend::champsim::ISA;
        let mut t = TimingTable {
            insts: Vec::with_capacity(insts.len()),
            targets: Vec::with_capacity(insts.len()),
            regs: Vec::new(),
        };
        for s in insts {
            let n_src = u8::try_from(s.srcs.len()).expect("at most 255 sources");
            let n_dst = u8::try_from(s.dsts.len()).expect("at most 255 destinations");
            let n_addr = s.addr_srcs.map_or(n_src, |a| a.min(n_src));
            let (addr_srcs, other_srcs) = s.srcs.split_at(n_addr as usize);
            let mut inst = TimingInst {
                pc: s.pc,
                addr: [NO_SRC; ADDR_SRCS],
                other: [NO_SRC; OTHER_SRCS],
                dst: [NO_DST; DSTS],
                wide: NOT_WIDE,
                size: s.size,
                class: s.class,
                branch: s.branch,
                flags: if other_srcs.is_empty() { 0 } else { HAS_OTHER }
                    | if numbered && s.dsts.iter().any(|r| VECTOR_REGS.contains(r)) {
                        VECTOR_DST
                    } else {
                        0
                    },
            };
            if addr_srcs.len() <= ADDR_SRCS
                && other_srcs.len() <= OTHER_SRCS
                && s.dsts.len() <= DSTS
            {
                for (place, &r) in inst.addr.iter_mut().zip(addr_srcs) {
                    *place = r.into();
                }
                for (place, &r) in inst.other.iter_mut().zip(other_srcs) {
                    *place = r.into();
                }
                for (place, &r) in inst.dst.iter_mut().zip(&s.dsts) {
                    *place = r.into();
                }
            } else {
                inst.wide = t.regs.len() as u32;
                t.regs.extend_from_slice(&[n_src, n_addr, n_dst]);
                t.regs.extend_from_slice(&s.srcs);
                t.regs.extend_from_slice(&s.dsts);
            }
            t.insts.push(inst);
            t.targets.push(s.target);
        }
        t
    }

    /// Instruction `sidx`.
    #[inline]
    pub fn get(&self, sidx: u32) -> &TimingInst {
        &self.insts[sidx as usize]
    }

    /// The PC of instruction `sidx`, 0 for [`NO_SIDX`] (control went somewhere unknown).
    #[inline]
    pub fn pc(&self, sidx: u32) -> u64 {
        if sidx == NO_SIDX {
            0
        } else {
            self.insts[sidx as usize].pc
        }
    }

    /// The sources (address sources first, `.1` of them) and destinations of a wide
    /// instruction.
    fn wide_regs(&self, s: &TimingInst) -> (&[u8], usize, &[u8]) {
        let a = s.wide as usize;
        let (n_src, n_addr, n_dst) = (
            self.regs[a] as usize,
            self.regs[a + 1] as usize,
            self.regs[a + 2] as usize,
        );
        let srcs = &self.regs[a + 3..a + 3 + n_src];
        (
            srcs,
            n_addr,
            &self.regs[a + 3 + n_src..a + 3 + n_src + n_dst],
        )
    }
}

/// Predicts instruction `sidx` of `tt` with a thread's predictor `bp` and teaches it the
/// outcome (`taken`, and `next`, the static index of where control went): true if `bp`
/// mispredicted it (false for anything but a branch). A predictor sees its thread's
/// branches in program order and nothing else, so this may run ahead of the timing.
#[inline]
pub fn predict(bp: &mut Predictor, tt: &TimingTable, sidx: u32, taken: bool, next: u32) -> bool {
    let s = tt.get(sidx);
    if s.branch == BranchKind::None {
        return false;
    }
    if matches!(s.branch, BranchKind::DirectCall | BranchKind::IndirectCall) {
        bp.note_call(s.pc + s.size as u64);
    }
    let target = branch_target(tt, sidx, s, taken, next);
    bp.predict_and_update(s.pc, s.branch, taken, target)
}

/// The target a predictor learns: a conditional branch's static target whether taken or
/// not (the static predictor needs its direction), otherwise where control went (the
/// instruction `next`, looked up only then).
#[inline]
fn branch_target(tt: &TimingTable, sidx: u32, s: &TimingInst, taken: bool, next: u32) -> u64 {
    if s.branch == BranchKind::Conditional {
        tt.targets[sidx as usize]
    } else if taken {
        tt.pc(next)
    } else {
        s.pc + s.size as u64
    }
}

/// `[core]`: the settings of the interval model of one core, the same for every core; all
/// in cycles or counts. This is the one definition: the isim config layer validates these
/// fields and writes them back in this shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreConfig {
    /// Micro-operations dispatched per cycle at most.
    pub dispatch_width: u32,
    /// Reorder-buffer (window) entries.
    pub rob_size: u32,
    /// Cycles from fetch to dispatch: the refill time added to every branch misprediction.
    pub frontend_depth: u32,
    /// Load misses that may be outstanding at once (bounds memory-level parallelism).
    pub outstanding_loads: u32,
    /// Store misses that may be outstanding at once.
    pub outstanding_stores: u32,
    /// Loads whose latency exceeds this many cycles are long-latency miss events.
    pub long_latency_cutoff: u32,
    /// Scheduler (reservation station) entries: instructions dispatched and not yet issued,
    /// waiting for their operands, hold one each; dispatch stops while all are held. 0: no
    /// limit but the window's.
    pub scheduler_size: u32,
    /// Execution latency of each op class.
    pub latency: OpLatencies,
    /// Store-to-load forwarding.
    pub store_forward: StoreForward,
}

/// `[core.store_forward]`: when the value of a load that reads bytes an older store wrote is
/// ready, in cycles after that store's data is ready (a dependence through memory: a value
/// kept in a stack slot, a spilled variable, `h[k]++`). A load whose bytes lie within the
/// store's takes its value from the store (`int` or `fp` by the class of the register it
/// loads; 0 where the core renames memory); one that also needs bytes the store did not
/// write waits for the store to reach the cache (`partial`). Either way not before the load's
/// own latency from its issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreForward {
    /// Whether loads wait for older stores at all (`false`: a what-if in which every value
    /// stays in registers, and the model of isim before it tracked stores).
    pub enabled: bool,
    /// Into an integer register.
    pub int: u32,
    /// Into a floating-point or vector register.
    pub fp: u32,
    /// A load the store covers only in part.
    pub partial: u32,
}

/// `[core.latency]`: execution latency in cycles of each op class (≥ 1). Memory ops add
/// the latency the memory hierarchy returns on top of `load`/`store`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpLatencies {
    /// Integer add, logic, shift, compare, move.
    pub int_alu: u32,
    /// Integer multiply.
    pub int_mul: u32,
    /// Integer divide.
    pub int_div: u32,
    /// Floating-point add and subtract.
    pub fp_add: u32,
    /// Floating-point multiply.
    pub fp_mul: u32,
    /// Floating-point divide.
    pub fp_div: u32,
    /// Load (address generation; the cache access is added by the memory model).
    pub load: u32,
    /// Store (address generation; the cache access is added by the memory model).
    pub store: u32,
    /// Branches, jumps, calls and returns.
    pub branch: u32,
    /// Every other op class (nop, serializing, ...).
    pub other: u32,
    /// What a locked read-modify-write (a `lock`-prefixed instruction, an `xchg` with memory,
    /// the acquiring and releasing atomics of the locks the engine replays) takes beyond its
    /// cache access (≥ 0): the locked instruction performs once every older instruction has
    /// completed, holds its line meanwhile, and no younger memory access issues before it;
    /// younger operations that access no memory go on beside it.
    #[serde(default)]
    pub locked: u32,
}

impl OpLatencies {
    /// The latency of every op class, indexed by `OpClass as usize` (loads use the memory
    /// latency instead; a store's entry is its latency in the window).
    pub fn by_class(&self) -> [u32; OpClass::ALL.len()] {
        OpClass::ALL.map(|class| match class {
            OpClass::IntAlu => self.int_alu,
            OpClass::IntMul => self.int_mul,
            OpClass::IntDiv => self.int_div,
            OpClass::FpAdd => self.fp_add,
            OpClass::FpMul => self.fp_mul,
            OpClass::FpDiv => self.fp_div,
            OpClass::Load => self.load,
            OpClass::Store => self.store,
            OpClass::CondBranch | OpClass::Jump | OpClass::Call | OpClass::Return => self.branch,
            OpClass::Other | OpClass::Serializing => self.other,
        })
    }
}

/// What a core is built from: its settings and its data TLB.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreParams {
    /// The core's settings.
    pub settings: CoreConfig,
    /// The data TLB, or `None` for a machine without address translation.
    pub tlb: Option<TlbParams>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    commit: f64,
    inc: f64,
    /// The part of `inc` credited to `mem-tlb` (the rest goes to `comp`).
    tinc: f64,
    comp: u8,
}

/// What happened to one executed instruction (for probes).
#[derive(Debug, Clone, Copy, Default)]
pub struct InstResult {
    /// Dispatch time.
    pub dispatch: f64,
    /// Completion time.
    pub complete: f64,
    /// The critical-path increase charged to it.
    pub critical: f64,
    /// Where its slowest load was served (if it loaded).
    pub served: Option<sim_memory::Served>,
    /// Misses of its memory accesses per level (L1, L2, L3), counted per access.
    pub misses: [u32; 3],
    /// The branch was mispredicted.
    pub mispredicted: bool,
}

/// The larger of two times. Times are never NaN, so this is `f64::max` without its NaN
/// handling: one `maxsd` instead of five instructions, a dozen times per simulated
/// instruction (the results are the same bit for bit: no time is -0.0).
#[inline(always)]
fn fmax(a: f64, b: f64) -> f64 {
    if b > a { b } else { a }
}

// `Core::credited` holds a bit per component.
const _: () = assert!(COMPONENTS <= 32);

/// One core running one thread.
pub struct Core {
    p: CoreConfig,
    /// `p.latency` by op class.
    latency: [u32; OpClass::ALL.len()],
    id: u32,
    inv_width: f64,
    rob: Vec<Entry>,
    head: usize,
    len: usize,
    /// When each register's newest value is ready, by [`TimingInst`] register slot.
    reg_ready: [f64; REG_SLOTS],
    /// Current time: the last dispatch (the core's clock).
    pub now: f64,
    /// When everything in the window has committed: the latest completion so far, which is
    /// also where the critical path ends.
    commit: f64,
    contrib: [f64; COMPONENTS],
    /// Bit `c` set: `contrib[c]` was credited since the window was last empty. Every other
    /// entry is exactly 0 and would add nothing to a charge (see [`Core::charge_window`]).
    credited: u32,
    redirect: f64,
    redirect_comp: Component,
    /// When every store so far has performed (a store completes for the window when its
    /// data is ready, and drains from the store buffer later; loads' data is in `commit`):
    /// what a locked instruction waits for besides the window ([`Core::atomic_ready`]).
    mem_done: f64,
    /// `[core.latency] locked`, in cycles.
    locked: f64,
    /// No store performs before this: a locked instruction's completion (x86's locked
    /// instructions order the stores around them; [`Core::fence`]).
    fence: f64,
    /// No load issues before this, unless its bytes come from the thread's own stores made
    /// after the latest locked instruction: when the data a lock protects became stable for
    /// this thread ([`Core::atomic`]). Loads are not held back by a locked instruction as
    /// such: x86 cores execute them speculatively past it and replay one only if another core
    /// writes its line meanwhile (`benches/host/kernels.c` `locked-mlp`).
    load_fence: f64,
    /// The line of the latest locked instruction, and when it performs: a load of that line
    /// issues after it (the line is held for the atomic; a reference count's increment and
    /// the load of the object's field beside it, one after the other on the host).
    line_fence: (u64, f64),
    /// How many locked instructions the core has executed ([`StoreRec::fences`]).
    fences: u64,
    /// When each of the core's miss slots (its L1D's MSHRs: `outstanding_loads`) is free; a
    /// long-latency load takes a free one, wherever it is in the array.
    load_slots: Vec<f64>,
    tlb: Option<Tlb>,
    store_slots: Vec<f64>,
    store_next: usize,
    /// Recent stores by 8-byte word (see [`Core::forwarded`]).
    stores: Box<[StoreRec; FWD_SLOTS]>,
    /// The issue times of the instructions in the scheduler (dispatched, waiting for their
    /// operands), earliest first: at most `p.scheduler_size` entries.
    sched: VecDeque<f64>,
    last_fetch_line: u64,
    line_shift: u32,
    l1i_hit: u32,
    /// Cycles charged so far.
    pub stack: CycleStack,
    /// Instructions executed with timing.
    pub instructions: u64,
    /// Branches and mispredictions.
    pub branches: u64,
    /// Mispredicted branches.
    pub mispredictions: u64,
}

/// The kind of a data access.
#[inline]
fn data_kind(a: &MemAccess) -> Kind {
    if a.write { Kind::Store } else { Kind::Load }
}

impl Core {
    /// A core with id `id` (its index in the memory system) starting at time `now`.
    pub fn new(params: CoreParams, id: u32, mem: &Memory, now: f64) -> Core {
        let CoreParams { settings: p, tlb } = params;
        let rob = vec![Entry::default(); p.rob_size.max(1) as usize];
        let sched_size = p.scheduler_size as usize;
        let cfg = mem.config();
        let locked = p.latency.locked as f64;
        Core {
            inv_width: 1.0 / p.dispatch_width.max(1) as f64,
            load_slots: vec![0.0; p.outstanding_loads.max(1) as usize],
            tlb: tlb.map(Tlb::new),
            store_slots: vec![0.0; p.outstanding_stores.max(1) as usize],
            latency: p.latency.by_class(),
            p,
            id,
            rob,
            head: 0,
            len: 0,
            reg_ready: [0.0; REG_SLOTS],
            now,
            commit: now,
            contrib: [0.0; COMPONENTS],
            credited: 0,
            redirect: now,
            redirect_comp: Component::Branch,
            mem_done: now,
            locked,
            fence: now,
            load_fence: now,
            line_fence: (u64::MAX, now),
            fences: 0,
            store_next: 0,
            stores: Box::new([StoreRec::default(); FWD_SLOTS]),
            sched: VecDeque::with_capacity(sched_size + 1),
            last_fetch_line: u64::MAX,
            line_shift: cfg.l1i.line_size.trailing_zeros(),
            l1i_hit: cfg.l1i.data_latency,
            stack: CycleStack::default(),
            instructions: 0,
            branches: 0,
            mispredictions: 0,
        }
    }

    /// Charges `dt` cycles over the critical-path contributors (or to `base` if none).
    fn charge_window(&mut self, dt: f64) {
        if dt <= 0.0 {
            return;
        }
        // Only the components credited since the window was last empty can hold a
        // contribution; the others are exactly 0 and would add nothing, so visiting the
        // credited ones in component order gives the same sums, bit for bit, as visiting all.
        let mut total = 0.0f64;
        let mut m = self.credited;
        while m != 0 {
            total += fmax(self.contrib[m.trailing_zeros() as usize], 0.0);
            m &= m - 1;
        }
        if total <= 1e-12 {
            self.stack.add(Component::Base, dt);
            return;
        }
        let scale = dt / total;
        let mut m = self.credited;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let c = self.contrib[i];
            if c > 0.0 {
                self.stack.0[i] += c * scale;
            }
        }
    }

    /// Removes and returns the earliest issue time in the scheduler (which is not empty).
    #[inline]
    fn sched_pop(&mut self) -> f64 {
        self.sched.pop_front().unwrap_or(self.now)
    }

    /// Adds an instruction that issues at `t` to the scheduler, in order of issue time (a
    /// binary search; the insertion moves the entries of the shorter side: a chain's next
    /// step goes at the back, a loop counter's step, issuing soon, near the front).
    #[inline]
    fn sched_push(&mut self, t: f64) {
        let i = self.sched.partition_point(|&x| x <= t);
        self.sched.insert(i, t);
    }

    /// Frees the scheduler entries of the instructions issued by `t`.
    fn sched_free(&mut self, t: f64) {
        while self.sched.front().is_some_and(|&m| m <= t) {
            self.sched_pop();
        }
    }

    fn pop_until(&mut self, t: f64) {
        while self.len > 0 && self.rob[self.head].commit <= t {
            let e = self.rob[self.head];
            self.contrib[e.comp as usize] -= e.inc - e.tinc;
            self.contrib[Component::MemTlb as usize] -= e.tinc;
            self.head += 1;
            if self.head == self.rob.len() {
                self.head = 0;
            }
            self.len -= 1;
        }
        if self.len == 0 {
            self.contrib = [0.0; COMPONENTS];
            self.credited = 0;
        }
    }

    /// Whether instruction `sidx` of `tt` with accesses `mem_ops` can be executed with the
    /// core's own part of the memory system `p` alone (see [`Private::reach`]): its fetch, if
    /// it starts a new line, and each of its accesses are served by the core's L1s or its
    /// private L2. Each is judged on the state before the instruction, which holds while it
    /// executes (fetch, then loads, then stores) because an L1 hit changes nothing a later
    /// access's reach depends on, while a fill from the L2 may evict what a later access hits
    /// in the L1D. So only the last data access may come from the L2, and a fetch from the
    /// L2, which acts on the L1D's copy of its line, only if no data access touches that
    /// line.
    #[inline]
    pub fn private_ok(
        &self,
        p: &Private<'_>,
        tt: &TimingTable,
        sidx: u32,
        mem_ops: &[MemAccess],
    ) -> bool {
        let s = tt.get(sidx);
        // Most instructions hit their L1s.
        if (s.pc >> self.line_shift == self.last_fetch_line
            || p.hits(s.pc, s.size as u32, Kind::IFetch))
            && mem_ops
                .iter()
                .all(|a| p.hits(a.addr, a.size as u32, data_kind(a)))
        {
            return true;
        }
        self.private_ok_l2(p, s, mem_ops)
    }

    /// [`Core::private_ok`] for an instruction whose fetch or accesses miss the L1s.
    #[inline(never)]
    fn private_ok_l2(&self, p: &Private<'_>, s: &TimingInst, mem_ops: &[MemAccess]) -> bool {
        let mut fetched = None;
        let line = s.pc >> self.line_shift;
        if line != self.last_fetch_line {
            match p.reach(s.pc, s.pc, s.size as u32, Kind::IFetch) {
                Reach::L1 => {}
                Reach::L2 => fetched = Some(line),
                Reach::Beyond => return false,
            }
        }
        for (k, a) in mem_ops.iter().enumerate() {
            match p.reach(s.pc, a.addr, a.size as u32, data_kind(a)) {
                Reach::L1 => {}
                // Made last: no store after it, and a load only if no store at all, nor a
                // load after it.
                Reach::L2
                    if mem_ops[k + 1..].iter().all(|b| !b.write)
                        && (a.write
                            || (k + 1 == mem_ops.len() && mem_ops.iter().all(|b| !b.write))) => {}
                _ => return false,
            }
        }
        fetched.is_none_or(|line| {
            mem_ops.iter().all(|a| {
                let end = a.addr.wrapping_add((a.size as u64).max(1) - 1);
                a.addr >> self.line_shift != line && end >> self.line_shift != line
            })
        })
    }

    /// One access `a` of the instruction at `pc`, translated from time `at` (no penalty
    /// without a TLB) and then issued to `mem`: the translation penalty and the memory's
    /// outcome, whose misses are added to `r`.
    #[inline(always)]
    fn access<M: Port>(
        &mut self,
        mem: &mut M,
        pc: u64,
        a: &MemAccess,
        kind: Kind,
        at: f64,
        r: &mut InstResult,
    ) -> (f64, sim_memory::Outcome) {
        let pen = match &mut self.tlb {
            Some(tlb) => tlb.translate(a.addr, at),
            None => 0.0,
        };
        let o = mem.access(self.id, pc, a.addr, a.size as u32, kind, (at + pen) as u64);
        for (i, m) in o.missed.iter().enumerate() {
            r.misses[i] += *m as u32;
        }
        (pen, o)
    }

    /// When the newest stores to the words `a` reads let its value be ready (0 if none
    /// wrote its bytes): a store's data time plus `store_forward.int` or `.fp` (`vector`) if
    /// the load lies within the store's bytes, `.partial` if not. A store overwritten in the
    /// table by a later one to another word of the same slot is forgotten.
    #[inline(always)]
    fn forwarded(&self, a: &MemAccess, vector: bool) -> f64 {
        let start = a.addr;
        let end = start.saturating_add((a.size as u64).max(1));
        let (first, last) = (start >> 3, (end - 1) >> 3);
        let mut t = self.forwarded_from(first, start, end, vector);
        // Wider or unaligned loads cover more words (rarely).
        let mut w = first;
        while w < last {
            w += 1;
            t = fmax(t, self.forwarded_from(w, start, end, vector));
        }
        t
    }

    /// [`Core::forwarded`] by the store in word `w`'s slot.
    #[inline(always)]
    fn forwarded_from(&self, w: u64, start: u64, end: u64, vector: bool) -> f64 {
        let e = self.stores[w as usize & (FWD_SLOTS - 1)];
        let (s0, s1) = e.span();
        if s0 < end && start < s1 {
            let f = &self.p.store_forward;
            let lat = if e.covers(start, end) {
                if vector { f.fp } else { f.int }
            } else {
                f.partial
            };
            e.data + lat as f64
        } else {
            0.0
        }
    }

    /// Notes store `a`, whose data is ready at `data`, in the table of recent stores.
    #[inline(always)]
    fn note_store(&mut self, a: &MemAccess, data: f64) {
        let size = (a.size as u64).max(1);
        let rec = StoreRec {
            key: a.addr << 8 | size,
            data,
            fences: self.fences,
        };
        let end = a.addr.saturating_add(size);
        for w in a.addr >> 3..=(end - 1) >> 3 {
            self.stores[w as usize & (FWD_SLOTS - 1)] = rec;
        }
    }

    /// Dispatches the next instruction: waits for a dispatch slot, a window entry, the
    /// front end's redirect and a scheduler entry, charging the waits; the clock moves to
    /// the dispatch time, which it returns.
    #[inline(always)]
    fn dispatch(&mut self) -> f64 {
        let by_width = self.now + self.inv_width;
        self.pop_until(by_width);
        let by_window = if self.len == self.rob.len() {
            self.rob[self.head].commit
        } else {
            0.0
        };
        let bound = fmax(by_width, by_window);
        // Critical-path-bound when the full window binds, or when the window is within two
        // dispatch groups of full (commits arrive in bursts, so a window-bound stream sees a
        // few free entries after each burst; a dispatch-bound one keeps the window far from
        // full).
        let near_full = self.len + 2 * self.p.dispatch_width as usize >= self.rob.len();
        if by_window > by_width || near_full {
            self.charge_window(bound - self.now);
        } else {
            self.stack.add(Component::Base, by_width - self.now);
        }
        let mut t = bound;
        if self.redirect > t {
            self.stack.add(self.redirect_comp, self.redirect - t);
            t = self.redirect;
        }
        if t > by_width {
            // (At `by_width` itself the window was popped above.)
            self.pop_until(t);
        }
        if self.len == self.rob.len() {
            // Still full at the redirect time: wait for the head.
            let h = self.rob[self.head].commit;
            self.charge_window(h - t);
            t = h;
            self.pop_until(t);
        }
        let sched_size = self.p.scheduler_size as usize;
        // Entries of instructions issued by now are freed only when the scheduler looks full.
        if sched_size > 0 && self.sched.len() >= sched_size {
            self.sched_free(t);
            if self.sched.len() >= sched_size {
                // Every scheduler entry holds an instruction waiting for its operands: wait
                // for the first of them to issue (a dependence-bound stall, charged as a full
                // window's).
                let m = self.sched_pop();
                self.charge_window(m - t);
                t = m;
                self.pop_until(t);
                self.sched_free(t);
            }
        }
        self.now = t;
        t
    }

    /// Adds an instruction that completed at `complete` to the window and the critical
    /// path: its increase of the path, charged to `comp` (`tinc` of it to `mem-tlb`).
    #[inline(always)]
    fn insert(&mut self, complete: f64, comp: Component, tlb_share: f64) -> f64 {
        // Critical-path accounting at insertion: the critical path ends at the latest
        // completion so far, which is also when everything in the window has committed.
        // A load's increase is shared between its level and its translation in proportion
        // to their latencies.
        let commit = self.commit;
        let inc = fmax(complete - commit, 0.0);
        let tinc = inc * tlb_share;
        self.commit = fmax(commit, complete);
        self.contrib[comp as usize] += inc - tinc;
        self.credited |= 1 << comp as u32;
        if tinc != 0.0 {
            self.contrib[Component::MemTlb as usize] += tinc;
            self.credited |= 1 << Component::MemTlb as u32;
        }
        let mut slot = self.head + self.len;
        if slot >= self.rob.len() {
            slot -= self.rob.len();
        }
        self.rob[slot] = Entry {
            commit: self.commit,
            inc,
            tinc,
            comp: comp as u8,
        };
        self.len += 1;
        inc
    }

    /// Executes instruction `sidx` of `tt`. `mem_ops` are its accesses; `mispredicted`
    /// says whether the thread's branch predictor got it wrong (see [`predict`]). `mem` is
    /// the whole memory system, or the core's own part when [`Core::private_ok`] said so.
    /// The result goes into `r`, which must be the default (the caller keeps it where it
    /// needs it: a copy of a returned struct costs more than the writes).
    #[inline(always)]
    pub fn execute<M: Port>(
        &mut self,
        mem: &mut M,
        tt: &TimingTable,
        sidx: u32,
        mem_ops: &[MemAccess],
        mispredicted: bool,
        r: &mut InstResult,
    ) {
        let s = tt.get(sidx);
        debug_assert!(r.misses == [0; 3] && r.served.is_none() && !r.mispredicted);
        // Fetch: one L1I access per new line.
        let line = s.pc >> self.line_shift;
        if line != self.last_fetch_line {
            self.last_fetch_line = line;
            let o = mem.access(
                self.id,
                s.pc,
                s.pc,
                s.size as u32,
                Kind::IFetch,
                self.now as u64,
            );
            if o.latency > self.l1i_hit as u64 {
                let t = self.now + (o.latency - self.l1i_hit as u64) as f64;
                if t > self.redirect {
                    self.redirect = t;
                    self.redirect_comp = Component::Ifetch;
                }
            }
        }
        let t = self.dispatch();
        r.dispatch = t;
        let sched_size = self.p.scheduler_size as usize;
        // Execute. The loads wait for the address registers only (a load-op instruction's
        // load micro-op issues before its other operands are ready); the operation waits for
        // every source.
        let (mut issue, mut ready) = (t, t);
        if s.wide == NOT_WIDE {
            for &reg in &s.addr {
                issue = fmax(issue, self.reg_ready[reg as usize & (REG_SLOTS - 1)]);
            }
            ready = issue;
            for &reg in &s.other {
                ready = fmax(ready, self.reg_ready[reg as usize & (REG_SLOTS - 1)]);
            }
        } else {
            let (srcs, n_addr, _) = tt.wide_regs(s);
            for (i, &reg) in srcs.iter().enumerate() {
                let r = self.reg_ready[reg as usize];
                ready = fmax(ready, r);
                if i < n_addr {
                    issue = fmax(issue, r);
                }
            }
        }
        // A serializing instruction with a memory access is a locked read-modify-write:
        // timed as one ([`Core::atomic_ready`]), not as a drain of the window.
        let mut locked = false;
        if s.class == OpClass::Serializing {
            if mem_ops.is_empty() {
                ready = fmax(ready, self.commit);
                issue = ready;
            } else {
                locked = true;
                issue = fmax(issue, fmax(self.commit, self.mem_done));
                ready = fmax(ready, issue);
            }
        }
        // After a locked instruction that has not performed yet, stores perform after it (its
        // store and theirs drain in order: `store_at`); their data is forwarded to younger
        // loads as soon as it is ready. Loads wait only for what a lock's acquisition orders
        // (`load_fence`), unless their bytes come from this thread's own younger stores
        // ([`Core::own_since_fence`]).
        let mut store_at = 0.0f64;
        if !mem_ops.is_empty() {
            if self.fence > issue {
                store_at = self.fence;
            }
            if self.load_fence > issue
                && !mem_ops.iter().all(|a| a.write || self.own_since_fence(a))
            {
                issue = self.load_fence;
                ready = fmax(ready, issue);
            }
            let (line, until) = self.line_fence;
            if until > issue
                && mem_ops
                    .iter()
                    .any(|a| !a.write && self.touches(a, line) && !self.own_since_fence(a))
            {
                issue = until;
                ready = fmax(ready, issue);
            }
        }
        if sched_size > 0 {
            // It holds a scheduler entry until it issues: a memory access when its address
            // is ready, an operation when all its operands are. One that issues within a cycle
            // of its dispatch is left out (the entry is free again by the next cycle's
            // dispatch: a loop counter's step, an operand just computed), which keeps most
            // insertions at the back, a waiting chain's next step.
            let leave = if mem_ops.is_empty() { ready } else { issue };
            if leave > t + 1.0 {
                self.sched_push(leave);
            }
        }
        let mut lat = self.latency[s.class as usize] as f64;
        let mut comp = match s.class {
            OpClass::FpAdd | OpClass::FpMul | OpClass::FpDiv => Component::DependFp,
            _ => Component::DependInt,
        };
        // The operation's own latency and component when a load-op instruction keeps its
        // operation's class (`OpClass::operates_after_load`).
        let (op_lat, op_comp) = if s.class.operates_after_load() {
            (lat, comp)
        } else {
            (0.0, comp)
        };
        // A load's latency: its address translation (0 without a TLB), then the memory's.
        let mut served = None;
        let mut tlb_share = 0.0f64;
        let mut stored = false;
        if !mem_ops.is_empty() {
            let mut load_lat = 0.0f64;
            let mut load_tlb = 0.0f64;
            let mut load_fwd = false;
            let vector = s.flags & VECTOR_DST != 0;
            for a in mem_ops.iter().filter(|a| !a.write) {
                let (pen, o) = self.access(mem, s.pc, a, Kind::Load, issue, r);
                let l = o.latency;
                if l > self.p.long_latency_cutoff as u64 && !o.merged {
                    // A long-latency miss needs a miss slot (an access merged into a miss in
                    // flight shares that miss's slot): any free one, as MSHRs are a pool. (A
                    // ring taken in order would wait for the miss made `outstanding_loads`
                    // before though another slot is free: with latencies that vary, bank
                    // conflicts or a mix of L3 hits and DRAM, fewer misses would overlap than
                    // the MSHRs allow.) Of the slots free at `issue`, the one freed last (the
                    // others stay for a later load issued earlier: loads issue out of order);
                    // if none is free, the one free first.
                    let (mut fit, mut first) = (usize::MAX, 0);
                    for (j, &v) in self.load_slots.iter().enumerate() {
                        if v <= issue && (fit == usize::MAX || v > self.load_slots[fit]) {
                            fit = j;
                        }
                        if v < self.load_slots[first] {
                            first = j;
                        }
                    }
                    let k = if fit != usize::MAX { fit } else { first };
                    let slot = self.load_slots[k];
                    if slot > issue {
                        issue = slot;
                    }
                    self.load_slots[k] = issue + pen + l as f64;
                }
                let mut total = pen + l as f64;
                // A dependence through memory: the value comes from an older store.
                let by_store = self.forwarded(a, vector) - issue;
                let fwd = by_store > total;
                if fwd {
                    total = by_store;
                }
                if total >= load_lat {
                    load_lat = total;
                    load_tlb = if fwd { 0.0 } else { pen };
                    load_fwd = fwd;
                    served = Some(o.served);
                }
            }
            if load_lat > 0.0 {
                tlb_share = load_tlb / load_lat;
            }
            if let Some(sv) = served {
                lat = load_lat;
                comp = if load_fwd {
                    Component::DependMem
                } else {
                    Component::of_served(sv)
                };
                r.served = Some(sv);
                // The stores below and the operation wait for the load too.
                ready = fmax(ready, issue);
            }
            for a in mem_ops.iter().filter(|a| a.write) {
                stored = true;
                let at = fmax(ready, store_at);
                let (pen, o) = self.access(mem, s.pc, a, Kind::Store, at, r);
                if o.latency > self.p.long_latency_cutoff as u64 && !o.merged {
                    // Stores retire through the store buffer; a full one stalls.
                    let slot = self.store_slots[self.store_next];
                    if slot > ready {
                        ready = slot;
                    }
                    self.store_slots[self.store_next] = at.max(ready) + pen + o.latency as f64;
                    self.store_next = (self.store_next + 1) % self.store_slots.len();
                }
                self.mem_done = fmax(self.mem_done, at.max(ready) + pen + o.latency as f64);
            }
        }
        let mut complete = if served.is_some() && op_lat > 0.0 {
            // A load-op instruction whose operation takes several cycles (`addsd xmm0,
            // [rax]`): the operation starts when both the loaded value and its other operands
            // are there and takes its own latency; whichever came last is what it waited for.
            let data = issue + lat;
            if ready > data {
                comp = op_comp;
                tlb_share = 0.0;
            }
            fmax(data, ready) + op_lat
        } else if served.is_some() && s.flags & HAS_OTHER != 0 {
            // The load's data, or the operation one cycle after its last other operand.
            fmax(issue + lat, ready + 1.0)
        } else {
            ready + fmax(lat, if mem_ops.is_empty() { 1.0 } else { 0.0 })
        };
        if locked {
            complete += self.locked;
        }
        if stored && self.p.store_forward.enabled {
            // What a later load of these bytes waits for: the data registers of a plain
            // store; the operation, a cycle after the loaded value, of a read-modify-write.
            let data = if served.is_some() {
                complete + 1.0
            } else {
                ready
            };
            for a in mem_ops.iter().filter(|a| a.write) {
                self.note_store(a, data);
            }
        }
        if s.wide == NOT_WIDE {
            for &reg in &s.dst {
                self.reg_ready[reg as usize & (REG_SLOTS - 1)] = complete;
            }
        } else {
            for &reg in tt.wide_regs(s).2 {
                self.reg_ready[reg as usize] = complete;
            }
        }
        let inc = self.insert(complete, comp, tlb_share);
        r.complete = complete;
        r.critical = inc;
        if s.class == OpClass::Serializing {
            if locked {
                // Its store performs with it; younger stores wait for it (after its own store
                // was noted, which a younger load therefore reads only once it has performed),
                // and so do younger loads of its line.
                self.fence(complete);
                if let Some(a) = mem_ops.first() {
                    self.line_fence = (a.addr >> self.line_shift, complete);
                }
            } else {
                self.redirect = fmax(self.redirect, complete);
                self.redirect_comp = Component::DependInt;
            }
        }
        // A mispredicted branch redirects the front end.
        if s.branch != BranchKind::None {
            self.branches += 1;
            if mispredicted {
                self.mispredictions += 1;
                r.mispredicted = true;
                let t = complete + self.p.frontend_depth as f64;
                if t > self.redirect {
                    self.redirect = t;
                    self.redirect_comp = Component::Branch;
                }
            }
        }
        self.instructions += 1;
    }

    /// Functional warming before the ROI: caches learn, time does not move (the branch
    /// predictor learns in [`predict`], as for every instruction).
    pub fn warm(&mut self, mem: &mut Memory, tt: &TimingTable, sidx: u32, mem_ops: &[MemAccess]) {
        let s = tt.get(sidx);
        let line = s.pc >> self.line_shift;
        if line != self.last_fetch_line {
            self.last_fetch_line = line;
            mem.warm(self.id, s.pc, s.size as u32, Kind::IFetch);
        }
        for a in mem_ops {
            if let Some(tlb) = &mut self.tlb {
                tlb.warm(a.addr);
            }
            mem.warm(
                self.id,
                a.addr,
                a.size as u32,
                if a.write { Kind::Store } else { Kind::Load },
            );
        }
    }

    /// Waits for every instruction in the window to commit, charging the time like a full
    /// window. Returns the time.
    pub fn drain(&mut self) -> f64 {
        let end = self.now.max(self.commit).max(self.redirect);
        if end > self.now {
            let until_commit = self.commit.max(self.now) - self.now;
            self.charge_window(until_commit);
            let rest = end - self.now - until_commit;
            if rest > 0.0 {
                self.stack.add(self.redirect_comp, rest);
            }
        }
        self.now = end;
        self.reset_window(end);
        end
    }

    fn reset_window(&mut self, t: f64) {
        self.len = 0;
        self.head = 0;
        self.contrib = [0.0; COMPONENTS];
        self.credited = 0;
        self.commit = t;
        self.redirect = t;
    }

    /// The core's id: its index in the memory system.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Moves this (not yet started) thread's window onto core `id` of the memory system.
    pub fn set_id(&mut self, id: u32) {
        self.id = id;
    }

    /// The data TLB's first-level misses and page walks so far (0, 0 without a TLB).
    pub fn tlb_counts(&self) -> (u64, u64) {
        self.tlb.as_ref().map_or((0, 0), |t| (t.l1_misses, t.walks))
    }

    /// Jumps the clock to `t` (≥ now), charging the wait to `c` (a sync or imbalance
    /// component). Instructions still in the window complete meanwhile, as they would have;
    /// the critical path goes on from `t` (a drained window is left empty, as it was).
    pub fn wait_until(&mut self, t: f64, c: Component) {
        if t > self.now {
            self.stack.add(c, t - self.now);
            self.now = t;
            self.pop_until(t);
            self.commit = fmax(self.commit, t);
            self.redirect = fmax(self.redirect, t);
        }
    }

    /// When a locked instruction dispatched now performs, if nothing else holds it: once
    /// every older instruction has completed (x86 performs a locked instruction when it is
    /// the oldest, after older stores drain) and the front end has come back from any
    /// redirect. Younger instructions do not wait for that ([`Core::atomic`]), only younger
    /// memory accesses do. On this host (`benches/host/kernels.c` `locked-feed`), a `lock
    /// xadd` whose result starts a chain of 10 multiply-adds that depends on the chain before
    /// it takes 57 cycles a step against the chain's 42 alone: the atomic waits for the older
    /// chain; younger independent work runs beside it (`locked-work`).
    pub fn atomic_ready(&self) -> f64 {
        fmax(
            fmax(self.now, fmax(self.commit, self.mem_done)),
            self.redirect,
        )
    }

    /// A locked instruction (a lock's acquiring or releasing read-modify-write, executed by
    /// the engine, not traced) dispatched now that completes at `done`: it holds its window
    /// entry until then, the critical path's increase is charged to `comp`, no younger store
    /// performs before it ([`Core::fence`]) and no younger load issues before `loads_from`
    /// (when the data the lock protects is stable for this thread: the previous holder's
    /// release, or `done` for a thread that waited; `f64::NEG_INFINITY` for a release), nor a
    /// younger load of the line of `addr` (the lock word's) before `done`.
    /// Younger instructions go on being dispatched; a long wait fills the window and stalls
    /// them.
    pub fn atomic(&mut self, done: f64, comp: Component, loads_from: f64, addr: u64) {
        let t = self.dispatch();
        self.insert(fmax(done, t), comp, 0.0);
        self.fence(done);
        self.load_fence = fmax(self.load_fence, loads_from);
        self.line_fence = (addr >> self.line_shift, done);
    }

    /// Whether access `a` touches line `line`.
    fn touches(&self, a: &MemAccess, line: u64) -> bool {
        let end = a.addr.saturating_add((a.size as u64).max(1) - 1);
        a.addr >> self.line_shift <= line && line <= end >> self.line_shift
    }

    /// A lock's release by a plain store (executed by the engine, not traced) dispatched now
    /// that performs at `done`: it leaves the window as a store does, once dispatched (the
    /// thread does not wait for it to perform), and younger stores perform after it, as does
    /// the next locked instruction ([`Core::fence`]).
    pub fn release_store(&mut self, done: f64) {
        let t = self.dispatch();
        let lat = self.latency[OpClass::Store as usize] as f64;
        self.insert(t + lat, Component::Base, 0.0);
        self.fence(done);
    }

    /// Moves the clock to `t` (≥ now) like a dispatch stall: the time is charged to what is
    /// in flight in the window (its critical-path contributors), which goes on.
    pub fn stall_until(&mut self, t: f64) {
        if t > self.now {
            self.charge_window(t - self.now);
            self.now = t;
            self.pop_until(t);
        }
    }

    /// A locked instruction that performs at `t`: no later store performs before it, and the
    /// next locked instruction waits for it.
    pub fn fence(&mut self, t: f64) {
        self.fence = fmax(self.fence, t);
        self.mem_done = fmax(self.mem_done, t);
        self.fences += 1;
    }

    /// Whether every byte load `a` reads comes from a store this thread made after its
    /// latest locked instruction: the value is forwarded from the store buffer, not read
    /// from the memory system, so no other core can see the load ordered before that
    /// instruction, and the core does not hold it back (x86 cores execute younger loads
    /// speculatively past a locked instruction; one that reads its own younger store can
    /// never be squashed for it).
    fn own_since_fence(&self, a: &MemAccess) -> bool {
        let start = a.addr;
        let end = start.saturating_add((a.size as u64).max(1));
        (start >> 3..=(end - 1) >> 3).all(|w| {
            let e = self.stores[w as usize & (FWD_SLOTS - 1)];
            e.key != 0 && e.fences == self.fences && e.covers(start, end)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each op class takes the latency of its own `[core.latency]` key; branches, jumps,
    /// calls and returns share `branch`, and nop-like and serializing ops share `other`.
    #[test]
    fn latencies_by_class_follow_the_keys() {
        let l = OpLatencies {
            int_alu: 1,
            int_mul: 2,
            int_div: 3,
            fp_add: 4,
            fp_mul: 5,
            fp_div: 6,
            load: 7,
            store: 8,
            branch: 9,
            other: 10,
            locked: 11,
        };
        let by = l.by_class();
        let of = |c: OpClass| by[c as usize];
        assert_eq!(
            [OpClass::IntAlu, OpClass::IntMul, OpClass::IntDiv].map(of),
            [1, 2, 3]
        );
        assert_eq!(
            [OpClass::FpAdd, OpClass::FpMul, OpClass::FpDiv].map(of),
            [4, 5, 6]
        );
        assert_eq!([OpClass::Load, OpClass::Store].map(of), [7, 8]);
        assert_eq!(
            [
                OpClass::CondBranch,
                OpClass::Jump,
                OpClass::Call,
                OpClass::Return
            ]
            .map(of),
            [9; 4]
        );
        assert_eq!([OpClass::Other, OpClass::Serializing].map(of), [10, 10]);
    }
}
