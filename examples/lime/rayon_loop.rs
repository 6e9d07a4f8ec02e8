//! rayon_loop.rs: rounds of a rayon parallel loop, called from `main`, over eight items per
//! pool thread; the first item runs an extra loop, so the worker that takes it finishes last.
//! lime-corpus: cause=control-flow section=the call into the pool crates=rayon
//! usage: rayon_loop [-t THREADS] [-r ROUNDS]
use rayon::prelude::*;
use std::hint::black_box;

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
    rayon::ThreadPoolBuilder::new()
        .num_threads(p)
        .build_global()
        .expect("pool");
    let mut acc = 0.0f64;
    for _ in 0..r {
        acc += (0..8 * p)
            .into_par_iter()
            .map(|i| {
                let mut x = 0.0f64;
                for k in 0..4000 {
                    x += black_box(k as f64) * 0.25;
                }
                let extra = if i == 0 { 200000 } else { 0 };
                for j in 0..extra { // PLANTED
                    x = x * 0.5 + black_box(j as f64);
                }
                x
            })
            .sum::<f64>();
    }
    println!("{acc}");
}
