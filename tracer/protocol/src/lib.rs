//! The raw capture protocol between the pieces of `isim trace` (a crate of its own, without
//! dependencies, so that the two shared libraries build in seconds): the magic system calls by which
//! the interposition library and `include/isim.h` talk to the QEMU plugin, and the files the
//! plugin writes for `sim_frontend::tracer::convert` to turn into a trace.
//!
//! **Magic system calls.** Guest code cannot call into the plugin, and plugin API v1 cannot read
//! guest registers or memory, but it sees every system call with its number and arguments. A
//! magic call is `syscall` with number `SYS_BASE + op` and its arguments in the usual registers;
//! QEMU answers `-ENOSYS` (a real kernel does too, so marked programs run unchanged natively).
//!
//! **Files** in the capture directory:
//! * `static.bin`: one entry per distinct instruction address, appended as blocks are
//!   translated: `u64 vaddr, u8 len, len bytes of code`. An entry's position is its raw index.
//! * `t<N>.raw`: thread `N`'s events (see [`Word`]), a byte stream written by [`RawEncoder`]
//!   and read by [`RawReader`], which predict each raw index and address the same way so that
//!   the common event is one byte (see [`word`]).
//! * `modules.tsv`: the objects the guest had loaded when `main` started, written by the
//!   interposition library: `load_bias<TAB>start<TAB>end<TAB>path` per executable segment.
//! * `threads.tsv`: written by the plugin at exit: `N<TAB>state` per thread it saw.
//! * `untraced.bin`: the atomic instructions of threads it does not record
//!   ([`UNTRACED_RECORD`]), if there were any.

/// First magic system call number (far above Linux's, which end below 1,000).
pub const SYS_BASE: i64 = 0x1515_0000;

isim_names::indexed_enum! {
    /// The operations of the magic system calls. The numbers are part of `include/isim.h`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u32)]
    pub enum Op {
        /// `main` is about to run (interposition library). Starts recording the main thread.
        /// `a1..a2` = the main thread's stack, `[a1, a2)`, or 0 if unknown.
        MainBegin = "main-begin",
        /// `main` returned (interposition library). Stops recording.
        MainEnd = "main-end",
        /// A created thread starts (`a1` = its sequence number; `a2..a3` = its stack's address
        /// range, `[a2, a3)`, or 0 if unknown).
        ThreadStart = "thread-start",
        /// The calling thread ends (its start routine returned, or it called `pthread_exit`).
        /// The plugin records no more of its instructions, but goes on recording its exit
        /// path's atomic instructions ([`Op::Atomic`]) up to its `exit` call.
        ThreadEnd = "thread-end",
        /// Create thread `a1` (sequence number); untraced until [`Op::Resume`].
        Create = "create",
        /// Join thread `a1`; untraced until [`Op::Resume`].
        Join = "join",
        /// Barrier wait at `a1` with `a2` participants; untraced until [`Op::Resume`].
        Barrier = "barrier",
        /// Mutex lock at `a1`, `a2` = 1 if the lock's code spins on a held word before it
        /// sleeps (glibc's `pthread_spin_lock`, which never sleeps); untraced until [`Op::Resume`].
        MutexLock = "mutex-lock",
        /// Mutex unlock at `a1`, `a2` = 1 if the release is a plain store (glibc's
        /// `pthread_spin_unlock`), 0 if a locked instruction; untraced until [`Op::Resume`].
        MutexUnlock = "mutex-unlock",
        /// Condition wait on `a1` with mutex `a2`; untraced until [`Op::Resume`].
        CondWait = "cond-wait",
        /// Condition signal on `a1`; untraced until [`Op::Resume`].
        CondSignal = "cond-signal",
        /// Condition broadcast on `a1`; untraced until [`Op::Resume`].
        CondBroadcast = "cond-broadcast",
        /// `ISIM_ROI_BEGIN()`.
        RoiBegin = "roi-begin",
        /// `ISIM_ROI_END()`.
        RoiEnd = "roi-end",
        /// `ISIM_SECTION_BEGIN(name)`: `a1..a6` hold up to 48 bytes of the name.
        SectionBegin = "section-begin",
        /// `ISIM_SECTION_END(name)`.
        SectionEnd = "section-end",
        /// End of an untraced interval (after the real pthread call returned).
        Resume = "resume",
        /// Start of an untraced interval without a marker.
        Suppress = "suppress",
        /// A fatal signal arrived (the interposition library's handler): write out what the
        /// calling thread recorded, since the process dies without running exit handlers.
        Crash = "crash",
        /// The blocking call named by the thread's previous marker returned (its sequence number
        /// is when: a mutex acquired, a condition wait woken with its mutex re-held, a barrier or
        /// join passed). `a1` = the call's return value.
        Done = "done",
        /// A `futex` wait system call made by traced code on address `a1` (the plugin's own
        /// marker; its [`Op::Done`] carries the result: 0 woken, negative errno otherwise).
        FutexWait = "futex-wait",
        /// A `futex` wake system call made by traced code on address `a1`, waking at most `a2`
        /// threads.
        FutexWake = "futex-wake",
        /// An OpenMP team thread starts the body of parallel region `a1` as thread `a2` of a team
        /// of `a3` (the interposer's wrapper around the outlined function).
        OmpBegin = "omp-begin",
        /// The thread finished the body of region `a1` (team of `a2`): it arrives at the region's
        /// implicit barrier.
        OmpEnd = "omp-end",
        /// An OpenMP barrier of region `a1` (team of `a2`): explicit, or the end of a worksharing
        /// construct without `nowait`.
        OmpBarrier = "omp-barrier",
        /// Traced code called `sched_yield` (the plugin's own marker): the thread is polling.
        /// It orders nothing; the converter reads it to tell a poller's looks across its
        /// yields (`sim_frontend::tracer::spinwait`).
        Yield = "yield",
        /// Read (shared) lock of the read/write lock at `a1` (`pthread_rwlock_rdlock` and its
        /// try and timed forms); untraced until [`Op::Resume`]. Its unlock is an
        /// [`Op::MutexUnlock`].
        RwRead = "rw-read",
        /// Write (exclusive) lock of the read/write lock at `a1`; untraced until
        /// [`Op::Resume`].
        RwWrite = "rw-write",
        /// `sem_wait` (and the timed and try forms) on the POSIX semaphore at `a1`, whose
        /// initial value `sem_init` gave as `a2` ([`SEM_UNKNOWN`] if the interposer did not see
        /// it); untraced until [`Op::Resume`].
        SemWait = "sem-wait",
        /// `sem_post` on the semaphore at `a1` (`a2` as [`Op::SemWait`]); untraced until
        /// [`Op::Resume`].
        SemPost = "sem-post",
        /// The program made a pipe, an eventfd or a socket pair (`a1` = 0, 1, 2), whose file
        /// descriptors are `a2` (a pipe's read end, a socket pair's first) and `a3` (a pipe's
        /// write end, a socket pair's second; an eventfd's own again): the plugin watches
        /// their reads and writes ([`Op::ChannelRead`], [`Op::ChannelWrite`]); no marker.
        Channel = "channel",
        /// Traced code read `a2` bytes from stream `a1` of a channel ([`Op::Channel`]; the
        /// plugin's own marker, after the `read`, `readv`, `recvfrom` or `recvmsg` system
        /// call returned them) into its buffer at `a3` (0 for `readv` and `recvmsg`):
        /// [`channel_stream`] names the stream.
        ChannelRead = "channel-read",
        /// Traced code wrote `a2` bytes to stream `a1` (after the `write`, `writev`, `sendto`
        /// or `sendmsg` system call returned; `a3` the sequence number taken as it began).
        ChannelWrite = "channel-write",
        /// An atomic instruction the trace does not hold (the plugin's own marker): one of a
        /// traced thread's untraced stretches (a wrapped call, as `pthread_create` allocating
        /// the new thread's memory; its exit path after [`Op::ThreadEnd`], freeing its malloc
        /// cache), left `a2` in the word at `a1`; `a3` = its size in bytes | its raw index
        /// << 8. The converter reads it into the word's history only (a lock's history is
        /// whole, whoever took it where), never into the trace.
        Atomic = "atomic",
    }
}

/// The size of a record of `untraced.bin` (the atomic instructions of threads the plugin does
/// not record, [`Op::Atomic`]'s for the others): five little-endian `u64`: the thread's vCPU
/// index (its identity while it lives), the word's address, the value left, its size in bytes
/// | its raw index << 8, and its sequence number.
pub const UNTRACED_RECORD: usize = 40;

/// The stream of channel number `channel` (the plugin counts the channels a program makes)
/// that a read or write of one of its file descriptors is part of. A pipe has one stream
/// (written at its write end, read at its read end), an eventfd one, a socket pair two, one
/// each way (`dir` 0: written at the first descriptor, read at the second; 1: the other way).
pub fn channel_stream(channel: u64, dir: u64) -> u64 {
    channel << 1 | (dir & 1)
}

/// How a lock's implementation spins on a held word before it sleeps: the second argument of
/// its [`Op::MutexLock`] marker ([`LockSpin::arg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockSpin {
    /// It does not (glibc's pthread mutex): 0.
    None,
    /// As a lock that spins by default (Rust's std `Mutex`: 100 turns, then it sleeps; glibc's
    /// spin lock, freed by plain stores, until it gets the word): 1.
    Default,
    /// As libgomp's mutex: this many turns at a time (`GOMP_SPINCOUNT`), and again after each
    /// race for the freed word it lost: 2 + turns.
    Gomp(u64),
}

impl LockSpin {
    /// The marker argument.
    pub fn arg(self) -> u64 {
        match self {
            LockSpin::None | LockSpin::Gomp(0) => 0,
            LockSpin::Default => 1,
            LockSpin::Gomp(n) => n.saturating_add(2),
        }
    }

    /// The spin a marker argument says.
    pub fn of_arg(arg: u64) -> LockSpin {
        match arg {
            0 => LockSpin::None,
            1 => LockSpin::Default,
            n => LockSpin::Gomp(n - 2),
        }
    }
}

/// The turns libgomp's locks spin on a held word before they sleep, as its manual says
/// (`GOMP_SPINCOUNT`): the variable's count (an integer, optionally times `k`, `M`, `G` or `T`;
/// `INFINITE` or `INFINITY` for no end: `u64::MAX`), or, when it is unset or unreadable, 0
/// under `OMP_WAIT_POLICY=passive`,
/// 30 billion under `active` and 300,000 when neither is set. (With more threads than CPUs
/// libgomp spins 100 or 1,000 turns instead: the simulated machine, not the host that ran the
/// traced program, would decide that, and it is not modelled.)
pub fn gomp_spin_turns(spincount: Option<&str>, wait_policy: Option<&str>) -> u64 {
    let count = spincount.and_then(|s| {
        let s = s.trim();
        if s.eq_ignore_ascii_case("infinite") || s.eq_ignore_ascii_case("infinity") {
            return Some(u64::MAX);
        }
        let digits = s.trim_end_matches(|c: char| !c.is_ascii_digit());
        let scale: u64 = match &s[digits.len()..] {
            "" => 1,
            "k" | "K" => 1_000,
            "M" => 1_000_000,
            "G" => 1_000_000_000,
            "T" => 1_000_000_000_000,
            _ => return None,
        };
        digits.parse::<u64>().ok().map(|n| n.saturating_mul(scale))
    });
    let policy = wait_policy.map(str::trim);
    match (count, policy) {
        (Some(n), _) => n,
        (None, Some(p)) if p.eq_ignore_ascii_case("passive") => 0,
        (None, Some(p)) if p.eq_ignore_ascii_case("active") => 30_000_000_000,
        (None, _) => 300_000,
    }
}

/// A semaphore's initial value that the interposer did not see (`sem_open`, or a semaphore
/// initialized before the interposer was loaded): the conversion takes the least the traced
/// run's order needs.
pub const SEM_UNKNOWN: u64 = u64::MAX;

impl Op {
    /// The operation of a system call number, if it is a magic one.
    pub fn from_syscall(num: i64) -> Option<Op> {
        let k = num.checked_sub(SYS_BASE)?;
        Op::ALL.get(usize::try_from(k).ok()?).copied()
    }

    /// How many `u64` arguments the raw stream records after this marker.
    pub fn nargs(self) -> usize {
        match self {
            Op::Create | Op::Join => 1,
            Op::MainBegin => 2,
            Op::ThreadStart => 3,
            Op::CondSignal | Op::CondBroadcast | Op::RwRead | Op::RwWrite => 1,
            Op::MutexLock
            | Op::MutexUnlock
            | Op::SemWait
            | Op::SemPost
            | Op::Barrier
            | Op::CondWait
            | Op::OmpEnd
            | Op::OmpBarrier => 2,
            Op::Done | Op::FutexWait => 1,
            Op::FutexWake => 2,
            Op::ChannelRead | Op::ChannelWrite | Op::Atomic => 3,
            Op::OmpBegin => 3,
            Op::SectionBegin | Op::SectionEnd => 6,
            _ => 0,
        }
    }

    /// True if the plugin stops recording the thread after this marker (the real pthread
    /// call that follows is replayed by the simulator, not traced).
    pub fn suppresses(self) -> bool {
        matches!(
            self,
            Op::Create
                | Op::Join
                | Op::Barrier
                | Op::MutexLock
                | Op::MutexUnlock
                | Op::RwRead
                | Op::RwWrite
                | Op::SemWait
                | Op::SemPost
                | Op::CondWait
                | Op::CondSignal
                | Op::CondBroadcast
                | Op::Suppress
                | Op::OmpEnd
                | Op::OmpBarrier
        )
    }
}

/// The encoding of a raw event. Its first byte's low two bits are its kind:
///
/// * **exec** (`0`): an instruction with raw index `i` executes. `z` = zigzag of
///   `i − (previous instruction's index + 1)` (so 0 for the next instruction of a block):
///   bits 2–6 of the first byte hold `z`'s low 5 bits, bit 7 says more follow, then the rest of
///   `z` as LEB128.
/// * **mem** (`1`): a memory access of the last instruction: bits 2–4 = log2 of its size,
///   bit 5 = store, bit 6 = at its predicted address, bit 7 = 0. The prediction is
///   `last + stride` of slot `(4·i + min(k, 3)) mod` [`RAW_SLOTS`] (`i` the instruction's raw
///   index, `k` the access's number within the instruction); without bit 6, LEB128 of the
///   zigzag of `address − prediction` follows. Then the slot's stride becomes
///   `address − last` and its last the address. Slots start at (0, 0).
/// * **mark** (`2`): bits 2–7 = the [`Op`], then [`Op::nargs`] arguments and the marker's
///   sequence number, 8 bytes little-endian each.
/// * **value** (`3`, the byte `3` alone, then two LEB128 numbers): the value in memory just
///   after the last access of an atomic read-modify-write instruction (`lock`-prefixed, or
///   `xchg` with memory), and a sequence number from the markers' counter. The plugin reads it
///   while it holds a lock that every atomic instruction of the process takes, so the values
///   of one address, in sequence order, are the history of that word under atomic updates.
///   Also after a plain access to a line some thread spins on (a line the plugin watches since
///   a `pause` followed a load of it): the value a store left, or the value a load read when
///   it differs from the last one that thread saw there. The converter tells the two apart by
///   the instruction (atomic or not).
pub mod word {
    /// Kind of an exec event.
    pub const EXEC: u8 = 0;
    /// Kind of a memory access.
    pub const MEM: u8 = 1;
    /// Kind of a marker.
    pub const MARK: u8 = 2;
    /// Kind of a value (an atomic instruction's, or a watched plain access's).
    pub const VALUE: u8 = 3;
    /// Mem: the access is at its predicted address.
    pub const HIT: u8 = 1 << 6;
}

/// What kind of atomic read-modify-write of memory the x86-64 instruction `code` is, if any:
/// the plugin records the values of these (see [`word`]), and the converter tells a swap from
/// the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicKind {
    /// `xchg` with a memory operand (atomic without a prefix, with one too).
    Swap,
    /// A `lock cmpxchg` (a compare-and-swap: it changes the word only if it found the value it
    /// expected).
    CompareExchange,
    /// A `lock`-prefixed addition or subtraction (`xadd`, `add`, `sub`, `inc`, `dec`, `adc`,
    /// `sbb`, `neg`): a counter's step, whatever bits it happens to leave.
    Arithmetic,
    /// Another `lock`-prefixed instruction (`or`, `and`, `xor`, `bts`, `cmpxchg16b`, …).
    Locked,
}

/// The [`AtomicKind`] of `code`, skipping its legacy and REX prefixes.
pub fn atomic_kind(code: &[u8]) -> Option<AtomicKind> {
    let mut locked = false;
    for (i, &b) in code.iter().enumerate() {
        match b {
            0xf0 => locked = true,
            0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 | 0xf2 | 0xf3 | 0x40..=0x4f => {}
            0x86 | 0x87 if code.get(i + 1).is_some_and(|m| m >> 6 != 3) => {
                return Some(AtomicKind::Swap);
            }
            0x0f if locked && matches!(code.get(i + 1), Some(0xb0 | 0xb1)) => {
                return Some(AtomicKind::CompareExchange);
            }
            _ if !locked => return None,
            _ => {
                // The operation of a group opcode is its ModRM byte's reg field.
                let reg = code.get(i + 1).map(|m| (m >> 3) & 7);
                let adds = match b {
                    // add, adc, sbb, sub (r/m, r)
                    0x00 | 0x01 | 0x10 | 0x11 | 0x18 | 0x19 | 0x28 | 0x29 => true,
                    // group 1 with an immediate: add, adc, sbb, sub
                    0x80 | 0x81 | 0x83 => matches!(reg, Some(0 | 2 | 3 | 5)),
                    // inc, dec
                    0xfe | 0xff => matches!(reg, Some(0 | 1)),
                    // neg
                    0xf6 | 0xf7 => reg == Some(3),
                    // xadd
                    0x0f => matches!(code.get(i + 1), Some(0xc0 | 0xc1)),
                    _ => false,
                };
                return Some(if adds {
                    AtomicKind::Arithmetic
                } else {
                    AtomicKind::Locked
                });
            }
        }
    }
    None
}

/// Address-predictor slots of a raw stream.
pub const RAW_SLOTS: usize = 4096;

/// What the writer and the reader of one raw stream both track to predict the next event.
#[derive(Debug, Clone, Default)]
pub struct RawState {
    /// The raw index the next exec is expected to have.
    next: u32,
    /// The last exec's raw index.
    cur: u32,
    /// Memory accesses of the last exec so far.
    mem_no: u32,
    /// (last address, stride) per slot; allocated at the first access.
    slots: Vec<(u64, u64)>,
}

impl RawState {
    /// A stream's initial state.
    pub const fn new() -> Self {
        RawState {
            next: 0,
            cur: 0,
            mem_no: 0,
            slots: Vec::new(),
        }
    }

    #[inline(always)]
    fn slot(&mut self) -> &mut (u64, u64) {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0); RAW_SLOTS];
        }
        let k = (self.cur as usize)
            .wrapping_mul(4)
            .wrapping_add(self.mem_no.min(3) as usize)
            & (RAW_SLOTS - 1);
        self.mem_no += 1;
        &mut self.slots[k]
    }
}

/// Appends `v` as LEB128.
#[inline(always)]
fn put_leb(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Writes one thread's raw stream (in the plugin): see [`word`].
#[derive(Debug, Clone, Default)]
pub struct RawEncoder {
    st: RawState,
}

impl RawEncoder {
    /// An encoder at the start of a stream.
    pub const fn new() -> Self {
        RawEncoder {
            st: RawState::new(),
        }
    }

    /// Instruction `idx` executes.
    #[inline(always)]
    pub fn exec(&mut self, buf: &mut Vec<u8>, idx: u32) {
        let d = idx.wrapping_sub(self.st.next) as i32;
        let z = ((d << 1) ^ (d >> 31)) as u32 as u64;
        if z < 32 {
            buf.push((z as u8) << 2 | word::EXEC);
        } else {
            buf.push((z as u8 & 31) << 2 | 0x80 | word::EXEC);
            put_leb(buf, z >> 5);
        }
        self.st.cur = idx;
        self.st.next = idx.wrapping_add(1);
        self.st.mem_no = 0;
    }

    /// The last instruction accesses `1 << size_shift` bytes at `addr`.
    #[inline(always)]
    pub fn mem(&mut self, buf: &mut Vec<u8>, addr: u64, size_shift: u32, store: bool) {
        let head = ((size_shift & 7) as u8) << 2 | (store as u8) << 5 | word::MEM;
        let slot = self.st.slot();
        let predicted = slot.0.wrapping_add(slot.1);
        if addr == predicted {
            buf.push(head | word::HIT);
        } else {
            buf.push(head);
            let d = addr.wrapping_sub(predicted) as i64;
            put_leb(buf, ((d << 1) ^ (d >> 63)) as u64);
            slot.1 = addr.wrapping_sub(slot.0);
        }
        slot.0 = addr;
    }

    /// The value at the last access after it (an atomic instruction's, or a watched plain
    /// access's), and its sequence number.
    pub fn value(&mut self, buf: &mut Vec<u8>, value: u64, seq: u64) {
        buf.push(word::VALUE);
        put_leb(buf, value);
        put_leb(buf, seq);
    }

    /// A marker with its arguments (the first [`Op::nargs`]) and sequence number.
    pub fn mark(&mut self, buf: &mut Vec<u8>, op: Op, args: &[u64], seq: u64) {
        buf.push((op as u8) << 2 | word::MARK);
        for &a in &args[..op.nargs()] {
            buf.extend_from_slice(&a.to_le_bytes());
        }
        buf.extend_from_slice(&seq.to_le_bytes());
    }
}

/// One decoded raw event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// An instruction (raw static index) executes.
    Exec(u32),
    /// A memory access of the preceding instruction.
    Mem {
        /// Guest virtual address.
        addr: u64,
        /// Size in bytes.
        size: u8,
        /// True for a store.
        store: bool,
    },
    /// A magic system call; its arguments are in [`RawReader::args`] until the next one, and
    /// its sequence number in [`RawReader::seq`]: the plugin numbers the markers of all threads
    /// from one atomic counter at the moment each is recorded, so if one marker's event
    /// happened before another's in the traced run, its number is smaller. The converter
    /// derives replay's happens-before edges from these numbers.
    Mark(Op),
    /// The value in memory after the preceding access (of an atomic instruction, or a plain
    /// access to a watched line: see [`word`]), with a sequence number from the markers'
    /// counter.
    Value {
        /// The value (the access's size, zero-extended).
        value: u64,
        /// Its sequence number.
        seq: u64,
    },
}

/// Decodes the words of a raw file held in memory (see [`RawReader`]), with each marker's
/// arguments.
pub fn decode(bytes: &[u8], mut f: impl FnMut(Word, [u64; 6])) -> Result<(), String> {
    let mut r = RawReader::new(bytes);
    while let Some(w) = r.next_word() {
        f(w, r.args);
    }
    r.error.map_or(Ok(()), Err)
}

/// Streams the events of a raw file from any reader, in 4 MiB reads. A cut final event (the
/// process was killed while writing) ends the stream.
pub struct RawReader<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// File offset of `buf[0]`.
    base: u64,
    st: RawState,
    /// Arguments of the last marker read.
    pub args: [u64; 6],
    /// Sequence number of the last marker read (see [`Word::Mark`]).
    pub seq: u64,
    /// Why the stream stopped early, if it did (an I/O error or an event no writer makes).
    pub error: Option<String>,
}

/// The longest exec, mem or value event: a kind byte and two 64-bit LEB128 numbers.
const MAX_EVENT: usize = 21;

impl<R: std::io::Read> RawReader<R> {
    /// A reader over `inner`.
    pub fn new(inner: R) -> Self {
        RawReader {
            inner,
            buf: vec![0; 4 << 20],
            pos: 0,
            len: 0,
            eof: false,
            base: 0,
            st: RawState::new(),
            args: [0; 6],
            seq: 0,
            error: None,
        }
    }

    /// File offset of the next event (for error messages).
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn refill(&mut self, n: usize) -> std::io::Result<bool> {
        self.buf.copy_within(self.pos..self.len, 0);
        self.base += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        while !self.eof && self.len < n {
            let k = self.inner.read(&mut self.buf[self.len..])?;
            if k == 0 {
                self.eof = true;
            }
            self.len += k;
        }
        Ok(self.len >= n)
    }

    #[inline(always)]
    fn u64_at(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.buf[i..i + 8].try_into().unwrap())
    }

    /// Makes at least `n` bytes available at `pos` unless the input ends first (or fails: then
    /// in [`RawReader::error`]).
    #[inline(always)]
    fn have(&mut self, n: usize) -> bool {
        self.len - self.pos >= n || self.have_slow(n)
    }

    #[cold]
    #[inline(never)]
    fn have_slow(&mut self, n: usize) -> bool {
        match self.refill(n) {
            Ok(b) => b,
            Err(e) => {
                self.error = Some(e.to_string());
                false
            }
        }
    }

    /// LEB128 at `*p`, not reading past `len`; `None` if cut (or longer than 64 bits).
    #[inline(always)]
    fn leb(&self, p: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = *self.buf[..self.len].get(*p)?;
            *p += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
    }

    /// The next event; `None` at the end, at a cut final event, or at an error (then in
    /// [`RawReader::error`]).
    #[inline(always)]
    pub fn next_word(&mut self) -> Option<Word> {
        // Near the end of the input fewer bytes remain: `leb` stops at a cut event.
        if !self.have(MAX_EVENT) && (self.error.is_some() || self.pos == self.len) {
            return None;
        }
        let b = self.buf[self.pos];
        let mut p = self.pos + 1;
        match b & 3 {
            word::EXEC => {
                let mut z = ((b >> 2) & 31) as u64;
                if b & 0x80 != 0 {
                    z |= self.leb(&mut p)? << 5;
                }
                let d = ((z >> 1) as i64 ^ -((z & 1) as i64)) as u32;
                let idx = self.st.next.wrapping_add(d);
                self.pos = p;
                self.st.cur = idx;
                self.st.next = idx.wrapping_add(1);
                self.st.mem_no = 0;
                Some(Word::Exec(idx))
            }
            word::MEM => {
                if b & 0x80 != 0 {
                    return self.bad(b);
                }
                let hit = b & word::HIT != 0;
                let d = if hit { 0 } else { self.leb(&mut p)? };
                self.pos = p;
                let slot = self.st.slot();
                let predicted = slot.0.wrapping_add(slot.1);
                let addr = if hit {
                    predicted
                } else {
                    let a = predicted.wrapping_add(((d >> 1) as i64 ^ -((d & 1) as i64)) as u64);
                    slot.1 = a.wrapping_sub(slot.0);
                    a
                };
                slot.0 = addr;
                Some(Word::Mem {
                    addr,
                    size: 1u8 << ((b >> 2) & 7),
                    store: (b >> 5) & 1 == 1,
                })
            }
            word::VALUE if b == word::VALUE => {
                let value = self.leb(&mut p)?;
                let seq = self.leb(&mut p)?;
                self.pos = p;
                Some(Word::Value { value, seq })
            }
            _ => self.mark(b),
        }
    }

    #[cold]
    fn bad(&mut self, b: u8) -> Option<Word> {
        self.error = Some(format!("bad event byte {b:#04x} at byte {}", self.offset()));
        None
    }

    #[cold]
    fn mark(&mut self, b: u8) -> Option<Word> {
        let op = (b & 3 == word::MARK)
            .then(|| Op::ALL.get((b >> 2) as usize).copied())
            .flatten();
        let Some(op) = op else {
            return self.bad(b);
        };
        let k = op.nargs();
        if !self.have(1 + 8 * (k + 1)) {
            return None;
        }
        self.args = [0; 6];
        for j in 0..k {
            self.args[j] = self.u64_at(self.pos + 1 + 8 * j);
        }
        self.seq = self.u64_at(self.pos + 1 + 8 * k);
        self.pos += 1 + 8 * (k + 1);
        Some(Word::Mark(op))
    }
}

/// Packs a section name (up to 48 bytes; longer names are cut) into six arguments.
pub fn pack_name(name: &[u8]) -> [u64; 6] {
    let mut a = [0u64; 6];
    for (i, &b) in name.iter().take(48).enumerate() {
        a[i / 8] |= (b as u64) << (8 * (i % 8));
    }
    a
}

/// Unpacks a section name packed by [`pack_name`] (or by `include/isim.h`).
pub fn unpack_name(a: &[u64; 6]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of libgomp's manual (`GOMP_SPINCOUNT`, `OMP_WAIT_POLICY`).
    #[test]
    fn libgomp_spins_as_its_manual_says() {
        assert_eq!(gomp_spin_turns(None, None), 300_000);
        assert_eq!(gomp_spin_turns(None, Some("PASSIVE")), 0);
        assert_eq!(gomp_spin_turns(None, Some("active")), 30_000_000_000);
        assert_eq!(gomp_spin_turns(Some("2500"), None), 2_500);
        assert_eq!(gomp_spin_turns(Some("10k"), Some("passive")), 10_000);
        assert_eq!(gomp_spin_turns(Some("3M"), None), 3_000_000);
        assert_eq!(gomp_spin_turns(Some("1G"), None), 1_000_000_000);
        assert_eq!(gomp_spin_turns(Some("2T"), None), 2_000_000_000_000);
        assert_eq!(gomp_spin_turns(Some("INFINITE"), None), u64::MAX);
        assert_eq!(gomp_spin_turns(Some("infinity"), None), u64::MAX);
        assert_eq!(gomp_spin_turns(Some("0"), None), 0);
        // Unreadable: as if unset.
        assert_eq!(gomp_spin_turns(Some("lots"), None), 300_000);
        assert_eq!(gomp_spin_turns(Some("5x"), Some("active")), 30_000_000_000);
    }

    /// A lock marker's spin argument: none, the default, or libgomp's count of turns.
    #[test]
    fn spin_arguments_round_trip() {
        for s in [
            LockSpin::None,
            LockSpin::Default,
            LockSpin::Gomp(1),
            LockSpin::Gomp(300_000),
            LockSpin::Gomp(u64::MAX - 2),
        ] {
            assert_eq!(LockSpin::of_arg(s.arg()), s, "{s:?}");
        }
        // What futexlock.rs and the interposer wrote before turns were counted.
        assert_eq!(LockSpin::of_arg(0), LockSpin::None);
        assert_eq!(LockSpin::of_arg(1), LockSpin::Default);
        // libgomp told not to spin (`OMP_WAIT_POLICY=passive`) does not.
        assert_eq!(LockSpin::Gomp(0).arg(), 0);
    }

    /// The operation numbers are the variants' order; `include/isim.h` hard-codes four of
    /// them, and a trace's marker words the rest.
    #[test]
    fn operation_numbers_are_those_isim_h_uses() {
        let h = include_str!("../../../include/isim.h");
        for (op, call) in [
            (Op::RoiBegin, "ISIM_ROI_BEGIN() isim_magic_(12,"),
            (Op::RoiEnd, "ISIM_ROI_END() isim_magic_(13,"),
            (
                Op::SectionBegin,
                "ISIM_SECTION_BEGIN(name) isim_section_(14,",
            ),
            (Op::SectionEnd, "ISIM_SECTION_END(name) isim_section_(15,"),
        ] {
            assert!(h.contains(call), "isim.h lacks `{call}`");
            let n: u32 = call.split(['(', ',']).nth(2).unwrap().parse().unwrap();
            assert_eq!(op as u32, n);
            assert_eq!(Op::from_syscall(SYS_BASE + n as i64), Some(op));
        }
        assert_eq!(Op::MainBegin as u32, 0);
        assert_eq!(Op::OmpBarrier as u32, 24);
        assert_eq!(Op::Yield as u32, 25);
        assert_eq!(Op::RwRead as u32, 26);
        assert_eq!(Op::RwWrite as u32, 27);
        assert_eq!(Op::SemWait as u32, 28);
        assert_eq!(Op::SemPost as u32, 29);
        assert_eq!(Op::Channel as u32, 30);
        assert_eq!(Op::ChannelRead as u32, 31);
        assert_eq!(Op::ChannelWrite as u32, 32);
        assert_eq!(Op::Atomic as u32, 33);
        assert_eq!(Op::from_syscall(SYS_BASE + 34), None);
        assert_eq!(Op::from_syscall(SYS_BASE - 1), None);
    }

    #[test]
    fn atomic_instructions_are_told_by_prefix_and_opcode() {
        // lock cmpxchg [rdi], ecx; lock xadd [rdi], rax; xchg [rdi], eax; xchg eax, ecx;
        // mov [rdi], eax; lock-prefixed xchg; a cut prefix run.
        assert_eq!(
            atomic_kind(&[0xf0, 0x0f, 0xb1, 0x0f]),
            Some(AtomicKind::CompareExchange)
        );
        assert_eq!(
            atomic_kind(&[0xf0, 0x48, 0x0f, 0xc1, 0x07]),
            Some(AtomicKind::Arithmetic)
        );
        // lock add/sub/inc/dec/neg are a counter's steps; lock or, and, bts are not.
        for code in [
            &[0xf0, 0x48, 0x83, 0x07, 0x01][..], // lock add qword [rdi], 1
            &[0xf0, 0x48, 0x83, 0x2f, 0x01],     // lock sub qword [rdi], 1
            &[0xf0, 0x29, 0x07],                 // lock sub [rdi], eax
            &[0xf0, 0x48, 0xff, 0x0f],           // lock dec qword [rdi]
            &[0xf0, 0xff, 0x07],                 // lock inc dword [rdi]
            &[0xf0, 0xf7, 0x1f],                 // lock neg dword [rdi]
        ] {
            assert_eq!(atomic_kind(code), Some(AtomicKind::Arithmetic), "{code:x?}");
        }
        for code in [
            &[0xf0, 0x48, 0x83, 0x0f, 0x01][..], // lock or qword [rdi], 1
            &[0xf0, 0x09, 0x07],                 // lock or [rdi], eax
            &[0xf0, 0x83, 0x27, 0xfe],           // lock and dword [rdi], -2
            &[0xf0, 0x0f, 0xab, 0x07],           // lock bts [rdi], eax
            &[0xf0, 0xf7, 0x17],                 // lock not dword [rdi]
        ] {
            assert_eq!(atomic_kind(code), Some(AtomicKind::Locked), "{code:x?}");
        }
        assert_eq!(atomic_kind(&[0x87, 0x07]), Some(AtomicKind::Swap));
        assert_eq!(atomic_kind(&[0x87, 0xc8]), None);
        assert_eq!(atomic_kind(&[0x89, 0x07]), None);
        assert_eq!(atomic_kind(&[0xf0, 0x87, 0x07]), Some(AtomicKind::Swap));
        assert_eq!(atomic_kind(&[0x66, 0xf0]), None);
    }

    #[test]
    fn names_round_trip_and_long_names_are_cut_at_48_bytes() {
        assert_eq!(unpack_name(&pack_name(b"solve")), "solve");
        let long = "x".repeat(60);
        assert_eq!(unpack_name(&pack_name(long.as_bytes())).len(), 48);
    }

    /// Events written by the encoder read back the same, with each marker's arguments and
    /// sequence number; a stream cut anywhere keeps exactly the events before the cut.
    #[test]
    fn raw_events_round_trip_and_a_cut_tail_ends_the_stream() {
        let mut e = RawEncoder::new();
        let mut b = Vec::new();
        let mut want = Vec::new();
        let mut ends = Vec::new();
        let bar = [0x20, 4, 0, 0, 0, 0];
        // A loop of 3 instructions (7, 8, 9) with a strided load, then a random store, a
        // jump far back and forth, a marker, and accesses of every size.
        let mut x = 0x1234_5678_9abc_def1u64;
        for i in 0..200u64 {
            for idx in [7u32, 8, 9] {
                e.exec(&mut b, idx);
                want.push((Word::Exec(idx), None));
                ends.push(b.len());
                if idx == 8 {
                    e.mem(&mut b, 0x10_0000 + 8 * i, 3, false);
                    want.push((
                        Word::Mem {
                            addr: 0x10_0000 + 8 * i,
                            size: 8,
                            store: false,
                        },
                        None,
                    ));
                    ends.push(b.len());
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    e.mem(&mut b, x, (i % 5) as u32, true);
                    want.push((
                        Word::Mem {
                            addr: x,
                            size: 1 << (i % 5),
                            store: true,
                        },
                        None,
                    ));
                    ends.push(b.len());
                    if i % 7 == 0 {
                        // An atomic's value: small, and the largest a word can hold.
                        let v = if i % 14 == 0 { u64::MAX } else { i };
                        e.value(&mut b, v, 1 << 40 | i);
                        want.push((
                            Word::Value {
                                value: v,
                                seq: 1 << 40 | i,
                            },
                            None,
                        ));
                        ends.push(b.len());
                    }
                }
            }
            if i % 50 == 0 {
                e.exec(&mut b, u32::MAX - i as u32);
                want.push((Word::Exec(u32::MAX - i as u32), None));
                ends.push(b.len());
                e.mark(&mut b, Op::Barrier, &bar, 77 + i);
                want.push((Word::Mark(Op::Barrier), Some(77 + i)));
                ends.push(b.len());
            }
        }
        let read = |bytes: &[u8]| {
            let mut r = RawReader::new(bytes);
            let mut got = Vec::new();
            while let Some(w) = r.next_word() {
                let seq = matches!(w, Word::Mark(_)).then_some(r.seq);
                if seq.is_some() {
                    assert_eq!(r.args, bar);
                }
                got.push((w, seq));
            }
            assert!(r.error.is_none(), "{:?}", r.error);
            got
        };
        assert_eq!(read(&b), want);
        // The common events are one byte each: 3 execs and a strided load per iteration,
        // the random store and the values apart.
        assert!(
            b.len() < 200 * 4 + 200 * 11 + 4 * 80 + 29 * 21,
            "{} bytes",
            b.len()
        );
        for cut in 0..b.len() {
            let n = ends.iter().take_while(|&&e| e <= cut).count();
            assert_eq!(read(&b[..cut]), want[..n], "cut at {cut}");
        }
        // Kind 3 is a value event only as the byte 3 itself.
        assert!(decode(&[7], |_, _| {}).is_err());
        assert_eq!(Op::from_syscall(SYS_BASE + 6), Some(Op::Barrier));
        assert_eq!(Op::from_syscall(60), None);
    }
}
