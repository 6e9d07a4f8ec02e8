//! rust_scope_join.rs: scoped threads with uneven work (thread t's loop runs longer the larger
//! t is), joined where the scope ends: one join-delimited section.
//! lime-corpus: cause=control-flow section=the scope's join
//! usage: rust_scope_join [-t THREADS]
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut p = 4usize;
    if args.len() == 3 && args[1] == "-t" {
        p = args[2].parse().expect("-t");
    }
    let mut out = vec![0.0f64; p];
    std::thread::scope(|s| {
        for (t, o) in out.iter_mut().enumerate() {
            s.spawn(move || {
                let mut x = 0.0f64;
                for i in 0..20000 {
                    x += black_box(i as f64) * 0.25;
                }
                for j in 0..40000 * t { // PLANTED
                    x = x * 0.5 + black_box(j as f64);
                }
                *o = x;
            });
        }
    });
    println!("{}", out[p - 1]);
}
