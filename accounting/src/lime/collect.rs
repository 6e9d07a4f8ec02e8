//! LIME's profile collection during simulation (§4, with hardware events as in the paper's
//! simulator profiler): per thread and per dynamic section instance, the execution time and
//! the counts of every control-flow edge (previous branch → branch), every static memory or
//! branch instruction's executions, its L1/L2/L3 misses and mispredictions.
//!
//! **Sections.** A barrier completion closes one instance for every participant: the thread's
//! section ran from its previous release (or its start) to its arrival. A join closes a
//! thread's last section at its end; the consecutive joins of one parent at one call site
//! form one instance whose participants are the joined children (arrival = their end) and
//! the parent (arrival = its first join call); the group closes when the parent reaches any
//! other synchronization (a barrier, a join elsewhere, a thread creation) or the run ends.
//! A wait for children's count-downs made as they ended (a Rust `thread::scope`, a latch
//! its threads count down last: [`Observer::counted_down`]) is such a join, each child's
//! part ending at its count-down; a later join of those children closes nothing.
//!
//! **Whose events.** Only what a thread's work decides is a candidate cause
//! ([`CodeRole`]): an instruction of the program's own code counts at its own index; a
//! library's instruction (`malloc`, `memcpy`) counts its misses and mispredictions at the
//! user call that led there: the own instruction that called into library code and has not
//! been returned to (a call is open until the thread reaches its fall-through; a callback the
//! library makes into own code, a `qsort` comparator, opens nothing, and its return leaves the
//! library's work to the open call), and they are also
//! tallied per (call, library instruction) pair ([`Collector::library_calls`]) to name the
//! library in a report; synchronization
//! and runtime code (libgomp, the pthread calls, `std::sync`) counts nothing, and no edge
//! spans it: which way a runtime returns (into the master's code or the pool's loop) and how
//! long a thread spins in it are its role and the host's doing, not its work: the branch after
//! it is reached from the section's entry ([`ENTRY`]), an edge that gives its target the
//! in-edge LIME's leader score needs and that is never a candidate itself. A section is
//! named by an own instruction too: a barrier or join called from inside a library (Rust's
//! `Barrier::wait`, a C++ `std::barrier`) is named by the thread's last own instruction.
//!
//! **Pools.** A thread outside a work-stealing pool that calls into it (rayon's
//! `Registry::in_worker_cold`: [`PoolRole::Entry`]) hands the pool a job and waits until it is
//! done: one [`SectionKind::Pool`] instance from the call to the return, whose participants
//! are the pool's workers (threads that ran [`PoolRole::Worker`] code). A worker has no
//! synchronization of its own at the section's ends (it finds the next job by looking), so its
//! part is taken from *pieces*: each stretch of its own code is sealed, with its times, when
//! the worker goes back into the pool's code (the piece ends as that code begins); at the end
//! of the run each piece goes to the call it ran within (in simulated time), and a worker's
//! part of a call starts at the call and arrives at its last piece's end (a worker with none
//! arrives at the start: it had no work). A piece outside every call is counted
//! ([`Collector::finish_counting_strays`]). The bookkeeping runs only where a thread passes
//! between its own code and synchronization code, outside the per-instruction path.
//!
//! **Serial parts.** An instance in which one participant ran the program's code and the
//! others none (the team waiting at an OpenMP fork while the master runs the serial code
//! before it, threads waiting while one initialises) is a [`SectionKind::Serial`] section of
//! its own, not an imbalance of the parallel section that follows at the same call.
//!
//! **Hot path.** Counters are flat per-thread arrays indexed by static index; touched entries
//! are listed so that closing a section costs what was touched. Edge counts sit in two inline
//! slots per source branch; a third distinct successor (indirect branches, returns) spills to
//! a map, which is the only hashing and is off the common path.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use sim_core::core::InstResult;
use sim_core::{CycleStack, Observer, ThreadObserver};
use sim_frontend::model::{BranchKind, CodeRole, PoolRole, Program};

use super::cfg::ENTRY;

/// One event LIME counts, per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Event {
    /// Control flow: after branch `from` the next branch was `to`.
    Edge {
        /// Source branch (static index, or [`ENTRY`]).
        from: u32,
        /// Next branch.
        to: u32,
    },
    /// Executions of a memory or branch instruction (the superior of its hardware events).
    Exec(u32),
    /// Misses of an instruction's accesses at a cache level (1, 2, 3).
    Miss {
        /// Static index.
        sidx: u32,
        /// Level: 1 = L1, 2 = L2, 3 = L3.
        level: u8,
    },
    /// Mispredictions of a branch.
    Mispredict(u32),
}

/// One thread's stay in one dynamic section instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSection {
    /// Thread id.
    pub thread: u32,
    /// Section start (cycles).
    pub start: f64,
    /// Arrival at the closing barrier or join (its end, for a joined child).
    pub arrival: f64,
    /// Event counts, sorted by event.
    pub events: Vec<(Event, u64)>,
}

impl ThreadSection {
    /// Execution time in the section.
    pub fn time(&self) -> f64 {
        self.arrival - self.start
    }
}

/// How a section instance is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SectionKind {
    /// By a barrier.
    Barrier,
    /// By thread joins.
    Join,
    /// A barrier instance in which only one participant ran the program's code: the others
    /// waited for its serial part (the code before an OpenMP fork).
    Serial,
    /// A call into a work-stealing pool from outside it, whose participants are the pool's
    /// workers (module docs, "Pools").
    Pool,
}

/// One dynamic instance of a parallel section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// Static index of the closing barrier or join call (names the static section).
    pub site: u32,
    /// Barrier or join.
    pub kind: SectionKind,
    /// When every participant could go on.
    pub release: f64,
    /// Participants, by thread id.
    pub threads: Vec<ThreadSection>,
}

impl Instance {
    /// Section length: release minus the earliest start.
    pub fn length(&self) -> f64 {
        let start = self
            .threads
            .iter()
            .map(|t| t.start)
            .fold(f64::INFINITY, f64::min);
        (self.release - start).max(0.0)
    }

    /// Of [`Instance::idle`], the cycles in which the idle thread no longer existed: after
    /// `ends[thread]`, when it ended (a joined child waiting for its siblings' ends; a thread
    /// that counted down and then exited). `ends` is indexed by thread id; a thread beyond it
    /// is taken as alive.
    pub fn idle_after_end(&self, ends: &[f64]) -> f64 {
        self.threads
            .iter()
            .filter_map(|t| {
                let end = *ends.get(t.thread as usize)?;
                Some((self.release - t.arrival.max(end)).max(0.0))
            })
            .sum()
    }

    /// Idle cycles summed over threads (release − arrival).
    pub fn idle(&self) -> f64 {
        self.threads
            .iter()
            .map(|t| (self.release - t.arrival).max(0.0))
            .sum()
    }

    /// Imbalance: the mean over threads of idle time ÷ section length (DESIGN §5).
    pub fn imbalance(&self) -> f64 {
        let len = self.length();
        if len <= 0.0 || self.threads.is_empty() {
            return 0.0;
        }
        self.idle() / len / self.threads.len() as f64
    }
}

/// No own instruction yet.
const NO_SIDX: u32 = u32::MAX;

/// Library code's events counted at one own instruction (the user's call that led there),
/// by the library instruction they occurred at, over the whole run and all threads: what
/// names the library beside the user's line in a report, and what a miss-erasure what-if
/// erases with the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryEvents {
    /// The own instruction the events are counted at.
    pub at: u32,
    /// The library instruction (static index).
    pub sidx: u32,
    /// L1, L2 and L3 misses, then mispredictions.
    pub counts: [u64; 4],
}

/// What the run's calls into library code did ([`Collector::library_calls`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryCalls {
    /// Library instructions' events by the own call they count at, sorted by call, then
    /// library instruction.
    pub events: Vec<LibraryEvents>,
    /// Per own call site into library code, the library instruction most of its calls
    /// entered (by a majority vote per thread, summed over the threads), sorted by call site.
    pub entries: Vec<(u32, u32)>,
}

impl LibraryCalls {
    /// The library instructions whose events are counted at own instruction `at`.
    pub fn called_from(&self, at: u32) -> impl Iterator<Item = &LibraryEvents> {
        let from = self.events.partition_point(|e| e.at < at);
        self.events[from..].iter().take_while(move |e| e.at == at)
    }

    /// The library instruction the calls at `at` enter, if it made any.
    pub fn entry(&self, at: u32) -> Option<u32> {
        let k = self.entries.binary_search_by_key(&at, |e| e.0).ok()?;
        Some(self.entries[k].1)
    }
}

/// Slots of [`LibraryTally`]'s cache of recent pairs (a power of two).
const TALLY_SLOTS: usize = 1 << 12;

/// One thread's library events: per (own instruction, library instruction) pair its L1,
/// L2, L3 misses and mispredictions, in first-seen order. `recent` is a direct-mapped cache
/// of pairs by library instruction (its slot: the instruction's low bits) holding each
/// pair's entry, so that a library loop's repeated misses from one call site find their
/// entry without hashing, in a fixed space whatever the program's size; the map is asked
/// only when the cache misses.
struct LibraryTally {
    entries: Vec<(u32, u32, [u64; 4])>,
    index: HashMap<(u32, u32), u32>,
    recent: Box<[(u32, u32, u32); TALLY_SLOTS]>,
}

impl Default for LibraryTally {
    fn default() -> LibraryTally {
        LibraryTally {
            entries: Vec::new(),
            index: HashMap::new(),
            recent: Box::new([(NO_SIDX, NO_SIDX, 0); TALLY_SLOTS]),
        }
    }
}

impl LibraryTally {
    #[inline]
    fn add(&mut self, at: u32, sidx: u32, r: &InstResult) {
        let (s, a, k) = self.recent[sidx as usize % TALLY_SLOTS];
        let k = if s == sidx && a == at {
            k
        } else {
            self.find(at, sidx)
        };
        let c = &mut self.entries[k as usize].2;
        for (n, &m) in c.iter_mut().zip(&r.misses) {
            *n += m as u64;
        }
        c[3] += r.mispredicted as u64;
    }

    #[cold]
    #[inline(never)]
    fn find(&mut self, at: u32, sidx: u32) -> u32 {
        let n = self.entries.len() as u32;
        let k = *self.index.entry((at, sidx)).or_insert(n);
        if k == n {
            self.entries.push((at, sidx, [0; 4]));
        }
        self.recent[sidx as usize % TALLY_SLOTS] = (sidx, at, k);
        k
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counter {
    execs: u32,
    misses: [u32; 3],
    mispredicted: u32,
}

#[derive(Debug, Clone, Copy)]
struct EdgeSlots {
    to: [u32; 2],
    n: [u32; 2],
}

const EMPTY_SLOTS: EdgeSlots = EdgeSlots {
    to: [u32::MAX; 2],
    n: [0; 2],
};

struct ThreadState {
    counters: Vec<Counter>,
    touched: Vec<u32>,
    edges: Vec<EdgeSlots>,
    edge_touched: Vec<u32>,
    spill: HashMap<(u32, u32), u64>,
    prev_branch: u32,
    /// Synchronization or runtime code ran since `prev_branch`: the next edge is not one.
    crossed: bool,
    /// The last instruction of the program's own code this thread ran ([`NO_SIDX`]).
    last_own: u32,
    /// The last instruction at one of the program's own lines it ran (own code, or a
    /// primitive's code inlined there: [`Program::own_lines`]), which names sections.
    last_line: u32,
    /// Synchronization code ran since the last own instruction: a library's code now was
    /// called from it, and counts nothing.
    in_sync: bool,
    /// It is in library code entered from its own code (a call, or a callback's return).
    in_lib: bool,
    /// The own instructions that called into library code and have not been returned to,
    /// innermost last (module docs, "Whose events").
    calls: Vec<u32>,
    /// What the library code it runs counts at: the innermost open call, else (a callback
    /// returned into library code called from nowhere this thread saw) the last own
    /// instruction.
    site: u32,
    /// Per own call site into library code: the library instruction its calls enter, by a
    /// majority vote over its calls (the candidate and its margin), so that the first call's
    /// detour through the dynamic linker does not name it. A map: it is asked once per call
    /// into a library, off the per-instruction path, and most instructions are no call site.
    entry: HashMap<u32, (u32, u32)>,
    /// It created a thread since its section began ([`Observer::create`]).
    creating: bool,
    /// Cycles it waited in synchronization (locks, conditions, futexes) since its section
    /// began.
    waited: f64,
    start: f64,
    /// A joined-to-be child's closed tail section.
    tail: Option<ThreadSection>,
    /// Its part was taken at its count-down before it ended ([`Observer::counted_down`]).
    counted: bool,
    /// It ran a pool worker's code ([`PoolRole::Worker`]): its own code is sealed in pieces.
    pool_worker: bool,
    /// When its current piece's first own instruction dispatched (a worker's).
    piece_start: Option<f64>,
    /// Its sealed pieces, in time order.
    pieces: Vec<ThreadSection>,
    /// Its open call into a pool: dispatched at, and the instruction that names it.
    pool_call: Option<(f64, u32)>,
    /// Its calls into a pool: start, end (its next own instruction), naming instruction.
    pool_calls: Vec<(f64, f64, u32)>,
    /// When it started and ended (a pool worker takes part in the calls made meanwhile).
    lifetime: (f64, f64),
    /// Library code's events counted at own instructions, by library instruction.
    library: LibraryTally,
}

struct OpenJoin {
    site: u32,
    instance: Instance,
    /// The parent's synchronization waits in its part of the instance (a latch it waited on
    /// before joining).
    parent_waited: f64,
}

/// What the collector needs of each instruction to follow calls into library code: its
/// fall-through address (where a call returns to) and whether it is a return.
struct CallShape {
    pc: Vec<u64>,
    next: Vec<u64>,
    ret: Vec<bool>,
}

/// Open library calls a thread keeps at most (a library left by `longjmp` or an exception
/// never returns to its caller's fall-through): the outermost are dropped beyond it.
const MAX_CALLS: usize = 64;

/// The LIME collector: an engine observer.
pub struct Collector {
    branch: Vec<bool>,
    calls: CallShape,
    roles: Vec<CodeRole>,
    /// Per static index: its source line is the program's own ([`Program::own_lines`]).
    own_lines: Vec<bool>,
    counted: Vec<bool>,
    threads: Vec<ThreadState>,
    open_barrier: Option<(u32, u64, Instance)>,
    open_joins: Vec<Option<OpenJoin>>,
    instances: Vec<Instance>,
    /// Per static index: its [`PoolRole`]; empty when the program has no pool.
    pool: Vec<PoolRole>,
    /// Pieces of pool workers' own code that ran within no call into the pool.
    stray: usize,
}

impl Collector {
    /// A collector for `threads` threads of `program`.
    pub fn new(program: &Program, threads: usize) -> Collector {
        let n = program.insts.len();
        let branch: Vec<bool> = program.insts.iter().map(|s| s.branch.is_branch()).collect();
        let counted: Vec<bool> = program
            .insts
            .iter()
            .map(|s| s.branch.is_branch() || !s.mem.is_empty())
            .collect();
        Collector {
            branch,
            calls: CallShape {
                pc: program.insts.iter().map(|s| s.pc).collect(),
                next: program.insts.iter().map(|s| s.pc + s.size as u64).collect(),
                ret: program
                    .insts
                    .iter()
                    .map(|s| s.branch == BranchKind::Return)
                    .collect(),
            },
            roles: program.code_roles(),
            own_lines: program.own_lines(),
            counted,
            threads: (0..threads)
                .map(|_| ThreadState {
                    counters: vec![Counter::default(); n],
                    touched: Vec::new(),
                    edges: vec![EMPTY_SLOTS; n],
                    edge_touched: Vec::new(),
                    spill: HashMap::new(),
                    prev_branch: ENTRY,
                    crossed: true,
                    last_own: NO_SIDX,
                    last_line: NO_SIDX,
                    in_sync: false,
                    in_lib: false,
                    calls: Vec::new(),
                    site: NO_SIDX,
                    entry: HashMap::new(),
                    creating: false,
                    waited: 0.0,
                    start: 0.0,
                    tail: None,
                    counted: false,
                    pool_worker: false,
                    piece_start: None,
                    pieces: Vec::new(),
                    pool_call: None,
                    pool_calls: Vec::new(),
                    lifetime: (0.0, f64::INFINITY),
                    library: LibraryTally::default(),
                })
                .collect(),
            open_barrier: None,
            open_joins: (0..threads).map(|_| None).collect(),
            instances: Vec::new(),
            pool: program.pool_roles(),
            stray: 0,
        }
    }

    /// Library code's misses and mispredictions, by the own call they are counted at and
    /// the library instruction they occurred at, summed over the threads, and the library
    /// instruction each call site's calls enter.
    pub fn library_calls(&self) -> LibraryCalls {
        let mut sum: BTreeMap<(u32, u32), [u64; 4]> = BTreeMap::new();
        for &(at, sidx, counts) in self.threads.iter().flat_map(|t| &t.library.entries) {
            let c = sum.entry((at, sidx)).or_default();
            for k in 0..4 {
                c[k] += counts[k];
            }
        }
        let events = sum
            .into_iter()
            .map(|((at, sidx), counts)| LibraryEvents { at, sidx, counts })
            .collect();
        // Per call site, each candidate's margins summed over the threads; the largest wins
        // (ties: the smaller index).
        let mut votes: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for th in &self.threads {
            for (&at, &(entry, margin)) in &th.entry {
                if margin > 0 {
                    *votes.entry((at, entry)).or_default() += margin as u64;
                }
            }
        }
        let mut best: BTreeMap<u32, (u64, u32)> = BTreeMap::new();
        for ((at, entry), margin) in votes {
            let b = best.entry(at).or_insert((0, entry));
            if margin > b.0 {
                *b = (margin, entry);
            }
        }
        let entries = best
            .into_iter()
            .map(|(at, (_, entry))| (at, entry))
            .collect();
        LibraryCalls { events, entries }
    }

    /// Closes what is open and returns every instance in the order they completed.
    pub fn finish(self) -> Vec<Instance> {
        self.finish_counting_strays().0
    }

    /// [`Collector::finish`], and how many pieces of pool workers' own code ran within no
    /// call into the pool (module docs, "Pools"): the replay let a worker run a job before
    /// it was handed to the pool, or after its caller went on.
    pub fn finish_counting_strays(mut self) -> (Vec<Instance>, usize) {
        self.close_barrier();
        for t in 0..self.open_joins.len() {
            self.close_join(t);
        }
        self.close_pools();
        (self.instances, self.stray)
    }

    /// Places the pool workers' pieces in the calls into the pool (module docs, "Pools") and
    /// adds those instances among the others, by release.
    fn close_pools(&mut self) {
        if self.pool.is_empty() {
            return;
        }
        let mut calls: Vec<(f64, f64, u32, usize)> = Vec::new();
        for (t, th) in self.threads.iter_mut().enumerate() {
            // A call still open when the run ended ends there.
            if let Some((start, site)) = th.pool_call.take() {
                th.pool_calls.push((start, f64::INFINITY, site));
            }
            calls.extend(th.pool_calls.drain(..).map(|(s, e, site)| (s, e, site, t)));
        }
        calls.sort_by(|a, b| a.0.total_cmp(&b.0));
        let workers: Vec<usize> = (0..self.threads.len())
            .filter(|&t| self.threads[t].pool_worker)
            .collect();
        let mut parts: Vec<Vec<Vec<ThreadSection>>> =
            vec![vec![Vec::new(); workers.len()]; calls.len()];
        for (w, &t) in workers.iter().enumerate() {
            for piece in std::mem::take(&mut self.threads[t].pieces) {
                // The call it ran within: the latest to start before it arrived, if it had
                // not ended by then (a worker's piece inside a call of its own is no part).
                let k = calls.partition_point(|c| c.0 < piece.arrival);
                match (k.saturating_sub(64)..k)
                    .rev()
                    .find(|&k| calls[k].3 != t && piece.arrival <= calls[k].1)
                {
                    Some(k) => parts[k][w].push(piece),
                    None => self.stray += 1,
                }
            }
        }
        let mut pools = Vec::new();
        for (&(start, end, site, _), pieces) in calls.iter().zip(parts) {
            if pieces.iter().all(|p| p.is_empty()) {
                continue;
            }
            // Every worker alive during the call takes part, with or without work.
            let threads: Vec<ThreadSection> = workers
                .iter()
                .zip(pieces)
                .filter(|(t, ps)| {
                    let (began, ended) = self.threads[**t].lifetime;
                    !ps.is_empty() || (began < end && ended > start)
                })
                .map(|(&t, ps)| merge_pieces(t as u32, start, ps))
                .collect();
            let release = threads.iter().map(|t| t.arrival).fold(start, f64::max);
            pools.push(Instance {
                site,
                kind: SectionKind::Pool,
                release,
                threads,
            });
        }
        if !pools.is_empty() {
            self.instances.extend(pools);
            self.instances
                .sort_by(|a, b| a.release.total_cmp(&b.release));
        }
    }

    fn snapshot(&mut self, t: usize, arrival: f64) -> ThreadSection {
        let th = &mut self.threads[t];
        let events = take_events(th, &self.counted);
        th.creating = false;
        th.waited = 0.0;
        // No edge spans a section boundary: what a thread runs first after a barrier or a
        // fork depends on its role there (the master returns into its own code, the team
        // into the region).
        th.crossed = true;
        let start = th.start;
        ThreadSection {
            thread: t as u32,
            start,
            arrival,
            events,
        }
    }

    fn close_barrier(&mut self) {
        if let Some((_, _, mut inst)) = self.open_barrier.take() {
            inst.threads.sort_by_key(|t| t.thread);
            let working = inst.threads.iter().filter(|t| !t.events.is_empty()).count();
            if inst.threads.len() >= 2 && working == 1 {
                inst.kind = SectionKind::Serial;
            }
            self.instances.push(inst);
        }
    }

    /// The instruction that names a section closed at `site` by thread `t`: the site when its
    /// line is the program's own (its code, or a primitive's code inlined there), else the
    /// last instruction at an own line the thread ran (the user's call into the library whose
    /// barrier or join it is), else the site.
    fn named(&self, t: usize, site: u32) -> u32 {
        if self.own_lines.get(site as usize).is_none_or(|&own| own) {
            return site;
        }
        match self.threads[t].last_line {
            NO_SIDX => site,
            line => line,
        }
    }

    fn close_join(&mut self, t: usize) {
        if let Some(mut j) = self.open_joins[t].take() {
            // A parent that worked little between creating its children (or its last barrier
            // with them) and joining them was waiting for them, not working beside them: its
            // wait is no imbalance of their work. Little: its time there, less what it spent
            // waiting in synchronization (a latch the children counted down), under a tenth
            // of the time from then to the last child's end.
            let release = j.instance.release;
            let waited = j.parent_waited;
            if j.instance.threads.len() > 1 {
                j.instance.threads.retain(|ts| {
                    ts.thread != t as u32 || (ts.time() - waited) * 10.0 >= release - ts.start
                });
            }
            // Joins of children whose parts were taken at their count-downs
            // ([`Observer::counted_down`]: a latch counted down as they ended) close nothing.
            if j.instance.threads.iter().all(|ts| ts.thread == t as u32) {
                return;
            }
            j.instance.threads.sort_by_key(|t| t.thread);
            self.instances.push(j.instance);
        }
    }

    #[inline]
    fn edge(th: &mut ThreadState, from: u32, to: u32) {
        if from == ENTRY {
            *th.spill.entry((from, to)).or_insert(0) += 1;
            return;
        }
        let s = &mut th.edges[from as usize];
        if s.n[0] == 0 && s.n[1] == 0 {
            th.edge_touched.push(from);
        }
        for k in 0..2 {
            if s.to[k] == to && s.n[k] > 0 {
                s.n[k] += 1;
                return;
            }
            if s.n[k] == 0 {
                s.to[k] = to;
                s.n[k] = 1;
                return;
            }
        }
        *th.spill.entry((from, to)).or_insert(0) += 1;
    }
}

/// Takes a thread's event counts since they were last taken, sorted by event.
fn take_events(th: &mut ThreadState, counted: &[bool]) -> Vec<(Event, u64)> {
    let mut events = Vec::with_capacity(th.touched.len() * 2 + th.edge_touched.len() * 2);
    for &s in &th.touched {
        let c = std::mem::take(&mut th.counters[s as usize]);
        // An own instruction that is neither a branch nor an access counts its executions
        // when a library's misses or mispredictions were counted at it (the superior of
        // those events).
        if counted[s as usize] || c.misses != [0; 3] || c.mispredicted > 0 {
            events.push((Event::Exec(s), c.execs as u64));
        }
        for (l, &m) in c.misses.iter().enumerate() {
            if m > 0 {
                events.push((
                    Event::Miss {
                        sidx: s,
                        level: l as u8 + 1,
                    },
                    m as u64,
                ));
            }
        }
        if c.mispredicted > 0 {
            events.push((Event::Mispredict(s), c.mispredicted as u64));
        }
    }
    th.touched.clear();
    for &from in &th.edge_touched {
        let slots = std::mem::replace(&mut th.edges[from as usize], EMPTY_SLOTS);
        for k in 0..2 {
            if slots.n[k] > 0 {
                events.push((
                    Event::Edge {
                        from,
                        to: slots.to[k],
                    },
                    slots.n[k] as u64,
                ));
            }
        }
    }
    th.edge_touched.clear();
    for ((from, to), n) in th.spill.drain() {
        events.push((Event::Edge { from, to }, n));
    }
    events.sort_unstable_by_key(|a| a.0);
    events
}

/// One worker's part of a call into a pool from its pieces there (module docs, "Pools").
fn merge_pieces(thread: u32, start: f64, pieces: Vec<ThreadSection>) -> ThreadSection {
    let arrival = pieces.iter().map(|p| p.arrival).fold(start, f64::max);
    let mut all: Vec<(Event, u64)> = pieces.into_iter().flat_map(|p| p.events).collect();
    all.sort_unstable_by_key(|a| a.0);
    let mut events: Vec<(Event, u64)> = Vec::with_capacity(all.len());
    for (e, n) in all {
        match events.last_mut() {
            Some(last) if last.0 == e => last.1 += n,
            _ => events.push((e, n)),
        }
    }
    ThreadSection {
        thread,
        start,
        arrival,
        events,
    }
}

/// A pool's bookkeeping when a thread comes back to its own code at `at` from
/// synchronization or runtime code (module docs, "Pools"): a call into the pool ends, and a
/// worker's piece begins. Cold and out of line, as [`pool_sync`].
#[cold]
#[inline(never)]
fn pool_resume(th: &mut ThreadState, at: f64) {
    if let Some((start, site)) = th.pool_call.take() {
        th.pool_calls.push((start, at, site));
    }
    if th.pool_worker {
        th.piece_start = Some(at);
    }
}

/// A pool's bookkeeping for a synchronization or runtime instruction `sidx` dispatched at
/// `at` (module docs, "Pools"): a pool's entry opens a call, a worker's wait for jobs marks
/// its thread a worker, and a worker's open piece is sealed. Cold and out of line: a program
/// without a pool never calls it, and a call inlined into the per-instruction path slowed the
/// collector of every program (`isim lime` 16 % more user time on `sync20`).
#[cold]
#[inline(never)]
fn pool_sync(th: &mut ThreadState, role: PoolRole, counted: &[bool], sidx: u32, at: f64) {
    match role {
        PoolRole::Entry if th.pool_call.is_none() => {
            let site = if th.last_line == NO_SIDX {
                sidx
            } else {
                th.last_line
            };
            th.pool_call = Some((at, site));
        }
        PoolRole::Worker => th.pool_worker = true,
        _ => {}
    }
    if let Some(start) = th.piece_start.take() {
        let events = take_events(th, counted);
        th.pieces.push(ThreadSection {
            thread: 0, // set when the pieces of a call are merged
            start,
            arrival: at,
            events,
        });
    }
}

/// A thread goes from its own code into library code at `sidx`: a call (or jump) from its
/// last own instruction opens a call there; a return from it is a callback going back into
/// the library code that called it, whose call stays open.
#[cold]
#[inline(never)]
fn library_entered(th: &mut ThreadState, calls: &CallShape, sidx: u32) {
    let from = th.last_own;
    if calls.ret[from as usize] {
        if th.calls.is_empty() {
            th.site = from;
        }
        return;
    }
    if th.calls.len() == MAX_CALLS {
        th.calls.remove(0);
    }
    th.calls.push(from);
    th.site = from;
    let e = th.entry.entry(from).or_insert((NO_SIDX, 0));
    if e.0 == sidx {
        e.1 += 1;
    } else if e.1 == 0 {
        *e = (sidx, 1);
    } else {
        e.1 -= 1;
    }
}

/// A thread goes from library code back into its own code at `sidx`: where an open call
/// returns to (its fall-through) closes it and the calls opened after it; anywhere else is a
/// callback's start, and closes nothing.
#[cold]
#[inline(never)]
fn library_left(th: &mut ThreadState, calls: &CallShape, sidx: u32) {
    let pc = calls.pc[sidx as usize];
    if let Some(k) = th.calls.iter().rposition(|&c| calls.next[c as usize] == pc) {
        th.calls.truncate(k);
        th.site = th.calls.last().copied().unwrap_or(NO_SIDX);
    }
}

/// One thread's part of a [`Collector`].
pub struct CollectorPart<'a> {
    th: &'a mut ThreadState,
    branch: &'a [bool],
    calls: &'a CallShape,
    roles: &'a [CodeRole],
    own_lines: &'a [bool],
    counted: &'a [bool],
    pool: &'a [PoolRole],
}

impl ThreadObserver for CollectorPart<'_> {
    #[inline(always)]
    fn inst(&mut self, sidx: u32, r: &InstResult, _stack: &CycleStack) {
        let th = &mut *self.th;
        if self.own_lines[sidx as usize] {
            th.last_line = sidx;
        }
        let at = match self.roles[sidx as usize] {
            CodeRole::Own => {
                if th.in_sync {
                    th.in_sync = false;
                    if !self.pool.is_empty() {
                        pool_resume(th, r.dispatch);
                    }
                }
                if th.in_lib {
                    th.in_lib = false;
                    library_left(th, self.calls, sidx);
                }
                sidx
            }
            CodeRole::Library if th.last_own == NO_SIDX || th.in_sync => return,
            CodeRole::Library => {
                if !th.in_lib {
                    th.in_lib = true;
                    library_entered(th, self.calls, sidx);
                }
                th.site
            }
            CodeRole::Sync => {
                th.crossed = true;
                th.in_sync = true;
                if !self.pool.is_empty() {
                    pool_sync(th, self.pool[sidx as usize], self.counted, sidx, r.dispatch);
                }
                return;
            }
        };
        let c = &mut th.counters[at as usize];
        if c.execs == 0 && c.misses == [0; 3] && c.mispredicted == 0 {
            th.touched.push(at);
        }
        c.misses[0] += r.misses[0];
        c.misses[1] += r.misses[1];
        c.misses[2] += r.misses[2];
        c.mispredicted += r.mispredicted as u32;
        if at != sidx {
            // An access that missed a lower level missed the L1 first.
            if r.misses[0] != 0 || r.mispredicted {
                th.library.add(at, sidx, r);
            }
            return;
        }
        c.execs += 1;
        th.last_own = sidx;
        if self.branch[sidx as usize] {
            // After synchronization or runtime code the thread comes from the section's entry,
            // not from its branch before the call.
            let from = if th.crossed { ENTRY } else { th.prev_branch };
            Collector::edge(th, from, sidx);
            th.crossed = false;
            th.prev_branch = sidx;
        }
    }
}

impl Observer for Collector {
    type Part<'a> = CollectorPart<'a>;
    const STACKS: bool = false;

    fn parts(&mut self) -> Option<Vec<CollectorPart<'_>>> {
        let branch = &self.branch[..];
        let calls = &self.calls;
        let roles = &self.roles[..];
        let own_lines = &self.own_lines[..];
        let counted = &self.counted[..];
        let pool = &self.pool[..];
        Some(
            self.threads
                .iter_mut()
                .map(|th| CollectorPart {
                    th,
                    branch,
                    calls,
                    roles,
                    own_lines,
                    counted,
                    pool,
                })
                .collect(),
        )
    }

    #[inline(always)]
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, stack: &CycleStack) {
        CollectorPart {
            th: &mut self.threads[tid as usize],
            branch: &self.branch,
            calls: &self.calls,
            roles: &self.roles,
            own_lines: &self.own_lines,
            counted: &self.counted,
            pool: &self.pool,
        }
        .inst(sidx, r, stack);
    }

    fn create(&mut self, parent: u32, _child: u32, at: f64) {
        // The parent's code before it created its first child of a group is serial code
        // before the parallel part (no one waits for it: the children did not exist); its
        // part of the section that the children's join or barrier closes starts here.
        let p = parent as usize;
        if !self.threads[p].creating {
            self.snapshot(p, at);
            self.threads[p].start = at;
            self.threads[p].creating = true;
        }
    }

    fn thread_start(&mut self, tid: u32, at: f64) {
        // A new thread means the creator has moved on from any join group.
        for t in 0..self.open_joins.len() {
            if self.open_joins[t].is_some() && t != tid as usize {
                self.close_join(t);
            }
        }
        self.threads[tid as usize].start = at;
        self.threads[tid as usize].lifetime.0 = at;
    }

    fn barrier(&mut self, tid: u32, site: u32, arrival: f64, release: f64) {
        self.close_join(tid as usize);
        let key = (site, release.to_bits());
        if self
            .open_barrier
            .as_ref()
            .is_some_and(|(s, r, _)| (*s, *r) != key)
        {
            self.close_barrier();
        }
        let named = self.named(tid as usize, site);
        let ts = self.snapshot(tid as usize, arrival);
        self.threads[tid as usize].start = release;
        let open = self.open_barrier.get_or_insert_with(|| {
            (
                site,
                release.to_bits(),
                Instance {
                    site: named,
                    kind: SectionKind::Barrier,
                    release,
                    threads: Vec::new(),
                },
            )
        });
        open.2.threads.push(ts);
    }

    fn wait(&mut self, tid: u32, _kind: sim_core::Component, from: f64, until: f64) {
        self.threads[tid as usize].waited += (until - from).max(0.0);
    }

    fn thread_end(&mut self, tid: u32, at: f64) {
        self.threads[tid as usize].lifetime.1 = at;
        let ts = self.snapshot(tid as usize, at);
        if !self.threads[tid as usize].counted {
            self.threads[tid as usize].tail = Some(ts);
        }
    }

    fn join(&mut self, tid: u32, site: u32, child: u32, arrival: f64, release: f64) {
        let tail = self.threads[child as usize].tail.take();
        self.join_child(tid as usize, site, arrival, release, tail);
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
        // The child's part ends at its count-down (what it runs after is its exit), whether
        // or not it has ended yet; once taken, its end leaves no part for a later join.
        let c = child as usize;
        let part = match self.threads[c].tail.take() {
            Some(mut ts) => {
                ts.arrival = ts.arrival.min(counted);
                ts
            }
            None => {
                let ts = self.snapshot(c, counted);
                self.threads[c].counted = true;
                ts
            }
        };
        self.join_child(tid as usize, site, arrival, release, Some(part));
    }
}

impl Collector {
    /// A join of one child by thread `t` (see [`Observer::join`]); `tail` is the child's part.
    fn join_child(
        &mut self,
        t: usize,
        site: u32,
        arrival: f64,
        release: f64,
        tail: Option<ThreadSection>,
    ) {
        if self.open_joins[t].as_ref().is_some_and(|j| j.site != site) {
            self.close_join(t);
        }
        if self.open_joins[t].is_none() {
            let named = self.named(t, site);
            let parent_waited = self.threads[t].waited;
            let me = self.snapshot(t, arrival);
            self.open_joins[t] = Some(OpenJoin {
                site,
                instance: Instance {
                    site: named,
                    kind: SectionKind::Join,
                    release,
                    threads: vec![me],
                },
                parent_waited,
            });
        }
        self.threads[t].start = release;
        if let Some(j) = self.open_joins[t].as_mut() {
            j.instance.release = j.instance.release.max(release);
            if let Some(ts) = tail {
                j.instance.threads.push(ts);
            }
        }
    }
}
