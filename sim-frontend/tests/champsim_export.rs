//! `champsim::export` against `champsim::import`, which was checked independently against a
//! Python writer of the format (tests/cli.rs): a thread of a built-in workload exported and
//! imported back must give, instruction by instruction, the same PCs, branch kinds (which
//! ChampSim infers from the registers the exporter chose), directions and load and store
//! addresses — for raw, gzip and xz output. Bad requests fail naming the file and leave no
//! output behind.

use std::path::{Path, PathBuf};

use sim_frontend::champsim::{export, import};
use sim_frontend::model::{Batch, BranchKind, Marker, OpClass, Record, StaticInst, TraceMeta};
use sim_frontend::workloads::{self, Params};
use sim_frontend::{Trace, TraceWriter};

fn make(dir: &Path, name: &str, threads: u32, size: u64) -> PathBuf {
    let p = dir.join(format!("{name}.itrace"));
    workloads::find(name)
        .unwrap()
        .generate(
            &Params {
                threads,
                size,
                seed: 5,
            },
            &p,
        )
        .unwrap();
    p
}

/// (pc, branch kind, taken, load addresses, store addresses) per executed instruction.
type Step = (u64, BranchKind, bool, Vec<u64>, Vec<u64>);

fn steps(trace: &Path, tid: u32) -> Vec<Step> {
    let t = Trace::open(trace).unwrap();
    let mut s = t.stream(tid).unwrap();
    let mut b = Batch::default();
    let mut out = Vec::new();
    while s.next_batch(&mut b).unwrap() {
        for r in &b.records {
            if let Record::Inst(i) = r {
                let st = &t.program.insts[i.sidx as usize];
                let mem = b.mem_of(i);
                let addrs = |w: bool| {
                    mem.iter()
                        .filter(|a| a.write == w)
                        .map(|a| a.addr)
                        .collect()
                };
                let taken = st.branch != BranchKind::None
                    && (st.branch != BranchKind::Conditional || i.taken);
                out.push((st.pc, st.branch, taken, addrs(false), addrs(true)));
            }
        }
    }
    out
}

#[test]
fn export_then_import_gives_back_every_instruction() {
    let dir = tempfile::tempdir().unwrap();
    for (name, threads, size, ext) in [
        ("lu-owner", 2, 12, "raw"),
        ("random-branch", 1, 3000, "xz"),
        ("stream", 2, 2000, "gz"),
    ] {
        let src = make(dir.path(), name, threads, size);
        for tid in 0..threads {
            let champ = dir.path().join(format!("{name}-{tid}.champsimtrace.{ext}"));
            let c = export(&Trace::open(&src).unwrap(), tid, false, &champ, |_| {}).unwrap();
            let back = dir.path().join(format!("{name}-{tid}-back.itrace"));
            let ic = import(std::slice::from_ref(&champ), &back, |_| {}).unwrap();
            let want = steps(&src, tid);
            let got = steps(&back, 0);
            let what = format!("{name} thread {tid} via {}", champ.display());
            assert_eq!(c.instructions, want.len() as u64, "{what}");
            assert_eq!(
                (
                    ic[0].instructions,
                    ic[0].loads,
                    ic[0].stores,
                    ic[0].branches
                ),
                (c.instructions, c.loads, c.stores, c.branches),
                "{what}"
            );
            assert_eq!((c.mem_dropped, c.regs_dropped), (0, 0), "{what}");
            assert!(c.branches > 0 && c.loads > 0, "{what}: {c:?}");
            assert_eq!(got.len(), want.len(), "{what}");
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{what}: instruction {k}");
            }
        }
    }
}

#[test]
fn roi_only_exports_the_region_of_interest() {
    // 10 instructions before the region, 20 inside, 5 after.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("roi.itrace");
    let mut w = TraceWriter::create(
        &src,
        TraceMeta {
            isa: "test".into(),
            workload: "roi".into(),
            params: vec![],
            producer: "test".into(),
        },
    )
    .unwrap();
    let mut br = StaticInst::new(0x1004, 4, OpClass::CondBranch);
    br.branch = BranchKind::Conditional;
    br.target = 0x1000;
    let op = w
        .add_static(StaticInst::new(0x1000, 4, OpClass::IntAlu))
        .unwrap();
    let br = w.add_static(br).unwrap();
    let run = |w: &mut TraceWriter, n: u32, last: bool| {
        for k in 0..n {
            w.inst(0, op, false, &[]).unwrap();
            w.inst(0, br, !(last && k + 1 == n), &[]).unwrap();
        }
    };
    w.marker(0, Marker::ThreadStart).unwrap();
    run(&mut w, 5, false);
    w.marker(0, Marker::RoiBegin).unwrap();
    run(&mut w, 10, false);
    w.marker(0, Marker::RoiEnd).unwrap();
    run(&mut w, 3, true);
    w.marker(0, Marker::ThreadEnd).unwrap();
    w.finish().unwrap();
    let t = Trace::open(&src).unwrap();
    let all = dir.path().join("all.champsimtrace");
    let roi = dir.path().join("roi.champsimtrace");
    let a = export(&t, 0, false, &all, |_| {}).unwrap();
    let r = export(&t, 0, true, &roi, |_| {}).unwrap();
    assert_eq!((a.instructions, r.instructions), (36, 20), "{a:?} {r:?}");
    assert_eq!((a.branches, a.taken), (18, 17), "{a:?}");
    assert_eq!((r.branches, r.taken), (10, 10), "{r:?}");
    assert_eq!(
        std::fs::metadata(&roi).unwrap().len(),
        64 * r.instructions,
        "raw records are 64 bytes"
    );
}

#[test]
fn bad_requests_name_the_file_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let src = make(dir.path(), "stream", 1, 100);
    let t = Trace::open(&src).unwrap();
    let out = dir.path().join("x.champsimtrace");
    let e = export(&t, 3, false, &out, |_| {}).unwrap_err().to_string();
    assert!(
        e.contains("no thread 3") && e.contains("stream.itrace"),
        "{e}"
    );
    let missing = dir.path().join("no/such/dir/x.champsimtrace.xz");
    let e = export(&t, 0, false, &missing, |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no/such/dir") && e.contains("cannot create"),
        "{e}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("stream.itrace")],
        "{left:?}"
    );
}
