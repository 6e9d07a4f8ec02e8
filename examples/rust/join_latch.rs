//! A `join` in the manner of rayon's, and a pool thread asleep when `main` returns: the two
//! ways a work-stealing runtime's traced run lost its timing in replay (tests/locks.rs).
//!
//! Each round, `main` hands half of its work to a helper (a scoped thread: rayon's thief),
//! which sets a latch in `main`'s own stack frame with an atomic swap when it is done, as
//! rayon's `SpinLatch::set` does. `main` waits for the latch as rayon's
//! `WorkerThread::wait_until_cold` does: between its looks it tries to steal (an atomic
//! read-modify-write of a shared counter) and pauses, so its looks are no spin (it sleeps a
//! millisecond where rayon yields, so that its looking costs few instructions however long the
//! host ran the helper). Then it does work of its own that needs the helper's result. The
//! rounds are serial: each takes the helper's work plus `main`'s, not the larger of the two.
//!
//! Before the rounds, a pool thread takes one job through a mutex and a condition variable
//! and then sleeps on the condition variable again, in a futex wait of traced code, until the
//! process exits (rayon's idle workers sleep there).
//!
//! Usage: `join_latch [WORK [ROUNDS]]` (WORK: loop steps of each half, default 200,000;
//! ROUNDS: default 4).

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// rayon's `CoreLatch` states: unset, and set by the thief.
const UNSET: u32 = 0;
const SET: u32 = 3;

static STEAL_TRIES: AtomicU64 = AtomicU64::new(0);

fn work(steps: u64, seed: u64) -> u64 {
    let mut x = seed;
    for k in 0..steps {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(k));
    }
    x
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let steps = args.first().copied().unwrap_or(200_000);
    let rounds = args.get(1).copied().unwrap_or(4);

    // The pool thread: one job, then asleep until the process ends.
    let pool = Arc::new((Mutex::new((0u64, 0u64)), Condvar::new()));
    let p = Arc::clone(&pool);
    std::thread::spawn(move || {
        let (m, cv) = &*p;
        let mut g = m.lock().unwrap();
        loop {
            while g.0 == 0 {
                g = cv.wait(g).unwrap();
            }
            let job = std::mem::take(&mut g.0);
            g.1 = work(job, 7);
            cv.notify_all();
        }
    });
    {
        let (m, cv) = &*pool;
        let mut g = m.lock().unwrap();
        g.0 = steps / 4;
        cv.notify_all();
        while g.1 == 0 {
            g = cv.wait(g).unwrap();
        }
    }

    let mut total = 0u64;
    for r in 0..rounds {
        let latch = AtomicU32::new(UNSET);
        let result = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                result.store(work(steps, r), Ordering::Relaxed);
                latch.swap(SET, Ordering::AcqRel);
            });
            while latch.load(Ordering::Acquire) != SET {
                STEAL_TRIES.fetch_add(1, Ordering::AcqRel);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            total ^= work(steps, result.load(Ordering::Relaxed));
        });
    }
    println!("{total}");
    // Let the pool thread fall asleep again before the process ends (host time only).
    std::thread::sleep(std::time::Duration::from_millis(50));
}
