//! LIME end to end, on workloads whose cause of imbalance is known by construction: the
//! ownership test of `lu-owner` (control flow) at every thread count of the paper, the planted
//! missing load of `radix-miss` (hardware) with the miss-erasure what-if, and the balanced
//! negative control. Plus the CLI's report, JSON file and errors, and the collection itself
//! against the per-PC attribution collector.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use accounting::attribution::Attribution;
use accounting::lime::{CauseKind, Collector, Event, Options, SectionKind};
use isim::lime::{Selection, analyze, erase_whatif, report};
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

/// `isim lime RUN_DIR ARGS...`, which must succeed: its printout and the `lime.json` it wrote.
fn lime_cli(rd: &Path, args: &[&str]) -> (String, serde_json::Value) {
    let out = isim().arg("lime").arg(rd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json =
        serde_json::from_str(&std::fs::read_to_string(rd.join("lime.json")).unwrap()).unwrap();
    (String::from_utf8(out.stdout).unwrap(), json)
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
        let (run, sections, library) = analyze(&rd, &[], &[], &opts, "test").unwrap();
        let rep = report(&rd, &run, &sections, &library, &opts);
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
    let (run, sections, library) = analyze(&rd, &[], &[], &opts, "test").unwrap();
    let rep = report(&rd, &run, &sections, &library, &opts);
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
    assert_eq!(rows.len(), 2, "isim's erasure and the paper's");
    assert_eq!(rows[0].change, "erase top 1");
    assert_eq!(rows[1].change, "erase top 1, no fill");
    let r = &rows[0];
    assert!(r.imbalance_before > 20.0, "{r:?}");
    assert!(r.reduction_pct >= 50.0, "{r:?}");
    assert!(
        r.slowest.1 < r.slowest.0,
        "the slowest thread gets faster: {r:?}"
    );
    // The paper's erasure leaves the caches as they were: the threads whose accesses hit
    // anyway keep their time (isim's, by filling lines other cores then lose, can slow them
    // down), and the bucket's line, never filled, now misses at the next instruction that
    // touches it (the increment's store), so the imbalance stays.
    let paper = &rows[1];
    assert!(paper.reduction_pct < 10.0, "{paper:?}");
    assert!(
        paper.fastest.1 <= paper.fastest.0 * 1.01,
        "the fastest thread is not slowed by the paper's erasure: {paper:?}"
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
    let (run, sections, library) = analyze(&rd, &[], &[], &opts, "test").unwrap();
    let rep = report(&rd, &run, &sections, &library, &opts);
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
    let (text, json) = lime_cli(&rd, &[]);
    assert!(text.contains("lu.c:60"), "{text}");
    assert!(text.contains("control-flow leader"), "{text}");
    assert!(text.contains("Rpt"), "{text}");
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
    // Each what-if is kept in the run directory, the rows as printed and as a table, and the
    // report shows both tables.
    for (kind, change) in [("erase", "erase top 1"), ("set", "dram.latency=\"20ns\"")] {
        let path = rd.join(format!("whatif-{kind}.json"));
        let file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(file["schema"], "isim-whatif/1");
        assert_eq!(file["kind"], kind);
        assert_eq!(file["rows"][0]["change"], change, "{file}");
        assert_eq!(file["report_tables"][0]["rows"][0][0], change, "{file}");
    }
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(
            &std::fs::read(rd.join("whatif-set.json")).unwrap()
        )
        .unwrap()["rows"],
        rows,
        "the file holds what --json printed"
    );
    let out = isim().arg("report").arg(&rd).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(rd.join("report.html")).unwrap();
    assert_eq!(
        html.matches("What-if: imbalance and time before and after")
            .count(),
        2,
        "both what-if tables in the report"
    );
    assert!(
        html.contains("erase score &gt; 0.1"),
        "the erase rows are shown"
    );
}

/// LIME's collection (`accounting::lime::collect`) against the per-PC attribution collector,
/// run side by side on the same replay: summed over a worker thread's section instances, the
/// executions, L1/L2/L3 misses and mispredictions of every memory or branch instruction equal
/// the attribution's (every instruction of a worker lies in exactly one instance: barrier
/// sections, then its tail closed by the join); the initial thread's code after its joins
/// belongs to no section, so its sums are at most the attribution's. In every instance the
/// control-flow edges into a branch add up to its executions (each execution of a branch
/// records one edge from the branch before it), and each thread's barrier instances carry the
/// sites, arrivals and releases of its barrier sections.
#[test]
fn collector_counts_match_the_attribution_collector() {
    let dir = tempfile::tempdir().unwrap();
    for (w, threads, size) in [
        ("lu-owner", 5, 6),
        ("radix-miss", 4, 3000),
        ("serial-phases", 4, 32),
        ("lock-contention", 4, 30),
    ] {
        let out = dir.path().join(w);
        let req = RunRequest {
            workload: Some(w.into()),
            threads: Some(threads),
            size: Some(size),
            seed: 1,
            out: out.clone(),
            ..RunRequest::default()
        };
        run(&req, |_| {}).unwrap_or_else(|e| panic!("{w}: {e:#}"));
        let rd = RunDir::open(&out).unwrap();
        let p = &rd.trace.program;
        let n = threads as usize;
        let obs = (Collector::new(p, n), Attribution::new(n, p.insts.len()));
        let (_, (lime, attr)) = rd.replay(&[], &[], obs, |_| {}).unwrap();
        let instances = lime.finish();
        // Per thread and static index: executions, misses per level, mispredictions.
        let mut sums = vec![vec![[0u64; 5]; p.insts.len()]; n];
        let mut barriers: Vec<Vec<(u32, f64, f64, f64)>> = vec![Vec::new(); n];
        let mut edges_checked = 0;
        for inst in &instances {
            for ts in &inst.threads {
                assert!(
                    ts.start <= ts.arrival && ts.arrival <= inst.release,
                    "{w}: {ts:?}"
                );
                let t = ts.thread as usize;
                let mut into = vec![0u64; p.insts.len()];
                for &(e, c) in &ts.events {
                    match e {
                        Event::Exec(s) => sums[t][s as usize][0] += c,
                        Event::Miss { sidx, level } => sums[t][sidx as usize][level as usize] += c,
                        Event::Mispredict(s) => sums[t][s as usize][4] += c,
                        Event::Edge { to, .. } => into[to as usize] += c,
                    }
                }
                for &(e, c) in &ts.events {
                    if let Event::Exec(s) = e
                        && p.insts[s as usize].branch.is_branch()
                    {
                        assert_eq!(into[s as usize], c, "{w}: edges into branch {s}");
                        edges_checked += 1;
                    }
                }
                if inst.kind == SectionKind::Barrier {
                    barriers[t].push((inst.site, ts.start, ts.arrival, inst.release));
                }
            }
        }
        assert!(edges_checked > 0, "{w}: no branch executed");
        let mut misses = 0;
        for t in 0..n {
            for (s, c) in attr.per_thread[t].iter().enumerate() {
                let st = &p.insts[s];
                if !st.branch.is_branch() && st.mem.is_empty() {
                    continue; // not counted by LIME
                }
                let want = [
                    c.execs,
                    c.misses[0],
                    c.misses[1],
                    c.misses[2],
                    c.mispredictions,
                ];
                misses += c.misses[0];
                let got = sums[t][s];
                if t == 0 {
                    assert!(
                        got.iter().zip(&want).all(|(g, w)| g <= w),
                        "{w}: thread 0, static {s}: {got:?} > {want:?}"
                    );
                } else {
                    assert_eq!(got, want, "{w}: thread {t}, static {s}");
                }
            }
            let want: Vec<_> = attr.sections[t]
                .iter()
                .map(|v| (v.site, v.arrival, v.release))
                .collect();
            let got: Vec<_> = barriers[t].iter().map(|b| (b.0, b.2, b.3)).collect();
            assert_eq!(got, want, "{w}: thread {t} barrier sections");
            // After the first section, a section starts at the previous release.
            for (g, v) in barriers[t].iter().zip(&attr.sections[t]).skip(1) {
                assert_eq!(g.1, v.start, "{w}: thread {t}");
            }
        }
        assert!(misses > 0, "{w}: no miss to compare");
    }
}

/// Every "not analysed" gives its true reason: at two threads no barrier instance can be
/// analysed (LIME correlates events across threads), whatever the imbalance, and the printout
/// says so instead of blaming the imbalance threshold.
#[test]
fn instances_not_analysed_are_reported_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let rd = simulate(dir.path(), "lu-owner", 2);
    let (text, json) = lime_cli(&rd, &["--min-imbalance", "1"]);
    // The most idle section: the diagonal barrier, 41 % imbalanced at two threads.
    let top = &json["sections"][0];
    assert_eq!(top["location"], "lu.c:45", "{json}");
    assert_eq!(top["analysed"], 0);
    assert!(top["imbalance_pct"].as_f64().unwrap() > 1.0, "{top}");
    assert_eq!(
        top["not_analysed_too_few_threads"], top["instances"],
        "{top}"
    );
    assert_eq!(top["not_analysed_below_threshold"], 0, "{top}");
    let line = format!(
        "not analysed: {} with fewer than 3 threads taking part",
        top["instances"]
    );
    assert!(text.contains(&line), "{text}");
    assert!(!text.contains("imbalance below"), "{text}");
}

/// What matters is what a section costs the run: a balanced program is said to be balanced
/// (its tiny join "section" may be 90 % imbalanced, it costs nothing and its causes are not
/// listed), an imbalanced one is not; the "of run" column is idle cycles over run cycles
/// times threads. "Balanced" counts every wait of the cycle stacks, not only the sections':
/// threads contending for a lock (no barrier, one tiny join section) are not balanced, and
/// the printout says their waiting lies outside what LIME analyses (GNU sort, traced at 4
/// threads, once read "balanced" with a third of its cycles in locks and condition waits).
#[test]
fn the_report_says_when_a_run_is_balanced_and_ranks_by_cost_to_the_run() {
    let dir = tempfile::tempdir().unwrap();
    for (workload, balanced) in [
        ("balanced", true),
        ("lu-owner", false),
        ("lock-contention", false),
    ] {
        let rd = simulate(dir.path(), workload, 8);
        let (text, json) = lime_cli(&rd, &[]);
        assert_eq!(
            json["balanced"], balanced,
            "{workload}: {}",
            json["idle_run_pct"]
        );
        assert_eq!(text.contains("\nbalanced: "), balanced, "{text}");
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("summary.json")).unwrap())
                .unwrap();
        let thread_cycles = summary["cycles"].as_f64().unwrap() * 8.0;
        let mut total = 0.0;
        for s in json["sections"].as_array().unwrap() {
            let idle = s["idle_cycles"].as_f64().unwrap();
            total += idle;
            let want = 100.0 * idle / thread_cycles;
            assert!(
                (s["idle_run_pct"].as_f64().unwrap() - want).abs() < 1e-9,
                "{s}"
            );
            // A section costing under 0.5 % of the run gets no causes listing.
            let heading = format!(
                "causes of imbalance at {} (",
                s["location"].as_str().unwrap()
            );
            if want < 0.5 {
                assert!(!text.contains(&heading), "{workload}: {text}");
            }
        }
        let want = 100.0 * total / thread_cycles;
        assert!((json["idle_run_pct"].as_f64().unwrap() - want).abs() < 1e-9);
        // Every wait: the sync and imbalance components of every thread's stack.
        let mut wait = 0.0;
        for t in summary["threads"].as_array().unwrap() {
            for (name, v) in t["stack"].as_object().unwrap() {
                if name.starts_with("sync-") || name.starts_with("imbalance-") {
                    wait += v.as_f64().unwrap();
                }
            }
        }
        let wait = 100.0 * wait / thread_cycles;
        assert!(
            (json["wait_run_pct"].as_f64().unwrap() - wait).abs() < 1e-6,
            "{json}"
        );
        assert_eq!(wait <= 3.0, balanced, "{workload}: {wait}");
        assert_eq!(
            text.contains("in these sections, "),
            wait - want > 3.0,
            "{workload}: {text}"
        );
        if workload == "lock-contention" {
            assert!(want < 3.0 && wait > 10.0, "{workload}: {want} {wait}");
        }
    }
}

/// `--events paper` (the default) lets only the LIME paper's events compete: control-flow
/// edges and L1/L2 misses; `extended` adds L3 misses and mispredictions. On lu-owner the
/// extension reports mispredictions, the paper's set none, and both agree on the top cause.
#[test]
fn the_papers_events_are_the_default_and_the_extension_adds_l3_and_mispredictions() {
    use accounting::lime::EventSet;
    let dir = tempfile::tempdir().unwrap();
    let rd = RunDir::open(&simulate(dir.path(), "lu-owner", 8)).unwrap();
    assert_eq!(Options::default().events, EventSet::Paper);
    let kinds = |events| {
        let opts = Options {
            events,
            ..Options::default()
        };
        let (run, sections, library) = analyze(&rd, &[], &[], &opts, "test").unwrap();
        let rep = report(&rd, &run, &sections, &library, &opts);
        let kinds: Vec<&'static str> = rep
            .sections
            .iter()
            .flat_map(|s| s.causes.iter().map(|c| c.kind))
            .collect();
        (rep.sections[0].causes[0].location.clone(), kinds)
    };
    let (top_paper, paper) = kinds(EventSet::Paper);
    let (top_ext, ext) = kinds(EventSet::Extended);
    for k in &paper {
        assert!(
            [CauseKind::ControlFlow, CauseKind::L1Miss, CauseKind::L2Miss]
                .iter()
                .any(|c| c.name() == *k),
            "{k} among the paper's events"
        );
    }
    assert!(ext.contains(&CauseKind::Mispredict.name()), "{ext:?}");
    assert_eq!(top_paper, top_ext);
    assert!(top_paper.starts_with("lu.c:52"), "{top_paper}");
}

/// A wait for threads' count-downs made as they end (a Rust `thread::scope`, whose threads
/// are never joined: the conversion tags those futex waits, `model::EXIT_COUNT`) is a
/// join-delimited section: one instance of the three children, each arriving at its
/// count-down (not at its end, 300 instructions of exit later), released when the last one
/// counted. The same waits untagged time the same and make no section.
#[test]
fn a_wait_for_counts_made_as_threads_end_is_a_join_section() {
    use sim_core::Engine;
    use sim_frontend::model::{Marker, Order, TraceMeta, exit_count_addr};
    use sim_frontend::{Trace, TraceWriter};

    let dir = tempfile::tempdir().unwrap();
    let config = common::engine_config(&[]);
    // `tagged`: 0 no tag, 1 the children's tags, 2 tags naming a thread the trace does not
    // have (malformed: only futex waits).
    let replay = |tagged: u32| {
        let path = dir.path().join(format!("scope-{tagged}.itrace"));
        let meta = TraceMeta {
            isa: "x86-64".into(),
            workload: "scope join (hand-made)".into(),
            params: vec![],
            producer: "tests/lime.rs".into(),
        };
        let mut tw = TraceWriter::create(&path, meta).unwrap();
        let alu = common::alu_inst(&mut tw);
        tw.marker(0, Marker::ThreadStart).unwrap();
        tw.marker(0, Marker::RoiBegin).unwrap();
        for t in 1..4u32 {
            tw.marker(0, Marker::ThreadCreate { child: t }).unwrap();
            tw.marker(t, Marker::ThreadStart).unwrap();
            for _ in 0..4000 * t {
                tw.inst(t, alu, false, &[]).unwrap();
            }
            let addr = match tagged {
                0 => 0xc000,
                1 => exit_count_addr(0, t),
                _ => exit_count_addr(0, 99),
            };
            tw.marker(t, Marker::FutexWake { addr }).unwrap();
            tw.marker(t, Marker::Release { index: t - 1 }).unwrap();
            for _ in 0..300 {
                tw.inst(t, alu, false, &[]).unwrap();
            }
            tw.marker(t, Marker::ThreadEnd).unwrap();
        }
        for t in 1..4u32 {
            let addr = match tagged {
                0 => 0xc000,
                1 => exit_count_addr(0, t),
                _ => exit_count_addr(0, 99),
            };
            tw.marker(
                0,
                Marker::FutexWait {
                    addr,
                    wake: Order::after(t - 1),
                },
            )
            .unwrap();
        }
        // The program's serial end, long enough for the children's exits to be timed.
        for _ in 0..2000 {
            tw.inst(0, alu, false, &[]).unwrap();
        }
        tw.marker(0, Marker::RoiEnd).unwrap();
        tw.marker(0, Marker::ThreadEnd).unwrap();
        tw.finish().unwrap();
        let trace = Trace::open(&path).unwrap();
        let obs = Collector::new(&trace.program, 4);
        let (result, lime) = Engine::new(&trace, &config, obs)
            .unwrap()
            .run(|_| {})
            .unwrap();
        (result, lime.finish())
    };
    let (plain, none) = replay(0);
    let (tagged, instances) = replay(1);
    let (bogus, still_none) = replay(2);
    assert_eq!(plain.cycles, tagged.cycles, "the tag changes no timing");
    assert_eq!(plain.cycles, bogus.cycles, "nor does a malformed one");
    assert!(none.is_empty(), "untagged: no section, got {none:?}");
    assert!(
        still_none.is_empty(),
        "malformed tags: no section, got {still_none:?}"
    );
    assert_eq!(instances.len(), 1, "{instances:?}");
    let inst = &instances[0];
    assert_eq!(inst.kind, SectionKind::Join);
    let threads: Vec<u32> = inst.threads.iter().map(|t| t.thread).collect();
    assert_eq!(
        threads,
        [1, 2, 3],
        "the parent only waited: not a participant"
    );
    let arrivals: Vec<f64> = inst.threads.iter().map(|t| t.arrival).collect();
    // Each child counts down 300 instructions before its end: well before the run's end, and
    // the last count is the release.
    assert!(
        arrivals[0] < arrivals[1] && arrivals[1] < arrivals[2],
        "{arrivals:?}"
    );
    assert_eq!(inst.release, arrivals[2]);
    let end3 = tagged.threads[3].end;
    assert!(
        arrivals[2] < end3 && end3 - arrivals[2] > 50.0,
        "child 3 counted down at {} and ended at {end3}",
        arrivals[2]
    );
    assert!(inst.imbalance() > 0.2, "{}", inst.imbalance());
    // The children that ended before the release waited in the section after their end: that
    // part of their `imbalance-end` is the section's idle time, the rest (from the release to
    // the run's end, while `main` runs its serial end) is outside every section.
    let ends: Vec<f64> = tagged.threads.iter().map(|t| t.end).collect();
    let in_section = inst.idle_after_end(&ends);
    let not_alive_after: f64 = tagged.threads[1..]
        .iter()
        .map(|t| t.stack.get(sim_core::Component::ImbalanceEnd))
        .sum();
    let outside: f64 = tagged.threads[1..]
        .iter()
        .map(|t| tagged.cycles - t.end.max(inst.release))
        .sum();
    assert!(in_section > 0.0 && outside > 0.0, "{in_section} {outside}");
    assert!(
        (not_alive_after - in_section - outside).abs() < 1e-6,
        "after their ends {not_alive_after} = in the section {in_section} + outside {outside}"
    );
    assert!(
        inst.idle_after_end(&[]) == 0.0,
        "threads of unknown end are alive"
    );
}

/// A call into a work-stealing pool from outside it (rayon's `Registry::in_worker_cold`) is a
/// section of the pool's workers: each arrives at the end of its last stretch of own code
/// within the call, the caller (who only waited) is no participant, and the section is named
/// by the caller's own line. A worker's own code outside every call (here a worker created
/// after the call returned) is in no section, and counted.
#[test]
fn a_call_into_a_pool_is_a_section_of_its_workers() {
    use sim_core::Engine;
    use sim_frontend::model::{Marker, Order, SrcLoc, TraceMeta};
    use sim_frontend::{Trace, TraceWriter};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.itrace");
    let meta = TraceMeta {
        isa: "x86-64".into(),
        workload: "a pool (hand-made)".into(),
        params: vec![],
        producer: "tests/lime.rs".into(),
    };
    let mut tw = TraceWriter::create(&path, meta).unwrap();
    {
        let src = tw.source_mut();
        src.functions = [
            "pool::main",
            "rayon_core::registry::Registry::in_worker_cold",
            "rayon_core::registry::WorkerThread::wait_until_cold",
            "pool::main::{{closure}}",
        ]
        .map(String::from)
        .to_vec();
        src.files = vec!["/src/pool.rs".into()];
    }
    let mut inst = |pc: u64, function: u32, line: u32| {
        let file = if line > 0 { 0 } else { SrcLoc::UNKNOWN };
        common::alu_inst_at(
            &mut tw,
            pc,
            SrcLoc {
                function,
                file,
                line,
            },
        )
    };
    let own = inst(0x1000, 0, 10);
    let entry = inst(0x2000, 1, 0);
    let look = inst(0x3000, 2, 0);
    let work = inst(0x4000, 3, 20);
    let run = |tw: &mut TraceWriter, t: u32, sidx: u32, n: u32| {
        for _ in 0..n {
            tw.inst(t, sidx, false, &[]).unwrap();
        }
    };
    tw.marker(0, Marker::ThreadStart).unwrap();
    tw.marker(0, Marker::RoiBegin).unwrap();
    run(&mut tw, 0, own, 100);
    for t in 1..4u32 {
        tw.marker(0, Marker::ThreadCreate { child: t }).unwrap();
        tw.marker(t, Marker::ThreadStart).unwrap();
        run(&mut tw, t, look, 50);
    }
    run(&mut tw, 0, entry, 20);
    for t in 1..4u32 {
        run(&mut tw, t, work, 2000 * t);
        run(&mut tw, t, look, 50);
    }
    // The longest worker's job ends the call: it wakes the caller.
    tw.marker(3, Marker::FutexWake { addr: 0xa000 }).unwrap();
    tw.marker(3, Marker::Release { index: 0 }).unwrap();
    tw.marker(
        0,
        Marker::FutexWait {
            addr: 0xa000,
            wake: Order::after(0),
        },
    )
    .unwrap();
    run(&mut tw, 0, entry, 5);
    run(&mut tw, 0, own, 100);
    // A worker that starts after the call: its job is in no call.
    tw.marker(0, Marker::ThreadCreate { child: 4 }).unwrap();
    tw.marker(4, Marker::ThreadStart).unwrap();
    run(&mut tw, 4, look, 10);
    run(&mut tw, 4, work, 500);
    run(&mut tw, 4, look, 10);
    tw.marker(4, Marker::ThreadEnd).unwrap();
    run(&mut tw, 0, own, 3000);
    for t in 1..4u32 {
        tw.marker(t, Marker::ThreadEnd).unwrap();
    }
    tw.marker(0, Marker::RoiEnd).unwrap();
    tw.marker(0, Marker::ThreadEnd).unwrap();
    tw.finish().unwrap();

    let trace = Trace::open(&path).unwrap();
    let obs = Collector::new(&trace.program, 5);
    let config = common::engine_config(&[]);
    let (_, lime) = Engine::new(&trace, &config, obs)
        .unwrap()
        .run(|_| {})
        .unwrap();
    let (instances, strays) = lime.finish_counting_strays();
    assert_eq!(instances.len(), 1, "{instances:?}");
    let inst = &instances[0];
    assert_eq!(inst.kind, SectionKind::Pool);
    assert_eq!(
        trace.program.file_line(inst.site).as_deref(),
        Some("/src/pool.rs:10"),
        "named by the caller's own line"
    );
    let threads: Vec<u32> = inst.threads.iter().map(|t| t.thread).collect();
    assert_eq!(threads, [1, 2, 3], "the workers alive during the call");
    let arrivals: Vec<f64> = inst.threads.iter().map(|t| t.arrival).collect();
    assert!(
        arrivals[0] < arrivals[1] && arrivals[1] < arrivals[2],
        "{arrivals:?}"
    );
    assert_eq!(inst.release, arrivals[2], "the last worker's job ends it");
    assert!(
        inst.threads
            .iter()
            .all(|t| t.start == inst.threads[0].start)
    );
    // Worker t ran 2000·t independent instructions: each 2000 more take the same time more
    // (500 cycles at the default's 4-wide dispatch).
    let times: Vec<f64> = inst.threads.iter().map(|t| t.time()).collect();
    let (d1, d2) = (times[1] - times[0], times[2] - times[1]);
    assert!(d1 > 400.0 && (d1 - d2).abs() < 1.0, "{times:?}");
    assert!(inst.imbalance() > 0.2, "{}", inst.imbalance());
    assert_eq!(strays, 1, "thread 4's job ran outside the call");
}

/// A hand-made trace at `dir/name` whose functions are `functions` and whose one source file
/// is `/src/app.c`.
fn app_trace(dir: &Path, name: &str, functions: &[&str]) -> (PathBuf, sim_frontend::TraceWriter) {
    let path = dir.join(name);
    let meta = sim_frontend::model::TraceMeta {
        isa: "x86-64".into(),
        workload: format!("{name} (hand-made)"),
        params: vec![],
        producer: "tests/lime.rs".into(),
    };
    let mut tw = sim_frontend::TraceWriter::create(&path, meta).unwrap();
    let src = tw.source_mut();
    src.functions = functions.iter().map(|f| f.to_string()).collect();
    src.files = vec!["/src/app.c".into()];
    (path, tw)
}

/// Function `function` at line `line` of `/src/app.c`; line 0: no file (library code).
fn app_at(function: u32, line: u32) -> sim_frontend::model::SrcLoc {
    use sim_frontend::model::SrcLoc;
    SrcLoc {
        function,
        file: if line > 0 { 0 } else { SrcLoc::UNKNOWN },
        line,
    }
}

/// No prefetcher at any level: every load of a line not loaded before misses.
const NO_PREFETCH: [&str; 2] = ["cache.l1d.prefetcher=none", "cache.l2.prefetcher=none"];

/// Replays `path` on the default machine without prefetchers, with the LIME collector.
fn collect_without_prefetch(path: &Path, threads: usize) -> (sim_core::RunResult, Collector) {
    let trace = sim_frontend::Trace::open(path).unwrap();
    let obs = Collector::new(&trace.program, threads);
    let config = common::engine_config(&NO_PREFETCH);
    sim_core::Engine::new(&trace, &config, obs)
        .unwrap()
        .run(|_| {})
        .unwrap()
}

/// A library's misses are counted at the user's call that led to them and named by the
/// library function: four threads call a copy routine (`memcpy`, whose work runs in code no
/// symbol names, `<libc.so.6>`) that loads (t + 1) × 300 fresh cache lines in each of three
/// phases, then meet at a barrier. Without prefetchers every load misses the L1: the misses
/// named at the call are all of them, as the caches count them too, the section's top
/// cause is an L1 miss at the call's line, `isim lime` names the function the call's
/// target is in, and `isim whatif erase` of that cause erases the library's misses.
#[test]
fn a_librarys_misses_are_named_by_the_call_and_the_library_function() {
    use sim_frontend::model::{BranchKind, Marker, MemAccess, MemSpec, OpClass, StaticInst};

    let dir = tempfile::tempdir().unwrap();
    let functions = ["app::worker", "memcpy", "<libc.so.6>"];
    let (path, mut tw) = app_trace(dir.path(), "copy.itrace", &functions);
    let at = app_at;
    let call = tw
        .add_static(StaticInst {
            branch: BranchKind::DirectCall,
            target: 0x5000,
            loc: at(0, 7),
            ..StaticInst::new(0x1000, 5, OpClass::Call)
        })
        .unwrap();
    let entry = common::alu_inst_at(&mut tw, 0x5000, at(1, 0));
    let load = tw
        .add_static(StaticInst {
            mem: vec![MemSpec {
                size: 8,
                write: false,
            }],
            loc: at(2, 0),
            ..StaticInst::new(0x6000, 4, OpClass::Load)
        })
        .unwrap();
    let after = common::alu_inst_at(&mut tw, 0x1005, at(0, 8));
    tw.marker(0, Marker::ThreadStart).unwrap();
    tw.marker(0, Marker::RoiBegin).unwrap();
    for t in 1..4u32 {
        tw.marker(0, Marker::ThreadCreate { child: t }).unwrap();
        tw.marker(t, Marker::ThreadStart).unwrap();
    }
    let mut loads = 0u64;
    for phase in 0..3u64 {
        for t in 0..4u32 {
            tw.inst(t, call, true, &[]).unwrap();
            tw.inst(t, entry, false, &[]).unwrap();
            for i in 0..(t as u64 + 1) * 300 {
                let addr = 0x1000_0000 * (t as u64 + 1) + (phase * 2000 + i) * 64;
                tw.inst(
                    t,
                    load,
                    false,
                    &[MemAccess {
                        addr,
                        size: 8,
                        write: false,
                    }],
                )
                .unwrap();
                loads += 1;
            }
            tw.inst(t, after, false, &[]).unwrap();
            tw.marker(
                t,
                Marker::Barrier {
                    id: 7,
                    participants: 4,
                    lead: false,
                },
            )
            .unwrap();
        }
    }
    for t in 1..4u32 {
        tw.marker(t, Marker::ThreadEnd).unwrap();
        tw.marker(0, Marker::ThreadJoin { child: t }).unwrap();
    }
    tw.marker(0, Marker::RoiEnd).unwrap();
    tw.marker(0, Marker::ThreadEnd).unwrap();
    tw.finish().unwrap();
    assert_eq!(loads, 3 * 300 * (1 + 2 + 3 + 4));

    // The counts, against the caches' own.
    let (result, lime) = collect_without_prefetch(&path, 4);
    let library = lime.library_calls();
    assert_eq!(library.events.len(), 1, "{library:?}");
    assert_eq!(library.entries, [(call, entry)], "the calls enter `memcpy`");
    let e = &library.events[0];
    assert_eq!((e.at, e.sidx), (call, load), "{e:?}");
    let l1_load_misses: u64 = result
        .caches
        .iter()
        .filter(|(name, _)| name.ends_with(".l1d"))
        .map(|(_, s)| s.misses_load)
        .sum();
    // Every load is to a line not loaded before: each misses once.
    assert_eq!(l1_load_misses, loads);
    assert_eq!(e.counts[0], loads);
    assert_eq!(e.counts[3], 0, "no library branch");
    let instances = lime.finish();
    let at_call: u64 = instances
        .iter()
        .flat_map(|i| &i.threads)
        .flat_map(|t| &t.events)
        .filter(|(ev, _)| {
            *ev == Event::Miss {
                sidx: call,
                level: 1,
            }
        })
        .map(|&(_, n)| n)
        .sum();
    assert_eq!(
        at_call, e.counts[0],
        "the section events count the same misses"
    );

    // The report names the line and the function called.
    let out = dir.path().join("run");
    let o = isim()
        .args(["run", "--trace"])
        .arg(&path)
        .arg("-c")
        .arg(common::root().join("configs/default.toml"))
        .arg("-o")
        .arg(&out)
        .args(NO_PREFETCH.iter().flat_map(|s| ["--set", s]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (text, json) = lime_cli(&out, &[]);
    let top = &json["sections"][0]["causes"][0];
    assert_eq!(top["kind"], "L1 miss", "{top}");
    assert_eq!(top["location"], "/src/app.c:7", "{top}");
    assert_eq!(top["library"]["called"], "memcpy", "{top}");
    assert_eq!(top["library"]["name"], "memcpy", "{top}");
    assert_eq!(top["library"]["functions"][0]["function"], "<libc.so.6>");
    assert!(text.contains("app.c:7 in memcpy"), "{text}");

    // Erasing the cause erases the library's misses: the slowest thread gets faster.
    let o = isim()
        .args(["whatif", "erase"])
        .arg(&out)
        .args(["--top", "1", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = &rows[0];
    let erased = row["erased"][0].as_str().unwrap();
    assert!(
        erased.starts_with("/src/app.c:7 (0x1000) and the 1 library instruction(s)")
            && erased.ends_with("(<libc.so.6>)"),
        "{erased}"
    );
    let slowest = (
        row["slowest"][0].as_f64().unwrap(),
        row["slowest"][1].as_f64().unwrap(),
    );
    assert!(slowest.1 < 0.5 * slowest.0, "{row}");
}

/// Library code that calls back into the program (a `qsort` comparator) counts at the user's
/// call into it, not at the callback's last instruction: after the comparator returns (and
/// after a library call the comparator itself made, which counts at the comparator's line),
/// the sort's own misses are still the `qsort` call's.
#[test]
fn a_librarys_work_after_a_callback_counts_at_the_call_into_the_library() {
    use sim_frontend::TraceWriter;
    use sim_frontend::model::{BranchKind, Marker, MemAccess, MemSpec, OpClass, StaticInst};

    let dir = tempfile::tempdir().unwrap();
    let functions = ["app::worker", "qsort", "<libc.so.6>", "app::cmp", "memcpy"];
    let (path, mut tw) = app_trace(dir.path(), "sort.itrace", &functions);
    let at = app_at;
    let add = |tw: &mut TraceWriter, pc, size, class, branch, loc, load: bool| {
        tw.add_static(StaticInst {
            branch,
            mem: if load {
                vec![MemSpec {
                    size: 8,
                    write: false,
                }]
            } else {
                vec![]
            },
            loc,
            ..StaticInst::new(pc, size, class)
        })
        .unwrap()
    };
    use BranchKind::{DirectCall, IndirectCall, None as Plain, Return};
    use OpClass::{Call, IntAlu, Load, Return as Ret};
    // worker: call qsort; after.   qsort: entry; loop { load; call *cmp; load }; ret.
    // cmp: call memcpy; ret.       memcpy: load; ret.
    let call_sort = add(&mut tw, 0x1000, 5, Call, DirectCall, at(0, 7), false);
    let after = add(&mut tw, 0x1005, 4, IntAlu, Plain, at(0, 8), false);
    let entry = add(&mut tw, 0x5000, 4, IntAlu, Plain, at(1, 0), false);
    let sort_load = add(&mut tw, 0x6000, 4, Load, Plain, at(2, 0), true);
    let call_cmp = add(&mut tw, 0x6004, 2, Call, IndirectCall, at(2, 0), false);
    let sort_ret = add(&mut tw, 0x6010, 1, Ret, Return, at(2, 0), false);
    let call_copy = add(&mut tw, 0x2000, 5, Call, DirectCall, at(3, 21), false);
    let cmp_ret = add(&mut tw, 0x2005, 1, Ret, Return, at(3, 22), false);
    let copy_load = add(&mut tw, 0x7000, 4, Load, Plain, at(4, 0), true);
    let copy_ret = add(&mut tw, 0x7004, 1, Ret, Return, at(4, 0), false);
    let mut addr = 0x1000_0000u64;
    let mut fresh = || {
        addr += 64;
        [MemAccess {
            addr,
            size: 8,
            write: false,
        }]
    };
    tw.marker(0, Marker::ThreadStart).unwrap();
    tw.marker(0, Marker::RoiBegin).unwrap();
    tw.inst(0, call_sort, true, &[]).unwrap();
    tw.inst(0, entry, false, &[]).unwrap();
    for _ in 0..10 {
        tw.inst(0, sort_load, false, &fresh()).unwrap();
        tw.inst(0, call_cmp, true, &[]).unwrap();
        tw.inst(0, call_copy, true, &[]).unwrap();
        tw.inst(0, copy_load, false, &fresh()).unwrap();
        tw.inst(0, copy_ret, true, &[]).unwrap();
        tw.inst(0, cmp_ret, true, &[]).unwrap();
        tw.inst(0, sort_load, false, &fresh()).unwrap();
    }
    tw.inst(0, sort_ret, true, &[]).unwrap();
    tw.inst(0, after, false, &[]).unwrap();
    tw.marker(0, Marker::RoiEnd).unwrap();
    tw.marker(0, Marker::ThreadEnd).unwrap();
    tw.finish().unwrap();

    let (_, lime) = collect_without_prefetch(&path, 1);
    let library = lime.library_calls();
    let l1: Vec<(u32, u32, u64)> = library
        .events
        .iter()
        .filter(|e| e.counts[0] > 0)
        .map(|e| (e.at, e.sidx, e.counts[0]))
        .collect();
    // Every load is to a fresh line: the sort's 20 at the `qsort` call, the copy's 10 at the
    // comparator's call of `memcpy`; none at the comparator's `ret`.
    assert_eq!(
        l1,
        [(call_sort, sort_load, 20), (call_copy, copy_load, 10)],
        "{library:?}"
    );
    assert_eq!(
        library.entries,
        [(call_sort, entry), (call_copy, copy_load)]
    );
    assert!(library.events.iter().all(|e| e.at != cmp_ret));
}

/// A libc function a stripped libc leaves unnamed (`memset`: the body its IFUNC chose for this
/// CPU has no symbol) is named by the PLT stub that jumped to it, for a call and for a tail
/// call (`jmp memset@plt`, the last statement of a function): LIME's cause is the user's line
/// `in memset`, and the body (not only its first instruction) carries the name. Before, both
/// read `in <libc.so.6>`.
#[test]
fn an_unnamed_library_function_is_named_by_the_plt_stub_that_called_it() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("fill.c");
    std::fs::write(
        &src,
        r#"#include <pthread.h>
#include <string.h>
static char buf[4][1 << 19];
static pthread_barrier_t b;
__attribute__((noinline)) void fill_tail(int t, int r) {
    memset(buf[t], r, (size_t)(t + 1) << 16);
}
__attribute__((noinline)) int fill_call(int t, int r) {
    memset(buf[t], r + 1, (size_t)(t + 1) << 16);
    return buf[t][r];
}
static void *worker(void *arg) {
    int t = (int)(long)arg, s = 0;
    for (int r = 0; r < 4; r++) {
        if (r & 1) fill_tail(t, r); else s += fill_call(t, r);
        pthread_barrier_wait(&b);
    }
    return (void *)(long)s;
}
int main(void) {
    pthread_t th[4];
    pthread_barrier_init(&b, 0, 4);
    for (long t = 0; t < 4; t++) pthread_create(&th[t], 0, worker, (void *)t);
    for (int t = 0; t < 4; t++) pthread_join(th[t], 0);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = common::compile(dir.path(), "fill", &src, &[]);
    let trace = common::trace(&exe, &[], &dir.path().join("fill.itrace"));
    let t = sim_frontend::Trace::open(&trace).unwrap();
    let p = &t.program;
    let named = |f: &str| {
        (0..p.insts.len() as u32)
            .filter(|&s| p.function_name(s).is_some_and(|n| n.contains(f)))
            .count()
    };
    assert!(
        named("memset") > 10,
        "memset's body is named: {}",
        named("memset")
    );
    let rd = dir.path().join("run");
    let o = isim()
        .args(["run", "--trace"])
        .arg(&trace)
        .arg("--out")
        .arg(&rd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (text, json) = lime_cli(&rd, &[]);
    let causes: Vec<&serde_json::Value> = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["causes"].as_array().unwrap())
        .filter(|c| !c["library"].is_null())
        .collect();
    // Both calls' lines (6: the tail call; 9: the call) name memset.
    for line in ["/fill.c:6", "/fill.c:9"] {
        let c = causes
            .iter()
            .find(|c| c["location"].as_str().is_some_and(|l| l.ends_with(line)))
            .unwrap_or_else(|| panic!("no library cause at {line}: {text}"));
        assert!(
            c["library"]["called"]
                .as_str()
                .is_some_and(|n| n.contains("memset")),
            "{line}: {}",
            c["library"]
        );
    }
    assert!(!text.contains("in <libc.so.6>"), "{text}");
}
