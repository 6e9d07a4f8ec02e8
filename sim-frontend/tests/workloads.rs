//! The built-in workloads against what they are built to show, computed independently of the
//! generator code: lu-owner's per-thread work from the ownership formula, radix-miss's
//! identical control flow with scattered loads in odd threads, serial-phases' equal block
//! counts, false sharing of one line, a pointer chase over a single cycle, a fair random branch;
//! plus structure (start/end, ROI, create/join, barrier participants), determinism and size.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sim_frontend::Trace;
use sim_frontend::model::{Batch, Marker, MemAccess, Record};
use sim_frontend::workloads::{self, Params, WORKLOADS, lu_owner, radix_miss};

struct Run {
    trace: Trace,
    /// Per thread: executions per static index.
    execs: Vec<BTreeMap<u32, u64>>,
    /// Per thread: memory accesses per static index, in order.
    mem: Vec<BTreeMap<u32, Vec<MemAccess>>>,
    /// Per thread: markers in order.
    markers: Vec<Vec<Marker>>,
    /// Per thread: (taken, total) of each static branch.
    taken: Vec<BTreeMap<u32, (u64, u64)>>,
}

fn make(dir: &Path, name: &str, threads: u32, size: u64, seed: u64) -> PathBuf {
    let p = dir.join(format!("{name}-{threads}-{size}-{seed}.itrace"));
    workloads::find(name)
        .unwrap()
        .generate(
            &Params {
                threads,
                size,
                seed,
            },
            &p,
        )
        .unwrap();
    p
}

fn run(path: &Path) -> Run {
    let trace = Trace::open(path).unwrap();
    let n = trace.thread_count() as usize;
    let mut r = Run {
        execs: vec![BTreeMap::new(); n],
        mem: vec![BTreeMap::new(); n],
        markers: vec![Vec::new(); n],
        taken: vec![BTreeMap::new(); n],
        trace: Trace::open(path).unwrap(),
    };
    let mut b = Batch::default();
    for t in 0..n {
        let mut s = trace.stream(t as u32).unwrap();
        while s.next_batch(&mut b).unwrap() {
            for rec in &b.records {
                match rec {
                    Record::Inst(i) => {
                        *r.execs[t].entry(i.sidx).or_default() += 1;
                        r.mem[t]
                            .entry(i.sidx)
                            .or_default()
                            .extend_from_slice(b.mem_of(i));
                        if trace.program.insts[i.sidx as usize].branch.is_branch() {
                            let e = r.taken[t].entry(i.sidx).or_default();
                            e.0 += i.taken as u64;
                            e.1 += 1;
                        }
                    }
                    Record::Marker(m) => r.markers[t].push(*m),
                }
            }
        }
    }
    r
}

/// Static indices at `file:line` with a memory operand (or all, if `mem_only` is false).
fn at_line(
    t: &Trace,
    file: &str,
    line: u32,
    kind: fn(&sim_frontend::model::StaticInst) -> bool,
) -> Vec<u32> {
    t.program
        .insts
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            t.program.file_line(*i as u32).as_deref() == Some(&format!("{file}:{line}")) && kind(s)
        })
        .map(|(i, _)| i as u32)
        .collect()
}

fn is_store(s: &sim_frontend::model::StaticInst) -> bool {
    s.mem.iter().any(|m| m.write)
}

fn is_load(s: &sim_frontend::model::StaticInst) -> bool {
    s.mem.iter().any(|m| !m.write) && !s.branch.is_branch()
}

#[test]
fn every_workload_has_sound_thread_structure_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    for w in WORKLOADS {
        for threads in [1u32, 3] {
            let size = (w.default_size / 16).max(2);
            let a = make(dir.path(), w.name, threads, size, 5);
            let bytes = std::fs::read(&a).unwrap();
            std::fs::rename(&a, dir.path().join("first")).unwrap();
            let a = make(dir.path(), w.name, threads, size, 5);
            assert_eq!(
                bytes,
                std::fs::read(&a).unwrap(),
                "{} is not deterministic",
                w.name
            );
            let r = run(&a);
            assert_eq!(r.trace.thread_count(), threads, "{}", w.name);
            assert_eq!(r.trace.meta.workload, w.name);
            for (t, m) in r.markers.iter().enumerate() {
                assert_eq!(
                    m.first(),
                    Some(&Marker::ThreadStart),
                    "{} thread {t}",
                    w.name
                );
                assert_eq!(m.last(), Some(&Marker::ThreadEnd), "{} thread {t}", w.name);
                for mk in m {
                    if let Marker::Barrier { participants, .. } = mk {
                        assert_eq!(*participants, threads, "{}", w.name);
                    }
                }
                assert!(
                    r.execs[t].values().sum::<u64>() > 0,
                    "{} thread {t} executes nothing",
                    w.name
                );
            }
            let m0 = &r.markers[0];
            assert!(
                m0.contains(&Marker::RoiBegin) && m0.contains(&Marker::RoiEnd),
                "{}",
                w.name
            );
            for c in 1..threads {
                assert!(
                    m0.contains(&Marker::ThreadCreate { child: c }),
                    "{}",
                    w.name
                );
                assert!(m0.contains(&Marker::ThreadJoin { child: c }), "{}", w.name);
            }
            // Barrier counts agree across threads (otherwise the program would deadlock).
            let bars: Vec<usize> = r
                .markers
                .iter()
                .map(|m| {
                    m.iter()
                        .filter(|x| matches!(x, Marker::Barrier { .. }))
                        .count()
                })
                .collect();
            assert!(
                bars.iter().all(|&b| b == bars[0]),
                "{}: barrier counts {bars:?}",
                w.name
            );
            // Every instruction has a source location.
            for i in 0..r.trace.program.insts.len() as u32 {
                assert!(
                    r.trace.program.file_line(i).is_some()
                        && r.trace.program.function_name(i).is_some()
                );
            }
        }
    }
}

#[test]
fn lu_owner_work_per_thread_follows_the_ownership_formula() {
    let dir = tempfile::tempdir().unwrap();
    let (n, p) = (12u64, 5u32);
    let r = run(&make(dir.path(), "lu-owner", p, n, 1));
    let upd_store = at_line(&r.trace, "lu.c", 56, is_store);
    assert_eq!(upd_store.len(), 1);
    let mut counts = Vec::new();
    for t in 0..p {
        let got = r.execs[t as usize].get(&upd_store[0]).copied().unwrap_or(0);
        // Independent count of blocks (I, J), k < I, J < n with (I + J) mod P == t.
        let mut blocks = 0;
        for k in 0..n - 1 {
            for i in k + 1..n {
                for j in k + 1..n {
                    if (i + j) % p as u64 == t as u64 {
                        blocks += 1;
                    }
                }
            }
        }
        assert_eq!(blocks, lu_owner::owned_updates(n, p as u64, t as u64));
        assert_eq!(got, blocks * lu_owner::B * lu_owner::B, "thread {t}");
        counts.push(got);
    }
    assert!(
        counts.iter().max() > counts.iter().min(),
        "no imbalance: {counts:?}"
    );
    // The ownership test runs equally often everywhere; only its outcome differs.
    let own_br = at_line(&r.trace, "lu.c", 52, |s| s.branch.is_branch());
    let tests: Vec<u64> = (0..p as usize).map(|t| r.taken[t][&own_br[0]].1).collect();
    assert!(tests.iter().all(|&x| x == tests[0]), "{tests:?}");
}

#[test]
fn radix_miss_has_identical_control_flow_and_scattered_loads_in_odd_threads() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&make(dir.path(), "radix-miss", 4, 4000, 3));
    let kernel = |t: usize| -> Vec<(u32, u64)> {
        r.execs[t]
            .iter()
            .filter(|(s, _)| r.trace.program.function_name(**s) == Some("radix_histogram"))
            .map(|(s, c)| (*s, *c))
            .collect()
    };
    assert!(!kernel(0).is_empty());
    assert!(
        (1..4).all(|t| kernel(t) == kernel(0)),
        "control flow differs between threads"
    );
    let ld = at_line(&r.trace, "radix.c", 32, is_load)[0];
    for t in 0..4u32 {
        let lines: HashSet<u64> = r.mem[t as usize][&ld].iter().map(|a| a.addr / 64).collect();
        if radix_miss::misses(t) {
            assert!(lines.len() > 3500, "thread {t}: {} lines", lines.len());
        } else {
            assert!(
                lines.len() <= (radix_miss::SMALL_TABLE / 64) as usize,
                "thread {t}: {} lines",
                lines.len()
            );
        }
    }
}

#[test]
fn serial_phases_blocks_execute_equally_often_with_different_parallelism() {
    let dir = tempfile::tempdir().unwrap();
    let p = 4u32;
    let r = run(&make(dir.path(), "serial-phases", p, 100, 1));
    let s_ld = at_line(&r.trace, "phases.c", 21, is_load)[0];
    let p_ld = at_line(&r.trace, "phases.c", 29, is_load)[0];
    let serial: Vec<u64> = (0..p as usize)
        .map(|t| r.execs[t].get(&s_ld).copied().unwrap_or(0))
        .collect();
    let par: Vec<u64> = (0..p as usize)
        .map(|t| r.execs[t].get(&p_ld).copied().unwrap_or(0))
        .collect();
    assert_eq!(
        serial[1..],
        [0, 0, 0],
        "only thread 0 runs the serial block"
    );
    assert_eq!(serial.iter().sum::<u64>(), par.iter().sum::<u64>());
    assert!(par.iter().all(|&x| x == par[0] && x > 0));
}

#[test]
fn false_sharing_counters_share_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&make(dir.path(), "false-sharing", 8, 50, 1));
    let st = at_line(&r.trace, "false_sharing.c", 15, is_store)[0];
    let lines: HashSet<u64> = (0..8)
        .flat_map(|t| r.mem[t][&st].iter().map(|a| a.addr / 64))
        .collect();
    let words: HashSet<u64> = (0..8)
        .flat_map(|t| r.mem[t][&st].iter().map(|a| a.addr))
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(words.len(), 8);
}

#[test]
fn pointer_chase_visits_every_node_once_along_one_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3000u64;
    let r = run(&make(dir.path(), "pointer-chase", 1, n, 9));
    let ld = at_line(&r.trace, "chase.c", 15, is_load)[0];
    let addrs: Vec<u64> = r.mem[0][&ld].iter().map(|a| a.addr).collect();
    assert_eq!(addrs.len() as u64, n);
    let distinct: HashSet<u64> = addrs.iter().map(|a| a / 64).collect();
    assert_eq!(
        distinct.len() as u64,
        n,
        "a node was visited twice: not a single cycle"
    );
    let sequential = addrs.windows(2).filter(|w| w[1] == w[0] + 64).count();
    assert!(
        sequential < (n / 50) as usize,
        "{sequential} sequential steps: not random"
    );
}

#[test]
fn random_branch_is_fair_and_seeded() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&make(dir.path(), "random-branch", 1, 20000, 4));
    let br = at_line(&r.trace, "branch.c", 16, |s| s.branch.is_branch())[0];
    let (taken, total) = r.taken[0][&br];
    let frac = taken as f64 / total as f64;
    assert!((frac - 0.5).abs() < 0.02, "taken fraction {frac}");
    let a = std::fs::read(make(dir.path(), "random-branch", 1, 2000, 4)).unwrap();
    let b = std::fs::read(make(dir.path(), "random-branch", 1, 2000, 5)).unwrap();
    assert_ne!(a, b, "the seed changes nothing");
}

#[test]
fn loop_code_takes_at_most_four_bytes_per_instruction() {
    let dir = tempfile::tempdir().unwrap();
    for w in WORKLOADS {
        let p = make(dir.path(), w.name, 2, (w.default_size / 8).max(2), 1);
        let t = Trace::open(&p).unwrap();
        let n: u64 = t.threads.iter().map(|d| d.instructions).sum();
        let bytes = std::fs::metadata(&p).unwrap().len();
        let per = bytes as f64 / n as f64;
        assert!(per <= 4.0, "{}: {per:.2} bytes per instruction", w.name);
    }
}

#[test]
fn parameters_out_of_range_are_refused_with_the_allowed_range() {
    let dir = tempfile::tempdir().unwrap();
    let w = workloads::find("stream").unwrap();
    let p = dir.path().join("x.itrace");
    let e = w
        .generate(
            &Params {
                threads: 0,
                size: 10,
                seed: 1,
            },
            &p,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("--threads 0") && e.contains("1..="), "{e}");
    let e = w
        .generate(
            &Params {
                threads: 1,
                size: w.max_size + 1,
                seed: 1,
            },
            &p,
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--size") && e.contains("elements per thread"),
        "{e}"
    );
    assert!(!p.exists());
}
