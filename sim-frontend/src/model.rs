//! The trace model: what a trace says about a program, independent of how it is stored.
//!
//! A trace is a *program* (the static instruction table plus its source map) and one dynamic
//! stream per thread. Static instructions are referred to by their dense index (`sidx`) in the
//! table, never by hashing a PC on the hot path: the decoder follows control flow through
//! precomputed fall-through and branch-target indices.

use std::fmt;

/// Sentinel static index meaning "no instruction" (e.g. no successor is known).
pub const NO_SIDX: u32 = u32::MAX;

/// The futex addresses of a wait for another thread's count-down made as that thread ends (a
/// Rust `thread::scope` waiting for its threads, which are never joined): the tag in the top 16
/// bits, the dependence's number in bits 24–47 and the counting thread in bits 0–23. Replay
/// treats them as any futex wait; the engine reports each one to observers as the waiter's
/// join of that thread at its count-down (`docs/trace-format.md`).
pub const EXIT_COUNT: u64 = 0x6578 << 48;

/// The futex address of dependence `k`'s wait for `thread`'s count-down at its end
/// ([`EXIT_COUNT`]).
pub fn exit_count_addr(k: u64, thread: u32) -> u64 {
    EXIT_COUNT | (k & 0xFF_FFFF) << 24 | (thread as u64 & 0xFF_FFFF)
}

/// The futex addresses of a channel's stream (a pipe, an eventfd, one direction of a socket
/// pair): a write to it is a futex wake there, and a read that got bytes a wait there for the
/// write that gave them (`docs/tracing.md`). The tag in the top 16 bits, the stream
/// (`isim_trace_protocol::channel_stream`) below.
pub const CHANNEL: u64 = 0x6368 << 48;

/// The futex address of channel stream `stream` ([`CHANNEL`]).
pub fn channel_addr(stream: u64) -> u64 {
    CHANNEL | (stream & 0xFFFF_FFFF_FFFF)
}

/// Whether futex address `addr` is a channel stream's ([`CHANNEL`]).
pub fn is_channel_addr(addr: u64) -> bool {
    addr >> 48 == CHANNEL >> 48
}

/// The counting thread of a futex wait at `addr`, if `addr` is one of [`EXIT_COUNT`]'s.
pub fn exit_count_thread(addr: u64) -> Option<u32> {
    (addr >> 48 == EXIT_COUNT >> 48).then_some((addr & 0xFF_FFFF) as u32)
}

isim_names::indexed_enum! {
    /// The operation class of a static instruction; the timing model keys latencies on it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[repr(u8)]
    pub enum OpClass {
        /// Integer add/sub/logic/shift/move.
        IntAlu = "int-alu",
        /// Integer multiply.
        IntMul = "int-mul",
        /// Integer divide.
        IntDiv = "int-div",
        /// Floating-point add/sub/convert.
        FpAdd = "fp-add",
        /// Floating-point multiply (and fused multiply-add).
        FpMul = "fp-mul",
        /// Floating-point divide and square root.
        FpDiv = "fp-div",
        /// An instruction whose main work is a memory read.
        Load = "load",
        /// An instruction whose main work is a memory write.
        Store = "store",
        /// Conditional branch.
        CondBranch = "cond-branch",
        /// Unconditional direct or indirect jump.
        Jump = "jump",
        /// Call (direct or indirect).
        Call = "call",
        /// Return.
        Return = "return",
        /// No-op and anything not classified otherwise.
        Other = "other",
        /// Serializing instruction (fence, cpuid, system call, locked RMW): drains the window,
        /// except a locked read-modify-write (one with a memory access), which the core times
        /// as a locked instruction (`[core.latency] locked`).
        Serializing = "serializing",
    }
}

impl OpClass {
    /// Decodes the on-disk code.
    pub fn from_code(code: u8) -> Option<OpClass> {
        OpClass::from_index(code as usize)
    }

    /// Whether an instruction of this class that reads memory is a load-op instruction whose
    /// operation takes several cycles after the loaded value (`addsd xmm0, [rax]`, `imul rax,
    /// [rdi]`): the decoder keeps such an operation's class, calling other memory readers
    /// loads (a one-cycle operation's cycle is within the load-to-use latency), and the core
    /// times the operation's latency after the load.
    pub fn operates_after_load(self) -> bool {
        matches!(
            self,
            OpClass::IntMul | OpClass::IntDiv | OpClass::FpAdd | OpClass::FpMul | OpClass::FpDiv
        )
    }
}

/// How a static instruction changes control flow. This, not the op class, decides how the
/// decoder finds the next instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum BranchKind {
    /// Not a branch: the next instruction is at `pc + size`.
    #[default]
    None = 0,
    /// Conditional direct branch: taken goes to the static target, else falls through.
    Conditional = 1,
    /// Unconditional direct jump to the static target.
    DirectJump = 2,
    /// Direct call to the static target.
    DirectCall = 3,
    /// Indirect jump: the target is recorded dynamically.
    IndirectJump = 4,
    /// Indirect call: the target is recorded dynamically.
    IndirectCall = 5,
    /// Return: the target is recorded dynamically.
    Return = 6,
}

impl BranchKind {
    /// Decodes the on-disk code.
    pub fn from_code(code: u8) -> Option<BranchKind> {
        Some(match code {
            0 => BranchKind::None,
            1 => BranchKind::Conditional,
            2 => BranchKind::DirectJump,
            3 => BranchKind::DirectCall,
            4 => BranchKind::IndirectJump,
            5 => BranchKind::IndirectCall,
            6 => BranchKind::Return,
            _ => return None,
        })
    }

    /// True for kinds with a static target (direct branches).
    pub fn is_direct(self) -> bool {
        matches!(
            self,
            BranchKind::Conditional | BranchKind::DirectJump | BranchKind::DirectCall
        )
    }

    /// True for kinds whose target is recorded in the dynamic stream.
    pub fn is_indirect(self) -> bool {
        matches!(
            self,
            BranchKind::IndirectJump | BranchKind::IndirectCall | BranchKind::Return
        )
    }

    /// True for every kind of branch.
    pub fn is_branch(self) -> bool {
        self != BranchKind::None
    }
}

/// The static shape of one memory operand: its size and direction. Addresses are dynamic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemSpec {
    /// Access size in bytes (1..=255).
    pub size: u8,
    /// True for a write.
    pub write: bool,
}

/// One dynamic memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MemAccess {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Size in bytes.
    pub size: u8,
    /// True for a write.
    pub write: bool,
}

/// A source location; indices refer to [`SourceMap::functions`] and [`SourceMap::files`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SrcLoc {
    /// Function index, or [`SrcLoc::UNKNOWN`].
    pub function: u32,
    /// File index, or [`SrcLoc::UNKNOWN`].
    pub file: u32,
    /// Line number (1-based), 0 when unknown.
    pub line: u32,
}

impl SrcLoc {
    /// Marks an unknown function or file.
    pub const UNKNOWN: u32 = u32::MAX;
    /// A location that says nothing.
    pub const NONE: SrcLoc = SrcLoc {
        function: SrcLoc::UNKNOWN,
        file: SrcLoc::UNKNOWN,
        line: 0,
    };
}

/// One entry of the static instruction table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticInst {
    /// Program counter.
    pub pc: u64,
    /// Encoded length in bytes (1..=255); the fall-through successor is at `pc + size`.
    pub size: u8,
    /// Operation class.
    pub class: OpClass,
    /// Control-flow kind.
    pub branch: BranchKind,
    /// Target PC of a direct branch; 0 otherwise.
    pub target: u64,
    /// Source registers (ISA-specific numbering, see docs/trace-format.md).
    pub srcs: Vec<u8>,
    /// How many of `srcs`, the first ones, form the memory operands' addresses: the loads of
    /// a load-op instruction (`add rax, [rbx]`) wait for these only, as the load micro-op of
    /// an x86 core does, and the operation waits for the load and the other sources. `None`
    /// when the trace does not say (ChampSim imports, traces written before it was recorded):
    /// every source gates the loads.
    pub addr_srcs: Option<u8>,
    /// Destination registers.
    pub dsts: Vec<u8>,
    /// Memory operands, in the order their addresses appear in the dynamic stream.
    pub mem: Vec<MemSpec>,
    /// True if this instruction starts a basic block.
    pub block_start: bool,
    /// Source location.
    pub loc: SrcLoc,
}

impl StaticInst {
    /// A non-branch, non-memory instruction with no registers; adjust fields as needed.
    pub fn new(pc: u64, size: u8, class: OpClass) -> StaticInst {
        StaticInst {
            pc,
            size,
            class,
            branch: BranchKind::None,
            target: 0,
            srcs: Vec::new(),
            addr_srcs: None,
            dsts: Vec::new(),
            mem: Vec::new(),
            block_start: false,
            loc: SrcLoc::NONE,
        }
    }
}

/// Function, file and section names referred to by [`SrcLoc`] and [`Marker`]s.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceMap {
    /// Function names.
    pub functions: Vec<String>,
    /// Source file paths.
    pub files: Vec<String>,
    /// Names of user sections ([`Marker::SectionBegin`]).
    pub sections: Vec<String>,
}

/// The static part of a trace: instruction table and source map.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Program {
    /// Static instructions, indexed by `sidx`.
    pub insts: Vec<StaticInst>,
    /// Names for locations and sections.
    pub source: SourceMap,
}

/// Name prefixes of language runtimes' own functions (demangled): the C++ and Rust standard
/// libraries, their ABI helpers, and trait impls of Rust's (`<alloc::boxed::Box<F> as …>`).
const RUNTIME_PREFIXES: [&str; 11] = [
    "std::",
    "core::",
    "alloc::",
    "<std::",
    "<core::",
    "<alloc::",
    "__gnu_cxx::",
    "__cxxabiv1::",
    "__rust",
    "__libc",
    "_start",
];

/// Source path prefixes of code that is not the program's own: system headers (C++ templates
/// instantiated in the program) and the Rust toolchain's library sources (remapped to
/// `/rustc/<commit>/`).
const SYSTEM_SOURCE_PREFIXES: [&str; 4] = [
    "/usr/include/",
    "/usr/lib/",
    "/usr/local/include/",
    "/rustc/",
];
/// Path parts of a local Rust toolchain's or dependency's sources (not the program's own).
const SYSTEM_SOURCE_PARTS: [&str; 2] = ["/.rustup/toolchains/", "/.cargo/registry/"];

/// Whether a function (demangled name) can be the program's own: not a language runtime's
/// ([`RUNTIME_PREFIXES`]).
pub fn is_own_function(name: &str) -> bool {
    !RUNTIME_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Whether a source file can be the program's own: not a system header or a toolchain's
/// library source ([`SYSTEM_SOURCE_PREFIXES`], [`SYSTEM_SOURCE_PARTS`]).
pub fn is_own_file(path: &str) -> bool {
    !SYSTEM_SOURCE_PREFIXES.iter().any(|p| path.starts_with(p))
        && !SYSTEM_SOURCE_PARTS.iter().any(|p| path.contains(p))
}

/// What an instruction's code is to the analyses that name causes in the program (LIME).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRole {
    /// The program's own code ([`Program::own_code`]).
    Own,
    /// A library's code outside synchronization (`malloc`, `memcpy`, libm, a container's
    /// methods): what it does is the user call that led to it.
    Library,
    /// A synchronization primitive or a parallel runtime (libgomp, the pthread calls, C++'s
    /// `std::barrier` and `std::mutex`, Rust's `std::sync` and `std::thread`): how much of it a
    /// thread runs, and which way it returns, depends on the thread's role (the last to arrive,
    /// the team's master) and on the host, not on the work the program gave it.
    Sync,
}

/// Name prefixes of synchronization and parallel-runtime functions (C names, and the objects
/// of runtimes without symbols).
const SYNC_PREFIXES: [&str; 24] = [
    "GOMP_",
    "gomp_",
    "omp_",
    "__kmp",
    "pthread_",
    "__pthread",
    "___pthread",
    "__lll_",
    "__GI___lll",
    "__GI___pthread",
    "__GI_pthread",
    "futex",
    "__futex",
    "sem_",
    "__new_sem",
    "__sched_yield",
    "sched_yield",
    "start_thread",
    "__clone",
    "__cxa_guard",
    "<libgomp",
    "<libomp",
    "<libpthread",
    "rayon_core::",
];

/// Parts of demangled C++ and Rust names of synchronization code: the C++ library's
/// barriers, latches, mutexes, condition variables, atomics' waits, semaphores and threads,
/// Rust's `std::sync` and `std::thread` (and trait impls on their types: `<std::sync::…>`),
/// the futex and thread parking underneath, and crates that are runtimes.
const SYNC_PARTS: [&str; 24] = [
    "std::barrier",
    "std::__barrier",
    "std::__tree_barrier",
    "std::latch",
    "mutex",
    "condition_variable",
    "std::__atomic",
    "std::atomic",
    "std::__detail::__waiter",
    "std::__detail::__platform",
    "std::__detail::__thread",
    "semaphore",
    "std::thread",
    "std::jthread",
    "std::this_thread",
    "lock_guard",
    "unique_lock",
    "scoped_lock",
    "std::sync::",
    "std::thread::",
    "std::sys::",
    "core::sync::atomic",
    "parking_lot",
    "crossbeam",
];

/// Whether a function (demangled name, or `<object>` for code no symbol names) is a
/// synchronization primitive's or a parallel runtime's ([`CodeRole::Sync`]).
pub fn is_sync_function(name: &str) -> bool {
    SYNC_PREFIXES.iter().any(|p| name.starts_with(p))
        || name.starts_with("<rayon_core::")
        || SYNC_PARTS.iter().any(|p| name.contains(p))
}

/// What an instruction's function is to a work-stealing pool's parallel sections (LIME's
/// [`PoolRole`]s): rayon's entry from a thread outside the pool, which injects a job and
/// waits until the pool has run it, and the loop its workers look for jobs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolRole {
    /// Neither.
    None,
    /// A call into the pool from outside it (`Registry::in_worker_cold`, `in_worker_cross`):
    /// the caller waits there while the pool's workers run what it handed them.
    Entry,
    /// A pool worker's wait for jobs (`WorkerThread::wait_until…`): its thread is a worker.
    Worker,
}

/// A pool's entry functions ([`PoolRole::Entry`]): the functions themselves, not their
/// closures (the injected job's closure runs on the worker that takes it).
const POOL_ENTRIES: [&str; 2] = [
    "rayon_core::registry::Registry::in_worker_cold",
    "rayon_core::registry::Registry::in_worker_cross",
];

/// Name prefix of a pool worker's wait for jobs ([`PoolRole::Worker`]).
const POOL_WORKER_PREFIX: &str = "rayon_core::registry::WorkerThread::wait_until";

/// What a function (demangled name) is to a work-stealing pool ([`PoolRole`]). Every such
/// function is also synchronization code ([`is_sync_function`]): LIME's collector looks at
/// pool roles only where a thread runs that.
pub fn pool_role(name: &str) -> PoolRole {
    if POOL_ENTRIES.contains(&name) {
        PoolRole::Entry
    } else if name.starts_with(POOL_WORKER_PREFIX) {
        PoolRole::Worker
    } else {
        PoolRole::None
    }
}

impl Program {
    /// Per static instruction: whether it is the program's own code. It must have a source
    /// file (debug information, which system libraries lack) that is not a system header or a
    /// toolchain's library source ([`SYSTEM_SOURCE_PREFIXES`], [`SYSTEM_SOURCE_PARTS`]: C++
    /// templates instantiated from `/usr/include/c++`, Rust's standard library under
    /// `/rustc/`), in a function whose name is not a language runtime's ([`RUNTIME_PREFIXES`]).
    pub fn own_code(&self) -> Vec<bool> {
        let functions: Vec<bool> = self
            .source
            .functions
            .iter()
            .map(|f| is_own_function(f))
            .collect();
        let files: Vec<bool> = self.source.files.iter().map(|f| is_own_file(f)).collect();
        let marked = |table: &[bool], k: u32| table.get(k as usize).copied().unwrap_or(false);
        self.insts
            .iter()
            .map(|i| marked(&files, i.loc.file) && marked(&functions, i.loc.function))
            .collect()
    }

    /// Per static instruction: its [`CodeRole`]. Code in a synchronization or runtime
    /// function ([`is_sync_function`]) is `Sync`, other code that is not the program's own
    /// ([`Program::own_code`]) is `Library`. A program with no own code at all (a built-in
    /// workload, an imported trace: no debug information) is all `Own`.
    pub fn code_roles(&self) -> Vec<CodeRole> {
        let own = self.own_code();
        if !own.iter().any(|&o| o) {
            return vec![CodeRole::Own; self.insts.len()];
        }
        let sync: Vec<bool> = self
            .source
            .functions
            .iter()
            .map(|f| is_sync_function(f))
            .collect();
        self.insts
            .iter()
            .zip(own)
            .map(|(i, own)| {
                if sync.get(i.loc.function as usize).copied().unwrap_or(false) {
                    CodeRole::Sync
                } else if own {
                    CodeRole::Own
                } else {
                    CodeRole::Library
                }
            })
            .collect()
    }

    /// Per static instruction: its function's [`PoolRole`]; empty if the program has no pool
    /// entry (no work-stealing pool's sections to find).
    pub fn pool_roles(&self) -> Vec<PoolRole> {
        let roles: Vec<PoolRole> = self.source.functions.iter().map(|f| pool_role(f)).collect();
        if !roles.contains(&PoolRole::Entry) {
            return Vec::new();
        }
        self.insts
            .iter()
            .map(|i| {
                roles
                    .get(i.loc.function as usize)
                    .copied()
                    .unwrap_or(PoolRole::None)
            })
            .collect()
    }

    /// Per static instruction: whether its source line is in the program's own files
    /// ([`is_own_file`]), as the own call site of an inlined synchronization primitive's code
    /// is, though its function is the primitive's.
    pub fn own_lines(&self) -> Vec<bool> {
        let files: Vec<bool> = self.source.files.iter().map(|f| is_own_file(f)).collect();
        self.insts
            .iter()
            .map(|i| files.get(i.loc.file as usize).copied().unwrap_or(false))
            .collect()
    }

    /// The function name of an instruction, if known.
    pub fn function_name(&self, sidx: u32) -> Option<&str> {
        let f = self.insts.get(sidx as usize)?.loc.function;
        self.source.functions.get(f as usize).map(String::as_str)
    }

    /// "file:line" of an instruction, if known.
    pub fn file_line(&self, sidx: u32) -> Option<String> {
        let loc = self.insts.get(sidx as usize)?.loc;
        let file = self.source.files.get(loc.file as usize)?;
        Some(format!("{file}:{}", loc.line))
    }
}

/// How replay orders a blocking marker.
///
/// Built-in workloads and imported traces carry no recorded order: their synchronization is
/// replayed by its semantics in simulated time ([`Order::SIM`]: a mutex goes to the first
/// thread to ask, a signal wakes the earliest waiter). A traced real program records, for
/// each blocking operation, the event that let it proceed in the traced run: a
/// [`Marker::Release`] of another thread (or [`Order::NONE`]: nothing had to happen first).
/// Replay then keeps every recorded edge and lets simulated time decide only when: the
/// operation completes at the later of its arrival and the release's simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Order(pub u32);

impl Order {
    /// Replayed by simulated semantics (no recorded order).
    pub const SIM: Order = Order(u32::MAX);
    /// Recorded: nothing had to happen first (an uncontended lock, a wait that timed out).
    pub const NONE: Order = Order(u32::MAX - 1);
    /// Largest release index an order can name.
    pub const MAX_RELEASE: u32 = u32::MAX - 2;

    /// Recorded: proceeds after release `index`.
    pub fn after(index: u32) -> Order {
        debug_assert!(index <= Self::MAX_RELEASE);
        Order(index)
    }

    /// The release this order waits for, if any.
    pub fn release(self) -> Option<u32> {
        (self.0 <= Self::MAX_RELEASE).then_some(self.0)
    }

    /// True if the order was recorded (not [`Order::SIM`]).
    pub fn recorded(self) -> bool {
        self != Self::SIM
    }

    /// The trace format's varint for a recorded order: 0 = none, k + 1 = after release k.
    pub fn encode(self) -> u64 {
        self.release().map_or(0, |k| k as u64 + 1)
    }

    /// The inverse of [`Order::encode`], if in range.
    pub fn decode(v: u64) -> Option<Order> {
        match v {
            0 => Some(Order::NONE),
            v if v - 1 <= Self::MAX_RELEASE as u64 => Some(Order((v - 1) as u32)),
            _ => None,
        }
    }
}

/// The turns of the spin `[locks] spin` times (Rust's std `Mutex`: 100 loads and `pause`s),
/// and what a lock marker's spin means when it only says that the lock spins
/// ([`Spin::DEFAULT`]).
pub const SPIN_TURNS: u32 = 100;

/// How a lock's implementation spins on a held word before it sleeps ([`Marker::MutexLock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Spin {
    /// Turns (a load of the word and a `pause`) of one spin: 0, it does not spin (glibc's
    /// pthread mutex).
    pub turns: u32,
    /// Having seen the word freed and lost the race for it, it spins again (libgomp's mutex,
    /// while the word says nobody sleeps); otherwise it marks the word and sleeps (Rust's std
    /// `Mutex`).
    pub again: bool,
}

impl Spin {
    /// No spin.
    pub const NONE: Spin = Spin {
        turns: 0,
        again: false,
    };
    /// Rust's std `Mutex`, and any futex-word lock seen spinning in the trace
    /// (`futexlock.rs`): [`SPIN_TURNS`] turns, then it marks the word and sleeps.
    pub const DEFAULT: Spin = Spin {
        turns: SPIN_TURNS,
        again: false,
    };

    /// libgomp's mutex (`critical`, `atomic`, `omp_*_lock`): `turns` at a time
    /// (`GOMP_SPINCOUNT`), again after each lost race.
    pub fn gomp(turns: u32) -> Spin {
        Spin {
            turns,
            again: turns > 0,
        }
    }

    /// It spins at all.
    pub fn spins(self) -> bool {
        self.turns > 0
    }
}

/// Synchronization and region markers in a thread's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    /// The thread starts executing (first record of every thread's stream).
    ThreadStart,
    /// The thread ends (last record).
    ThreadEnd,
    /// Region of interest begins: timing starts.
    RoiBegin,
    /// Region of interest ends.
    RoiEnd,
    /// Wait on a barrier; released when `participants` threads have arrived.
    Barrier {
        /// Barrier identity (its address in a real program).
        id: u64,
        /// Number of threads the barrier waits for.
        participants: u32,
        /// This participant's call site names the episode for every participant (the
        /// encountering thread at an OpenMP fork, the broadcasting thread of a barrier built
        /// from a condition variable); otherwise each participant reports its own.
        lead: bool,
    },
    /// Acquire a mutex.
    MutexLock {
        /// Mutex address.
        addr: u64,
        /// Recorded order (the previous holder's release), or [`Order::SIM`].
        order: Order,
        /// How its implementation spins on a held lock word before it sleeps: not at all
        /// (glibc's pthread mutex), [`Spin::DEFAULT`] (Rust's std `Mutex` and other locks seen
        /// spinning in the trace, `futexlock.rs`), or as libgomp's locks do ([`Spin::gomp`],
        /// marked by the interposer). A lock found in traced code (`call` false) spins as
        /// [`Spin::NONE`] or [`Spin::DEFAULT`]: the trace format has no other spin for it.
        spin: Spin,
        /// A call into a library whose code the trace does not hold (the interposed pthread
        /// and OpenMP lock calls): its lock and unlock code costs `[locks] call` cycles each
        /// in replay. A lock found in traced code (`futexlock.rs`) has its instructions in
        /// the stream.
        call: bool,
    },
    /// Acquire a read/write lock (`pthread_rwlock_*`, an interposed call): for reading,
    /// shared with other readers, or for writing, alone. Released by a
    /// [`Marker::MutexUnlock`] of its address.
    RwLock {
        /// Lock address.
        addr: u64,
        /// Recorded order (the previous release of the lock), or [`Order::SIM`].
        order: Order,
        /// For writing (exclusive); else for reading (shared).
        write: bool,
    },
    /// Take one unit of a POSIX semaphore (`sem_wait` and its timed and try forms: an
    /// interposed call), waiting until one is there.
    SemWait {
        /// Semaphore address.
        addr: u64,
        /// Its initial value (units there before any post).
        init: u32,
    },
    /// Give one unit of a POSIX semaphore (`sem_post`), or of a semaphore built on a futex
    /// word in the program's code (libstdc++'s C++20 semaphores).
    SemPost {
        /// Semaphore address.
        addr: u64,
        /// Its initial value, as [`Marker::SemWait`].
        init: u32,
        /// The release calls futex wake whenever it finds the count at 0, sleepers or not
        /// (libstdc++ 12's `release`: it does not count its sleepers): a system call replay
        /// charges when the count is 0 in simulated time. Stored in bit 32 of the marker's
        /// second argument (traces before it: false).
        wakes: bool,
    },
    /// Release a mutex, or a read/write lock however the thread holds it.
    MutexUnlock {
        /// Mutex address.
        addr: u64,
        /// The release is a plain store (glibc's `pthread_spin_unlock`, a hand-written
        /// test-and-set lock's `store(0)`), which the thread does not wait for; else a locked
        /// instruction (glibc's mutex and Rust's `Mutex` swap 0 in), which performs when it is
        /// the oldest and holds the window meanwhile.
        plain: bool,
    },
    /// Wait on a condition variable, releasing and re-acquiring `mutex`. With a recorded
    /// order, the release of the mutex is a [`Marker::Release`] just before this marker.
    CondWait {
        /// Condition variable address.
        cond: u64,
        /// Mutex address.
        mutex: u64,
        /// The signal or broadcast that woke the waiter ([`Order::NONE`]: it timed out or
        /// woke spuriously), or [`Order::SIM`].
        wake: Order,
        /// The release after which the waiter re-acquired the mutex, or [`Order::SIM`].
        relock: Order,
    },
    /// Wake one waiter.
    CondSignal {
        /// Condition variable address.
        cond: u64,
    },
    /// Wake every waiter.
    CondBroadcast {
        /// Condition variable address.
        cond: u64,
    },
    /// Create thread `child` (its stream starts at the creation time).
    ThreadCreate {
        /// Trace thread id of the child.
        child: u32,
    },
    /// Wait for thread `child` to end.
    ThreadJoin {
        /// Trace thread id of the child.
        child: u32,
    },
    /// A user-named section begins; `name` indexes [`SourceMap::sections`].
    SectionBegin {
        /// Section name index.
        name: u32,
    },
    /// A user-named section ends.
    SectionEnd {
        /// Section name index.
        name: u32,
    },
    /// A critical section that found its condition already true, where other executions of
    /// the same code wait on `cond` (a wait the thread skipped: `tracer/sync.rs`): before
    /// it asks for the mutex, the thread waits for the release of the critical section that
    /// made the condition true in the traced run (its unlock; a data dependence, as a
    /// condition wait's wake). Placed just before the section's [`Marker::MutexLock`]; one
    /// whose release is already past in simulated time costs nothing.
    CondReady {
        /// Condition variable address.
        cond: u64,
        /// The release of the section that made the condition true.
        wake: Order,
    },
    /// A futex wait of traced code (always recorded order).
    FutexWait {
        /// Futex address.
        addr: u64,
        /// The wake that ended the wait ([`Order::NONE`]: the value had changed, a timeout).
        wake: Order,
    },
    /// A futex wake of traced code (its [`Marker::Release`] follows).
    FutexWake {
        /// Futex address.
        addr: u64,
    },
    /// A recorded release: an event other threads' recorded orders may wait for (an unlock,
    /// a signal, a wake). `index` is unique in the trace.
    Release {
        /// Release index, dense from 0.
        index: u32,
    },
}

impl Marker {
    /// Number of marker kinds (for per-kind counters).
    pub const KINDS: usize = 21;

    /// Dense kind index, 0..KINDS.
    pub fn kind_index(&self) -> usize {
        match self {
            Marker::ThreadStart => 0,
            Marker::ThreadEnd => 1,
            Marker::RoiBegin => 2,
            Marker::RoiEnd => 3,
            Marker::Barrier { .. } => 4,
            Marker::MutexLock { .. } => 5,
            Marker::MutexUnlock { .. } => 6,
            Marker::CondWait { .. } => 7,
            Marker::CondSignal { .. } => 8,
            Marker::CondBroadcast { .. } => 9,
            Marker::ThreadCreate { .. } => 10,
            Marker::ThreadJoin { .. } => 11,
            Marker::SectionBegin { .. } => 12,
            Marker::SectionEnd { .. } => 13,
            Marker::FutexWait { .. } => 14,
            Marker::FutexWake { .. } => 15,
            Marker::Release { .. } => 16,
            Marker::RwLock { .. } => 17,
            Marker::SemWait { .. } => 18,
            Marker::SemPost { .. } => 19,
            Marker::CondReady { .. } => 20,
        }
    }

    /// Stable names, indexed by [`Marker::kind_index`].
    pub const KIND_NAMES: [&'static str; Marker::KINDS] = [
        "thread-start",
        "thread-end",
        "roi-begin",
        "roi-end",
        "barrier",
        "mutex-lock",
        "mutex-unlock",
        "cond-wait",
        "cond-signal",
        "cond-broadcast",
        "create",
        "join",
        "section-begin",
        "section-end",
        "futex-wait",
        "futex-wake",
        "release",
        "rw-lock",
        "sem-wait",
        "sem-post",
        "cond-ready",
    ];
}

/// One dynamic instruction as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inst {
    /// Static index of the instruction.
    pub sidx: u32,
    /// For a conditional branch, whether it was taken; unconditional branches are `true`.
    pub taken: bool,
    /// Static index of the successor the control flow implies ([`NO_SIDX`] if unknown, in
    /// which case the stream continues elsewhere and the next instruction says where).
    pub next: u32,
    /// First memory access in [`Batch::mem`].
    pub mem_start: u32,
    /// Number of memory accesses.
    pub mem_len: u32,
}

/// One decoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// A dynamic instruction.
    Inst(Inst),
    /// A marker.
    Marker(Marker),
}

/// A reusable buffer of decoded records; memory accesses live in one flat array so that
/// decoding allocates nothing per instruction.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    /// Records in program order.
    pub records: Vec<Record>,
    /// Memory accesses, referenced by [`Inst::mem_start`]/[`Inst::mem_len`].
    pub mem: Vec<MemAccess>,
    /// Where the branches are: the positions in `records` of the instructions whose static
    /// instruction is a branch of any kind, in order, so that a branch predictor visits
    /// them without a pass over every record.
    pub branches: Vec<u32>,
}

impl Batch {
    /// Empties the batch, keeping its capacity.
    pub fn clear(&mut self) {
        self.records.clear();
        self.mem.clear();
        self.branches.clear();
    }

    /// The memory accesses of one instruction.
    #[inline]
    pub fn mem_of(&self, inst: &Inst) -> &[MemAccess] {
        let s = inst.mem_start as usize;
        &self.mem[s..s + inst.mem_len as usize]
    }
}

/// Header metadata of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceMeta {
    /// Instruction set: `x86-64`, or `synthetic` for generated workloads.
    pub isa: String,
    /// Workload name (program path or generator name).
    pub workload: String,
    /// Workload parameters as key/value pairs, in a stable order.
    pub params: Vec<(String, String)>,
    /// What produced the trace (tool and version).
    pub producer: String,
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Marker::KIND_NAMES[self.kind_index()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool's entry is the entry function itself: the injected job's closure, named after
    /// it, runs on the worker that takes the job, and a worker calling it would open a call of
    /// its own. A program without an entry has no pool roles at all.
    #[test]
    fn a_pools_entry_is_the_function_not_its_closures() {
        let entry = "rayon_core::registry::Registry::in_worker_cold";
        assert_eq!(pool_role(entry), PoolRole::Entry);
        assert_eq!(
            pool_role(&format!("{entry}::{{{{closure}}}}")),
            PoolRole::None
        );
        assert_eq!(
            pool_role("rayon_core::registry::WorkerThread::wait_until_cold"),
            PoolRole::Worker
        );
        assert_eq!(pool_role("rayon_core::registry::in_worker"), PoolRole::None);
        // The collector hears pool roles only from synchronization code: both must be.
        assert!(is_sync_function(entry));
        assert!(is_sync_function(
            "rayon_core::registry::WorkerThread::wait_until_cold"
        ));
        let mut p = Program::default();
        p.source.functions = vec!["rayon_core::registry::WorkerThread::wait_until_cold".into()];
        p.insts = vec![StaticInst::new(0x1000, 4, OpClass::IntAlu)];
        p.insts[0].loc.function = 0;
        assert!(
            p.pool_roles().is_empty(),
            "workers without an entry: no pool"
        );
        p.source.functions.push(entry.into());
        assert_eq!(p.pool_roles(), [PoolRole::Worker]);
    }

    /// The program's own code has debug information outside system and toolchain sources and a
    /// function that is not a runtime's: a thread's start is looked for past the rest.
    #[test]
    fn own_code_excludes_runtimes_system_sources_and_code_without_lines() {
        let mut p = Program::default();
        p.source.functions = ["worker", "std::rt::lang_start", "memcpy", "operator()"]
            .map(String::from)
            .to_vec();
        p.source.files = [
            "/home/u/app.c",
            "/rustc/abc/library/std/src/rt.rs",
            "/usr/include/c++/12/bits/std_thread.h",
        ]
        .map(String::from)
        .to_vec();
        let inst = |function, file| {
            let mut s = StaticInst::new(0x1000, 4, OpClass::IntAlu);
            s.loc = SrcLoc {
                function,
                file,
                line: 1,
            };
            s
        };
        p.insts = vec![
            inst(0, 0),               // worker in app.c
            inst(1, 1),               // std's runtime
            inst(2, SrcLoc::UNKNOWN), // a library without debug information
            inst(3, 2),               // a C++ template instantiated from a system header
            inst(3, 0),               // a lambda in app.c
            inst(SrcLoc::UNKNOWN, 0), // no function
        ];
        assert_eq!(p.own_code(), [true, false, false, false, true, false]);
    }
}
