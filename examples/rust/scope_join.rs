//! scope_join.rs: a `std::thread::scope` whose last thread to finish in a traced run is not
//! the last in simulated time. Thread 1 runs a short computation and then sleeps (host time
//! that costs no simulated time), so under QEMU it is the one that counts the scope down to
//! zero and wakes `main`; thread 2 runs the longest computation. After the scope, `main`
//! runs a computation of its own. Replayed, `main` must go on after thread 2's end in
//! simulated time, not after thread 1's (issue 42: a wait for a counter that several threads
//! count down depends on all of them).
//!
//! With OWNER_MS > 0, `main` sleeps that long inside the scope after spawning the threads,
//! then drops thread 1's handle: every thread has finished, so `main`, left holding thread 1's
//! result, counts the scope down to zero itself; its scope end reads zero with a plain load and
//! it never parks (nobody is notified).
//!
//! With HOLD = 1 as well, `main` keeps every thread's handle until after its sleep: every
//! thread finishes first, and `main`, dropping the last reference to each thread's result,
//! counts all three down (a thread whose handle is dropped late, as a hog on the host can
//! make thread 2's: no thread touches the count, and in simulated time the count is each
//! thread's own, made at its end).
//!
//! usage: scope_join [SLEEP_MS] [LONG] [AFTER] [OWNER_MS] [HOLD]
//!        (defaults 1000 ms, 2,000,000 steps, 200,000, 0 ms, 0)
use std::time::Duration;

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
    let mut arg = |d: u64| args.next().and_then(|a| a.parse().ok()).unwrap_or(d);
    let (sleep_ms, long, after, owner_ms) = (arg(1000), arg(2_000_000), arg(200_000), arg(0));
    let hold = arg(0) == 1;
    let mut sums = [0u64; 3];
    std::thread::scope(|s| {
        let [a, b, c] = &mut sums;
        let first = s.spawn(move || {
            *a = work(1, 1_000);
            std::thread::sleep(Duration::from_millis(sleep_ms));
        });
        let second = s.spawn(move || *b = work(2, long));
        if !hold {
            drop(second);
        }
        let third = s.spawn(move || *c = work(3, long / 4));
        if !hold {
            drop(third);
        }
        if owner_ms > 0 {
            std::thread::sleep(Duration::from_millis(owner_ms));
        }
        // Thread 1's handle, dropped after the sleep: its thread has finished, and `main`,
        // holding the last reference to its result, counts it down for it.
        drop(first);
    });
    let last = work(sums[0] ^ sums[1] ^ sums[2], after);
    println!("{}", last & 0xff);
}
