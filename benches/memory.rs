//! Memory-hierarchy throughput: accesses per host second through the whole hierarchy of
//! `configs/penryn-4x4.toml` (16 cores, MSI, bus, DRAM), for an L1-resident stream and for a
//! stream that misses to DRAM, with 1 and 16 cores. Each core's clock advances by the latency
//! of its previous access (one access in flight per core), as a blocking core would.
//! Run with `cargo bench --bench memory`.

// criterion_group! generates a public function without docs.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use sim_memory::{Kind, Memory};

const ACCESSES: u64 = 1 << 20;

fn machine() -> Memory {
    let cfg = isim::config::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/penryn-4x4.toml"),
        &[],
    )
    .expect("penryn-4x4 loads")
    .memory()
    .expect("memory config");
    Memory::new(cfg).expect("memory builds")
}

/// Runs `ACCESSES` loads spread round-robin over `cores`; `addr(core, i)` gives the i-th
/// address of a core.
fn run(m: &mut Memory, cores: u32, addr: impl Fn(u32, u64) -> u64) -> u64 {
    let mut clock = vec![0u64; cores as usize];
    let mut total = 0;
    for i in 0..ACCESSES {
        let c = (i % cores as u64) as u32;
        let o = m.access(
            c,
            0x400000,
            addr(c, i / cores as u64),
            8,
            Kind::Load,
            clock[c as usize],
        );
        clock[c as usize] += o.latency;
        total += o.latency;
    }
    total
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(ACCESSES));
    for cores in [1u32, 16] {
        // 16 KiB per core, reused: every access after the first pass hits L1.
        g.bench_function(format!("l1-resident/{cores}-cores"), |b| {
            b.iter_batched(
                || {
                    let mut m = machine();
                    run(&mut m, cores, |c, i| {
                        ((c as u64) << 32) + (i * 8) % (16 << 10)
                    });
                    m
                },
                |mut m| {
                    black_box(run(&mut m, cores, |c, i| {
                        ((c as u64) << 32) + (i * 8) % (16 << 10)
                    }))
                },
                BatchSize::LargeInput,
            )
        });
        // A new line on every access over 1 GiB per core: every access goes to DRAM.
        g.bench_function(format!("dram-stream/{cores}-cores"), |b| {
            b.iter_batched(
                machine,
                |mut m| black_box(run(&mut m, cores, |c, i| ((c as u64) << 32) + i * 64)),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
