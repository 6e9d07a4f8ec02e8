//! A crew of host threads for the engine's parallel phases: a phase hands the crew a slice
//! of independent items and a function, every thread of the crew (the caller included)
//! applies the function to its share of the items (each item first to the thread its caller
//! names, the same in every phase for the same simulated core; a thread done with its own
//! then takes, from the end, the others' items not begun yet, so that one long item does
//! not leave the other threads waiting), and the phase returns when every item is done. The
//! engine runs tens of thousands of such phases a second, each of tens of microseconds, so
//! the crew's threads wait for the next phase by spinning (then yielding, then napping when
//! phases stop coming), where a pool that puts its threads to sleep would spend a phase's
//! worth of time waking them.
//!
//! The one use of `unsafe` in the engine is here: a phase's items and function are borrowed
//! for the phase only, and the threads that use them live for the whole run, so the borrow
//! is handed over as raw pointers. Soundness rests on these rules, kept by [`Crew::run`]
//! and the worker loop: each item index falls to exactly one thread (the one whose swap of
//! its `taken` flag found it clear), so no two threads hold `&mut` to the same item; a
//! worker reads the job and uses it only between announcing itself in `busy` and leaving,
//! and only if the phase is open (an even `epoch`, checked after announcing); `run` closes
//! the phase (odd `epoch`) after every item is done and returns only once `busy` has
//! drained, so no job, item or function is used after its borrow ends, and the next job is
//! written while the phase is closed, when no worker reads it. (Found by the unit test
//! below with more crew threads than host cores: a worker with no item of its own entered a
//! finished phase after `run` had returned.)

#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The current phase: how many items, the crew thread each falls to, and the function
/// applying itself to item `i`.
#[derive(Clone, Copy)]
struct Job {
    len: usize,
    homes: *const usize,
    /// Per item: set by the thread that runs it.
    taken: *const AtomicBool,
    call: *const (dyn Fn(usize) + Sync + 'static),
}

struct Shared {
    /// Even: `job` is published for the current phase; odd: no phase is open (between
    /// phases, when the caller writes the next job).
    epoch: AtomicU64,
    job: UnsafeCell<Job>,
    /// Items of the current phase finished.
    done: AtomicUsize,
    /// Workers that may be reading `job` or claiming items.
    busy: AtomicUsize,
    quit: AtomicBool,
    /// The first panic of a worker's item, handed to the caller.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `job` is written only by the thread that owns the crew while `epoch` is odd and
// `busy` is 0, and read by workers only after announcing themselves in `busy` and seeing an
// even `epoch` (see the module documentation); the function it points to is `Sync`.
unsafe impl Sync for Shared {}

/// A crew of host threads (see the module documentation); made by [`scope`].
pub(crate) struct Crew<'s> {
    shared: &'s Shared,
    workers: usize,
}

/// Runs `body` with a crew of `workers` host threads besides the calling one (0: the caller
/// alone does every phase). The threads end when `body` returns.
pub(crate) fn scope<R>(
    workers: usize,
    body: impl FnOnce(&Crew<'_>) -> R,
) -> Result<R, std::io::Error> {
    let nothing: &(dyn Fn(usize) + Sync) = &|_| {};
    let shared = Shared {
        epoch: AtomicU64::new(1),
        job: UnsafeCell::new(Job {
            len: 0,
            homes: std::ptr::null(),
            taken: std::ptr::null(),
            call: nothing as *const (dyn Fn(usize) + Sync),
        }),
        done: AtomicUsize::new(0),
        busy: AtomicUsize::new(0),
        quit: AtomicBool::new(false),
        panic: Mutex::new(None),
    };
    std::thread::scope(|s| {
        struct QuitOnDrop<'a>(&'a AtomicBool);
        impl Drop for QuitOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let _quit = QuitOnDrop(&shared.quit);
        for k in 1..=workers {
            let shared = &shared;
            std::thread::Builder::new()
                .name(format!("isim-crew-{k}"))
                .spawn_scoped(s, move || work(shared, k))?;
        }
        Ok(body(&Crew {
            shared: &shared,
            workers,
        }))
    })
}

/// Worker `k` of a crew of `n` threads: waits for each phase and runs its share of it.
fn work(sh: &Shared, k: usize) {
    let mut seen = 0u64;
    let mut idle = Instant::now();
    let mut spins = 0u32;
    loop {
        if sh.quit.load(Ordering::Acquire) {
            return;
        }
        let e = sh.epoch.load(Ordering::Acquire);
        if e == seen || e % 2 == 1 {
            // Spin while phases come often, yield while they may, nap once they stopped.
            spins += 1;
            if spins < 2_000 {
                std::hint::spin_loop();
            } else if idle.elapsed() < Duration::from_millis(2) {
                std::thread::yield_now();
            } else {
                std::thread::park_timeout(Duration::from_micros(200));
            }
            continue;
        }
        sh.busy.fetch_add(1, Ordering::SeqCst);
        if sh.epoch.load(Ordering::SeqCst) != e {
            // The caller began writing the next phase in between: read nothing.
            sh.busy.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        // SAFETY: `busy` is held and the epoch is still `e`, even: the job is not being
        // written and will not be until `busy` drains.
        let job = unsafe { *sh.job.get() };
        claim(sh, job, k);
        sh.busy.fetch_sub(1, Ordering::SeqCst);
        seen = e;
        spins = 0;
        idle = Instant::now();
    }
}

/// Runs the items of `job` whose home is crew thread `k` (the caller is 0), then, from the
/// last, the other items no thread has begun.
fn claim(sh: &Shared, job: Job, k: usize) {
    // SAFETY: `homes` and `taken` have `len` entries and live until the phase's caller
    // returns, which is after every item is done.
    let home = |i: usize| unsafe { *job.homes.add(i) };
    let mine = (0..job.len).filter(|&i| home(i) == k);
    let others = (0..job.len).rev().filter(|&i| home(i) != k);
    for i in mine.chain(others) {
        // SAFETY: as above.
        if unsafe { &*job.taken.add(i) }.swap(true, Ordering::AcqRel) {
            continue;
        }
        // SAFETY: this thread's swap set item `i`'s flag, so it falls to this thread alone,
        // and the phase's caller waits for it to be done, so the function is alive.
        let f = unsafe { &*job.call };
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))) {
            let mut slot = sh.panic.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(p);
        }
        sh.done.fetch_add(1, Ordering::Release);
    }
}

/// One step of waiting for another crew thread: spin a while (a phase's wait is usually
/// microseconds), then yield, so that a crew sharing its host cores with other work (more
/// crew threads than cores, tests run side by side) still lets the thread it waits for run.
#[inline]
fn pause(spins: &mut u32) {
    if *spins < 2_000 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// A pointer to a phase's items, shared by the crew's threads for the phase.
struct Items<T>(*mut T);
// SAFETY: each item is reached by one thread only (its index is claimed once), and `T: Send`.
unsafe impl<T: Send> Sync for Items<T> {}

impl Crew<'_> {
    /// Applies `f` to every item, on the crew's threads and the caller's: an item goes first
    /// to crew thread `home(item) mod n` (the caller is 0), so that an item with the same
    /// home in every phase stays in one host core's caches, and to another thread only if
    /// that one is done with its own items before this one is begun (see [`claim`]). Returns
    /// when all are done; a panic in `f` on a worker is raised again here. `inline` runs
    /// every item on the caller instead (for a phase too small to be worth handing out).
    pub(crate) fn run<T: Send>(
        &self,
        items: &mut [T],
        inline: bool,
        home: impl Fn(&T) -> usize,
        f: impl Fn(&mut T) + Sync,
    ) {
        let sh = self.shared;
        if self.workers == 0 || items.len() <= 1 || inline {
            items.iter_mut().for_each(f);
            return;
        }
        let n = self.workers + 1;
        let homes: Vec<usize> = items.iter().map(|t| home(t) % n).collect();
        let taken: Vec<AtomicBool> = items.iter().map(|_| AtomicBool::new(false)).collect();
        let base = Items(items.as_mut_ptr());
        let len = items.len();
        let call = move |i: usize| {
            let base = &base;
            // SAFETY: `i < len` and falls to one thread (see `claim`), so this is the only
            // reference to item `i` during the phase.
            f(unsafe { &mut *base.0.add(i) })
        };
        let call: &(dyn Fn(usize) + Sync) = &call;
        // SAFETY: only the lifetime is erased; `run` does not return before every use of
        // `call` by the workers has ended (all items done, the phase closed and `busy`
        // drained), see the module documentation.
        let call: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(call) };
        // Between phases the epoch is odd (closed, see below): no worker reads the job.
        let e = sh.epoch.load(Ordering::SeqCst);
        debug_assert!(e % 2 == 1);
        // SAFETY: the epoch is odd, so no worker reads the job (a worker that announced
        // itself in `busy` sees the odd epoch and backs off without reading).
        unsafe {
            *sh.job.get() = Job {
                len,
                homes: homes.as_ptr(),
                taken: taken.as_ptr(),
                call,
            }
        };
        sh.done.store(0, Ordering::SeqCst);
        sh.epoch.store(e + 1, Ordering::SeqCst);
        claim(
            sh,
            Job {
                len,
                homes: homes.as_ptr(),
                taken: taken.as_ptr(),
                call,
            },
            0,
        );
        let mut spins = 0u32;
        while sh.done.load(Ordering::Acquire) != len {
            pause(&mut spins);
        }
        // Close the phase and wait for every worker that entered it to leave: one with no
        // item of its own may enter after the last item is done, and must not read this
        // job once its items, homes and function are gone.
        sh.epoch.store(e + 2, Ordering::SeqCst);
        while sh.busy.load(Ordering::SeqCst) != 0 {
            pause(&mut spins);
        }
        let panic = sh.panic.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scope;

    /// Every item is visited exactly once per phase, over many short phases, whatever the
    /// number of workers.
    #[test]
    fn every_item_is_done_once_in_every_phase() {
        for workers in [0, 1, 3] {
            // Miri (`cargo +nightly miri test -p sim-core crew`) checks the unsafe code on a
            // few phases; natively, many.
            let phases: u64 = if cfg!(miri) { 20 } else { 2_000 };
            let mut items = vec![0u64; 37];
            scope(workers, |crew| {
                for phase in 1..=phases {
                    crew.run(&mut items, false, |x| *x as usize, |x| *x += phase);
                }
            })
            .expect("crew");
            let want: u64 = (1..=phases).sum();
            assert!(items.iter().all(|&x| x == want), "{workers} workers");
        }
    }

    /// A thread done with its own items takes the others' not begun: every item is homed on
    /// the caller, whose first item waits until another thread has done one of the rest.
    /// Without taking, the worker has nothing to do and the wait runs out.
    #[test]
    fn a_thread_done_with_its_own_items_takes_the_others() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::time::{Duration, Instant};
        let caller = std::thread::current().id();
        let by_others = AtomicUsize::new(0);
        let mut taken_by_worker = None;
        let mut items: Vec<u32> = (0..8).collect();
        scope(1, |crew| {
            crew.run(
                &mut items,
                false,
                |_| 0,
                |x| {
                    if *x == 0 {
                        let start = Instant::now();
                        while by_others.load(Ordering::Acquire) == 0
                            && start.elapsed() < Duration::from_secs(20)
                        {
                            std::thread::yield_now();
                        }
                    } else if std::thread::current().id() != caller {
                        by_others.fetch_add(1, Ordering::AcqRel);
                    }
                    *x += 100;
                },
            );
            taken_by_worker = Some(by_others.load(Ordering::Acquire));
        })
        .expect("crew");
        assert!(
            taken_by_worker.unwrap() > 0,
            "the worker took none of the caller's items"
        );
        assert_eq!(
            items,
            (100..108).collect::<Vec<u32>>(),
            "each item done once"
        );
    }

    /// A panic in an item reaches the caller, and the crew still ends.
    #[test]
    fn a_panic_in_a_phase_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            scope(2, |crew| {
                let mut items: Vec<u32> = (0..8).collect();
                crew.run(
                    &mut items,
                    false,
                    |x| *x as usize,
                    |x| assert!(*x != 5, "item five"),
                );
            })
        });
        assert!(r.is_err());
    }
}
