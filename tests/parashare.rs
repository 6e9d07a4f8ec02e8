//! `isim parashare` end to end: on `serial-phases` the serial block outranks the equally
//! frequent parallel block by about the thread count (the ParaShares Fig. 1 situation), shares
//! sum to 100 % for every weight, `parashare.json` carries the ranked report table, errors are
//! clear; and on real engine runs the collector's running counts equal a brute-force
//! recomputation from every recorded instruction and activity change.

mod common;

use std::path::Path;

use accounting::parashare::Collector;
use isim::run::{RunDir, RunRequest};
use serde_json::Value;
use sim_core::Observer;
use sim_core::core::InstResult;
use sim_frontend::model::{BranchKind, Program};

use common::{isim, ok};

fn run_dir(dir: &Path, workload: &str, threads: u32, size: u64) -> String {
    let out = dir.join(workload);
    let out = out.to_str().unwrap().to_string();
    ok(&[
        "run",
        "-w",
        workload,
        "-t",
        &threads.to_string(),
        "-s",
        &size.to_string(),
        "--out",
        &out,
    ]);
    out
}

fn parashare_json(run: &str, weight: &str) -> Value {
    let text = ok(&["parashare", run, "--weight", weight, "--json"]);
    serde_json::from_str(&text).expect("json")
}

fn block<'a>(doc: &'a Value, location: &str) -> &'a Value {
    doc["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["location"] == location)
        .unwrap_or_else(|| panic!("no block at {location}"))
}

/// Serial phase: thread 0 alone runs the `phases.c:21` loop P x size times per round;
/// parallel phase: each of P threads runs the `phases.c:29` loop size times. Equal execution
/// counts and equal block sizes (6 instructions), so the ParaShare ratio is the weight ratio
/// times Σ 1/t over the serial executions ÷ Σ 1/t over the parallel ones:
/// P x size x 1/1 ÷ (P x size x 1/P) = P, up to the few iterations that overlap thread
/// creation and the stragglers at the end of each parallel phase (measured: 3.95 for P = 4).
/// Weight ratios: 1 for instructions and for the default config's latencies (1+4+1+1+1+1 = 9
/// both); 11/9 for the paper's factors, the serial loop's FP multiply weighing 5 and the
/// parallel loop's FP add 3 (load 1, two integer ops 1, conditional branch 2, …). Tolerance:
/// 5 %.
#[test]
fn serial_phases_serial_block_outranks_parallel_block_by_about_p() {
    let dir = tempfile::tempdir().unwrap();
    let p = 4u32;
    let run = run_dir(dir.path(), "serial-phases", p, 512);
    for (weight, weights) in [
        ("instructions", (6.0, 6.0)),
        ("latency", (11.0, 9.0)),
        ("config-latency", (9.0, 9.0)),
    ] {
        let doc = parashare_json(&run, weight);
        let s = block(&doc, "phases.c:21");
        let q = block(&doc, "phases.c:29");
        assert_eq!(s["executions"], q["executions"], "equally frequent");
        assert_eq!(s["executions"], 4 * 512 * p as u64, "ROUNDS x P x size");
        assert_eq!(s["rank"], 1, "{weight}: the serial block ranks first");
        assert_eq!(q["rank"], 2, "{weight}");
        if weight != "instructions" {
            assert_eq!(s["latency_weight"], weights.0, "{weight}");
            assert_eq!(q["latency_weight"], weights.1, "{weight}");
        }
        let expected = p as f64 * weights.0 / weights.1;
        let ratio = s["parashare"].as_f64().unwrap() / q["parashare"].as_f64().unwrap();
        assert!(
            (ratio / expected - 1.0).abs() < 0.05,
            "{weight}: ratio {ratio}, expected about {expected}"
        );
        let sp = s["parallelism"].as_f64().unwrap();
        let qp = q["parallelism"].as_f64().unwrap();
        assert!(sp < 1.05, "serial block parallelism {sp}");
        assert!(qp > 0.9 * p as f64, "parallel block parallelism {qp}");
        assert_eq!(s["lines"], "phases.c:20-22");
    }
    // Simulated cycles: the serial block still ranks above the parallel one.
    let doc = parashare_json(&run, "cycles");
    let s = block(&doc, "phases.c:21");
    let q = block(&doc, "phases.c:29");
    assert!(s["rank"].as_u64() < q["rank"].as_u64(), "{s}\n{q}");
}

#[test]
fn shares_sum_to_100_for_every_weight_and_report_table_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (w, size) in [("serial-phases", 128), ("lock-contention", 100)] {
        let run = run_dir(dir.path(), w, 4, size);
        for weight in ["instructions", "latency", "config-latency", "cycles"] {
            let doc = parashare_json(&run, weight);
            assert_eq!(doc["schema"], "isim-parashare/1");
            assert_eq!(doc["weight"], weight);
            assert_eq!(doc["clamped"], 0);
            let blocks = doc["blocks"].as_array().unwrap();
            let sum: f64 = blocks.iter().map(|b| b["share"].as_f64().unwrap()).sum();
            assert!((sum - 100.0).abs() < 1e-6, "{w} {weight}: {sum}");
            let cov = doc["coverage"].as_array().unwrap();
            assert!(cov[0]["blocks"].as_u64() <= cov[1]["blocks"].as_u64());
            // The file holds the same document as --json printed.
            let file: Value = serde_json::from_str(
                &std::fs::read_to_string(Path::new(&run).join("parashare.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(file, doc);
            let t = &doc["report_tables"][0];
            let columns = t["columns"].as_array().unwrap();
            let rows = t["rows"].as_array().unwrap();
            assert!(t["title"].as_str().unwrap().contains("ParaShares"));
            assert_eq!(rows.len(), blocks.len().min(20));
            for r in rows {
                let r = r.as_array().unwrap();
                assert_eq!(r.len(), columns.len());
                assert!(r.iter().all(Value::is_string));
            }
        }
        // Only the document is left in the directory: the temporary file was renamed.
        let stray: Vec<_> = std::fs::read_dir(&run)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(stray.is_empty(), "{stray:?}");
    }
}

#[test]
fn text_report_shows_ranking_coverage_and_shifts() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_dir(dir.path(), "serial-phases", 4, 128);
    let text = ok(&["parashare", &run, "--top", "3"]);
    assert!(text.contains("weight: instructions"), "{text}");
    assert!(text.contains("phases_worker"), "{text}");
    assert!(text.contains("phases.c:20-22"), "{text}");
    assert!(
        text.contains("50 % of the share: 1 block, 3 source lines"),
        "{text}"
    );
    assert!(text.contains("rank shift vs unweighted"), "{text}");
    assert!(text.contains("(top 3 of "), "{text}");
}

/// Table 1's function-level coverage, Fig. 2's chart and Fig. 6's overlap. serial-phases has
/// one function (phases_worker, 10 lines in the trace): the blocks holding 90 % span 6 of its
/// lines, the function all 10. At 1 thread its two loops share equally; at 4 the serial loop
/// holds about P/(P+1) of the share (4 x 1/1 against 4 x 1/4 executions-weighted), and both
/// loops are among the 90 % blocks of either run.
#[test]
fn coverage_by_function_chart_and_overlap_across_thread_counts() {
    let (d1, d4) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = run_dir(d1.path(), "serial-phases", 1, 256);
    let four = run_dir(d4.path(), "serial-phases", 4, 256);
    let doc: Value =
        serde_json::from_str(&ok(&["parashare", &four, "--against", &one, "--json"])).unwrap();
    let c90 = &doc["coverage"][1];
    assert_eq!(c90["percent"], 90.0);
    assert_eq!(c90["functions"], 1);
    assert_eq!(c90["source_lines"], 6);
    assert_eq!(c90["function_lines"], 10, "{c90}");
    assert!(doc["source_lines_total"].as_u64().unwrap() >= 10);
    let o = &doc["against"];
    assert_eq!(o["base_threads"], 1);
    assert_eq!(o["top90"], 2);
    assert_eq!(o["common"], 2, "{o}");
    let serial = block(&doc, "phases.c:21");
    let moved = o["base_top"].as_array().unwrap();
    let was = moved
        .iter()
        .find(|m| m["pc"] == serial["pc"])
        .expect("the serial loop is among the base's top blocks");
    assert!(
        (was["base_share"].as_f64().unwrap() - 50.0).abs() < 1.0,
        "{was}"
    );
    assert_eq!(was["rank"], 1);
    let here = was["share"].as_f64().unwrap();
    assert!(
        (here / 80.0 - 1.0).abs() < 0.05,
        "serial share {here}, expected about 80"
    );
    // Fig. 2: one bar per executed block, the cumulative line over them.
    let svg = std::fs::read_to_string(Path::new(&four).join("parashare.svg")).unwrap();
    assert_eq!(
        svg.matches("class=\"bar\"").count() as u64,
        doc["blocks_executed"].as_u64().unwrap()
    );
    assert!(svg.contains("class=\"cumulative\""));
    // Another workload is refused: blocks are matched by PC.
    let other = run_dir(d1.path(), "lock-contention", 2, 50);
    let err = common::fails(&["parashare", &four, "--against", &other]);
    assert!(err.contains("--against"), "{err}");
}

#[test]
fn bad_run_dir_and_weight_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let o = isim(&["parashare", missing.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no such run directory"), "{err}");
    let o = isim(&["parashare", dir.path().to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not an isim run directory"), "{err}");
    let o = isim(&[
        "parashare",
        dir.path().to_str().unwrap(),
        "--weight",
        "bytes",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("invalid value 'bytes'"), "{err}");
    assert!(err.contains("instructions"), "{err}");
}

/// Records every instruction and activity change, for the brute-force recomputation.
#[derive(Default)]
struct Recorder {
    /// Per thread: (sidx, dispatch, critical) in program order.
    insts: Vec<Vec<(u32, f64, f64)>>,
    /// Per thread: (time, running) in the thread's time order.
    activity: Vec<Vec<(f64, bool)>>,
}

impl Observer for Recorder {
    type Part<'a> = sim_core::NoParts;
    fn inst(&mut self, tid: u32, sidx: u32, r: &InstResult, _: &sim_core::CycleStack) {
        let t = tid as usize;
        if self.insts.len() <= t {
            self.insts.resize(t + 1, Vec::new());
        }
        self.insts[t].push((sidx, r.dispatch, r.critical));
    }
    fn activity(&mut self, tid: u32, at: f64, running: bool) {
        let t = tid as usize;
        if self.activity.len() <= t {
            self.activity.resize(t + 1, Vec::new());
        }
        self.activity[t].push((at, running));
    }
}

/// Per thread, running intervals `[from, to)` from the recorded changes.
fn intervals(rec: &Recorder, threads: usize) -> Vec<Vec<(f64, f64)>> {
    (0..threads)
        .map(|t| {
            let mut out = Vec::new();
            let mut from = None;
            for &(at, running) in rec.activity.get(t).map_or(&[][..], |v| v) {
                match (running, from) {
                    (true, None) => from = Some(at),
                    (false, Some(f)) => {
                        out.push((f, at));
                        from = None;
                    }
                    _ => panic!("thread {t}: activity does not alternate at {at}"),
                }
            }
            assert!(from.is_none(), "thread {t} never stopped");
            out
        })
        .collect()
}

/// Block starts by the documented rule and running counts by interval lookup: per block key,
/// executions per running count, critical cycles and critical cycles / running count.
fn brute_force(p: &Program, rec: &Recorder, threads: usize) -> Vec<Option<(Vec<u64>, f64, f64)>> {
    let iv = intervals(rec, threads);
    let running_at = |u: usize, time: f64| {
        let v = &iv[u];
        let k = v.partition_point(|&(a, _)| a <= time);
        k > 0 && time < v[k - 1].1
    };
    let mut out: Vec<Option<(Vec<u64>, f64, f64)>> = vec![None; p.insts.len()];
    for (tid, insts) in rec.insts.iter().enumerate() {
        let mut prev: Option<u32> = None;
        let mut open: Option<(usize, usize)> = None; // (key, running)
        for &(sidx, time, crit) in insts {
            let cur = &p.insts[sidx as usize];
            let new = match prev {
                None => true,
                Some(q) => {
                    let q = &p.insts[q as usize];
                    q.branch != BranchKind::None
                        || cur.block_start
                        || cur.pc != q.pc + q.size as u64
                }
            };
            if new {
                let others = (0..threads)
                    .filter(|&u| u != tid && running_at(u, time))
                    .count();
                let run = others + 1;
                let e = out[sidx as usize].get_or_insert_with(|| (vec![0; threads + 1], 0.0, 0.0));
                e.0[run] += 1;
                open = Some((sidx as usize, run));
            }
            let (key, run) = open.expect("open block");
            let e = out[key].as_mut().expect("started");
            e.1 += crit;
            e.2 += crit / run as f64;
            prev = Some(sidx);
        }
    }
    out
}

#[test]
fn running_counts_match_brute_force_on_engine_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (w, threads, size) in [
        ("serial-phases", 4, 64),
        ("lock-contention", 6, 60),
        ("lu-owner", 5, 6),
        ("false-sharing", 3, 300),
    ] {
        let out = dir.path().join(w);
        isim::run::run(
            &RunRequest {
                workload: Some(w.to_string()),
                threads: Some(threads),
                size: Some(size),
                seed: 1,
                out: out.clone(),
                ..RunRequest::default()
            },
            |_| {},
        )
        .unwrap();
        let rd = RunDir::open(&out).unwrap();
        let p = &rd.trace.program;
        let n = rd.trace.thread_count() as usize;
        for batch in [1, 4096] {
            let c = Collector::new(p, n).with_resolve_batch(batch);
            let (_, (c, rec)) = rd
                .replay(&[], &[], (c, Recorder::default()), |_| {})
                .unwrap();
            let pbv = c.finish();
            assert_eq!(pbv.clamped, 0, "{w}");
            assert!(
                pbv.max_pending < 3 * 4096,
                "{w}: {} queued",
                pbv.max_pending
            );
            let want = brute_force(p, &rec, n);
            let mut seen = 0;
            for b in &pbv.blocks {
                let (execs, crit, crit_par) = want[b.key as usize]
                    .as_ref()
                    .unwrap_or_else(|| panic!("{w}: block {} not in the brute force", b.key));
                assert_eq!(&b.execs, execs, "{w}: block {}", b.key);
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
                assert!(close(b.critical, *crit), "{w}: {} vs {crit}", b.critical);
                assert!(
                    close(b.critical_par, *crit_par),
                    "{w}: {} vs {crit_par}",
                    b.critical_par
                );
                seen += 1;
            }
            assert_eq!(seen, want.iter().flatten().count(), "{w}: same blocks");
            // Not a vacuous comparison: several running counts occur.
            let counts: std::collections::BTreeSet<usize> = pbv
                .blocks
                .iter()
                .flat_map(|b| (1..=n).filter(move |&t| b.execs[t] > 0))
                .collect();
            assert!(counts.len() >= 2, "{w}: running counts {counts:?}");
        }
    }
}
