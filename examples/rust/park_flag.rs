//! park_flag.rs: two threads hand a turn back and forth through a flag and
//! `std::thread::park`/`unpark`, the idiom of hand-built one-shot channels and parkers. In
//! each of ROUNDS rounds `main` runs MAIN steps of a computation, stores the flag's next odd
//! value and unparks the worker; the worker, parked until it sees that value, runs WORKER
//! steps, stores the next even value and unparks `main`, which parks until it sees it. The
//! two never overlap: the worker waits for `main`'s steps every round, `main` for the
//! worker's. Under QEMU the worker often finds the flag already set and never parks (pinned
//! to one CPU, always): replayed, it must wait for `main`'s store all the same (issue 42: a
//! parker's look that found its flag set is a wait for the store it read).
//!
//!     park_flag [ROUNDS [MAIN [WORKER]]]     (defaults 200 500 2000)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[inline(never)]
fn work(seed: u64, n: u64) -> u64 {
    let mut x = seed;
    for _ in 0..n {
        x = std::hint::black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut arg = |d: u64| args.next().and_then(|a| a.parse().ok()).unwrap_or(d);
    let (rounds, main_steps, worker_steps) = (arg(200), arg(500), arg(2000));
    let flag = Arc::new(AtomicU64::new(0));
    let seen = flag.clone();
    let main_thread = std::thread::current();
    let worker = std::thread::spawn(move || {
        let mut sum = 0;
        for r in 1..=rounds {
            while seen.load(Ordering::Acquire) != 2 * r - 1 {
                std::thread::park();
            }
            sum ^= work(r, worker_steps);
            seen.store(2 * r, Ordering::Release);
            main_thread.unpark();
        }
        sum
    });
    let mut sum = 0;
    for r in 1..=rounds {
        sum ^= work(r, main_steps);
        flag.store(2 * r - 1, Ordering::Release);
        worker.thread().unpark();
        while flag.load(Ordering::Acquire) != 2 * r {
            std::thread::park();
        }
    }
    println!("{}", (sum ^ worker.join().unwrap()) & 0xff);
}
