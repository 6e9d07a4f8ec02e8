//! LIME analysis time for one dynamic instance with 64 threads and 250…2,000 events (the
//! paper's Fig. 9 range; its single-threaded analyser took 5.0 s at 64 cores). The instance is
//! synthetic but shaped like a real one: events come in groups that follow one of a few
//! per-thread "causes" (so clustering finds structure), half of them control-flow edges
//! along a chain of branches, half L1/L2 misses with their execution counts.
//! Run with `cargo bench --bench lime`; throughput is reported in events per second.

// criterion_group! generates a public function without docs.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use accounting::lime::cfg::{Cfg, ENTRY};
use accounting::lime::{Event, Instance, Options, SectionKind, ThreadSection, analyze_instance};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// SplitMix64, so the instance is the same on every host.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn instance(threads: u32, events: usize) -> Instance {
    let mut seed = 7u64;
    let causes = 8;
    // Per-thread intensity of each latent cause.
    let factor: Vec<Vec<u64>> = (0..causes)
        .map(|_| (0..threads).map(|_| 10 + next(&mut seed) % 90).collect())
        .collect();
    let edges = events / 2;
    let insts = (events - edges) / 3; // each: exec, L1, L2
    let mut per_thread: Vec<Vec<(Event, u64)>> = vec![Vec::new(); threads as usize];
    for e in 0..edges {
        let c = e % causes;
        let scale = 1 + (next(&mut seed) % 5);
        for t in 0..threads as usize {
            let noise = next(&mut seed) % 3;
            let (from, to) = if e == 0 {
                (ENTRY, 0)
            } else {
                (e as u32 - 1, e as u32)
            };
            per_thread[t].push((Event::Edge { from, to }, factor[c][t] * scale + noise));
        }
    }
    for i in 0..insts {
        let s = 100_000 + i as u32;
        let c = (i * 3) % causes;
        for t in 0..threads as usize {
            let exec = 1000 + next(&mut seed) % 10;
            let l1 = factor[c][t] * 2 + next(&mut seed) % 4;
            let l2 = l1 / 2 + next(&mut seed) % 3;
            per_thread[t].push((Event::Exec(s), exec));
            per_thread[t].push((Event::Miss { sidx: s, level: 1 }, l1));
            per_thread[t].push((Event::Miss { sidx: s, level: 2 }, l2));
        }
    }
    let threads_v: Vec<ThreadSection> = per_thread
        .into_iter()
        .enumerate()
        .map(|(t, mut ev)| {
            ev.sort_by_key(|a| a.0);
            // Time follows cause 0 and cause 3.
            let time = 1000.0 + 50.0 * factor[0][t] as f64 + 20.0 * factor[3][t] as f64;
            ThreadSection {
                thread: t as u32,
                start: 0.0,
                arrival: time,
                events: ev,
            }
        })
        .collect();
    let release = threads_v.iter().map(|t| t.arrival).fold(0.0, f64::max);
    Instance {
        site: 0,
        kind: SectionKind::Barrier,
        release,
        threads: threads_v,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("lime_instance_64_threads");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for events in [250usize, 500, 1000, 2000] {
        let inst = instance(64, events);
        let cfg = Cfg::new(inst.threads[0].events.iter().filter_map(|(e, _)| match *e {
            Event::Edge { from, to } => Some((from, to)),
            _ => None,
        }));
        let opts = Options::default();
        let r = analyze_instance(&inst, &cfg, &opts);
        assert!(
            r.clusters > 0 && !r.causes.is_empty(),
            "the instance has structure"
        );
        g.throughput(Throughput::Elements(events as u64));
        g.bench_function(format!("{events}_events"), |b| {
            b.iter(|| black_box(analyze_instance(black_box(&inst), &cfg, &opts)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
