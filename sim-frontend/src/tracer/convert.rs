//! Turns a capture directory (the raw files of [`super::raw`]) into a trace.
//!
//! Per thread, in program order, each executed instruction becomes a record once the next one
//! is known (that is when a conditional branch's outcome is), with the memory accesses QEMU
//! reported for it: contiguous pieces of one access (a 32-byte vector load arrives as four
//! 8-byte reads) are merged back into one operand, up to the instruction's widest operand.
//! The static shape of an instruction is that of its first execution; later executions that
//! differ (a `rep` iteration that moves nothing) carry their accesses explicitly.
//!
//! What is left out: the interposition library's own instructions, and PLT stubs (`.plt`,
//! `.plt.sec`, `.plt.got`): a call through one is followed by the callee's first instruction,
//! or, when the callee was not traced (the pthread functions), by the call's own fall-through,
//! as the simulator and the profile collector expect of a call whose callee was not traced.
//! `isim trace` runs the program with `LD_BIND_NOW=1`, so that no lazy symbol resolution in
//! the dynamic loader shows up inside `main`.
//!
//! Threads are numbered densely in the order of their creation numbers (the main thread is 0);
//! create/join markers are renumbered alike. Every thread's stream starts with `ThreadStart`
//! and ends with `ThreadEnd`, also a thread cut short by the end of the process, which is
//! reported.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::countdown;
use super::decode::{Decoded, X86Decoder};
use super::futexlock::{self, Atomic, Locks, UNWIND_MAX};
use super::raw::{self, Op, Word};
use super::spinwait;
use super::srcmap::{Resolver, parse_modules};
use super::sync::{self, RawMark};
use super::taslock;
use crate::error::TraceError;
use crate::format::writer::{ThreadEncoder, TraceWriter};
use crate::model::{BranchKind, Marker, MemAccess, MemSpec, SrcLoc, StaticInst, TraceMeta};

/// What part of the program is the region of interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoiMode {
    /// Between `ISIM_ROI_BEGIN()` and `ISIM_ROI_END()`; recording starts at `main` (warm-up).
    Markers,
    /// `main`, from its first instruction to its return.
    Main,
    /// Everything, from the first instruction of the process.
    All,
}

impl RoiMode {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            RoiMode::Markers => "markers",
            RoiMode::Main => "main",
            RoiMode::All => "all",
        }
    }
}

/// Counts per thread of what was written (the tracer's own summary).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadSummary {
    /// Instructions.
    pub instructions: u64,
    /// Read accesses.
    pub loads: u64,
    /// Write accesses.
    pub stores: u64,
    /// Branch instructions.
    pub branches: u64,
    /// Taken branches.
    pub taken_branches: u64,
    /// Markers by [`Marker::kind_index`].
    pub markers: [u64; Marker::KINDS],
    /// The process ended while the thread ran: its last events may be missing.
    pub cut: bool,
}

/// The result of a conversion.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Per trace thread.
    pub threads: Vec<ThreadSummary>,
    /// Static instructions in the trace.
    pub static_instructions: usize,
    /// Instructions executed by the interposition library and PLT stubs, left out.
    pub dropped_instructions: u64,
    /// Things a user should know (cut threads, unknown barriers, missing debug info).
    pub warnings: Vec<String>,
    /// The traced process called exec: the trace ends there, before the new program (a
    /// wrapper such as `env VAR=… prog` traced instead of the program).
    pub ended_at_exec: bool,
    /// Critical sections that found their condition true where the same code elsewhere
    /// waited, replayed as waits for the section that made it so (see `sync.rs`).
    pub skipped_waits: u64,
    /// Barrier episodes recognised in condition variables (see `sync.rs`).
    pub hand_barriers: u64,
    /// Condition variables those episodes came from.
    pub hand_barrier_conds: usize,
    /// Reads of pipes, eventfds and socket pairs that got bytes.
    pub channel_reads: u64,
    /// Those of them replayed as waits for the traced write that gave them (`sync.rs`).
    pub channel_waits: u64,
    /// Spin-wait loops (`pause` instructions) traced as work, most pauses first.
    pub spin_loops: Vec<SpinLoop>,
    /// Locks built on futexes, replayed as mutexes (see `futexlock.rs`).
    pub futex_locks: FutexLocks,
    /// Spin-waits replaced by waits (see `spinwait.rs`).
    pub spin_waits: SpinWaits,
}

/// Spin-waits on plain memory that the conversion found (see `spinwait.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpinWaits {
    /// Replaced by a wait for the store that ended them.
    pub waits: u64,
    /// Their instructions left out.
    pub instructions: u64,
    /// Found but left as traced: the ending store was not recorded, or the spin overlaps a
    /// lock's attempt.
    pub unmatched: u64,
    /// Loads that found another thread's store at their first look, replayed as waits for it.
    pub reads: u64,
    /// Atomic instructions that added a flag to one another thread had set (a one-shot
    /// publication: a channel's slot marked read after it was marked written), replayed as
    /// waits for it (`publish.rs`).
    pub published: u64,
    /// A poller's looks across its `sched_yield`s that read another thread's store, replayed
    /// as waits for it.
    pub polls: u64,
    /// Barriers built on spun-on addresses (replayed as barriers).
    pub barriers: u64,
    /// Their participants' arrivals.
    pub barrier_arrivals: u64,
}

/// Locks built on futexes that the conversion recognised (see `futexlock.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FutexLocks {
    /// Lock words.
    pub words: usize,
    /// Their acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that failed at least once first in the traced run.
    pub contended: u64,
    /// Acquisitions of locks whose code spins before it sleeps (seen spinning in the trace, or
    /// read from the lock's slow path).
    pub spinning: u64,
    /// Instructions of their attempts (failed tries, spinning, the acquiring instruction) and
    /// releasing instructions, replaced by mutex markers.
    pub replaced_instructions: u64,
    /// Futex words updated atomically whose history is not a lock's (left alone).
    pub rejected: usize,
    /// Of the lock words, test-and-set locks freed by a plain store (see `taslock.rs`).
    pub test_and_set: usize,
    /// Of the lock words, read/write locks (Rust's std `RwLock`).
    pub read_write: usize,
    /// Semaphores built on a futex word in the program's code (`atomicsem.rs`: C++20's
    /// `std::counting_semaphore`), replayed as semaphores.
    pub semaphores: usize,
    /// Their takes.
    pub semaphore_takes: u64,
    /// Their releases.
    pub semaphore_gives: u64,
    /// Waits for a counter that other threads counted down to zero (see `countdown.rs`),
    /// replayed as a wait for each of those threads.
    pub countdown_waits: u64,
    /// Their dependences.
    pub countdown_edges: u64,
    /// Of those, counts made as the counting thread ended (`model::EXIT_COUNT`).
    pub countdown_exits: u64,
    /// Of the waits, those found at the owner's plain load of the counter (nobody notified).
    pub countdown_loads: u64,
}

/// A spin-wait loop found in the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpinLoop {
    /// `file:line (function)` of its `pause`.
    pub place: String,
    /// Executions of the `pause`.
    pub pauses: u64,
    /// Instructions executed in the loop (between consecutive pauses of a thread).
    pub instructions: u64,
    /// Trace threads that spun there (below 32).
    pub threads: Vec<u32>,
}

/// Options of [`convert`].
#[derive(Debug, Clone)]
pub struct Options {
    /// The traced program (for its debug information and the header).
    pub program: PathBuf,
    /// Its arguments (recorded in the header).
    pub args: Vec<String>,
    /// The region of interest.
    pub roi: RoiMode,
    /// File name of the interposition library, whose instructions are left out.
    pub preload_name: String,
    /// Source paths under this directory are recorded relative to it (e.g. the directory
    /// `isim trace` ran in), so reports show `examples/c/x.c:42`.
    pub base_dir: Option<PathBuf>,
    /// Host threads converting the threads' streams (0: one per host core). The records are
    /// the same whatever the number; with more than one, the chunks' order in the file is
    /// that in which they were completed.
    pub host_threads: usize,
}

struct Static {
    pc: u64,
    code: Vec<u8>,
}

fn read_statics(path: &Path) -> Result<Vec<Static>, TraceError> {
    let b = std::fs::read(path).map_err(|e| TraceError::io(path, 0, "cannot read", e))?;
    let mut out = Vec::new();
    let mut i = 0;
    while i + 9 <= b.len() {
        let pc = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let len = b[i + 8] as usize;
        if i + 9 + len > b.len() {
            break; // cut by a kill: the events cannot refer to it either
        }
        out.push(Static {
            pc,
            code: b[i + 9..i + 9 + len].to_vec(),
        });
        i += 9 + len;
    }
    Ok(out)
}

/// The thread numbers with a raw file in `dir`, sorted.
fn raw_threads(dir: &Path) -> Result<Vec<u32>, TraceError> {
    let mut v = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, 0, "cannot list", e))?;
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_prefix('t')
            .and_then(|s| s.strip_suffix(".raw"))
            .and_then(|s| s.parse::<u32>().ok())
        {
            v.push(n);
        }
    }
    v.sort_unstable();
    Ok(v)
}

/// What the per-instruction loop needs of a static instruction, packed (16 bytes).
#[derive(Clone, Copy)]
struct Hot {
    pc: u64,
    size: u8,
    branch: BranchKind,
    widest: u8,
    /// Recorded in the trace (not the interposer's, not a PLT stub, decodable).
    keep: bool,
    /// A `pause` (the spin-wait hint).
    pause: bool,
    /// An atomic read-modify-write instruction (its recorded values go to `futexlock`).
    atomic: bool,
    /// An `xchg` with memory: its value is a store that can end a spin (`spinwait`), as a
    /// sequentially consistent `store` compiles to one. Counters' `lock xadd` and
    /// `cmpxchg` are not: a barrier's arrivals, not its release.
    swap: bool,
}

/// Most calls pass 1 follows at once (deeper, it forgets the oldest half: a thread that
/// leaves functions without returning, by `longjmp` or an exception).
const MAX_CALLS: usize = 1 << 16;

/// Instructions between two `pause`s of a thread that count as one spin-wait loop.
const SPIN_GAP: u64 = 64;

struct Conv<'a> {
    w: TraceWriter,
    statics: &'a [Static],
    dec: &'a [Decoded],
    block_starts: &'a HashSet<u64>,
    resolver: &'a mut Resolver,
    sidx: Vec<u32>,
    functions: HashMap<String, u32>,
    files: HashMap<String, u32>,
    sections: HashMap<String, u32>,
    summary: Summary,
    base_dir: Option<PathBuf>,
    /// Names for library functions no symbol names, by raw index: the symbol of the PLT stub
    /// that jumped to the function's entry (`memset`, whose IFUNC-chosen body a stripped libc
    /// leaves unnamed), for the entry and the body the first thread to run it ran at the
    /// entry's call depth, so that a call's callee has a name (LIME's `in memset`, a
    /// profile's `memset` frame).
    entry_names: HashMap<u32, String>,
}

impl Conv<'_> {
    fn declare(&mut self, raw: u32, mem: &[MemAccess]) -> Result<u32, TraceError> {
        let st = &self.statics[raw as usize];
        let d = &self.dec[raw as usize];
        let mut r = self.resolver.resolve(st.pc);
        if r.function.as_deref().is_none_or(|f| f.starts_with('<'))
            && let Some(name) = self.entry_names.get(&raw)
        {
            r.function = Some(name.clone());
        }
        let intern = |map: &mut HashMap<String, u32>, list: &mut Vec<String>, name: String| {
            *map.entry(name).or_insert_with_key(|k| {
                list.push(k.clone());
                list.len() as u32 - 1
            })
        };
        let src = self.w.source_mut();
        let function = r.function.map_or(SrcLoc::UNKNOWN, |f| {
            intern(&mut self.functions, &mut src.functions, f)
        });
        let file = r.file.map_or(SrcLoc::UNKNOWN, |f| {
            let short = match &self.base_dir {
                Some(b) => Path::new(&f)
                    .strip_prefix(b)
                    .map_or(f.clone(), |p| p.display().to_string()),
                None => f,
            };
            intern(&mut self.files, &mut src.files, short)
        });
        let inst = StaticInst {
            pc: st.pc,
            size: d.size.max(1),
            class: d.class,
            branch: d.branch,
            target: d.target,
            srcs: d.srcs.clone(),
            addr_srcs: Some(d.addr_srcs),
            dsts: d.dsts.clone(),
            mem: mem
                .iter()
                .map(|a| MemSpec {
                    size: a.size,
                    write: a.write,
                })
                .collect(),
            block_start: self.block_starts.contains(&st.pc) || r.symbol_start == Some(st.pc),
            loc: SrcLoc {
                function,
                file,
                line: r.line,
            },
        };
        let s = self.w.add_static(inst)?;
        self.sidx[raw as usize] = s;
        Ok(s)
    }

    fn section(&mut self, name: String) -> u32 {
        let list = &mut self.w.source_mut().sections;
        *self.sections.entry(name).or_insert_with_key(|k| {
            list.push(k.clone());
            list.len() as u32 - 1
        })
    }
}

/// A created thread's own stack (and the thread-local storage glibc keeps in the same block),
/// moved to an address range of its own: the C library hands a finished thread's stack to the
/// next thread it creates, so whether two threads had the same stack addresses depends on
/// whether the first had ended when the second was created in the traced run — an accident
/// of the host's scheduling. Replay, which may run them at once, would make them share cache
/// lines they never shared (each call and local variable a coherence miss). The thread's own
/// accesses to its stack go to `STACK_BASE + t · 2^36` plus the address's low 36 bits (so
/// every cache set and page offset is unchanged). Other threads' accesses to it (a pointer to
/// a local variable handed to another thread, an OpenMP task's shared variable) go where the
/// owner's do: see [`Stacks`].
#[derive(Clone, Copy)]
struct OwnStack {
    lo: u64,
    hi: u64,
    base: u64,
}

/// Above every user-space address (x86-64 user addresses are below 2^47).
const STACK_BASE: u64 = 1 << 47;
const STACK_LOW: u64 = (1 << 36) - 1;

impl OwnStack {
    const NONE: OwnStack = OwnStack {
        lo: 0,
        hi: 0,
        base: 0,
    };

    /// Thread `t`'s stack `[lo, hi)` (the main thread's, `t` = 0, stays: no thread reuses it).
    fn new(t: u32, lo: u64, hi: u64) -> OwnStack {
        if t == 0 || lo >= hi || hi - lo > STACK_LOW {
            return OwnStack::NONE;
        }
        OwnStack {
            lo,
            hi,
            base: STACK_BASE + ((t as u64) << 36),
        }
    }

    #[inline(always)]
    fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.lo) < self.hi - self.lo
    }

    /// `addr` moved to the range starting at `base`.
    #[inline(always)]
    fn moved(base: u64, addr: u64) -> u64 {
        base + (addr & STACK_LOW)
    }

    #[inline(always)]
    fn map(&self, addr: u64) -> u64 {
        if self.contains(addr) {
            OwnStack::moved(self.base, addr)
        } else {
            addr
        }
    }
}

/// One thread's use of a stack: (start sequence number, end sequence number, base of its
/// moved range).
type Incarnation = (u64, u64, u64);

/// Every created thread's stack with the thread's lifetime in sequence numbers, so that
/// another thread's access to it goes where the owner's own accesses went: to the incarnation
/// alive at the accessing thread's last marker, else the first one to start after it, else
/// the last one.
#[derive(Default)]
struct Stacks {
    /// Distinct ranges `(lo, hi)`, sorted, each with its incarnations in start order.
    ranges: Vec<(u64, u64, Vec<Incarnation>)>,
    /// The lowest `lo` and the highest `hi` (a quick test for the common access).
    span: (u64, u64),
}

impl Stacks {
    /// From every thread's raw markers (`ThreadStart` carries the stack).
    fn new(marks: &[Vec<RawMark>]) -> Stacks {
        let mut all: Vec<(u64, u64, u64, u64, u64)> = Vec::new();
        for (t, ms) in marks.iter().enumerate() {
            let Some(start) = ms.iter().find(|m| m.op == Op::ThreadStart) else {
                continue;
            };
            let own = OwnStack::new(t as u32, start.args[1], start.args[2]);
            if own.base == 0 {
                continue;
            }
            let end = ms
                .iter()
                .rfind(|m| m.op == Op::ThreadEnd)
                .map_or(u64::MAX, |m| m.seq);
            all.push((own.lo, own.hi, start.seq, end, own.base));
        }
        all.sort_unstable();
        let mut out = Stacks {
            ranges: Vec::new(),
            span: (u64::MAX, 0),
        };
        for (lo, hi, start, end, base) in all {
            out.span = (out.span.0.min(lo), out.span.1.max(hi));
            match out.ranges.last_mut() {
                Some(r) if r.0 == lo && r.1 == hi => r.2.push((start, end, base)),
                _ => out.ranges.push((lo, hi, vec![(start, end, base)])),
            }
        }
        out
    }

    /// Where thread's access to `addr` goes: its own stack's range, another thread's (`now`:
    /// the sequence number of the accessing thread's last marker), or the traced address.
    #[inline(always)]
    fn map(&self, own: &OwnStack, addr: u64, now: u64) -> u64 {
        if own.contains(addr) {
            return OwnStack::moved(own.base, addr);
        }
        if addr < self.span.0 || addr >= self.span.1 {
            return addr;
        }
        self.foreign(addr, now)
    }

    #[cold]
    fn foreign(&self, addr: u64, now: u64) -> u64 {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        let Some((_, hi, inc)) = i.checked_sub(1).map(|i| &self.ranges[i]) else {
            return addr;
        };
        if addr >= *hi {
            return addr;
        }
        let alive = inc.iter().find(|x| x.0 <= now && now < x.1);
        let next = || inc.iter().find(|x| x.0 > now);
        match alive.or_else(next).or(inc.last()) {
            Some(x) => OwnStack::moved(x.2, addr),
            None => addr,
        }
    }
}

/// What pass 1 finds in one thread's capture.
struct FirstPass {
    /// Its markers.
    marks: Vec<RawMark>,
    /// Per marker, the instructions before it.
    mark_at: Vec<u64>,
    /// Its atomic instructions with their values (for `futexlock`).
    atomics: Vec<Atomic>,
    /// Its atomic instructions the trace does not hold ([`Op::Atomic`]: in wrapped calls,
    /// in its exit path after its `ThreadEnd`), each at the position of the stretch it came
    /// in: part of the histories of the words they update only (`futexlock` reads a lock's
    /// history whole).
    hidden_atomics: Vec<Atomic>,
    /// Its spin-waits and recorded plain stores (for `spinwait`).
    spins: spinwait::Detector,
    /// The kept static instructions it executes, in the order it first does, each with the
    /// accesses of that first execution (merged as written).
    statics: Vec<(u32, Vec<MemAccess>)>,
    /// The section names it uses, in the order it first does.
    sections: Vec<String>,
    /// Kept static instructions it first executed right after code left out of the trace,
    /// with the last instruction of that code (a PLT stub's jump through the global offset
    /// table: what names an unnamed library function's entry, [`Conv::entry_names`]).
    entered_from: Vec<(u32, u32)>,
    /// Kept static instructions it first executed in the function such an entry began, at
    /// its call depth (not in what that function called), with the entry: an unnamed
    /// function's body takes the entry's name.
    within: Vec<(u32, u32)>,
    /// Its critical sections on interposed mutexes, for the condition waits they skipped.
    cond_sections: sync::SectionTracker,
}

/// The atomic instructions of the threads the plugin did not record (`untraced.bin`, if
/// any): each with its thread's number, `first` + its vCPU index (its identity while it
/// lived), for `futexlock`'s histories only.
fn untraced_atomics(dir: &Path, first: u32) -> Result<Vec<(u32, Atomic)>, TraceError> {
    let path = dir.join("untraced.bin");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(TraceError::io(&path, 0, "cannot read", e)),
    };
    let n = raw::UNTRACED_RECORD;
    if bytes.len() % n != 0 {
        return Err(TraceError::at(
            &path,
            None,
            (bytes.len() / n * n) as u64,
            format!(
                "a record cut short: {} bytes is no whole number of {n}-byte records",
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(n)
        .map(|r| {
            let f = |k: usize| u64::from_le_bytes(r[8 * k..8 * k + 8].try_into().expect("8 bytes"));
            (
                first.saturating_add(f(0) as u32),
                Atomic {
                    at: 0,
                    raw: (f(3) >> 8) as u32,
                    addr: f(1),
                    size: f(3) as u8,
                    value: f(2),
                    seq: f(4),
                    plain: false,
                    frame: futexlock::NO_FRAME,
                },
            )
        })
        .collect())
}

/// Pass 1 over thread `t` (raw id `raw_tid`).
fn first_pass(dir: &Path, t: u32, raw_tid: u32, hot: &[Hot]) -> Result<FirstPass, TraceError> {
    let path = dir.join(format!("t{raw_tid}.raw"));
    let file =
        std::fs::File::open(&path).map_err(|e| TraceError::io(&path, 0, "cannot open", e))?;
    let mut rd = raw::RawReader::new(file);
    let mut out = FirstPass {
        marks: Vec::new(),
        mark_at: Vec::new(),
        atomics: Vec::new(),
        hidden_atomics: Vec::new(),
        spins: spinwait::Detector::default(),
        statics: Vec::new(),
        sections: Vec::new(),
        entered_from: Vec::new(),
        within: Vec::new(),
        cond_sections: sync::SectionTracker::default(),
    };
    // Past its `ThreadEnd`: its exit path, of which only atomic instructions are read.
    let mut exiting = false;
    let mut seen = vec![false; hot.len()];
    let mut seen_sections: HashSet<String> = HashSet::new();
    // The first execution being collected: its index in `out.statics`.
    let mut collecting: Option<usize> = None;
    let mut in_dropped = false;
    let mut last_dropped = 0u32;
    // Instructions entered from left-out code whose functions have not returned, with their
    // call depths, innermost last.
    let mut entries: Vec<(u32, usize)> = Vec::new();
    // Instructions so far, the last one's raw index and its last access.
    let mut execs = 0u64;
    let mut last_raw = 0u32;
    let mut last_addr = 0u64;
    let mut last_size = 0u8;
    let mut last_store = false;
    let mut stack = OwnStack::NONE;
    // The main thread's stack (its accesses are not moved, but they are its own business for
    // the spin-wait finder).
    let mut main_stack = OwnStack::NONE;
    // Positions of the calls not yet returned from.
    let mut calls: Vec<u64> = Vec::new();
    while let Some(w) = rd.next_word() {
        if let Word::Mark(Op::Atomic) = w {
            out.hidden_atomics.push(Atomic {
                at: execs,
                raw: (rd.args[2] >> 8) as u32,
                addr: rd.args[0],
                size: rd.args[2] as u8,
                value: rd.args[1],
                seq: rd.seq,
                plain: false,
                frame: futexlock::NO_FRAME,
            });
            continue;
        }
        if exiting {
            continue;
        }
        match w {
            Word::Exec(raw) => {
                execs += 1;
                last_raw = raw;
                // The call stack, for the function an atomic instruction runs in.
                let depth = calls.len();
                let branch = hot.get(raw as usize).map(|h| h.branch);
                match branch {
                    Some(BranchKind::DirectCall | BranchKind::IndirectCall) => {
                        if calls.len() == MAX_CALLS {
                            calls.drain(..MAX_CALLS / 2);
                        }
                        calls.push(execs - 1);
                    }
                    Some(BranchKind::Return) => {
                        calls.pop();
                    }
                    _ => {}
                }
                out.cond_sections
                    .exec(calls.len(), raw, branch == Some(BranchKind::Conditional));
                let Some(h) = hot.get(raw as usize) else {
                    // Pass 2 reports it with its place.
                    collecting = None;
                    continue;
                };
                if !h.keep {
                    in_dropped = true;
                    last_dropped = raw;
                    continue;
                }
                let after_dropped = std::mem::replace(&mut in_dropped, false);
                while entries.last().is_some_and(|&(_, d)| depth < d) {
                    entries.pop();
                }
                if after_dropped {
                    if entries.len() == MAX_CALLS {
                        entries.drain(..MAX_CALLS / 2);
                    }
                    entries.push((raw, depth));
                }
                if let Some(i) = collecting.take() {
                    let (p, m) = &mut out.statics[i];
                    merge_pieces(m, hot[*p as usize].widest as u32);
                }
                if !seen[raw as usize] {
                    seen[raw as usize] = true;
                    if after_dropped {
                        out.entered_from.push((raw, last_dropped));
                    }
                    if let Some(&(e, d)) = entries.last()
                        && d == depth
                    {
                        out.within.push((raw, e));
                    }
                    out.statics.push((raw, Vec::new()));
                    collecting = Some(out.statics.len() - 1);
                }
            }
            Word::Mem { addr, size, store } => {
                last_addr = addr;
                last_size = size;
                last_store = store;
                let atomic = hot.get(last_raw as usize).is_some_and(|h| h.atomic);
                out.spins.access(
                    execs.saturating_sub(1),
                    addr,
                    store,
                    stack.contains(addr) || main_stack.contains(addr),
                    atomic,
                );
                if let Some(i) = collecting
                    && !in_dropped
                {
                    out.statics[i].1.push(MemAccess {
                        addr: stack.map(addr),
                        size,
                        write: store,
                    });
                }
            }
            Word::Value { value, seq } => {
                let at = execs.saturating_sub(1);
                if hot.get(last_raw as usize).is_some_and(|h| h.atomic) {
                    if hot[last_raw as usize].swap {
                        out.spins.atomic_store(at, last_addr, value, seq);
                    }
                    out.atomics.push(Atomic {
                        at,
                        raw: last_raw,
                        addr: last_addr,
                        size: last_size,
                        value,
                        seq,
                        plain: false,
                        frame: calls.last().copied().unwrap_or(futexlock::NO_FRAME),
                    });
                } else {
                    out.spins.recorded(at, last_addr, last_store, value, seq);
                }
                out.spins.sequence(seq);
            }
            Word::Mark(Op::Yield) => out.spins.yielded(rd.seq, execs),
            Word::Mark(op) => {
                out.spins.marker(execs, op, rd.args[0]);
                if op == Op::ThreadStart {
                    stack = OwnStack::new(t, rd.args[1], rd.args[2]);
                }
                if op == Op::MainBegin && rd.args[1] > rd.args[0] {
                    main_stack = OwnStack {
                        lo: rd.args[0],
                        hi: rd.args[1],
                        base: 0,
                    };
                }
                out.cond_sections
                    .marker(out.marks.len() as u32, op, &rd.args);
                out.mark_at.push(execs);
                out.marks.push(RawMark {
                    op,
                    args: [rd.args[0], rd.args[1], rd.args[2]],
                    seq: rd.seq,
                });
                exiting = op == Op::ThreadEnd;
                if matches!(op, Op::SectionBegin | Op::SectionEnd) {
                    let name = raw::unpack_name(&rd.args);
                    if seen_sections.insert(name.clone()) {
                        out.sections.push(name);
                    }
                }
            }
        }
    }
    if let Some(i) = collecting.take() {
        let (p, m) = &mut out.statics[i];
        merge_pieces(m, hot[*p as usize].widest as u32);
    }
    if let Some(e) = rd.error.take() {
        return Err(TraceError::at(&path, Some(t), rd.offset(), e));
    }
    Ok(out)
}

/// Whether `threads.tsv` says the process ended by calling exec.
fn ended_at_exec(threads_tsv: &str) -> bool {
    threads_tsv.lines().any(|l| l == "end\texec")
}

/// The warnings that `threads.tsv`'s summary lines call for: child processes (not traced),
/// an exec (the trace ends there), threads that ran untraced, atomic instructions that ran
/// without the plugin's lock around them (their words' histories may be out of order).
fn capture_warnings(threads_tsv: &str) -> Vec<String> {
    let field = |key: &str| {
        threads_tsv
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
    };
    let count = |key: &str| -> u64 { field(key).and_then(|v| v.parse().ok()).unwrap_or(0) };
    let mut out = Vec::new();
    let forks = count("forks");
    if forks > 0 {
        out.push(format!(
            "the program made {forks} child process(es) (fork): only the original process is traced"
        ));
    }
    if ended_at_exec(threads_tsv) {
        out.push(
            "the program called exec: the trace ends there (the new program is not traced)".into(),
        );
    }
    // `stray THREADS INSTRUCTIONS`: threads that never had a trace thread number.
    let stray: Vec<u64> = field("stray")
        .map(|v| v.split('\t').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    if let [threads, insns] = stray[..]
        && threads > 0
    {
        out.push(format!(
            "{threads} thread(s) ran {insns} instruction(s) untraced: they were not created \
             through pthread_create (a raw clone, a thread a library starts with its own internal \
             calls); their work and synchronization are not in the trace"
        ));
    }
    let impatient = count("impatient");
    if impatient > 0 {
        out.push(format!(
            "{impatient} atomic instruction(s) ran without the tracer's lock around atomics (the \
             host held up another thread inside one for over a second): the values and order \
             recorded for their words may be another instruction's, and a lock or semaphore on \
             such a word may not be recognised and replay as traced; trace again on a less \
             loaded host"
        ));
    }
    out
}

/// Reads thread `t`'s capture again (raw id `raw_tid`) for its plain stores to `addrs` whose
/// values were not recorded (`spinwait::unrecorded_wanted`): rare, and only then.
fn unrecorded_stores(
    dir: &Path,
    t: u32,
    raw_tid: u32,
    hot: &[Hot],
    addrs: &HashSet<u64>,
) -> Result<Vec<spinwait::Unrecorded>, TraceError> {
    let path = dir.join(format!("t{raw_tid}.raw"));
    let file =
        std::fs::File::open(&path).map_err(|e| TraceError::io(&path, 0, "cannot open", e))?;
    let mut rd = raw::RawReader::new(file);
    let mut out = Vec::new();
    let (mut execs, mut last_raw, mut after) = (0u64, 0u32, 0u64);
    // A store to a wanted address, until the next word says whether its value was recorded.
    let mut pending: Option<spinwait::Unrecorded> = None;
    while let Some(w) = rd.next_word() {
        if !matches!(w, Word::Value { .. }) {
            out.extend(pending.take());
        }
        match w {
            Word::Exec(raw) => {
                execs += 1;
                last_raw = raw;
            }
            Word::Mem { addr, store, .. } => {
                let atomic = hot.get(last_raw as usize).is_some_and(|h| h.atomic);
                if store && !atomic && addrs.contains(&addr) {
                    pending = Some(spinwait::Unrecorded {
                        at: execs.saturating_sub(1),
                        addr,
                        after,
                    });
                }
            }
            Word::Value { seq, .. } => {
                pending = None;
                after = after.max(seq);
            }
            // Its exit path follows (`first_pass`).
            Word::Mark(Op::ThreadEnd) => break,
            Word::Mark(_) => after = after.max(rd.seq),
        }
    }
    out.extend(pending);
    if let Some(e) = rd.error.take() {
        return Err(TraceError::at(&path, Some(t), rd.offset(), e));
    }
    Ok(out)
}

/// Reads thread `t`'s capture (raw id `raw_tid`) again for its plain (not atomic) stores to
/// `addrs`, the candidate test-and-set lock words (`taslock.rs`), in program order, each with
/// its value if the plugin recorded it.
fn plain_stores(
    dir: &Path,
    t: u32,
    raw_tid: u32,
    hot: &[Hot],
    addrs: &HashSet<u64>,
) -> Result<Vec<taslock::PlainStore>, TraceError> {
    let path = dir.join(format!("t{raw_tid}.raw"));
    let file =
        std::fs::File::open(&path).map_err(|e| TraceError::io(&path, 0, "cannot open", e))?;
    let mut rd = raw::RawReader::new(file);
    let mut out = Vec::new();
    let (mut execs, mut last_raw) = (0u64, 0u32);
    // The last store found, until the next word says whether its value was recorded.
    let mut open = false;
    while let Some(w) = rd.next_word() {
        match w {
            Word::Exec(raw) => {
                execs += 1;
                last_raw = raw;
                open = false;
            }
            Word::Mem { addr, size, store } => {
                open = false;
                let atomic = hot.get(last_raw as usize).is_some_and(|h| h.atomic);
                if store && !atomic && addrs.contains(&addr) {
                    out.push(taslock::PlainStore {
                        at: execs.saturating_sub(1),
                        raw: last_raw,
                        addr,
                        size,
                        value: None,
                    });
                    open = true;
                }
            }
            Word::Value { value, .. } => {
                if open && let Some(s) = out.last_mut() {
                    s.value = Some(value);
                }
                open = false;
            }
            // Its exit path follows (`first_pass`).
            Word::Mark(Op::ThreadEnd) => break,
            Word::Mark(_) => open = false,
        }
    }
    if let Some(e) = rd.error.take() {
        return Err(TraceError::at(&path, Some(t), rd.offset(), e));
    }
    Ok(out)
}

/// Answers `countdown::find`'s questions: each query's thread's first plain (not atomic) load
/// of its word at or after its position, unless a plain store to it comes first, read from the
/// thread's capture (one read per thread asked about; rarely needed). A thread may be asked
/// about many counts (one per round of a loop): its queries open as the read reaches their
/// first position, by word, and close at their last, so that each access costs one lookup
/// however many are asked.
fn first_plain_loads(
    dir: &Path,
    tids: &[u32],
    hot: &[Hot],
    queries: &[countdown::LoadQuery],
) -> Result<Vec<Option<u64>>, TraceError> {
    use std::cmp::Reverse;
    let mut out = vec![None; queries.len()];
    let mut by_thread: Vec<usize> = (0..queries.len()).collect();
    by_thread.sort_unstable_by_key(|&k| (queries[k].thread, queries[k].from, k));
    for mine in by_thread.chunk_by(|&a, &b| queries[a].thread == queries[b].thread) {
        let t = queries[mine[0]].thread;
        let path = dir.join(format!("t{}.raw", tids[t as usize]));
        let file =
            std::fs::File::open(&path).map_err(|e| TraceError::io(&path, 0, "cannot open", e))?;
        let mut rd = raw::RawReader::new(file);
        let (mut execs, mut last_raw) = (0u64, 0u32);
        // Queries not opened yet (`mine` from `next` on, by first position); open ones by
        // word, and by last position to close them; answered or closed ones are done.
        let mut next = 0;
        let mut open: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut closing = std::collections::BinaryHeap::new();
        let mut done = vec![false; queries.len()];
        let mut left = mine.len();
        while left > 0
            && let Some(w) = rd.next_word()
        {
            match w {
                Word::Exec(raw) => {
                    execs += 1;
                    last_raw = raw;
                    let at = execs - 1;
                    while let Some(&k) = mine.get(next)
                        && queries[k].from <= at
                    {
                        open.entry(queries[k].word).or_default().push(k);
                        closing.push(Reverse((queries[k].to, k)));
                        next += 1;
                    }
                    // Queries whose range has passed are answered: none.
                    while let Some(&Reverse((to, k))) = closing.peek()
                        && to < at
                    {
                        closing.pop();
                        if !done[k] {
                            done[k] = true;
                            left -= 1;
                        }
                    }
                }
                Word::Mem { addr, store, .. }
                    if !open.is_empty()
                        && !hot.get(last_raw as usize).is_some_and(|h| h.atomic) =>
                {
                    // The first plain access in range answers: a load, its position; a store
                    // (what the thread reads next is its own value), none.
                    if let Some(ks) = open.remove(&addr) {
                        for k in ks {
                            if done[k] {
                                continue;
                            }
                            done[k] = true;
                            left -= 1;
                            if !store {
                                out[k] = Some(execs.saturating_sub(1));
                            }
                        }
                    }
                }
                // Its exit path follows (`first_pass`).
                Word::Mark(Op::ThreadEnd) => break,
                _ => {}
            }
        }
        if let Some(e) = rd.error.take() {
            return Err(TraceError::at(&path, Some(t), rd.offset(), e));
        }
    }
    Ok(out)
}

/// What pass 2 reads, shared by the host threads.
struct Ctx<'a> {
    dir: &'a Path,
    tids: &'a [u32],
    hot: &'a [Hot],
    plan: &'a sync::Plan,
    locks: &'a Locks,
    stacks: &'a Stacks,
    sidx: &'a [u32],
    sections: &'a HashMap<String, u32>,
    states: &'a HashMap<u32, String>,
    roi: RoiMode,
    /// Threads no recorded create names: they were started before recording began (a
    /// library's constructor starts its thread pool before `main`). Thread 0 creates them at
    /// its start.
    orphans: &'a [u32],
}

impl Ctx<'_> {
    fn section(&self, name: String) -> u32 {
        *self
            .sections
            .get(&name)
            .expect("pass 1 numbered every section name")
    }
}

/// What pass 2 finds in one thread besides its records.
struct ThreadOut {
    ts: ThreadSummary,
    dropped: u64,
    /// Instructions of futex-lock attempts left out (see `futexlock`).
    lock_spin: u64,
    spins: HashMap<u32, (u64, u64, u32)>,
}

fn put_marker(enc: &mut ThreadEncoder, t: &mut ThreadSummary, m: Marker) -> Result<(), TraceError> {
    enc.marker(m)?;
    t.markers[m.kind_index()] += 1;
    Ok(())
}

/// Before an instruction with accesses `mem`: the waits for a channel read's later writes
/// ([`sync::Plan::deferred`], by the buffer range each write's bytes filled) whose bytes its
/// loads are the thread's first to read.
#[inline]
fn put_deferred(
    enc: &mut ThreadEncoder,
    t: &mut ThreadSummary,
    mem: &[MemAccess],
    deferred: &mut Vec<sync::Deferred>,
) -> Result<(), TraceError> {
    if deferred.is_empty() {
        return Ok(());
    }
    for a in mem.iter().filter(|a| !a.write) {
        let end = a.addr.saturating_add(u64::from(a.size).max(1));
        let mut i = 0;
        while i < deferred.len() {
            if deferred[i].0 < end && a.addr < deferred[i].1 {
                let (_, _, m) = deferred.remove(i);
                put_marker(enc, t, m)?;
            } else {
                i += 1;
            }
        }
    }
    Ok(())
}

#[inline]
fn put_inst(
    ctx: &Ctx,
    enc: &mut ThreadEncoder,
    t: &mut ThreadSummary,
    raw: u32,
    h: Hot,
    mem: &[MemAccess],
    next_pc: Option<u64>,
) -> Result<(), TraceError> {
    let taken = match h.branch {
        BranchKind::None => false,
        BranchKind::Conditional => next_pc.is_some_and(|n| n != h.pc + h.size as u64),
        _ => true,
    };
    let sidx = ctx.sidx[raw as usize];
    debug_assert_ne!(sidx, u32::MAX, "pass 1 declared every kept instruction");
    enc.inst(sidx, taken, mem)?;
    t.instructions += 1;
    for a in mem {
        if a.write {
            t.stores += 1;
        } else {
            t.loads += 1;
        }
    }
    if h.branch.is_branch() {
        t.branches += 1;
        t.taken_branches += taken as u64;
    }
    Ok(())
}

/// Pass 2 over thread `t`: its records into its encoder.
fn second_pass(ctx: &Ctx, t: u32, mut enc: ThreadEncoder) -> Result<ThreadOut, TraceError> {
    let mut out = ThreadOut {
        ts: ThreadSummary::default(),
        dropped: 0,
        lock_spin: 0,
        spins: HashMap::new(),
    };
    let mut ts = ThreadSummary::default();
    let raw_tid = ctx.tids[t as usize];
    let path = ctx.dir.join(format!("t{raw_tid}.raw"));
    let state = ctx
        .states
        .get(&raw_tid)
        .map(String::as_str)
        .unwrap_or("running");
    put_marker(&mut enc, &mut ts, Marker::ThreadStart)?;
    if t == 0 && ctx.roi == RoiMode::All {
        put_marker(&mut enc, &mut ts, Marker::RoiBegin)?;
    }
    if t == 0 {
        for &child in ctx.orphans {
            put_marker(&mut enc, &mut ts, Marker::ThreadCreate { child })?;
        }
    }
    let file =
        std::fs::File::open(&path).map_err(|e| TraceError::io(&path, 0, "cannot open", e))?;
    let mut rd = raw::RawReader::new(file);
    // The instruction waiting for its successor, and the accesses reported for it.
    let mut cur: Option<u32> = None;
    let mut mem: Vec<MemAccess> = Vec::with_capacity(16);
    let mut queued: Vec<Marker> = Vec::new();
    // Waits for a channel read's later writes, by the buffer range their bytes filled.
    let mut deferred: Vec<sync::Deferred> = Vec::new();
    let mut in_dropped = false;
    // The stream itself says the thread ended (its ThreadEnd or MainEnd was recorded).
    let mut ended = false;
    let mut mark_no = 0usize;
    // Spin-wait detection: instructions since the thread's last `pause`.
    let mut since_pause = u64::MAX;
    // Futex-lock edits: the next one, and the end of the one being applied.
    let edits = &ctx.locks.edits[t as usize];
    let raw_index = &ctx.locks.raw_index[t as usize];
    let mut next_edit = 0usize;
    let mut skip_to = 0u64;
    // The edit being applied unwinds (`Edit::unwind`): calls minus returns among the
    // instructions it left out, and how many it left out after its end.
    let mut unwind = false;
    let mut depth = 0i64;
    let mut unwound = 0u64;
    let mut execs = 0u64;
    let mut stack = OwnStack::NONE;
    // The sequence number of the thread's last marker (for accesses to others' stacks).
    let mut now = 0u64;
    loop {
        let Some(w) = rd.next_word() else {
            if let Some(e) = rd.error.take() {
                return Err(TraceError::at(&path, Some(t), rd.offset(), e));
            }
            break;
        };
        match w {
            Word::Exec(raw) => {
                let Some(&h) = ctx.hot.get(raw as usize) else {
                    return Err(TraceError::at(
                        &path,
                        Some(t),
                        rd.offset(),
                        format!("instruction #{raw} is missing from static.bin"),
                    ));
                };
                let pos = execs;
                execs += 1;
                while let Some(e) = edits.get(next_edit)
                    && e.start <= pos
                {
                    // A lock's attempt or a release starts here (or a dependence, which
                    // removes nothing): the instruction before it is complete, then the
                    // markers take the place of what follows.
                    next_edit += 1;
                    if pos >= skip_to {
                        // A new stretch left out (or none, a dependence): the unwinding of
                        // the one before stops here.
                        (unwind, depth, unwound) = (false, 0, 0);
                    }
                    unwind |= e.unwind;
                    skip_to = skip_to.max(e.end);
                    if let Some(p) = cur.take() {
                        let ph = ctx.hot[p as usize];
                        merge_pieces(&mut mem, ph.widest as u32);
                        put_deferred(&mut enc, &mut ts, &mem, &mut deferred)?;
                        put_inst(ctx, &mut enc, &mut ts, p, ph, &mem, Some(h.pc))?;
                    }
                    for m in queued.drain(..) {
                        put_marker(&mut enc, &mut ts, m)?;
                    }
                    for k in e.first..e.first + e.count {
                        for &m in ctx.plan.at(t as usize, k as usize) {
                            put_marker(&mut enc, &mut ts, m)?;
                        }
                    }
                    mem.clear();
                }
                let unwinding = unwind && depth > 0 && unwound < UNWIND_MAX;
                if pos < skip_to || unwinding {
                    // Left out; past the edit's end, up to the return from the function its
                    // left-out instructions entered.
                    unwound += u64::from(pos >= skip_to);
                    match h.branch {
                        BranchKind::DirectCall | BranchKind::IndirectCall => depth += 1,
                        BranchKind::Return => depth -= 1,
                        _ => {}
                    }
                    out.lock_spin += 1;
                    in_dropped = true;
                    continue;
                }
                unwind = false;
                if !h.keep {
                    out.dropped += 1;
                    in_dropped = true;
                    continue;
                }
                in_dropped = false;
                since_pause = since_pause.saturating_add(1);
                if h.pause {
                    let e = out.spins.entry(raw).or_insert((0, 0, 0));
                    e.0 += 1;
                    if since_pause <= SPIN_GAP {
                        e.1 += since_pause;
                    }
                    e.2 |= 1 << t.min(31);
                    since_pause = 0;
                }
                if let Some(p) = cur.take() {
                    let ph = ctx.hot[p as usize];
                    merge_pieces(&mut mem, ph.widest as u32);
                    put_deferred(&mut enc, &mut ts, &mem, &mut deferred)?;
                    put_inst(ctx, &mut enc, &mut ts, p, ph, &mem, Some(h.pc))?;
                    if !queued.is_empty() {
                        for m in queued.drain(..) {
                            put_marker(&mut enc, &mut ts, m)?;
                        }
                    }
                }
                mem.clear();
                cur = Some(raw);
            }
            Word::Mem { addr, size, store } => {
                if !in_dropped && cur.is_some() {
                    mem.push(MemAccess {
                        addr: ctx.stacks.map(&stack, addr, now),
                        size,
                        write: store,
                    });
                }
            }
            Word::Value { .. } => {}
            // A poller's yield is the spin-wait finder's business only (pass 1), an untraced
            // atomic instruction `futexlock`'s.
            Word::Mark(Op::Yield | Op::Atomic) => {}
            Word::Mark(op) => {
                now = rd.seq;
                if op == Op::ThreadStart {
                    stack = OwnStack::new(t, rd.args[1], rd.args[2]);
                }
                let k = raw_index.get(mark_no).copied().unwrap_or(u32::MAX) as usize;
                mark_no += 1;
                if !ctx.plan.at(t as usize, k).is_empty() {
                    // A marker kept in the trace ends any unwinding: what follows it runs.
                    unwind = false;
                }
                ended |= matches!(op, Op::ThreadEnd | Op::MainEnd);
                let named = match op {
                    Op::SectionBegin => Some(Marker::SectionBegin {
                        name: ctx.section(raw::unpack_name(&rd.args)),
                    }),
                    Op::SectionEnd => Some(Marker::SectionEnd {
                        name: ctx.section(raw::unpack_name(&rd.args)),
                    }),
                    _ => None,
                };
                // A channel read: the waits an earlier read left that no load came to (its
                // bytes used some other way) come first; then this read's, by the buffer
                // ranges of its later writes.
                let old = if op == Op::ChannelRead {
                    std::mem::take(&mut deferred)
                } else {
                    Vec::new()
                };
                let olds = old.into_iter().map(|d| d.2);
                for m in olds
                    .chain(named)
                    .chain(ctx.plan.at(t as usize, k).iter().copied())
                {
                    if cur.is_some() {
                        queued.push(m);
                    } else {
                        put_marker(&mut enc, &mut ts, m)?;
                    }
                }
                if op == Op::ChannelRead
                    && let Some((buf, waits)) = ctx.plan.deferred.get(&(t, k as u32))
                {
                    let base = ctx.stacks.map(&stack, *buf, now);
                    deferred.extend(waits.iter().map(|&(lo, hi, m)| (base + lo, base + hi, m)));
                }
                if op == Op::ThreadEnd {
                    // Its exit path follows (`first_pass`): no part of the trace.
                    break;
                }
            }
        }
    }
    if let Some(p) = cur.take() {
        let ph = ctx.hot[p as usize];
        merge_pieces(&mut mem, ph.widest as u32);
        put_deferred(&mut enc, &mut ts, &mem, &mut deferred)?;
        put_inst(ctx, &mut enc, &mut ts, p, ph, &mem, None)?;
    }
    for m in queued.drain(..) {
        put_marker(&mut enc, &mut ts, m)?;
    }
    // Edits after the thread's last instruction (a dependence on its last one).
    for e in &edits[next_edit.min(edits.len())..] {
        for k in e.first..e.first + e.count {
            for &m in ctx.plan.at(t as usize, k as usize) {
                put_marker(&mut enc, &mut ts, m)?;
            }
        }
    }
    let whole = ended
        || matches!(state, "ended" | "crashed" | "exited" | "parked" | "stopped")
        || (t == 0 && state == "exec");
    if !whole {
        ts.cut = true;
    }
    put_marker(&mut enc, &mut ts, Marker::ThreadEnd)?;
    enc.finish()?;
    out.ts = ts;
    Ok(out)
}

/// Host threads for converting `n` streams: `asked`, or the host's cores if 0; at most one
/// per stream.
fn host_threads(n: usize, asked: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    (if asked == 0 { cores } else { asked }).min(n).max(1)
}

/// `f(0)`, …, `f(n − 1)` on `host` threads, each index taken in order by whichever thread is
/// free; the results in index order, or the error of the lowest index that failed.
fn in_parallel<T: Send>(
    n: usize,
    host: usize,
    f: impl Fn(usize) -> Result<T, TraceError> + Sync,
) -> Result<Vec<T>, TraceError> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<T, TraceError>>>> =
        (0..n).map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..host {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = f(i);
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every index ran")
        })
        .collect()
}

/// Merges the pieces QEMU reports for one access (contiguous, same direction) up to `widest`
/// bytes, in place.
pub fn merge_pieces(mem: &mut Vec<MemAccess>, widest: u32) {
    if mem.len() < 2 {
        return;
    }
    let mut k = 0;
    for i in 1..mem.len() {
        let (l, a) = (mem[k], mem[i]);
        if l.write == a.write
            && l.addr.wrapping_add(l.size as u64) == a.addr
            && (l.size as u32 + a.size as u32) <= widest.min(255)
        {
            mem[k].size += a.size;
        } else {
            k += 1;
            mem[k] = a;
        }
    }
    mem.truncate(k + 1);
}

/// Converts the capture in `dir` into the trace `out`.
pub fn convert(dir: &Path, out: &Path, opts: &Options) -> Result<Summary, TraceError> {
    let statics = read_statics(&dir.join("static.bin"))?;
    let mods_path = dir.join("modules.tsv");
    let mut warnings = Vec::new();
    let modules = match std::fs::read_to_string(&mods_path) {
        Ok(t) => parse_modules(&t, &mods_path, &opts.program)
            .map_err(|e| TraceError::at(&mods_path, None, 0, e))?,
        Err(_) => {
            warnings.push(
                "the program never reached main, or the interposition library was not loaded: \
                 no source map and no synchronization markers"
                    .to_string(),
            );
            Vec::new()
        }
    };
    let mut resolver = Resolver::new(modules);
    let mut xd = X86Decoder::default();
    let dec: Vec<Decoded> = statics.iter().map(|s| xd.decode(s.pc, &s.code)).collect();
    let plt = resolver.plt_ranges();
    let dropped: Vec<bool> = statics
        .iter()
        .map(|s| {
            let preload = resolver.module_of(s.pc).is_some_and(|k| {
                resolver.modules()[k]
                    .path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy() == opts.preload_name)
            });
            preload || plt.iter().any(|&(a, b)| a <= s.pc && s.pc < b)
        })
        .collect();
    let hot: Vec<Hot> = statics
        .iter()
        .zip(&dec)
        .zip(&dropped)
        .map(|((s, d), &drop)| Hot {
            pc: s.pc,
            size: d.size,
            branch: d.branch,
            widest: d.widest_mem.min(255) as u8,
            keep: !drop && d.size != 0,
            pause: s.code.starts_with(&[0xf3, 0x90]),
            atomic: raw::atomic_kind(&s.code).is_some(),
            swap: raw::atomic_kind(&s.code) == Some(raw::AtomicKind::Swap),
        })
        .collect();
    let mut block_starts = HashSet::new();
    for (s, d) in statics.iter().zip(&dec) {
        if d.branch.is_branch() {
            block_starts.insert(s.pc + d.size as u64);
            if d.target != 0 {
                block_starts.insert(d.target);
            }
        }
    }

    let tids = raw_threads(dir)?;
    if tids.first() != Some(&0) {
        return Err(TraceError::at(
            dir,
            None,
            0,
            "nothing was recorded: the main thread never reached `main` (or, with --roi all, \
             never executed)",
        ));
    }
    let dense: HashMap<u64, u32> = tids
        .iter()
        .enumerate()
        .map(|(i, &t)| (t as u64, i as u32))
        .collect();
    let threads_tsv = std::fs::read_to_string(dir.join("threads.tsv")).unwrap_or_default();
    let states: HashMap<u32, String> = threads_tsv
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_once('\t')?;
            Some((a.parse().ok()?, b.to_string()))
        })
        .collect();
    warnings.extend(capture_warnings(&threads_tsv));
    let ended_at_exec = ended_at_exec(&threads_tsv);

    let mut params = vec![("roi".to_string(), opts.roi.name().to_string())];
    params.extend(
        opts.args
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("arg{}", i + 1), a.clone())),
    );
    let meta = TraceMeta {
        isa: "x86-64".into(),
        workload: opts.program.display().to_string(),
        params,
        producer: format!("isim trace {}", env!("CARGO_PKG_VERSION")),
    };
    let mut c = Conv {
        w: TraceWriter::create(out, meta)?,
        statics: &statics,
        dec: &dec,
        block_starts: &block_starts,
        resolver: &mut resolver,
        sidx: vec![u32::MAX; statics.len()],
        functions: HashMap::new(),
        files: HashMap::new(),
        sections: HashMap::new(),
        base_dir: opts.base_dir.clone(),
        entry_names: HashMap::new(),
        summary: Summary {
            threads: vec![ThreadSummary::default(); tids.len()],
            ended_at_exec,
            ..Summary::default()
        },
    };
    // Pass 1, every thread on its own host thread: its markers with their sequence numbers
    // (planned below together with the recorded happens-before edges, sync.rs), and the
    // static instructions and section names it meets first, in order.
    let host = host_threads(tids.len(), opts.host_threads);
    let firsts: Vec<FirstPass> = in_parallel(tids.len(), host, |t| {
        first_pass(dir, t as u32, tids[t], &hot)
    })?;
    let mut marks: Vec<Vec<RawMark>> = Vec::with_capacity(tids.len());
    let mut mark_at: Vec<Vec<u64>> = Vec::with_capacity(tids.len());
    let mut atomics: Vec<Vec<Atomic>> = Vec::with_capacity(tids.len());
    // The atomic instructions the trace does not hold: each traced thread's, and those of
    // threads the plugin did not record, numbered after the traced ones by their vCPU.
    let mut hidden: Vec<(u32, Atomic)> = untraced_atomics(dir, tids.len() as u32)?;
    // An unnamed library function entered from a PLT stub is named by the stub's symbol (the
    // first thread's first entry decides, whatever the host threads' timing).
    for f in &firsts {
        for &(raw, from) in &f.entered_from {
            let pc = statics[from as usize].pc;
            if c.entry_names.contains_key(&raw) || !plt.iter().any(|&(a, b)| a <= pc && pc < b) {
                continue;
            }
            if let Some(name) = c.resolver.slot_symbol(pc) {
                c.entry_names.insert(raw, name);
            }
        }
    }
    // Its body, up to its return and not what it calls, in the entry's object (code a
    // symbol names keeps that name: `Conv::declare`).
    for f in &firsts {
        for &(raw, e) in &f.within {
            if c.entry_names.contains_key(&raw) {
                continue;
            }
            let Some(name) = c.entry_names.get(&e) else {
                continue;
            };
            let (pc, epc) = (statics[raw as usize].pc, statics[e as usize].pc);
            if c.resolver.module_of(pc) == c.resolver.module_of(epc) {
                c.entry_names.insert(raw, name.clone());
            }
        }
    }
    // Static indices, function, file and section names are numbered in the order a serial
    // pass over thread 0, then thread 1, … meets them, whatever the host threads' timing.
    for f in &firsts {
        for (raw, mem) in &f.statics {
            if c.sidx[*raw as usize] == u32::MAX {
                c.declare(*raw, mem)?;
            }
        }
        for name in &f.sections {
            c.section(name.clone());
        }
    }
    let mut spins = Vec::with_capacity(tids.len());
    let mut blind = Vec::with_capacity(tids.len());
    let mut stores = Vec::with_capacity(tids.len());
    let mut cond_sections: Vec<sync::CondSections> = Vec::with_capacity(tids.len());
    for f in firsts {
        marks.push(f.marks);
        mark_at.push(f.mark_at);
        atomics.push(f.atomics);
        let t = marks.len() as u32 - 1;
        hidden.extend(f.hidden_atomics.into_iter().map(|a| (t, a)));
        let mut changes = f.spins.changes;
        changes.extend(f.spins.first_looks);
        spins.push(changes);
        blind.push(f.spins.blind);
        stores.push(f.spins.stores);
        cond_sections.push(f.cond_sections.found);
    }
    // A poller whose first look found the flag set by a store made before anybody watched
    // its line: that store, found by reading the captures again (rarely needed).
    let wanted = spinwait::unrecorded_wanted(&spins, &stores);
    if !wanted.is_empty() {
        let found = in_parallel(tids.len(), host, |t| {
            unrecorded_stores(dir, t as u32, tids[t], &hot, &wanted)
        })?;
        spinwait::place_unrecorded(&spins, &mut stores, &found);
    }
    // Test-and-set locks: the words every atomic instruction leaves at one value, and their
    // plain stores, read from the captures again (only if there are such words).
    let tas = taslock::candidates(&atomics);
    let tas_found = if tas.addrs.is_empty() {
        taslock::Found::default()
    } else {
        let plain = in_parallel(tids.len(), host, |t| {
            plain_stores(dir, t as u32, tids[t], &hot, &tas.addrs)
        })?;
        taslock::find(&mut atomics, &plain, &tas)
    };
    let stacks = Stacks::new(&marks);
    // Locks built on futexes become mutex markers, spin-waits waits for the stores that ended
    // them (futexlock.rs, spinwait.rs).
    // (Both code readers below ask the resolver, which caches the objects it reads.)
    let resolver = std::cell::RefCell::new(&mut *c.resolver);
    let mut load_error = None;
    let locks = futexlock::find(
        marks,
        &mark_at,
        &atomics,
        &hidden,
        &spins,
        &blind,
        &stores,
        |raw| raw::atomic_kind(&statics[raw as usize].code),
        |raw| {
            resolver
                .borrow_mut()
                .callees_after(statics[raw as usize].pc)
                .iter()
                .any(|f| futexlock::spinning_slow_path(f))
        },
        |raw| resolver.borrow_mut().tested_after(statics[raw as usize].pc),
        |queries| match first_plain_loads(dir, &tids, &hot, queries) {
            Ok(found) => found,
            Err(e) => {
                load_error = Some(e);
                vec![None; queries.len()]
            }
        },
    );
    if let Some(e) = load_error {
        return Err(e);
    }
    drop((spins, blind, stores));
    drop(atomics);
    let marks = &locks.marks;
    let mut saw_roi_marker = false;
    let plan = {
        let roi = opts.roi;
        let ntids = tids.len() as u32;
        let warnings = &mut warnings;
        let saw = &mut saw_roi_marker;
        let dense = &dense;
        let mut simple = |t: u32, op: Op, a: [u64; 3]| -> Option<Marker> {
            match op {
                Op::MainBegin if roi == RoiMode::Main => Some(Marker::RoiBegin),
                Op::MainEnd if roi == RoiMode::Main => Some(Marker::RoiEnd),
                Op::RoiBegin if roi == RoiMode::Markers => {
                    *saw = true;
                    Some(Marker::RoiBegin)
                }
                Op::RoiEnd if roi == RoiMode::Markers => Some(Marker::RoiEnd),
                Op::Create | Op::Join => match dense.get(&a[0]) {
                    Some(&child) if op == Op::Create => Some(Marker::ThreadCreate { child }),
                    Some(&child) => Some(Marker::ThreadJoin { child }),
                    None => {
                        warnings.push(format!(
                            "thread {t}: {} of thread #{} that left no records; marker dropped",
                            if op == Op::Create { "create" } else { "join" },
                            a[0]
                        ));
                        None
                    }
                },
                Op::Barrier => {
                    let mut n = a[1] as u32;
                    if n == 0 {
                        n = ntids;
                        warnings.push(format!(
                            "thread {t}: barrier {:#x} was not initialised through \
                             pthread_barrier_init while traced; assuming {n} participants",
                            a[0]
                        ));
                    }
                    Some(Marker::Barrier {
                        id: a[0],
                        participants: n.min(ntids),
                        lead: false,
                    })
                }
                _ => None,
            }
        };
        // futexlock.rs renumbered the markers: the sections name them anew.
        for (cs, map) in cond_sections.iter_mut().zip(&locks.raw_index) {
            cs.renumber(map);
        }
        sync::plan_with(marks, &cond_sections, &mut simple)
    };
    // Pass 2, every thread on its own host thread again: its records, encoded into its own
    // chunks (the thread directory says where each went).
    let mut created = vec![false; tids.len()];
    for m in locks.marks.iter().flatten().filter(|m| m.op == Op::Create) {
        if let Some(&c) = dense.get(&m.args[0]) {
            created[c as usize] = true;
        }
    }
    let orphans: Vec<u32> = (1..tids.len() as u32)
        .filter(|&c| !created[c as usize])
        .collect();
    if !orphans.is_empty() {
        warnings.push(format!(
            "thread(s) {orphans:?} started before recording began (before `main`: a library's \
             constructor starts its threads there); replay starts them with the main thread"
        ));
    }
    let ctx = Ctx {
        dir,
        tids: &tids,
        hot: &hot,
        plan: &plan,
        locks: &locks,
        stacks: &stacks,
        sidx: &c.sidx,
        sections: &c.sections,
        states: &states,
        roi: opts.roi,
        orphans: &orphans,
    };
    let encoders = c.w.encoders(tids.len() as u32)?;
    let slots: Vec<std::sync::Mutex<Option<ThreadEncoder<'_>>>> = encoders
        .into_iter()
        .map(|e| std::sync::Mutex::new(Some(e)))
        .collect();
    let outs: Vec<ThreadOut> = in_parallel(tids.len(), host, |t| {
        let enc = slots[t]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("each thread is encoded once");
        second_pass(&ctx, t as u32, enc)
    })?;
    drop(slots);
    let mut spins: HashMap<u32, (u64, u64, u32)> = HashMap::new();
    for (t, o) in outs.into_iter().enumerate() {
        c.summary.dropped_instructions += o.dropped;
        c.summary.futex_locks.replaced_instructions += o.lock_spin;
        for (raw, (n, insts, mask)) in o.spins {
            let e = spins.entry(raw).or_insert((0, 0, 0));
            e.0 += n;
            e.1 += insts;
            e.2 |= mask;
        }
        if o.ts.cut {
            warnings.push(format!(
                "thread {t} was still running when the process ended: its last events (up to \
                 1 MiB of capture) may be missing"
            ));
        }
        c.summary.threads[t] = o.ts;
    }
    let mut spin: Vec<(u32, (u64, u64, u32))> = spins.into_iter().collect();
    spin.sort_unstable_by_key(|&(raw, (n, _, _))| (std::cmp::Reverse(n), raw));
    for (raw, (pauses, insts, threads)) in spin {
        let r = c.resolver.resolve(statics[raw as usize].pc);
        let place = match (r.file, r.function) {
            (Some(f), Some(func)) => format!("{f}:{} ({func})", r.line),
            (Some(f), None) => format!("{f}:{}", r.line),
            (None, Some(func)) => format!("{func} at {:#x}", statics[raw as usize].pc),
            (None, None) => format!("{:#x}", statics[raw as usize].pc),
        };
        let line = SpinLoop {
            place,
            pauses,
            instructions: insts,
            threads: (0..32).filter(|b| threads & (1 << b) != 0).collect(),
        };
        warnings.push(format!(
            "spin-wait loop at {}: {} pause instructions and about {} instructions of \
             spinning in thread(s) {:?}, traced as work (spins that end at another \
             thread's store are replaced by waits; these did not: a spin without a store, or \
             one that began before its address was watched)",
            line.place, line.pauses, line.instructions, line.threads
        ));
        c.summary.spin_loops.push(line);
    }
    c.summary.futex_locks.words = locks.words;
    c.summary.futex_locks.acquisitions = locks.acquisitions;
    c.summary.futex_locks.contended = locks.contended;
    c.summary.futex_locks.spinning = locks.spinning;
    c.summary.futex_locks.rejected = locks.rejected;
    c.summary.futex_locks.test_and_set = tas_found.words;
    c.summary.futex_locks.read_write = locks.read_write;
    c.summary.futex_locks.semaphores = locks.semaphores;
    c.summary.futex_locks.semaphore_takes = locks.semaphore_takes;
    c.summary.futex_locks.semaphore_gives = locks.semaphore_gives;
    // The spin-waits' looking was left out by the same edits as the locks' attempts.
    c.summary.futex_locks.replaced_instructions -= locks.spin_instructions;
    c.summary.spin_waits = SpinWaits {
        waits: locks.spin_waits,
        instructions: locks.spin_instructions,
        unmatched: locks.spin_unmatched,
        reads: locks.spin_reads,
        published: locks.published,
        polls: locks.spin_polls,
        barriers: locks.spin_barrier_words,
        barrier_arrivals: locks.spin_barrier_episodes,
    };
    c.summary.futex_locks.countdown_waits = locks.countdown_waits;
    c.summary.futex_locks.countdown_edges = locks.countdown_edges;
    c.summary.futex_locks.countdown_exits = locks.countdown_exits;
    c.summary.futex_locks.countdown_loads = locks.countdown_loads;
    c.summary.channel_reads = plan.channel_reads;
    c.summary.channel_waits = plan.channel_waits;
    if plan.channel_waits < plan.channel_reads {
        warnings.push(format!(
            "{} of {} read(s) of pipes, eventfds or socket pairs got bytes that no traced write \
             gave (another process wrote them, or a descriptor the tracer did not follow): \
             they replay without waiting",
            plan.channel_reads - plan.channel_waits,
            plan.channel_reads
        ));
    }
    c.summary.skipped_waits = plan.skipped_waits;
    if plan.hand_barriers > 0 {
        c.summary.hand_barriers = plan.hand_barriers;
        c.summary.hand_barrier_conds = plan.hand_barrier_conds;
    }
    for m in c.resolver.modules() {
        let name = m
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let runtime = [
            ("libomp.so", "LLVM's OpenMP runtime (libomp)"),
            ("libiomp5.so", "Intel's OpenMP runtime (libiomp5)"),
            ("libtbb.so", "Intel TBB"),
            ("libtbb12.so", "oneTBB"),
            ("libcilkrts.so", "the Cilk runtime"),
        ]
        .into_iter()
        .find(|(p, _)| name.starts_with(p));
        if let Some((_, what)) = runtime
            && !warnings.iter().any(|w| w.contains(what))
        {
            warnings.push(format!(
                "the program uses {what} ({}), which isim does not recognise: its threads \
                 and its futex waits and wakes are traced, but its own barriers and task \
                 scheduling are not replayed as such, and its spinning is traced as work",
                m.path.display()
            ));
        }
    }
    if opts.roi == RoiMode::Markers && !saw_roi_marker {
        return Err(TraceError::at(
            &opts.program,
            None,
            0,
            "--roi markers, but the program never executed ISIM_ROI_BEGIN() (include/isim.h); \
             trace with --roi main to time all of main",
        ));
    }
    c.summary.static_instructions = c.w.program().insts.len();
    let missing: Vec<String> = c.resolver.unreadable.clone();
    c.w.finish()?;
    warnings.extend(
        missing
            .into_iter()
            .map(|m| format!("no debug information read from {m}")),
    );
    let mut summary = c.summary;
    summary.warnings = warnings;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(addr: u64, size: u8, write: bool) -> MemAccess {
        MemAccess { addr, size, write }
    }

    fn start(lo: u64, hi: u64, seq: u64) -> RawMark {
        RawMark {
            op: Op::ThreadStart,
            args: [1, lo, hi],
            seq,
        }
    }

    fn end(seq: u64) -> RawMark {
        RawMark {
            op: Op::ThreadEnd,
            args: [0; 3],
            seq,
        }
    }

    /// Threads 1 and 2 had the same stack in turn (2 started after 1 ended), thread 3 its own;
    /// the main thread's stays. Each thread's own accesses go to its range; another thread's
    /// go to the incarnation alive at its last marker, else the next to start.
    #[test]
    fn stacks_move_apart_and_others_follow_the_owner() {
        const LO: u64 = 0x7000_0000;
        const HI: u64 = 0x7080_0000;
        let marks = vec![
            vec![start(0x7ff0_0000, 0x7ff8_0000, 0)],
            vec![start(LO, HI, 10), end(20)],
            vec![start(LO, HI, 30), end(40)],
            vec![start(0x9000_0000, 0x9080_0000, 5)],
        ];
        let s = Stacks::new(&marks);
        let own = |t: u32, lo, hi| OwnStack::new(t, lo, hi);
        let a = LO + 0x1234;
        let b1 = STACK_BASE + (1 << 36);
        let b2 = STACK_BASE + (2 << 36);
        let b3 = STACK_BASE + (3 << 36);
        assert_eq!(s.map(&own(1, LO, HI), a, 12), b1 + (a & STACK_LOW));
        assert_eq!(s.map(&own(2, LO, HI), a, 32), b2 + (a & STACK_LOW));
        // Thread 3 reads the shared stack while thread 1, then thread 2, owns it.
        let t3 = own(3, 0x9000_0000, 0x9080_0000);
        assert_eq!(s.map(&t3, a, 15), b1 + (a & STACK_LOW));
        assert_eq!(s.map(&t3, a, 35), b2 + (a & STACK_LOW));
        // Between them: the next to start.
        assert_eq!(s.map(&t3, a, 25), b2 + (a & STACK_LOW));
        assert_eq!(s.map(&t3, 0x9000_0010, 25), b3 + 0x9000_0010);
        // The main thread's stack and other addresses stay.
        let main = own(0, 0x7ff0_0000, 0x7ff8_0000);
        assert_eq!(main.base, 0);
        assert_eq!(s.map(&main, 0x7ff0_0010, 25), 0x7ff0_0010);
        assert_eq!(s.map(&t3, 0x6000_0000, 25), 0x6000_0000);
        assert_eq!(s.map(&main, a, 15), b1 + (a & STACK_LOW));
    }

    #[test]
    fn split_pieces_merge_up_to_the_widest_operand_only() {
        let mut m = vec![
            acc(0x100, 8, false),
            acc(0x108, 8, false),
            acc(0x110, 8, false),
            acc(0x118, 8, false),
        ];
        merge_pieces(&mut m, 32);
        assert_eq!(m, vec![acc(0x100, 32, false)]);
        // Two separate 8-byte operands of an 8-byte instruction stay apart.
        let mut m = vec![acc(0x100, 8, false), acc(0x108, 8, false)];
        merge_pieces(&mut m, 8);
        assert_eq!(m.len(), 2);
        // A read-modify-write: same address, other direction: not merged.
        let mut m = vec![acc(0x100, 8, false), acc(0x100, 8, true)];
        merge_pieces(&mut m, 8);
        assert_eq!(m.len(), 2);
        // A gap is not merged.
        let mut m = vec![acc(0x100, 8, false), acc(0x110, 8, false)];
        merge_pieces(&mut m, 32);
        assert_eq!(m.len(), 2);
    }

    /// Many queries of one thread (a count per round of a loop, asked of a long capture) get
    /// the answers of the definition: per query, a scan for the first plain access of its word
    /// in its range — a load gives its position, a store none — with atomic accesses skipped.
    /// `threads.tsv`'s summary lines: forks, an exec, threads that ran untraced and atomics
    /// that ran without the plugin's lock each get a warning with their count; an ordinary
    /// ending none.
    #[test]
    fn the_capture_summary_warns_of_forks_execs_and_unguarded_atomics() {
        let plain = "0\tflushed\n1\tflushed\nend\texit\nforks\t0\nimpatient\t0\n";
        assert!(capture_warnings(plain).is_empty());
        // A capture from before the count was written.
        assert!(capture_warnings("0\tflushed\nend\texit\nforks\t0\n").is_empty());
        let w = capture_warnings("0\tflushed\nend\texec\nforks\t2\nimpatient\t3\n");
        assert!(ended_at_exec("0\tflushed\nend\texec\nforks\t2\n"));
        assert!(!ended_at_exec("0\tflushed\nend\texit\nforks\t0\n"));
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("the program made 2 child process(es)"));
        assert!(w[1].contains("called exec"));
        assert!(w[2].starts_with("3 atomic instruction(s) ran without the tracer's lock"));
        let w = capture_warnings("0\tflushed\nend\texit\nforks\t0\nstray\t4\t9000\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("4 thread(s) ran 9000 instruction(s) untraced"));
        assert!(capture_warnings("end\texit\nstray\t0\t0\nchannels\t2\n").is_empty());
    }

    #[test]
    fn first_plain_loads_answer_each_query_as_a_scan_would() {
        let hot: Vec<Hot> = (0..4)
            .map(|i| Hot {
                pc: 0x1000 + i,
                size: 1,
                branch: BranchKind::None,
                widest: 8,
                keep: true,
                pause: false,
                atomic: i == 3,
                swap: false,
            })
            .collect();
        // Thread 1's instructions: (static index, accesses as (word, store)).
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let insts: Vec<(u32, Vec<(u64, bool)>)> = (0..20_000)
            .map(|_| {
                let accesses = (0..rnd(3))
                    .map(|_| (0x100 + 8 * rnd(6), rnd(4) == 0))
                    .collect();
                (rnd(4) as u32, accesses)
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut buf = Vec::new();
        let mut enc = raw::RawEncoder::new();
        for (i, acc) in &insts {
            enc.exec(&mut buf, *i);
            for &(a, st) in acc {
                enc.mem(&mut buf, a, 3, st);
            }
        }
        std::fs::write(dir.path().join("t7.raw"), &buf).unwrap();
        let queries: Vec<countdown::LoadQuery> = (0..3_000)
            .map(|_| {
                let from = rnd(20_500);
                countdown::LoadQuery {
                    thread: 1,
                    word: 0x100 + 8 * rnd(7),
                    from,
                    to: if rnd(3) == 0 {
                        u64::MAX
                    } else {
                        from + rnd(40)
                    },
                }
            })
            .collect();
        let got = first_plain_loads(dir.path(), &[3, 7], &hot, &queries).unwrap();
        let scan = |q: &countdown::LoadQuery| {
            for (pos, (i, acc)) in insts.iter().enumerate() {
                let pos = pos as u64;
                if pos < q.from || pos > q.to || *i == 3 {
                    continue;
                }
                if let Some(&(_, st)) = acc.iter().find(|a| a.0 == q.word) {
                    return (!st).then_some(pos);
                }
            }
            None
        };
        let want: Vec<Option<u64>> = queries.iter().map(scan).collect();
        assert_eq!(got, want);
        // Both kinds of answer occur.
        assert!(want.iter().filter(|w| w.is_some()).count() > 500);
        assert!(want.iter().filter(|w| w.is_none()).count() > 100);
    }
}
