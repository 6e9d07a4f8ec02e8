//! The `isim` binary end to end: generating and inspecting a trace, importing ChampSim traces
//! written by an independent script (tests/data/make_champsim.py) and comparing counts,
//! config checking with several mistakes at once, clear errors for bad input, and traces of
//! format v1 (tests/data/v1/, written by the isim before v2) read, counted and simulated as
//! that isim did; `trace-info` of a v2 trace reads the counts stored in its tables, and
//! `--verify` finds the same by decoding.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fails, ok};

/// `summary.json` of `isim run --trace trace -o run`, without the trace's path.
fn simulated_summary(trace: &Path, run: &Path) -> serde_json::Value {
    // The stored summaries were simulated before `[coherence] snoop_latency`,
    // `[core.store_forward]` and the engine's sharing quantum existed: 0, `enabled = false`
    // and `--sharing-quantum 0` are the model they were made with (these tests check the
    // trace formats, not the model).
    ok(&[
        "run",
        "--trace",
        trace.to_str().unwrap(),
        "--set",
        "coherence.snoop_latency=0",
        "--set",
        "core.store_forward.enabled=false",
        "--sharing-quantum",
        "0",
        "-o",
        run.to_str().unwrap(),
    ]);
    let mut sum: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    sum.as_object_mut().unwrap().remove("trace");
    assert_eq!(
        sum.as_object_mut().unwrap().remove("sharing_quantum"),
        Some(0.into())
    );
    // Fields summary.json gained after the stored summaries were written (each thread's start,
    // for the thread groups; the synchronization counts, zero in these traces' runs without
    // mutexes); everything the stored ones hold must be unchanged.
    let sync = sum
        .as_object_mut()
        .unwrap()
        .remove("sync")
        .expect("sync counts");
    assert_eq!(sync["lock_acquisitions"], 0, "{sync}");
    for t in sum["threads"].as_array_mut().unwrap() {
        let t = t.as_object_mut().unwrap();
        assert!(t.remove("start_function").is_some(), "{t:?}");
        t.remove("start_location");
        // Stored summaries ran thread t on core t; threads that do not outlive each other
        // share cores now, and these traces' threads are all alive at once.
        let thread = t["thread"].clone();
        assert_eq!(t.remove("core"), Some(thread), "{t:?}");
        // A component added later (dependences through memory): none in these traces.
        let stack = t["stack"].as_object_mut().unwrap();
        assert_eq!(stack.remove("depend-mem"), Some(0.0.into()), "{stack:?}");
    }
    sum
}

fn info(path: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(&["trace-info", path.to_str().unwrap(), "--json"])).expect("json")
}

#[test]
fn gen_lu_owner_16_threads_and_trace_info_shows_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.itrace");
    let out = ok(&[
        "gen",
        "lu-owner",
        "--threads",
        "16",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(out.contains("16 threads"), "{out}");
    let text = ok(&["trace-info", t.to_str().unwrap()]);
    assert!(text.contains("threads     16"), "{text}");
    let j = info(&t);
    let threads = j["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 16);
    // Default size 16 blocks: 15 elimination steps, two barriers each.
    for th in threads {
        assert_eq!(th["markers"]["barrier"], 30, "{th}");
        assert!(th["instructions"].as_u64().unwrap() > 10_000);
    }
    let counts: Vec<u64> = threads
        .iter()
        .map(|t| t["instructions"].as_u64().unwrap())
        .collect();
    assert!(
        counts.iter().max() > counts.iter().min(),
        "lu-owner should be imbalanced"
    );
    assert_eq!(threads[0]["markers"]["create"], 15);
    assert_eq!(threads[0]["markers"]["join"], 15);
}

fn champsim(
    dir: &Path,
    name: &str,
    kind: &str,
    iters: u32,
) -> (std::path::PathBuf, serde_json::Value) {
    let p = dir.join(name);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/make_champsim.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(&p)
        .arg(kind)
        .arg(iters.to_string())
        .output()
        .expect("python3 must be installed to run this test");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (p, serde_json::from_slice(&o.stdout).unwrap())
}

#[test]
fn champsim_import_agrees_with_the_script_on_every_count() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["raw", "gz", "xz"] {
        let (input, want) = champsim(dir.path(), &format!("in.{kind}"), kind, 3000);
        let out = dir.path().join(format!("{kind}.itrace"));
        ok(&[
            "import",
            "champsim",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let j = info(&out);
        let t0 = &j["threads"][0];
        for key in [
            "instructions",
            "loads",
            "stores",
            "branches",
            "taken_branches",
        ] {
            assert_eq!(t0[key], want[key], "{kind}: {key}");
        }
        assert_eq!(j["isa"], "champsim");
    }
}

#[test]
fn several_champsim_files_become_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (a, wa) = champsim(dir.path(), "a.trace", "raw", 500);
    let (b, wb) = champsim(dir.path(), "b.trace.gz", "gz", 800);
    let out = dir.path().join("two.itrace");
    ok(&[
        "import",
        "champsim",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let j = info(&out);
    assert_eq!(j["threads"].as_array().unwrap().len(), 2);
    assert_eq!(j["threads"][0]["instructions"], wa["instructions"]);
    assert_eq!(j["threads"][1]["instructions"], wb["instructions"]);
    assert_eq!(j["threads"][0]["markers"]["create"], 1);
}

#[test]
fn a_cut_champsim_record_is_an_error_naming_file_and_record() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = champsim(dir.path(), "cut.trace", "raw", 50);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&p, &bytes).unwrap();
    let out = dir.path().join("cut.itrace");
    let err = fails(&[
        "import",
        "champsim",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("cut.trace") && err.contains("inside record") && err.contains("54 of 64"),
        "{err}"
    );
    assert!(!out.exists(), "a failed import left an output file");
}

#[test]
fn config_check_reports_three_mistakes_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/penryn-4x4.toml"),
    )
    .unwrap()
    .replace("rob_size = 96", "rob_sise = 96")
    .replace("frequency = \"2.67GHz\"", "frequency = \"2.67GQz\"")
    .replace("associativity = 12", "associativity = 7");
    assert_ne!(
        text,
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/penryn-4x4.toml")
        )
        .unwrap()
    );
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&["config", "check", cfg.to_str().unwrap()]);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("bad.toml:") && !l.contains("error(s)"))
        .collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("core.rob_sise = 96") && l.contains("unknown key")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("system.frequency") && l.contains("2.67GQz")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("cache.l2") && l.contains("7")),
        "{err}"
    );
    assert!(err.contains("3 error(s)"), "{err}");
}

#[test]
fn config_check_and_show_accept_every_shipped_config() {
    for f in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("configs")).unwrap() {
        let f = f.unwrap().path();
        ok(&["config", "check", f.to_str().unwrap()]);
        let shown = ok(&[
            "config",
            "show",
            f.to_str().unwrap(),
            "--set",
            "core.rob_size=128",
        ]);
        assert!(shown.contains("rob_size = 128"), "{shown}");
    }
    assert!(ok(&["config", "show"]).contains("[cache.l1d]"));
}

#[test]
fn workloads_lists_every_generator_with_what_it_shows() {
    let out = ok(&["workloads"]);
    for name in [
        "lu-owner",
        "radix-miss",
        "serial-phases",
        "false-sharing",
        "lock-contention",
        "stream",
        "pointer-chase",
        "dep-chain",
        "indep-alu",
        "random-branch",
    ] {
        assert!(out.contains(name), "{name} missing");
    }
    assert!(out.matches("shows:").count() >= 10);
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.itrace");
    let err = fails(&["trace-info", missing.to_str().unwrap()]);
    assert!(
        err.contains("nope.itrace") && err.contains("cannot open"),
        "{err}"
    );
    let err = fails(&["gen", "lu-ownr", "--threads", "2", "-o", "x.itrace"]);
    assert!(
        err.contains("unknown workload `lu-ownr`") && err.contains("lu-owner"),
        "{err}"
    );
    let junk = dir.path().join("junk.itrace");
    std::fs::write(&junk, b"hello world, this is not a trace").unwrap();
    let err = fails(&["trace-info", junk.to_str().unwrap()]);
    assert!(
        err.contains("junk.itrace: byte 0") && err.contains("not an isim trace"),
        "{err}"
    );
}

#[test]
fn every_command_has_help() {
    for args in [
        vec!["--help"],
        vec!["workloads", "--help"],
        vec!["gen", "--help"],
        vec!["import", "--help"],
        vec!["import", "champsim", "--help"],
        vec!["trace-info", "--help"],
        vec!["config", "--help"],
        vec!["config", "check", "--help"],
        vec!["config", "show", "--help"],
    ] {
        let out = ok(&args);
        assert!(out.contains("Usage:"), "{args:?}: {out}");
    }
}

#[test]
fn run_with_defaults_prints_cycle_stacks_and_writes_the_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = Command::new(env!("CARGO_BIN_EXE_isim"))
        .current_dir(dir.path())
        .args(["run", "--size", "6", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("lu-owner on 8 cores"), "{text}");
    assert!(
        text.contains("cyc |") && text.contains("legend:") && text.contains("simulated MIPS"),
        "{text}"
    );
    for f in [
        "summary.json",
        "config.toml",
        "attribution.json",
        "sections.json",
        "cycle-stacks.svg",
        "trace.itrace",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["schema"], "isim-run/1");
    assert_eq!(s["threads"].as_array().unwrap().len(), 8);
    assert!(!dir.path().join("r.partial").exists());
}

#[test]
fn run_refuses_bad_requests_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = out.to_str().unwrap();
    let err = fails(&[
        "run",
        "--workload",
        "stream",
        "--threads",
        "4",
        "--cores",
        "2",
        "--size",
        "10",
        "-o",
        o,
    ]);
    assert!(
        err.contains(
            "--cores 2 is smaller than the 4 threads of the trace that can be alive at once"
        ),
        "{err}"
    );
    let err = fails(&["run", "--workload", "nope", "-o", o]);
    assert!(err.contains("unknown workload `nope`"), "{err}");
    let err = fails(&["run", "--set", "core.rob_sise=4", "-o", o]);
    assert!(
        err.contains("core.rob_sise") && err.contains("unknown key"),
        "{err}"
    );
    assert!(!out.exists(), "a failed run left a run directory");
    std::fs::create_dir_all(dir.path().join("mine")).unwrap();
    std::fs::write(dir.path().join("mine/notes.txt"), "keep").unwrap();
    let err = fails(&[
        "run",
        "--size",
        "4",
        "-o",
        dir.path().join("mine").to_str().unwrap(),
    ]);
    assert!(err.contains("is not an isim run directory"), "{err}");
}

/// `isim run | head -1`: when the reader goes away the process ends by SIGPIPE, quietly, like a
/// Unix filter, instead of panicking in `println!` (exit 101, "failed printing to stdout").
/// The read end is closed before the simulation prints anything (the run takes a while first).
#[test]
fn a_closed_stdout_ends_the_process_by_sigpipe_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = Command::new(env!("CARGO_BIN_EXE_isim"))
        .args(["run", "-w", "lu-owner", "-t", "4", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run isim");
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "isim panicked: {stderr}");
    const SIGPIPE: i32 = 13; // Linux's number; the tests do not depend on the libc crate
    assert_eq!(o.status.signal(), Some(SIGPIPE), "status {:?}", o.status);
}

#[test]
fn v1_traces_read_count_and_simulate_as_the_isim_that_wrote_them() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["lu-owner-t1", "owner-barrier-t2"] {
        let data = common::root().join("tests/data/v1");
        let t = data.join(format!("{name}.itrace"));
        let expected = |what: &str| -> serde_json::Value {
            let p = data.join(format!("{name}.{what}.json"));
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        };
        // trace-info decodes a v1 trace (it stores no counts) and finds what v1 isim found.
        let mut j = info(&t);
        assert_eq!(j["format_version"], 1, "{name}");
        assert_eq!(j["verified"], true, "{name}");
        for k in ["file", "format_version", "verified"] {
            j.as_object_mut().unwrap().remove(k);
        }
        assert_eq!(j, expected("info"), "{name}");
        // Simulated, it gives v1 isim's summary (but for the trace's path).
        let run = dir.path().join(name);
        let sum = simulated_summary(&t, &run);
        assert_eq!(sum, expected("summary"), "{name}");
        // Rewritten in the current version: smaller, the same counts stored, the same
        // simulation.
        let v2 = dir.path().join(format!("{name}-v2.itrace"));
        sim_frontend::format::writer::rewrite(&t, &v2, true).unwrap();
        assert!(
            std::fs::metadata(&v2).unwrap().len() * 3 < std::fs::metadata(&t).unwrap().len(),
            "{name}: rewritten not a third of v1"
        );
        let stored = info(&v2);
        assert_eq!(
            (stored["format_version"].clone(), stored["verified"].clone()),
            (sim_frontend::format::VERSION.into(), false.into())
        );
        let verified: serde_json::Value = serde_json::from_str(&ok(&[
            "trace-info",
            v2.to_str().unwrap(),
            "--json",
            "--verify",
        ]))
        .unwrap();
        assert_eq!(verified["verified"], true);
        assert_eq!(stored["threads"], verified["threads"], "{name}");
        assert_eq!(stored["threads"], expected("info")["threads"], "{name}");
        let run2 = dir.path().join(format!("{name}-v2"));
        ok(&[
            "run",
            "--trace",
            v2.to_str().unwrap(),
            "--set",
            "coherence.snoop_latency=0",
            "--set",
            "core.store_forward.enabled=false",
            "--sharing-quantum",
            "0",
            "-o",
            run2.to_str().unwrap(),
        ]);
        for f in ["attribution.json", "sections.json", "cycle-stacks.svg"] {
            assert!(
                std::fs::read(run.join(f)).unwrap() == std::fs::read(run2.join(f)).unwrap(),
                "{name}: {f}"
            );
        }
    }
}

/// A trace written by the isim before format v3 (tests/data/v2/: radix-miss at 4 threads and
/// 2048 keys, `isim gen`, with that isim's `trace-info --verify` and run summary): its stored
/// counts are read as they are, decoding finds the same, and it simulates as stored. (The
/// stored summary's timing was simulated again on 2026-12-07, when a load miss began taking
/// any free miss slot, not the next of a ring: 51,246.25 cycles with the v2 isim, 47,639.75
/// now; its instruction, access and miss counts did not change, where accesses were served
/// and how many merged into a miss or a prefetch in flight did, with the timing.)
/// Rewritten in v3, whose delta 0 says "the thread's previous address", each store of
/// `hist[k]++` costs a byte instead of its load's random delta again: the file is at least a
/// sixth smaller, with the same counts and the same simulation.
#[test]
fn v2_traces_read_and_simulate_as_the_isim_that_wrote_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::root().join("tests/data/v2");
    let name = "radix-miss-t4";
    let t = data.join(format!("{name}.itrace"));
    let expected = |what: &str| -> serde_json::Value {
        let p = data.join(format!("{name}.{what}.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let strip = |mut j: serde_json::Value| {
        for k in ["file", "format_version", "verified"] {
            j.as_object_mut().unwrap().remove(k);
        }
        j
    };
    let stored = info(&t);
    assert_eq!(
        (stored["format_version"].clone(), stored["verified"].clone()),
        (2.into(), false.into())
    );
    assert_eq!(strip(stored), expected("info"));
    let verified: serde_json::Value = serde_json::from_str(&ok(&[
        "trace-info",
        t.to_str().unwrap(),
        "--json",
        "--verify",
    ]))
    .unwrap();
    assert_eq!(verified["verified"], true);
    assert_eq!(strip(verified), expected("info"));
    let summary = |trace: &Path, out: &str| simulated_summary(trace, &dir.path().join(out));
    assert_eq!(summary(&t, "v2"), expected("summary"));
    let v3 = dir.path().join(format!("{name}-v3.itrace"));
    sim_frontend::format::writer::rewrite(&t, &v3, true).unwrap();
    let (b2, b3) = (
        std::fs::metadata(&t).unwrap().len(),
        std::fs::metadata(&v3).unwrap().len(),
    );
    assert!(b3 * 6 < b2 * 5, "v3 {b3} bytes against v2 {b2}");
    let j3 = info(&v3);
    assert_eq!(j3["format_version"], sim_frontend::format::VERSION);
    assert_eq!(j3["threads"], expected("info")["threads"]);
    assert_eq!(
        j3["static_instructions"],
        expected("info")["static_instructions"]
    );
    assert_eq!(summary(&v3, "v3"), expected("summary"));
}

/// A full disk while writing a trace: the write fails with ENOSPC (the trace's `.partial`
/// file is a symlink to /dev/full, a device every write to which fails so); the error names
/// the file, says the disk is full and how much the trace had taken, and leaves nothing that
/// looks like a trace.
#[test]
fn a_full_disk_is_a_clear_error_that_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.itrace");
    std::os::unix::fs::symlink("/dev/full", dir.path().join("t.itrace.partial")).unwrap();
    // Big enough to fill the writer's 1 MiB buffer before the end.
    let err = fails(&[
        "gen",
        "radix-miss",
        "--threads",
        "8",
        "--size",
        "65536",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(err.contains("t.itrace"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("the trace needed at least"), "{err}");
    assert!(err.contains("free space"), "{err}");
    let needed: u64 = err
        .split("needed at least ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    // It failed when the writer's 1 MiB buffer first went to the disk.
    assert!(needed > 1 << 20, "failed after {needed} bytes: {err}");
    assert!(!t.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Every file of a run directory, by name.
fn run_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A run on several host threads writes the same run directory, byte for byte, as on one,
/// in either model (exact: each simulated thread's records decoded and its branches predicted
/// ahead on a host thread of its own; parallel: the cores themselves simulated on several
/// host threads between their accesses to the shared levels): built-in workloads at 8
/// threads (false-sharing: every few instructions a coherence action between rounds), a v1
/// trace of a traced real program (recorded synchronization order) and a v2 trace.
#[test]
fn runs_are_byte_identical_on_1_2_and_3_host_threads() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::root().join("tests/data");
    let owner = data.join("v1/owner-barrier-t2.itrace");
    let radix = data.join("v2/radix-miss-t4.itrace");
    let inputs: Vec<(String, Vec<String>)> =
        ["lu-owner", "radix-miss", "lock-contention", "false-sharing"]
            .iter()
            .map(|w| {
                let args = ["-w", w, "-t", "8", "-s"];
                let size = match *w {
                    "radix-miss" => "4096",
                    "lock-contention" => "300",
                    "false-sharing" => "2000",
                    _ => "8",
                };
                (
                    w.to_string(),
                    args.iter().chain(&[size]).map(|s| s.to_string()).collect(),
                )
            })
            .chain([&owner, &radix].iter().map(|p| {
                (
                    p.file_stem().unwrap().to_string_lossy().into_owned(),
                    vec!["--trace".to_string(), p.to_str().unwrap().to_string()],
                )
            }))
            .collect();
    for (name, args) in &inputs {
        for model in ["exact", "parallel"] {
            let mut first: Option<Vec<(String, Vec<u8>)>> = None;
            for h in ["1", "2", "3"] {
                let out = dir.path().join(format!("{name}-{model}-{h}"));
                let mut a: Vec<&str> = vec![
                    "run",
                    "--model",
                    model,
                    "--host-threads",
                    h,
                    "-o",
                    out.to_str().unwrap(),
                ];
                a.extend(args.iter().map(String::as_str));
                ok(&a);
                let files = run_files(&out);
                assert!(files.iter().any(|(n, _)| n == "summary.json"), "{files:?}");
                match &first {
                    None => first = Some(files),
                    Some(f) => {
                        assert_eq!(
                            f.len(),
                            files.len(),
                            "{name}: files differ at {h} host threads"
                        );
                        for ((n1, b1), (n2, b2)) in f.iter().zip(&files) {
                            assert_eq!(n1, n2);
                            assert!(
                                b1 == b2,
                                "{name}: {n1} differs at {h} host threads ({model})"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// A damaged chunk is the same error, naming the file and thread, whether the records are
/// decoded on the simulating thread or ahead on another, in either model.
#[test]
fn a_damaged_trace_is_the_same_error_on_any_number_of_host_threads() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.itrace");
    ok(&[
        "gen",
        "radix-miss",
        "--threads",
        "4",
        "--size",
        "65536",
        "-o",
        t.to_str().unwrap(),
    ]);
    // Flip a byte in the middle of the file: inside some thread's chunks.
    let mut bytes = std::fs::read(&t).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&t, &bytes).unwrap();
    let errs: Vec<String> = [
        ("1", "exact"),
        ("2", "exact"),
        ("1", "parallel"),
        ("3", "parallel"),
    ]
    .iter()
    .map(|(h, model)| {
        let out = dir.path().join(format!("run-{h}-{model}"));
        fails(&[
            "run",
            "--model",
            model,
            "--host-threads",
            h,
            "--trace",
            t.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
    })
    .collect();
    assert!(errs[0].contains("t.itrace"), "{}", errs[0]);
    assert!(errs[0].contains("thread"), "{}", errs[0]);
    for e in &errs[1..] {
        assert_eq!(&errs[0], e);
    }
    // Nothing is left of the failed runs, not even their `.partial` directories.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "t.itrace")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
