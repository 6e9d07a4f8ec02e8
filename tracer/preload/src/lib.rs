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
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use isim_trace_protocol::{Op, SYS_BASE};
use libc::{pthread_attr_t, pthread_t};

#[inline(always)]
fn magic(op: Op, a1: u64, a2: u64) {
    let num = SYS_BASE + op as i64;
    // SAFETY: a system call with an unused number; the kernel (or QEMU) returns -ENOSYS and
    // touches nothing but rax, rcx and r11.
    unsafe {
        core::arch::asm!(
            "syscall",
            inout("rax") num => _,
            in("rdi") a1,
            in("rsi") a2,
            out("rcx") _,
            out("r11") _,
            options(nostack),
        );
    }
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
    magic(Op::MainBegin, 0, 0);
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
}

extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Box leaked by pthread_create below, received exactly once.
    let s = unsafe { Box::from_raw(p as *mut Start) };
    SEQ.with(|c| c.set(s.seq));
    magic(Op::ThreadStart, s.seq as u64, 0);
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
    magic(Op::Suppress, 0, 0);
    let real = real!(c"pthread_create", CreateFn);
    let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
    let boxed = Box::into_raw(Box::new(Start { f: start, arg, seq })) as *mut c_void;
    let r = unsafe { real(thread, attr, trampoline, boxed) };
    if r == 0 {
        CREATED.lock().unwrap().push((unsafe { *thread }, seq));
        magic(Op::Create, seq as u64, 0);
    } else {
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(boxed as *mut Start) });
    }
    magic(Op::Resume, 0, 0);
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(thread: pthread_t, retval: *mut *mut c_void) -> c_int {
    magic(Op::Suppress, 0, 0);
    let real = real!(
        c"pthread_join",
        unsafe extern "C" fn(pthread_t, *mut *mut c_void) -> c_int
    );
    let seq = CREATED
        .lock()
        .unwrap()
        .iter()
        .find(|e| e.0 == thread)
        .map(|e| e.1);
    if let Some(s) = seq {
        magic(Op::Join, s as u64, 0);
    }
    let r = unsafe { real(thread, retval) };
    magic(Op::Resume, 0, 0);
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_exit(retval: *mut c_void) -> ! {
    magic(Op::Suppress, 0, 0);
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
    magic(Op::Suppress, 0, 0);
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
    magic(Op::Resume, 0, 0);
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut libc::pthread_barrier_t) -> c_int {
    magic(Op::Suppress, 0, 0);
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
    magic(Op::Resume, 0, 0);
    r
}

macro_rules! one_object {
    ($name:ident, $sym:literal, $ty:ty, $op:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(m: *mut $ty) -> c_int {
            magic(Op::Suppress, 0, 0);
            let real = real!($sym, unsafe extern "C" fn(*mut $ty) -> c_int);
            magic($op, m as u64, 0);
            let r = unsafe { real(m) };
            magic(Op::Resume, 0, 0);
            r
        }
    };
}

one_object!(
    pthread_mutex_lock,
    c"pthread_mutex_lock",
    libc::pthread_mutex_t,
    Op::MutexLock
);
one_object!(
    pthread_mutex_unlock,
    c"pthread_mutex_unlock",
    libc::pthread_mutex_t,
    Op::MutexUnlock
);
one_object!(
    pthread_cond_signal,
    c"pthread_cond_signal",
    libc::pthread_cond_t,
    Op::CondSignal
);
one_object!(
    pthread_cond_broadcast,
    c"pthread_cond_broadcast",
    libc::pthread_cond_t,
    Op::CondBroadcast
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) -> c_int {
    magic(Op::Suppress, 0, 0);
    let real = real!(
        c"pthread_mutex_trylock",
        unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int
    );
    let r = unsafe { real(m) };
    if r == 0 {
        magic(Op::MutexLock, m as u64, 0);
    }
    magic(Op::Resume, 0, 0);
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
) -> c_int {
    magic(Op::Suppress, 0, 0);
    let real = real!(
        c"pthread_cond_wait",
        unsafe extern "C" fn(*mut libc::pthread_cond_t, *mut libc::pthread_mutex_t) -> c_int
    );
    magic(Op::CondWait, c as u64, m as u64);
    let r = unsafe { real(c, m) };
    magic(Op::Resume, 0, 0);
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    t: *const libc::timespec,
) -> c_int {
    magic(Op::Suppress, 0, 0);
    let real = real!(
        c"pthread_cond_timedwait",
        unsafe extern "C" fn(
            *mut libc::pthread_cond_t,
            *mut libc::pthread_mutex_t,
            *const libc::timespec,
        ) -> c_int
    );
    magic(Op::CondWait, c as u64, m as u64);
    let r = unsafe { real(c, m, t) };
    magic(Op::Resume, 0, 0);
    r
}
