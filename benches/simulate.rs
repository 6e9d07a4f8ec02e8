//! Simulation speed: simulated instructions per host second (MIPS) of the whole simulator —
//! trace decoding, interval cores, memory hierarchy, synchronization — on `configs/default.toml`
//! with 8 threads of `lu-owner` and of `radix-miss`, one host core. Run with
//! `cargo bench --bench simulate`.

// criterion_group! generates a public function without docs.
#![allow(missing_docs)]

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sim_core::{Engine, EngineConfig};
use sim_frontend::Trace;
use sim_frontend::workloads::{Params, find};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = isim::config::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/default.toml"),
        &[],
    )
    .expect("config");
    let cfg = EngineConfig {
        core: m.core_params(),
        bpred: m.bpred(),
        memory: m.memory().expect("memory"),
        erase: vec![],
    };
    let mut g = c.benchmark_group("simulate");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for (name, size) in [("lu-owner", 24u64), ("radix-miss", 65_536)] {
        let path = dir.path().join(format!("{name}.itrace"));
        find(name)
            .expect("workload")
            .generate(
                &Params {
                    threads: 8,
                    size,
                    seed: 1,
                },
                &path,
            )
            .expect("generate");
        let trace = Trace::open(&path).expect("open");
        let n: u64 = trace.threads.iter().map(|t| t.instructions).sum();
        println!("{name}: {n} instructions, 8 threads");
        g.throughput(Throughput::Elements(n));
        g.bench_function(name, |b| {
            b.iter(|| {
                let (r, ()) = Engine::new(&trace, &cfg, ())
                    .expect("engine")
                    .run(|_| {})
                    .expect("run");
                r.cycles
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
