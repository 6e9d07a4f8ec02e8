//! Real synchronization idioms traced and replayed (issue: real programs replay to the end):
//! the corpus of `examples/` — the mutex + condition-variable barrier of classic benchmark
//! suites, a producer/consumer and a task queue on condition variables, OpenMP (gcc's
//! libgomp: static, dynamic, reduction, critical, barrier, nowait, single, locks), C++20
//! (`std::thread`, `std::mutex`, `std::condition_variable`, `std::barrier`) and Rust (`thread`,
//! `Barrier`, `Mutex`, `Condvar`, `mpsc`) — each traced under QEMU and simulated at 2, 4 and 8
//! threads. Oracles:
//! * every trace replays to completion (a deadlock is a failure), and no thread is cut at the
//!   program's normal exit (OpenMP's pool threads included);
//! * per thread, the marker counts equal what the program's header comment says it does;
//! * LIME's top cause of the section with the largest idle share is the line marked PLANTED
//!   (the condition-variable barrier and OpenMP's static loop).
//!
//! Needs `qemu-x86_64`, gcc (with libgomp), g++ and rustc; `.ci/run` installs them. Under
//! `CI=true` a missing tool fails the tests.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use common::{compile, root, tools_present, tracer_libs};

fn isim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isim"))
        .current_dir(root())
        .env("ISIM_TRACER_DIR", tracer_libs())
        .args(args)
        .output()
        .expect("run isim")
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn tools() -> bool {
    tools_present(&["qemu-x86_64", "gcc", "g++", "rustc"])
}

/// The compiled corpus, once per test binary.
struct Corpus {
    _dir: tempfile::TempDir,
    cond_barrier: PathBuf,
    prodcons: PathBuf,
    taskqueue: PathBuf,
    omp: PathBuf,
    cpp: PathBuf,
    rust: PathBuf,
}

fn run_compiler(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn corpus() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ex = root().join("examples");
        let cpp = d.join("sync20");
        run_compiler(
            Command::new("g++")
                .args(["-std=c++20", "-g", "-O2", "-pthread", "-o"])
                .arg(&cpp)
                .arg(ex.join("cpp/sync20.cpp")),
            "g++",
        );
        let rust = d.join("sync_rs");
        run_compiler(
            Command::new("rustc")
                .args(["-C", "opt-level=2", "-g", "--edition", "2021", "-o"])
                .arg(&rust)
                .arg(ex.join("rust/sync.rs")),
            "rustc",
        );
        Corpus {
            cond_barrier: compile(d, "cond_barrier", &ex.join("c/cond_barrier.c"), &[]),
            prodcons: compile(d, "prodcons", &ex.join("c/prodcons.c"), &[]),
            taskqueue: compile(d, "taskqueue", &ex.join("c/taskqueue.c"), &[]),
            omp: compile(
                d,
                "omp_kernels",
                &ex.join("omp/omp_kernels.c"),
                &["-fopenmp"],
            ),
            cpp,
            rust,
            _dir: dir,
        }
    })
}

/// A traced and simulated program: its trace summary and run directory.
struct Replayed {
    summary: Value,
    run: PathBuf,
    _dir: tempfile::TempDir,
}

/// `isim trace --json` then `isim run`: both must succeed, with no thread cut at exit.
fn replay(program: &Path, args: &[&str]) -> Replayed {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.itrace");
    let mut a = vec!["trace", "--json", "-o", trace.to_str().unwrap(), "--"];
    a.push(program.to_str().unwrap());
    a.extend_from_slice(args);
    let out = ok(&isim(&a), &format!("isim trace {program:?} {args:?}"));
    let json = out.find("\n{\n").map_or(out.as_str(), |i| &out[i + 1..]);
    let summary: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
    for t in summary["threads"].as_array().unwrap() {
        assert_eq!(
            t["cut"], false,
            "{program:?} {args:?}: thread {} cut at a normal exit",
            t["thread"]
        );
    }
    for w in summary["warnings"].as_array().unwrap() {
        let w = w.as_str().unwrap();
        assert!(!w.contains("may be missing"), "{program:?} {args:?}: {w}");
    }
    let run = dir.path().join("run");
    let o = isim(&[
        "run",
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
    ]);
    ok(
        &o,
        &format!("isim run of {program:?} {args:?} (a deadlock is a bug)"),
    );
    Replayed {
        summary,
        run,
        _dir: dir,
    }
}

/// Marker count `kind` of each thread.
fn counts(s: &Value, kind: &str) -> Vec<u64> {
    s["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["markers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m[0] == kind)
                .map_or(0, |m| m[1].as_u64().unwrap())
        })
        .collect()
}

/// The line of `file` (under the repository) carrying `tag` as a word of a comment.
fn line_of(file: &str, tag: &str) -> usize {
    let src = std::fs::read_to_string(root().join(file)).unwrap();
    src.lines()
        .position(|l| l.contains(&format!("{tag}:")) && !l.trim_start().starts_with('*'))
        .unwrap_or_else(|| panic!("no {tag} line in {file}"))
        + 1
}

/// LIME on the run: the location of the top cause of the section with the largest idle share.
fn lime_top_cause(run: &Path) -> (String, String) {
    ok(&isim(&["lime", run.to_str().unwrap()]), "isim lime");
    let lime: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("lime.json")).unwrap()).unwrap();
    let sections = lime["sections"].as_array().expect("sections");
    let top = sections
        .iter()
        .max_by(|a, b| {
            let f = |s: &Value| s["idle_cycles"].as_f64().unwrap_or(0.0);
            f(a).total_cmp(&f(b))
        })
        .expect("a section");
    let cause = &top["causes"][0];
    (
        top["location"].as_str().unwrap_or("").to_string(),
        cause["location"].as_str().unwrap_or("").to_string(),
    )
}

/// Each thread's recorded start (function, location) and thread group, as the scaling analyses
/// see them (`isim::stacks`).
fn starts_and_groups(run: &Path) -> Vec<(String, String, String)> {
    let sum: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let stacks = isim::stacks::load(run).unwrap();
    sum["threads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&stacks.threads)
        .map(|(t, d)| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (s("start_function"), s("start_location"), d.group.clone())
        })
        .collect()
}

const THREADS: [u32; 3] = [2, 4, 8];

/// The condition-variable barrier: every thread takes part in STEPS barrier episodes, locks
/// and unlocks STEPS times; the broadcasts sum to STEPS and the waits to STEPS·(P−1).
#[test]
fn the_condition_variable_barrier_replays_as_a_barrier_at_2_4_and_8_threads() {
    if !tools() {
        return;
    }
    let steps = 12u64;
    for p in THREADS {
        let r = replay(
            &corpus().cond_barrier,
            &["-t", &p.to_string(), "-s", &steps.to_string()],
        );
        let s = &r.summary;
        let n = p as usize;
        assert_eq!(counts(s, "barrier"), vec![steps; n], "{s}");
        assert_eq!(counts(s, "mutex-lock"), vec![steps; n]);
        assert_eq!(counts(s, "mutex-unlock"), vec![steps; n]);
        assert_eq!(counts(s, "cond-broadcast").iter().sum::<u64>(), steps);
        assert!(counts(s, "cond-wait").iter().sum::<u64>() >= steps * (p as u64 - 1));
        assert_eq!(s["hand_barriers"], steps);
        assert_eq!(
            s["hand_barrier_conds"], 1,
            "one condition variable is the barrier"
        );
        let mut create = vec![0; n];
        create[0] = p as u64 - 1;
        assert_eq!(counts(s, "create"), create);
        assert_eq!(counts(s, "join"), create);
        // The waiting is barrier time, not condition or lock time.
        let sum: Value =
            serde_json::from_str(&std::fs::read_to_string(r.run.join("summary.json")).unwrap())
                .unwrap();
        let (mut barrier, mut other) = (0.0, 0.0);
        for t in sum["threads"].as_array().unwrap() {
            barrier += t["stack"]["sync-barrier"].as_f64().unwrap_or(0.0);
            other += t["stack"]["sync-cond"].as_f64().unwrap_or(0.0);
        }
        assert!(
            barrier > 10.0 * other,
            "{p} threads: sync-barrier {barrier} vs sync-cond {other}"
        );
        if p == 4 {
            // Threads group by their start function (cycle-stacks paper §2.3): the main thread
            // calls worker() itself after creating the others, so all four are one group.
            let g = starts_and_groups(&r.run);
            assert_eq!(g[0].0, "main");
            assert!(g[1..].iter().all(|t| t.0 == "worker"), "{g:?}");
            assert!(g.iter().all(|t| t.2 == "worker"), "{g:?}");
            let (section, cause) = lime_top_cause(&r.run);
            let barrier_line = line_of("examples/c/cond_barrier.c", "BARRIER_SITE");
            let planted = line_of("examples/c/cond_barrier.c", "PLANTED");
            assert_eq!(section, format!("examples/c/cond_barrier.c:{barrier_line}"));
            assert!(
                cause.starts_with(&format!("examples/c/cond_barrier.c:{planted}")),
                "top cause at {cause}, planted line {planted}"
            );
        }
    }
}

/// Producer/consumer and task queue: condition waits in predicate loops, signals and
/// broadcasts, with counts fixed by the programs.
#[test]
fn producer_consumer_and_task_queue_replay_to_the_end() {
    if !tools() {
        return;
    }
    let items = 2000u64;
    for p in THREADS {
        let r = replay(
            &corpus().prodcons,
            &["-t", &p.to_string(), "-n", &items.to_string()],
        );
        let s = &r.summary;
        assert_eq!(counts(s, "mutex-lock")[0], items + 1);
        assert_eq!(counts(s, "cond-signal")[0], items);
        assert_eq!(counts(s, "cond-broadcast")[0], 1);
        assert!(counts(s, "mutex-lock")[1..].iter().all(|&k| k >= 1));
        assert_eq!(counts(s, "create")[0], p as u64 - 1);
        assert_eq!(counts(s, "join")[0], p as u64 - 1);
        // The producer (main) never runs consumer(): two thread groups.
        let g = starts_and_groups(&r.run);
        assert_eq!(g[0].2, "main", "{g:?}");
        assert!(g[1..].iter().all(|t| t.2 == "consumer"), "{g:?}");
    }
    let tasks = 400u64;
    let batches = tasks.div_ceil(50);
    for p in THREADS {
        let r = replay(
            &corpus().taskqueue,
            &["-t", &p.to_string(), "-n", &tasks.to_string()],
        );
        let s = &r.summary;
        assert_eq!(counts(s, "mutex-lock")[0], tasks + batches + 1);
        assert_eq!(counts(s, "cond-broadcast")[0], batches + 1);
        assert_eq!(counts(s, "mutex-unlock"), counts(s, "mutex-lock"));
        assert_eq!(counts(s, "join")[0], p as u64 - 1);
    }
}

/// glibc's joins that may fail (`pthread_timedjoin_np`, `pthread_clockjoin_np`, a
/// `pthread_tryjoin_np` loop: `examples/c/timed_join.c`) are joins: `main` has a join marker
/// for each worker, and waits for the longest one (3 × 100,000 steps) in simulated time, so
/// the run is as long as that worker and `main` spends nearly all of it joining. Before they
/// were interposed `main` had no join marker: it returned at once and the workers ran after
/// the region of interest, untimed (10 M of 12.9 M instructions at 400,000 steps; 536,967
/// cycles against 4,832,895).
#[test]
fn joins_that_may_fail_are_joins_when_they_join() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = common::example(dir.path(), "timed_join");
    let r = replay(&exe, &["100000"]);
    assert_eq!(
        counts(&r.summary, "join")[0],
        3,
        "{}",
        r.summary["threads"][0]
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(r.run.join("summary.json")).unwrap())
            .unwrap();
    let run = s["cycles"].as_f64().unwrap();
    let longest = &s["threads"][3];
    let busy = longest["cycles"].as_f64().unwrap()
        - longest["stack"]["imbalance-start"].as_f64().unwrap()
        - longest["stack"]["imbalance-end"].as_f64().unwrap();
    assert!(
        busy >= 0.95 * run,
        "worker 3 busy {busy:.0} of {run:.0} cycles"
    );
    let main = &s["threads"][0];
    let joined = main["stack"]["sync-join"].as_f64().unwrap() / main["cycles"].as_f64().unwrap();
    assert!(joined > 0.9, "main joins {joined:.3} of the run: {main}");
}

/// OpenMP: each kernel at 2, 4 and 8 threads; barriers and locks per team thread as the
/// header of omp_kernels.c states; LIME finds the triangular loop of the static schedule.
#[test]
fn openmp_kernels_replay_with_their_barriers_and_locks() {
    if !tools() {
        return;
    }
    let reps = 5u64;
    // (kernel, barriers per region beyond fork and end, locks per region)
    let kernels = [
        ("static", 0, 0),
        ("dynamic", 0, 0),
        ("reduction", 0, 0),
        ("critical", 1, 2),
        ("barrier", 1, 0),
        ("nowait", 1, 0),
        ("single", 2, 0),
        ("locks", 0, 1),
        ("tasks", 1, 0),
    ];
    for (kernel, extra, locks) in kernels {
        for p in THREADS {
            let r = replay(
                &corpus().omp,
                &["-t", &p.to_string(), "-k", kernel, "-r", &reps.to_string()],
            );
            let s = &r.summary;
            let n = p as usize;
            assert_eq!(
                counts(s, "barrier"),
                vec![reps * (2 + extra); n],
                "{kernel} at {p}: {s}"
            );
            assert_eq!(counts(s, "mutex-lock"), vec![reps * locks; n], "{kernel}");
            assert_eq!(counts(s, "mutex-unlock"), vec![reps * locks; n], "{kernel}");
            assert_eq!(counts(s, "create")[0], p as u64 - 1, "{kernel}");
            // libgomp's own futex waits are not traced.
            assert_eq!(counts(s, "futex-wait").iter().sum::<u64>(), 0, "{kernel}");
            if kernel == "static" && p == 4 {
                let (_, cause) = lime_top_cause(&r.run);
                let planted = line_of("examples/omp/omp_kernels.c", "PLANTED");
                assert!(
                    cause.starts_with(&format!("examples/omp/omp_kernels.c:{planted}")),
                    "top cause at {cause}, planted line {planted}"
                );
            }
            if kernel == "static" && p == 4 {
                // Pool threads start in the region's outlined function, which the encountering
                // (main) thread runs too: one group.
                let g = starts_and_groups(&r.run);
                assert!(
                    g[1..].iter().all(|t| t.0.starts_with("main._omp_fn.")),
                    "{g:?}"
                );
                assert!(g.iter().all(|t| t.2 == g[1].0), "{g:?}");
            }
            if kernel == "tasks" {
                // Explicit tasks run inside libgomp (mostly in the single's barrier): their
                // work is traced on the thread that ran it, before that thread's barrier, and
                // replayed in full. REPS x TASKS tasks of unit(TASK_UNITS), at least 5
                // instructions per iteration (convert, multiply, add, increment, compare and
                // branch); before tasks were wrapped, only the creating thread's few thousand
                // instructions were traced.
                let traced: u64 = s["threads"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["instructions"].as_u64().unwrap())
                    .sum();
                assert!(
                    traced >= reps * 64 * 2000 * 5,
                    "{p} threads: {traced} traced"
                );
                let sum: Value = serde_json::from_str(
                    &std::fs::read_to_string(r.run.join("summary.json")).unwrap(),
                )
                .unwrap();
                let timed = sum["instructions"].as_u64().unwrap();
                assert!(
                    timed as f64 >= 0.95 * traced as f64,
                    "{p} threads: {timed} of {traced} replayed in the ROI"
                );
            }
            if kernel == "static" {
                // A pool thread's wait for the next region is barrier time.
                let sum: Value = serde_json::from_str(
                    &std::fs::read_to_string(r.run.join("summary.json")).unwrap(),
                )
                .unwrap();
                let t0 = &sum["threads"][0]["stack"];
                assert!(t0["sync-barrier"].as_f64().unwrap_or(0.0) > 0.0, "{t0}");
            }
        }
    }
}

/// C++20 and Rust synchronize through futexes (and pthread mutexes and condition variables
/// for C++): both replay to the end, with futex waits and wakes captured.
#[test]
fn cpp20_and_rust_std_synchronization_replays_to_the_end() {
    if !tools() {
        return;
    }
    let steps = 20u64;
    for p in THREADS {
        let args = [
            "-t".to_string(),
            p.to_string(),
            "-s".into(),
            steps.to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = replay(&corpus().cpp, &args);
        let s = &r.summary;
        let n = p as usize + 1;
        assert_eq!(counts(s, "create")[0], p as u64);
        assert_eq!(counts(s, "join")[0], p as u64);
        // Two pthread mutex acquisitions per worker (one in main), and the C library's own
        // futex locks that the conversion recognised (a worker takes some on its way out).
        let futex_locks = s["futex_locks"]["acquisitions"].as_u64().unwrap();
        let locks = counts(s, "mutex-lock");
        assert_eq!(
            locks.iter().sum::<u64>(),
            1 + 2 * (n as u64 - 1) + futex_locks,
            "{s}"
        );
        assert!(locks[1..].iter().all(|&k| k >= 2), "{s}");
        assert_eq!(counts(s, "mutex-unlock"), locks);
        assert_eq!(counts(s, "cond-signal")[1..].to_vec(), vec![1; n - 1]);
        if p >= 4 {
            let f: u64 = counts(s, "futex-wait").iter().sum::<u64>()
                + counts(s, "futex-wake").iter().sum::<u64>();
            assert!(f > 0, "no futex markers for std::barrier: {s}");
            // std::thread workers start past libstdc++'s launcher, in the program's lambda
            // (its call operator, at its line of sync20.cpp); main runs no lambda.
            let g = starts_and_groups(&r.run);
            assert_eq!(g[0].2, "main", "{g:?}");
            for t in &g[1..] {
                assert_eq!(t.0, "operator()", "{g:?}");
                assert!(t.1.contains("examples/cpp/sync20.cpp:"), "{g:?}");
                assert_eq!(t.2, g[1].2, "{g:?}");
            }
        }
        let r = replay(&corpus().rust, &args);
        let s = &r.summary;
        assert_eq!(counts(s, "create")[0], p as u64);
        assert_eq!(counts(s, "join")[0], p as u64);
        if p >= 4 {
            let f: u64 = counts(s, "futex-wait").iter().sum::<u64>()
                + counts(s, "futex-wake").iter().sum::<u64>();
            assert!(f > 0, "no futex markers for Rust's Barrier: {s}");
            // Spawned threads start past std's thread_start, in the program's closure (names
            // demangled); the main thread in the program's main.
            let g = starts_and_groups(&r.run);
            assert_eq!(g[0].0, "sync::main", "{g:?}");
            for t in &g[1..] {
                assert!(t.0.starts_with("sync::main::{"), "{g:?}");
                assert!(t.1.contains("examples/rust/sync.rs:"), "{g:?}");
                assert_eq!(t.2, g[1].2, "{g:?}");
            }
        }
    }
}
