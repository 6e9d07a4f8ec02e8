//! rust_barrier.rs: scoped threads in phases separated by a `std::sync::Barrier`; in each
//! phase thread t's inner loop runs longer the larger t is.
//! lime-corpus: cause=control-flow section=the barrier
//! usage: rust_barrier [-t THREADS] [-r PHASES]
use std::hint::black_box;
use std::sync::Barrier;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mut p, mut r) = (4usize, 4usize);
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "-t" => p = args[i + 1].parse().expect("-t"),
            "-r" => r = args[i + 1].parse().expect("-r"),
            _ => std::process::exit(2),
        }
        i += 2;
    }
    let bar = Barrier::new(p);
    let out: Vec<f64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..p)
            .map(|t| {
                let bar = &bar;
                s.spawn(move || {
                    let mut x = 0.0f64;
                    for _ in 0..r {
                        for i in 0..20000 {
                            x += black_box(i as f64) * 0.25;
                        }
                        for j in 0..10000 * t { // PLANTED
                            x = x * 0.5 + black_box(j as f64);
                        }
                        bar.wait();
                    }
                    x
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!("{}", out[p - 1]);
}
