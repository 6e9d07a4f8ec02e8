//! The interposition library of `isim trace`, preloaded into the traced program (`LD_PRELOAD`
//! in the guest). It wraps `main` and the pthread calls whose arguments the simulator needs —
//! create/join (which thread), barriers (which one, how many participants), mutexes and
//! condition variables (which object) — and hands them to the QEMU plugin as magic system calls
//! (`isim_trace_protocol`), since plugin API v1 cannot read registers.
//!
//! Every wrapper first stops the plugin's recording (its own bookkeeping, a `dlsym` on first
//! use, a `malloc`, are not the program's work), then names the operation. Around each real
//! pthread call the plugin stays stopped (the simulator replays the
//! synchronization itself, so spinning and futex waits inside the library are not traced), and
//! `isim trace` drops the instructions of this library itself. Natively (no QEMU) the magic
//! calls fail with `ENOSYS` and the wrappers only forward.
//!
//! Created threads are numbered in creation order (the main thread is 0); a wrapped start
//! routine announces its number before it runs, so the plugin can key streams by it.
#![allow(unsafe_code)]
#![allow(missing_docs)]
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use isim_trace_protocol::{Op, SEM_UNKNOWN, SYS_BASE};
use libc::{pthread_attr_t, pthread_t};

#[inline(always)]
fn magic(op: Op, a1: u64, a2: u64) {
    magic3(op, a1, a2, 0);
}

#[inline(always)]
fn magic3(op: Op, a1: u64, a2: u64, a3: u64) {
    let num = SYS_BASE + op as i64;
    // SAFETY: a system call with an unused number; the kernel (or QEMU) returns -ENOSYS and
    // touches nothing but rax, rcx and r11.
    unsafe {
        core::arch::asm!(
            "syscall",
            inout("rax") num => _,
            in("rdi") a1,
            in("rsi") a2,
            in("rdx") a3,
            out("rcx") _,
            out("r11") _,
            options(nostack),
        );
    }
}

thread_local! {
    /// How many wrapped calls the thread is inside: recording stops when the first is entered
    /// and resumes when the last returns, so a runtime call that makes others (libgomp's
    /// `GOMP_parallel` creating its threads) stays untraced as a whole.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The OpenMP region the thread works in (its id, team size), for its barriers.
    static REGION: Cell<(u64, u64)> = const { Cell::new((0, 1)) };
}

/// Entering a wrapped call: stops recording (before touching thread-local storage, whose
/// accesses run code of the dynamic loader); returns how many wrapped calls the thread was
/// already inside.
#[inline(always)]
fn enter() -> u32 {
    magic(Op::Suppress, 0, 0);
    DEPTH.with(|c| {
        let d = c.get();
        c.set(d + 1);
        d
    })
}

/// Leaving a wrapped call: resumes recording when it was the outermost one.
#[inline(always)]
fn leave() {
    let d = DEPTH.with(|c| {
        let d = c.get().saturating_sub(1);
        c.set(d);
        d
    });
    if d == 0 {
        magic(Op::Resume, 0, 0);
    }
}

/// The blocking call named by the last marker returned with `r` (its sequence number is the
/// moment, e.g. of a mutex acquisition).
#[inline(always)]
fn done(r: c_int) {
    magic(Op::Done, r as i64 as u64, 0);
}

/// Looks up the next definition of `name` (the real function behind this wrapper).
unsafe fn next(name: &CStr) -> *mut c_void {
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() {
        let _ = writeln!(
            std::io::stderr(),
            "isim preload: cannot find the real {}",
            name.to_string_lossy()
        );
        std::process::abort();
    }
    p
}

macro_rules! real {
    ($name:literal, $ty:ty) => {{
        static SLOT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let p = *SLOT.get_or_init(|| unsafe { next($name) } as usize);
        // SAFETY: the symbol has this C signature.
        unsafe { std::mem::transmute::<usize, $ty>(p) }
    }};
}

static NEXT_SEQ: AtomicU32 = AtomicU32::new(1);
/// `pthread_t` of each thread created through the wrapper, with its number.
static CREATED: Mutex<Vec<(pthread_t, u32)>> = Mutex::new(Vec::new());
/// Participant count of each initialised barrier, by address.
static BARRIERS: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());

/// Semaphores `sem_init` initialized: (address, initial value).
static SEMAPHORES: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());

/// The initial value `sem_init` gave the semaphore at `s`, or [`SEM_UNKNOWN`].
fn sem_initial(s: *mut libc::sem_t) -> u64 {
    SEMAPHORES
        .lock()
        .unwrap()
        .iter()
        .find(|e| e.0 == s as usize)
        .map_or(SEM_UNKNOWN, |e| u64::from(e.1))
}

thread_local! {
    static SEQ: Cell<u32> = const { Cell::new(0) };
}

type MainFn = extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;
/// The program's own `main`, as passed to `__libc_start_main`.
static REAL_MAIN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn main_wrapper(argc: c_int, argv: *mut *mut c_char, envp: *mut *mut c_char) -> c_int {
    write_modules();
    forget_environment();
    install_crash_handlers();
    let f = REAL_MAIN.load(Ordering::Relaxed);
    // SAFETY: stored by __libc_start_main below from the program's own `main`.
    let main: MainFn = unsafe { std::mem::transmute::<usize, MainFn>(f) };
    // The main thread's stack, for the spin-wait finder (a call's return address pushed in a
    // polling loop is the thread's own business, not a store another thread could see).
    let (lo, hi) = own_stack();
    magic(Op::MainBegin, lo, hi);
    let r = main(argc, argv, envp);
    magic(Op::MainEnd, 0, 0);
    r
}

type StartMain = unsafe extern "C" fn(
    MainFn,
    c_int,
    *mut *mut c_char,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
) -> c_int;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_start_main(
    main: MainFn,
    argc: c_int,
    argv: *mut *mut c_char,
    init: *mut c_void,
    fini: *mut c_void,
    rtld_fini: *mut c_void,
    stack_end: *mut c_void,
) -> c_int {
    REAL_MAIN.store(main as usize, Ordering::Relaxed);
    let real = real!(c"__libc_start_main", StartMain);
    unsafe { real(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end) }
}

/// Writes `modules.tsv` into `$ISIM_CAPTURE_DIR`: each loaded object's load bias, executable
/// segment range and path, so that `isim trace` can map addresses to files and lines.
fn write_modules() {
    let Some(dir) = std::env::var_os("ISIM_CAPTURE_DIR") else {
        return;
    };
    let mut out = String::new();
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader passes a valid info record; `data` is our String.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut String)) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        for i in 0..info.dlpi_phnum as usize {
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                let start = info.dlpi_addr.wrapping_add(ph.p_vaddr);
                out.push_str(&format!(
                    "{:#x}\t{:#x}\t{:#x}\t{}\n",
                    info.dlpi_addr,
                    start,
                    start.wrapping_add(ph.p_memsz),
                    name
                ));
            }
        }
        0
    }
    // SAFETY: a plain iteration with a callback that only reads.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut out as *mut String as *mut c_void) };
    let path = std::path::Path::new(&dir).join("modules.tsv");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| f.write_all(out.as_bytes()));
    if let Err(e) = written {
        let _ = writeln!(
            std::io::stderr(),
            "isim preload: cannot write {}: {e}",
            path.display()
        );
    }
}

/// Removes this library and the capture directory from the environment, so that programs the
/// traced one executes (natively: QEMU does not follow exec) do not load it and overwrite the
/// capture's files.
fn forget_environment() {
    let keep: Vec<String> = std::env::var("LD_PRELOAD")
        .unwrap_or_default()
        .split([':', ' '])
        .filter(|p| !p.is_empty() && !p.ends_with("libisim_preload.so"))
        .map(str::to_string)
        .collect();
    // SAFETY: called before `main`, while the process has a single thread.
    unsafe {
        std::env::remove_var("ISIM_CAPTURE_DIR");
        if keep.is_empty() {
            std::env::remove_var("LD_PRELOAD");
        } else {
            std::env::set_var("LD_PRELOAD", keep.join(":"));
        }
    }
}

extern "C" fn on_fatal(sig: c_int) {
    magic(Op::Crash, sig as u64, 0);
    // Back to the default action; returning re-runs the faulting instruction (or, for a
    // raised signal, the signal is raised again) and the process dies as it would have.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// On a fatal signal, lets the plugin write out the crashing thread's buffer first. A program
/// that installs its own handlers replaces these.
fn install_crash_handlers() {
    for sig in [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGFPE,
        libc::SIGILL,
        libc::SIGABRT,
    ] {
        // SAFETY: installing a plain handler.
        unsafe { libc::signal(sig, on_fatal as *const () as libc::sighandler_t) };
    }
}

struct Start {
    f: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
    seq: u32,
    /// Created inside another wrapped call (a threading runtime's own thread, e.g. libgomp's
    /// pool): the thread starts untraced, until the runtime runs the program's code in it.
    quiet: bool,
}

/// The calling thread's stack (with its thread-local storage, which glibc keeps in the same
/// block): `[lo, hi)`, or `(0, 0)` if the C library cannot say. Called before the thread is
/// recorded, so none of it is traced.
fn own_stack() -> (u64, u64) {
    // SAFETY: `attr` is initialised by pthread_getattr_np before it is read, and destroyed
    // once; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return (0, 0);
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if !ok || addr.is_null() {
            return (0, 0);
        }
        (addr as u64, addr as u64 + size as u64)
    }
}

extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Box leaked by pthread_create below, received exactly once.
    let s = unsafe { Box::from_raw(p as *mut Start) };
    SEQ.with(|c| c.set(s.seq));
    let (lo, hi) = own_stack();
    magic3(Op::ThreadStart, s.seq as u64, lo, hi);
    if s.quiet {
        enter();
    }
    let r = (s.f)(s.arg);
    magic(Op::ThreadEnd, 0, 0);
    r
}

type CreateFn = unsafe extern "C" fn(
    *mut pthread_t,
    *const pthread_attr_t,
    extern "C" fn(*mut c_void) -> *mut c_void,
    *mut c_void,
) -> c_int;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let quiet = enter() > 0;
    let real = real!(c"pthread_create", CreateFn);
    let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
    let boxed = Box::into_raw(Box::new(Start {
        f: start,
        arg,
        seq,
        quiet,
    })) as *mut c_void;
    let r = unsafe { real(thread, attr, trampoline, boxed) };
    if r == 0 {
        CREATED.lock().unwrap().push((unsafe { *thread }, seq));
        magic(Op::Create, seq as u64, 0);
    } else {
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(boxed as *mut Start) });
    }
    leave();
    r
}

/// The thread number of the thread `handle` names: the C library reuses a joined thread's
/// handle for a later thread, so the handle names the latest thread created with it.
fn created_seq(handle: pthread_t) -> Option<u32> {
    CREATED
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e.0 == handle)
        .map(|e| e.1)
}

/// A successful join forgets the handle's thread.
fn forget_joined(seq: u32) {
    let mut created = CREATED.lock().unwrap();
    if let Some(i) = created.iter().rposition(|e| e.1 == seq) {
        created.remove(i);
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(thread: pthread_t, retval: *mut *mut c_void) -> c_int {
    enter();
    let real = real!(
        c"pthread_join",
        unsafe extern "C" fn(pthread_t, *mut *mut c_void) -> c_int
    );
    let seq = created_seq(thread);
    if let Some(s) = seq {
        magic(Op::Join, s as u64, 0);
    }
    let r = unsafe { real(thread, retval) };
    if let Some(s) = seq {
        done(r);
        if r == 0 {
            forget_joined(s);
        }
    }
    leave();
    r
}

/// A join that may fail (a try that found the thread running, a timeout): marked after the
/// call, and only when it joined (the thread had ended: replay waits for its end in
/// simulated time); a failed one joined nothing. `$call` runs the real function.
macro_rules! join_if_joined {
    ($thread:expr, $call:expr) => {{
        enter();
        let r = $call;
        if r == 0
            && let Some(s) = created_seq($thread)
        {
            magic(Op::Join, s as u64, 0);
            done(r);
            forget_joined(s);
        }
        leave();
        r
    }};
}

/// glibc's `pthread_tryjoin_np` (a join that does not wait).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_tryjoin_np(thread: pthread_t, retval: *mut *mut c_void) -> c_int {
    let real = real!(
        c"pthread_tryjoin_np",
        unsafe extern "C" fn(pthread_t, *mut *mut c_void) -> c_int
    );
    join_if_joined!(thread, unsafe { real(thread, retval) })
}

/// glibc's `pthread_timedjoin_np` (a join with a timeout on the realtime clock).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_timedjoin_np(
    thread: pthread_t,
    retval: *mut *mut c_void,
    t: *const libc::timespec,
) -> c_int {
    let real = real!(
        c"pthread_timedjoin_np",
        unsafe extern "C" fn(pthread_t, *mut *mut c_void, *const libc::timespec) -> c_int
    );
    join_if_joined!(thread, unsafe { real(thread, retval, t) })
}

/// glibc's `pthread_clockjoin_np` (2.31: a join with a timeout on a given clock).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_clockjoin_np(
    thread: pthread_t,
    retval: *mut *mut c_void,
    clock: libc::clockid_t,
    t: *const libc::timespec,
) -> c_int {
    let real = real!(
        c"pthread_clockjoin_np",
        unsafe extern "C" fn(
            pthread_t,
            *mut *mut c_void,
            libc::clockid_t,
            *const libc::timespec,
        ) -> c_int
    );
    join_if_joined!(thread, unsafe { real(thread, retval, clock, t) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_exit(retval: *mut c_void) -> ! {
    enter();
    let real = real!(c"pthread_exit", unsafe extern "C" fn(*mut c_void) -> !);
    if SEQ.with(|c| c.get()) == 0 {
        magic(Op::MainEnd, 0, 0);
    } else {
        magic(Op::ThreadEnd, 0, 0);
    }
    unsafe { real(retval) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_barrier_init(
    b: *mut libc::pthread_barrier_t,
    attr: *const libc::pthread_barrierattr_t,
    count: libc::c_uint,
) -> c_int {
    enter();
    let real = real!(
        c"pthread_barrier_init",
        unsafe extern "C" fn(
            *mut libc::pthread_barrier_t,
            *const libc::pthread_barrierattr_t,
            libc::c_uint,
        ) -> c_int
    );
    let r = unsafe { real(b, attr, count) };
    if r == 0 {
        let mut t = BARRIERS.lock().unwrap();
        t.retain(|e| e.0 != b as usize);
        t.push((b as usize, count));
    }
    leave();
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut libc::pthread_barrier_t) -> c_int {
    enter();
    let real = real!(
        c"pthread_barrier_wait",
        unsafe extern "C" fn(*mut libc::pthread_barrier_t) -> c_int
    );
    let count = BARRIERS
        .lock()
        .unwrap()
        .iter()
        .find(|e| e.0 == b as usize)
        .map_or(0, |e| e.1);
    magic(Op::Barrier, b as u64, count as u64);
    let r = unsafe { real(b) };
    done(r);
    leave();
    r
}

/// A call on one object (a mutex, a condition, a spin lock, a semaphore) marked before it
/// runs by `$op` with the object's address and `$a2` (for a lock: 1 if its implementation
/// spins on a held word; for a semaphore its initial value; for a condition wait its mutex),
/// and by its result after it (the conversion drops a call that failed: a timeout, an error).
/// `$arg: $aty` are the call's other parameters, passed through.
macro_rules! one_object {
    ($name:ident, $sym:literal, $obj:ident: $ty:ty, $op:expr, $a2:expr $(, $arg:ident: $aty:ty)*) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($obj: *mut $ty $(, $arg: $aty)*) -> c_int {
            enter();
            let real = real!($sym, unsafe extern "C" fn(*mut $ty $(, $aty)*) -> c_int);
            magic($op, $obj as u64, $a2);
            let r = unsafe { real($obj $(, $arg)*) };
            done(r);
            leave();
            r
        }
    };
}

/// A try-lock call: marked by `$op` (with `$a2`, as [`one_object!`]) only when it took the
/// lock; a failed try takes nothing and leaves no marker.
macro_rules! try_lock {
    ($name:ident, $sym:literal, $obj:ident: $ty:ty, $op:expr, $a2:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($obj: *mut $ty) -> c_int {
            enter();
            let real = real!($sym, unsafe extern "C" fn(*mut $ty) -> c_int);
            let r = unsafe { real($obj) };
            if r == 0 {
                magic($op, $obj as u64, $a2);
                done(r);
            }
            leave();
            r
        }
    };
}

one_object!(
    pthread_mutex_lock,
    c"pthread_mutex_lock",
    m: libc::pthread_mutex_t,
    Op::MutexLock,
    0
);
one_object!(
    pthread_mutex_unlock,
    c"pthread_mutex_unlock",
    m: libc::pthread_mutex_t,
    Op::MutexUnlock,
    0
);
one_object!(
    pthread_cond_signal,
    c"pthread_cond_signal",
    m: libc::pthread_cond_t,
    Op::CondSignal,
    0
);
one_object!(
    pthread_cond_broadcast,
    c"pthread_cond_broadcast",
    m: libc::pthread_cond_t,
    Op::CondBroadcast,
    0
);

// glibc's spin lock (`pthread_spin_*`): a lock whose waiters spin on its word and never sleep.
// Marked as a mutex that spins, so that replay arbitrates it in simulated time; its spinning
// stays untraced like the other lock calls' code.
one_object!(
    pthread_spin_lock,
    c"pthread_spin_lock",
    m: libc::pthread_spinlock_t,
    Op::MutexLock,
    1
);
// glibc frees a spin lock with a plain store (`movl $1`), which the thread does not wait for:
// the unlock's second argument says so (a mutex's unlock is a locked exchange).
one_object!(
    pthread_spin_unlock,
    c"pthread_spin_unlock",
    m: libc::pthread_spinlock_t,
    Op::MutexUnlock,
    1
);

try_lock!(
    pthread_spin_trylock,
    c"pthread_spin_trylock",
    m: libc::pthread_spinlock_t,
    Op::MutexLock,
    1
);

// POSIX semaphores (`sem_*`): a wait takes one unit, a post gives one; replay hands the units
// out in simulated time, from the initial value `sem_init` gave.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_init(
    s: *mut libc::sem_t,
    pshared: c_int,
    value: libc::c_uint,
) -> c_int {
    enter();
    let real = real!(
        c"sem_init",
        unsafe extern "C" fn(*mut libc::sem_t, c_int, libc::c_uint) -> c_int
    );
    let r = unsafe { real(s, pshared, value) };
    if r == 0 {
        let mut t = SEMAPHORES.lock().unwrap();
        t.retain(|e| e.0 != s as usize);
        t.push((s as usize, value));
    }
    leave();
    r
}

one_object!(sem_wait, c"sem_wait", s: libc::sem_t, Op::SemWait, sem_initial(s));
one_object!(sem_post, c"sem_post", s: libc::sem_t, Op::SemPost, sem_initial(s));

try_lock!(sem_trywait, c"sem_trywait", s: libc::sem_t, Op::SemWait, sem_initial(s));

one_object!(
    sem_timedwait,
    c"sem_timedwait",
    s: libc::sem_t,
    Op::SemWait,
    sem_initial(s),
    t: *const libc::timespec
);

// `sem_clockwait` (glibc 2.30): `sem_timedwait` on a given clock.
one_object!(
    sem_clockwait,
    c"sem_clockwait",
    s: libc::sem_t,
    Op::SemWait,
    sem_initial(s),
    clock: libc::clockid_t,
    t: *const libc::timespec
);

// Read/write locks (`pthread_rwlock_*`, behind C++'s `std::shared_mutex`): several readers
// hold one at once, so their acquisitions have markers of their own; replay arbitrates them in
// simulated time. The unlock is a mutex unlock (the replay knows which way the thread holds it).
one_object!(
    pthread_rwlock_rdlock,
    c"pthread_rwlock_rdlock",
    m: libc::pthread_rwlock_t,
    Op::RwRead,
    0
);
one_object!(
    pthread_rwlock_wrlock,
    c"pthread_rwlock_wrlock",
    m: libc::pthread_rwlock_t,
    Op::RwWrite,
    0
);
one_object!(
    pthread_rwlock_unlock,
    c"pthread_rwlock_unlock",
    m: libc::pthread_rwlock_t,
    Op::MutexUnlock,
    0
);

try_lock!(
    pthread_rwlock_tryrdlock,
    c"pthread_rwlock_tryrdlock",
    m: libc::pthread_rwlock_t,
    Op::RwRead,
    0
);
try_lock!(
    pthread_rwlock_trywrlock,
    c"pthread_rwlock_trywrlock",
    m: libc::pthread_rwlock_t,
    Op::RwWrite,
    0
);

// Lock calls with a timeout: `timedlock` forms take the object and an absolute time on the
// realtime clock; `clock` forms (glibc 2.30, behind C++'s `std::timed_mutex::try_lock_for`
// and `std::shared_timed_mutex`, which libstdc++ times on the steady clock) a clock between.
// One that timed out took nothing: the conversion drops it by its result.
one_object!(
    pthread_rwlock_timedrdlock,
    c"pthread_rwlock_timedrdlock",
    l: libc::pthread_rwlock_t,
    Op::RwRead,
    0,
    t: *const libc::timespec
);
one_object!(
    pthread_rwlock_timedwrlock,
    c"pthread_rwlock_timedwrlock",
    l: libc::pthread_rwlock_t,
    Op::RwWrite,
    0,
    t: *const libc::timespec
);
one_object!(
    pthread_rwlock_clockrdlock,
    c"pthread_rwlock_clockrdlock",
    l: libc::pthread_rwlock_t,
    Op::RwRead,
    0,
    clock: libc::clockid_t,
    t: *const libc::timespec
);
one_object!(
    pthread_rwlock_clockwrlock,
    c"pthread_rwlock_clockwrlock",
    l: libc::pthread_rwlock_t,
    Op::RwWrite,
    0,
    clock: libc::clockid_t,
    t: *const libc::timespec
);
one_object!(
    pthread_mutex_timedlock,
    c"pthread_mutex_timedlock",
    l: libc::pthread_mutex_t,
    Op::MutexLock,
    0,
    t: *const libc::timespec
);
one_object!(
    pthread_mutex_clocklock,
    c"pthread_mutex_clocklock",
    l: libc::pthread_mutex_t,
    Op::MutexLock,
    0,
    clock: libc::clockid_t,
    t: *const libc::timespec
);

try_lock!(
    pthread_mutex_trylock,
    c"pthread_mutex_trylock",
    m: libc::pthread_mutex_t,
    Op::MutexLock,
    0
);

one_object!(
    pthread_cond_wait,
    c"pthread_cond_wait",
    c: libc::pthread_cond_t,
    Op::CondWait,
    m as u64,
    m: *mut libc::pthread_mutex_t
);

one_object!(
    pthread_cond_timedwait,
    c"pthread_cond_timedwait",
    c: libc::pthread_cond_t,
    Op::CondWait,
    m as u64,
    m: *mut libc::pthread_mutex_t,
    t: *const libc::timespec
);

// `pthread_cond_clockwait` (glibc 2.30): `pthread_cond_timedwait` on a given clock, which
// libstdc++'s `std::condition_variable::wait_for` and `wait_until` call on the steady clock.
one_object!(
    pthread_cond_clockwait,
    c"pthread_cond_clockwait",
    c: libc::pthread_cond_t,
    Op::CondWait,
    m as u64,
    m: *mut libc::pthread_mutex_t,
    clock: libc::clockid_t,
    t: *const libc::timespec
);

// ---------------------------------------------------------------------------------------------
// Pipes, eventfds and socket pairs: threads that pass data through one wait in `read` for
// another's `write`. The plugin is told their file descriptors and watches the system calls
// that read and write them (glibc's `eventfd_read`, stdio on a pipe and `send` all end in
// one), so that replay makes a read wait for the write that gave it its bytes.

/// Tells the plugin of a channel the program made (`kind`: 0 pipe, 1 eventfd, 2 socket
/// pair) with file descriptors `a` and `b` (an eventfd's twice).
fn channel_made(r: c_int, kind: u64, a: c_int, b: c_int) {
    if r >= 0 {
        magic3(Op::Channel, kind, a as u64, b as u64);
    }
}

/// [`channel_made`] for a call that filled `fds[0..2]`.
fn channel_pair_made(r: c_int, kind: u64, fds: *const c_int) {
    if r >= 0 && !fds.is_null() {
        // SAFETY: the call succeeded, so it wrote two descriptors there.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        channel_made(r, kind, a, b);
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pipe(fds: *mut c_int) -> c_int {
    enter();
    let real = real!(c"pipe", unsafe extern "C" fn(*mut c_int) -> c_int);
    let r = unsafe { real(fds) };
    channel_pair_made(r, 0, fds);
    leave();
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    enter();
    let real = real!(c"pipe2", unsafe extern "C" fn(*mut c_int, c_int) -> c_int);
    let r = unsafe { real(fds, flags) };
    channel_pair_made(r, 0, fds);
    leave();
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn eventfd(init: libc::c_uint, flags: c_int) -> c_int {
    enter();
    let real = real!(
        c"eventfd",
        unsafe extern "C" fn(libc::c_uint, c_int) -> c_int
    );
    let r = unsafe { real(init, flags) };
    channel_made(r, 1, r, r);
    leave();
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn socketpair(
    domain: c_int,
    ty: c_int,
    protocol: c_int,
    sv: *mut c_int,
) -> c_int {
    enter();
    let real = real!(
        c"socketpair",
        unsafe extern "C" fn(c_int, c_int, c_int, *mut c_int) -> c_int
    );
    let r = unsafe { real(domain, ty, protocol, sv) };
    channel_pair_made(r, 2, sv);
    leave();
    r
}

// ---------------------------------------------------------------------------------------------
// C11 threads (`<threads.h>`): glibc implements them on its internal pthread functions, which
// the wrappers above never see (a program of `thrd_create` threads traced as its main thread
// alone, the workers' instructions lost). They are wrapped here as the pthread calls they are:
// `thrd_t` is a `pthread_t`, `mtx_t` and `cnd_t` hold a pthread mutex and condition at their
// own address. Their results are C11's `thrd_*` codes: 0 is success, as for pthread calls, so
// the conversion reads a failed lock (busy, timed out) the same way.

/// C11's result for a pthread error code, as glibc maps them.
fn c11_result(r: c_int) -> c_int {
    const THRD_SUCCESS: c_int = 0;
    const THRD_BUSY: c_int = 1;
    const THRD_ERROR: c_int = 2;
    const THRD_NOMEM: c_int = 3;
    const THRD_TIMEDOUT: c_int = 4;
    match r {
        0 => THRD_SUCCESS,
        libc::EBUSY => THRD_BUSY,
        libc::ENOMEM => THRD_NOMEM,
        libc::ETIMEDOUT => THRD_TIMEDOUT,
        _ => THRD_ERROR,
    }
}

/// A C11 thread's start routine and argument, for [`c11_start`].
struct C11Start {
    f: extern "C" fn(*mut c_void) -> c_int,
    arg: *mut c_void,
}

/// Runs a C11 start routine as a POSIX one: its `int` result travels in the `void *` that
/// `pthread_join` returns, as in glibc.
extern "C" fn c11_start(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Box leaked by thrd_create below, received exactly once.
    let s = unsafe { Box::from_raw(p as *mut C11Start) };
    (s.f)(s.arg) as isize as *mut c_void
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn thrd_create(
    thr: *mut pthread_t,
    f: extern "C" fn(*mut c_void) -> c_int,
    arg: *mut c_void,
) -> c_int {
    let boxed = Box::into_raw(Box::new(C11Start { f, arg })) as *mut c_void;
    // SAFETY: the wrapper above, with the caller's handle and no attributes.
    let r = unsafe { pthread_create(thr, std::ptr::null(), c11_start, boxed) };
    if r != 0 {
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(boxed as *mut C11Start) });
    }
    c11_result(r)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn thrd_join(thr: pthread_t, res: *mut c_int) -> c_int {
    let mut v: *mut c_void = std::ptr::null_mut();
    // SAFETY: the wrapper above, with a local for the result.
    let r = unsafe { pthread_join(thr, &mut v) };
    if r == 0 && !res.is_null() {
        // SAFETY: the caller's result slot.
        unsafe { *res = v as isize as c_int };
    }
    c11_result(r)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn thrd_exit(res: c_int) -> ! {
    // SAFETY: the wrapper above.
    unsafe { pthread_exit(res as isize as *mut c_void) }
}

one_object!(mtx_lock, c"mtx_lock", m: c_void, Op::MutexLock, 0);
one_object!(mtx_unlock, c"mtx_unlock", m: c_void, Op::MutexUnlock, 0);
try_lock!(mtx_trylock, c"mtx_trylock", m: c_void, Op::MutexLock, 0);
one_object!(
    mtx_timedlock,
    c"mtx_timedlock",
    l: c_void,
    Op::MutexLock,
    0,
    t: *const libc::timespec
);
one_object!(cnd_signal, c"cnd_signal", m: c_void, Op::CondSignal, 0);
one_object!(
    cnd_broadcast,
    c"cnd_broadcast",
    m: c_void,
    Op::CondBroadcast,
    0
);

one_object!(cnd_wait, c"cnd_wait", c: c_void, Op::CondWait, m as u64, m: *mut c_void);

one_object!(
    cnd_timedwait,
    c"cnd_timedwait",
    c: c_void,
    Op::CondWait,
    m as u64,
    m: *mut c_void,
    t: *const libc::timespec
);

// ---------------------------------------------------------------------------------------------
// OpenMP (gcc's libgomp): the entry points the compiler emits. A parallel region's outlined
// function is wrapped so that every team thread marks where the region's body begins (the
// team's fork, replayed as a barrier of the team: a pool thread's idle time before it is
// synchronization, not work) and ends (the region's implicit barrier); libgomp's own code,
// its spinning and its futex waits stay untraced. Worksharing-loop chunk calls
// (`GOMP_loop_*_start`/`_next`) are not wrapped: their few instructions are traced as the
// runtime's work, and each thread's trace holds the chunks it took.

/// Region ids: one per `GOMP_parallel*` call, tagged so they never equal a barrier address.
static NEXT_REGION: AtomicU64 = AtomicU64::new(1);
const REGION_TAG: u64 = 0x6f6d_7000_0000_0000;

/// What the wrapper of an outlined function needs (on the encountering thread's stack, which
/// outlives the region).
#[repr(C)]
struct Region {
    f: extern "C" fn(*mut c_void),
    data: *mut c_void,
    id: u64,
}

type OmpInt = unsafe extern "C" fn() -> c_int;

extern "C" fn omp_body(p: *mut c_void) {
    // SAFETY: `p` is the `Region` of the GOMP_parallel* call running this region.
    let r = unsafe { &*(p as *const Region) };
    let (f, data, id) = (r.f, r.data, r.id);
    let num_threads = real!(c"omp_get_num_threads", OmpInt);
    let thread_num = real!(c"omp_get_thread_num", OmpInt);
    // SAFETY: plain libgomp queries, called inside the region.
    let (team, me) = unsafe { (num_threads().max(1) as u64, thread_num().max(0) as u64) };
    let saved_region = REGION.with(|c| c.replace((id, team)));
    let saved = DEPTH.with(|c| c.replace(1));
    magic3(Op::OmpBegin, id, me, team);
    leave();
    f(data);
    enter();
    magic(Op::OmpEnd, id, team);
    DEPTH.with(|c| c.set(saved));
    REGION.with(|c| c.set(saved_region));
}

fn new_region(f: extern "C" fn(*mut c_void), data: *mut c_void) -> Region {
    Region {
        f,
        data,
        id: REGION_TAG | NEXT_REGION.fetch_add(1, Ordering::Relaxed),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel(
    f: extern "C" fn(*mut c_void),
    data: *mut c_void,
    num_threads: libc::c_uint,
    flags: libc::c_uint,
) {
    enter();
    let real = real!(
        c"GOMP_parallel",
        unsafe extern "C" fn(extern "C" fn(*mut c_void), *mut c_void, libc::c_uint, libc::c_uint)
    );
    let mut r = new_region(f, data);
    unsafe {
        real(
            omp_body,
            &mut r as *mut Region as *mut c_void,
            num_threads,
            flags,
        )
    };
    leave();
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_sections(
    f: extern "C" fn(*mut c_void),
    data: *mut c_void,
    num_threads: libc::c_uint,
    count: libc::c_uint,
    flags: libc::c_uint,
) {
    enter();
    let real = real!(
        c"GOMP_parallel_sections",
        unsafe extern "C" fn(
            extern "C" fn(*mut c_void),
            *mut c_void,
            libc::c_uint,
            libc::c_uint,
            libc::c_uint,
        )
    );
    let mut r = new_region(f, data);
    unsafe {
        real(
            omp_body,
            &mut r as *mut Region as *mut c_void,
            num_threads,
            count,
            flags,
        )
    };
    leave();
}

/// `GOMP_parallel_loop_<schedule>(fn, data, num_threads, start, end, incr, chunk, flags)`.
macro_rules! omp_parallel_loop {
    ($name:ident, $sym:literal) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            f: extern "C" fn(*mut c_void),
            data: *mut c_void,
            num_threads: libc::c_uint,
            start: libc::c_long,
            end: libc::c_long,
            incr: libc::c_long,
            chunk: libc::c_long,
            flags: libc::c_uint,
        ) {
            enter();
            let real = real!(
                $sym,
                unsafe extern "C" fn(
                    extern "C" fn(*mut c_void),
                    *mut c_void,
                    libc::c_uint,
                    libc::c_long,
                    libc::c_long,
                    libc::c_long,
                    libc::c_long,
                    libc::c_uint,
                )
            );
            let mut r = new_region(f, data);
            let p = &mut r as *mut Region as *mut c_void;
            unsafe { real(omp_body, p, num_threads, start, end, incr, chunk, flags) };
            leave();
        }
    };
}

/// `GOMP_parallel_loop_<runtime schedule>(fn, data, num_threads, start, end, incr, flags)`.
macro_rules! omp_parallel_loop_runtime {
    ($name:ident, $sym:literal) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            f: extern "C" fn(*mut c_void),
            data: *mut c_void,
            num_threads: libc::c_uint,
            start: libc::c_long,
            end: libc::c_long,
            incr: libc::c_long,
            flags: libc::c_uint,
        ) {
            enter();
            let real = real!(
                $sym,
                unsafe extern "C" fn(
                    extern "C" fn(*mut c_void),
                    *mut c_void,
                    libc::c_uint,
                    libc::c_long,
                    libc::c_long,
                    libc::c_long,
                    libc::c_uint,
                )
            );
            let mut r = new_region(f, data);
            let p = &mut r as *mut Region as *mut c_void;
            unsafe { real(omp_body, p, num_threads, start, end, incr, flags) };
            leave();
        }
    };
}

omp_parallel_loop!(GOMP_parallel_loop_static, c"GOMP_parallel_loop_static");
omp_parallel_loop!(GOMP_parallel_loop_dynamic, c"GOMP_parallel_loop_dynamic");
omp_parallel_loop!(GOMP_parallel_loop_guided, c"GOMP_parallel_loop_guided");
omp_parallel_loop!(
    GOMP_parallel_loop_nonmonotonic_dynamic,
    c"GOMP_parallel_loop_nonmonotonic_dynamic"
);
omp_parallel_loop!(
    GOMP_parallel_loop_nonmonotonic_guided,
    c"GOMP_parallel_loop_nonmonotonic_guided"
);
omp_parallel_loop_runtime!(GOMP_parallel_loop_runtime, c"GOMP_parallel_loop_runtime");
omp_parallel_loop_runtime!(
    GOMP_parallel_loop_nonmonotonic_runtime,
    c"GOMP_parallel_loop_nonmonotonic_runtime"
);
omp_parallel_loop_runtime!(
    GOMP_parallel_loop_maybe_nonmonotonic_runtime,
    c"GOMP_parallel_loop_maybe_nonmonotonic_runtime"
);

/// A team barrier: explicit, or the end of a worksharing construct without `nowait`. The
/// marker follows the real barrier: libgomp runs pending tasks inside it (`task_body` records
/// them), and that work comes before the thread's arrival.
macro_rules! omp_barrier {
    ($name:ident, $sym:literal) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            enter();
            let real = real!($sym, unsafe extern "C" fn());
            let (id, team) = REGION.with(|c| c.get());
            unsafe { real() };
            magic(Op::OmpBarrier, id, team);
            done(0);
            leave();
        }
    };
}

omp_barrier!(GOMP_barrier, c"GOMP_barrier");
omp_barrier!(GOMP_loop_end, c"GOMP_loop_end");
omp_barrier!(GOMP_sections_end, c"GOMP_sections_end");

/// A runtime call with no synchronization to replay, kept out of the trace.
macro_rules! omp_quiet {
    ($name:ident, $sym:literal) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            enter();
            let real = real!($sym, unsafe extern "C" fn());
            unsafe { real() };
            leave();
        }
    };
}

// Explicit tasks. libgomp runs a deferred task wherever a team thread waits (taskwait, a
// barrier, the region's end), inside calls that stay untraced, so the task's own work would be
// lost. `GOMP_task` is wrapped so that the task function it receives is `task_body`, which
// records the real function's work on whichever thread runs it: the task's data gets a header
// naming the real function, laid out so that libgomp's own copy of the data (a `memcpy` of
// `arg_size` bytes, or the copy function, which `task_copy` wraps) carries the header along. The
// synchronization of tasks (taskwait for children, dependences) is not replayed: a task's
// work is the running thread's, placed where that thread ran it.

/// What `task_body` needs, at the start of the task's data.
#[repr(C)]
#[derive(Clone, Copy)]
struct TaskHead {
    f: extern "C" fn(*mut c_void),
    cpyfn: Option<extern "C" fn(*mut c_void, *mut c_void)>,
    /// The program's data as `GOMP_task` received it: what its copy function reads, which
    /// libgomp calls before `GOMP_task` returns.
    src: *mut c_void,
    /// Offset of the task's own data from the header.
    off: usize,
}

extern "C" fn task_body(p: *mut c_void) {
    // SAFETY: `p` is task data laid out by `GOMP_task` below (or copied from it by libgomp).
    let h = unsafe { *(p as *const TaskHead) };
    let data = unsafe { (p as *mut u8).add(h.off) } as *mut c_void;
    let saved = DEPTH.with(|c| c.replace(1));
    if saved == 0 {
        // Already recording (a task run where the program itself is traced).
        DEPTH.with(|c| c.set(0));
        (h.f)(data);
        return;
    }
    leave();
    (h.f)(data);
    enter();
    DEPTH.with(|c| c.set(saved));
}

extern "C" fn task_copy(dst: *mut c_void, src: *mut c_void) {
    // SAFETY: `src` is the header `GOMP_task` made (libgomp copies during that call, while the
    // program's data is alive); `dst` has room for the same layout.
    unsafe {
        let h = *(src as *const TaskHead);
        *(dst as *mut TaskHead) = h;
        if let Some(c) = h.cpyfn {
            c((dst as *mut u8).add(h.off) as *mut c_void, h.src);
        }
    }
}

type TaskFn = unsafe extern "C" fn(
    extern "C" fn(*mut c_void),
    *mut c_void,
    Option<extern "C" fn(*mut c_void, *mut c_void)>,
    libc::c_long,
    libc::c_long,
    bool,
    libc::c_uint,
    *mut *mut c_void,
    c_int,
    *mut c_void,
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_task(
    f: extern "C" fn(*mut c_void),
    data: *mut c_void,
    cpyfn: Option<extern "C" fn(*mut c_void, *mut c_void)>,
    arg_size: libc::c_long,
    arg_align: libc::c_long,
    if_clause: bool,
    flags: libc::c_uint,
    depend: *mut *mut c_void,
    priority: c_int,
    detach: *mut c_void,
) {
    enter();
    let real = real!(c"GOMP_task", TaskFn);
    let align = (arg_align.max(1) as usize).max(std::mem::align_of::<TaskHead>());
    let off = std::mem::size_of::<TaskHead>().next_multiple_of(align);
    let size = off + arg_size.max(0) as usize;
    let layout = std::alloc::Layout::from_size_align(size, align).expect("task data layout");
    // SAFETY: a fresh block of `size` bytes: the header, then (without a copy function) the
    // program's `arg_size` bytes, which libgomp copies as they are; with one, libgomp calls
    // `task_copy`, which builds the task's data from the program's own.
    unsafe {
        let buf = std::alloc::alloc(layout);
        if buf.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        *(buf as *mut TaskHead) = TaskHead {
            f,
            cpyfn,
            src: data,
            off,
        };
        if cpyfn.is_none() {
            std::ptr::copy_nonoverlapping(
                data as *const u8,
                buf.add(off),
                arg_size.max(0) as usize,
            );
        }
        real(
            task_body,
            buf as *mut c_void,
            cpyfn.map(|_| task_copy as extern "C" fn(*mut c_void, *mut c_void)),
            size as libc::c_long,
            align as libc::c_long,
            if_clause,
            flags,
            depend,
            priority,
            detach,
        );
        std::alloc::dealloc(buf, layout);
    }
    leave();
}

omp_quiet!(GOMP_loop_end_nowait, c"GOMP_loop_end_nowait");
omp_quiet!(GOMP_sections_end_nowait, c"GOMP_sections_end_nowait");
omp_quiet!(GOMP_taskwait, c"GOMP_taskwait");

/// Identities of libgomp's global locks (unnamed `critical`, `atomic`).
static CRITICAL: u8 = 0;
static ATOMIC: u8 = 0;

/// The second argument of a libgomp lock's marker: every lock of the runtime (`critical`,
/// `atomic`, `omp_*_lock`) is its futex mutex, whose waiter spins on the word before it sleeps
/// as long as `GOMP_SPINCOUNT` and `OMP_WAIT_POLICY` say (300,000 turns by default), so a lock
/// says how long it spins (read from the environment once); a release is an atomic exchange.
fn omp_spins(op: Op) -> u64 {
    static TURNS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    if op != Op::MutexLock {
        return 0;
    }
    let turns = *TURNS.get_or_init(|| {
        let var = |k| std::env::var(k).ok();
        isim_trace_protocol::gomp_spin_turns(
            var("GOMP_SPINCOUNT").as_deref(),
            var("OMP_WAIT_POLICY").as_deref(),
        )
    });
    isim_trace_protocol::LockSpin::Gomp(turns).arg()
}

/// A lock taken or released through a runtime entry point without arguments.
macro_rules! omp_global_lock {
    ($name:ident, $sym:literal, $op:expr, $id:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            enter();
            let real = real!($sym, unsafe extern "C" fn());
            magic($op, $id, omp_spins($op));
            unsafe { real() };
            done(0);
            leave();
        }
    };
}

omp_global_lock!(
    GOMP_critical_start,
    c"GOMP_critical_start",
    Op::MutexLock,
    &CRITICAL as *const u8 as u64
);
omp_global_lock!(
    GOMP_critical_end,
    c"GOMP_critical_end",
    Op::MutexUnlock,
    &CRITICAL as *const u8 as u64
);
omp_global_lock!(
    GOMP_atomic_start,
    c"GOMP_atomic_start",
    Op::MutexLock,
    &ATOMIC as *const u8 as u64
);
omp_global_lock!(
    GOMP_atomic_end,
    c"GOMP_atomic_end",
    Op::MutexUnlock,
    &ATOMIC as *const u8 as u64
);

/// A lock named by a pointer argument (named `critical`, `omp_*_lock`).
macro_rules! omp_object_lock {
    ($name:ident, $sym:literal, $op:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(p: *mut c_void) {
            enter();
            let real = real!($sym, unsafe extern "C" fn(*mut c_void));
            magic($op, p as u64, omp_spins($op));
            unsafe { real(p) };
            done(0);
            leave();
        }
    };
}

omp_object_lock!(
    GOMP_critical_name_start,
    c"GOMP_critical_name_start",
    Op::MutexLock
);
omp_object_lock!(
    GOMP_critical_name_end,
    c"GOMP_critical_name_end",
    Op::MutexUnlock
);
omp_object_lock!(omp_set_lock, c"omp_set_lock", Op::MutexLock);
omp_object_lock!(omp_unset_lock, c"omp_unset_lock", Op::MutexUnlock);
omp_object_lock!(omp_set_nest_lock, c"omp_set_nest_lock", Op::MutexLock);
omp_object_lock!(omp_unset_nest_lock, c"omp_unset_nest_lock", Op::MutexUnlock);

/// `omp_test_lock` / `omp_test_nest_lock`: a lock only when it succeeded.
macro_rules! omp_test_lock {
    ($name:ident, $sym:literal) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(p: *mut c_void) -> c_int {
            enter();
            let real = real!($sym, unsafe extern "C" fn(*mut c_void) -> c_int);
            let r = unsafe { real(p) };
            if r != 0 {
                magic(Op::MutexLock, p as u64, omp_spins(Op::MutexLock));
                done(0);
            }
            leave();
            r
        }
    };
}

omp_test_lock!(omp_test_lock, c"omp_test_lock");
omp_test_lock!(omp_test_nest_lock, c"omp_test_nest_lock");
