//! mutex_counter.rs: P threads each do private work, then update one shared value under a
//! `std::sync::Mutex` (a lock built directly on a futex: no pthread call), ITERS times. The
//! critical section is CRIT steps of the same work, so its length is set apart from the
//! private work's: with the defaults the lock is almost always free and the program scales;
//! with a long critical section and little private work it is serialized. The replay must say
//! which, whatever the host did while the program was traced (issue 42, item 2).
//!
//! usage: mutex_counter [-t THREADS] [-w WORK] [-c CRIT] [-i ITERATIONS]
//!        (defaults 4 threads, 7000 work steps of ~4 instructions, 10 critical steps,
//!        1 iteration)

use std::sync::Mutex;

/// A dependent integer chain, no memory traffic.
#[inline(never)]
fn private_work(seed: u64, n: u32) -> u64 {
    let mut x = seed;
    for _ in 0..n {
        x = std::hint::black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x & 0xff
}

fn main() {
    let (mut p, mut work, mut crit, mut iters) = (4u64, 7000u32, 10u32, 1u32);
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i + 1 < args.len() {
        let v: u64 = args[i + 1].parse().unwrap_or_else(|_| usage(&args[0]));
        match args[i].as_str() {
            "-t" => p = v,
            "-w" => work = v as u32,
            "-c" => crit = v as u32,
            "-i" => iters = v as u32,
            _ => usage(&args[0]),
        }
        i += 2;
    }
    if i != args.len() || !(1..=256).contains(&p) {
        usage(&args[0]);
    }
    let shared = Mutex::new(0u64);
    std::thread::scope(|s| {
        for me in 0..p {
            let shared = &shared;
            s.spawn(move || {
                for i in 0..iters {
                    let v = private_work(me * 1000 + i as u64, work);
                    let mut g = shared.lock().unwrap();
                    *g = private_work(*g + v, crit);
                }
            });
        }
    });
    println!("value {}", shared.lock().unwrap());
}

fn usage(me: &str) -> ! {
    eprintln!("usage: {me} [-t THREADS] [-w WORK] [-c CRIT] [-i ITERATIONS]");
    std::process::exit(2)
}
