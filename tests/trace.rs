//! `isim trace` on real programs: the example programs of `examples/c/` (compiled here with
//! `gcc -g -O2`) traced under QEMU and checked against
//! * **callgrind** (peer oracle): per thread, the instructions, reads and writes executed
//!   inside the measured function equal `valgrind --tool=callgrind --separate-threads=yes
//!   --toggle-collect=FUNCTION` on the same binary — exactly, with one documented difference
//!   of counting: callgrind counts a read-modify-write instruction as one write, so its `Dr`
//!   is our reads minus our read-modify-writes;
//! * the programs' own structure: per thread, as many barrier, lock/unlock, create and join
//!   markers as the source says;
//! * the source map: the planted imbalance line of `owner_barrier.c` resolves to its
//!   file:line, and LIME names it as the top cause;
//! * `isim trace-info`: the trace read back gives the tracer's own summary, field by field;
//! * the branch predictor on a real blocked LU: TAGE learns its 16-iteration loops, which the
//!   tournament predictor mispredicts at every exit;
//! * bad inputs and dying programs: clear errors, and valid traces of what ran.
//!
//! Needs `qemu-x86_64` (Debian `qemu-user`), gcc and valgrind; `.ci/run` installs them. Under
//! `CI=true` a missing tool fails the tests; elsewhere they are skipped with a message.
//! The tracer's two shared libraries are built once per test run into
//! `target/tracer-test/release` (a nested `cargo build`; cargo does not build cdylibs for
//! `cargo test`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use common::{compile, example, root, tracer_libs};

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

/// `isim trace --json -o OUT -- PROGRAM ARGS`: the tracer's summary.
fn trace(out: &Path, roi: &str, program: &Path, args: &[&str]) -> Value {
    let mut a = vec![
        "trace",
        "--json",
        "--roi",
        roi,
        "-o",
        out.to_str().unwrap(),
        "--",
    ];
    a.push(program.to_str().unwrap());
    a.extend_from_slice(args);
    let out = ok(&isim(&a), "isim trace");
    // The program's own output comes first, on the same standard output.
    let json = out.find("\n{\n").map_or(out.as_str(), |i| &out[i + 1..]);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn marker(t: &Value, kind: &str) -> u64 {
    t["markers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m[0] == kind)
        .map_or(0, |m| m[1].as_u64().unwrap())
}

/// Per callgrind thread number (1 = main), the `Ir Dr Dw` totals of a `--separate-threads=yes
/// --toggle-collect=FUNCTION` run.
fn callgrind(dir: &Path, program: &Path, args: &[&str], function: &str) -> BTreeMap<u32, [u64; 3]> {
    // One prefix per program and function: two programs measured in one function must not
    // read each other's files.
    let stem = program.file_name().unwrap().to_string_lossy();
    let prefix = dir.join(format!("cg-{stem}-{function}"));
    let out = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--separate-threads=yes",
            "--cache-sim=yes",
        ])
        .arg(format!("--toggle-collect={function}"))
        .arg(format!("--callgrind-out-file={}.%p", prefix.display()))
        .arg(program)
        .args(args)
        .output()
        .expect("run valgrind");
    assert!(
        out.status.success(),
        "callgrind: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m = BTreeMap::new();
    let stem = prefix.file_name().unwrap().to_string_lossy().into_owned();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&format!("{stem}.")) else {
            continue;
        };
        // <pid>-<NN> per thread.
        let Some((_, nn)) = rest.split_once('-') else {
            continue;
        };
        let thread: u32 = nn.parse().unwrap();
        let text = std::fs::read_to_string(e.path()).unwrap();
        let events: Vec<&str> = text
            .lines()
            .find_map(|l| l.strip_prefix("events: "))
            .expect("events line")
            .split_whitespace()
            .collect();
        let vals: Vec<u64> = text
            .lines()
            .find_map(|l| l.strip_prefix("summary: "))
            .expect("summary line")
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        let get = |k: &str| {
            events
                .iter()
                .position(|e| *e == k)
                .and_then(|i| vals.get(i).copied())
                .unwrap_or(0)
        };
        m.insert(thread, [get("Ir"), get("Dr"), get("Dw")]);
    }
    m
}

/// The peer oracle: per thread, inside the measured function, isim's trace agrees exactly
/// with callgrind on instructions, reads (less read-modify-writes, see the module docs) and
/// writes; for four example programs and a single-threaded loop.
#[test]
fn traced_counts_inside_the_measured_function_equal_callgrinds() {
    if !common::tools_present(&["qemu-x86_64", "gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // `c11_threads`: C11 <threads.h> calls, which glibc builds on its internal pthread
    // functions; before they were wrapped by name the trace held the main thread alone.
    let cases: [(&str, &str, &[&str]); 5] = [
        ("owner_barrier", "update_row", &["-t", "4", "-n", "48"]),
        ("mutex_counter", "private_work", &["-t", "4", "-i", "100"]),
        ("late_threads", "chain", &["-t", "4"]),
        ("loop", "kernel", &["20000"]),
        ("c11_threads", "private_work", &["4", "40", "300"]),
    ];
    println!(
        "{:<14} {:<13} {:>6} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "program", "function", "thread", "cg Ir", "isim", "cg Dr", "isim", "cg Dw", "isim", "rmw"
    );
    for (name, function, args) in cases {
        let exe = example(dir.path(), name);
        let t = dir.path().join(format!("{name}.itrace"));
        trace(&t, "main", &exe, args);
        let inside: Value = serde_json::from_str(&ok(
            &isim(&[
                "trace-info",
                t.to_str().unwrap(),
                "--inside",
                function,
                "--json",
            ]),
            "trace-info --inside",
        ))
        .unwrap();
        let cg = callgrind(dir.path(), &exe, args, function);
        let ours = inside["threads"].as_array().unwrap();
        assert_eq!(
            ours.len(),
            cg.len(),
            "{name}: threads: ours {ours:?}, callgrind {cg:?}"
        );
        let mut measured = 0;
        for (i, row) in ours.iter().enumerate() {
            let c = cg[&(i as u32 + 1)];
            let g = |k: &str| row[k].as_u64().unwrap();
            let (ins, loads, stores, rmw) = (
                g("instructions"),
                g("loads"),
                g("stores"),
                g("read_modify_writes"),
            );
            println!(
                "{name:<14} {function:<13} {i:>6} {:>10} {ins:>10} {:>9} {:>9} {:>9} {stores:>9} {rmw:>7}",
                c[0],
                c[1],
                loads - rmw,
                c[2]
            );
            assert_eq!(
                ins, c[0],
                "{name} thread {i}: instructions inside {function}"
            );
            assert_eq!(
                loads - rmw,
                c[1],
                "{name} thread {i}: reads inside {function}"
            );
            assert_eq!(stores, c[2], "{name} thread {i}: writes inside {function}");
            measured += ins;
        }
        assert!(
            measured > 10_000,
            "{name}: the measured function ran ({measured} instructions)"
        );
    }
}

/// The markers say what the programs do: `owner_barrier -t 4 -n 24` makes every thread wait
/// 23 times at the barrier and the main thread create and join 3; `mutex_counter -t 3 -i 40`
/// makes each worker lock and unlock 40 times after one start barrier, main creating and
/// joining 3; `late_threads -t 4` has main create 3, join 3, and everyone meet once.
#[test]
fn sync_markers_per_thread_match_the_programs() {
    if !common::tools_present(&["qemu-x86_64", "gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, args: &[&str], expect: &dyn Fn(usize, &str) -> u64| {
        let exe = example(dir.path(), name);
        let s = trace(
            &dir.path().join(format!("{name}.itrace")),
            "main",
            &exe,
            args,
        );
        let threads = s["threads"].as_array().unwrap();
        for (i, t) in threads.iter().enumerate() {
            for k in [
                "barrier",
                "mutex-lock",
                "mutex-unlock",
                "create",
                "join",
                "cond-wait",
            ] {
                assert_eq!(
                    marker(t, k),
                    expect(i, k),
                    "{name} thread {i}: {k} markers in {t}"
                );
            }
            assert!(!t["cut"].as_bool().unwrap(), "{name} thread {i} cut");
        }
        threads.len()
    };
    let n = check(
        "owner_barrier",
        &["-t", "4", "-n", "24"],
        &|i, k| match (i, k) {
            (_, "barrier") => 23,
            (0, "create" | "join") => 3,
            _ => 0,
        },
    );
    assert_eq!(n, 4);
    let n = check(
        "mutex_counter",
        &["-t", "3", "-i", "40"],
        &|i, k| match (i, k) {
            (0, "create" | "join") => 3,
            (0, _) => 0,
            (_, "barrier") => 1,
            (_, "mutex-lock" | "mutex-unlock") => 40,
            _ => 0,
        },
    );
    assert_eq!(n, 4);
    let n = check("late_threads", &["-t", "4"], &|i, k| match (i, k) {
        (_, "barrier") => 1,
        (0, "create" | "join") => 3,
        _ => 0,
    });
    assert_eq!(n, 4);
}

/// The line marked PLANTED in owner_barrier.c (found by reading the source) is in the source
/// map as `examples/c/owner_barrier.c:LINE`, and LIME, run on the simulated trace, ranks a
/// control-flow leader at that line first for the barrier's section.
#[test]
fn the_planted_line_resolves_to_its_file_and_line_and_lime_finds_it() {
    if !common::tools_present(&["qemu-x86_64", "gcc", "valgrind"]) {
        return;
    }
    let src = root().join("examples/c/owner_barrier.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let planted = 1 + text.lines().position(|l| l.contains("PLANTED:")).unwrap();
    let barrier = 1 + text
        .lines()
        .position(|l| l.contains("pthread_barrier_wait(&bar)"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let exe = example(dir.path(), "owner_barrier");
    let t = dir.path().join("ob.itrace");
    trace(&t, "markers", &exe, &["-t", "4", "-n", "48"]);
    let trace = sim_frontend::Trace::open(&t).unwrap();
    let want = format!("examples/c/owner_barrier.c:{planted}");
    let p = &trace.program;
    let at_line: Vec<u32> = (0..p.insts.len() as u32)
        .filter(|&s| p.file_line(s).as_deref() == Some(want.as_str()))
        .collect();
    assert!(!at_line.is_empty(), "no instruction at {want}");
    assert!(
        at_line
            .iter()
            .all(|&s| p.function_name(s) == Some("worker"))
    );

    let run = dir.path().join("run");
    ok(
        &isim(&[
            "run",
            "--trace",
            t.to_str().unwrap(),
            "--cores",
            "4",
            "--out",
            run.to_str().unwrap(),
        ]),
        "isim run",
    );
    let lime = ok(&isim(&["lime", run.to_str().unwrap()]), "isim lime");
    let lj: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("lime.json")).unwrap()).unwrap();
    let sections = lj["sections"].as_array().unwrap();
    let sec = sections
        .iter()
        .find(|s| s["location"] == format!("examples/c/owner_barrier.c:{barrier}"))
        .unwrap_or_else(|| panic!("no section closing at line {barrier}:\n{lime}"));
    let top = &sec["causes"][0];
    assert_eq!(top["kind"], "control-flow leader", "{lime}");
    assert!(
        top["location"].as_str().unwrap().starts_with(&want),
        "top cause {top} is not at {want}:\n{lime}"
    );
}

/// The trace read back by `isim trace-info` reports, per thread, exactly the tracer's own
/// summary: instructions, loads, stores, branches, taken branches and every marker kind.
#[test]
fn trace_info_reads_back_the_tracers_summary() {
    if !common::tools_present(&["qemu-x86_64", "gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, args) in [
        ("mutex_counter", &["-t", "4", "-i", "30"][..]),
        ("owner_barrier", &["-t", "3", "-n", "20"][..]),
    ] {
        let exe = example(dir.path(), name);
        let t = dir.path().join(format!("{name}.itrace"));
        let s = trace(&t, "main", &exe, args);
        let info: Value = serde_json::from_str(&ok(
            &isim(&["trace-info", t.to_str().unwrap(), "--json", "--verify"]),
            "trace-info",
        ))
        .unwrap();
        let ours = s["threads"].as_array().unwrap();
        let back = info["threads"].as_array().unwrap();
        assert_eq!(ours.len(), back.len());
        for (a, b) in ours.iter().zip(back) {
            for k in [
                "instructions",
                "loads",
                "stores",
                "branches",
                "taken_branches",
            ] {
                assert_eq!(a[k], b[k], "{name} thread {}: {k}", a["thread"]);
            }
            let back_markers: BTreeMap<String, u64> = b["markers"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .filter(|m| m.1 > 0)
                .collect();
            let our_markers: BTreeMap<String, u64> = a["markers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (m[0].as_str().unwrap().to_string(), m[1].as_u64().unwrap()))
                .collect();
            assert_eq!(our_markers, back_markers, "{name} thread {}", a["thread"]);
        }
        let total: u64 = back
            .iter()
            .map(|t| t["instructions"].as_u64().unwrap())
            .sum();
        assert_eq!(s["instructions"].as_u64(), Some(total));
        assert_eq!(s["static_instructions"], info["static_instructions"]);
    }
}

/// Programs that exit non-zero, crash or are killed, and programs that fork or exec, leave a
/// valid trace with a message; a missing program, a non-x86-64 file, a statically linked
/// program and a missing QEMU are clear errors that leave no trace behind.
#[test]
fn dying_programs_leave_valid_traces_and_bad_requests_are_clear_errors() {
    if !common::tools_present(&["qemu-x86_64", "gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("ends.c");
    std::fs::write(
        &src,
        r#"#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile long sink;
static void *w(void *a) { for (long i = 0; i < 20000; i++) sink += i; return a; }
int main(int argc, char **argv) {
    pthread_t t; pthread_create(&t, NULL, w, NULL); pthread_join(t, NULL);
    for (long i = 0; i < 10000; i++) sink += i;
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "segv")) { volatile int *p = 0; *p = 1; }
    if (!strcmp(m, "kill")) raise(SIGKILL);
    if (!strcmp(m, "exit3")) exit(3);
    if (!strcmp(m, "fork")) { if (fork() == 0) { for (long i = 0; i < 10000; i++) sink += i; _exit(0); } wait(NULL); }
    if (!strcmp(m, "exec")) execlp("true", "true", (char *)0);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = compile(dir.path(), "ends", &src, &[]);
    for (mode, status, says) in [
        ("exit3", "exit 3", "ended with exit 3"),
        ("segv", "signal 11", "ended with signal 11"),
        ("kill", "signal 9", "ended with signal 9"),
        ("fork", "exit 0", "only the original process is traced"),
        ("exec", "exit 0", "called exec"),
    ] {
        let t = dir.path().join(format!("{mode}.itrace"));
        let s = trace(&t, "main", &exe, &[mode]);
        assert_eq!(s["program_status"], status, "{mode}: {s}");
        let warnings = s["warnings"].to_string();
        assert!(warnings.contains(says), "{mode}: {warnings}");
        // The worker ran to its end in every case: 20,000 iterations of its loop.
        let info: Value = serde_json::from_str(&ok(
            &isim(&["trace-info", t.to_str().unwrap(), "--json", "--verify"]),
            "trace-info",
        ))
        .unwrap();
        assert_eq!(info["threads"].as_array().unwrap().len(), 2, "{mode}");
        assert!(
            info["threads"][1]["instructions"].as_u64().unwrap() > 20_000 * 3,
            "{mode}: {info}"
        );
        // The main thread's own loop ran before the end in every mode.
        assert!(
            info["threads"][0]["stores"].as_u64().unwrap() >= 10_000,
            "{mode}: {info}"
        );
    }

    let err = |args: &[&str], env: &[(&str, &str)]| {
        let out = dir.path().join("bad.itrace");
        let mut c = Command::new(env!("CARGO_BIN_EXE_isim"));
        c.env("ISIM_TRACER_DIR", tracer_libs())
            .args(["trace", "-o", out.to_str().unwrap(), "--"])
            .args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(!out.exists(), "{args:?} left a trace behind");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = err(&["./no/such/program"], &[]);
    assert!(
        e.contains("no/such/program") && e.contains("cannot read"),
        "{e}"
    );
    let script = dir.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let e = err(&[script.to_str().unwrap()], &[]);
    assert!(e.contains("expected an x86-64 ELF program"), "{e}");
    // An ELF header for AArch64 (e_machine 183): a valid file of the wrong architecture.
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2; // 64-bit
    elf[5] = 1; // little-endian
    elf[6] = 1; // version
    elf[16] = 2; // ET_EXEC
    elf[18] = 183; // EM_AARCH64
    elf[20] = 1;
    elf[52] = 64; // e_ehsize
    elf[54] = 56; // e_phentsize
    elf[58] = 64; // e_shentsize
    let arm = dir.path().join("arm-prog");
    std::fs::write(&arm, &elf).unwrap();
    let e = err(&[arm.to_str().unwrap()], &[]);
    assert!(e.contains("x86-64") && e.contains("Aarch64"), "{e}");
    let stat = compile(
        dir.path(),
        "static-loop",
        &root().join("examples/c/loop.c"),
        &["-static"],
    );
    let e = err(&[stat.to_str().unwrap()], &[]);
    assert!(e.contains("statically linked"), "{e}");
    let empty = dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let e = err(
        &[exe.to_str().unwrap()],
        &[("PATH", empty.to_str().unwrap())],
    );
    assert!(
        e.contains("qemu-x86_64 was not found") && e.contains("apt-get install qemu-user"),
        "{e}"
    );
}

/// The TAGE default on a real blocked LU (`examples/c/blocked_lu.c`, 16-iteration inner
/// loops): the tournament predictor (10 bits of local history) mispredicts every exit of
/// those loops, TAGE with its loop predictor learns them. Oracle, per run: tournament's
/// mispredictions are at least one per inner-loop exit (trailing-update inner loops alone
/// execute (N/B)^3/3 blocks × B^2 exits ≈ N^3/(3B)), TAGE's at most a tenth of tournament's,
/// and the `branch` share of busy cycles falls accordingly.
#[test]
fn tage_learns_the_16_iteration_loops_of_a_blocked_lu() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = example(dir.path(), "blocked_lu");
    let t = dir.path().join("lu.itrace");
    let n = 128u64;
    trace(
        &t,
        "main",
        &exe,
        &["-t", "4", "-n", &n.to_string(), "-b", "16"],
    );
    let run = |bp: &str| -> Value {
        let out = dir.path().join(format!("run-{bp}"));
        ok(
            &isim(&[
                "run",
                "--trace",
                t.to_str().unwrap(),
                "--set",
                &format!("branch_predictor.type={bp}"),
                "-o",
                out.to_str().unwrap(),
            ]),
            "isim run",
        );
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
    };
    let stats = |s: &Value| {
        let th = s["threads"].as_array().unwrap();
        let sum = |k: &str| th.iter().map(|t| t[k].as_f64().unwrap()).sum::<f64>();
        let branch: f64 = th
            .iter()
            .map(|t| t["stack"]["branch"].as_f64().unwrap())
            .sum();
        let waiting: f64 = th
            .iter()
            .flat_map(|t| t["stack"].as_object().unwrap().iter())
            .filter(|(k, _)| k.starts_with("sync") || k.starts_with("imbalance"))
            .map(|(_, v)| v.as_f64().unwrap())
            .sum();
        (sum("mispredictions"), branch / (sum("cycles") - waiting))
    };
    let (m_tour, share_tour) = stats(&run("tournament"));
    let (m_tage, share_tage) = stats(&run("tage"));
    let exits = (n * n * n / 48) as f64;
    println!(
        "blocked LU N={n}: tournament {m_tour} mispredictions, branch {:.1} % of busy cycles; \
         tage {m_tage}, {:.1} %; trailing inner-loop exits {exits}",
        100.0 * share_tour,
        100.0 * share_tage
    );
    assert!(m_tour >= exits, "tournament {m_tour} < {exits} loop exits");
    assert!(
        m_tage <= m_tour / 10.0,
        "tage {m_tage} vs tournament {m_tour}"
    );
    assert!(
        share_tage < share_tour / 5.0,
        "{share_tage} vs {share_tour}"
    );
}

/// `isim trace` killed with SIGKILL (no chance to clean up) leaves no file that looks like a
/// trace: the output does not exist, and what is left (`.partial`, `.capture/`) is refused as
/// truncated by every reader; the same command then traces the program from scratch.
#[test]
fn a_killed_isim_trace_leaves_nothing_that_looks_complete() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = example(dir.path(), "owner_barrier");
    let t = dir.path().join("k.itrace");
    let args = [
        "trace",
        "-o",
        t.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "-t",
        "2",
        "-n",
        "200",
    ];
    let mut partial = t.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let mut killed_while_writing = false;
    // Kill it at growing delays until once it dies while writing the trace itself.
    for delay_ms in [300u64, 600, 900, 1200, 1600, 2000, 2500] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_isim"))
            .env("ISIM_TRACER_DIR", tracer_libs())
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let finished = child.try_wait().unwrap().is_some();
        child.kill().unwrap_or(());
        child.wait().unwrap();
        if finished {
            break;
        }
        assert!(
            !t.exists(),
            "killed after {delay_ms} ms, yet {} exists",
            t.display()
        );
        if partial.exists() {
            killed_while_writing = true;
            let e = sim_frontend::Trace::open(&partial)
                .err()
                .unwrap_or_else(|| panic!("a killed trace's .partial opens as a trace"));
            assert!(e.to_string().contains("truncated"), "{e}");
            break;
        }
    }
    assert!(
        killed_while_writing,
        "no kill landed while the trace was being written"
    );
    let s = trace(&t, "main", &exe, &["-t", "2", "-n", "200"]);
    assert!(s["instructions"].as_u64().unwrap() > 1_000_000, "{s}");
    assert!(!partial.exists());
    let info: Value = serde_json::from_str(&ok(
        &isim(&["trace-info", t.to_str().unwrap(), "--json", "--verify"]),
        "trace-info",
    ))
    .unwrap();
    assert_eq!(info["verified"], true);
}

/// A full disk while QEMU writes the raw capture (a file size limit stands in for it: the
/// plugin's writes past 256 KiB fail with EFBIG, as they would with ENOSPC): `isim trace`
/// refuses to convert a capture with holes, says why and how far the capture got, removes it,
/// and writes no trace; the same command without the limit then succeeds.
#[test]
fn a_full_disk_during_the_capture_is_a_clear_error_that_leaves_no_trace() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = example(dir.path(), "owner_barrier");
    let t = dir.path().join("f.itrace");
    // bash's `ulimit -f` counts KiB; SIGXFSZ ignored, so a write past the limit fails with
    // EFBIG instead of killing QEMU (an ignored signal stays ignored across exec).
    let o = Command::new("bash")
        .env("ISIM_TRACER_DIR", tracer_libs())
        .args([
            "-c",
            "ulimit -f 256 && trap '' XFSZ && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_isim"),
            "trace",
            "-o",
            t.to_str().unwrap(),
            "--",
            exe.to_str().unwrap(),
            "-t",
            "2",
            "-n",
            "100",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("the capture of"), "{err}");
    assert!(
        err.contains("is incomplete, so no trace was written"),
        "{err}"
    );
    assert!(err.contains("cannot write thread"), "{err}");
    assert!(err.contains("File too large"), "{err}");
    // How far it got: at least the limit, in bytes, and the capture removed.
    let reached: u64 = err
        .split("had reached ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in: {err}"));
    assert!(reached >= 256 << 10, "{reached}: {err}");
    assert!(err.contains("(removed)"), "{err}");
    assert!(!t.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("f.itrace"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let s = trace(&t, "main", &exe, &["-t", "2", "-n", "100"]);
    assert!(s["instructions"].as_u64().unwrap() > 100_000, "{s}");
}

/// QEMU failing after the program's exit call, before its own exit was done (QEMU 7.2 failed
/// an assertion of its own there in 1 of 50 traces of a CI run: `rcu_read_unlock: Assertion
/// ... failed`, then `exit 127`), loses nothing: every thread's stream was written by then, and
/// the plugin said so in `threads.tsv` at the exit call. The fault is injected (the plugin
/// aborts QEMU right after that, as the assertion did). Before, `isim trace` refused the
/// capture for its missing `threads.tsv` and advised freeing disk space.
#[test]
fn qemu_failing_after_the_programs_exit_call_loses_nothing() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = example(dir.path(), "owner_barrier");
    let args = ["-t", "4", "-n", "200"];
    let traced = |name: &str, fail: bool| {
        let t = dir.path().join(name);
        let mut c = Command::new(env!("CARGO_BIN_EXE_isim"));
        c.env("ISIM_TRACER_DIR", tracer_libs())
            .args(["trace", "--json", "-o"])
            .arg(&t)
            .arg("--")
            .arg(&exe)
            .args(args);
        // QEMU hands its environment to the program: the normal trace gets a variable of the
        // same size, so that the program starts up the same.
        c.env(
            if fail {
                "ISIM_TEST_QEMU_FAILS_AT_EXIT"
            } else {
                "ISIM_TEST_QEMU_FAILS_AT_EXIX"
            },
            "1",
        );
        let o = c.output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{name}: {err}");
        let json = out.find("\n{\n").map_or(out.as_str(), |i| &out[i + 1..]);
        let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
        (t, v, err)
    };
    let (_, normal, _) = traced("normal.itrace", false);
    let (t, failed, err) = traced("failed.itrace", true);
    // The program's own status, and a warning that names QEMU's.
    assert_eq!(failed["program_status"], "exit 0", "{failed}");
    let warnings: Vec<&str> = failed["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with("QEMU ended with")
            && w.contains("after the program's exit call (exit 0)")),
        "{warnings:?} {err}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("may be missing")),
        "{warnings:?}"
    );
    // Whole: every thread, with the instructions of a trace whose QEMU exited normally (the
    // program's threads each do fixed work between barriers).
    let per_thread = |v: &Value| -> Vec<u64> {
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["instructions"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(
        per_thread(&failed),
        per_thread(&normal),
        "{failed}\n{normal}"
    );
    let run = dir.path().join("run");
    ok(
        &isim(&[
            "run",
            "--trace",
            t.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
        ]),
        "isim run",
    );
}

/// Converting a capture on several host threads gives the same trace as on one, byte for
/// byte, whichever host thread finishes first (each thread's chunks are kept apart and
/// appended in thread order); and, read back, the same static table, source map, counts and
/// records thread by thread.
#[test]
fn converting_on_several_host_threads_writes_the_same_records() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = example(dir.path(), "owner_barrier");
    let t = dir.path().join("o.itrace");
    let o = Command::new(env!("CARGO_BIN_EXE_isim"))
        .env("ISIM_TRACER_DIR", tracer_libs())
        .args(["trace", "--keep-capture", "-o", t.to_str().unwrap(), "--"])
        .arg(&exe)
        .args(["-t", "4", "-n", "60"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cap = dir.path().join("o.itrace.capture");
    let convert = |host_threads: usize, name: &str| {
        let out = dir.path().join(name);
        let opts = sim_frontend::tracer::convert::Options {
            program: exe.clone(),
            args: vec!["-t".into(), "4".into(), "-n".into(), "60".into()],
            roi: sim_frontend::tracer::convert::RoiMode::Main,
            preload_name: isim::trace::PRELOAD_SO.into(),
            base_dir: None,
            host_threads,
        };
        let s = sim_frontend::tracer::convert::convert(&cap, &out, &opts).unwrap();
        (out, s)
    };
    let (one, s1) = convert(1, "one.itrace");
    let (again, _) = convert(1, "again.itrace");
    let (four, s4) = convert(4, "four.itrace");
    let bytes = std::fs::read(&one).unwrap();
    assert_eq!(bytes, std::fs::read(&again).unwrap());
    assert!(bytes == std::fs::read(&four).unwrap(), "4 host threads");
    for n in [2, 3] {
        let (other, _) = convert(n, &format!("h{n}.itrace"));
        assert!(bytes == std::fs::read(&other).unwrap(), "{n} host threads");
    }
    // No chunk file is left beside the traces.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    assert_eq!(s1.threads, s4.threads);
    assert_eq!(s1.warnings, s4.warnings);
    let (a, b) = (
        sim_frontend::Trace::open(&one).unwrap(),
        sim_frontend::Trace::open(&four).unwrap(),
    );
    assert_eq!(a.program, b.program);
    assert_eq!(a.meta, b.meta);
    assert_eq!(a.thread_count(), 4, "owner_barrier -t 4 runs four threads");
    let mut ba = sim_frontend::model::Batch::default();
    let mut bb = sim_frontend::model::Batch::default();
    for tid in 0..a.thread_count() {
        assert_eq!(
            a.threads[tid as usize].counts,
            b.threads[tid as usize].counts
        );
        let (mut sa, mut sb) = (a.stream(tid).unwrap(), b.stream(tid).unwrap());
        let (mut ra, mut rb) = (Vec::new(), Vec::new());
        while sa.next_batch(&mut ba).unwrap() {
            for r in &ba.records {
                let mem = match r {
                    sim_frontend::model::Record::Inst(i) => ba.mem_of(i).to_vec(),
                    _ => Vec::new(),
                };
                ra.push((*r, mem));
            }
        }
        while sb.next_batch(&mut bb).unwrap() {
            for r in &bb.records {
                let mem = match r {
                    sim_frontend::model::Record::Inst(i) => bb.mem_of(i).to_vec(),
                    _ => Vec::new(),
                };
                rb.push((*r, mem));
            }
        }
        assert!(ra.len() > 1000, "thread {tid}: {} records", ra.len());
        assert!(ra == rb, "thread {tid}: records differ");
    }
}

/// The value an atomic read-modify-write left is recorded after its store, also while the
/// process has one thread (QEMU then translates it as a load and a store, each reported: the
/// value read at the load was the one before). `main` adds 1000 three times before it creates
/// a thread, which adds 1000 once: the capture holds 1000, 2000, 3000 and 4000 (before the fix,
/// 0, 1000, 2000 and 4000, and a lock word first taken before any thread existed read as
/// never taken).
#[test]
fn atomic_values_are_those_left_before_the_first_thread_too() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("adds.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\n\
         static long c;\n\
         static void *add(void *a) { __atomic_fetch_add(&c, 1000, __ATOMIC_SEQ_CST); return a; }\n\
         int main(void) {\n\
           for (int i = 0; i < 3; i++) __atomic_fetch_add(&c, 1000, __ATOMIC_SEQ_CST);\n\
           pthread_t t; pthread_create(&t, 0, add, 0); pthread_join(t, 0);\n\
           return c == 4000 ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    let exe = compile(dir.path(), "adds", &src, &[]);
    let t = dir.path().join("a.itrace");
    let o = Command::new(env!("CARGO_BIN_EXE_isim"))
        .env("ISIM_TRACER_DIR", tracer_libs())
        .args(["trace", "--keep-capture", "-o", t.to_str().unwrap(), "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut values = Vec::new();
    for e in std::fs::read_dir(dir.path().join("a.itrace.capture")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "raw") {
            let bytes = std::fs::read(&p).unwrap();
            sim_frontend::tracer::raw::decode(&bytes, |w, _| {
                if let sim_frontend::tracer::raw::Word::Value { value, .. } = w
                    && value % 1000 == 0
                    && (1000..=4000).contains(&value)
                {
                    values.push(value);
                }
            })
            .unwrap();
        }
    }
    values.sort_unstable();
    assert_eq!(values, vec![1000, 2000, 3000, 4000]);
}

/// `source` (C) built as `name` in `dir` and traced: what `isim trace` printed, standard
/// output and error together (its warnings are on standard output). The trace must succeed.
fn trace_saying(dir: &Path, name: &str, source: &Path) -> String {
    let exe = common::compile(dir, name, source, &[]);
    let t = dir.join(format!("{name}.itrace"));
    let o = isim(&[
        "trace",
        "-o",
        t.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
    ]);
    ok(&o, &format!("isim trace of {name}")) + &String::from_utf8_lossy(&o.stderr)
}

/// A thread the tracer does not see created (here glibc's `clone` with a stack of its own and
/// a thread's flags, not `pthread_create`) is not traced, and `isim trace` says so: how many such threads ran
/// and how many instructions, which the capture counts from `main`'s start (a created
/// thread's start code before its `ThreadStart` is taken back). A program whose threads are
/// all created through `pthread_create` gets no such warning.
#[test]
fn threads_created_behind_the_tracers_back_are_reported() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("raw_clone.c");
    std::fs::write(
        &src,
        r#"#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
static volatile long sink;
static volatile int done;
/* No thread-local storage here: the thread shares main's. */
static int body(void *arg) {
    long x = (long)arg;
    for (long i = 0; i < 200000; i++) x = x * 3 + i;
    sink = x;
    done = 1;
    return 0;
}
int main(void) {
    size_t size = 1 << 20;
    char *stack = malloc(size);
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
    if (clone(body, stack + size, flags, (void *)1) < 0) { perror("clone"); return 1; }
    while (!done) sched_yield();
    printf("%ld\n", sink);
    return 0;
}
"#,
    )
    .unwrap();
    let said = trace_saying(dir.path(), "raw_clone", &src);
    let line = said
        .lines()
        .find(|l| l.contains("untraced"))
        .unwrap_or_else(|| panic!("no warning of the untraced thread: {said}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        line.starts_with("warning: 1 thread(s) ran") && n.len() == 2 && n[1] > 200_000,
        "{line}"
    );
    let exe = common::example(dir.path(), "mutex_counter");
    let o = isim(&[
        "trace",
        "-o",
        dir.path().join("mc.itrace").to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "-t",
        "4",
        "-i",
        "50",
    ]);
    let said = ok(&o, "isim trace of mutex_counter") + &String::from_utf8_lossy(&o.stderr);
    assert!(!said.contains("untraced"), "{said}");
}

/// libgomp sizes a team from the CPUs the process may use unless `OMP_NUM_THREADS` (or the
/// program) says otherwise: traced under `taskset -c 0` without the variable, an OpenMP
/// program runs one thread, and the simulated machine can only replay that team. `isim
/// trace` says so when the trace has as many threads as those CPUs and the variable was
/// unset; with `OMP_NUM_THREADS=4` under the same `taskset` the trace has the four threads
/// and no such warning.
#[test]
fn an_openmp_team_sized_by_the_host_is_reported() {
    if !common::tools_present(&["qemu-x86_64", "gcc", "taskset"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(
        dir.path(),
        "omp_critical",
        &root().join("examples/omp/omp_critical.c"),
        &["-fopenmp"],
    );
    let run = |threads: Option<&str>| -> Value {
        let t = dir
            .path()
            .join(format!("t{}.itrace", threads.unwrap_or("-")));
        let mut c = Command::new("taskset");
        c.args(["-c", "0", env!("CARGO_BIN_EXE_isim")])
            .current_dir(root())
            .env("ISIM_TRACER_DIR", tracer_libs())
            .env_remove("OMP_NUM_THREADS")
            .args(["trace", "--json", "-o", t.to_str().unwrap(), "--"])
            .arg(&exe)
            .args(["-n", "200"]);
        if let Some(n) = threads {
            c.env("OMP_NUM_THREADS", n);
        }
        let out = ok(&c.output().unwrap(), "isim trace of omp_critical");
        let json = out.find("\n{\n").map_or(out.as_str(), |i| &out[i + 1..]);
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let said = |v: &Value| {
        v["warnings"].as_array().unwrap().iter().any(|w| {
            w.as_str()
                .unwrap()
                .starts_with("OpenMP teams sized by the host")
        })
    };
    let host = run(None);
    assert_eq!(host["threads"].as_array().unwrap().len(), 1, "{host}");
    assert!(said(&host), "{}", host["warnings"]);
    let four = run(Some("4"));
    assert_eq!(four["threads"].as_array().unwrap().len(), 4, "{four}");
    assert!(!said(&four), "{}", four["warnings"]);
}
