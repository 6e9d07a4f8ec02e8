//! scope_threads.rs: `std::thread::scope` with 8 workers that each run a short private
//! computation and add it to a shared atomic; the scope joins them all before `main` goes on.
//! A scoped thread tells the scope it is done and then still runs its own exit path, while
//! the main thread, released, may already be returning from `main`: the tracer must write out
//! every thread's events however that race goes (issue 42: "no lost events").
//!
//! usage: scope_threads [THREADS] [WORK]   (defaults 8 threads, 20000 steps)
use std::sync::atomic::{AtomicU64, Ordering};

fn work(seed: u64, n: u64) -> u64 {
    let mut x = seed;
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    x
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let steps: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let total = &total;
            s.spawn(move || {
                total.fetch_add(work(t, steps) & 0xff, Ordering::Relaxed);
            });
        }
    });
    println!("{}", total.load(Ordering::Relaxed));
}
