//! rw_table.rs: a read-mostly table under Rust's `std::sync::RwLock` (on Linux a lock built
//! directly on futexes: a reader count in one word, no pthread call). P threads each run ITERS
//! rounds of WORK steps of private work; in one round of 16 a thread updates one entry under
//! the write lock, in the others it reads eight entries under the read lock. Each thread's
//! work is fixed by its arguments, so the replay must give the same timing however the host
//! interleaved the traced run (issue 42: readers hold the lock together, a writer alone).
//!
//! usage: rw_table [THREADS] [ITERATIONS] [WORK]   (defaults 4, 2000, 300)

use std::sync::RwLock;

fn main() {
    let a: Vec<u64> = std::env::args()
        .skip(1)
        .map(|s| match s.parse() {
            Ok(v) => v,
            Err(_) => {
                eprintln!("usage: rw_table [THREADS] [ITERATIONS] [WORK]");
                std::process::exit(2);
            }
        })
        .collect();
    let p = a.first().copied().unwrap_or(4);
    let iters = a.get(1).copied().unwrap_or(2000);
    let work = a.get(2).copied().unwrap_or(300);
    let table = RwLock::new(vec![0u64; 64]);
    std::thread::scope(|s| {
        for t in 0..p {
            let table = &table;
            s.spawn(move || {
                let mut x: u64 = 12345 + t;
                let mut acc = 0u64;
                for i in 0..iters {
                    for _ in 0..work {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        acc = acc.wrapping_add(x >> 60);
                    }
                    if i % 16 == t % 16 {
                        table.write().unwrap()[(x % 64) as usize] += acc;
                    } else {
                        let g = table.read().unwrap();
                        for k in 0..8 {
                            acc = acc.wrapping_add(g[((x + k) % 64) as usize]);
                        }
                    }
                }
                std::hint::black_box(acc);
            });
        }
    });
    println!("{}", table.read().unwrap().iter().fold(0u64, |s, v| s.wrapping_add(*v)));
}
