//! sync.rs: Rust std threads: `std::thread::spawn` workers meeting at a `std::sync::Barrier`
//! each phase (worker 0 does extra work on the line marked PLANTED), a `Mutex<u64>` counter,
//! a `Condvar` hand-off (main waits until every worker is ready) and an `mpsc` channel that
//! collects the results. Rust's std synchronization is built on futexes, not pthread calls.
//!
//! Per worker (trace threads 1..THREADS; main is thread 0): STEPS barrier phases (the
//! Barrier's condition variable is only ever woken whole: isim recognises it as a barrier),
//! futex waits and wakes where contended. Main: THREADS creates and THREADS joins.
//!
//! usage: sync [-t THREADS] [-s STEPS]   (defaults 4 workers, 20 steps)
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex};

#[inline(never)]
fn unit(n: u64, seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..n {
        x = x.wrapping_mul(31).wrapping_add(i ^ seed);
    }
    x
}

fn main() {
    let mut n = 4usize;
    let mut steps = 20u64;
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "-t" => n = args[i + 1].parse().expect("-t N"),
            "-s" => steps = args[i + 1].parse().expect("-s N"),
            _ => {}
        }
        i += 2;
    }
    let bar = Arc::new(Barrier::new(n));
    let counter = Arc::new(Mutex::new(0u64));
    let ready = Arc::new((Mutex::new(0usize), Condvar::new()));
    let (tx, rx) = mpsc::channel();
    let mut hs = Vec::new();
    for me in 0..n {
        let (bar, counter, ready, tx) = (bar.clone(), counter.clone(), ready.clone(), tx.clone());
        hs.push(std::thread::spawn(move || {
            {
                let (m, cv) = &*ready;
                *m.lock().unwrap() += 1;
                cv.notify_one();
            }
            let mut acc = 0u64;
            for k in 0..steps {
                acc ^= unit(10_000, k);
                if me == 0 {
                    acc ^= unit(30_000, k + 1); // PLANTED: worker 0's extra work in every phase
                }
                *counter.lock().unwrap() += 1;
                bar.wait();
            }
            tx.send(acc).unwrap();
        }));
    }
    drop(tx);
    {
        let (m, cv) = &*ready;
        let mut r = m.lock().unwrap();
        while *r < n {
            r = cv.wait(r).unwrap();
        }
    }
    let total: u64 = rx.iter().fold(0, |a, b| a ^ b);
    for h in hs {
        h.join().unwrap();
    }
    println!("checksum {total} {}", *counter.lock().unwrap());
}
