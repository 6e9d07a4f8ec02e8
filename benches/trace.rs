//! Tracing speed of `isim trace` on real programs: traced instructions per wall second
//! (capture under QEMU plus conversion to a trace) and bytes per instruction of the written
//! trace, for `examples/c/owner_barrier.c` (`-n 300`, about 75 M instructions) at 1 and 4
//! threads, `examples/c/blocked_lu.c` (`-n 256`, about 55 M) at 4 and `examples/c/tree_locks.c`
//! (`-n 20000`, a mutex per node: about 43 M instructions, 3 M lock and unlock markers) at 4 — the
//! conversion's synchronization passes at scale: a pass quadratic in the markers, or a hash
//! lookup missing the cache per marker, shows here — converted on one host thread
//! (`--host-threads 1`) and on all of them (the default), alternating, with the ratio.
//!
//! Not a criterion benchmark: one measurement takes seconds and spawns processes, so it runs
//! each configuration three times and reports the median. Needs qemu-x86_64 and gcc; uses the
//! release `isim` and tracer libraries (`cargo build --release` first; `cargo bench --bench
//! trace` builds the `isim` binary itself).

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// One measurement: instructions per second, instructions, capture seconds, conversion
/// seconds, bytes per instruction.
type Run = (f64, f64, f64, f64, f64);

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let isim = PathBuf::from(env!("CARGO_BIN_EXE_isim"));
    let libs = isim.parent().unwrap().to_path_buf();
    if !libs.join("libisim_qemu_plugin.so").is_file() {
        eprintln!(
            "the tracer libraries are not in {}: run `cargo build --release` first",
            libs.display()
        );
        std::process::exit(1);
    }
    let dir = tempfile::tempdir().unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    // (example, its size argument, thread counts)
    let programs = [
        ("owner_barrier", "300", &["1", "4"][..]),
        ("blocked_lu", "256", &["4"][..]),
        ("tree_locks", "20000", &["4"][..]),
    ];
    for (name, n, thread_counts) in programs {
        let exe = common::compile_example(root, dir.path(), name);
        println!("{name} -n {n}: median of 3 runs");
        println!(
            "{:>7} {:>14} {:>10} {:>10} {:>12} {:>12} {:>10}",
            "threads",
            "instructions",
            "capture s",
            "convert s",
            "capture M/s",
            "total M/s",
            "B/instr"
        );
        for &threads in thread_counts {
            bench(&isim, &libs, dir.path(), &exe, threads, n, cores);
        }
    }
}

/// Traces `exe -t threads -n n` three times on one host thread and three times on all
/// `cores`, alternating so that both see the same noise, and prints the medians and the ratio.
fn bench(isim: &Path, libs: &Path, dir: &Path, exe: &Path, threads: &str, n: &str, cores: usize) {
    let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for (k, host) in [(0usize, 1usize), (1, cores)].iter().cycle().take(6) {
        let out = dir.join("t.itrace");
        let o = Command::new(isim)
            .env("ISIM_TRACER_DIR", libs)
            .args(["trace", "--json", "--host-threads"])
            .arg(host.to_string())
            .args(["-o", out.to_str().unwrap(), "--"])
            .arg(exe)
            .args(["-t", threads, "-n", n])
            .output()
            .expect("isim trace");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        let json = &text[text.find("\n{\n").map_or(0, |i| i + 1)..];
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let f = |k: &str| v[k].as_f64().unwrap();
        runs[*k].push((
            f("instructions_per_second"),
            f("instructions"),
            f("capture_seconds"),
            f("convert_seconds"),
            f("bytes_per_instruction"),
        ));
    }
    let mut medians = [0.0f64; 2];
    for (k, label) in [(0, "1 host thread"), (1, "all host threads")] {
        let r = &mut runs[k];
        r.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ips, ins, cap, conv, bpi) = r[1];
        medians[k] = ips;
        println!(
            "{threads:>7} {ins:>14} {cap:>10.2} {conv:>10.2} {:>12.1} {:>12.1} {bpi:>10.3}  ({label})",
            ins / cap / 1e6,
            ips / 1e6
        );
    }
    println!(
        "{threads:>7} all host threads ({cores}) / one: {:.2}x end to end",
        medians[1] / medians[0]
    );
}
