//! `isim locks` (issue 43, lock analysis): per mutex, the lines that take it, the waiting, and
//! the sections waited behind.
//! * Two locks with planted costs (a hand-written trace: P threads each take lock A around a
//!   critical section eight times longer than lock B's, with short work between): A ranks first, B second, and the
//!   locks' waits and releases add up to the run's `sync-crit-sect` (within 1 %).
//! * A traced program with one hot lock (`examples/c/lock_counter.c`, 4 threads, short work
//!   between): the top lock is named `lock` (its symbol), taken at `lock_counter.c:33`, it is
//!   waited for, and its waiting is the run's `sync-crit-sect` within 1 %, under both lock
//!   models.

mod common;

use std::path::Path;

use serde_json::Value;
use sim_frontend::TraceWriter;
use sim_frontend::model::{Marker, Order, Spin, TraceMeta};

const A: u64 = 0x7000_1000;
const B: u64 = 0x7000_2000;

/// P threads × `n` × {`w` ALU; lock A; `ca` ALU; unlock A; `w` ALU; lock B; `cb` ALU;
/// unlock B}; thread 0 creates and joins the others.
fn two_locks(path: &Path, p: u32, n: u32, w: u32, ca: u32, cb: u32) {
    let meta = TraceMeta {
        isa: "x86-64".into(),
        workload: "two locks".into(),
        params: vec![],
        producer: "tests/lock_analysis.rs".into(),
    };
    let mut tw = TraceWriter::create(path, meta).unwrap();
    let alu = common::alu_inst(&mut tw);
    tw.marker(0, Marker::ThreadStart).unwrap();
    for t in 1..p {
        tw.marker(0, Marker::ThreadCreate { child: t }).unwrap();
    }
    for t in 0..p {
        if t > 0 {
            tw.marker(t, Marker::ThreadStart).unwrap();
        }
        for _ in 0..n {
            for (lock, c) in [(A, ca), (B, cb)] {
                for _ in 0..w {
                    tw.inst(t, alu, false, &[]).unwrap();
                }
                let order = Order::NONE;
                tw.marker(
                    t,
                    Marker::MutexLock {
                        addr: lock,
                        order,
                        spin: Spin::NONE,
                        call: false,
                    },
                )
                .unwrap();
                for _ in 0..c {
                    tw.inst(t, alu, false, &[]).unwrap();
                }
                tw.marker(
                    t,
                    Marker::MutexUnlock {
                        addr: lock,
                        plain: false,
                    },
                )
                .unwrap();
            }
        }
        if t > 0 {
            tw.marker(t, Marker::ThreadEnd).unwrap();
        }
    }
    for t in 1..p {
        tw.marker(0, Marker::ThreadJoin { child: t }).unwrap();
    }
    tw.marker(0, Marker::ThreadEnd).unwrap();
    tw.finish().unwrap();
}

/// `isim run` of `trace` on `configs/default.toml` with `sets`, then `isim locks --json`.
fn locks(trace: &Path, out: &Path, sets: &[&str]) -> Value {
    let mut args = vec!["run", "--config", "configs/default.toml", "--trace"];
    let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
    args.extend([t, "--out", o]);
    for s in sets {
        args.extend(["--set", s]);
    }
    common::ok(&args);
    let text = common::ok(&["locks", "--json", o]);
    let report: Value = serde_json::from_str(&text).unwrap();
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("locks.json")).unwrap()).unwrap();
    assert_eq!(report, file, "locks.json is what --json printed");
    report
}

/// The locks' waits and releases against the run's `sync-crit-sect`: within 1 %, and the top
/// lock's share of it.
fn check_sum(r: &Value) {
    let sync = r["sync_crit_sect_cycles"].as_f64().unwrap();
    let locks = r["lock_cycles"].as_f64().unwrap();
    assert!(sync > 0.0, "{r}");
    let listed: f64 = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["wait_cycles"].as_f64().unwrap() + l["release_cycles"].as_f64().unwrap())
        .sum();
    assert!(
        (listed - locks).abs() <= 1e-6 * locks,
        "{listed} against {locks}"
    );
    assert!(
        (locks / sync - 1.0).abs() <= 0.01,
        "the locks' waits and releases {locks} against the run's sync-crit-sect {sync}"
    );
}

#[test]
fn two_locks_rank_by_their_planted_costs_and_add_up_to_the_lock_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("two.itrace");
    two_locks(&trace, 4, 30, 400, 1600, 200);
    for (name, sets) in [
        ("fifo", &[][..]),
        (
            "futex",
            &["locks.model=futex", "locks.wake_latency=4000"][..],
        ),
    ] {
        let r = locks(&trace, &dir.path().join(name), sets);
        let l = r["locks"].as_array().unwrap();
        assert_eq!(l.len(), 2, "{name}: {r}");
        assert_eq!(l[0]["addr"], format!("{A:#x}"), "{name}: {r}");
        assert_eq!(l[1]["addr"], format!("{B:#x}"), "{name}: {r}");
        let (wa, wb) = (
            l[0]["wait_cycles"].as_f64().unwrap(),
            l[1]["wait_cycles"].as_f64().unwrap(),
        );
        assert!(wa > 2.0 * wb, "{name}: A waits {wa}, B {wb}");
        for lock in l {
            assert_eq!(lock["acquisitions"].as_u64(), Some(120), "{name}: {lock}");
            assert_eq!(lock["threads"].as_u64(), Some(4), "{name}: {lock}");
        }
        check_sum(&r);
    }
}

#[test]
fn a_hot_lock_is_found_at_its_line_in_a_traced_program() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = common::example(dir.path(), "lock_counter");
    let args = ["-t", "4", "-w", "50", "-i", "400"];
    let trace = common::trace(&prog, &args, &dir.path().join("t.itrace"));
    for (name, sets) in [("fifo", &[][..]), ("futex", &["locks.model=futex"][..])] {
        let r = locks(&trace, &dir.path().join(name), sets);
        let top = &r["locks"][0];
        let site = top["sites"][0]["location"].as_str().unwrap();
        assert!(site.ends_with("lock_counter.c:33"), "{name}: {top}");
        // Named by the program's own symbol, `static pthread_mutex_t lock`.
        let named = top["name"].as_str().unwrap();
        assert!(named.starts_with("lock taken at "), "{name}: {named}");
        assert!(top["contended"].as_u64().unwrap() > 0, "{name}: {top}");
        assert_eq!(top["acquisitions"].as_u64(), Some(1600), "{name}: {top}");
        let share = top["share_of_sync_crit_sect"].as_f64().unwrap();
        assert!(
            share >= 0.99,
            "{name}: the counter's lock is {share} of the waiting"
        );
        check_sum(&r);
    }
}

/// A lock in the heap is named by where its word was first written (`isim locks`): the tree
/// build with a lock per node (`examples/c/tree_locks.c`), whose root is a static structure
/// (`root`, its mutex at offset 0x18) and whose other nodes come from `new_node` (`calloc` at
/// line 25, `pthread_mutex_init` at line 27). Every lock `insert` takes but the root's is
/// named by one of those two lines in `new_node` (before, by a bare address), and the root's
/// by its symbol.
#[test]
fn a_heap_lock_is_named_by_the_line_that_first_wrote_it() {
    if !common::tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = common::example(dir.path(), "tree_locks");
    let trace = common::trace(
        &prog,
        &["-t", "4", "-n", "300"],
        &dir.path().join("t.itrace"),
    );
    let r = locks(&trace, &dir.path().join("run"), &[]);
    let all = r["locks"].as_array().unwrap();
    let root: Vec<&Value> = all
        .iter()
        .filter(|l| {
            l["name"]
                .as_str()
                .unwrap()
                .starts_with("root+0x18 taken at ")
        })
        .collect();
    assert_eq!(root.len(), 1, "the root's lock, by its symbol: {r}");
    assert!(root[0].get("first_written_at").is_none(), "{}", root[0]);
    // The tree's other locks: those `insert` takes (a library's own lock the traced run
    // happened to contend, glibc's malloc arena for one, is taken elsewhere).
    let heap: Vec<&Value> = all
        .iter()
        .filter(|l| !std::ptr::eq(*l, root[0]))
        .filter(|l| l["sites"][0]["function"] == "insert")
        .collect();
    assert!(heap.len() >= 100, "{} heap locks", heap.len());
    for l in heap {
        let at = l["first_written_at"].as_str().unwrap_or("");
        assert!(
            at.ends_with("tree_locks.c:25 (new_node)")
                || at.ends_with("tree_locks.c:27 (new_node)"),
            "{l}"
        );
        let name = l["name"].as_str().unwrap();
        assert!(
            name.starts_with(&format!(
                "{} (first written at {at})",
                l["addr"].as_str().unwrap()
            )),
            "{name}"
        );
    }
    check_sum(&r);
}
