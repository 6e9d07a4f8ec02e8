//! Host throughput of `isim sweep`: wall time of the 1/2/4/8/16-core sweep of `lu-owner` with
//! `--jobs 1` and `--jobs 2`, the speedup between them, and simulated MIPS (instructions of all
//! runs per wall second). Each sweep writes a fresh directory, so nothing is reused.
//!
//! Not a criterion benchmark: one measurement runs the `isim` binary for seconds. Each
//! configuration runs `ISIM_BENCH_REPEAT` times (default 3), alternating jobs 1 and 2 so that
//! drift of the host's speed hits both alike, and the median is reported. Sizes come from
//! `ISIM_BENCH_SIZES` (comma-separated `--size` lists separated by `;`, default `16;32;24,32`).
//! Five runs on two workers cannot beat the longest-processing-time bound (each run is one
//! sequential simulation), so the bench also prints that bound from the runs' own wall times.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn sweep(isim: &Path, out: &Path, sizes: &str, jobs: u32) -> f64 {
    let _ = std::fs::remove_dir_all(out);
    let t = Instant::now();
    let st = Command::new(isim)
        .args([
            "sweep",
            "-w",
            "lu-owner",
            "--cores",
            "1,2,4,8,16",
            "--size",
            sizes,
        ])
        .arg("--jobs")
        .arg(jobs.to_string())
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("cannot start isim");
    let secs = t.elapsed().as_secs_f64();
    assert!(st.success(), "isim sweep failed for --size {sizes}");
    secs
}

/// Total simulated instructions of a finished sweep, from every run's `summary.json`.
fn instructions(out: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(out.join("runs")).expect("runs/") {
        let text = std::fs::read_to_string(e.unwrap().path().join("summary.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        total += v["instructions"].as_u64().expect("instructions");
    }
    total
}

/// Wall seconds of each run of the sweep alone, one at a time (for the scheduling bound).
fn run_times(isim: &Path, dir: &Path, size: &str) -> Vec<f64> {
    [1, 2, 4, 8, 16]
        .iter()
        .map(|c| {
            let out = dir.join(format!("alone-{c}"));
            let _ = std::fs::remove_dir_all(&out);
            let t = Instant::now();
            let st = Command::new(isim)
                .args(["run", "-w", "lu-owner", "--size", size])
                .args(["--threads", &c.to_string(), "--cores", &c.to_string()])
                .arg("--out")
                .arg(&out)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .expect("cannot start isim");
            assert!(st.success());
            t.elapsed().as_secs_f64()
        })
        .collect()
}

/// Makespan of longest-first list scheduling of `times` on two workers (what the sweep does).
fn lpt_two(times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(|a, b| b.total_cmp(a));
    let mut w = [0.0f64; 2];
    for x in t {
        let i = if w[0] <= w[1] { 0 } else { 1 };
        w[i] += x;
    }
    w[0].max(w[1])
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let isim = Path::new(env!("CARGO_BIN_EXE_isim"));
    let repeat: usize = std::env::var("ISIM_BENCH_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let sizes = std::env::var("ISIM_BENCH_SIZES").unwrap_or_else(|_| "16;32;24,32".into());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    println!("isim sweep -w lu-owner --cores 1,2,4,8,16: median of {repeat} (2 host jobs vs 1)");
    for size in sizes.split(';') {
        let mut one = Vec::new();
        let mut two = Vec::new();
        for _ in 0..repeat {
            one.push(sweep(isim, &out, size, 1));
            two.push(sweep(isim, &out, size, 2));
        }
        let inst = instructions(&out) as f64;
        let (a, b) = (median(one), median(two));
        let runs = 5 * size.split(',').count();
        print!(
            "--size {size:<6} {runs:>2} runs: jobs 1 {a:6.2} s, jobs 2 {b:6.2} s, speedup {:.2}x, {:.1} simulated MIPS at jobs 2",
            a / b,
            inst / b / 1e6
        );
        if !size.contains(',') {
            let alone = run_times(isim, dir.path(), size);
            let sum: f64 = alone.iter().sum();
            print!(
                " (runs alone {}; longest-first bound on 2 workers {:.2}x)",
                alone
                    .iter()
                    .map(|t| format!("{t:.2}"))
                    .collect::<Vec<_>>()
                    .join("/"),
                sum / lpt_two(&alone)
            );
        }
        println!();
    }
}
