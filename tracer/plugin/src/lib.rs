//! The QEMU user-mode plugin behind `isim trace`: loaded by `qemu-x86_64 -plugin`, it records
//! every executed guest instruction of the traced threads with its memory accesses, plus the
//! magic system calls of the interposition library and `include/isim.h`, into the raw files of
//! `isim_trace_protocol`. `isim trace` turns them into a trace v1 afterwards.
//!
//! It speaks plugin API v1 (QEMU 7.2, Debian bookworm's `qemu-user`) through the dozen C entry
//! points it needs, declared here by hand: they are the whole interface, and a binding crate
//! would add a build step and a licence to the project for them.
//!
//! **Threads.** QEMU user mode runs each guest thread on its own host thread and calls the
//! callbacks on it with the thread's vCPU index, so per-thread state is an array entry per
//! vCPU: no lock, no thread-local lookup and no hashing on the hot path. A thread is recorded once it has a trace thread number: the main thread from `main`
//! (or from its first instruction with `roi=all`), created threads from their `ThreadStart`
//! call. Its events go to a 1 MiB buffer written to `t<N>.raw` when full and when the thread
//! ends.
//!
//! **Static table.** Translation (rare, serialised by QEMU but guarded here anyway) gives each
//! new guest address a raw index, appends its code bytes to `static.bin` at once, so a killed
//! run still has the table for every event written, and passes the index to the execution
//! callback as its user data.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use std::cell::UnsafeCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Mutex, OnceLock};

use isim_trace_protocol::{AtomicKind, Op, RawEncoder};

type PluginId = u64;
#[repr(C)]
struct Tb {
    _private: [u8; 0],
}
#[repr(C)]
struct Insn {
    _private: [u8; 0],
}

const CB_NO_REGS: c_int = 0;
const MEM_RW: c_int = 3;

type UdataCb = extern "C" fn(c_uint, *mut c_void);
type MemCb = extern "C" fn(c_uint, u32, u64, *mut c_void);
type TransCb = extern "C" fn(PluginId, *mut Tb);
type SyscallCb = extern "C" fn(PluginId, c_uint, i64, u64, u64, u64, u64, u64, u64, u64, u64);
type AtexitCb = extern "C" fn(PluginId, *mut c_void);
type SyscallRetCb = extern "C" fn(PluginId, c_uint, i64, i64);

unsafe extern "C" {
    fn qemu_plugin_register_vcpu_tb_trans_cb(id: PluginId, cb: TransCb);
    fn qemu_plugin_register_vcpu_insn_exec_cb(
        insn: *mut Insn,
        cb: UdataCb,
        flags: c_int,
        udata: *mut c_void,
    );
    fn qemu_plugin_register_vcpu_mem_cb(
        insn: *mut Insn,
        cb: MemCb,
        flags: c_int,
        rw: c_int,
        udata: *mut c_void,
    );
    fn qemu_plugin_register_vcpu_syscall_cb(id: PluginId, cb: SyscallCb);
    fn qemu_plugin_register_vcpu_syscall_ret_cb(id: PluginId, cb: SyscallRetCb);
    fn qemu_plugin_register_atexit_cb(id: PluginId, cb: AtexitCb, udata: *mut c_void);
    fn qemu_plugin_tb_n_insns(tb: *const Tb) -> usize;
    fn qemu_plugin_tb_get_insn(tb: *const Tb, idx: usize) -> *mut Insn;
    fn qemu_plugin_insn_data(insn: *const Insn) -> *const c_void;
    fn qemu_plugin_insn_size(insn: *const Insn) -> usize;
    fn qemu_plugin_insn_vaddr(insn: *const Insn) -> u64;
    fn qemu_plugin_mem_size_shift(info: u32) -> c_uint;
    fn qemu_plugin_mem_is_store(info: u32) -> bool;
    fn qemu_plugin_outs(s: *const c_char);
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// The plugin API version this plugin was written against (QEMU checks it at load time).
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = 1;

/// Which part of the program is recorded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Roi {
    /// Everything, from the first instruction.
    All,
    /// From `main` (markers may narrow the timed region; the converter decides).
    Main,
}

struct Global {
    dir: PathBuf,
    roi: Roi,
    statics: Mutex<Statics>,
    /// Per thread number, whether it ended cleanly (flushed) — for `threads.tsv`.
    threads: Mutex<Vec<(u32, &'static str)>>,
    /// Every failed write of the capture, said again in `threads.tsv` (`error` lines) so that
    /// isim refuses to convert a capture with holes (a full disk, a file size limit).
    errors: Mutex<Vec<String>>,
    /// The atomic instructions of threads that are not recorded (a created thread's start
    /// code before its `ThreadStart`: the interposer asks glibc for its stack, which
    /// allocates), in `untraced.bin`'s layout ([`isim_trace_protocol::UNTRACED_RECORD`]).
    untraced: Mutex<Vec<u8>>,
}

struct Statics {
    by_vaddr: HashMap<u64, u32>,
    file: File,
    count: u32,
    error: Option<String>,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();
/// Set when the program has finished `main` or exited: nothing more is recorded.
static STOPPED: AtomicBool = AtomicBool::new(false);
/// Set by the thread that ends the process (`exit_group`): every other thread still running
/// traced code writes itself out at its next instruction (state `stopped`: complete up to that
/// moment) instead of dying with its buffer unwritten. A scoped Rust thread, for one, tells
/// its scope it is done and then runs its own exit path while `main` returns and exits.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Threads whose capture file is open.
static OPEN: AtomicU32 = AtomicU32::new(0);
/// How long the exiting thread waits for the others to write themselves out (a thread inside
/// a system call is parked and written out by the exiting thread, [`PARK`]).
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_millis(200);
/// The code the program asked to exit with (`exit_group`), said in `threads.tsv`; `i64::MIN`
/// until then.
static EXIT_CODE: AtomicI64 = AtomicI64::new(i64::MIN);
/// Set once the main thread has been given thread number 0.
static MAIN_SEEN: AtomicBool = AtomicBool::new(false);
/// Set in a child process made by `fork`: it must not write to the parent's capture.
static FORKED_CHILD: AtomicBool = AtomicBool::new(false);
/// Child processes the traced process made (they are not traced).
static FORKS: AtomicU32 = AtomicU32::new(0);
/// Atomic instructions that ran without [`ATOMIC`] ([`ATOMIC_PATIENCE`] ran out), said in
/// `threads.tsv` so that the converter warns.
static IMPATIENT: AtomicU64 = AtomicU64::new(0);
/// Threads that ran instructions after `main` began without ever being given a trace thread
/// number (created other than through the interposed `pthread_create`: a raw `clone`, a
/// library's internal call), and their instructions: none of them is in the trace, so
/// `threads.tsv` says so and the converter warns. A created thread runs the C library's
/// start code before its `ThreadStart`; those instructions are taken back at the start.
static STRAY_THREADS: AtomicU64 = AtomicU64::new(0);
/// Pipes, eventfds and socket pairs the program made ([`Op::Channel`]).
static CHANNELS: AtomicU64 = AtomicU64::new(0);
/// The channels' open file descriptors: by descriptor, the stream a read of it takes from and
/// the stream a write to it adds to ([`isim_trace_protocol::channel_stream`]; [`NO_STREAM`]
/// where it cannot). A descriptor closed, or replaced by `dup2`, leaves.
static CHANNEL_FDS: Mutex<BTreeMap<u64, (u64, u64)>> = Mutex::new(BTreeMap::new());
/// No stream: a pipe's read end is not written, its write end not read.
const NO_STREAM: u64 = u64::MAX;
static STRAY_INSNS: AtomicU64 = AtomicU64::new(0);

const SYS_EXIT: i64 = 60;
const SYS_KILL: i64 = 62;
const SYS_TKILL: i64 = 200;
const SYS_EXIT_GROUP: i64 = 231;
const SYS_TGKILL: i64 = 234;
const SYS_CLONE: i64 = 56;
const SYS_FORK: i64 = 57;
const SYS_VFORK: i64 = 58;
const SYS_EXECVE: i64 = 59;
const SYS_EXECVEAT: i64 = 322;
const SYS_FUTEX: i64 = 202;
const SYS_SCHED_YIELD: i64 = 24;
/// The system calls that read a channel's descriptor (`read`, `readv`, `recvfrom`,
/// `recvmsg`) and write it (`write`, `writev`, `sendto`, `sendmsg`); `close` ends a
/// descriptor's use as a channel, and `dup`, `dup2`, `dup3` and `fcntl`'s `F_DUPFD` copy it
/// (the new descriptor the original's, or no channel's).
const SYS_READS: [i64; 4] = [0, 19, 45, 47];
const SYS_WRITES: [i64; 4] = [1, 20, 44, 46];
const SYS_CLOSE: i64 = 3;
const SYS_DUP: i64 = 32;
const SYS_DUP2: i64 = 33;
const SYS_DUP3: i64 = 292;
const SYS_FCNTL: i64 = 72;
const F_DUPFD: u64 = 0;
const F_DUPFD_CLOEXEC: u64 = 1030;
/// A `dup` or `fcntl` copy's new descriptor, known at its return.
const NO_FD: u64 = u64::MAX;
const CLONE_THREAD: u64 = 0x10000;

const FLUSH_AT: usize = 1 << 20;

/// The sequence number of the next marker, shared by all threads (see
/// `isim_trace_protocol::Word::Mark`): taken in the system-call callback, which runs on the
/// guest thread at the moment of the call, so the numbers follow the traced run's real order.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Taken by every atomic read-modify-write instruction of the process from just before it
/// executes until its memory access has been reported, so that the value the plugin reads
/// right after the access is the one that instruction left (no other atomic instruction can
/// change the word in between), and the values of one word, in sequence order, are its
/// history. A spin lock, because it is held across two callbacks; waiting is bounded
/// ([`ATOMIC_PATIENCE`]) so that an instruction whose access never comes (a fault) cannot
/// stop the others.
static ATOMIC: AtomicBool = AtomicBool::new(false);
/// How long an atomic instruction waits for [`ATOMIC`] before it runs without it (its value
/// may then be another's, and the sequence order of the two instructions is not theirs: the
/// converter checks every word's history and leaves alone a word whose history is not a
/// lock's; `threads.tsv` counts them and `isim trace` warns). A bound, not a timeout expected
/// to fire: the holder is between two callbacks of
/// one instruction, and the wait yields after a few spins. It was 20 ms until 2026-12-06,
/// and beside a CPU hog the host descheduled a holder for longer in 2 of 4 traces of a
/// 4-thread spin-lock program (a release read back as the next try's value, the lock then
/// not recognised); at 1 s, 6 of 6 such traces were whole.
const ATOMIC_PATIENCE: std::time::Duration = std::time::Duration::from_millis(1000);
/// Where QEMU keeps the host address of guest address 0 (its exported `guest_base`, set when
/// it loads the program, after the plugin): user mode maps guest memory at one offset, so the
/// plugin can read a guest word after an access. `None` if QEMU does not export it; then no
/// values are recorded.
static GUEST_BASE: OnceLock<Option<usize>> = OnceLock::new();

/// Cache lines some thread spins on: a direct-mapped table of line numbers plus one (0 =
/// empty), filled when a thread executes a `pause` (the spin-wait hint) or calls
/// `sched_yield` with the lines of its last eight loads and of its last two outside its own
/// stack (a `-O0` loop reloads its locals after its look) — at a `sched_yield` also of every
/// load outside its stack since its previous yield, up to [`POLL_LOADS`] ([`yielded`]) — and
/// when one of its load
/// instructions reads the same address [`REPEATS`] times with no store of the thread
/// outside its own stack in between (a spin without `pause`, at `-O0` too, where the loop's
/// counter lives on the stack); never with a line of the thread's own stack
/// ([`watch_load`]). A store of any thread to a watched line records the value it left with
/// a sequence number, and a load records the value it read when it differs from the last one
/// this thread saw there: so a spin-wait's end names the store that ended it (the converter
/// replaces the spinning by a wait for that store, `sim_frontend::tracer::spinwait`). A
/// collision replaces an entry (that line's stores stop being recorded: its spins stay as
/// traced).
static WATCH: [AtomicU64; WATCH_LINES] = [const { AtomicU64::new(0) }; WATCH_LINES];
const WATCH_LINES: usize = 4096;

#[inline(always)]
fn watch_slot(vaddr: u64) -> (usize, u64) {
    let line = vaddr >> 6;
    let h = line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
    (h as usize & (WATCH_LINES - 1), line + 1)
}

#[inline(always)]
fn watched(vaddr: u64) -> bool {
    let (i, tag) = watch_slot(vaddr);
    WATCH[i].load(Ordering::Relaxed) == tag
}

fn watch(vaddr: u64) {
    let (i, tag) = watch_slot(vaddr);
    if WATCH[i].load(Ordering::Relaxed) != tag {
        WATCH[i].store(tag, Ordering::Relaxed);
    }
}

/// The stacks of the recorded threads, `[lo, hi)`, by thread number modulo [`STACKS`] (a
/// later thread's replaces an ended one's), and how many slots are in use: an `xchg` into
/// another thread's stack watches its line ([`on_mem_swap`]).
static STACK_LO: [AtomicU64; STACKS] = [const { AtomicU64::new(0) }; STACKS];
static STACK_HI: [AtomicU64; STACKS] = [const { AtomicU64::new(0) }; STACKS];
static STACKS_USED: AtomicUsize = AtomicUsize::new(0);
const STACKS: usize = 256;

fn register_stack(tid: u32, (lo, hi): (u64, u64)) {
    let i = tid as usize % STACKS;
    STACK_LO[i].store(lo, Ordering::Relaxed);
    STACK_HI[i].store(hi, Ordering::Relaxed);
    STACKS_USED.fetch_max(i + 1, Ordering::Relaxed);
}

/// Whether `vaddr` is on a recorded thread's stack other than `own` (`[lo, hi)`).
fn on_anothers_stack(own: (u64, u64), vaddr: u64) -> bool {
    if vaddr.wrapping_sub(own.0) < own.1 - own.0 {
        return false;
    }
    let n = STACKS_USED.load(Ordering::Relaxed).min(STACKS);
    (0..n).any(|i| {
        let lo = STACK_LO[i].load(Ordering::Relaxed);
        vaddr.wrapping_sub(lo) < STACK_HI[i].load(Ordering::Relaxed).wrapping_sub(lo)
    })
}

/// Entries of a thread's memo of the values it last saw at watched addresses.
const SEEN: usize = 8;
/// Loads outside its own stack watched beside them (the last ones of [`POLL_LOADS`]).
const LAST_FAR: usize = 2;
/// Loads outside its own stack a thread remembers for [`yielded`] (a power of two): a poller's
/// turn between two yields (a rayon worker looking at every other worker's deque and at the
/// pool's injector: about 200 such loads at 16 threads).
const POLL_LOADS: usize = 1024;
/// Loads a thread remembers for [`watch_last_loads`] (a power of two).
const LAST_LOADS: usize = 8;
/// Entries of a thread's table of repeating loads.
const REPEAT_SLOTS: usize = 4;
/// Times a load repeats, with no store between, before its line is watched.
const REPEATS: u32 = 4;

fn atomic_lock(t: &mut ThreadState) {
    if t.atomic_held {
        return;
    }
    let mut spins = 0u32;
    let mut since: Option<std::time::Instant> = None;
    while ATOMIC
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 256 {
            std::hint::spin_loop();
            continue;
        }
        let start = *since.get_or_insert_with(std::time::Instant::now);
        if start.elapsed() > ATOMIC_PATIENCE {
            IMPATIENT.fetch_add(1, Ordering::Relaxed);
            return;
        }
        std::thread::yield_now();
    }
    t.atomic_held = true;
}

fn atomic_unlock(t: &mut ThreadState) {
    if t.atomic_held {
        t.atomic_held = false;
        ATOMIC.store(false, Ordering::Release);
    }
}

/// Reads the guest word of `1 << shift` bytes at `vaddr`, zero-extended.
fn guest_word(vaddr: u64, shift: u32) -> Option<u64> {
    let at = (*GUEST_BASE.get()?)?;
    // SAFETY: `at` is the address of QEMU's `guest_base` variable, fixed once the program is
    // loaded (before any guest instruction runs).
    let base = unsafe { std::ptr::read_volatile(at as *const usize) };
    let p = base.wrapping_add(vaddr as usize);
    // SAFETY: the guest has just accessed these bytes at this address (user mode maps guest
    // memory at `guest_base`, and the mapping cannot go away while the accessing thread is
    // in this callback); volatile, since other threads may write the word.
    unsafe {
        Some(match shift {
            0 => std::ptr::read_volatile(p as *const u8) as u64,
            1 => std::ptr::read_volatile(p as *const u16) as u64,
            2 => std::ptr::read_volatile(p as *const u32) as u64,
            3 => std::ptr::read_volatile(p as *const u64),
            _ => return None,
        })
    }
}

/// Per vCPU: whether another thread may write out this one's buffer at process exit.
/// [`ACTIVE`]: only the owner touches it. [`PARKED`]: the owner is inside an untraced call
/// (a synchronization wait, an idle thread pool) or inside a system call (a futex wait of
/// traced code: a Rust or C++ thread asleep on a condition variable when `main` returns) and
/// writes nothing until it claims the state back with a compare-and-swap. [`TAKING`]: the
/// exiting thread is writing it out; [`TAKEN`]: it has, and closed it; the owner never
/// touches it again.
static PARK: [AtomicU8; MAX_VCPUS] = [const { AtomicU8::new(ACTIVE) }; MAX_VCPUS];
const ACTIVE: u8 = 0;
const PARKED: u8 = 1;
const TAKEN: u8 = 2;
const TAKING: u8 = 3;

struct ThreadState {
    /// Flags of this thread's last `clone` call (to tell a fork from a thread creation).
    clone_flags: u64,
    /// This thread holds [`ATOMIC`] (between an atomic instruction's start and its access).
    atomic_held: bool,
    /// A futex wait of traced code is in progress (its result becomes a `Done` marker).
    futex_wait: bool,
    /// A read or write of a channel's stream by traced code is in progress (the marker it
    /// becomes if it moves any bytes, its stream, and a read's buffer, 0 for the vector
    /// forms, or a write's sequence number at its start).
    channel: Option<(Op, u64, u64)>,
    /// A descriptor is being copied (`dup` and its kin): the original, and the new one if
    /// the call names it ([`NO_FD`]: its result will).
    dup: Option<(u64, u64)>,
    /// The addresses of its last loads, a ring (watched at a `pause` or a `sched_yield`:
    /// after the spun-on load may come a call's, a return's and PLT stubs').
    last_loads: [u64; LAST_LOADS],
    /// Where the next load goes in `last_loads`.
    next_load: usize,
    /// Its loads outside its own stack, a ring of [`POLL_LOADS`] (allocated when the thread
    /// starts recording; its last [`LAST_FAR`] are watched with `last_loads`: a `-O0` loop
    /// reloads its locals between its look and its `pause`, which push the look out of
    /// `last_loads`), and how many went in so far and by its last `sched_yield`.
    polled: Option<Box<[u64; POLL_LOADS]>>,
    next_poll: usize,
    poll_at_yield: usize,
    /// Its stack, `[lo, hi)` (from its `ThreadStart` or `MainBegin` marker; empty if unknown).
    stack: (u64, u64),
    /// Its stores so far outside its own stack.
    stores: u64,
    /// Loads that repeat, by instruction (direct-mapped): (raw index, address, the thread's
    /// stores when it last ran, repeats). An instruction that loads the same address again and
    /// again with no store of the thread in between is a spin without `pause`: watched.
    repeat: [(u32, u64, u64, u32); REPEAT_SLOTS],
    /// The value it last saw (loaded or stored) at watched addresses, direct-mapped.
    seen: [(u64, u64); SEEN],
    tid: u32,
    recording: bool,
    buf: Vec<u8>,
    /// The raw stream's encoder (its predictions restart with each thread's file).
    enc: RawEncoder,
    file: Option<File>,
    failed: bool,
    /// Instructions it ran after `main` began while it had no trace thread number
    /// ([`STRAY_INSNS`]).
    stray: u64,
    /// It has had a trace thread number (its code after its end is the C library's exit
    /// path, not a stray thread's); cleared when the host thread exits.
    traced: bool,
    /// Its `ThreadEnd` is recorded and it runs the C library's exit path (freeing its malloc
    /// cache into its arena under the arena's lock, thread-local destructors), whose atomic
    /// instructions are recorded ([`Op::Atomic`]) up to its `exit` call, so that the words
    /// they update (that lock) have whole histories.
    exiting: bool,
}

impl ThreadState {
    const fn new() -> Self {
        ThreadState {
            clone_flags: 0,
            atomic_held: false,
            futex_wait: false,
            channel: None,
            dup: None,
            last_loads: [u64::MAX; LAST_LOADS],
            next_load: 0,
            polled: None,
            next_poll: 0,
            poll_at_yield: 0,
            stack: (0, 0),
            stores: 0,
            repeat: [(u32::MAX, 0, 0, 0); REPEAT_SLOTS],
            seen: [(u64::MAX, 0); SEEN],
            tid: u32::MAX,
            recording: false,
            buf: Vec::new(),
            enc: RawEncoder::new(),
            file: None,
            failed: false,
            stray: 0,
            traced: false,
            exiting: false,
        }
    }

    /// Appends an executed instruction.
    #[inline(always)]
    fn exec(&mut self, idx: u32) {
        self.enc.exec(&mut self.buf, idx);
    }

    /// Appends a marker with its arguments and the next sequence number.
    fn mark(&mut self, op: Op, args: &[u64]) {
        let seq = SEQ.fetch_add(1, Ordering::SeqCst);
        self.enc.mark(&mut self.buf, op, args, seq);
    }

    fn start(&mut self, tid: u32) {
        let Some(g) = GLOBAL.get() else { return };
        if self.stray > 0 {
            // The C library's start code of a thread that is traced from here on.
            STRAY_INSNS.fetch_sub(self.stray, Ordering::Relaxed);
            STRAY_THREADS.fetch_sub(1, Ordering::Relaxed);
            self.stray = 0;
        }
        self.traced = true;
        self.tid = tid;
        self.recording = true;
        self.enc = RawEncoder::new();
        self.buf.reserve(FLUSH_AT + 64);
        if self.polled.is_none() {
            self.polled = Some(Box::new([u64::MAX; POLL_LOADS]));
        }
        (self.next_poll, self.poll_at_yield) = (0, 0);
        let path = g.dir.join(format!("t{tid}.raw"));
        match File::create(&path) {
            Ok(f) => {
                self.file = Some(f);
                OPEN.fetch_add(1, Ordering::AcqRel);
            }
            Err(e) => {
                write_failed(format!("cannot create {}: {e}", path.display()));
                self.failed = true;
                self.recording = false;
            }
        }
        g.threads.lock().unwrap().push((tid, "running"));
    }

    /// A thread is being recorded into its own capture file (started, not yet finished).
    fn is_open(&self) -> bool {
        self.tid != u32::MAX && self.file.is_some()
    }

    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        // After a failed write the thread records nothing more, and says so once.
        if !self.failed
            && let Some(f) = self.file.as_mut()
            && let Err(e) = f.write_all(&self.buf)
        {
            write_failed(format!("cannot write thread {}: {e}", self.tid));
            self.failed = true;
            self.recording = false;
        }
        self.buf.clear();
    }

    fn finish(&mut self, state: &'static str) {
        self.close(state);
        // The vCPU index may serve a later thread.
        self.tid = u32::MAX;
        self.failed = false;
        self.exiting = false;
    }

    /// Writes out the buffer, closes the file and records the thread's final state.
    fn close(&mut self, state: &'static str) {
        self.flush();
        self.recording = false;
        if self.file.take().is_some() {
            OPEN.fetch_sub(1, Ordering::AcqRel);
        }
        self.buf = Vec::new();
        if let Some(g) = GLOBAL.get()
            && let Some(e) = g
                .threads
                .lock()
                .unwrap()
                .iter_mut()
                .find(|e| e.0 == self.tid)
        {
            e.1 = if self.failed { "write-error" } else { state };
        }
    }
}

/// Most vCPUs (guest threads alive at once) the plugin records; others are ignored.
const MAX_VCPUS: usize = 4096;

/// Per-vCPU state. QEMU user mode gives each live guest thread its own vCPU index and calls
/// its callbacks on that thread's host thread; an index is reused only after its thread has
/// ended, and a thread's end resets the state ([`ThreadState::finish`]).
struct States([UnsafeCell<ThreadState>; MAX_VCPUS]);
// SAFETY: entry `i` is only touched by the host thread that runs vCPU `i` (see above).
unsafe impl Sync for States {}
static STATES: States = States([const { UnsafeCell::new(ThreadState::new()) }; MAX_VCPUS]);

#[inline(always)]
fn with_state<R: Default>(vcpu: c_uint, f: impl FnOnce(&mut ThreadState) -> R) -> R {
    match STATES.0.get(vcpu as usize) {
        // SAFETY: only this vCPU's host thread uses this entry, and callbacks do not nest.
        Some(s) => f(unsafe { &mut *s.get() }),
        None => R::default(),
    }
}

/// At a normal process exit (`main` returned, or `exit`), writes out every other thread that
/// is parked in an untraced call or in a system call: an idle thread pool, a detached thread
/// waiting on a condition, a Rust or C++ thread asleep in a futex wait of its own code. Their
/// streams are complete (the converter ends them at their last event); a thread running
/// traced code at that moment writes itself out at its next instruction ([`EXITING`]).
fn write_out_parked(me: c_uint) {
    for (i, p) in PARK.iter().enumerate() {
        if i == me as usize || p.load(Ordering::Acquire) != PARKED {
            continue;
        }
        if p.compare_exchange(PARKED, TAKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: the owner parked this state (it writes nothing until it claims it back,
            // which waits while it is being taken and then fails), so this thread is its only
            // user.
            let t = unsafe { &mut *STATES.0[i].get() };
            if t.is_open() {
                t.close("parked");
            }
            p.store(TAKEN, Ordering::Release);
        }
    }
}

/// Called by the owner before it touches its state from a system-call callback: false if
/// the exiting thread has taken the state (then the owner leaves it alone: closed, it records
/// nothing more). While the state is being taken, waits until it has been (a moment).
fn claim(vcpu: c_uint) -> bool {
    let Some(p) = PARK.get(vcpu as usize) else {
        return false;
    };
    loop {
        match p.compare_exchange(PARKED, ACTIVE, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) | Err(ACTIVE) => return true,
            Err(TAKING) => std::thread::yield_now(),
            Err(_) => return false,
        }
    }
}

/// Called by the owner after a system-call callback: a thread entering a system call, and an
/// untraced thread in any case, parks its state (the exiting thread may then write it out;
/// the owner claims it back when the call returns or its traced code resumes).
fn park(vcpu: c_uint, t: &ThreadState, in_syscall: bool) {
    if (in_syscall || !t.recording)
        && t.file.is_some()
        && let Some(p) = PARK.get(vcpu as usize)
    {
        p.store(PARKED, Ordering::Release);
    }
}

fn say(s: &str) {
    if let Ok(c) = std::ffi::CString::new(s) {
        // SAFETY: a valid NUL-terminated string; QEMU copies it.
        unsafe { qemu_plugin_outs(c.as_ptr()) };
    }
}

extern "C" fn on_exec(vcpu: c_uint, udata: *mut c_void) {
    with_state(vcpu, |t| {
        if EXITING.load(Ordering::Relaxed) {
            // The process is ending: this thread's events so far are all it will have. (An
            // untraced stretch — a wrapped call, an exit path — runs parked, and the exiting
            // thread may be writing it out: claimed first.)
            if claim(vcpu) && t.is_open() {
                t.finish("stopped");
            }
            return;
        }
        if t.recording {
            t.exec(udata as usize as u32);
            if t.buf.len() >= FLUSH_AT {
                t.flush();
            }
        } else if t.tid == u32::MAX
            && GLOBAL.get().is_some_and(|g| g.roi == Roi::All)
            && !MAIN_SEEN.swap(true, Ordering::Relaxed)
        {
            t.start(0);
            t.exec(udata as usize as u32);
        } else if t.tid == u32::MAX && !t.traced && MAIN_SEEN.load(Ordering::Relaxed) {
            if t.stray == 0 {
                STRAY_THREADS.fetch_add(1, Ordering::Relaxed);
            }
            t.stray += 1;
            STRAY_INSNS.fetch_add(1, Ordering::Relaxed);
        }
    })
}

extern "C" fn on_mem(vcpu: c_uint, info: u32, vaddr: u64, udata: *mut c_void) {
    with_state(vcpu, |t| {
        if t.recording {
            // SAFETY: plain queries of the opaque info word.
            let (shift, store) = unsafe {
                (
                    qemu_plugin_mem_size_shift(info),
                    qemu_plugin_mem_is_store(info),
                )
            };
            t.enc.mem(&mut t.buf, vaddr, shift, store);
            if store {
                // Stores to its own stack (`-O0` code's locals, return addresses) do not end a
                // repetition: a spin's loop at `-O0` stores its loop counter at every turn.
                if vaddr.wrapping_sub(t.stack.0) >= t.stack.1 - t.stack.0 {
                    t.stores += 1;
                }
            } else {
                t.last_loads[t.next_load & (LAST_LOADS - 1)] = vaddr;
                t.next_load = t.next_load.wrapping_add(1);
                // The loads outside its own stack too: at `-O0` a spin's loop reloads its
                // locals between its look at the flag and its `pause`, which push the flag
                // out of the ring above; and a poller's turn is watched at its yield.
                if vaddr.wrapping_sub(t.stack.0) >= t.stack.1 - t.stack.0
                    && let Some(p) = t.polled.as_mut()
                {
                    p[t.next_poll & (POLL_LOADS - 1)] = vaddr;
                    t.next_poll = t.next_poll.wrapping_add(1);
                }
                let idx = udata as usize as u32;
                let r = &mut t.repeat[idx as usize & (REPEAT_SLOTS - 1)];
                if r.0 == idx && r.1 == vaddr && r.2 == t.stores {
                    r.3 += 1;
                    if r.3 == REPEATS {
                        watch_load(t.stack, vaddr);
                    }
                } else {
                    *r = (idx, vaddr, t.stores, 0);
                }
            }
            if watched(vaddr) {
                watched_access(t, vaddr, shift, store);
            }
        }
    })
}

/// A plain access to a watched line (see [`WATCH`]): a store records the value it left; a
/// load the value it read, if this thread last saw another one there.
#[cold]
fn watched_access(t: &mut ThreadState, vaddr: u64, shift: u32, store: bool) {
    let Some(v) = guest_word(vaddr, shift) else {
        return;
    };
    let k = ((vaddr >> 3) as usize ^ (vaddr >> 6) as usize) & (SEEN - 1);
    if !store && t.seen[k] == (vaddr, v) {
        return;
    }
    t.seen[k] = (vaddr, v);
    let seq = SEQ.fetch_add(1, Ordering::SeqCst);
    t.enc.value(&mut t.buf, v, seq);
}

/// A `pause`: its thread spins, most likely on what its last loads read; watch those lines.
extern "C" fn on_exec_pause(vcpu: c_uint, udata: *mut c_void) {
    on_exec(vcpu, udata);
    with_state(vcpu, |t| watch_last_loads(t, LAST_FAR));
}

/// Watches the lines of the thread's last loads and of its last `far` loads outside its own
/// stack (at a `pause`, a `sched_yield` or a futex wait).
fn watch_last_loads(t: &mut ThreadState, far: usize) {
    if !t.recording {
        return;
    }
    let ring = t.polled.as_ref().map_or(&[][..], |p| &p[..]);
    let last_far = (1..=far.min(t.next_poll))
        .filter_map(|k| ring.get(t.next_poll.wrapping_sub(k) & (POLL_LOADS - 1)));
    for a in t.last_loads.iter().chain(last_far) {
        if *a != u64::MAX {
            watch_load(t.stack, *a);
        }
    }
}

/// Loads outside its own stack watched at a futex wait beside its last loads: between a
/// Rust `park` loop's look at its flag and the system call come the parker's code and the
/// thread handle's (thread-local and heap loads), which push the look out of `last_loads`.
const SLEEP_FAR: usize = 8;

/// A `sched_yield`: the thread is polling, and what it looked at since its previous yield is
/// what it polls: watch every line of it outside the recorded threads' stacks, if the turn's
/// loads outside its stack fit in
/// [`POLL_LOADS`] (else it did more than look), and the lines of its last loads as at a
/// `pause`. The marker tells the converter that the looks before and after it are a
/// poller's (`sim_frontend::tracer::spinwait`).
fn yielded(t: &mut ThreadState) {
    watch_last_loads(t, LAST_FAR);
    if !t.recording {
        return;
    }
    if let Some(p) = t.polled.as_ref() {
        let turn = t.next_poll.wrapping_sub(t.poll_at_yield);
        if turn <= POLL_LOADS {
            let mut last = u64::MAX;
            for k in 0..turn {
                let a = p[t.poll_at_yield.wrapping_add(k) & (POLL_LOADS - 1)];
                // Not another thread's stack either: a job in its owner's frame is the
                // owner's business (its latch is watched when a thief sets it).
                if a >> 6 != last {
                    last = a >> 6;
                    if !on_anothers_stack(t.stack, a) {
                        watch_load(t.stack, a);
                    }
                }
            }
        }
    }
    t.poll_at_yield = t.next_poll;
    t.mark(Op::Yield, &[]);
}

/// Watches the line a thread loaded at `vaddr`, unless it is on the thread's own `stack`
/// (`[lo, hi)`): return addresses and locals are nobody else's business, and the thread's
/// calls and `-O0` loops would store there at every turn.
fn watch_load(stack: (u64, u64), vaddr: u64) {
    if vaddr.wrapping_sub(stack.0) >= stack.1 - stack.0 {
        watch(vaddr);
    }
}

/// An atomic instruction starts: take [`ATOMIC`], then as [`on_exec`].
extern "C" fn on_exec_atomic(vcpu: c_uint, udata: *mut c_void) {
    with_state(vcpu, atomic_lock);
    on_exec(vcpu, udata);
}

/// An atomic instruction's access: as [`on_mem`]; at its store, the value and a sequence
/// number, and [`ATOMIC`] released.
extern "C" fn on_mem_atomic(vcpu: c_uint, info: u32, vaddr: u64, udata: *mut c_void) {
    atomic_access(vcpu, info, vaddr, udata as usize as u32, false);
}

/// An `xchg`'s access: as [`on_mem_atomic`], and if it stored into another thread's stack
/// (rayon's `join`: the thief sets the latch in the waiting owner's frame), the line is
/// watched from then on, so that the owner's look that finds the latch set records its value
/// and waits for this store in replay (`sim_frontend::tracer::spinwait`).
extern "C" fn on_mem_swap(vcpu: c_uint, info: u32, vaddr: u64, udata: *mut c_void) {
    atomic_access(vcpu, info, vaddr, udata as usize as u32, true);
}

fn atomic_access(vcpu: c_uint, info: u32, vaddr: u64, raw: u32, swap: bool) {
    with_state(vcpu, |t| {
        // SAFETY: plain queries of the opaque info word.
        let (shift, store) = unsafe {
            (
                qemu_plugin_mem_size_shift(info),
                qemu_plugin_mem_is_store(info),
            )
        };
        if t.recording {
            t.enc.mem(&mut t.buf, vaddr, shift, store);
        }
        // While the process has one thread, QEMU translates a read-modify-write as a load and
        // a store, each reported: the value it left is there only after the store. (With
        // threads, one access is reported, a store.) Every such instruction writes.
        if !t.atomic_held || !store {
            return;
        }
        if t.recording {
            if let Some(v) = guest_word(vaddr, shift) {
                let seq = SEQ.fetch_add(1, Ordering::SeqCst);
                t.enc.value(&mut t.buf, v, seq);
            }
            if swap && on_anothers_stack(t.stack, vaddr) {
                watch(vaddr);
            }
        } else if t.tid != u32::MAX {
            // An untraced stretch of a traced thread (a wrapped call, its exit path): the
            // word's history needs this instruction, the trace does not ([`Op::Atomic`]). The
            // state is parked there (the process's exit may take it): claimed before it is
            // read (the thread number only its owner changes), parked again after.
            if claim(vcpu) && t.is_open() && !t.failed {
                if let Some(v) = guest_word(vaddr, shift) {
                    t.mark(Op::Atomic, &[vaddr, v, 1u64 << shift | u64::from(raw) << 8]);
                    if t.buf.len() >= FLUSH_AT {
                        t.flush();
                    }
                }
                park(vcpu, t, false);
            }
        } else if t.tid == u32::MAX
            && MAIN_SEEN.load(Ordering::Relaxed)
            && let Some(g) = GLOBAL.get()
            && let Some(v) = guest_word(vaddr, shift)
            && let Ok(mut u) = g.untraced.lock()
        {
            // A thread not recorded (yet): its instruction still belongs to the word's history.
            let seq = SEQ.fetch_add(1, Ordering::SeqCst);
            for x in [
                u64::from(vcpu),
                vaddr,
                v,
                1u64 << shift | u64::from(raw) << 8,
                seq,
            ] {
                u.extend_from_slice(&x.to_le_bytes());
            }
        }
        atomic_unlock(t);
    })
}

#[allow(clippy::too_many_arguments)]
extern "C" fn on_syscall(
    _id: PluginId,
    vcpu: c_uint,
    num: i64,
    a1: u64,
    a2: u64,
    a3: u64,
    a4: u64,
    a5: u64,
    a6: u64,
    _a7: u64,
    _a8: u64,
) {
    // An atomic instruction whose access never came (it faulted) holds the lock no longer.
    with_state(vcpu, atomic_unlock);
    if !claim(vcpu) {
        return;
    }
    syscall_entry(vcpu, num, [a1, a2, a3, a4, a5, a6]);
    with_state(vcpu, |t| park(vcpu, t, true));
}

fn syscall_entry(vcpu: c_uint, num: i64, args: [u64; 6]) {
    let [a1, a2, _, _, a5, _] = args;
    if num == SYS_CLONE {
        with_state(vcpu, |t| t.clone_flags = a1);
    }
    if num == SYS_FUTEX {
        with_state(vcpu, |t| futex(t, a1, a2, args[2], a5));
        return;
    }
    if SYS_READS.contains(&num) || SYS_WRITES.contains(&num) {
        let read = SYS_READS.contains(&num);
        let stream = CHANNEL_FDS
            .lock()
            .ok()
            .and_then(|m| m.get(&a1).map(|&(r, w)| if read { r } else { w }));
        if let Some(stream) = stream.filter(|&s| s != NO_STREAM) {
            let op = if read {
                Op::ChannelRead
            } else {
                Op::ChannelWrite
            };
            // `read` and `recvfrom` name their buffer; `readv` and `recvmsg` a vector of them.
            // A write is numbered as it starts: its bytes are in the stream before it
            // returns, perhaps after another writer's that returned first.
            with_state(vcpu, |t| {
                if t.recording {
                    let third = if read {
                        if matches!(num, 0 | 45) { a2 } else { 0 }
                    } else {
                        SEQ.fetch_add(1, Ordering::SeqCst)
                    };
                    t.channel = Some((op, stream, third));
                }
            });
        }
        return;
    }
    if num == SYS_CLOSE {
        // The descriptor closed is no longer the channel's.
        if let Ok(mut m) = CHANNEL_FDS.lock() {
            m.remove(&a1);
        }
        return;
    }
    let dup = match num {
        SYS_DUP => Some((a1, NO_FD)),
        SYS_DUP2 | SYS_DUP3 => Some((a1, a2)),
        SYS_FCNTL if matches!(a2, F_DUPFD | F_DUPFD_CLOEXEC) => Some((a1, NO_FD)),
        _ => None,
    };
    if let Some(d) = dup {
        // A copy of a descriptor: a channel's if the original is one (at the return, which
        // names the new descriptor).
        with_state(vcpu, |t| t.dup = Some(d));
        return;
    }
    if num == SYS_SCHED_YIELD {
        // A thread that yields is polling (OpenBLAS's idle workers, C++'s `atomic::wait`
        // back-off, rayon's idle workers): watch what it read since its last yield.
        with_state(vcpu, yielded);
        return;
    }
    if (num == SYS_EXECVE || num == SYS_EXECVEAT) && !FORKED_CHILD.load(Ordering::Relaxed) {
        // The process image is about to be replaced: save what was recorded.
        with_state(vcpu, |t| {
            if t.is_open() {
                t.finish("exec");
            }
        });
        write_threads_file("exec");
        return;
    }
    if matches!(
        num,
        SYS_EXIT | SYS_KILL | SYS_TKILL | SYS_EXIT_GROUP | SYS_TGKILL
    ) {
        // The process or thread may end without another callback (a signal to itself, a
        // thread exit that bypasses the wrapper): write out what is buffered.
        with_state(vcpu, |t| {
            if (num == SYS_EXIT_GROUP || num == SYS_EXIT) && t.is_open() {
                // The process, or this thread, ends here; the at-exit callback cannot name
                // this thread, and a thread that has exited records nothing more.
                t.finish(if t.exiting { "ended" } else { "exited" });
            } else {
                t.flush();
            }
            if num == SYS_EXIT {
                // An untraced thread's count stays counted; a later thread on this vCPU
                // starts its own.
                (t.stray, t.traced) = (0, false);
            }
        });
        if num == SYS_EXIT_GROUP && !FORKED_CHILD.load(Ordering::Relaxed) {
            // The threads parked in untraced calls are written out here; those still running
            // traced code write themselves out (see `EXITING`).
            write_out_parked(vcpu);
            EXITING.store(true, Ordering::Release);
            let since = std::time::Instant::now();
            while OPEN.load(Ordering::Acquire) > 0 && since.elapsed() < EXIT_WAIT {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            // Every stream that will ever be written is written: say so now. QEMU's own exit
            // path, with threads still leaving theirs, comes next, and QEMU 7.2 has failed an
            // assertion there (once in some thousands of traces): then the at-exit callback
            // never runs, and the capture, whole, would be refused. That callback rewrites
            // this file as its last word.
            EXIT_CODE.store(a1 as i32 as i64, Ordering::Relaxed);
            write_threads_file("exit_group");
            if std::env::var_os("ISIM_TEST_QEMU_FAILS_AT_EXIT").is_some() {
                // Fault injection for the tests: QEMU dies after the program's exit call
                // (as it did by its own assertion), before its at-exit callbacks.
                std::process::abort();
            }
        }
    }
    let Some(op) = Op::from_syscall(num) else {
        return;
    };
    if op == Op::Channel {
        // Its file descriptors' streams: a pipe's one, read at `a2` and written at `a3`; an
        // eventfd's one, at its descriptor; a socket pair's two, one each way.
        let c = CHANNELS.fetch_add(1, Ordering::Relaxed);
        let (kind, fd0, fd1) = (a1, a2, args[2]);
        let s0 = isim_trace_protocol::channel_stream(c, 0);
        let s1 = isim_trace_protocol::channel_stream(c, 1);
        if let Ok(mut m) = CHANNEL_FDS.lock() {
            match kind {
                0 => {
                    m.insert(fd0, (s0, NO_STREAM));
                    m.insert(fd1, (NO_STREAM, s0));
                }
                1 => {
                    m.insert(fd0, (s0, s0));
                }
                _ => {
                    m.insert(fd0, (s1, s0));
                    m.insert(fd1, (s0, s1));
                }
            }
        }
        return;
    }
    if STOPPED.load(Ordering::Relaxed) {
        // `main` has returned, but a thread that was still finishing (a scoped Rust thread
        // runs its exit path after telling its scope it is done) still ends whole.
        if op == Op::ThreadEnd {
            with_state(vcpu, |t| {
                if t.is_open() {
                    t.finish("ended");
                }
            });
        }
        return;
    }
    with_state(vcpu, |t| {
        match op {
            Op::MainBegin if t.tid == u32::MAX && !MAIN_SEEN.swap(true, Ordering::Relaxed) => {
                t.start(0);
            }
            Op::ThreadStart if t.tid == u32::MAX => t.start(a1 as u32),
            Op::Resume => {
                // (A call wrapped in a thread's exit path returns to what is not traced.)
                if t.is_open() && !t.failed && !t.exiting {
                    t.recording = true;
                }
                return;
            }
            _ => {}
        }
        if t.tid == u32::MAX || t.file.is_none() {
            return;
        }
        t.mark(op, &args);
        match op {
            Op::MainBegin if a2 > a1 => {
                t.stack = (a1, a2);
                register_stack(t.tid, t.stack);
            }
            Op::ThreadStart if args[2] > a2 => {
                t.stack = (a2, args[2]);
                register_stack(t.tid, t.stack);
            }
            _ => {}
        }
        if op.suppresses() {
            t.recording = false;
        }
        match op {
            Op::ThreadEnd => {
                // Its exit path's atomic instructions are recorded on, to its `exit` call.
                t.exiting = true;
                t.recording = false;
            }
            Op::MainEnd => {
                t.finish("ended");
                STOPPED.store(true, Ordering::Relaxed);
            }
            Op::Crash => {
                t.finish("crashed");
                write_threads_file("crash");
            }
            _ => {}
        }
    });
    if op == Op::MainEnd && !FORKED_CHILD.load(Ordering::Relaxed) {
        // Threads still parked (a thread pool, detached waiters) will never be recorded
        // again: `main` has returned.
        write_out_parked(vcpu);
    }
}

/// A `futex` system call of traced code (pthread and OpenMP calls are untraced and replayed
/// from their own markers): waits and wakes become markers, so that synchronization built on
/// futexes directly (C++20 `std::barrier` and `atomic::wait`, Rust's `std::sync`) replays
/// with its recorded wake edges.
fn futex(t: &mut ThreadState, addr: u64, op: u64, count: u64, addr2: u64) {
    if !t.recording {
        return;
    }
    // The command, without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256).
    match op & 0x7f {
        // WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2
        0 | 6 | 9 | 11 | 13 => {
            t.mark(Op::FutexWait, &[addr]);
            t.futex_wait = true;
            // A thread about to sleep waits, most likely, for what its last loads read, as
            // at a `pause`: a flag checked before a Rust `thread::park`. Watched, the look
            // after the wake names the store that ended the wait, and another thread's look
            // that found that flag already set (it never slept) the store it read
            // (`sim_frontend::tracer::spinwait`).
            watch_last_loads(t, SLEEP_FAR);
        }
        // WAKE, UNLOCK_PI, WAKE_BITSET
        1 | 7 | 10 => t.mark(Op::FutexWake, &[addr, count]),
        // REQUEUE, CMP_REQUEUE, WAKE_OP, CMP_REQUEUE_PI: wake on both addresses.
        3 | 4 | 5 | 12 => {
            t.mark(Op::FutexWake, &[addr, count]);
            t.mark(Op::FutexWake, &[addr2, 0]);
        }
        _ => {}
    }
}

extern "C" fn on_syscall_ret(_id: PluginId, vcpu: c_uint, num: i64, ret: i64) {
    // Parked for the call (`on_syscall`): the state is the owner's again, unless the exiting
    // thread took it meanwhile.
    if !claim(vcpu) {
        return;
    }
    syscall_return(vcpu, num, ret);
    with_state(vcpu, |t| park(vcpu, t, false));
}

fn syscall_return(vcpu: c_uint, num: i64, ret: i64) {
    if matches!(num, SYS_DUP | SYS_DUP2 | SYS_DUP3 | SYS_FCNTL) {
        if let Some((old, new)) = with_state(vcpu, |t| t.dup.take())
            && ret >= 0
            && let Ok(mut m) = CHANNEL_FDS.lock()
        {
            let new = if new == NO_FD { ret as u64 } else { new };
            match m.get(&old).copied() {
                Some(streams) if new != old => {
                    m.insert(new, streams);
                }
                Some(_) => {}
                None => {
                    m.remove(&new);
                }
            }
        }
        return;
    }
    if SYS_READS.contains(&num) || SYS_WRITES.contains(&num) {
        with_state(vcpu, |t| {
            if let Some((op, stream, third)) = t.channel.take()
                && ret > 0
                && t.recording
                && t.is_open()
            {
                t.mark(op, &[stream, ret as u64, third]);
            }
        });
        return;
    }
    if num == SYS_FUTEX {
        with_state(vcpu, |t| {
            if t.futex_wait && t.is_open() {
                t.futex_wait = false;
                t.mark(Op::Done, &[ret as u64]);
            }
        });
        return;
    }
    let forked = match num {
        SYS_FORK | SYS_VFORK => true,
        SYS_CLONE => with_state(vcpu, |t| t.clone_flags & CLONE_THREAD == 0),
        _ => false,
    };
    if !forked {
        return;
    }
    if ret == 0 {
        // In the child: stop recording, and never write to the parent's files.
        FORKED_CHILD.store(true, Ordering::Relaxed);
        STOPPED.store(true, Ordering::Relaxed);
        // Only this thread exists in the child: a lock another thread held at the fork has no
        // owner here.
        ATOMIC.store(false, Ordering::Release);
        with_state(vcpu, |t| {
            t.recording = false;
            t.file = None;
            t.buf = Vec::new();
        });
    } else if ret > 0 {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Says that a write of the capture failed, and keeps the message for `threads.tsv`.
fn write_failed(msg: String) {
    say(&format!("isim plugin: {msg}\n"));
    if let Some(g) = GLOBAL.get() {
        g.errors
            .lock()
            .unwrap()
            .push(msg.replace(['\t', '\n'], " "));
    }
}

/// Writes `threads.tsv`: each thread's state, then how the process ended, its forks, the
/// atomic instructions that ran without the lock around them, the threads (and their
/// instructions) that ran untraced ([`STRAY_THREADS`]) and the pipes and like channels made
/// ([`CHANNELS`]), then one `error` line per failed write of the capture.
fn write_threads_file(end: &str) {
    let Some(g) = GLOBAL.get() else { return };
    let mut s = String::new();
    for (tid, state) in g.threads.lock().unwrap().iter() {
        s.push_str(&format!("{tid}\t{state}\n"));
    }
    s.push_str(&format!(
        "end\t{end}\nforks\t{}\nimpatient\t{}\nstray\t{}\t{}\nchannels\t{}\n",
        FORKS.load(Ordering::Relaxed),
        IMPATIENT.load(Ordering::Relaxed),
        STRAY_THREADS.load(Ordering::Relaxed),
        STRAY_INSNS.load(Ordering::Relaxed),
        CHANNELS.load(Ordering::Relaxed)
    ));
    let code = EXIT_CODE.load(Ordering::Relaxed);
    if code != i64::MIN {
        s.push_str(&format!("exit_code\t{code}\n"));
    }
    for e in g.errors.lock().unwrap().iter() {
        s.push_str(&format!("error\t{e}\n"));
    }
    // The untraced threads' atomic instructions first: a capture whose `threads.tsv` is
    // written has them whole.
    if let Ok(u) = g.untraced.lock()
        && !u.is_empty()
        && let Err(e) = std::fs::write(g.dir.join("untraced.bin"), &u[..])
    {
        s.push_str(&format!("error\tcannot write untraced.bin: {e}\n"));
    }
    // Whole or not at all: written beside, then renamed over the one written before (at the
    // program's exit call), so that a process killed meanwhile leaves one of the two.
    let tmp = g.dir.join("threads.tsv.new");
    if let Err(e) =
        std::fs::write(&tmp, s).and_then(|()| std::fs::rename(&tmp, g.dir.join("threads.tsv")))
    {
        say(&format!("isim plugin: cannot write threads.tsv: {e}\n"));
    }
}

extern "C" fn on_trans(_id: PluginId, tb: *mut Tb) {
    let Some(g) = GLOBAL.get() else { return };
    let mut st = g.statics.lock().unwrap();
    // SAFETY: `tb` and its instructions are valid for the duration of this callback.
    let n = unsafe { qemu_plugin_tb_n_insns(tb) };
    for i in 0..n {
        let (insn, vaddr, size, data) = unsafe {
            let insn = qemu_plugin_tb_get_insn(tb, i);
            (
                insn,
                qemu_plugin_insn_vaddr(insn),
                qemu_plugin_insn_size(insn),
                qemu_plugin_insn_data(insn) as *const u8,
            )
        };
        let idx = match st.by_vaddr.get(&vaddr) {
            Some(&k) => k,
            None if FORKED_CHILD.load(Ordering::Relaxed) => continue,
            None => {
                let k = st.count;
                st.count += 1;
                st.by_vaddr.insert(vaddr, k);
                let len = size.min(255);
                // SAFETY: QEMU guarantees `size` readable bytes at `data`.
                let code = unsafe { std::slice::from_raw_parts(data, len) };
                let mut rec = Vec::with_capacity(9 + len);
                rec.extend_from_slice(&vaddr.to_le_bytes());
                rec.push(len as u8);
                rec.extend_from_slice(code);
                if let Err(e) = st.file.write_all(&rec)
                    && st.error.is_none()
                {
                    st.error = Some(e.to_string());
                    write_failed(format!("cannot write static.bin: {e}"));
                }
                k
            }
        };
        let udata = idx as usize as *mut c_void;
        // SAFETY: QEMU guarantees `size` readable bytes at `data`.
        let kind =
            isim_trace_protocol::atomic_kind(unsafe { std::slice::from_raw_parts(data, size) });
        let atomic = kind.is_some();
        // SAFETY: as above.
        let pause = size == 2 && unsafe { *data == 0xf3 && *data.add(1) == 0x90 };
        let (exec_cb, mem_cb): (UdataCb, MemCb) = if kind == Some(AtomicKind::Swap) {
            (on_exec_atomic, on_mem_swap)
        } else if atomic {
            (on_exec_atomic, on_mem_atomic)
        } else if pause {
            (on_exec_pause, on_mem)
        } else {
            (on_exec, on_mem)
        };
        // SAFETY: registering callbacks on an instruction of the block being translated.
        unsafe {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, exec_cb, CB_NO_REGS, udata);
            qemu_plugin_register_vcpu_mem_cb(insn, mem_cb, CB_NO_REGS, MEM_RW, udata);
        }
    }
}

extern "C" fn on_exit(_id: PluginId, _udata: *mut c_void) {
    STOPPED.store(true, Ordering::Relaxed);
    if FORKED_CHILD.load(Ordering::Relaxed) {
        return;
    }
    // The exiting thread flushed its buffer at its exit_group call, and the threads parked in
    // untraced calls with it; threads still running traced code elsewhere cannot be touched
    // safely and are reported as cut.
    write_threads_file("exit");
}

/// Called by QEMU when the plugin loads. Arguments: `dir=PATH` (required, the capture
/// directory) and `roi=all|main` (default `main`).
///
/// # Safety
/// Called by QEMU with `argc` valid C strings in `argv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qemu_plugin_install(
    id: PluginId,
    _info: *const c_void,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    let mut dir = None;
    let mut roi = Roi::Main;
    for i in 0..argc.max(0) as usize {
        // SAFETY: QEMU passes `argc` valid strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(i)) }.to_string_lossy();
        match arg.split_once('=') {
            Some(("dir", v)) => dir = Some(PathBuf::from(v)),
            Some(("roi", "all")) => roi = Roi::All,
            Some(("roi", "main")) => roi = Roi::Main,
            _ => {
                say(&format!(
                    "isim plugin: unknown argument `{arg}` (expected dir=PATH, roi=all|main)\n"
                ));
                return 1;
            }
        }
    }
    let Some(dir) = dir else {
        say("isim plugin: missing argument dir=PATH\n");
        return 1;
    };
    let file = match File::create(dir.join("static.bin")) {
        Ok(f) => f,
        Err(e) => {
            say(&format!(
                "isim plugin: cannot create {}/static.bin: {e}\n",
                dir.display()
            ));
            return 1;
        }
    };
    let g = Global {
        dir,
        roi,
        statics: Mutex::new(Statics {
            by_vaddr: HashMap::new(),
            file,
            count: 0,
            error: None,
        }),
        threads: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
        untraced: Mutex::new(Vec::new()),
    };
    if GLOBAL.set(g).is_err() {
        return 1;
    }
    // SAFETY: looks up a data symbol of the QEMU executable (RTLD_DEFAULT is the null handle
    // in glibc); it is read only when guest code runs.
    let at = unsafe { dlsym(std::ptr::null_mut(), c"guest_base".as_ptr()) };
    let _ = GUEST_BASE.set((!at.is_null()).then_some(at as usize));
    // SAFETY: registering this plugin's callbacks.
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
        qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
        qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
        qemu_plugin_register_atexit_cb(id, on_exit, std::ptr::null_mut());
    }
    0
}
