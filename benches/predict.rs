//! Branch-prediction speed: host nanoseconds per predicted branch for every predictor with
//! its default settings, on the branch streams of built-in workloads (one thread, about two
//! million instructions each; `lu-owner`'s loops, `random-branch`'s coin flips, `balanced`'s
//! sweeps). Each stream is decoded once, before measuring; a measurement runs a fresh
//! predictor over it through `sim_core::core::predict`, as the engine's front end does, and
//! prints the misprediction count, so that a faster predictor can be seen to predict alike.
//! On one host core the default TAGE is about a sixth of a traced program's simulation time
//! (`docs/parallel.md`). Run with `cargo bench --bench predict`.

// criterion_group! generates a public function without docs.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sim_core::bpred::{BpredConfig, build};
use sim_core::core::{TimingTable, predict};
use sim_frontend::Trace;
use sim_frontend::model::{Batch, BranchKind, Record};
use sim_frontend::workloads::{Params, find};

/// Target dynamic instructions per stream.
const TARGET: u64 = 2_000_000;

/// A workload's branches as the front end predicts them: (static index, taken, next).
struct Stream {
    name: &'static str,
    table: TimingTable,
    branches: Vec<(u32, bool, u32)>,
}

fn stream(dir: &std::path::Path, name: &'static str) -> Stream {
    let w = find(name).expect("a built-in workload");
    let path = dir.join(format!("{name}.itrace"));
    let mut size = w.default_size;
    loop {
        let p = Params {
            threads: 1,
            size,
            seed: 1,
        };
        w.generate(&p, &path).expect("generate");
        let n = Trace::open(&path).expect("open").threads[0].instructions;
        if n >= TARGET || size >= w.max_size {
            break;
        }
        size = (size * 2).min(w.max_size);
    }
    let trace = Trace::open(&path).expect("open");
    let table = TimingTable::new(&trace.program.insts, &trace.meta.isa);
    let mut branches = Vec::new();
    let mut s = trace.stream(0).expect("stream");
    let mut b = Batch::default();
    while s.next_records(&mut b, 4096).expect("decode") {
        for r in &b.records {
            if let Record::Inst(i) = r
                && table.get(i.sidx).branch != BranchKind::None
            {
                branches.push((i.sidx, i.taken, i.next));
            }
        }
    }
    assert!(!branches.is_empty(), "{name} has no branches");
    Stream {
        name,
        table,
        branches,
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let streams: Vec<Stream> = ["lu-owner", "random-branch", "balanced"]
        .into_iter()
        .map(|n| stream(dir.path(), n))
        .collect();
    let mut g = c.benchmark_group("predict");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for cfg in BpredConfig::all() {
        for s in &streams {
            let run = || {
                let mut bp = build(&cfg).expect("default settings build");
                let mut wrong = 0u64;
                for &(sidx, taken, next) in &s.branches {
                    wrong += predict(&mut bp, &s.table, sidx, taken, next) as u64;
                }
                wrong
            };
            println!(
                "{:<10} {:<14} {:>8} branches, {:>8} mispredicted",
                cfg.type_name(),
                s.name,
                s.branches.len(),
                run()
            );
            g.throughput(Throughput::Elements(s.branches.len() as u64));
            g.bench_function(format!("{}/{}", cfg.type_name(), s.name), |b| {
                b.iter(|| black_box(run()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
