//! Simulation speed: simulated instructions per host second (MIPS) of the whole simulator —
//! trace decoding, branch prediction, interval cores, memory hierarchy, synchronization — on
//! `configs/default.toml`, in each model at `--host-threads 1` and `2`, with the ratios: the
//! exact model (the simulated threads' records decoded and their branches predicted ahead on
//! the other host thread) and the parallel model (the cores simulated on the host threads
//! between their accesses to the shared levels, `docs/parallel.md`). Inputs: every built-in
//! workload at 8 threads, three at 16 threads and 10^8 instructions, pointer-chase at 64
//! threads, and the example programs `blocked_lu.c` and `owner_barrier.c` traced at 4, 8 and
//! 16 threads (when qemu-x86_64, gcc and the tracer libraries are there: `cargo build
//! --release` first).
//!
//! Also the peak memory of `isim run` at 8, 64 and 256 threads and for longer runs.
//!
//! Not a criterion benchmark: a measurement is one whole run of seconds. Each input runs
//! three times in each configuration, alternating so that all see the same noise, and the
//! medians are printed. Run with `cargo bench --bench simulate`; `-- NAME` keeps the inputs
//! whose name contains NAME.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use isim::config::MachineConfig;
use sim_core::{Engine, EngineConfig, Model};
use sim_frontend::Trace;
use sim_frontend::workloads::{Params, find};

/// Built-in workloads and the sizes that make each a few million instructions at 8 threads.
const WORKLOADS: [(&str, u64); 11] = [
    ("lu-owner", 32),
    ("radix-miss", 65_536),
    ("serial-phases", 8_192),
    ("false-sharing", 60_000),
    ("balanced", 8_192),
    ("lock-contention", 8_000),
    ("stream", 65_536),
    ("pointer-chase", 65_536),
    ("dep-chain", 200_000),
    ("indep-alu", 200_000),
    ("random-branch", 200_000),
];

/// Traced example programs: (source, size argument, thread counts).
const PROGRAMS: [(&str, &str, &[u32]); 2] = [
    ("blocked_lu", "256", &[4, 8, 16]),
    ("owner_barrier", "300", &[4, 8]),
];

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let keep = |name: &str| filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cfg = isim::config::load(&root.join("configs/default.toml"), &[]).expect("config");
    let dir = tempfile::tempdir().expect("temp dir");
    println!("simulated MIPS, median of 3 alternating runs, default config");
    println!(
        "{:<20} {:>7} {:>13} {:>17} {:>17} {:>17}",
        "", "", "", "exact", "parallel", "parallel/exact"
    );
    println!(
        "{:<20} {:>7} {:>13} {:>6} {:>6} {:>5} {:>6} {:>6} {:>5} {:>8} {:>8}",
        "input",
        "threads",
        "instructions",
        "1 host",
        "2 host",
        "ratio",
        "1 host",
        "2 host",
        "ratio",
        "1 host",
        "2 host"
    );
    for (name, size) in WORKLOADS {
        if !keep(name) {
            continue;
        }
        measure(name, &generate(dir.path(), name, name, 8, size), &cfg);
    }
    // One run of 10^8 instructions at 16 threads: compute-bound, L1-resident with a little
    // sharing, and memory-bound; and one of many threads each missing all the time, whose
    // turns in the exact model are an instruction or two long (the scheduler chooses the
    // next thread that often).
    for (name, threads, size) in [
        ("dep-chain", 16, 600_000),
        ("balanced", 16, 98_304),
        ("lu-owner", 16, 80),
        ("pointer-chase", 64, 65_536),
    ] {
        let label = format!("{name}-t{threads}");
        if !keep(&label) {
            continue;
        }
        measure(
            &label,
            &generate(dir.path(), &label, name, threads, size),
            &cfg,
        );
    }
    let isim = PathBuf::from(env!("CARGO_BIN_EXE_isim"));
    if keep("memory") {
        memory(&isim, dir.path());
    }
    let libs = isim.parent().unwrap().to_path_buf();
    let have = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !(have("qemu-x86_64") && have("gcc") && libs.join("libisim_qemu_plugin.so").is_file()) {
        println!(
            "(traced programs skipped: they need qemu-x86_64, gcc and the tracer libraries in {})",
            libs.display()
        );
        return;
    }
    for (prog, n, threads) in PROGRAMS {
        if !threads.iter().any(|t| keep(&format!("{prog}-t{t}"))) {
            continue;
        }
        let exe = common::compile_example(root, dir.path(), prog);
        for &t in threads {
            let name = format!("{prog}-t{t}");
            if !keep(&name) {
                continue;
            }
            let path = dir.path().join(format!("{name}.itrace"));
            let st = Command::new(&isim)
                .env("ISIM_TRACER_DIR", &libs)
                .args(["trace", "-o"])
                .arg(&path)
                .arg("--")
                .arg(&exe)
                .args(["-t", &t.to_string(), "-n", n])
                .stdout(std::process::Stdio::null())
                .status()
                .expect("isim trace");
            assert!(st.success(), "tracing {name}");
            measure(&name, &path, &cfg);
        }
    }
}

/// Writes built-in workload `name` at `threads` threads and `size` to `dir/label.itrace`.
fn generate(dir: &Path, label: &str, name: &str, threads: u32, size: u64) -> PathBuf {
    let path = dir.join(format!("{label}.itrace"));
    let p = Params {
        threads,
        size,
        seed: 1,
    };
    find(name)
        .expect("workload")
        .generate(&p, &path)
        .expect("generate");
    path
}

/// Simulates `path` three times in each model on one host thread and on two, alternating,
/// and prints the medians and their ratios. The machine grows to the trace's threads, as
/// `isim run` grows it.
fn measure(name: &str, path: &Path, machine: &MachineConfig) {
    let trace = Trace::open(path).expect("open");
    let n: u64 = trace.threads.iter().map(|t| t.instructions).sum();
    let mut m = machine.clone();
    if trace.thread_count() > m.total_cores() {
        m = m.with_cores(trace.thread_count()).expect("resize");
    }
    let cfg = &EngineConfig {
        core: m.core_params(),
        bpred: m.bpred(),
        memory: m.memory().expect("memory"),
        erase: vec![],
        erasure: sim_memory::Erasure::Fill,
        locks: m.lock_model(),
        lock_call: m.lock_call(),
    };
    let run = |model: Model, h: usize| {
        let start = Instant::now();
        let (r, ()) = Engine::new(&trace, cfg, ())
            .expect("engine")
            .model(model)
            .host_threads(h)
            .run(|_| {})
            .expect("run");
        std::hint::black_box(r.cycles);
        n as f64 / start.elapsed().as_secs_f64() / 1e6
    };
    let configs = [
        (Model::Exact, 1),
        (Model::Exact, 2),
        (Model::Parallel, 1),
        (Model::Parallel, 2),
    ];
    let mut mips: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for _ in 0..3 {
        for (k, &(model, h)) in configs.iter().enumerate() {
            mips[k].push(run(model, h));
        }
    }
    let m: Vec<f64> = mips
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    println!(
        "{:<20} {:>7} {:>13} {:>6.1} {:>6.1} {:>4.2}x {:>6.1} {:>6.1} {:>4.2}x {:>7.2}x {:>7.2}x",
        name,
        trace.thread_count(),
        n,
        m[0],
        m[1],
        m[1] / m[0],
        m[2],
        m[3],
        m[3] / m[2],
        m[2] / m[0],
        m[3] / m[1]
    );
}

/// Peak memory of `isim run` in each model (its own report of the process's peak resident
/// set) as the threads grow (`balanced`, 1,024 elements per thread and round; the machine grows to one
/// core per thread) and as the run grows longer (8 threads, 16 and 64 times the elements),
/// and what the front-end host threads add (their batches in flight, a few per thread).
fn memory(isim: &Path, dir: &Path) {
    println!("peak memory of isim run (MB)");
    let peak = |host: &str, args: &[&str]| -> (String, String) {
        let o = Command::new(isim)
            .args(["run", "--host-threads", host, "-w", "balanced", "-o"])
            .arg(dir.join("rss-run"))
            .args(args)
            .output()
            .expect("isim run");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        let grab = |key: &str, end: &str| {
            text.find(key).map_or("?".to_string(), |i| {
                let rest = &text[i + key.len()..];
                rest[..rest.find(end).unwrap_or(rest.len())]
                    .trim()
                    .to_string()
            })
        };
        (grab("total:", "instructions"), grab("peak memory", "MB"))
    };
    for model in ["exact", "parallel"] {
        for t in ["8", "64", "256"] {
            let (n, mb) = peak("1", &["--model", model, "-t", t, "-s", "1024"]);
            println!(
                "  {model:<8} balanced {t:>3} threads, {n:>10} instructions, 1 host thread: {mb:>6} MB"
            );
        }
        for (size, host) in [("16384", "1"), ("65536", "1"), ("65536", "2")] {
            let (n, mb) = peak(host, &["--model", model, "-t", "8", "-s", size]);
            println!(
                "  {model:<8} balanced   8 threads, {n:>10} instructions, {host} host thread(s): {mb:>6} MB"
            );
        }
    }
}
