//! Trace decode speed and compactness, per built-in generator.
//!
//! For each workload a single-thread trace of roughly two million instructions is generated;
//! the benchmark prints its bytes per dynamic instruction as written (chunks compressed) and
//! with its chunks stored uncompressed (the same records: what compression saves), then
//! measures records decoded per second on one core three ways: `memory/` runs the record
//! decoder over chunk payloads already in memory (the format's own cost), `file/` streams the
//! thread through [`Trace::stream`] (read, checksum, decompress and decode), `file-ahead/`
//! through [`Trace::stream_readahead`] (chunks read, checked and decompressed on a second
//! thread), `file-stored/` the same as `file/` from the uncompressed copy. Run with
//! `cargo bench --bench trace_decode`.

// criterion_group! generates a public function without docs.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sim_frontend::Trace;
use sim_frontend::format::decode::{Limits, StreamState, decode_payload};
use sim_frontend::format::writer::rewrite;
use sim_frontend::format::{CHUNK_HEADER_LEN, FlowTables};
use sim_frontend::model::Batch;
use sim_frontend::workloads::{Params, WORKLOADS};

/// Target dynamic instructions per benchmark trace.
const TARGET: u64 = 2_000_000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut g = c.benchmark_group("decode");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for w in WORKLOADS {
        // Double the size until the trace reaches TARGET instructions, then halve while it
        // exceeds 2 × TARGET: work grows faster than linearly with size for some workloads
        // (lu-owner's sweep is cubic), so a linear estimate would overshoot.
        let path = dir.path().join(format!("{}.itrace", w.name));
        let instructions = |size: u64| {
            w.generate(
                &Params {
                    threads: 1,
                    size,
                    seed: 1,
                },
                &path,
            )
            .expect("generate");
            Trace::open(&path).expect("open").threads[0].instructions
        };
        let mut size = w.default_size;
        let mut n = instructions(size);
        while n < TARGET && size < w.max_size {
            size = (size * 2).min(w.max_size);
            n = instructions(size);
        }
        while n >= 2 * TARGET && size > 1 {
            size /= 2;
            n = instructions(size);
        }
        let trace = Trace::open(&path).expect("open");
        let dir0 = &trace.threads[0];
        let bytes = std::fs::metadata(&path).expect("stat").len();
        let stored_path = dir.path().join(format!("{}-stored.itrace", w.name));
        rewrite(&path, &stored_path, false).expect("rewrite");
        let stored = Trace::open(&stored_path).expect("open");
        let stored_bytes = std::fs::metadata(&stored_path).expect("stat").len();
        println!(
            "{:<16} size {:>8}: {:>9} instructions, {:>9} records, {:>9} bytes, {:.3} bytes/instruction ({:.3} stored uncompressed)",
            w.name,
            size,
            dir0.instructions,
            dir0.records,
            bytes,
            bytes as f64 / dir0.instructions as f64,
            stored_bytes as f64 / dir0.instructions as f64
        );
        let file = std::fs::read(&stored_path).expect("read");
        let payloads: Vec<&[u8]> = stored.threads[0]
            .chunks
            .iter()
            .map(|&off| {
                let off = off as usize;
                let plen = u32::from_le_bytes(file[off + 8..off + 12].try_into().expect("4 bytes"))
                    as usize;
                let start = off + CHUNK_HEADER_LEN as usize;
                &file[start..start + plen]
            })
            .collect();
        let flow = FlowTables::build(&trace.program);
        let limits = Limits {
            threads: 1,
            max_participants: 1,
            sections: trace.program.source.sections.len() as u64,
        };
        g.throughput(Throughput::Elements(dir0.records));
        g.bench_function(format!("memory/{}", w.name), |b| {
            let mut batch = Batch::default();
            b.iter(|| {
                let mut st = StreamState::default();
                let mut n = 0usize;
                for p in &payloads {
                    batch.clear();
                    decode_payload(&flow, &mut st, p, &mut 0, usize::MAX, &limits, &mut batch)
                        .expect("decode");
                    n += batch.records.len();
                }
                black_box(n)
            })
        });
        g.bench_function(format!("file-ahead/{}", w.name), |b| {
            let mut batch = Batch::default();
            b.iter(|| {
                let mut s = trace.stream_readahead(0, 4).expect("stream");
                let mut n = 0usize;
                while s.next_batch(&mut batch).expect("decode") {
                    n += batch.records.len();
                }
                black_box(n)
            })
        });
        for (name, t) in [("file", &trace), ("file-stored", &stored)] {
            g.bench_function(format!("{name}/{}", w.name), |b| {
                let mut batch = Batch::default();
                b.iter(|| {
                    let mut s = t.stream(0).expect("stream");
                    let mut n = 0usize;
                    while s.next_batch(&mut batch).expect("decode") {
                        n += batch.records.len();
                    }
                    black_box(n)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
