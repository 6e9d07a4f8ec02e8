//! `isim sweep` end to end: every run of a sweep is byte-identical to the same `isim run`
//! alone (with runs executing in parallel), the scaling table agrees with the runs' summaries,
//! an interrupted sweep resumes by redoing only the missing and half-written runs, and sweeps
//! with other arguments, over a non-sweep directory or of a missing program are refused with
//! clear errors. A sweep of a real program (`-- ./prog -t {threads}`) traces it once per core
//! count under QEMU and simulates each trace (needs qemu-x86_64 and gcc, like tests/trace.rs).

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use isim::sweep::{Progress, SweepArgs, SweepSpec, sweep};

use common::{fails, isim, ok};

/// Every file of `a` equals the same file of `b`, and both hold the same names.
fn assert_same_tree(a: &Path, b: &Path) {
    let names = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(a), names(b), "{} vs {}", a.display(), b.display());
    for n in names(a) {
        let x = std::fs::read(a.join(&n)).unwrap();
        let y = std::fs::read(b.join(&n)).unwrap();
        assert!(
            x == y,
            "{n} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Every row of `sweep.json`'s overall series has a speedup stack whose components add up to
/// its gap (ideal − speedup) within 1 % of the ideal speedup, and the gap is the row's.
fn check_speedup_stacks(results: &serde_json::Value) {
    let mut rows = 0;
    for s in results["series"].as_array().unwrap() {
        for r in s["rows"].as_array().unwrap() {
            let st = &r["speedup_stack"];
            if !s["group"].is_null() {
                assert!(st.is_null(), "a group's series has no speedup stack: {r}");
                continue;
            }
            let ideal = st["ideal"].as_f64().unwrap();
            let gap = st["gap"].as_f64().unwrap();
            let speedup = r["speedup"].as_f64().unwrap();
            assert!((ideal - speedup - gap).abs() < 1e-9, "{r}");
            let sum: f64 = st["components"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!(
                (sum - gap).abs() <= 0.01 * ideal,
                "components add up to {sum}, the gap is {gap} (ideal {ideal}): {r}"
            );
            rows += 1;
        }
    }
    assert!(rows > 0, "no speedup stack in {results}");
}

fn args(cores: &[u32], out: &Path) -> SweepArgs {
    SweepArgs {
        workload: Some("lu-owner".into()),
        cores: cores.to_vec(),
        size: vec![4],
        seed: 1,
        config: vec![],
        set: vec![],
        jobs: Some(2),
        out: out.to_path_buf(),
        roi: isim::trace::Roi::Main,
        program: vec![],
        weak_scaling: false,
        csv: false,
        slurm: Default::default(),
    }
}

/// Runs a sweep through the library, returning the ids of the runs it started.
fn sweep_counting(a: &SweepArgs) -> (isim::sweep::SweepOutcome, Vec<String>) {
    let spec = SweepSpec::from_args(a).unwrap();
    let started = Mutex::new(Vec::new());
    let o = sweep(&spec, &a.out, a.jobs.unwrap(), &|p| {
        if let Progress::Started(id) = p {
            started.lock().unwrap().push(id.to_string());
        }
    })
    .unwrap();
    let mut s = started.into_inner().unwrap();
    s.sort();
    (o, s)
}

#[test]
fn sweep_runs_are_identical_to_single_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sw = dir.path().join("sweep");
    let out = ok(&[
        "sweep",
        "--workload",
        "lu-owner",
        "--cores",
        "1,2,4",
        "--size",
        "4",
        "--jobs",
        "2",
        "--out",
        sw.to_str().unwrap(),
    ]);
    assert!(out.contains("3 runs executed, 0 reused"), "{out}");
    assert!(out.contains("speedup"), "{out}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sw.join("sweep.json")).unwrap()).unwrap();
    let runs = results["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for (cores, run) in [1u32, 2, 4].iter().zip(runs) {
        let alone = dir.path().join(format!("alone{cores}"));
        let c = cores.to_string();
        ok(&[
            "run",
            "--workload",
            "lu-owner",
            "--threads",
            &c,
            "--cores",
            &c,
            "--size",
            "4",
            "--seed",
            "1",
            "--out",
            alone.to_str().unwrap(),
        ]);
        assert_eq!(run["cores"], *cores);
        let in_sweep = sw.join(run["dir"].as_str().unwrap());
        assert_same_tree(&in_sweep, &alone);
        // The recorded command is the one just run, up to the output directory.
        let cmd = run["command"].as_str().unwrap();
        assert!(
            cmd.starts_with(&format!(
                "isim run --workload lu-owner --threads {c} --cores {c} --size 4 --seed 1 --out "
            )),
            "{cmd}"
        );
    }
    // The scaling table agrees with the run summaries: cycles, speedup over 1 core, efficiency.
    let summary = |r: &serde_json::Value| -> serde_json::Value {
        let p = sw.join(r["dir"].as_str().unwrap()).join("summary.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let cycles: Vec<f64> = runs
        .iter()
        .map(|r| summary(r)["cycles"].as_f64().unwrap())
        .collect();
    let table = &results["report_tables"][0];
    assert_eq!(results["scaling"], "strong");
    assert!(
        table["title"]
            .as_str()
            .unwrap()
            .contains("fixed-size problem, strong scaling"),
        "{}",
        table["title"]
    );
    assert_eq!(table["columns"][0], "cores");
    assert_eq!(table["columns"][2], "speedup");
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for (i, row) in rows.iter().enumerate() {
        let cores = [1.0, 2.0, 4.0][i];
        assert_eq!(row[1], format!("{:.0}", cycles[i]));
        let speedup = cycles[0] / cycles[i];
        assert_eq!(row[2], format!("{speedup:.2}"));
        assert_eq!(row[3], format!("{:.2}", speedup / cores));
    }
    // Shares of the aggregated stack sum to 100 %.
    let shares = results["series"][0]["rows"][2]["shares"]
        .as_object()
        .unwrap();
    let total: f64 = shares.values().map(|v| v.as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9, "{total}");
    check_speedup_stacks(&results);
    assert!(
        results["report_tables"][1]["title"]
            .as_str()
            .unwrap()
            .starts_with("Speedup stack: lu-owner"),
        "{}",
        results["report_tables"][1]
    );
    assert!(out.contains("Speedup stack"), "{out}");
    let svg = std::fs::read_to_string(sw.join("scaling.svg")).unwrap();
    assert_eq!(svg.matches("class=\"bar-label\"").count(), 3, "{svg}");
    assert!(svg.contains(">4 cores<"));
}

/// A workload whose `--size` is work per thread grows with the core count: its table shows
/// weak scaling (efficiency = time at 1 core over time, scaled speedup = that times the cores),
/// not a fixed-size speedup; `--weak-scaling` is refused for a built-in workload, which knows.
#[test]
fn a_workload_growing_with_the_threads_shows_weak_scaling() {
    let dir = tempfile::tempdir().unwrap();
    let sw = dir.path().join("sweep");
    let out = ok(&[
        "sweep",
        "-w",
        "balanced",
        "--cores",
        "1,2,4",
        "-s",
        "256",
        "--jobs",
        "2",
        "--out",
        sw.to_str().unwrap(),
    ]);
    assert!(out.contains("weak scaling"), "{out}");
    assert!(out.contains("scaled speedup"), "{out}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sw.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(results["scaling"], "weak");
    check_speedup_stacks(&results);
    let cycles: Vec<f64> = results["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cycles"].as_f64().unwrap())
        .collect();
    let table = &results["report_tables"][0];
    assert_eq!(table["columns"][2], "scaled speedup");
    assert_eq!(table["columns"][3], "efficiency");
    for (i, row) in table["rows"].as_array().unwrap().iter().enumerate() {
        let cores = [1.0, 2.0, 4.0][i];
        let efficiency = cycles[0] / cycles[i];
        assert_eq!(row[2], format!("{:.2}", efficiency * cores));
        assert_eq!(row[3], format!("{efficiency:.2}"));
        let series = &results["series"][0]["rows"][i];
        assert!((series["efficiency"].as_f64().unwrap() - efficiency).abs() < 1e-12);
    }
    // A balanced kernel whose work grows with the threads keeps most of its efficiency, which
    // a fixed-size reading (time ratio / cores) would call a 4x slowdown.
    assert!(cycles[0] / cycles[2] > 0.5, "{cycles:?}");
    let err = fails(&[
        "sweep",
        "-w",
        "balanced",
        "--cores",
        "1,2",
        "--weak-scaling",
        "--out",
        dir.path().join("x").to_str().unwrap(),
    ]);
    assert!(err.contains("--weak-scaling is for a program"), "{err}");
}

#[test]
fn sweep_resume_redoes_only_unfinished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sw = dir.path().join("sweep");
    let a = args(&[1, 2, 4], &sw);
    let (first, started) = sweep_counting(&a);
    assert_eq!(started.len(), 3);
    assert_eq!(first.executed.len(), 3);
    let results = std::fs::read(sw.join("sweep.json")).unwrap();
    let runs = sw.join("runs");
    let keep = runs.join("default_s4_c1");
    // A marker proves the finished run is not redone (isim run would replace the directory).
    std::fs::write(keep.join("marker"), "kept").unwrap();
    // Interrupted: one run never started, one was killed while writing (only `.partial`), and
    // the sweep's own results were never written.
    std::fs::remove_dir_all(runs.join("default_s4_c2")).unwrap();
    std::fs::rename(
        runs.join("default_s4_c4"),
        runs.join("default_s4_c4.partial"),
    )
    .unwrap();
    std::fs::remove_file(runs.join("default_s4_c4.partial/summary.json")).unwrap();
    std::fs::remove_file(sw.join("sweep.json")).unwrap();

    let (second, started) = sweep_counting(&a);
    assert_eq!(started, ["default_s4_c2", "default_s4_c4"]);
    assert_eq!(second.executed, ["default_s4_c2", "default_s4_c4"]);
    assert_eq!(second.reused, ["default_s4_c1"]);
    assert_eq!(
        std::fs::read_to_string(keep.join("marker")).unwrap(),
        "kept"
    );
    assert!(!runs.join("default_s4_c4.partial").exists());
    assert!(runs.join("default_s4_c4/summary.json").is_file());
    // The resumed sweep's results are the uninterrupted sweep's, byte for byte.
    assert_eq!(std::fs::read(sw.join("sweep.json")).unwrap(), results);

    // Everything finished: a third run executes nothing; the CLI says so.
    let out = ok(&[
        "sweep",
        "--workload",
        "lu-owner",
        "--cores",
        "4,2,1",
        "--size",
        "4",
        "--out",
        sw.to_str().unwrap(),
    ]);
    assert!(out.contains("0 runs executed, 3 reused"), "{out}");
}

#[test]
fn sweeps_with_other_arguments_or_programs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sw = dir.path().join("sweep");
    let cfg = dir.path().join("m.toml");
    std::fs::write(&cfg, isim::config::DEFAULT_TOML).unwrap();
    let base = |cores: &str, extra: &[&str]| {
        let mut v: Vec<String> = [
            "sweep",
            "--workload",
            "lu-owner",
            "--size",
            "4",
            "--cores",
            cores,
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            sw.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |v: Vec<String>| isim(&v.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(base("1,2", &[]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = |o: Output| {
        assert!(!o.status.success());
        String::from_utf8(o.stderr).unwrap()
    };
    let e = err(run(base("1,2,4", &[])));
    assert!(
        e.contains("holds a sweep with different arguments")
            && e.contains("cores: [1, 2] now [1, 2, 4]"),
        "{e}"
    );
    let e = err(run(base("1,2", &["--set", "core.rob_size=64"])));
    assert!(e.contains("--set"), "{e}");
    // Editing the config file between runs of the same sweep is a difference too.
    std::fs::write(&cfg, format!("{}\n# edited\n", isim::config::DEFAULT_TOML)).unwrap();
    let e = err(run(base("1,2", &[])));
    assert!(
        e.contains("the file changed since the sweep started"),
        "{e}"
    );

    // A directory that is not a sweep is not taken over.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let e = fails(&[
        "sweep",
        "--cores",
        "1",
        "--size",
        "4",
        "--out",
        other.to_str().unwrap(),
    ]);
    assert!(e.contains("is not a sweep directory"), "{e}");

    // A program that does not exist is refused; nothing is created.
    let prog = dir.path().join("prog-sweep");
    let e = fails(&[
        "sweep",
        "--cores",
        "1,2",
        "--out",
        prog.to_str().unwrap(),
        "--",
        "./no-such-prog",
        "-t",
        "{threads}",
    ]);
    assert!(
        e.contains("no-such-prog") && e.contains("cannot read"),
        "{e}"
    );
    assert!(!prog.exists());

    // Machines that cannot be built are refused before anything runs.
    let bad = dir.path().join("bad");
    let e = fails(&[
        "sweep",
        "--cores",
        "1,3",
        "--size",
        "4",
        "--set",
        "cache.l2.shared_by=2",
        "--out",
        bad.to_str().unwrap(),
    ]);
    assert!(
        e.contains("--cores 1: the L2 is shared by 2 cores")
            && e.contains("--cores 3: the L2 is shared by 2 cores"),
        "{e}"
    );
    assert!(!bad.exists());
}

/// `isim sweep --cores 1,2,4 -- owner_barrier -t {threads} -n 32`: one trace per core count,
/// each with that many threads; each run equals `isim run --trace` of that trace on the resized
/// machine (same summary); the scaling table has a row per core count; a rerun reuses all.
#[test]
fn a_real_program_is_traced_once_per_core_count_and_each_trace_simulated() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let libs = common::tracer_libs();
    let exe = common::example(dir.path(), "owner_barrier");
    let sw = dir.path().join("sw");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_isim"))
            .env("ISIM_TRACER_DIR", libs)
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let sweep_args = [
        "sweep",
        "--cores",
        "1,2,4",
        "--roi",
        "markers",
        "--jobs",
        "2",
        "--out",
        sw.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "-t",
        "{threads}",
        "-n",
        "32",
    ];
    let out = run(&sweep_args);
    assert!(out.contains("3 runs executed, 0 reused"), "{out}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sw.join("sweep.json")).unwrap()).unwrap();
    let text = results.to_string();
    for c in [1u32, 2, 4] {
        let t = sim_frontend::Trace::open(&sw.join("traces").join(format!("c{c}.itrace"))).unwrap();
        assert_eq!(t.thread_count(), c, "trace for {c} cores");
        assert!(
            t.meta
                .params
                .iter()
                .any(|(k, v)| k == "roi" && v == "markers")
        );
        // The same trace run alone gives the same summary.
        let alone = dir.path().join(format!("alone{c}"));
        run(&[
            "run",
            "--trace",
            sw.join("traces")
                .join(format!("c{c}.itrace"))
                .to_str()
                .unwrap(),
            "--cores",
            &c.to_string(),
            "--out",
            alone.to_str().unwrap(),
        ]);
        let a = std::fs::read(alone.join("summary.json")).unwrap();
        let b = std::fs::read(
            sw.join("runs")
                .join(format!("default_c{c}"))
                .join("summary.json"),
        )
        .unwrap();
        let (a, b): (serde_json::Value, serde_json::Value) = (
            serde_json::from_slice(&a).unwrap(),
            serde_json::from_slice(&b).unwrap(),
        );
        assert_eq!(a["cycles"], b["cycles"], "{c} cores");
        assert_eq!(a["threads"], b["threads"], "{c} cores");
    }
    assert!(text.contains("owner_barrier"), "{text}");
    check_speedup_stacks(&results);
    let out = run(&sweep_args);
    assert!(out.contains("0 runs executed, 3 reused"), "{out}");
}

/// An OpenMP program that takes its team size from the environment is traced with a team of
/// each core count (`OMP_NUM_THREADS`, when the user did not set it); a wrapper that execs the
/// program (`env VAR=… PROGRAM`) is refused, since its trace would hold the wrapper only (it
/// once gave a scaling table of `env` itself, speedup 1.00 at every count).
#[test]
fn an_openmp_team_follows_the_core_count_and_a_wrapper_is_refused() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let libs = common::tracer_libs();
    let src = dir.path().join("team.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <omp.h>\nstatic double a[4096];\n\
         int main(void) {\n  for (int r = 0; r < 3; r++) {\n\
         #pragma omp parallel for\n    for (int i = 0; i < 4096; i++) a[i] += i * r;\n  }\n\
         printf(\"%d %f\\n\", omp_get_max_threads(), a[7]);\n  return 0;\n}\n",
    )
    .unwrap();
    let exe = common::compile(dir.path(), "team", &src, &["-fopenmp"]);
    let sweep = |out: &Path, prog: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_isim"))
            .env("ISIM_TRACER_DIR", libs)
            .env_remove("OMP_NUM_THREADS")
            .args(["sweep", "--cores", "1,2,4", "--jobs", "2", "--out"])
            .arg(out)
            .arg("--")
            .args(prog)
            .output()
            .unwrap()
    };
    let sw = dir.path().join("sw");
    let o = sweep(&sw, &[exe.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("sized by the host"), "{err}");
    for c in [1u32, 2, 4] {
        let t = sim_frontend::Trace::open(&sw.join("traces").join(format!("c{c}.itrace"))).unwrap();
        assert_eq!(t.thread_count(), c, "trace for {c} cores");
        let log = std::fs::read_to_string(sw.join("traces").join(format!("c{c}.log"))).unwrap();
        assert!(log.starts_with(&format!("{c} ")), "{log}");
    }
    let wrapped = dir.path().join("wrapped");
    let o = sweep(
        &wrapped,
        &["env", "OMP_NUM_THREADS={threads}", exe.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("called exec"), "{err}");
    for c in [1u32, 2, 4] {
        assert!(
            !wrapped.join("traces").join(format!("c{c}.itrace")).exists(),
            "no trace of the wrapper is kept for a resumed sweep to use"
        );
    }
}

/// A real kill: `isim sweep` (one job) is SIGKILLed as soon as its first run is complete; the
/// same command then reuses what finished, redoes the rest (a half-written run included), and
/// ends with results byte-identical to an uninterrupted sweep's.
#[test]
fn a_killed_sweep_resumes_to_the_uninterrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = |out: &Path| -> Vec<String> {
        [
            "sweep", "-w", "lu-owner", "--cores", "1,2,4,8", "--size", "8", "--jobs", "1", "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out.to_str().unwrap().to_string()])
        .collect()
    };
    let whole = dir.path().join("whole");
    let a: Vec<String> = cmd(&whole);
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());

    let cut = dir.path().join("cut");
    let b: Vec<String> = cmd(&cut);
    let mut child = Command::new(env!("CARGO_BIN_EXE_isim"))
        .args(&b)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let finished = |d: &Path| -> usize {
        // A run is finished once renamed from `<id>.partial` (which gets its summary first).
        std::fs::read_dir(d.join("runs")).map_or(0, |it| {
            it.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_none_or(|x| x != "partial"))
                .filter(|p| p.join("summary.json").is_file())
                .count()
        })
    };
    let t0 = std::time::Instant::now();
    while finished(&cut) == 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it could be killed"
        );
        assert!(t0.elapsed().as_secs() < 300, "no run finished in 300 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done = finished(&cut);
    assert!(done < 4, "every run finished before the kill landed");
    assert!(
        !cut.join("sweep.json").exists(),
        "a killed sweep wrote its results"
    );

    let out = ok(&b.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        out.contains(&format!("{} runs executed, {done} reused", 4 - done)),
        "{out}"
    );
    // sweep.json records each run's command, which names the sweep's own directory.
    let results = |d: &Path| {
        std::fs::read_to_string(d.join("sweep.json"))
            .unwrap()
            .replace(d.to_str().unwrap(), "DIR")
    };
    assert!(results(&cut) == results(&whole), "sweep.json differs");
    for e in std::fs::read_dir(whole.join("runs")).unwrap() {
        let name = e.unwrap().file_name();
        assert_same_tree(
            &whole.join("runs").join(&name),
            &cut.join("runs").join(&name),
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(cut.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial") || n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `--csv` prints the scaling tables of `sweep.json` as CSV and nothing else on standard output
/// (a rerun of a finished sweep, so the CSV of a resumed sweep is checked too); the sweep's
/// files are the same as without it.
#[test]
fn csv_prints_the_scaling_tables_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let sw = dir.path().join("sweep");
    let cmd = |extra: &[&str]| {
        let mut v = vec![
            "sweep",
            "--workload",
            "lu-owner",
            "--cores",
            "1,2",
            "--size",
            "4",
            "-j",
            "2",
            "--out",
            sw.to_str().unwrap(),
        ];
        v.extend(extra);
        isim(&v)
    };
    let text = cmd(&[]);
    assert!(text.status.success());
    let results = std::fs::read(sw.join("sweep.json")).unwrap();
    let o = cmd(&["--csv"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(sw.join("sweep.json")).unwrap(), results);
    let v: serde_json::Value = serde_json::from_slice(&results).unwrap();
    let tables: Vec<accounting::table::ReportTable> =
        serde_json::from_value(v["report_tables"].clone()).unwrap();
    assert_eq!(tables.len(), 2, "the scaling table and the speedup stack");
    let csv = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        csv,
        format!(
            "# {}\r\n{}\r\n# {}\r\n{}",
            tables[0].title,
            tables[0].render_csv(),
            tables[1].title,
            tables[1].render_csv()
        )
    );
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert!(lines[1].starts_with("cores,cycles,speedup,efficiency,working threads,base %,"));
    assert!(
        lines[2].starts_with("1,") && lines[3].starts_with("2,"),
        "{csv}"
    );
    assert!(
        lines[4].is_empty() && lines[5].starts_with("# Speedup stack"),
        "{csv}"
    );
    assert!(
        lines[6].starts_with("cores,speedup,ideal,gap,base,"),
        "{csv}"
    );
    // Each table: title, header, two core counts; a blank line between; the last CRLF.
    assert_eq!(lines.len(), 10, "{csv}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("0 runs executed, 2 reused"), "{err}");
    assert!(err.contains("sweep directory:"), "{err}");
}
