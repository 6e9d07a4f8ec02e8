//! LIME end to end, on workloads whose cause of imbalance is known by construction: the
//! ownership test of `lu-owner` (control flow) at every thread count of the paper, the planted
//! missing load of `radix-miss` (hardware) with the miss-erasure what-if, and the balanced
//! negative control. Plus the CLI's report, JSON file and errors.

use std::path::{Path, PathBuf};
use std::process::Command;

use accounting::lime::{CauseKind, Options};
use isim::lime::{Selection, analyse, erase_whatif, report};
use isim::run::{RunDir, RunRequest, run};

fn simulate(dir: &Path, workload: &str, threads: u32) -> PathBuf {
    let out = dir.join(format!("{workload}-{threads}"));
    let req = RunRequest {
        workload: Some(workload.into()),
        threads: Some(threads),
        seed: 1,
        out: out.clone(),
        ..RunRequest::default()
    };
    run(&req, |_| {}).unwrap_or_else(|e| panic!("{workload}: {e:#}"));
    out
}

fn isim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_isim"))
}

/// LIME Fig. 6 / §5.5.1 in miniature: at 8, 16, 32 and 64 threads the most idle section is
/// the update barrier (`lu.c:60`) and its top cause is a control-flow leader at the
/// ownership test `lu.c:52`, the branch `(I + J) % P == MyNum`.
#[test]
fn lu_owner_top_cause_is_the_ownership_test_at_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    for threads in [8, 16, 32, 64] {
        let rd = RunDir::open(&simulate(dir.path(), "lu-owner", threads)).unwrap();
        let opts = Options::default();
        let (_, sections) = analyse(&rd, &[], &[], &opts, "test").unwrap();
        let rep = report(&rd, &sections, &opts);
        let top = &rep.sections[0];
        assert_eq!(
            top.location, "lu.c:60",
            "{threads} threads: {:?}",
            rep.sections
        );
        assert!(top.imbalance_pct > 5.0, "{threads}: {}", top.imbalance_pct);
        let cause = &top.causes[0];
        assert_eq!(
            cause.kind,
            CauseKind::ControlFlow.name(),
            "{threads}: {cause:?}"
        );
        assert!(
            cause.location.starts_with("lu.c:52"),
            "{threads} threads: {cause:?}"
        );
        assert!(cause.score > 0.5, "{threads}: {cause:?}");
        // Nothing else comes close (LIME reports about one control-flow cause for LU).
        assert!(
            top.causes
                .get(1)
                .is_none_or(|c| c.score < 0.5 * cause.score)
        );
        assert_eq!(
            top.rpt_control_flow.above, 1,
            "{threads}: {:?}",
            top.rpt_control_flow
        );
        // The diagonal section's imbalance comes from the diagonal-owner test (lu.c:38).
        let diag = rep
            .sections
            .iter()
            .find(|s| s.location == "lu.c:45")
            .unwrap();
        assert!(
            diag.causes[0].location.starts_with("lu.c:38"),
            "{:?}",
            diag.causes[0]
        );
    }
}

/// `radix-miss`: identical control flow; odd threads' bucket load at `radix.c:32` misses. The
/// top cause is that instruction's L1 misses, and erasing the top cause's misses removes at
/// least half of the section's imbalance (LIME Fig. 5: most of it).
#[test]
fn radix_miss_top_cause_is_the_planted_load_and_erasing_it_removes_the_imbalance() {
    let dir = tempfile::tempdir().unwrap();
    let rd = RunDir::open(&simulate(dir.path(), "radix-miss", 8)).unwrap();
    let opts = Options::default();
    let (_, sections) = analyse(&rd, &[], &[], &opts, "test").unwrap();
    let rep = report(&rd, &sections, &opts);
    let top = &rep.sections[0];
    assert_eq!(top.location, "radix.c:35");
    let cause = &top.causes[0];
    assert_eq!(cause.kind, CauseKind::L1Miss.name(), "{cause:?}");
    assert_eq!(cause.location, "radix.c:32");
    // The planted load is the first memory access of line 32 (the bucket load).
    let p = &rd.trace.program;
    let first_32 = (0..p.insts.len() as u32)
        .find(|&s| {
            p.file_line(s).as_deref() == Some("radix.c:32") && !p.insts[s as usize].mem.is_empty()
        })
        .unwrap();
    assert_eq!(cause.sidx, first_32);
    assert!(cause.score > 0.9, "{cause:?}");
    assert_eq!(
        top.rpt_control_flow.all, 0,
        "no control-flow cause: {:?}",
        top.causes
    );

    let rows = erase_whatif(&rd, &opts, None, &[Selection::Top(1)]).unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert!(r.imbalance_before > 20.0, "{r:?}");
    assert!(r.reduction_pct >= 50.0, "{r:?}");
    assert!(
        r.slowest.1 < r.slowest.0,
        "the slowest thread gets faster: {r:?}"
    );
}

/// The negative control: every thread does the same work on the same access pattern; even
/// with every instance analysed (no imbalance floor), nothing scores above 0.1.
#[test]
fn balanced_workload_has_no_cause_above_a_tenth() {
    let dir = tempfile::tempdir().unwrap();
    let rd = RunDir::open(&simulate(dir.path(), "balanced", 8)).unwrap();
    let opts = Options {
        min_imbalance: 0.0,
        ..Options::default()
    };
    let (_, sections) = analyse(&rd, &[], &[], &opts, "test").unwrap();
    let rep = report(&rd, &sections, &opts);
    let top = &rep.sections[0];
    assert_eq!(top.location, "jacobi.c:18");
    assert!(top.imbalance_pct < 1.0, "{}", top.imbalance_pct);
    assert!(top.analysed > 0);
    for s in &rep.sections {
        for c in &s.causes {
            assert!(c.score.abs() <= 0.1, "{}: {c:?}", s.location);
        }
    }
}

#[test]
fn lime_cli_prints_the_tables_and_writes_lime_json() {
    let dir = tempfile::tempdir().unwrap();
    let rd = simulate(dir.path(), "lu-owner", 8);
    let out = isim().arg("lime").arg(&rd).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("lu.c:60"), "{text}");
    assert!(text.contains("control-flow leader"), "{text}");
    assert!(text.contains("Rpt"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("lime.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "isim-lime/1");
    assert_eq!(json["sections"][0]["location"], "lu.c:60");
    assert!(json["report_tables"].as_array().unwrap().len() >= 2);

    // Errors name the problem.
    let out = isim().args(["lime", "/nonexistent/run"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such run directory"));
    let out = isim()
        .arg("lime")
        .arg(&rd)
        .args(["--threshold", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("out of range"));
    let bal = simulate(dir.path(), "balanced", 4);
    let out = isim().args(["whatif", "erase"]).arg(&bal).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no cache-miss cause"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn whatif_erase_prints_the_three_selections_and_whatif_set_compares() {
    let dir = tempfile::tempdir().unwrap();
    let rd = simulate(dir.path(), "radix-miss", 4);
    let out = isim().args(["whatif", "erase"]).arg(&rd).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in ["erase top 1", "erase score > 0.1", "erase all significant"] {
        assert!(text.contains(row), "{text}");
    }
    let out = isim()
        .args(["whatif", "set"])
        .arg(&rd)
        .args(["--set", "dram.latency=\"20ns\"", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &rows[0];
    assert_eq!(r["section"], "radix.c:35");
    // Faster memory shortens the run.
    assert!(
        r["cycles"][1].as_f64().unwrap() < r["cycles"][0].as_f64().unwrap(),
        "{r}"
    );
}
