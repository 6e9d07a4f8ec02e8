//! The multicore engine: trace threads on cores, advanced in simulated time, with
//! synchronization replayed by simulated semantics. The main thread runs on core 0; a created
//! thread takes the lowest-numbered core no running thread holds, and gives it back when it
//! ends (more threads alive at once than cores is an error: `isim run` sizes the machine by
//! `Trace::max_alive`).
//!
//! **Scheduling** ([`Model`]). In the exact model, the runnable thread with the smallest
//! clock (ties: lowest id) runs until its clock passes the next smallest clock by the quantum
//! ([`QUANTUM`] cycles) or it reaches a marker; a thread whose data came from another core's
//! cache within the last [`SHARING_HOLD`] cycles runs by [`SHARING_QUANTUM`] instead, so that
//! cores writing one line (false or true sharing) take it from each other access by access
//! as on the hardware, not once per quantum. In the parallel model, rounds: every runnable
//! thread runs with its core's private part of the memory system up to its next instruction
//! that needs the shared levels, a marker, or the smallest clock plus the quantum, the threads
//! on several host threads; then those instructions (within [`SKEW`] cycles of the earliest;
//! the others wait, parked) and markers are done in simulated-time order (`docs/parallel.md`).
//! Either order is a function of simulated times and thread ids only, so results are
//! deterministic and the same for any number of host threads.
//!
//! **Synchronization** (each first drains the thread's window):
//! * barrier: released when the last of `participants` threads arrives; every waiter resumes
//!   at that time, the wait charged to `sync-barrier`. A thread waiting at a barrier holds no
//!   mutex: what it held is handed back at its arrival (a barrier built from a mutex and a
//!   condition variable is entered holding its mutex), and its next unlock or condition wait
//!   on that mutex releases nothing;
//! * mutex (every mutex, with or without a recorded order): arbitrated in simulated time. A
//!   request waits until no runnable thread is earlier in simulated time (ties: the lower id),
//!   so the mutex goes first come, first served in simulated time; a free mutex is taken at
//!   once, at the earliest after its last release; a held one passes at each unlock to the
//!   waiter that asked first (wait: `sync-crit-sect`). The lock word's line is a token one
//!   core holds at a time ([`Engine::move_line`]): a hand-over costs its move between cores
//!   (charged to `sync-crit-sect`), the machine's idle neighbour transfer; on the core that
//!   holds it, what the memory system says (it may have been evicted). A lock asks for the
//!   line once the instructions before it have completed (a locked instruction is performed
//!   when it is the oldest); a request that finds the lock held (the failed atomic attempt)
//!   takes the line from the holder if it reaches it before the release, which then takes
//!   it back; a release is a store the thread does not wait for, and the lock is free once
//!   it is done. Requests and releases are done in simulated-time order.
//!   Recursive acquisitions nest. That is [`LockModel::Fifo`], the default; under
//!   [`LockModel::Futex`] the lock word of glibc's mutex is replayed instead (a free lock goes
//!   to the first compare-and-swap that reaches its line; a waiter's futex wait returns or
//!   sleeps, a release of a contended word pays a futex wake and wakes the longest sleeper:
//!   see [`LockModel`]). A lock-order cycle among waiting threads (simulated time
//!   ordered two acquisitions the other way round from a traced run that completed), or a
//!   stall with every thread blocked and some waiting for a mutex, is broken by giving the
//!   waiter the traced run let through first its mutex while the holder keeps it
//!   (`SyncStats::lock_cycles_resolved`); a stall with no mutex to give and a thread waiting
//!   for a recorded release no thread has reached lets that thread go on
//!   (`SyncStats::order_waits_forced`); markers without a recorded order are never forced,
//!   so a hand-made trace that truly deadlocks still gets the watchdog's report;
//! * condition wait releases the mutex and sleeps until a signal (one waiter, earliest first)
//!   or broadcast (all), then re-acquires the mutex (wait until woken: `sync-cond`); a signal
//!   with no waiter is lost, as in pthreads;
//! * create starts the child at the creator's time (the child's time before that:
//!   `imbalance-start`); join waits for the child's end (`sync-join`);
//! * after a thread ends, the time until the last thread ends is `imbalance-end`.
//!
//! **Recorded order** (traced real programs: markers whose [`Order`] is not `SIM`). A
//! condition wake and a futex wake-up each wait for the [`Marker::Release`] of another thread
//! that let them proceed in the traced run (which signal released which waiter is a data
//! dependence): the thread continues at the later of its own time and that release's
//! simulated time, the wait charged to `sync-cond`; a release that comes first in simulated
//! time is not lost. A condition wait's re-lock is then a mutex request like any other. The
//! recorded order of a mutex acquisition only ranks it for breaking a lock-order cycle.
//! A barrier whose participant marked `lead` names the episode reports that participant's
//! call site for everyone (an OpenMP fork, a barrier built from a condition variable).
//!
//! **Nothing is lost.** At the end every thread's stream must have been read to its end (a
//! thread never created, or records after a thread's end, stop the run with
//! [`SimError::Lost`]); instructions replayed without timing after the ROI ended are counted
//! per thread ([`ThreadResult::after_roi`]).
//!
//! **Region of interest.** If thread 0's stream has an ROI-begin marker, records before it
//! warm the caches and predictors without timing (all clocks stay at 0); records after the
//! ROI end are skipped for timing but synchronization is still replayed so streams finish.
//!
//! **Watchdog.** If no thread can run but some have not ended, the run stops with an error
//! listing what each thread waits on.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::Serialize;
use sim_frontend::format::reader::BATCH_RECORDS;
use sim_frontend::model::{
    Batch, Inst, Marker, NO_SIDX, Order, Record, SPIN_TURNS, Spin, exit_count_thread,
    is_channel_addr,
};
use sim_frontend::{ThreadStream, Trace, TraceError};
use sim_memory::{CacheStats, CoreStats, Memory, MemoryConfig, Private, Served};

use crate::ahead;
use crate::bpred::{BpredConfig, Predictor, build};
use crate::core::{Core, CoreParams, InstResult, TimingTable, predict};
use crate::crew::{self, Crew};
use crate::sched::{self, Sched};
use crate::stack::{Component, CycleStack};

/// In the parallel model, how far past the earliest instruction waiting for the shared levels
/// a round still does others (the rest wait for a later round): 20 cycles, which keeps the
/// parallel model's run cycles within 1 % of the exact model's on the built-in workloads but
/// `false-sharing` (`docs/parallel.md`); with no bound, a thread ahead in time would take
/// the shared levels first, round after round (radix sort: 6.6 % more cycles).
pub const SKEW: f64 = 20.0;

/// Cycles a thread may run ahead of the next slowest runnable thread (the exact model), or
/// past the slowest (the parallel model's rounds), unless [`Engine::quantum`] says otherwise.
pub const QUANTUM: f64 = 200.0;

/// Cycles a thread that shares written data with other cores may run ahead of the next
/// slowest runnable thread in the exact model (at most the quantum). With the quantum, two
/// cores writing one line took it from each other once per quantum: the first access of each
/// turn missed and the rest of the turn's accesses hit, so a loop of increments to counters
/// in one line (false sharing) ran as fast as with the counters apart, where the hardware
/// moves the line at nearly every access (`docs/parallel.md`).
pub const SHARING_QUANTUM: f64 = 2.0;

/// How long, in cycles of its own clock, a thread keeps [`SHARING_QUANTUM`] after an access
/// served by another core's cache (a line another core had modified, or a cache of another
/// socket): the time to its next access to such a line in a loop that shares one, and short
/// enough that a thread that read its neighbours' results once goes back to the quantum.
pub const SHARING_HOLD: f64 = 1000.0;

isim_names::indexed_enum! {
    /// How the engine orders the simulated cores' work (see the module documentation). The
    /// results of each are the same for any number of host threads; the two differ from each
    /// other by the order in which cores meet in the shared levels (`docs/parallel.md`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Model {
        /// One core at a time, the one with the smallest clock, for [`QUANTUM`] cycles past
        /// the next smallest: the serial model (its front ends may still run ahead on other
        /// host threads, with the same results). The default.
        #[default]
        Exact = "exact",
        /// Rounds: every runnable core runs on its own up to its next instruction that needs
        /// more of the memory system than its L1s and private L2, or a marker, or the
        /// round's end in simulated time (the smallest clock plus [`QUANTUM`]) — the cores
        /// of a round on as many host threads as the run has — then those instructions
        /// (within [`SKEW`] cycles of the earliest) and markers are done one at a time in
        /// simulated-time order.
        Parallel = "parallel",
    }
}
isim_names::serde_by_name!(Model);

isim_names::indexed_enum! {
    /// The names of the [`LockModel`]s, as a machine's `[locks] model` spells them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum LockKind {
        /// [`LockModel::Fifo`].
        #[default]
        Fifo = "fifo",
        /// [`LockModel::Futex`].
        Futex = "futex",
    }
}
isim_names::serde_by_name!(LockKind);

/// How a contended mutex passes from its holder to the threads that want it (a machine's
/// `[locks]` table; `docs/tracing.md`). Costs are in core cycles.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LockModel {
    /// First come, first served in simulated time: a release hands the lock to the waiter
    /// that asked first, and the hand-over costs the lock word's move between the cores.
    #[default]
    Fifo,
    /// The lock word of the C library's and Rust's futex mutexes (glibc's
    /// `pthread_mutex_lock` without spinning, as Linux runs it): a free lock goes to whoever
    /// asks first, even past threads that wait for it; a thread that finds it held marks the
    /// word contended (an exchange that takes the word's line) and calls futex wait, which
    /// returns after `wait` cycles if the word changed meanwhile (the lock was released: it
    /// tries again) and sleeps otherwise; a release of a word marked contended calls futex
    /// wake (`wake` cycles for the releaser), and the thread that slept longest runs
    /// `latency` cycles later and tries again. A thread that went through a futex wait takes
    /// the lock with the word marked contended, so its release calls futex wake too.
    ///
    /// A lock whose implementation spins (the trace says which and for how many turns: Rust's
    /// std `Mutex` and other futex-word locks seen spinning, 100; libgomp's, 300,000 by
    /// default) first watches a word it found held and not yet marked contended, for up to
    /// `spin` cycles per 100 turns: a release within that budget is seen by the thread that has spun
    /// longest at its next look (`spin` / 100 apart, at a phase the engine's noise picks)
    /// once its load has fetched the line, and it takes the lock then, the word left as it
    /// found it, unless another thread (the releaser, back soon) took it first; a spinner
    /// whose budget runs out, or that sees another waiter mark the word, marks it and calls
    /// futex wait as above. A lock freed by plain stores (an unlock marker says so: glibc's
    /// spin lock, test-and-set locks) cannot wake a sleeper, and its waiters never sleep:
    /// they spin until they take it.
    Futex {
        /// A futex wait that returns at once (the word changed).
        wait: f64,
        /// A futex wake, for the releasing thread.
        wake: f64,
        /// From a futex wake to the woken thread running.
        latency: f64,
        /// How long a spinning lock watches a held word before its futex wait.
        spin: f64,
    },
}

/// How a thread got a mutex ([`Engine::grant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    /// It asked and the mutex was free, or it waited in a queue for it (a wait when the grant
    /// comes after the request).
    Free,
    /// Through the lock's slow path: the whole time from the request is waiting.
    Waited,
    /// Its first compare-and-swap reached the released line before anyone else's request
    /// ([`LockModel::Futex`]): a free lock whose line came from the releaser's core.
    Arrived,
}

/// Where a thread is in a futex mutex's acquisition ([`LockModel::Futex`]) when its request
/// is done again.
#[derive(Debug, Clone, Copy)]
enum FutexStep {
    /// Back from a futex wait entered while acquisition `epoch` held the lock: the thread
    /// sleeps if that acquisition still holds it (the word is still marked contended).
    Check { epoch: u64 },
    /// Woken by a release, or back from a futex wait that found the word changed: it takes
    /// the lock with an exchange, marking it contended, if it is free.
    Woken,
    /// Its compare-and-swap found the lock held and fetched the word's line: it takes the
    /// lock if the holder has let go meanwhile, else it spins (a spinning lock, the word not
    /// marked) or marks the word contended and waits.
    Attempt,
    /// A spinner's look that a release sent its way (the released line fetched by its next
    /// load): if the lock is still free, its compare-and-swap sets out for the line
    /// ([`FutexStep::Cas`]); if another thread took it first (the
    /// releaser asking again sooner), its load took the line from that thread's core and
    /// it spins on until `until`, then marks the word and waits. `marks`: spinning after a
    /// futex wait (it takes the lock marking the word contended). `read`: when the look's load
    /// reached the line; a thread that took the lock after that overtook a spinner that had
    /// read the word free and whose compare-and-swap then failed: it marks the word and waits
    /// (Rust's std `Mutex`).
    Look { until: f64, marks: bool, read: f64 },
    /// A look found the lock free and its compare-and-swap (an exchange after a futex wait:
    /// `marks`) is on its way to the line ([`CasInFlight`]): it takes the lock, or, overtaken
    /// by a thread that asked before it arrived, marks the word and waits.
    Cas { marks: bool },
}

/// A number in [0, 1) from a count and a thread: the engine's deterministic stand-in for the
/// hardware's timing noise (see [`Engine::jitter`]).
fn unit_hash(n: u64, tid: u32) -> f64 {
    let mut x =
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(tid).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// How much a lock word request's travel between cores varies ([`Engine::travel`]): the
/// whole range, as a share of the mean (isim's choice, as for the system calls' jitter: a
/// real machine's transfers vary with what else its interconnect carries). On the traces of
/// `lock_counter -w 10` at transfers of 180 and 230 cycles (`snoop_latency` 155 and 204) the
/// 2-thread run took 0.19 and 0.58 of one thread's speed with fixed transfers, 0.32 and 0.44
/// with ±5 %, 0.42 and 0.39 with ±12.5 % (the host: 0.46-0.55).
const TRAVEL_JITTER: f64 = 0.25;

/// Looks at the lock word a spinning lock makes in its `[locks] spin` budget (Rust's std
/// `Mutex`: 100 loads, each followed by a `pause`): a release is seen at the spinner's next
/// look, one budget / `SPIN_LOOKS` apart.
const SPIN_LOOKS: f64 = SPIN_TURNS as f64;

/// The cycles a lock spinning as `s` watches a held word before it sleeps, `spin` being those
/// of [`SPIN_TURNS`] turns (`[locks] spin`).
fn spin_budget(spin: f64, s: Spin) -> f64 {
    spin * f64::from(s.turns) / SPIN_LOOKS
}

/// Everything the engine needs besides the trace.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Core parameters (the same for every core).
    pub core: CoreParams,
    /// Branch predictor of every core.
    pub bpred: BpredConfig,
    /// The memory system.
    pub memory: MemoryConfig,
    /// PCs whose data misses are erased.
    pub erase: Vec<u64>,
    /// How their accesses behave.
    pub erasure: sim_memory::Erasure,
    /// How contended mutexes pass between threads.
    pub locks: LockModel,
    /// Cycles the code of a lock or unlock call into a library the trace does not hold
    /// costs its thread before the call's atomic ([`Marker::MutexLock`]'s `call`; the
    /// interposed pthread and OpenMP calls), charged to `sync-crit-sect`. A lock found in
    /// traced code has its own instructions in the stream and costs nothing here.
    pub lock_call: f64,
}

/// The part of an [`Observer`] that hears one simulated thread's instructions during a
/// parallel phase of [`Model::Parallel`], on whichever host thread simulates that thread.
pub trait ThreadObserver: Send {
    /// What [`Observer::inst`] does for this part's thread.
    fn inst(&mut self, sidx: u32, r: &InstResult, stack: &CycleStack);
}

/// The part type of an observer that has none ([`Observer::parts`] is `None`).
pub enum NoParts {}

impl ThreadObserver for NoParts {
    fn inst(&mut self, _: u32, _: &InstResult, _: &CycleStack) {
        match *self {}
    }
}

impl<A: ThreadObserver, B: ThreadObserver> ThreadObserver for (A, B) {
    #[inline]
    fn inst(&mut self, sidx: u32, r: &InstResult, stack: &CycleStack) {
        self.0.inst(sidx, r, stack);
        self.1.inst(sidx, r, stack);
    }
}

/// Receives events during simulation; the default methods do nothing, so an observer that
/// collects nothing costs nothing (the engine is generic over it).
pub trait Observer {
    /// One simulated thread's part ([`Observer::parts`]); [`NoParts`] for an observer without.
    type Part<'a>: ThreadObserver
    where
        Self: 'a;
    /// One part per simulated thread, indexed by thread id, borrowed for one parallel phase,
    /// if what [`Observer::inst`] does for a thread touches only that thread's state (a part
    /// must do exactly that); `None` otherwise: the engine then keeps the phase's
    /// instructions and reports them through [`Observer::inst`] after the phase.
    fn parts(&mut self) -> Option<Vec<Self::Part<'_>>> {
        None
    }
    /// Whether [`Observer::inst`] does anything: if not, the engine does not keep the
    /// instructions a parallel phase executed for it.
    const INSTS: bool = true;
    /// Whether [`Observer::inst`] reads its `stack`: if not, the engine does not keep a copy
    /// of the stack after each instruction of a parallel phase.
    const STACKS: bool = true;
    /// One instruction executed with timing by thread `tid`; `stack` is the thread's cycle
    /// stack so far (cumulative: a collector charging cycles to code regions takes
    /// differences between calls; the final stacks are in the [`RunResult`]).
    fn inst(&mut self, _tid: u32, _sidx: u32, _r: &InstResult, _stack: &CycleStack) {}
    /// Thread `tid` arrived at a barrier at `arrival` and left it at `release`; `site` is the
    /// static index of the instruction before the barrier marker (the barrier call), the same
    /// for every participant of one episode: the lead's, else the one most participants had.
    /// The participants of an episode are reported one after another.
    fn barrier(&mut self, _tid: u32, _site: u32, _arrival: f64, _release: f64) {}
    /// Thread `tid` waited from `from` to `until` for a mutex, a condition, a join or its
    /// creation (`kind` is the component the wait was charged to).
    fn wait(&mut self, _tid: u32, _kind: Component, _from: f64, _until: f64) {}
    /// Thread `parent` created `child` at `at` (reported just before the child's
    /// [`Observer::thread_start`]).
    fn create(&mut self, _parent: u32, _child: u32, _at: f64) {}
    /// Thread `tid` started running (was created, or was running when the ROI began) at `at`.
    fn thread_start(&mut self, _tid: u32, _at: f64) {}
    /// Thread `tid` ended at `at` (its window drained).
    fn thread_end(&mut self, _tid: u32, _at: f64) {}
    /// Thread `tid` joined `child`: it called join at `arrival` (instruction `site` is the join
    /// call) and resumed at `release` (at or after the child's end).
    fn join(&mut self, _tid: u32, _site: u32, _child: u32, _arrival: f64, _release: f64) {}
    /// Thread `tid` waited from `arrival` to `release` for `child`'s count-down at `counted`,
    /// made as `child` ended (a Rust scope waiting for its threads, which are never joined:
    /// `model::EXIT_COUNT`); `site` is the instruction before the wait. The wait itself is
    /// also reported by [`Observer::wait`].
    fn counted_down(
        &mut self,
        _tid: u32,
        _site: u32,
        _child: u32,
        _counted: f64,
        _arrival: f64,
        _release: f64,
    ) {
    }
    /// Every event the engine reports from now on happens at or after `at` in simulated time
    /// (the smallest clock of a runnable thread): a collector that buffers timestamped
    /// instructions may resolve those before `at`. Called before each scheduling slice.
    fn horizon(&mut self, _at: f64) {}
    /// Thread `tid` acquired mutex `addr`: it asked at `asked` (the instruction before the
    /// request is `site`, the lock call) and has it at `at`. The time between, and only
    /// that, was charged to its `sync-crit-sect` for this acquisition: the lock word's line
    /// moving here, and if `contended` (the lock was held when asked, or the thread went
    /// through a futex wait) the waiting for it.
    fn lock_acquired(
        &mut self,
        _tid: u32,
        _addr: u64,
        _site: u32,
        _asked: f64,
        _at: f64,
        _contended: bool,
    ) {
    }
    /// Thread `tid` released mutex `addr` at `at` (`site`: the instruction before the
    /// release); `cost` is what the release itself charged to its `sync-crit-sect` (a futex
    /// wake under [`LockModel::Futex`], else 0).
    fn lock_released(&mut self, _tid: u32, _addr: u64, _site: u32, _at: f64, _cost: f64) {}
    /// Thread `tid` became running (`true`: started, or resumed from a synchronization wait)
    /// or stopped running (`false`: blocked in synchronization, or ended) at `at`. Reported
    /// for every change, in each thread's time order, and never for a time before the last
    /// [`Observer::horizon`]. The end of the ROI stops every thread still running.
    fn activity(&mut self, _tid: u32, _at: f64, _running: bool) {}
}

impl Observer for () {
    type Part<'a> = ();
    const INSTS: bool = false;
    const STACKS: bool = false;
    fn parts(&mut self) -> Option<Vec<()>> {
        None
    }
}

impl ThreadObserver for () {
    #[inline]
    fn inst(&mut self, _: u32, _: &InstResult, _: &CycleStack) {}
}

/// Two observers fed the same events, so independent collectors compose without dynamic
/// dispatch: `Engine::new(&trace, &cfg, (lime, profile))`.
impl<A: Observer, B: Observer> Observer for (A, B) {
    type Part<'a>
        = (A::Part<'a>, B::Part<'a>)
    where
        Self: 'a;
    const INSTS: bool = A::INSTS || B::INSTS;
    const STACKS: bool = A::STACKS || B::STACKS;
    fn parts(&mut self) -> Option<Vec<Self::Part<'_>>> {
        let (a, b) = (self.0.parts()?, self.1.parts()?);
        Some(a.into_iter().zip(b).collect())
    }
    #[inline]
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, stack: &CycleStack) {
        self.0.inst(tid, sidx, r, stack);
        self.1.inst(tid, sidx, r, stack);
    }
    fn barrier(&mut self, tid: u32, site: u32, arrival: f64, release: f64) {
        self.0.barrier(tid, site, arrival, release);
        self.1.barrier(tid, site, arrival, release);
    }
    fn wait(&mut self, tid: u32, kind: Component, from: f64, until: f64) {
        self.0.wait(tid, kind, from, until);
        self.1.wait(tid, kind, from, until);
    }
    fn create(&mut self, parent: u32, child: u32, at: f64) {
        self.0.create(parent, child, at);
        self.1.create(parent, child, at);
    }
    fn thread_start(&mut self, tid: u32, at: f64) {
        self.0.thread_start(tid, at);
        self.1.thread_start(tid, at);
    }
    fn thread_end(&mut self, tid: u32, at: f64) {
        self.0.thread_end(tid, at);
        self.1.thread_end(tid, at);
    }
    fn join(&mut self, tid: u32, site: u32, child: u32, arrival: f64, release: f64) {
        self.0.join(tid, site, child, arrival, release);
        self.1.join(tid, site, child, arrival, release);
    }
    fn counted_down(
        &mut self,
        tid: u32,
        site: u32,
        child: u32,
        counted: f64,
        arrival: f64,
        release: f64,
    ) {
        self.0
            .counted_down(tid, site, child, counted, arrival, release);
        self.1
            .counted_down(tid, site, child, counted, arrival, release);
    }
    fn horizon(&mut self, at: f64) {
        self.0.horizon(at);
        self.1.horizon(at);
    }
    fn lock_acquired(
        &mut self,
        tid: u32,
        addr: u64,
        site: u32,
        asked: f64,
        at: f64,
        contended: bool,
    ) {
        self.0.lock_acquired(tid, addr, site, asked, at, contended);
        self.1.lock_acquired(tid, addr, site, asked, at, contended);
    }
    fn lock_released(&mut self, tid: u32, addr: u64, site: u32, at: f64, cost: f64) {
        self.0.lock_released(tid, addr, site, at, cost);
        self.1.lock_released(tid, addr, site, at, cost);
    }
    fn activity(&mut self, tid: u32, at: f64, running: bool) {
        self.0.activity(tid, at, running);
        self.1.activity(tid, at, running);
    }
}

/// An error that stops a run.
#[derive(Debug)]
pub enum SimError {
    /// The trace could not be read.
    Trace(TraceError),
    /// The memory system cannot be built from the machine's parameters.
    Machine(sim_memory::MachineError),
    /// A parameter of the branch predictor breaks its rule.
    Predictor(crate::bpred::ParamError),
    /// More threads are alive at once than the machine has cores.
    TooManyThreads {
        /// Threads alive at once (counting the one being created).
        threads: u32,
        /// Cores of the machine.
        cores: u32,
    },
    /// The host refused a thread the run needs.
    Host(std::io::Error),
    /// No thread can make progress.
    Deadlock(String),
    /// The run ended with records of some thread never replayed.
    Lost(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Trace(e) => e.fmt(f),
            SimError::Machine(e) => write!(f, "machine: {e}"),
            SimError::Predictor(e) => write!(f, "machine: branch_predictor.{e}"),
            SimError::TooManyThreads { threads, cores } => write!(
                f,
                "machine: {threads} threads of the trace are alive at once but the machine has \
                 {cores} cores (one running thread per core)"
            ),
            SimError::Host(e) => write!(f, "machine: cannot start a front-end host thread: {e}"),
            SimError::Deadlock(m) => write!(f, "deadlock: no thread can make progress\n{m}"),
            SimError::Lost(m) => write!(
                f,
                "replay lost work: records of the trace were never replayed (a bug in isim \
                 or a broken trace)\n{m}"
            ),
        }
    }
}

/// No `source()`: the message already includes the wrapped error's, and `{:#}` (anyhow's
/// chain) would print it twice.
impl std::error::Error for SimError {}

impl From<TraceError> for SimError {
    fn from(e: TraceError) -> Self {
        SimError::Trace(e)
    }
}

/// Per-thread results.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadResult {
    /// Thread id.
    pub thread: u32,
    /// The core it ran on: the main thread core 0, a created thread the lowest-numbered core
    /// that no running thread held when it was created (a core is freed when its thread
    /// ends).
    pub core: u32,
    /// Instructions executed in the ROI.
    pub instructions: u64,
    /// Cycles from the ROI start to the end of the run (the same for every thread).
    pub cycles: f64,
    /// The cycle stack; sums to `cycles`.
    pub stack: CycleStack,
    /// Conditional and indirect branches executed.
    pub branches: u64,
    /// Mispredicted branches.
    pub mispredictions: u64,
    /// Data-TLB first-level misses (0 without a TLB).
    pub tlb_misses: u64,
    /// Page walks (0 without a TLB).
    pub page_walks: u64,
    /// When the thread ended (cycles from the ROI start).
    pub end: f64,
    /// Instructions replayed without timing after the ROI ended (a thread still running when
    /// the program's region of interest, by default `main`, was over).
    pub after_roi: u64,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Cycles from the ROI start to the last thread's end.
    pub cycles: f64,
    /// Per thread.
    pub threads: Vec<ThreadResult>,
    /// Per-core memory counters.
    pub memory_cores: Vec<CoreStats>,
    /// Per-cache counters.
    pub caches: Vec<(String, CacheStats)>,
    /// Per DRAM controller, its row-buffer counters (empty without a bank model).
    pub dram: Vec<sim_memory::dram::BankStats>,
    /// Synchronization counts.
    pub sync: SyncStats,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    NotCreated,
    Runnable,
    Barrier(u64),
    Mutex(u64),
    Cond(u64),
    /// Waiting for a unit of the semaphore at this address.
    Sem(u64),
    /// Waiting to join the child since the given time.
    Join(u32, f64),
    /// Waiting for recorded release `k` (see [`Thread::pending`]).
    Ordered(u32),
    Done,
}

/// The recorded edges a thread still has to pass before it continues, in order, with the
/// component each wait is charged to, and what it waits on (for the watchdog).
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    edges: [Option<(u32, Component)>; 2],
    what: &'static str,
    addr: u64,
}

/// A batch of one thread's records and, for each, whether the thread's branch predictor
/// mispredicted it (false for anything but a branch).
#[derive(Default)]
pub(crate) struct Fed {
    pub(crate) batch: Batch,
    pub(crate) mispredicted: Vec<bool>,
}

/// The front end of one thread: its stream of records and its branch predictor. The
/// predictor sees the thread's branches in program order and nothing else (no timing, no
/// other thread), so its outcomes are the same whether computed just before each
/// instruction is timed or ahead of it on another host thread.
pub(crate) struct Front<'t> {
    stream: ThreadStream<'t>,
    bp: Predictor,
    /// Records decoded at a time on the simulating host thread ([`BATCH_RECORDS`]).
    batch: usize,
}

impl Front<'_> {
    /// Decodes the next batch of at most `max` records into `f` and predicts its branches;
    /// false at the end.
    pub(crate) fn fill(
        &mut self,
        tt: &TimingTable,
        f: &mut Fed,
        max: usize,
    ) -> Result<bool, TraceError> {
        if !self.stream.next_records(&mut f.batch, max)? {
            return Ok(false);
        }
        // Only the branches can be mispredicted: the predictor visits them alone.
        f.mispredicted.clear();
        f.mispredicted.resize(f.batch.records.len(), false);
        for &k in &f.batch.branches {
            let Record::Inst(i) = &f.batch.records[k as usize] else {
                unreachable!("a branch position holds an instruction");
            };
            f.mispredicted[k as usize] = predict(&mut self.bp, tt, i.sidx, i.taken, i.next);
        }
        debug_assert!(f.batch.records.iter().enumerate().all(|(k, r)| match r {
            Record::Inst(i) =>
                (tt.get(i.sidx).branch != sim_frontend::model::BranchKind::None)
                    == f.batch.branches.binary_search(&(k as u32)).is_ok(),
            Record::Marker(_) => true,
        }));
        Ok(true)
    }
}

/// What a decoder sends (`ahead.rs`).
pub(crate) enum Msg {
    Batch(Fed),
    End,
    Failed(TraceError),
}

/// Where a thread's batches come from.
enum Feed<'t> {
    /// Decoded and predicted on the simulation's host thread, when needed.
    Inline(Box<Front<'t>>),
    /// From a decoder host thread, batches ahead; spent batches go back for reuse.
    Ahead {
        queue: Arc<ahead::Queue>,
        decoder: Arc<ahead::Waker>,
    },
    /// The stream has ended (or its decoder is gone).
    Closed,
}

impl Thread<'_> {
    /// Makes the record at `pos` available, decoding the next batch if this one is spent;
    /// false at the end of the stream. Every reader of a thread's records goes through it, so
    /// where a batch ends changes nothing.
    #[inline]
    fn ready(&mut self, tid: u32, tt: &TimingTable, path: &Path) -> Result<bool, SimError> {
        if self.pos < self.fed.batch.records.len() {
            return Ok(true);
        }
        self.pos = 0;
        self.refill(tid, tt, path)
    }

    /// Replaces the spent batch with the stream's next; false at the end of the stream.
    fn refill(&mut self, tid: u32, tt: &TimingTable, path: &Path) -> Result<bool, SimError> {
        match &mut self.feed {
            Feed::Inline(front) => {
                let max = front.batch;
                Ok(front.fill(tt, &mut self.fed, max)?)
            }
            Feed::Ahead { queue, decoder } => {
                let spent = std::mem::take(&mut self.fed);
                match queue.take(spent, decoder) {
                    Some(Msg::Batch(f)) => {
                        self.fed = f;
                        Ok(true)
                    }
                    Some(Msg::End) => {
                        self.feed = Feed::Closed;
                        Ok(false)
                    }
                    Some(Msg::Failed(e)) => {
                        self.feed = Feed::Closed;
                        Err(e.into())
                    }
                    None => {
                        self.feed = Feed::Closed;
                        Err(TraceError::at(
                            path,
                            Some(tid),
                            0,
                            "the host thread decoding this stream stopped unexpectedly",
                        )
                        .into())
                    }
                }
            }
            Feed::Closed => Ok(false),
        }
    }
}

/// One simulated thread. Aligned to two host cache lines so that threads simulated on
/// different host threads never write the same host cache line.
#[repr(align(128))]
struct Thread<'t> {
    feed: Feed<'t>,
    fed: Fed,
    pos: usize,
    core: Core,
    state: State,
    end: f64,
    last_sidx: u32,
    /// Running (not blocked, started, not ended), as last reported to the observer.
    active: bool,
    /// In the parallel model: stopped at an instruction that needs the shared levels, not done
    /// yet (the record at `pos`); it waits for a round's serial part.
    parked: bool,
    pending: Pending,
    /// Instructions replayed without timing after the ROI ended.
    after_roi: u64,
    /// A marker to do before the thread's next record, once it runs again: a mutex request
    /// that waits for earlier threads to catch up, or a condition wait's re-lock (set when
    /// the wait begins, done once the recorded wake has let the thread go).
    pending_marker: Option<Marker>,
    /// The pending marker is an unlock call whose code ([`EngineConfig::lock_call`]) has run.
    unlock_paid: bool,
    /// The same for the read/write lock call it is in ([`Marker::RwLock`]).
    rw_lock_paid: bool,
    /// Mutexes the thread holds, in the order it took them.
    held: Vec<u64>,
    /// Its step in a futex mutex's acquisition, when its pending request is one.
    futex: Option<FutexStep>,
    /// When its mutex request in progress was first asked (a futex acquisition takes several
    /// steps; a condition wait's re-lock asks when the wake has come).
    asked: Option<f64>,
    /// Mutexes it held when it arrived at a barrier: handed back there (a thread waiting at
    /// a barrier holds no lock in replay, so a barrier built from a mutex and a condition
    /// variable cannot stall on its own mutex), and its next unlock or condition wait on one
    /// of them releases nothing.
    owed: Vec<u64>,
    /// Its futex wait in progress, when it waits for another thread's count-down at that
    /// thread's end (`model::EXIT_COUNT`): that thread, the wake, and when the wait began.
    counting: Option<(u32, Order, f64)>,
    /// Until when (its clock) it runs by [`SHARING_QUANTUM`]: [`SHARING_HOLD`] after its
    /// last access served by another core's cache.
    sharing_until: f64,
    /// When its current mutex request (or step of one) was asked.
    req: f64,
    /// Under [`LockModel::Futex`], while its compare-and-swap is on its way to a held lock's
    /// line ([`FutexStep::Attempt`]): when it asks again, the outcome known (its turn in the
    /// scheduler; else minus infinity). Its clock stays where its dispatch was: if the
    /// compare-and-swap takes the lock, the lock's code predicted that and the instructions
    /// after it were dispatched behind it meanwhile; if it fails, the slow path begins at the
    /// request ([`Engine::fail_attempt`]). Until then its clock holds the horizon back.
    wake: f64,
    /// Its compare-and-swap reached the released line first ([`Engine::settle`]).
    cas_won: bool,
}

impl Thread<'_> {
    /// When the thread does something next: its clock, or later while a request of its is
    /// on its way ([`Thread::wake`]). The scheduler orders threads by it.
    #[inline]
    fn key(&self) -> f64 {
        self.core.now.max(self.wake)
    }

    fn deferred(&self) -> bool {
        self.wake > f64::NEG_INFINITY
    }
}

/// A thread waiting for a mutex: when it asked (simulated time), who, and its rank for
/// breaking a lock-order cycle (the recorded order's release index: the traced run's order;
/// [`u32::MAX`] for a marker without a recorded order, which is never forced).
#[derive(Debug, Clone, Copy)]
struct Waiter {
    at: f64,
    tid: u32,
    rank: u32,
    /// Its request's recorded order (asked again with it after a futex wake).
    order: Order,
    /// [`LockModel::Futex`]: spinning on the word until then, or asleep.
    spin_until: Option<f64>,
    /// Spinning after a futex wait: it takes the lock marking the word contended.
    marks: bool,
    /// It asks for a read/write lock for reading (shared with other readers).
    shared: bool,
}

#[derive(Default)]
struct MutexState {
    /// The thread holding it alone (a mutex, or a read/write lock held for writing).
    owner: Option<u32>,
    /// A read/write lock ([`Marker::RwLock`]): the threads holding it for reading (a thread
    /// once per read lock it holds). Such a lock is arbitrated first come, first served
    /// whatever [`LockModel`] says (glibc's read/write lock is not its mutex word).
    readers: Vec<u32>,
    rw: bool,
    /// How many times the owner took it again without releasing it (recursive mutexes,
    /// OpenMP nest locks).
    depth: u32,
    /// When it was last released: a thread whose request comes later in engine order but
    /// earlier in simulated time still waits for that release.
    free_at: f64,
    waiters: Vec<Waiter>,
    /// Threads given the mutex while another held it, to break a lock-order cycle that
    /// simulated time created (their unlock releases nothing).
    forced: Vec<u32>,
    /// The core whose cache holds the lock word's line in the lock's timing, and when the
    /// line is there (a move in flight arrives then): moves of the line are serialized.
    line: Option<u32>,
    line_ready: f64,
    /// When that move was asked for: a request earlier in simulated time (done later in
    /// engine order, which is not strictly simulated-time order) does not wait for it.
    line_asked: f64,
    /// The earliest request for the line by another thread while the mutex was held: that
    /// thread and when its request could take the line (not before the holder had it).
    touch: Option<(u32, f64)>,
    /// When the owner became the owner (its request, or the release that handed it over):
    /// a request from before that hit an earlier holder, whose release is done.
    held_since: f64,
    /// Acquisitions so far ([`LockModel::Futex`]: a thread back from a futex wait sleeps
    /// only if the acquisition it found is still the one holding the lock).
    epoch: u64,
    /// The word is marked contended ([`LockModel::Futex`]): its release calls futex wake.
    contended: bool,
    /// How its lock implementation spins before it sleeps ([`LockModel::Futex`]; what the
    /// last lock marker that said it spins said).
    spin: Spin,
    /// Its releases are plain stores (glibc's spin lock, test-and-set locks: an unlock
    /// marker said so), which cannot tell whether anyone sleeps on the word, so its waiters
    /// never sleep: they spin until they take it ([`LockModel::Futex`]).
    plain: bool,
    /// It is taken by calls into untraced library code (a lock marker said so): its unlocks
    /// are such calls too, and cost [`EngineConfig::lock_call`].
    called: bool,
    /// [`LockModel::Futex`]: a compare-and-swap on its way to the core that released the
    /// free lock ([`CasInFlight`]): it takes the lock unless a thread asks before it arrives.
    pending: Option<CasInFlight>,
}

/// A POSIX semaphore in simulated time: the units there for the taking, each with the time
/// it became available (the initial ones at the start), and the threads waiting for one.
struct SemState {
    units: Vec<f64>,
    /// (when it asked, thread), in the order they asked.
    waiters: Vec<(f64, u32)>,
}

impl SemState {
    fn new(init: u32) -> Self {
        SemState {
            units: vec![f64::NEG_INFINITY; init as usize],
            waiters: Vec::new(),
        }
    }

    /// Takes the unit that became available first, if any.
    fn take(&mut self) -> Option<f64> {
        let k = (0..self.units.len()).min_by(|&a, &b| self.units[a].total_cmp(&self.units[b]))?;
        Some(self.units.swap_remove(k))
    }

    /// Removes the waiter that asked first (ties: the lower id).
    fn first_waiter(&mut self) -> Option<(f64, u32)> {
        let k = (0..self.waiters.len()).min_by(|&a, &b| {
            let (x, y) = (self.waiters[a], self.waiters[b]);
            x.0.total_cmp(&y.0).then(x.1.cmp(&y.1))
        })?;
        Some(self.waiters.remove(k))
    }
}

/// A thread's compare-and-swap for a lock that was released while the request was on its way
/// ([`LockModel::Futex`]): the lock is free until the request reaches the releaser's core, and
/// a thread asking before then (the releaser asking again, an unfair lock's usual winner)
/// takes it with the line still in its cache, the request then failing.
#[derive(Debug, Clone, Copy)]
struct CasInFlight {
    tid: u32,
    /// When the request set out and when it reaches the line (not before the release).
    asked: f64,
    arrives: f64,
    /// When the release was done, and the line then at the requester.
    freed: f64,
    ready: f64,
    /// It takes the lock marking the word contended (an exchange after a futex wait).
    marks: bool,
}

impl MutexState {
    /// Thread `tid` takes the free mutex, as of `at`: one more acquisition.
    fn take(&mut self, tid: u32, at: f64) {
        self.owner = Some(tid);
        self.held_since = at;
        self.epoch += 1;
    }

    /// Thread `tid` takes the read/write lock for reading, as of `at`, beside its other
    /// readers.
    fn take_shared(&mut self, tid: u32, at: f64) {
        if self.readers.is_empty() {
            self.held_since = at;
        }
        self.readers.push(tid);
        self.epoch += 1;
    }

    /// Whether a request finds the lock held: by a holder alone, or (asking to hold it
    /// alone) by readers. A reader is let in beside readers though a writer waits (glibc's
    /// default, `PTHREAD_RWLOCK_PREFER_READER_NP`).
    fn held_against(&self, shared: bool) -> bool {
        self.owner.is_some() || (!shared && !self.readers.is_empty())
    }

    /// Removes and returns the waiter that asked first in simulated time (ties: the lower id).
    fn first_waiter(&mut self) -> Option<Waiter> {
        let k = (0..self.waiters.len())
            .filter(|&k| self.waiters[k].spin_until.is_none())
            .min_by(|&a, &b| {
                let (x, y) = (&self.waiters[a], &self.waiters[b]);
                x.at.total_cmp(&y.at).then(x.tid.cmp(&y.tid))
            })?;
        Some(self.waiters.remove(k))
    }
}

/// Synchronization counts of a run (`summary.json`'s `sync`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SyncStats {
    /// Mutex acquisitions (locks, successful trylocks, condition waits' re-locks) arbitrated
    /// in simulated time.
    pub lock_acquisitions: u64,
    /// Of those, how many found the mutex held and waited.
    pub lock_waits: u64,
    /// Lock-order cycles that simulated time created (a thread waiting for a mutex whose
    /// holder waits, directly or through other holders, for the first thread) or stalls with
    /// every thread blocked and some waiting for a mutex, each resolved by giving one waiter
    /// its mutex while the holder keeps it (the waiter that came first in the traced run).
    pub lock_cycles_resolved: u64,
    /// Stalls with every thread blocked, no mutex to give, and some thread waiting for a
    /// recorded release that no thread has reached (a wake the traced run paired with this
    /// wait comes, in the replay, after a barrier the waiter itself must reach), each resolved
    /// by letting that waiter go on at its clock (the earliest, then the lowest id).
    #[serde(default)]
    pub order_waits_forced: u64,
    /// Futex waits called by threads that found a mutex held ([`LockModel::Futex`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub futex_waits: u64,
    /// Of those, how many slept (the lock was still held by the acquisition they found).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub futex_sleeps: u64,
    /// Futex wakes called by releases of a word marked contended.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub futex_wakes: u64,
    /// Attempts of spinning locks that found the word held and spun on it
    /// ([`LockModel::Futex`]'s `spin`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lock_spins: u64,
    /// Moves of mutex words' cache lines from one core to another (hand-overs of a lock, and
    /// a waiter's look taking the line from the holder), each costing the transfer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lock_line_moves: u64,
    /// Of those, how many came from a core of another socket (each paying the off-socket
    /// latency too): where threads sit decides them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lock_line_moves_off_socket: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A waiter's rank for breaking a lock-order cycle ([`Waiter::rank`]): where the traced run
/// let the acquisition through.
fn rank(order: Order) -> u32 {
    match order {
        Order::SIM => u32::MAX,
        o => o.release().unwrap_or(0),
    }
}

/// Each thread's clock and whether it can run, in id order (what [`Sched`] orders).
fn clocks<'a>(threads: &'a [Thread<'_>]) -> impl Iterator<Item = (f64, bool)> + 'a {
    threads
        .iter()
        .map(|th| (th.key(), th.state == State::Runnable))
}

enum Step {
    Quantum,
    Marker(Marker),
    End,
}

/// Why a thread's part of a round stopped.
enum Stop {
    /// Its clock passed the round's end.
    Horizon,
    /// Its next instruction needs more of the memory system than its core's own part.
    Shared,
    /// It reached a marker (consumed).
    Marker(Marker),
    /// Its stream ended.
    End,
    /// Its stream could not be read.
    Failed(Box<SimError>),
}

/// One thread's part of a round: the thread, its core's part of the memory system and where
/// its executed instructions wait for the observer (aligned like [`Thread`]).
#[repr(align(128))]
struct Lane<'a, 't, P> {
    tid: u32,
    /// The observer's part for this thread, if it has parts.
    part: Option<P>,
    /// The core's instruction count when the round began.
    before: u64,
    th: &'a mut Thread<'t>,
    mem: Private<'a>,
    done: Vec<(u32, InstResult)>,
    stacks: Vec<CycleStack>,
    stop: Stop,
}

impl<P: ThreadObserver> Lane<'_, '_, P> {
    /// Runs the thread until its clock passes `limit` or something stops it (see [`Stop`]);
    /// like [`Engine::slice`] but with the core's own part of the memory system only.
    fn run<O: Observer>(
        &mut self,
        tt: &TimingTable,
        limit: f64,
        roi_done: bool,
        path: &Path,
    ) -> Stop {
        let th = &mut *self.th;
        debug_assert!(th.state == State::Runnable && !th.parked);
        if let Some(m) = th.pending_marker.take() {
            return Stop::Marker(m);
        }
        while th.core.now <= limit {
            match th.ready(self.tid, tt, path) {
                Ok(true) => {}
                Ok(false) => return Stop::End,
                Err(e) => return Stop::Failed(Box::new(e)),
            }
            let b = &th.fed.batch;
            match &b.records[th.pos] {
                Record::Inst(i) => {
                    if roi_done {
                        th.pos += 1;
                        th.last_sidx = i.sidx;
                        th.after_roi += 1;
                        continue;
                    }
                    let ops = b.mem_of(i);
                    if !th.core.private_ok(&self.mem, tt, i.sidx, ops) {
                        return Stop::Shared;
                    }
                    let mispredicted = th.fed.mispredicted[th.pos];
                    th.pos += 1;
                    th.last_sidx = i.sidx;
                    if let Some(part) = &mut self.part {
                        let mut r = InstResult::default();
                        th.core
                            .execute(&mut self.mem, tt, i.sidx, ops, mispredicted, &mut r);
                        part.inst(i.sidx, &r, &th.core.stack);
                    } else if O::INSTS {
                        // Kept for the observer, which hears them after the phase.
                        self.done.push((i.sidx, InstResult::default()));
                        let r = &mut self.done.last_mut().expect("pushed").1;
                        th.core
                            .execute(&mut self.mem, tt, i.sidx, ops, mispredicted, r);
                        if O::STACKS {
                            self.stacks.push(th.core.stack);
                        }
                    } else {
                        let mut r = InstResult::default();
                        th.core
                            .execute(&mut self.mem, tt, i.sidx, ops, mispredicted, &mut r);
                    }
                }
                &Record::Marker(m) => {
                    th.pos += 1;
                    return Stop::Marker(m);
                }
            }
        }
        Stop::Horizon
    }
}

/// Executes instruction `i` of thread `tid` (`core`'s, `i` in `batch`) with the whole memory
/// system and tells the observer (the exact model's slices, and the parallel model's serial
/// parts). Inlined: out of line, the call cost the exact model's slice 4 % of its host
/// instructions. The callers read the instruction in place: a copy of a [`Record`] out of
/// the batch compiled to overlapping stack stores and a wider load that missed store
/// forwarding, 9 % of the exact model's host time.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn timed<O: Observer>(
    core: &mut Core,
    batch: &Batch,
    mem: &mut Memory,
    obs: &mut O,
    tt: &TimingTable,
    tid: u32,
    i: &Inst,
    mispredicted: bool,
) {
    let mut r = InstResult::default();
    core.execute(mem, tt, i.sidx, batch.mem_of(i), mispredicted, &mut r);
    obs.inst(tid, i.sidx, &r, &core.stack);
}

/// The engine.
pub struct Engine<'t, O: Observer> {
    /// The static instructions as the cores read them.
    timing: TimingTable,
    /// Host threads to use (1: everything on the calling thread).
    host_threads: usize,
    model: Model,
    quantum: f64,
    /// [`SHARING_QUANTUM`] or what [`Engine::sharing_quantum`] set (0: none).
    sharing_quantum: f64,
    /// [`Engine::served_by_others`] of each thread before a round of the parallel model
    /// (kept between rounds: [`Engine::round`]).
    served_before: Vec<u64>,
    /// Instructions the last parallel phase executed (a phase much smaller than a host
    /// thread's hand-over runs on the calling thread; where it runs changes no result).
    last_phase: u64,
    /// Per thread: the instructions (static index, result) a parallel phase executed, and the
    /// stack after each (if the observer reads it), reported to the observer after the phase.
    done: Vec<Vec<(u32, InstResult)>>,
    stacks: Vec<Vec<CycleStack>>,
    trace_path: &'t Path,
    mem: Memory,
    threads: Vec<Thread<'t>>,
    roi_active: bool,
    roi_done: bool,
    barriers: HashMap<u64, Vec<(u32, f64, bool)>>,
    /// Simulated time of each recorded release passed so far (NaN: not yet).
    releases: Vec<f64>,
    /// Threads other than the running one whose clock or state a marker or a thread's end
    /// changed since the scheduler's tree last heard (`sched.rs`): each is pushed where its
    /// clock moves or it is made runnable or not (`resume`, `drain`, `lock`, `proceed`; a
    /// condition's wake-up moves the clock, then locks).
    touched: Vec<u32>,
    mutexes: HashMap<u64, MutexState>,
    conds: HashMap<u64, Vec<(f64, u32, u64)>>,
    /// POSIX semaphores by address ([`Marker::SemWait`]).
    sems: HashMap<u64, SemState>,
    obs: O,
    executed: u64,
    sync: SyncStats,
    /// Cores of the machine (a created thread takes the lowest one no running thread holds).
    cores: u32,
    /// An error found inside a marker (no free core), returned by the scheduling loop.
    failed: Option<SimError>,
    /// What moving a lock word's line costs in the locks' timing: to another core of the
    /// socket (the memory system's idle neighbour transfer), and within the core (an L1 hit).
    line_transfer: f64,
    line_local: f64,
    /// `[core.latency] locked`: what a lock's atomic takes beyond its line's access.
    locked: f64,
    /// What a move to a core of another socket adds, and the cores of a socket.
    line_off_socket: f64,
    /// [`EngineConfig::lock_call`].
    lock_call: f64,
    cores_per_socket: u32,
    locks: LockModel,
    /// Where the last move of a lock word's line ([`Engine::move_line`]) took it from: the
    /// component an acquisition or release that waited for no other thread is charged to.
    line_comp: Component,
    /// Threads whose request is on its way ([`Thread::wake`]).
    deferred: u32,
}

fn has_roi_begin(trace: &Trace) -> Result<bool, TraceError> {
    if trace.thread_count() == 0 {
        return Ok(false);
    }
    let mut s = trace.stream(0)?;
    let mut b = Batch::default();
    while s.next_batch(&mut b)? {
        if b.records
            .iter()
            .any(|r| matches!(r, Record::Marker(Marker::RoiBegin)))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

impl<'t, O: Observer> Engine<'t, O> {
    /// Prepares a run of `trace` on the machine `cfg`.
    pub fn new(trace: &'t Trace, cfg: &EngineConfig, obs: O) -> Result<Self, SimError> {
        let n = trace.thread_count();
        let cores = cfg.memory.cores();
        if cores == 0 && n > 0 {
            return Err(SimError::TooManyThreads { threads: 1, cores });
        }
        let mut mem = Memory::new(cfg.memory.clone()).map_err(SimError::Machine)?;
        mem.set_erasure(cfg.erase.iter().copied());
        mem.set_erasure_mode(cfg.erasure);
        let roi = has_roi_begin(trace)?;
        let mut threads = Vec::with_capacity(n as usize);
        for t in 0..n {
            threads.push(Thread {
                feed: Feed::Inline(Box::new(Front {
                    stream: trace.stream(t)?,
                    bp: build(&cfg.bpred).map_err(SimError::Predictor)?,
                    batch: BATCH_RECORDS,
                })),
                fed: Fed::default(),
                pos: 0,
                // The main thread runs on core 0; the others take a free core when created.
                core: Core::new(cfg.core.clone(), 0, &mem, 0.0),
                state: if t == 0 {
                    State::Runnable
                } else {
                    State::NotCreated
                },
                end: 0.0,
                last_sidx: NO_SIDX,
                active: t == 0,
                parked: false,
                pending: Pending::default(),
                counting: None,
                after_roi: 0,
                pending_marker: None,
                unlock_paid: false,
                rw_lock_paid: false,
                held: Vec::new(),
                futex: None,
                asked: None,
                owed: Vec::new(),
                sharing_until: f64::NEG_INFINITY,
                req: 0.0,
                wake: f64::NEG_INFINITY,
                cas_won: false,
            });
        }
        Ok(Engine {
            timing: TimingTable::new(&trace.program.insts, &trace.meta.isa),
            host_threads: 1,
            model: Model::default(),
            quantum: QUANTUM,
            sharing_quantum: SHARING_QUANTUM,
            served_before: Vec::new(),
            last_phase: u64::MAX,
            done: (0..n).map(|_| Vec::new()).collect(),
            stacks: (0..n).map(|_| Vec::new()).collect(),
            trace_path: trace.path(),
            mem,
            threads,
            roi_active: !roi,
            roi_done: false,
            barriers: HashMap::new(),
            releases: Vec::new(),
            touched: Vec::new(),
            mutexes: HashMap::new(),
            conds: HashMap::new(),
            sems: HashMap::new(),
            obs,
            executed: 0,
            sync: SyncStats::default(),
            cores,
            failed: None,
            line_transfer: cfg.memory.neighbour_latency() as f64,
            line_comp: Component::MemL1d,
            line_local: cfg.memory.l1d.data_latency as f64,
            line_off_socket: cfg.memory.off_socket_latency as f64,
            cores_per_socket: cfg.memory.cores_per_socket.max(1),
            locks: cfg.locks,
            lock_call: cfg.lock_call,
            deferred: 0,
            locked: cfg.core.settings.latency.locked as f64,
        })
    }

    /// Lets the run use up to `n` host threads (at least 1; the default is 1). The results
    /// are the same, bit for bit, for every `n`: with more than one, each simulated thread's
    /// records are decoded and its branches predicted ahead of the timing (see [`Front`]) on
    /// `n - 1` decoder host threads (at most one per simulated thread; `ahead.rs`); the
    /// timing itself stays on the calling thread.
    pub fn host_threads(mut self, n: usize) -> Self {
        self.host_threads = n.max(1);
        self
    }

    /// Sets the quantum in cycles (default [`QUANTUM`]; at least one cycle): how far the
    /// exact model lets a thread run past the next slowest, and how long the parallel model's
    /// rounds are. A smaller quantum interleaves the cores' accesses to shared data more
    /// finely, at more scheduling work (`docs/parallel.md` shows how results move with it).
    pub fn quantum(mut self, cycles: f64) -> Self {
        self.quantum = cycles.max(1.0);
        self
    }

    /// Sets how far a thread that shares written data with other cores may run past the next
    /// slowest (default [`SHARING_QUANTUM`]; capped by the quantum): 0 lets such threads run
    /// by the quantum like the others, as the engine did before it had this rule (the tests
    /// of old traces' stored results use it).
    pub fn sharing_quantum(mut self, cycles: f64) -> Self {
        self.sharing_quantum = cycles.max(0.0);
        self
    }

    /// Sets how many records a thread's stream is decoded at a time on the simulating host
    /// thread (default [`BATCH_RECORDS`]; at least 1). No result depends on it (the tests
    /// vary it to show that); only the host's cache behaviour does.
    pub fn batch_records(mut self, n: usize) -> Self {
        for th in &mut self.threads {
            if let Feed::Inline(front) = &mut th.feed {
                front.batch = n.max(1);
            }
        }
        self
    }

    /// Chooses the model (default [`Model::Exact`]).
    pub fn model(mut self, m: Model) -> Self {
        self.model = m;
        self
    }

    /// Runs to the end; `progress` is called with the instructions executed so far, about
    /// every million.
    pub fn run(mut self, progress: impl FnMut(u64)) -> Result<(RunResult, O), SimError> {
        let tt = std::mem::take(&mut self.timing);
        if self.model == Model::Parallel {
            // The calling thread is one of the run's host threads; more threads than the
            // host has cores would only wait for each other (the results are the same).
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let workers = if self.threads.len() > 1 {
                self.host_threads.min(cores) - 1
            } else {
                0
            };
            crew::scope(workers, |crew| self.run_on(&tt, progress, Some(crew)))
                .map_err(SimError::Host)??;
            return Ok(self.finish());
        }
        if self.host_threads <= 1 || self.threads.is_empty() {
            self.run_on(&tt, progress, None)?;
            return Ok(self.finish());
        }
        // The simulating thread is one of the run's host threads; the decoders are the
        // others (no more than there are simulated threads), each serving a fixed set of
        // simulated threads.
        let n = self.host_threads.min(self.threads.len() + 1) - 1;
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            // Sets the stop flag and wakes the decoders however the simulation ends.
            let mut decoders = ahead::Decoders {
                stop: &stop,
                threads: Vec::with_capacity(n),
            };
            // Per decoder: its front ends, their queues and how to wake it.
            type Set<'a> = (
                Vec<Box<Front<'a>>>,
                Vec<Arc<ahead::Queue>>,
                Arc<ahead::Waker>,
            );
            let mut sets: Vec<Set<'_>> = (0..n).map(|_| Default::default()).collect();
            for (tid, th) in self.threads.iter_mut().enumerate() {
                let Feed::Inline(front) = std::mem::replace(&mut th.feed, Feed::Closed) else {
                    continue;
                };
                let queue = Arc::new(ahead::Queue::default());
                let (fronts, queues, waker) = &mut sets[tid % n];
                fronts.push(front);
                queues.push(Arc::clone(&queue));
                th.feed = Feed::Ahead {
                    queue,
                    decoder: Arc::clone(waker),
                };
            }
            let mut started = Ok(());
            for (d, (mut fronts, queues, waker)) in sets.into_iter().enumerate() {
                let (tt, stop) = (&tt, &stop);
                let fill = move |i: usize, f: &mut Fed| match fronts[i].fill(
                    tt,
                    f,
                    ahead::AHEAD_RECORDS,
                ) {
                    Ok(true) => None,
                    Ok(false) => Some(Msg::End),
                    Err(e) => Some(Msg::Failed(e)),
                };
                let spawned = std::thread::Builder::new()
                    .name(format!("isim-decode-{d}"))
                    .spawn_scoped(scope, move || ahead::decode(fill, &queues, &waker, stop));
                match spawned {
                    Ok(h) => decoders.threads.push(h.thread().clone()),
                    Err(e) => {
                        started = Err(SimError::Host(e));
                        break;
                    }
                }
            }
            let r = started.and_then(|()| self.run_on(&tt, progress, None));
            drop(decoders);
            r
        })?;
        Ok(self.finish())
    }

    /// The scheduling loop of both models. Each turn picks the runnable thread with the
    /// smallest clock; with a `crew` (the parallel model), while the ROI is timed and more
    /// than one thread can run, the turn is a [`Engine::round`]; otherwise it is the exact
    /// model's slice of that thread (a lone runnable thread has nobody to interleave with:
    /// a slice gives it the same results as rounds would, with less work).
    fn run_on(
        &mut self,
        tt: &TimingTable,
        mut progress: impl FnMut(u64),
        crew: Option<&Crew<'_>>,
    ) -> Result<(), SimError> {
        let mut reported = 0u64;
        if self.roi_active && !self.threads.is_empty() {
            self.obs.thread_start(0, 0.0);
            self.obs.activity(0, 0.0, true);
        }
        let mut sched = Sched::new(self.threads.len());
        sched.rebuild(clocks(&self.threads));
        loop {
            let first = sched.first();
            debug_assert_eq!(first, sched::scan(clocks(&self.threads)));
            let Some((at, tid, second)) = first else {
                if self
                    .threads
                    .iter()
                    .all(|t| t.state == State::Done || t.state == State::NotCreated)
                {
                    break;
                }
                // Every thread is blocked and some wait for a mutex: a lock-order cycle
                // through other waits (a barrier, a recorded wake) that simulated time made.
                // Only a stall with no mutex waiter from a traced run is a deadlock.
                if self.force_one(|_| true) || self.force_order() {
                    for t in self.touched.drain(..) {
                        let th = &self.threads[t as usize];
                        sched.update(t, th.key(), th.state == State::Runnable);
                    }
                    continue;
                }
                return Err(SimError::Deadlock(self.describe()));
            };
            self.obs.horizon(self.horizon(at));
            // The tree is told what changed: after a round, every thread; after a slice, its
            // thread and the threads its marker or end made runnable or not (`touched`).
            match crew {
                // The earliest thread, while it shares written data with other cores, takes
                // a slice of the exact model: in rounds, its accesses to the shared lines
                // would be done one per round, in an order that is not simulated time's.
                Some(crew)
                    if self.roi_active
                        && sched.runnable() > 1
                        && self.quantum_of(tid) == self.quantum =>
                {
                    self.round(tt, at + self.quantum, crew)?;
                    sched.rebuild(clocks(&self.threads));
                    self.touched.clear();
                }
                _ => {
                    let limit = if second.is_finite() {
                        second + self.quantum_of(tid)
                    } else {
                        f64::INFINITY
                    };
                    // A slice does a parked instruction as any other, with the whole memory.
                    self.threads[tid as usize].parked = false;
                    let before = self.served_by_others(tid);
                    let step = self.slice(tt, tid, limit)?;
                    self.note_sharing(tid, before);
                    match step {
                        Step::Quantum => {}
                        Step::End => self.end_thread(tid),
                        Step::Marker(m) => self.marker(tid, m),
                    }
                    // The thread, and those a marker or its end woke or blocked.
                    for t in std::iter::once(tid).chain(self.touched.drain(..)) {
                        let th = &self.threads[t as usize];
                        sched.update(t, th.key(), th.state == State::Runnable);
                    }
                }
            }
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            if self.executed >= reported + (1 << 20) {
                reported = self.executed;
                progress(reported);
            }
        }
        progress(self.executed);
        self.check_consumed(tt)
    }

    /// Every thread's stream must have been replayed to its end: a thread never created, or
    /// records after a thread's end, are work the run would otherwise drop without a word.
    fn check_consumed(&mut self, tt: &TimingTable) -> Result<(), SimError> {
        let mut lost = String::new();
        for tid in 0..self.threads.len() as u32 {
            let path = self.trace_path;
            let th = &mut self.threads[tid as usize];
            let state = th.state;
            if !th.ready(tid, tt, path)? {
                continue;
            }
            let left = th.fed.batch.records.len() - th.pos;
            let what = if state == State::NotCreated {
                "was never created (no create marker of another thread reached it)"
            } else {
                "ended before the end of its stream"
            };
            lost.push_str(&format!(
                "  thread {tid} {what}: at least {left} of its records were not replayed\n"
            ));
        }
        if lost.is_empty() {
            Ok(())
        } else {
            Err(SimError::Lost(lost))
        }
    }

    /// One round of [`Model::Parallel`]: each runnable thread runs on its own (on the crew's
    /// threads) with its core's [`Private`] part of the memory system until its clock
    /// passes `limit`, a marker, the end of its stream, or an instruction that part cannot
    /// serve alone ([`Core::private_ok`]); then, on this thread, the observer hears each
    /// thread's instructions in thread order, and the instructions and markers that stopped
    /// the threads are done in simulated-time order (ties: thread id).
    fn round(&mut self, tt: &TimingTable, limit: f64, crew: &Crew<'_>) -> Result<(), SimError> {
        let (roi_done, path) = (self.roi_done, self.trace_path);
        let n = self.threads.len();
        // What other cores' caches had served each thread before the round.
        let mut served = std::mem::take(&mut self.served_before);
        served.clear();
        served.extend((0..n as u32).map(|t| self.served_by_others(t)));
        let mut parts = self.obs.parts().map(Vec::into_iter);
        // Lanes for the threads that can run: runnable, not parked, within the round.
        // Each core's private part, taken by the thread running on that core.
        let mut privates: Vec<Option<Private<'_>>> = self.mem.privates().map(Some).collect();
        let mut lanes: Vec<Lane<'_, 't, O::Part<'_>>> = self
            .threads
            .iter_mut()
            .zip(self.done.iter_mut().zip(self.stacks.iter_mut()))
            .enumerate()
            .filter_map(|(tid, (th, (done, stacks)))| {
                let part = parts.as_mut().and_then(Iterator::next);
                let runs = th.state == State::Runnable && !th.parked && th.key() <= limit;
                let mem = if runs {
                    privates[th.core.id() as usize].take()
                } else {
                    None
                };
                mem.map(|mem| Lane {
                    tid: tid as u32,
                    part,
                    before: th.core.instructions,
                    th,
                    mem,
                    done: std::mem::take(done),
                    stacks: std::mem::take(stacks),
                    stop: Stop::Horizon,
                })
            })
            .collect();
        drop(parts);
        // A phase of a couple of hundred instructions costs less on this thread than handed
        // out. (With private L2s in the lanes, 200 is faster than 400 on the programs whose
        // lanes go on through their L2 hits, and no slower elsewhere; 100 and 0, the same.)
        let inline = self.last_phase < 200;
        crew.run(
            &mut lanes,
            inline,
            |l| l.tid as usize,
            |l| l.stop = l.run::<O>(tt, limit, roi_done, path),
        );
        // Time order of what stopped the threads (non-negative clocks order like their bits),
        // and of the parked ones' instructions.
        let mut order = BinaryHeap::with_capacity(n);
        let mut stops: Vec<Option<Stop>> = Vec::with_capacity(n);
        let mut phase = 0;
        for l in lanes {
            self.done[l.tid as usize] = l.done;
            self.stacks[l.tid as usize] = l.stacks;
            phase += l.th.core.instructions - l.before;
            match l.stop {
                Stop::Horizon => {}
                Stop::Shared => l.th.parked = true,
                stop => {
                    order.push(Reverse((l.th.key().to_bits(), l.tid, stops.len())));
                    stops.push(Some(stop));
                }
            }
        }
        self.executed += phase;
        self.last_phase = phase;
        for (tid, th) in self.threads.iter().enumerate() {
            if th.parked {
                order.push(Reverse((th.core.now.to_bits(), tid as u32, stops.len())));
                stops.push(Some(Stop::Shared));
            }
        }
        for tid in 0..self.threads.len() as u32 {
            let t = tid as usize;
            if self.done[t].is_empty() {
                continue;
            }
            let done = std::mem::take(&mut self.done[t]);
            for (k, (sidx, r)) in done.iter().enumerate() {
                let stack = if O::STACKS {
                    &self.stacks[t][k]
                } else {
                    &self.threads[t].core.stack
                };
                self.obs.inst(tid, *sidx, r, stack);
            }
            self.done[t] = done;
            self.done[t].clear();
            self.stacks[t].clear();
        }
        // Instructions more than SKEW past the earliest wait for a later round (their
        // threads stay parked), so that a thread ahead in time does not take the shared
        // levels before a slower one by more than that.
        let skew = SKEW.min(self.quantum);
        let mut earliest: Option<f64> = None;
        while let Some(Reverse((at, tid, k))) = order.pop() {
            let at = f64::from_bits(at);
            let first = *earliest.get_or_insert(at);
            if matches!(stops[k], Some(Stop::Shared)) && at > first + skew {
                continue;
            }
            match stops[k].take() {
                None | Some(Stop::Horizon) => {}
                Some(Stop::Shared) => {
                    self.threads[tid as usize].parked = false;
                    self.step_shared(tt, tid);
                    // A thread whose next instruction needs the shared levels too goes on
                    // with it, in its turn: a burst of misses takes one round, not one each.
                    if self.shared_next(tt, tid, limit)? {
                        self.threads[tid as usize].parked = true;
                        stops[k] = Some(Stop::Shared);
                        let now = self.threads[tid as usize].core.now;
                        order.push(Reverse((now.to_bits(), tid, k)));
                    }
                }
                Some(Stop::Marker(m)) => self.marker(tid, m),
                Some(Stop::End) => self.end_thread(tid),
                Some(Stop::Failed(e)) => return Err(*e),
            }
        }
        for (tid, &before) in served.iter().enumerate() {
            self.note_sharing(tid as u32, before);
        }
        self.served_before = served;
        Ok(())
    }

    /// Whether thread `tid` can go on in this round's serial part: it is runnable within the
    /// round, and its next record is an instruction that needs more than its core's own part
    /// (decoded if its batch is spent: this once looked only at the records already decoded,
    /// so a burst stopped at every batch's end and results depended on the trace's chunks).
    fn shared_next(&mut self, tt: &TimingTable, tid: u32, limit: f64) -> Result<bool, SimError> {
        let path = self.trace_path;
        let th = &mut self.threads[tid as usize];
        if !self.roi_active
            || th.state != State::Runnable
            || th.core.now > limit
            || th.pending_marker.is_some()
        {
            return Ok(false);
        }
        if !th.ready(tid, tt, path)? {
            return Ok(false);
        }
        let Record::Inst(i) = &th.fed.batch.records[th.pos] else {
            return Ok(false);
        };
        Ok(!th.core.private_ok(
            &self.mem.private(th.core.id()),
            tt,
            i.sidx,
            th.fed.batch.mem_of(i),
        ))
    }

    /// Executes the instruction a thread stopped at in a round, with the whole memory system.
    fn step_shared(&mut self, tt: &TimingTable, tid: u32) {
        let th = &mut self.threads[tid as usize];
        let Record::Inst(i) = &th.fed.batch.records[th.pos] else {
            unreachable!("a round stops before instructions only")
        };
        let mispredicted = th.fed.mispredicted[th.pos];
        th.pos += 1;
        th.last_sidx = i.sidx;
        if !self.roi_active {
            // A marker done earlier in the round ended the ROI.
            th.after_roi += 1;
            return;
        }
        let (c, b) = (&mut th.core, &th.fed.batch);
        timed(c, b, &mut self.mem, &mut self.obs, tt, tid, i, mispredicted);
        self.executed += 1;
    }

    fn describe(&self) -> String {
        let mut s = String::new();
        for (i, th) in self.threads.iter().enumerate() {
            let what = match th.state {
                State::NotCreated => "never created".to_string(),
                State::Runnable => "runnable".to_string(),
                State::Barrier(id) => {
                    let n = self.barriers.get(&id).map_or(0, |v| v.len());
                    format!("waits at barrier {id:#x} ({n} arrived)")
                }
                State::Mutex(a) => format!(
                    "waits for mutex {a:#x} held by thread {}",
                    self.mutexes
                        .get(&a)
                        .and_then(|m| m.owner.or(m.readers.first().copied()))
                        .map_or("none".into(), |o| o.to_string())
                ),
                State::Cond(c) => format!("waits on condition {c:#x}"),
                State::Sem(a) => format!("waits for semaphore {a:#x}"),
                State::Join(c, _) => format!("waits to join thread {c}"),
                State::Ordered(k) => format!(
                    "waits for recorded release #{k} ({} {:#x}), which no thread has reached",
                    th.pending.what, th.pending.addr
                ),
                State::Done => "ended".to_string(),
            };
            s.push_str(&format!(
                "  thread {i} at cycle {:.0}: {what}\n",
                th.core.now
            ));
        }
        s
    }

    /// How far thread `tid` may run past the next slowest thread in the exact model: the
    /// quantum, or [`SHARING_QUANTUM`] while it shares written data with other cores
    /// ([`Thread::sharing_until`]). The parallel model gives such a thread, when it is the
    /// earliest, a slice of the exact model instead of a round.
    fn quantum_of(&self, tid: u32) -> f64 {
        let th = &self.threads[tid as usize];
        if self.sharing_quantum > 0.0 && th.core.now < th.sharing_until {
            self.quantum.min(self.sharing_quantum)
        } else {
            self.quantum
        }
    }

    /// Accesses of thread `tid`'s core served by another core's cache so far (a line another
    /// core had modified, or a cache of another socket).
    fn served_by_others(&self, tid: u32) -> u64 {
        let s = &self.mem.core_stats[self.threads[tid as usize].core.id() as usize].served;
        s[Served::L1Neighbor as usize]
            + s[Served::L2Neighbor as usize]
            + s[Served::OffSocket as usize]
    }

    /// After thread `tid` ran, `before` being [`Engine::served_by_others`] then: if some of
    /// its accesses were served by another core's cache, it runs by [`SHARING_QUANTUM`] for
    /// the next [`SHARING_HOLD`] cycles.
    fn note_sharing(&mut self, tid: u32, before: u64) {
        if self.served_by_others(tid) != before {
            let th = &mut self.threads[tid as usize];
            th.sharing_until = th.core.now + SHARING_HOLD;
        }
    }

    /// The exact model's turn of thread `tid`: its instructions until its clock passes
    /// `limit`, a marker, or the end of its stream. Out of line: the instruction loop is
    /// here, and inlined into the scheduling loop its code changed with any change there
    /// (with the scheduler's tree, 3 % more host instructions per simulated instruction on
    /// the traced programs; out of line, 0.5–1.5 % more than inlined before the tree, with
    /// the tree or the scan alike, and no slower in alternating timed runs).
    #[inline(never)]
    fn slice(&mut self, tt: &TimingTable, tid: u32, limit: f64) -> Result<Step, SimError> {
        let th = &mut self.threads[tid as usize];
        if let Some(m) = th.pending_marker.take() {
            return Ok(Step::Marker(m));
        }
        while th.core.now <= limit {
            if !th.ready(tid, tt, self.trace_path)? {
                return Ok(Step::End);
            }
            if self.roi_active && !self.roi_done {
                // The timed instructions left in the batch, in one loop over the records and
                // their predictions side by side (the ROI changes only at a marker).
                let (b, start) = (&th.fed.batch, th.pos);
                let records = &b.records[start..];
                let mispredicted = &th.fed.mispredicted[start..start + records.len()];
                let c = &mut th.core;
                let (mut pos, mut last) = (start, th.last_sidx);
                let mut marker = None;
                for (rec, &mispredicted) in records.iter().zip(mispredicted) {
                    if c.now > limit {
                        break;
                    }
                    pos += 1;
                    match rec {
                        Record::Inst(i) => {
                            last = i.sidx;
                            timed(c, b, &mut self.mem, &mut self.obs, tt, tid, i, mispredicted);
                        }
                        &Record::Marker(m) => {
                            marker = Some(m);
                            break;
                        }
                    }
                }
                self.executed += (pos - start - marker.is_some() as usize) as u64;
                (th.pos, th.last_sidx) = (pos, last);
                if let Some(m) = marker {
                    return Ok(Step::Marker(m));
                }
                continue;
            }
            let b = &th.fed.batch;
            let rec = &b.records[th.pos];
            th.pos += 1;
            match rec {
                Record::Inst(i) => {
                    th.last_sidx = i.sidx;
                    if !self.roi_done {
                        th.core.warm(&mut self.mem, tt, i.sidx, b.mem_of(i));
                    } else {
                        th.after_roi += 1;
                    }
                }
                &Record::Marker(m) => return Ok(Step::Marker(m)),
            }
        }
        Ok(Step::Quantum)
    }

    fn timed(&self) -> bool {
        self.roi_active
    }

    /// Records a running/blocked change of thread `t` at `at` and reports it when timed.
    fn set_active(&mut self, t: u32, at: f64, running: bool) {
        let th = &mut self.threads[t as usize];
        if th.active != running {
            th.active = running;
            if self.roi_active {
                self.obs.activity(t, at, running);
            }
        }
    }

    fn resume(&mut self, t: u32, at: f64, c: Component) {
        self.touched.push(t);
        let timed = self.timed();
        let th = &mut self.threads[t as usize];
        if timed {
            let from = th.core.now;
            th.core.wait_until(at, c);
            if c != Component::SyncBarrier && at > from {
                self.obs.wait(t, c, from, at);
            }
        }
        th.state = State::Runnable;
        let at = th.core.now.max(at);
        self.set_active(t, at, true);
    }

    fn drain(&mut self, tid: u32) -> f64 {
        self.touched.push(tid);
        if self.timed() {
            self.threads[tid as usize].core.drain()
        } else {
            self.threads[tid as usize].core.now
        }
    }

    /// When thread `tid`'s locked instruction (a lock's acquisition or release) performs if
    /// nothing holds it ([`Core::atomic_ready`]; its clock when not timed).
    fn atomic_at(&mut self, tid: u32) -> f64 {
        self.touched.push(tid);
        let core = &self.threads[tid as usize].core;
        if self.roi_active {
            core.atomic_ready()
        } else {
            core.now
        }
    }

    /// Thread `tid`, which asked for a mutex at `asked`, has it from `until`. Its acquiring
    /// instruction completes then ([`Core::atomic`]). If the thread found the mutex free, the
    /// instructions after it go on meanwhile (the lock's code predicted the acquisition),
    /// its loads from `free` (the previous holder's release: the data the lock protects no
    /// longer changes, so a load executed speculatively before the atomic stands), and the
    /// atomic's time is its line's, charged by the critical path to where the line came
    /// from. If it `waited`, the lock's code took its slow path: nothing after it is
    /// dispatched before `until`, and the time from the request is `sync-crit-sect` (to
    /// observers, one wait); the instructions before it go on completing in the window.
    fn acquired(&mut self, tid: u32, addr: u64, asked: f64, until: f64, waited: bool, free: f64) {
        self.touched.push(tid);
        if self.timed() {
            let comp = self.line_comp;
            let core = &mut self.threads[tid as usize].core;
            if waited {
                // (The wait first: the atomic's dispatch slot after it is not part of it.)
                core.stall_until(asked);
                core.wait_until(until, Component::SyncCritSect);
                core.atomic(until, comp, until, addr);
                if until > asked {
                    self.obs.wait(tid, Component::SyncCritSect, asked, until);
                }
            } else {
                core.atomic(until, comp, free.min(until), addr);
            }
        }
        self.threads[tid as usize].state = State::Runnable;
        self.set_active(tid, until, true);
    }

    fn end_thread(&mut self, tid: u32) {
        let end = self.drain(tid);
        let th = &mut self.threads[tid as usize];
        if th.state == State::Done {
            return;
        }
        th.state = State::Done;
        th.end = end;
        if self.timed() {
            self.obs.thread_end(tid, end);
        }
        self.set_active(tid, end, false);
        let joiners: Vec<(u32, f64)> = (0..self.threads.len() as u32)
            .filter_map(|j| match self.threads[j as usize].state {
                State::Join(c, since) if c == tid => Some((j, since)),
                _ => None,
            })
            .collect();
        for (j, since) in joiners {
            let at = self.threads[j as usize].core.now.max(end);
            if self.timed() {
                let site = self.threads[j as usize].last_sidx;
                self.obs.join(j, site, tid, since, at);
            }
            self.resume(j, at, Component::SyncJoin);
        }
    }

    /// What the engine tells observers of the scheduler's earliest time `at`: no later than the
    /// clock of a thread whose request is on its way ([`Thread::wake`]), which may still
    /// dispatch from there.
    fn horizon(&self, at: f64) -> f64 {
        if self.deferred == 0 {
            return at;
        }
        self.threads
            .iter()
            .filter(|th| th.deferred())
            .fold(at, |h, th| h.min(th.core.now))
    }

    /// Thread `tid`'s request on its way is decided ([`Thread::wake`]).
    fn undefer(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        if th.deferred() {
            th.wake = f64::NEG_INFINITY;
            self.deferred -= 1;
        }
    }

    /// Thread `tid`'s compare-and-swap, on its way since [`Thread::req`], failed (it reached
    /// the held lock's line, or another thread took the lock first), seen at `now`: the lock's
    /// code takes its slow path from the request on, nothing after it dispatched meanwhile,
    /// the time `sync-crit-sect`, as for a thread that found the lock held.
    fn fail_attempt(&mut self, tid: u32, now: f64) {
        self.undefer(tid);
        if self.timed() {
            let req = self.threads[tid as usize].req;
            self.threads[tid as usize].core.stall_until(req);
            self.set_active(tid, req, false);
        }
        self.resume(tid, now, Component::SyncCritSect);
    }

    /// Whether another runnable thread is earlier in simulated time than `tid` at `now` (ties:
    /// the lower id): a mutex request waits for those to catch up, so that mutexes go first
    /// come, first served in simulated time, not in the order the scheduler's quantum let the
    /// threads reach their markers.
    fn someone_earlier(&self, tid: u32, now: f64) -> bool {
        self.threads.iter().enumerate().any(|(u, th)| {
            u as u32 != tid
                && th.state == State::Runnable
                && (th.key() < now || (th.key() == now && (u as u32) < tid))
        })
    }

    /// The atomic write of a lock word by `tid`'s core at `at`, through the memory system:
    /// its latency (0 when not timed). The traced program's own lock code ran inside the C
    /// library, untraced; this is its one access that other cores see, so an acquisition
    /// costs what moving the lock's cache line to this core costs (an L1 hit when it is
    /// already here).
    fn lock_word(&mut self, tid: u32, addr: u64, at: f64) -> (f64, Component) {
        if !self.timed() {
            return (0.0, Component::MemL1d);
        }
        let core = self.threads[tid as usize].core.id();
        let o = self.mem.access(
            core,
            0,
            addr,
            4,
            sim_memory::Kind::Store,
            sim_memory::cycles::to_u64(at),
        );
        (o.latency as f64, Component::of_served(o.served))
    }

    /// Moves mutex `addr`'s line to `tid`'s core, asked for at `at` (after any move in
    /// flight): when it is there. The memory system does the access (cache state, counts;
    /// its latency times the word's first access, from wherever the line was, and every
    /// access of the core that holds the line already, which may have evicted it); otherwise
    /// the line is a token one core holds at a time, each move between cores costing the
    /// machine's neighbour transfer on an idle machine (requests for one line from several
    /// cores reach the memory system out of time order, so its latencies would mix in
    /// waits for moves that come later in simulated time).
    fn move_line(&mut self, tid: u32, addr: u64, at: f64) -> f64 {
        let core = self.threads[tid as usize].core.id();
        let m = self.mutexes.entry(addr).or_default();
        let start = if at >= m.line_asked {
            at.max(m.line_ready)
        } else {
            at
        };
        let was = m.line;
        let (first, served) = self.lock_word(tid, addr, start);
        let (lat, comp) = match was {
            _ if !self.timed() => (0.0, served),
            Some(c) if c != core => (
                self.move_cost(c, core),
                if c / self.cores_per_socket != core / self.cores_per_socket {
                    Component::MemOffSocket
                } else {
                    Component::MemL1Neighbor
                },
            ),
            // Its first access, or this core's again: the memory system's latency, which
            // knows whether the line is still in this core's caches (a tree of per-node
            // locks, deeper than they hold, finds most of its lock words evicted).
            _ => (first, served),
        };
        self.line_comp = comp;
        // The locked instruction holds the line for its own latency beyond the access.
        let lat = if self.timed() { lat + self.locked } else { lat };
        self.place_line(addr, core, start, start + lat)
    }

    /// Thread `w`'s request, on its way since `asked`, brings mutex `addr`'s word, released
    /// at `freed`, to its core: the lock word's write there, and the line at `w`'s core from
    /// `ready`.
    fn fetch_released(&mut self, w: u32, addr: u64, freed: f64, asked: f64, ready: f64) {
        self.lock_word(w, addr, freed);
        self.line_comp = Component::MemL1Neighbor;
        let core = self.threads[w as usize].core.id();
        self.place_line(addr, core, asked, ready);
    }

    /// Records that mutex `addr`'s line goes to `core`, asked for at `asked`, there at
    /// `ready` (counting the move if it comes from another core); returns `ready`.
    fn place_line(&mut self, addr: u64, core: u32, asked: f64, ready: f64) -> f64 {
        let (timed, per_socket) = (self.timed(), self.cores_per_socket);
        let m = self.mutexes.entry(addr).or_default();
        if timed
            && let Some(was) = m.line
            && was != core
        {
            self.sync.lock_line_moves += 1;
            if was / per_socket != core / per_socket {
                self.sync.lock_line_moves_off_socket += 1;
            }
        }
        m.line = Some(core);
        m.line_asked = asked;
        m.line_ready = ready;
        ready
    }

    /// What moving a lock word's line from core `from` to core `to` costs: an L1 hit on the
    /// same core, the idle neighbour transfer within a socket, plus the off-socket latency
    /// between sockets.
    fn move_cost(&self, from: u32, to: u32) -> f64 {
        if from == to {
            self.line_local
        } else if from / self.cores_per_socket != to / self.cores_per_socket {
            self.line_transfer + self.line_off_socket
        } else {
            self.line_transfer
        }
    }

    /// How long thread `tid`'s request for a lock word's line takes from core `from` to the
    /// line at core `to`: half a move ([`Engine::move_cost`]), give or take
    /// [`TRAVEL_JITTER`] / 2, drawn deterministically (a hash of the thread and of how many
    /// acquisitions the run has made). Whether a request reaches the holder before or after
    /// its release decides a futex lock's hand-over, and with a fixed time two threads whose
    /// loops are periodic lock into one phase for the whole run: a request landing in every
    /// critical section, or in none (the 2-thread run of `lock_counter -w 10` took 0.19 or
    /// 0.58 of one thread's speed as the transfer moved by 25 cycles; docs/validation.md).
    fn travel(&self, from: u32, to: u32, tid: u32) -> f64 {
        let vary = TRAVEL_JITTER * (unit_hash(self.sync.lock_acquisitions, tid) - 0.5);
        self.move_cost(from, to) / 2.0 * (1.0 + vary)
    }

    /// Thread `tid` asks for mutex `addr`'s line at `at` (its failed attempt on a held
    /// lock). A free lock's line simply moves. A held
    /// one's move is decided at the release, when it is known whether the request reached
    /// the holder's core before the holder let go ([`Engine::unlock`]).
    fn touch(&mut self, tid: u32, addr: u64, at: f64) {
        if !self.timed() {
            return;
        }
        let m = self.mutexes.entry(addr).or_default();
        match m.owner {
            Some(o) if o != tid => {
                if at < m.held_since {
                    return;
                }
                let x = at.max(m.line_ready);
                if m.touch.is_none_or(|(_, t)| x < t) {
                    m.touch = Some((tid, x));
                }
            }
            _ => {
                self.move_line(tid, addr, at);
            }
        }
    }

    /// Gives mutex `addr` to `tid` (which asked at [`Thread::req`]) when it is free at `at`:
    /// its atomic completes once the lock word's line is here ([`Engine::acquired`]; a thread
    /// that blocked waits until then, the whole wait charged to `sync-crit-sect`, to
    /// collectors one wait: the thread is inside the lock call).
    fn grant(&mut self, tid: u32, addr: u64, at: f64, got: Got) {
        self.sync.lock_acquisitions += 1;
        self.undefer(tid);
        let asked = self.threads[tid as usize].req;
        // The previous holder's release (read before this acquisition's moves).
        let free = self
            .mutexes
            .get(&addr)
            .map_or(f64::NEG_INFINITY, |m| m.free_at);
        let contended = match got {
            Got::Free => at > asked,
            Got::Waited => true,
            Got::Arrived => false,
        };
        if contended {
            self.sync.lock_waits += 1;
        }
        let until = self.move_line(tid, addr, at.max(asked));
        if got == Got::Arrived {
            // The line came with the request, from the releaser's core ([`Engine::settle`]).
            self.line_comp = Component::MemL1Neighbor;
        }
        // A thread that blocked (it found the mutex held when its request was decided,
        // though the release may have come first in simulated time) waits like a
        // contended one: its blocked time is sync time.
        let blocked = contended || !self.threads[tid as usize].active;
        if blocked && until > asked {
            self.set_active(tid, asked, false);
        }
        let th = &mut self.threads[tid as usize];
        th.held.push(addr);
        // An acquisition that waited for nobody: its line's time is a memory access.
        let first = th.asked.take().filter(|_| blocked).unwrap_or(until);
        let site = th.last_sidx;
        self.acquired(tid, addr, asked, until, blocked, free);
        if self.timed() {
            self.obs
                .lock_acquired(tid, addr, site, first, until, contended);
        }
    }

    /// Thread `tid` asks for mutex `addr` at `now` (its atomic's time); `rank` orders it
    /// against other waiters if a lock-order cycle must be broken ([`Waiter::rank`]).
    fn lock(&mut self, tid: u32, addr: u64, now: f64, order: Order) {
        self.lock_as(tid, addr, now, order, None);
    }

    /// [`Engine::lock`] of a mutex (`rw` None) or of a read/write lock, for reading
    /// (`Some(true)`) or writing (`Some(false)`).
    fn lock_as(&mut self, tid: u32, addr: u64, now: f64, order: Order, rw: Option<bool>) {
        self.touched.push(tid);
        if !self.threads[tid as usize].deferred() {
            self.threads[tid as usize].req = now;
        }
        let m = self.mutexes.entry(addr).or_default();
        m.rw |= rw.is_some();
        let (is_rw, shared) = (m.rw, rw == Some(true));
        if m.owner == Some(tid) && !is_rw {
            // Taken again by its holder (a recursive mutex): it nests, whatever the model.
            m.depth += 1;
            self.threads[tid as usize].state = State::Runnable;
            self.set_active(tid, now, true);
            return;
        }
        self.threads[tid as usize].asked.get_or_insert(now);
        if let LockModel::Futex { wait, spin, .. } = self.locks
            && !is_rw
        {
            return self.futex_lock(tid, addr, now, order, wait, spin);
        }
        let rank = rank(order);
        let m = self.mutexes.entry(addr).or_default();
        match m.held_against(shared) {
            true => {
                m.waiters.push(Waiter {
                    at: now,
                    tid,
                    rank,
                    order,
                    spin_until: None,
                    marks: false,
                    shared,
                });
                self.threads[tid as usize].state = State::Mutex(addr);
                self.set_active(tid, now, false);
                // The failed attempt: every lock implementation's first try is an atomic
                // write of the word (glibc's compare-and-swap, then its exchange marking the
                // lock contended; Rust's compare-and-swap and spinning), which asks for the
                // line from the holder's core.
                self.touch(tid, addr, now);
                self.break_cycle(tid);
            }
            false => {
                if shared {
                    m.take_shared(tid, now);
                } else {
                    m.take(tid, now);
                }
                let at = now.max(m.free_at);
                self.grant(tid, addr, at, Got::Free);
            }
        }
    }

    /// Hands read/write lock `addr`, free from `at`, to its next waiters: the one that asked
    /// first, and if it reads, every waiting reader with it (in the order they asked).
    fn grant_rw_waiters(&mut self, addr: u64, at: f64) {
        let m = self.mutexes.entry(addr).or_default();
        let Some(w) = m.first_waiter() else {
            return;
        };
        if !w.shared {
            m.take(w.tid, at);
            self.grant(w.tid, addr, w.at.max(at), Got::Free);
            return;
        }
        let mut group = vec![w];
        while let Some(k) = (0..m.waiters.len())
            .filter(|&k| m.waiters[k].shared)
            .min_by(|&a, &b| {
                let (x, y) = (&m.waiters[a], &m.waiters[b]);
                x.at.total_cmp(&y.at).then(x.tid.cmp(&y.tid))
            })
        {
            group.push(m.waiters.remove(k));
        }
        for w in group {
            self.mutexes.entry(addr).or_default().take_shared(w.tid, at);
            self.grant(w.tid, addr, w.at.max(at), Got::Free);
        }
    }

    /// [`Engine::lock`] under [`LockModel::Futex`]: thread `tid` asks at `now` for mutex
    /// `addr`, freshly or back from a futex wait or wake (its
    /// [`Thread::futex`] step); `wait` is a futex wait's cost, `spin` a spinning lock's
    /// budget.
    fn futex_lock(&mut self, tid: u32, addr: u64, now: f64, order: Order, wait: f64, spin: f64) {
        let step = self.threads[tid as usize].futex.take();
        // A thread back from a futex wait only looks at the word: it does not take the lock.
        let takes = !matches!(step, Some(FutexStep::Check { .. }));
        if let Some(at) = self.settle(tid, addr, now, takes) {
            // Its request has not reached the line yet (queued behind the line's last move).
            let step = step.unwrap_or(FutexStep::Attempt);
            return self.futex_step(tid, addr, order, step, at);
        }
        if self.threads[tid as usize].deferred() {
            // Its compare-and-swap's outcome is known: it took the lock if it reached the
            // released line first ([`Engine::settle`]), else the slow path began at the request.
            let won = std::mem::take(&mut self.threads[tid as usize].cas_won);
            let m = self.mutexes.entry(addr).or_default();
            if won && m.owner.is_none() {
                m.take(tid, now);
                let at = now.max(m.free_at);
                return self.grant(tid, addr, at, Got::Arrived);
            }
            self.fail_attempt(tid, now);
        }
        let m = self.mutexes.entry(addr).or_default();
        if let Some(FutexStep::Check { epoch }) = step {
            if m.owner.is_some() && m.epoch == epoch {
                // Held all along: the futex wait sleeps until a release wakes it.
                m.waiters.push(Waiter {
                    at: now,
                    tid,
                    rank: rank(order),
                    order,
                    spin_until: None,
                    marks: false,
                    shared: false,
                });
                self.sync.futex_sleeps += 1;
                self.threads[tid as usize].state = State::Mutex(addr);
                self.break_cycle(tid);
            } else {
                // The word changed (released, perhaps taken again): the wait returns, and
                // the thread tries again.
                self.futex_step(tid, addr, order, FutexStep::Woken, now);
            }
            return;
        }
        let timed = self.timed();
        let m = self.mutexes.entry(addr).or_default();
        if let (None, Some(FutexStep::Look { marks, .. })) = (m.owner, step) {
            // The look's load found the word free: its compare-and-swap sets out for the
            // line, which a thread asking before it arrives takes first.
            if timed {
                return self.send_cas(tid, addr, order, now, marks);
            }
        }
        let here = self.threads[tid as usize].core.id();
        if step.is_none()
            && timed
            && m.owner.is_none()
            && m.pending.is_none()
            && m.free_at <= now
            && !m.plain
            && !m.spin.spins()
            && m.line.is_some_and(|l| l != here)
        {
            // A first compare-and-swap on a free lock whose line is at another core (glibc's
            // mutex, which does not spin): nothing is taken until the request gets to the
            // line, and a thread asking meanwhile with the line nearer (the releaser asking
            // again) takes it first ([`Engine::settle`]). Before, the lock was taken at the
            // request, and every compare-and-swap in the half transfer after it found it
            // held: a window a transfer wide in which two threads' attempts collided, where
            // the hardware's is the few cycles a holder keeps the lock (`lock_counter -w 50`
            // on `host-zen3.toml`: one acquisition in six through a futex wait above a
            // 115-cycle transfer, none below).
            return self.send_cas(tid, addr, order, now, false);
        }
        let m = self.mutexes.entry(addr).or_default();
        if m.owner.is_none() {
            // Free (at the latest once its last release, done earlier in engine order though
            // later in simulated time, is done): taken, whoever else waits for it. A thread
            // back from the futex takes it with its exchange, marking it contended.
            m.take(tid, now);
            m.contended |= matches!(
                step,
                Some(
                    FutexStep::Woken
                        | FutexStep::Look { marks: true, .. }
                        | FutexStep::Cas { marks: true }
                )
            );
            let (free_at, line) = (m.free_at, m.line);
            if step.is_none() && free_at > now && self.timed() {
                // Released later in simulated time, earlier in engine order: a
                // compare-and-swap that reaches the line after the release (half a move)
                // finds it free, as one on its way at the release does ([`Engine::settle`]).
                let here = self.threads[tid as usize].core.id();
                if now + self.travel(here, line.unwrap_or(here), tid) >= free_at {
                    return self.grant(tid, addr, now, Got::Arrived);
                }
            }
            let at = now.max(free_at);
            let got = if step.is_some() {
                Got::Waited
            } else {
                Got::Free
            };
            self.grant(tid, addr, at, got);
            return;
        }
        if step.is_none() {
            // Held: the compare-and-swap fails once the word's line has come from the
            // holder's core, unless the holder lets go before it gets there: the release
            // decides ([`Engine::unlock`]), the request meanwhile on its way.
            return self.attempt_held(tid, addr, order, now);
        }
        if let Some(FutexStep::Look { until, marks, read }) = step {
            // Taken by another thread before this spinner's look came back: the look's load
            // took the word's line from the new holder's core (whose release must fetch it
            // back). If the load found the word already taken, the spinner spins on, or has
            // spent its budget; if it found it free, its compare-and-swap lost to the new
            // holder's, and it marks the word and waits.
            let saw_free = m.held_since >= read;
            self.move_line(tid, addr, now);
            let m = self.mutexes.entry(addr).or_default();
            if m.plain {
                // A lock freed by plain stores: its waiters spin until they take it.
                return self.spin_on(tid, addr, order, now, f64::INFINITY, marks);
            }
            if !saw_free && until > now && !m.contended {
                return self.spin_on(tid, addr, order, now, until, marks);
            }
            if saw_free && m.spin.again && !m.contended && spin > 0.0 {
                // libgomp's mutex: a lost race sends it back to spinning, a new spin.
                let until = now + spin_budget(spin, m.spin);
                return self.spin_on(tid, addr, order, now, until, marks);
            }
        } else if let Some(FutexStep::Cas { marks }) = step {
            // Overtaken while its compare-and-swap was on its way (the new holder's release
            // fetches the line back): it marks the word and waits, or spins again on a lock
            // freed by plain stores, or on libgomp's while nobody has marked the word.
            if m.plain {
                return self.spin_on(tid, addr, order, now, f64::INFINITY, false);
            }
            if m.spin.again && !m.contended && spin > 0.0 {
                let until = now + spin_budget(spin, m.spin);
                return self.spin_on(tid, addr, order, now, until, marks);
            }
            if !marks && !m.spin.spins() {
                // glibc's first compare-and-swap, overtaken on its way: it failed with the
                // line now here, and the exchange that follows fetches the line from the
                // holder's core, taking the lock if the holder let go before it got there,
                // else marking it and calling futex wait, as a failed attempt does.
                return self.attempt_held(tid, addr, order, now);
            }
        } else if m.plain || (m.spin.spins() && !m.contended && spin > 0.0) {
            // A spinning lock watches a word held but not marked (a load and a pause at a
            // time: Rust's std `Mutex` after its failed compare-and-swap, and again after
            // each futex wait) until it sees a release, or its budget runs out, or another
            // waiter marks the word: the release decides which came first
            // ([`Engine::end_spins`]).
            self.sync.lock_spins += 1;
            let marks = matches!(step, Some(FutexStep::Woken));
            let until = if m.plain {
                f64::INFINITY
            } else {
                now + spin_budget(spin, m.spin)
            };
            return self.spin_on(tid, addr, order, now, until, marks);
        }
        // Still held: the exchange marking the word contended, then a futex wait, whose
        // kernel reads the word at the end of the call (natively a thread that finds the
        // lock held almost never sleeps: the word has changed by then).
        let m = self.mutexes.entry(addr).or_default();
        m.contended = true;
        let epoch = m.epoch;
        self.sync.futex_waits += 1;
        let wait = wait * self.jitter(tid);
        self.futex_step(tid, addr, order, FutexStep::Check { epoch }, now + wait);
    }

    /// [`LockModel::Futex`]: thread `tid`'s attempt at `now` on mutex `addr`, held: it fails
    /// once the word's line has come from the holder's core, unless the holder lets go
    /// before it gets there (the release decides, [`Engine::unlock`]); the request is on its
    /// way meanwhile.
    fn attempt_held(&mut self, tid: u32, addr: u64, order: Order, now: f64) {
        let owner = self.mutexes.get(&addr).and_then(|m| m.owner);
        let holder = owner.map_or(0, |o| self.threads[o as usize].core.id());
        let moved = if self.timed() {
            self.move_cost(holder, self.threads[tid as usize].core.id())
        } else {
            0.0
        };
        self.touch(tid, addr, now);
        if !self.timed() {
            self.set_active(tid, now, false);
        }
        self.futex_step(tid, addr, order, FutexStep::Attempt, now + moved);
    }

    /// [`LockModel::Futex`]: thread `tid`'s compare-and-swap on free mutex `addr` sets out at
    /// `now` for the word's line, taking the lock when it gets there unless a thread asking
    /// before then takes it first ([`CasInFlight`], [`Engine::settle`]); `marks`: it marks
    /// the word contended (an exchange after a futex wait).
    fn send_cas(&mut self, tid: u32, addr: u64, order: Order, now: f64, marks: bool) {
        let here = self.threads[tid as usize].core.id();
        let m = self.mutexes.entry(addr).or_default();
        let (line, free_at) = (m.line, m.free_at);
        let half = self.move_cost(line.unwrap_or(here), here) / 2.0;
        self.mutexes.entry(addr).or_default().pending = Some(CasInFlight {
            tid,
            asked: now,
            arrives: now + half,
            freed: free_at,
            ready: now + 2.0 * half,
            marks,
        });
        self.futex_step(tid, addr, order, FutexStep::Cas { marks }, now + half);
    }

    /// [`LockModel::Futex`]: thread `tid` asks for mutex `addr` at `now` while another thread's
    /// compare-and-swap is on its way to the released lock ([`CasInFlight`]). That request's own
    /// attempt takes the line and, as the lock is free, the lock; if it arrived before `now`,
    /// its thread took the lock first (granted here; `tid` then finds it held); else `tid`
    /// takes it, with the line where the release left it, and the request, reaching the line
    /// while `tid` holds the lock, fails (`tid`'s release must fetch the line back), if `tid`
    /// `takes` a free lock at this step. Returns when to ask again if `tid` is the requester
    /// and its request has not arrived yet.
    fn settle(&mut self, tid: u32, addr: u64, now: f64, takes: bool) -> Option<f64> {
        let m = self.mutexes.entry(addr).or_default();
        let p = m.pending?;
        if p.tid == tid && now < p.arrives {
            return Some(p.arrives);
        }
        if p.tid != tid && p.arrives > now {
            if takes && m.owner.is_none() {
                m.pending = None;
                m.touch = Some((p.tid, p.asked));
            }
            return None;
        }
        m.pending = None;
        self.fetch_released(p.tid, addr, p.freed, p.asked, p.ready);
        if p.tid == tid {
            self.threads[tid as usize].cas_won = true;
            return None;
        }
        // The request came first: its thread, still on its way back with the line, takes
        // the lock.
        let w = &mut self.threads[p.tid as usize];
        w.futex = None;
        w.pending_marker = None;
        let m = self.mutexes.entry(addr).or_default();
        m.take(p.tid, p.arrives);
        m.contended |= p.marks;
        // A first compare-and-swap that found the lock free when it got there took it as a
        // free lock; one sent by a spinner's look is its slow path's.
        let got = if self.threads[p.tid as usize].deferred() {
            Got::Arrived
        } else {
            Got::Waited
        };
        self.grant(p.tid, addr, p.arrives, got);
        None
    }

    /// Thread `tid` spins on mutex `addr`'s held word from `now` until `until` (its budget's
    /// end), a waiter whose end the next release settles ([`Engine::end_spins`]); `marks`: it
    /// takes the lock marking the word contended (spinning after a futex wait).
    fn spin_on(&mut self, tid: u32, addr: u64, order: Order, now: f64, until: f64, marks: bool) {
        self.mutexes.entry(addr).or_default().waiters.push(Waiter {
            at: now,
            tid,
            rank: rank(order),
            order,
            spin_until: Some(until),
            marks,
            shared: false,
        });
        self.threads[tid as usize].state = State::Mutex(addr);
        self.break_cycle(tid);
    }

    /// A factor in [0.5, 1.5) for one system call of thread `tid`: the same calls take
    /// different times on a real machine, and a lock whose waits all cost the same can lock
    /// two threads into one rhythm forever (each request arriving just before the other's
    /// release) where the hardware's jitter breaks it. Deterministic: a hash of the thread and
    /// of how many futex calls the run has made.
    fn jitter(&self, tid: u32) -> f64 {
        let s = &self.sync;
        0.5 + unit_hash(s.futex_waits + s.futex_wakes + s.futex_sleeps, tid)
    }

    /// Thread `tid` asks for mutex `addr` again at `at`, at `step` of a futex acquisition;
    /// the time until then is charged to `sync-crit-sect`.
    fn futex_step(&mut self, tid: u32, addr: u64, order: Order, step: FutexStep, at: f64) {
        let timed = self.timed();
        let th = &mut self.threads[tid as usize];
        th.futex = Some(step);
        // The word remembers whether its lock spins (`MutexState::spins`).
        th.pending_marker = Some(Marker::MutexLock {
            addr,
            order,
            spin: Spin::NONE,
            call: false,
        });
        if timed && matches!(step, FutexStep::Attempt) {
            // A first compare-and-swap on its way to a held lock's line: decided when it
            // gets there, the thread's clock kept ([`Thread::wake`]).
            if !th.deferred() {
                self.deferred += 1;
            }
            th.wake = at.max(th.core.now);
            th.state = State::Runnable;
            self.touched.push(tid);
            return;
        }
        if timed {
            // In the lock's slow path from its request on: the instructions before it go on
            // completing, and the steps are `sync-crit-sect`.
            let req = th.req;
            th.core.stall_until(req);
        }
        self.resume(tid, at, Component::SyncCritSect);
    }

    /// Thread `tid` releases mutex `addr` at `now` (its atomic's time; it returns when the
    /// release is done, the line back if a waiter took it); the next owner is the waiter
    /// that asked first in simulated time (ties: the lower id), or under [`LockModel::Futex`]
    /// the first compare-and-swap to reach the line once it is free ([`CasInFlight`]).
    fn unlock(&mut self, tid: u32, addr: u64, now: f64) -> f64 {
        let th = &mut self.threads[tid as usize];
        if let Some(i) = th.owed.iter().position(|&a| a == addr) {
            // Handed back at a barrier already.
            th.owed.remove(i);
            return now;
        }
        if let Some(i) = th.held.iter().rposition(|&a| a == addr) {
            th.held.remove(i);
        }
        let m = self.mutexes.entry(addr).or_default();
        if let Some(i) = m.forced.iter().position(|&t| t == tid) {
            m.forced.remove(i);
            return now;
        }
        if m.owner == Some(tid) && m.depth > 0 {
            m.depth -= 1;
            return now;
        }
        if let Some(i) = m.readers.iter().position(|&r| r == tid) {
            // A reader lets go: its atomic on the word, then the lock is free for a writer
            // once the last reader has let go.
            m.readers.remove(i);
            let last = m.readers.is_empty();
            let freed = self.move_line(tid, addr, now);
            let release_comp = self.line_comp;
            self.released(tid, addr, now, 0.0);
            if last {
                let m = self.mutexes.entry(addr).or_default();
                m.free_at = m.free_at.max(freed);
                self.grant_rw_waiters(addr, freed);
            }
            self.line_comp = release_comp;
            return freed;
        }
        let is_rw = m.rw;
        // A release is a store; the thread does not wait for it, but the lock is free for
        // others only once it is done. If another core's request for the line reached this
        // core before the release (half a transfer after it went out), it took the line and
        // the release has to take it back; otherwise the release is an L1 hit and that
        // request brings the free lock over once the release is done.
        let m = self.mutexes.entry(addr).or_default();
        let touch = m.touch.take();
        let me = self.threads[tid as usize].core.id();
        // Half a move between this core and the requester's: when its request gets here.
        let half = |e: &Self, w: u32| e.travel(e.threads[w as usize].core.id(), me, w);
        let freed = match touch {
            Some((w, x)) if self.timed() && x + half(self, w) < now => {
                self.move_line(w, addr, x);
                self.move_line(tid, addr, now)
            }
            Some((w, x)) if self.timed() => {
                let freed = self.move_line(tid, addr, now);
                // The request, on its way since `x`, takes the released line: it arrives a
                // transfer after `x`, and not before half a transfer after the release.
                let half = half(self, w);
                let ready = (x + 2.0 * half).max(freed + half);
                let attempting = matches!(self.threads[w as usize].futex, Some(FutexStep::Attempt));
                if matches!(self.locks, LockModel::Futex { .. }) && attempting {
                    // Under the futex model the lock is free until the request gets here.
                    self.mutexes.entry(addr).or_default().pending = Some(CasInFlight {
                        tid: w,
                        asked: x,
                        arrives: (x + half).max(freed),
                        freed,
                        ready,
                        marks: false,
                    });
                } else {
                    self.fetch_released(w, addr, freed, x, ready);
                }
                freed
            }
            _ => self.move_line(tid, addr, now),
        };
        // Where the release's line came from (a waiter's grant below moves it again).
        let release_comp = self.line_comp;
        let m = self.mutexes.entry(addr).or_default();
        m.owner = None;
        m.depth = 0;
        m.free_at = m.free_at.max(freed);
        if let LockModel::Futex {
            wake,
            latency,
            wait,
            spin,
        } = self.locks
            && !is_rw
        {
            let spinner = self.end_spins(addr, now, wait);
            let m = self.mutexes.entry(addr).or_default();
            // (A lock freed by plain stores is marked only by a waiter that slept before its
            // first release showed it to be one: that sleeper is woken like any other.)
            if std::mem::take(&mut m.contended) {
                // Futex wake: the releaser is in the kernel for `wake` cycles; the thread
                // that slept longest (ties: the lower id), if any, tries again `latency`
                // later.
                self.sync.futex_wakes += 1;
                let woken = m.first_waiter();
                let wake = wake * self.jitter(tid);
                self.released(tid, addr, now, wake);
                if self.timed() {
                    // A system call: it waits for the instructions before it.
                    self.threads[tid as usize].core.stall_until(now);
                }
                self.resume(tid, now + wake, Component::SyncCritSect);
                if let Some(w) = woken {
                    let at = now + wake + latency * self.jitter(w.tid);
                    self.futex_step(w.tid, addr, w.order, FutexStep::Woken, at);
                }
            } else {
                self.released(tid, addr, now, 0.0);
            }
            if let Some(w) = spinner {
                // The spinner sees the release at its next look (looks every spin /
                // SPIN_LOOKS cycles since it began), once its load has fetched the released
                // line; then it takes the lock if nobody took it first, with its
                // compare-and-swap fetching the line for writing.
                let period = spin / SPIN_LOOKS;
                let phase = unit_hash(self.sync.lock_acquisitions, w.tid);
                let look = freed.max(w.at) + phase * period;
                let moved = self.move_cost(me, self.threads[w.tid as usize].core.id());
                let seen = look + moved;
                let until = w.spin_until.unwrap_or(look);
                let step = FutexStep::Look {
                    until,
                    marks: w.marks,
                    read: look + moved / 2.0,
                };
                self.futex_step(w.tid, addr, w.order, step, seen);
            }
            self.line_comp = release_comp;
            return freed;
        }
        self.released(tid, addr, now, 0.0);
        if is_rw {
            self.grant_rw_waiters(addr, freed);
            self.line_comp = release_comp;
            return freed;
        }
        let m = self.mutexes.entry(addr).or_default();
        if let Some(w) = m.first_waiter() {
            m.take(w.tid, now);
            self.grant(w.tid, addr, w.at.max(freed), Got::Free);
        }
        self.line_comp = release_comp;
        freed
    }

    /// [`LockModel::Futex`]: mutex `addr` is released at `now`. Each thread spinning on its
    /// word ([`Waiter::spin_until`]) either still spins, or spent its budget before the
    /// release (or stopped when another spinner marked the word), marked the word contended
    /// and called futex wait (`wait`), which slept if it came back before the release and
    /// returns after it otherwise. Returns the spinner that looks at the released word: the
    /// one spinning longest (ties: the lower id), if any still spins and nobody marked the
    /// word. A spinner's end has no effect another thread sees before the release, so the
    /// release settles it.
    fn end_spins(&mut self, addr: u64, now: f64, wait: f64) -> Option<Waiter> {
        let m = self.mutexes.entry(addr).or_default();
        if m.waiters.iter().all(|w| w.spin_until.is_none()) {
            return None;
        }
        if m.plain {
            // Freed by plain stores (known from its first release on): nobody sleeps, a
            // spinner that began before it was known included.
            for w in m.waiters.iter_mut() {
                if w.spin_until.is_some() {
                    w.spin_until = Some(f64::INFINITY);
                }
            }
        }
        let mut spinners: Vec<Waiter> = Vec::new();
        m.waiters.retain(|w| {
            if w.spin_until.is_some() {
                spinners.push(*w);
            }
            w.spin_until.is_none()
        });
        spinners.sort_by(|x, y| {
            (x.spin_until.unwrap_or(0.0))
                .total_cmp(&y.spin_until.unwrap_or(0.0))
                .then(x.tid.cmp(&y.tid))
        });
        // When a spinner that gave up marked the word: the others stop spinning then (they
        // all began before the release, so they too have called futex wait by now).
        let mut marked: Option<f64> = None;
        let mut spinning = Vec::new();
        for w in spinners {
            let mut until = w.spin_until.unwrap_or(w.at);
            if let Some(t) = marked {
                until = until.min(t.max(w.at));
            }
            if until >= now {
                spinning.push(w);
                continue;
            }
            marked = Some(marked.map_or(until, |t| t.min(until)));
            self.sync.futex_waits += 1;
            let back = until + wait * self.jitter(w.tid);
            let m = self.mutexes.entry(addr).or_default();
            m.contended = true;
            if back < now {
                self.sync.futex_sleeps += 1;
                m.waiters.push(Waiter {
                    at: back,
                    spin_until: None,
                    ..w
                });
            } else {
                self.futex_step(w.tid, addr, w.order, FutexStep::Woken, back);
            }
        }
        let first = (0..spinning.len()).min_by(|&a, &b| {
            let (x, y) = (&spinning[a], &spinning[b]);
            x.at.total_cmp(&y.at).then(x.tid.cmp(&y.tid))
        })?;
        let w = spinning.remove(first);
        let m = self.mutexes.entry(addr).or_default();
        m.waiters.extend(spinning);
        Some(w)
    }

    /// Thread `tid` asks at `now` for a unit of semaphore `addr`: it takes the one that came
    /// first, once it is there, or waits for the next post. Its atomic on the word moves the
    /// word's line as a lock's does.
    fn sem_wait(&mut self, tid: u32, addr: u64, now: f64) {
        let s = self.sems.get_mut(&addr).expect("made by the marker");
        match s.take() {
            Some(t) => {
                let at = now.max(t);
                let until = self.move_line(tid, addr, at);
                self.sem_taken(tid, addr, now, at, until);
            }
            None => {
                s.waiters.push((now, tid));
                self.threads[tid as usize].state = State::Sem(addr);
                self.set_active(tid, now, false);
            }
        }
    }

    /// Thread `tid` posts semaphore `addr` at `now` (its atomic): the unit goes to the waiter
    /// that asked first, if any, else it is there for the next wait. A release that `wakes`
    /// the futex whenever it finds the count at 0 (libstdc++'s) and finds it so in simulated
    /// time then makes that system call: under [`LockModel::Futex`] the thread is in the
    /// kernel for its `wake` cycles, `sync-cond` as the semaphore's waits.
    fn sem_post(&mut self, tid: u32, addr: u64, now: f64, wakes: bool) {
        let freed = self.move_line(tid, addr, now);
        if self.timed() {
            let comp = self.line_comp;
            let core = &mut self.threads[tid as usize].core;
            core.atomic(freed, comp, f64::NEG_INFINITY, addr);
        }
        let from_zero = self.sems.get(&addr).is_some_and(|s| s.units.is_empty());
        if let LockModel::Futex { wake, .. } = self.locks
            && wakes
            && from_zero
        {
            self.sync.futex_wakes += 1;
            let wake = wake * self.jitter(tid);
            if self.timed() {
                // A system call: it waits for the instructions before it.
                self.threads[tid as usize].core.stall_until(freed);
            }
            self.resume(tid, freed + wake, Component::SyncCond);
        }
        let s = self.sems.get_mut(&addr).expect("made by the marker");
        match s.first_waiter() {
            Some((asked, w)) => {
                let at = freed.max(asked);
                let until = self.move_line(w, addr, at);
                self.sem_taken(w, addr, asked, at, until);
            }
            None => s.units.push(freed),
        }
    }

    /// Thread `tid`, which asked for a semaphore's unit at `asked`, has it from `at` (a post,
    /// or the request itself when a unit was there), its atomic done at `until`. Waiting for
    /// the post is `sync-cond` (nothing after the call is dispatched before it); the atomic's
    /// time is its line's, as a lock's.
    fn sem_taken(&mut self, tid: u32, addr: u64, asked: f64, at: f64, until: f64) {
        self.touched.push(tid);
        if self.timed() {
            let comp = self.line_comp;
            let core = &mut self.threads[tid as usize].core;
            if at > asked {
                core.stall_until(asked);
                core.wait_until(at, Component::SyncCond);
                self.obs.wait(tid, Component::SyncCond, asked, at);
            }
            // Its loads after the unit was posted (the poster's stores done).
            self.threads[tid as usize]
                .core
                .atomic(until, comp, at, addr);
        }
        self.threads[tid as usize].state = State::Runnable;
        self.set_active(tid, until, true);
    }

    /// Reports thread `tid`'s release of mutex `addr` at `at` (when timed).
    fn released(&mut self, tid: u32, addr: u64, at: f64, cost: f64) {
        if self.timed() {
            let site = self.threads[tid as usize].last_sidx;
            self.obs.lock_released(tid, addr, site, at, cost);
        }
    }

    /// Thread `tid` just blocked on a mutex: if the holders form a cycle back to it (each
    /// holder waiting for a mutex held by the next), simulated time has ordered two
    /// acquisitions the other way round from the traced run, which completed. Resolves it.
    fn break_cycle(&mut self, tid: u32) {
        let mut t = tid;
        let mut cycle = vec![tid];
        for _ in 0..self.threads.len() {
            let State::Mutex(a) = self.threads[t as usize].state else {
                return;
            };
            // A lock held for reading: its first reader stands for its holders.
            let Some(o) = self
                .mutexes
                .get(&a)
                .and_then(|m| m.owner.or(m.readers.first().copied()))
            else {
                return;
            };
            if o == tid {
                self.force_one(|w| cycle.contains(&w));
                return;
            }
            cycle.push(o);
            t = o;
        }
    }

    /// Gives one waiting thread its mutex while the holder keeps it: among the waiters whose
    /// markers carry a recorded order and that `eligible` admits, the one the traced run let
    /// through first (smallest rank; then earliest request, lowest id). False if none.
    fn force_one(&mut self, eligible: impl Fn(u32) -> bool) -> bool {
        // A thread waits for one mutex at a time, so (rank, time, thread) names one waiter
        // whatever order the map is visited in.
        let best = self
            .mutexes
            .iter()
            .flat_map(|(&a, m)| m.waiters.iter().map(move |w| (a, *w)))
            .filter(|(_, w)| w.rank != u32::MAX && eligible(w.tid))
            .min_by(|(_, x), (_, y)| {
                x.rank
                    .cmp(&y.rank)
                    .then(x.at.total_cmp(&y.at))
                    .then(x.tid.cmp(&y.tid))
            });
        let Some((a, Waiter { at, tid: w, .. })) = best else {
            return false;
        };
        let m = self.mutexes.get_mut(&a).expect("listed");
        m.waiters.retain(|x| x.tid != w);
        m.forced.push(w);
        self.sync.lock_cycles_resolved += 1;
        self.touched.push(w);
        // Its unlock releases nothing (`MutexState::forced`).
        self.grant(w, a, at, Got::Free);
        true
    }

    /// Every thread is blocked and no mutex can be given: lets the thread waiting for a
    /// recorded release that no thread has reached (the earliest clock, then the lowest id)
    /// go on at its clock, as if that release had come (`SyncStats::order_waits_forced`). The
    /// traced run completed, so the pairing the conversion recorded cannot hold in this
    /// order: the releasing thread waits, in the replay, at a barrier the waiter must reach
    /// first. False if no thread waits for a release.
    fn force_order(&mut self) -> bool {
        let Some(w) = self
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.state, State::Ordered(_)))
            .min_by(|a, b| a.1.core.now.total_cmp(&b.1.core.now).then(a.0.cmp(&b.0)))
            .map(|(i, _)| i as u32)
        else {
            return false;
        };
        let State::Ordered(k) = self.threads[w as usize].state else {
            unreachable!("filtered")
        };
        let th = &mut self.threads[w as usize];
        for e in &mut th.pending.edges {
            if e.is_some_and(|(r, _)| r == k) {
                *e = None;
            }
        }
        self.sync.order_waits_forced += 1;
        self.proceed(w);
        true
    }

    fn marker(&mut self, tid: u32, m: Marker) {
        match m {
            Marker::ThreadStart | Marker::SectionBegin { .. } | Marker::SectionEnd { .. } => {}
            Marker::ThreadEnd => self.end_thread(tid),
            Marker::RoiBegin => {
                if !self.roi_active && !self.roi_done {
                    self.roi_active = true;
                    self.mem.reset_stats();
                    for t in 0..self.threads.len() as u32 {
                        let th = &self.threads[t as usize];
                        if !matches!(th.state, State::NotCreated | State::Done) {
                            self.obs.thread_start(t, th.core.now);
                            if th.active {
                                self.obs.activity(t, th.core.now, true);
                            }
                        }
                    }
                }
            }
            Marker::RoiEnd => {
                if self.roi_active {
                    for t in 0..self.threads.len() as u32 {
                        if matches!(self.threads[t as usize].state, State::Runnable) {
                            let at = self.drain(t);
                            // The timed region ends: to collectors, the thread stops here.
                            self.set_active(t, at, false);
                        }
                    }
                    self.roi_active = false;
                    self.roi_done = true;
                }
            }
            Marker::Barrier {
                id,
                participants,
                lead,
            } => {
                self.drain(tid);
                // A thread waiting at a barrier holds no mutex (see `Thread::owed`).
                while let Some(&a) = self.threads[tid as usize].held.last() {
                    let now = self.threads[tid as usize].core.now;
                    self.unlock(tid, a, now);
                    self.threads[tid as usize].owed.push(a);
                }
                let now = self.threads[tid as usize].core.now;
                let arrivals = self.barriers.entry(id).or_default();
                arrivals.push((tid, now, lead));
                if arrivals.len() as u32 >= participants {
                    let arrivals = self.barriers.remove(&id).unwrap_or_default();
                    let release = arrivals.iter().map(|a| a.1).fold(0.0, f64::max);
                    if release > now {
                        // The last thread to reach the barrier in engine order can have an
                        // earlier clock than one that arrived before it: it waits too.
                        self.set_active(tid, now, false);
                    }
                    // One episode, one site: the lead's call, else the call most participants
                    // made (ties: the smallest index), so that participants calling from
                    // different places (a spin barrier's storer and its watchers, a main
                    // thread's own call) report one episode.
                    let site = match arrivals.iter().find(|a| a.2) {
                        Some(a) => self.threads[a.0 as usize].last_sidx,
                        None => {
                            let mut sites: Vec<u32> = arrivals
                                .iter()
                                .map(|a| self.threads[a.0 as usize].last_sidx)
                                .collect();
                            sites.sort_unstable();
                            let mut best = (0, sites[0]);
                            for run in sites.chunk_by(|a, b| a == b) {
                                if run.len() > best.0 {
                                    best = (run.len(), run[0]);
                                }
                            }
                            best.1
                        }
                    };
                    for (t, arrival, _) in arrivals {
                        self.obs.barrier(t, site, arrival, release);
                        self.resume(t, release, Component::SyncBarrier);
                    }
                } else {
                    self.threads[tid as usize].state = State::Barrier(id);
                    self.set_active(tid, now, false);
                }
            }
            Marker::MutexLock {
                addr,
                order,
                spin,
                call,
            } => {
                if spin.spins() {
                    self.mutexes.entry(addr).or_default().spin = spin;
                }
                if call {
                    self.mutexes.entry(addr).or_default().called = true;
                    if self.lock_call > 0.0 && self.timed() {
                        // The library's code before the lock's atomic: the request sets
                        // out once it has run (then as below, paid once).
                        let now = self.threads[tid as usize].core.now;
                        self.threads[tid as usize].pending_marker = Some(Marker::MutexLock {
                            addr,
                            order,
                            spin,
                            call: false,
                        });
                        self.resume(tid, now + self.lock_call, Component::SyncCritSect);
                        return;
                    }
                }
                // The lock's atomic read-modify-write asks for the word's line once every
                // instruction before it has completed (x86 performs a locked instruction when
                // it is the oldest, after older stores drain); the instructions after it do
                // not wait for that unless the lock is held (`Engine::acquired`). An
                // uncontended acquisition of a line another core released pays its move after
                // the work ahead of it, and a request reaches a holder only from a thread done
                // with that work. (Draining the window instead, until 2026-12-02, let no
                // iteration of a loop's work overlap the next across a lock, which the host
                // does: docs/validation.md.)
                // Arbitrated in simulated time whether or not the trace recorded an order:
                // the traced run's order was the host's scheduling, not the machine's.
                // The request is decided in the order of the threads' clocks (a thread's
                // requests, releases and accesses never go back in time for the scheduler,
                // which time-resolved observers rely on), its time that of the atomic: a
                // thread whose clock is earlier but whose atomic performs later is decided
                // first (by at most the time the instructions before the lock take to
                // complete).
                if self.timed() && self.someone_earlier(tid, self.threads[tid as usize].key()) {
                    // Asked again once every runnable thread has caught up.
                    self.threads[tid as usize].pending_marker = Some(m);
                    return;
                }
                // (A request on its way is asked again when its outcome is known.)
                let now = self.atomic_at(tid).max(self.threads[tid as usize].wake);
                self.lock(tid, addr, now, order);
            }
            Marker::RwLock { addr, order, write } => {
                // A call into the C library, as an interposed mutex lock (above): its code
                // before the atomic costs `[locks] call`, once; then the request, decided in
                // the order of the threads' clocks.
                self.mutexes.entry(addr).or_default().called = true;
                if !self.threads[tid as usize].rw_lock_paid && self.lock_call > 0.0 && self.timed()
                {
                    let th = &mut self.threads[tid as usize];
                    th.rw_lock_paid = true;
                    th.pending_marker = Some(m);
                    let now = th.core.now;
                    self.resume(tid, now + self.lock_call, Component::SyncCritSect);
                    return;
                }
                if self.timed() && self.someone_earlier(tid, self.threads[tid as usize].key()) {
                    self.threads[tid as usize].pending_marker = Some(m);
                    return;
                }
                self.threads[tid as usize].rw_lock_paid = false;
                let now = self.atomic_at(tid).max(self.threads[tid as usize].wake);
                self.lock_as(tid, addr, now, order, Some(!write));
            }
            Marker::SemWait { addr, init } | Marker::SemPost { addr, init, .. } => {
                // Decided in the order of the threads' clocks, as a lock is: a post and a
                // wait meet in simulated time.
                if self.timed() && self.someone_earlier(tid, self.threads[tid as usize].key()) {
                    self.threads[tid as usize].pending_marker = Some(m);
                    return;
                }
                let now = self.atomic_at(tid).max(self.threads[tid as usize].wake);
                self.touched.push(tid);
                self.sems.entry(addr).or_insert_with(|| SemState::new(init));
                match m {
                    Marker::SemPost { wakes, .. } => self.sem_post(tid, addr, now, wakes),
                    _ => self.sem_wait(tid, addr, now),
                }
            }
            Marker::CondWait {
                cond,
                mutex,
                wake,
                relock,
            } if wake.recorded() => {
                // Releases the mutex, waits for the recorded wake (a data dependence: which
                // signal released this waiter), then asks for the mutex in simulated time.
                let now = self.drain(tid);
                self.unlock(tid, mutex, now);
                self.ordered(
                    tid,
                    [(wake, Component::SyncCond), (Order::NONE, Component::Base)],
                    "condition",
                    cond,
                );
                // The re-lock: a mutex request like any other, in the thread's next turn.
                self.threads[tid as usize].pending_marker = Some(Marker::MutexLock {
                    addr: mutex,
                    order: relock,
                    spin: Spin::NONE,
                    call: false,
                });
            }
            Marker::FutexWait { addr, wake } => {
                // A channel's wait is no system call of its own (the read's `syscall` is in
                // the stream, and a read's later writes are waited for at the thread's first
                // load of their bytes): the window is not drained.
                let now = if is_channel_addr(addr) {
                    self.touched.push(tid);
                    self.threads[tid as usize].core.now
                } else {
                    self.drain(tid)
                };
                // A thread the trace does not have (a malformed tag) is only a futex wait.
                let n = self.threads.len();
                self.threads[tid as usize].counting = exit_count_thread(addr)
                    .filter(|&child| (child as usize) < n && child != tid)
                    .map(|child| (child, wake, now));
                self.ordered(
                    tid,
                    [(wake, Component::SyncCond), (Order::NONE, Component::Base)],
                    "futex",
                    addr,
                );
            }
            Marker::CondReady { cond, wake } => {
                // A wait the thread skipped (its condition was already true): no call, so
                // the window is not drained; it goes on once the section that made the
                // condition true has released its mutex in simulated time (at once if it
                // has).
                self.ordered(
                    tid,
                    [(wake, Component::SyncCond), (Order::NONE, Component::Base)],
                    "condition",
                    cond,
                );
            }
            Marker::FutexWake { .. } => {}
            Marker::Release { index } => {
                // The point a recorded edge releases from: when everything before it has
                // completed. The thread itself does not wait there (an edge nobody waits
                // for, such as a mutex's recorded order, changes nothing).
                let now = self.atomic_at(tid);
                let k = index as usize;
                if self.releases.len() <= k {
                    self.releases.resize(k + 1, f64::NAN);
                }
                self.releases[k] = now;
                for w in 0..self.threads.len() as u32 {
                    if self.threads[w as usize].state == State::Ordered(index) {
                        self.proceed(w);
                    }
                }
            }
            Marker::MutexUnlock { addr, plain } => {
                // In simulated-time order with the requests, as they are: whether another
                // core's request for the line reached this one before the release depends
                // on which came first. The release (a locked instruction, or a plain store)
                // performs once the accesses before it (the critical section's) have
                // completed, and the thread goes on dispatching meanwhile, its later stores
                // after it.
                self.touched.push(tid);
                let now = self.threads[tid as usize].core.now;
                if !self.threads[tid as usize].unlock_paid
                    && self.lock_call > 0.0
                    && self.timed()
                    && self.mutexes.get(&addr).is_some_and(|m| m.called)
                {
                    // The library's unlock code before its releasing atomic.
                    let th = &mut self.threads[tid as usize];
                    th.unlock_paid = true;
                    th.pending_marker = Some(m);
                    self.resume(tid, now + self.lock_call, Component::SyncCritSect);
                    return;
                }
                if self.timed() && self.someone_earlier(tid, now) {
                    self.threads[tid as usize].pending_marker = Some(m);
                    return;
                }
                self.threads[tid as usize].unlock_paid = false;
                if plain {
                    self.mutexes.entry(addr).or_default().plain = true;
                }
                let at = self.atomic_at(tid);
                let done = self.unlock(tid, addr, at);
                if self.timed() {
                    // Younger loads execute past a release; a locked one holds the window
                    // until it performs, a plain store does not.
                    let comp = self.line_comp;
                    let core = &mut self.threads[tid as usize].core;
                    if plain {
                        core.release_store(done);
                    } else {
                        core.atomic(done, comp, f64::NEG_INFINITY, addr);
                    }
                }
            }
            Marker::CondWait { cond, mutex, .. } => {
                let now = self.drain(tid);
                self.unlock(tid, mutex, now);
                self.conds.entry(cond).or_default().push((now, tid, mutex));
                self.threads[tid as usize].state = State::Cond(cond);
                self.set_active(tid, now, false);
            }
            Marker::CondSignal { cond } | Marker::CondBroadcast { cond } => {
                let now = self.drain(tid);
                let waiters = self.conds.entry(cond).or_default();
                waiters.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let woken: Vec<(f64, u32, u64)> = if matches!(m, Marker::CondSignal { .. }) {
                    if waiters.is_empty() {
                        Vec::new()
                    } else {
                        vec![waiters.remove(0)]
                    }
                } else {
                    std::mem::take(waiters)
                };
                for (_, w, mutex) in woken {
                    let at = self.threads[w as usize].core.now.max(now);
                    if self.timed() {
                        let from = self.threads[w as usize].core.now;
                        self.threads[w as usize]
                            .core
                            .wait_until(at, Component::SyncCond);
                        if at > from {
                            self.obs.wait(w, Component::SyncCond, from, at);
                        }
                    }
                    self.lock(w, mutex, at, Order::SIM);
                }
            }
            Marker::ThreadCreate { child } => {
                let now = self.threads[tid as usize].core.now;
                if self
                    .threads
                    .get(child as usize)
                    .is_some_and(|c| c.state == State::NotCreated)
                {
                    // The lowest-numbered core no running thread holds.
                    let mut held = vec![false; self.cores as usize];
                    let mut alive = 0;
                    for t in &self.threads {
                        if !matches!(t.state, State::NotCreated | State::Done) {
                            held[t.core.id() as usize] = true;
                            alive += 1;
                        }
                    }
                    let Some(core) = held.iter().position(|&h| !h) else {
                        self.failed = Some(SimError::TooManyThreads {
                            threads: alive + 1,
                            cores: self.cores,
                        });
                        return;
                    };
                    self.threads[child as usize].core.set_id(core as u32);
                    if self.timed() {
                        self.obs.create(tid, child, now);
                        self.obs.thread_start(child, now);
                    }
                    self.resume(child, now, Component::ImbalanceStart);
                }
            }
            Marker::ThreadJoin { child } => {
                let now = self.drain(tid);
                match self.threads.get(child as usize).map(|c| (c.state, c.end)) {
                    Some((State::Done, end)) => {
                        if self.timed() {
                            let site = self.threads[tid as usize].last_sidx;
                            self.obs.join(tid, site, child, now, now.max(end));
                        }
                        self.resume(tid, now.max(end), Component::SyncJoin)
                    }
                    Some(_) => {
                        self.threads[tid as usize].state = State::Join(child, now);
                        self.set_active(tid, now, false);
                    }
                    None => {}
                }
            }
        }
    }

    /// Thread `tid` (drained) must pass `edges` in order before it continues.
    fn ordered(&mut self, tid: u32, edges: [(Order, Component); 2], what: &'static str, addr: u64) {
        let th = &mut self.threads[tid as usize];
        th.pending = Pending {
            edges: edges.map(|(o, c)| o.release().map(|k| (k, c))),
            what,
            addr,
        };
        self.proceed(tid);
    }

    /// Passes the thread's pending edges whose releases have happened; blocks it at the first
    /// that has not, or makes it runnable.
    fn proceed(&mut self, tid: u32) {
        self.touched.push(tid);
        for i in 0..2 {
            let Some((k, c)) = self.threads[tid as usize].pending.edges[i] else {
                continue;
            };
            let at = self.releases.get(k as usize).copied().unwrap_or(f64::NAN);
            if at.is_nan() {
                let now = self.threads[tid as usize].core.now;
                self.threads[tid as usize].state = State::Ordered(k);
                self.set_active(tid, now, false);
                return;
            }
            self.threads[tid as usize].pending.edges[i] = None;
            self.resume(tid, at, c);
        }
        let th = &mut self.threads[tid as usize];
        th.state = State::Runnable;
        let now = th.core.now;
        let counting = th.counting.take();
        self.set_active(tid, now, true);
        if let Some((child, wake, since)) = counting
            && self.timed()
        {
            let counted = wake
                .release()
                .and_then(|k| self.releases.get(k as usize).copied())
                .filter(|t| !t.is_nan())
                .unwrap_or(since);
            let site = self.threads[tid as usize].last_sidx;
            self.obs.counted_down(tid, site, child, counted, since, now);
        }
    }

    fn finish(mut self) -> (RunResult, O) {
        let end = self
            .threads
            .iter()
            .map(|t| t.end.max(t.core.now))
            .fold(0.0, f64::max);
        let mut threads = Vec::with_capacity(self.threads.len());
        for (i, th) in self.threads.iter_mut().enumerate() {
            let c = if th.state == State::NotCreated {
                Component::ImbalanceStart
            } else {
                Component::ImbalanceEnd
            };
            th.core.wait_until(end, c);
            threads.push(ThreadResult {
                thread: i as u32,
                core: th.core.id(),
                instructions: th.core.instructions,
                cycles: end,
                stack: th.core.stack,
                branches: th.core.branches,
                mispredictions: th.core.mispredictions,
                tlb_misses: th.core.tlb_counts().0,
                page_walks: th.core.tlb_counts().1,
                end: th.end,
                after_roi: th.after_roi,
            });
        }
        let result = RunResult {
            cycles: end,
            threads,
            memory_cores: self.mem.core_stats.clone(),
            caches: self.mem.cache_stats(),
            dram: self.mem.bank_stats(),
            sync: self.sync,
        };
        (result, self.obs)
    }
}
