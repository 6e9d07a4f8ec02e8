//! Trace format v2 under test: arbitrary record sequences round-trip exactly, with chunks
//! compressed or stored; every truncation (at every byte of compressed chunks), every flipped
//! byte, a wrong magic, a newer version, an unknown marker and a compressed payload that does
//! not decompress to what its header says are reported as errors naming the file, the byte
//! offset and (inside a stream) the thread — never a panic, never silently different data;
//! random and mutated inputs never panic the reader; a rewrite keeps every record and the
//! counts the tables store match what the streams hold; a chunk read in several batches is
//! still checked against its header's record count.

use std::path::Path;

use proptest::prelude::*;
use sim_frontend::format::writer::rewrite;
use sim_frontend::format::{CHUNK_HEADER_LEN, PROLOGUE_LEN};
use sim_frontend::model::*;
use sim_frontend::workloads::{self, Params};
use sim_frontend::{Trace, TraceError, TraceWriter};

/// A record as the producer gave it, for comparison with what the reader returns.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Inst {
        sidx: u32,
        taken: bool,
        mem: Vec<MemAccess>,
    },
    Marker(Marker),
}

/// One thread's records, each with its memory accesses.
type Stream = Vec<(Record, Vec<MemAccess>)>;

/// Reads every record of every thread.
fn read_all(path: &Path) -> Result<Vec<Stream>, TraceError> {
    let t = Trace::open(path)?;
    let mut out = Vec::new();
    let mut b = Batch::default();
    for tid in 0..t.thread_count() {
        let mut v = Vec::new();
        let mut s = t.stream(tid)?;
        while s.next_batch(&mut b)? {
            for r in &b.records {
                let mem = match r {
                    Record::Inst(i) => b.mem_of(i).to_vec(),
                    Record::Marker(_) => Vec::new(),
                };
                v.push((*r, mem));
            }
        }
        out.push(v);
    }
    Ok(out)
}

fn arb_program() -> impl Strategy<Value = Vec<StaticInst>> {
    let kind = prop_oneof![
        4 => Just(BranchKind::None),
        2 => Just(BranchKind::Conditional),
        1 => Just(BranchKind::DirectJump),
        1 => Just(BranchKind::DirectCall),
        1 => Just(BranchKind::IndirectJump),
        1 => Just(BranchKind::IndirectCall),
        1 => Just(BranchKind::Return),
    ];
    let spec = (1u8..=64, any::<bool>()).prop_map(|(size, write)| MemSpec { size, write });
    let one = (
        kind,
        0u64..40,
        prop::collection::vec(spec, 0..7),
        prop::collection::vec(0u8..64, 0..4),
        any::<bool>(),
    );
    prop::collection::vec(one, 1..24).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (branch, tgt, mem, regs, bs))| {
                // Consecutive PCs so that fall-through is often implied; targets may point
                // past the table (a branch into untraced code).
                let mut s = StaticInst::new(0x1000 + 4 * i as u64, 4, OpClass::IntAlu);
                s.branch = branch;
                if branch.is_direct() {
                    s.target = 0x1000 + 4 * tgt;
                }
                s.mem = mem;
                s.srcs = regs.clone();
                s.dsts = regs;
                s.block_start = bs;
                s
            })
            .collect()
    })
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![
        Just(Order::SIM),
        Just(Order::NONE),
        (0..=Order::MAX_RELEASE).prop_map(Order::after),
    ]
}

fn arb_marker(threads: u32) -> impl Strategy<Value = Marker> {
    prop_oneof![
        Just(Marker::ThreadStart),
        Just(Marker::ThreadEnd),
        Just(Marker::RoiBegin),
        Just(Marker::RoiEnd),
        (any::<u64>(), 1..=threads).prop_map(|(id, participants)| Marker::Barrier {
            id,
            participants,
            lead: participants % 2 == 0
        }),
        // A library call's lock spins any number of turns, one in traced code none or the
        // default (`Marker::MutexLock::spins`).
        (any::<u64>(), order(), any::<u32>(), any::<bool>()).prop_map(
            |(addr, order, turns, call)| Marker::MutexLock {
                addr,
                order,
                spin: match (call, turns % 4) {
                    (true, 0) => Spin::NONE,
                    (true, 1) => Spin::DEFAULT,
                    (true, 2) => Spin::gomp(turns),
                    (true, _) => Spin {
                        turns,
                        again: false,
                    },
                    (false, 0) => Spin::NONE,
                    (false, _) => Spin::DEFAULT,
                },
                call,
            }
        ),
        (any::<u64>(), order(), any::<bool>())
            .prop_map(|(addr, order, write)| { Marker::RwLock { addr, order, write } }),
        (any::<u64>(), any::<u32>(), any::<bool>(), any::<bool>()).prop_map(
            |(addr, init, post, wakes)| {
                if post {
                    Marker::SemPost { addr, init, wakes }
                } else {
                    Marker::SemWait { addr, init }
                }
            }
        ),
        (any::<u64>(), any::<bool>()).prop_map(|(addr, plain)| Marker::MutexUnlock { addr, plain }),
        (any::<u64>(), any::<u64>(), order(), order()).prop_map(|(cond, mutex, wake, relock)| {
            // A wait is either replayed by semantics or fully recorded.
            let (wake, relock) = if wake == Order::SIM || relock == Order::SIM {
                (Order::SIM, Order::SIM)
            } else {
                (wake, relock)
            };
            Marker::CondWait {
                cond,
                mutex,
                wake,
                relock,
            }
        }),
        (any::<u64>(), order())
            .prop_filter("futex waits are recorded", |(_, o)| *o != Order::SIM)
            .prop_map(|(addr, wake)| Marker::FutexWait { addr, wake }),
        any::<u64>().prop_map(|addr| Marker::FutexWake { addr }),
        (any::<u64>(), order())
            .prop_filter("a skipped wait's signal is recorded", |(_, o)| *o
                != Order::SIM)
            .prop_map(|(cond, wake)| Marker::CondReady { cond, wake }),
        (0..=Order::MAX_RELEASE).prop_map(|index| Marker::Release { index }),
        any::<u64>().prop_map(|cond| Marker::CondSignal { cond }),
        any::<u64>().prop_map(|cond| Marker::CondBroadcast { cond }),
        (0..threads).prop_map(|child| Marker::ThreadCreate { child }),
        (0..threads).prop_map(|child| Marker::ThreadJoin { child }),
        (0u32..2).prop_map(|name| Marker::SectionBegin { name }),
        (0u32..2).prop_map(|name| Marker::SectionEnd { name }),
    ]
}

/// Addresses that exercise the predictor: mostly strided, sometimes random.
fn arb_addr() -> impl Strategy<Value = u64> {
    prop_oneof![3 => (0u64..64).prop_map(|i| 0x10_0000 + 8 * i), 1 => any::<u64>()]
}

fn arb_events(n_static: usize, threads: u32) -> impl Strategy<Value = Vec<(u32, Ev)>> {
    let inst = (
        0..n_static as u32,
        any::<bool>(),
        prop::collection::vec((arb_addr(), 1u8..=64, any::<bool>()), 0..6),
        any::<bool>(),
    )
        .prop_map(|(sidx, taken, mem, use_static)| (sidx, taken, mem, use_static));
    let ev = prop_oneof![
        6 => inst.prop_map(|(sidx, taken, mem, st)| (sidx, taken, Some((mem, st)), None)),
        1 => arb_marker(threads).prop_map(|m| (0, false, None, Some(m))),
    ];
    prop::collection::vec((0..threads, ev), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(t, (sidx, taken, mem, m))| match m {
                Some(m) => (t, Ev::Marker(m)),
                None => {
                    let (mem, _) = mem.unwrap_or_default();
                    let mem = mem
                        .into_iter()
                        .map(|(addr, size, write)| MemAccess { addr, size, write })
                        .collect();
                    (t, Ev::Inst { sidx, taken, mem })
                }
            })
            .collect()
    })
}

fn case() -> impl Strategy<Value = (Vec<StaticInst>, u32, Vec<(u32, Ev)>, bool)> {
    (arb_program(), 1u32..4).prop_flat_map(|(prog, threads)| {
        let n = prog.len();
        (
            Just(prog),
            Just(threads),
            arb_events(n, threads),
            any::<bool>(),
        )
    })
}

fn write_case(
    path: &Path,
    prog: &[StaticInst],
    threads: u32,
    evs: &[(u32, Ev)],
    static_shapes: bool,
) -> Vec<Vec<Ev>> {
    let mut w = TraceWriter::create(
        path,
        TraceMeta {
            isa: "test".into(),
            workload: "prop".into(),
            params: vec![("k".into(), "v".into())],
            producer: "proptest".into(),
        },
    )
    .unwrap();
    // Half the cases with chunks stored as they are, half compressed (the default).
    w.set_compression(evs.len() % 2 == 0);
    w.source_mut().sections = vec!["a".into(), "b".into()];
    for s in prog {
        w.add_static(s.clone()).unwrap();
    }
    let mut expect = vec![Vec::new(); threads as usize];
    for (t, e) in evs {
        match e {
            Ev::Inst { sidx, taken, mem } => {
                let s = &prog[*sidx as usize];
                // Half the cases use the static operand shape (predicted path), the others
                // arbitrary shapes (explicit path).
                let mem: Vec<MemAccess> = if static_shapes {
                    s.mem
                        .iter()
                        .enumerate()
                        .map(|(i, m)| MemAccess {
                            addr: mem.get(i).map_or(0x2000 + 64 * i as u64, |a| a.addr),
                            size: m.size,
                            write: m.write,
                        })
                        .collect()
                } else {
                    mem.clone()
                };
                w.inst(*t, *sidx, *taken, &mem).unwrap();
                let taken = match s.branch {
                    BranchKind::None => false,
                    BranchKind::Conditional => *taken,
                    _ => true,
                };
                expect[*t as usize].push(Ev::Inst {
                    sidx: *sidx,
                    taken,
                    mem,
                });
            }
            Ev::Marker(m) => {
                w.marker(*t, *m).unwrap();
                expect[*t as usize].push(Ev::Marker(*m));
            }
        }
    }
    // Every thread ends with a marker, so that threads with no other events exist too (the
    // writer knows only the threads it was given records for).
    for t in 0..threads {
        w.marker(t, Marker::ThreadEnd).unwrap();
        expect[t as usize].push(Ev::Marker(Marker::ThreadEnd));
    }
    w.finish().unwrap();
    expect
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_record_sequences_round_trip((prog, threads, evs, static_shapes) in case()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.itrace");
        let expect = write_case(&path, &prog, threads, &evs, static_shapes);
        let got = read_all(&path).unwrap();
        prop_assert_eq!(got.len(), expect.len());
        for (t, (g, e)) in got.iter().zip(&expect).enumerate() {
            let g_ev: Vec<Ev> = g.iter().map(|(r, mem)| match r {
                Record::Inst(i) => Ev::Inst { sidx: i.sidx, taken: i.taken, mem: mem.clone() },
                Record::Marker(m) => Ev::Marker(*m),
            }).collect();
            prop_assert_eq!(&g_ev, e, "thread {}", t);
            // An indirect branch's recorded successor is the instruction that follows it.
            for w in g.windows(2) {
                if let (Record::Inst(a), Record::Inst(b)) = (&w[0].0, &w[1].0)
                    && prog[a.sidx as usize].branch.is_indirect()
                {
                    prop_assert_eq!(a.next, b.sidx);
                }
            }
        }
        let t = Trace::open(&path).unwrap();
        prop_assert_eq!(&t.meta.producer, "proptest");
        prop_assert_eq!(&t.program.insts, &prog);
    }
}

/// A two-thread trace as the writer makes it (chunks compressed).
fn small_trace(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("small.itrace");
    workloads::find("lock-contention")
        .unwrap()
        .generate(
            &Params {
                threads: 2,
                size: 3,
                seed: 7,
            },
            &path,
        )
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// The same trace with its chunks stored uncompressed, so that tests can edit records in place.
fn small_trace_stored(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let (src, _) = small_trace(dir);
    let path = dir.join("stored.itrace");
    rewrite(&src, &path, false).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn le_u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The chunk offsets of a trace, with their thread and whether each is compressed (its
/// header's decoded length is not 0).
fn chunks_of(path: &Path, bytes: &[u8]) -> Vec<(u32, u64, bool)> {
    let t = Trace::open(path).unwrap();
    t.threads
        .iter()
        .enumerate()
        .flat_map(|(i, d)| {
            d.chunks
                .iter()
                .map(move |&c| (i as u32, c, le_u32_at(bytes, c as usize + 16) != 0))
        })
        .collect()
}

fn expect_err(path: &Path) -> TraceError {
    match read_all(path) {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&path.display().to_string()) && msg.contains("byte "),
                "message lacks file or offset: {msg}"
            );
            e
        }
    }
}

#[test]
fn truncation_at_every_byte_offset_is_an_error_naming_file_offset_and_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = small_trace(dir.path());
    let chunks = chunks_of(&path, &bytes);
    assert!(
        chunks.iter().all(|&(_, _, z)| z),
        "every chunk of this trace should be compressed: {chunks:?}"
    );
    let cut = dir.path().join("cut.itrace");
    let mut named_thread = 0;
    for len in 0..bytes.len() {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let e = expect_err(&cut);
        // A cut inside a chunk's payload must name that chunk's thread.
        if let Some(&(tid, off, _)) = chunks.iter().find(|&&(_, off, _)| {
            let plen = u32::from_le_bytes(
                bytes[off as usize + 8..off as usize + 12]
                    .try_into()
                    .unwrap(),
            ) as u64;
            (off + CHUNK_HEADER_LEN..off + CHUNK_HEADER_LEN + plen).contains(&(len as u64))
        }) {
            assert_eq!(e.thread, Some(tid), "cut at {len}: {e}");
            assert_eq!(e.offset, off, "cut at {len}: {e}");
            named_thread += 1;
        }
        if (len as u64) < PROLOGUE_LEN {
            assert_eq!(e.thread, None);
        }
    }
    assert!(
        named_thread > 100,
        "only {named_thread} cuts fell inside chunk payloads"
    );
}

#[test]
fn every_flipped_byte_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = small_trace(dir.path());
    let bad = dir.path().join("flip.itrace");
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            std::fs::write(&bad, &b).unwrap();
            expect_err(&bad);
        }
    }
}

#[test]
fn wrong_magic_names_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut bytes) = small_trace(dir.path());
    bytes[0..8].copy_from_slice(b"NOTATRCE");
    let p = dir.path().join("magic.itrace");
    std::fs::write(&p, &bytes).unwrap();
    let e = expect_err(&p);
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("not an isim trace"), "{e}");
}

#[test]
fn newer_version_asks_for_an_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut bytes) = small_trace(dir.path());
    let next = sim_frontend::format::VERSION + 1;
    bytes[8..10].copy_from_slice(&next.to_le_bytes());
    let crc = crc32(&bytes[0..12]);
    bytes[12..16].copy_from_slice(&crc.to_le_bytes());
    let p = dir.path().join("next.itrace");
    std::fs::write(&p, &bytes).unwrap();
    let e = expect_err(&p);
    assert_eq!(e.offset, 8);
    assert!(
        e.message.contains(&format!("version {next} is newer")),
        "{e}"
    );
}

fn crc32(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(b);
    h.finalize()
}

/// Rewrites a (v2) chunk's checksum after its header or payload was changed on purpose.
fn fix_chunk_crc(bytes: &mut [u8], off: usize) {
    let plen = le_u32_at(bytes, off + 8) as usize;
    let h = CHUNK_HEADER_LEN as usize;
    let mut c = crc32fast::Hasher::new();
    c.update(&bytes[off..off + h - 4]);
    c.update(&bytes[off + h..off + h + plen]);
    let crc = c.finalize();
    bytes[off + h - 4..off + h].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn unknown_marker_names_thread_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut bytes) = small_trace_stored(dir.path());
    let t = Trace::open(&path).unwrap();
    // Thread 1's stream starts with its ThreadStart marker (stored: the payload is the records).
    let off = t.threads[1].chunks[0] as usize;
    let h = CHUNK_HEADER_LEN as usize;
    assert_eq!(le_u32_at(&bytes, off + 16), 0, "stored, not compressed");
    assert_eq!(
        bytes[off + h],
        0x81,
        "thread 1 should start with a thread-start marker"
    );
    bytes[off + h] = 0x80 | 0x50;
    fix_chunk_crc(&mut bytes, off);
    let p = dir.path().join("marker.itrace");
    std::fs::write(&p, &bytes).unwrap();
    let e = expect_err(&p);
    assert_eq!(e.thread, Some(1));
    assert_eq!(e.offset, (off + h) as u64);
    assert!(e.message.contains("unknown marker code 0x50"), "{e}");
}

#[test]
fn a_compressed_payload_must_decompress_to_what_its_header_says() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = small_trace(dir.path());
    let (_, off, z) = chunks_of(&path, &bytes)[1];
    assert!(z);
    let off = off as usize;
    let h = CHUNK_HEADER_LEN as usize;
    let p = dir.path().join("z.itrace");
    // A damaged zstd frame behind a valid checksum.
    let mut b = bytes.clone();
    b[off + h + 2] ^= 0x40;
    b[off + h + 5] ^= 0x11;
    fix_chunk_crc(&mut b, off);
    std::fs::write(&p, &b).unwrap();
    let e = expect_err(&p);
    assert_eq!(e.thread, Some(1), "{e}");
    assert!(
        e.message.contains("does not decompress") || e.message.contains("decoded payload"),
        "{e}"
    );
    // A header whose decoded length is one byte short or long of what the frame holds.
    for delta in [-1i64, 1] {
        let mut b = bytes.clone();
        let n = le_u32_at(&b, off + 16) as i64 + delta;
        b[off + 16..off + 20].copy_from_slice(&(n as u32).to_le_bytes());
        fix_chunk_crc(&mut b, off);
        std::fs::write(&p, &b).unwrap();
        let e = expect_err(&p);
        assert_eq!(e.thread, Some(1), "{e}");
        assert!(e.message.contains("decompress"), "{delta}: {e}");
    }
}

/// A stream is decoded a few hundred records at a time, so a chunk's record count can be
/// checked only once its last batch is out: a header that promises one record more or fewer
/// than a chunk of several batches holds is still an error naming the thread and the count's
/// offset, never a quietly shorter stream; every batch holds at most `BATCH_RECORDS`.
#[test]
fn a_chunk_of_several_batches_must_hold_the_records_its_header_says() {
    use sim_frontend::format::reader::BATCH_RECORDS;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.itrace");
    workloads::find("lock-contention")
        .unwrap()
        .generate(
            &Params {
                threads: 2,
                size: 400,
                seed: 7,
            },
            &src,
        )
        .unwrap();
    let path = dir.path().join("big-stored.itrace");
    rewrite(&src, &path, false).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let (tid, off, _) = chunks_of(&path, &bytes)
        .into_iter()
        .find(|&(_, off, _)| le_u32_at(&bytes, off as usize + 12) as usize > 2 * BATCH_RECORDS)
        .expect("a chunk of more than two batches");
    let off = off as usize;
    let t = Trace::open(&path).unwrap();
    let mut s = t.stream(tid).unwrap();
    let mut b = Batch::default();
    let (mut batches, mut records) = (0, 0);
    while s.next_batch(&mut b).unwrap() {
        assert!(b.records.len() <= BATCH_RECORDS, "{}", b.records.len());
        batches += 1;
        records += b.records.len() as u64;
    }
    assert_eq!(records, t.threads[tid as usize].records);
    assert!(batches > 2, "{batches} batches");
    let p = dir.path().join("count.itrace");
    for delta in [-1i64, 1] {
        let mut b = bytes.clone();
        let n = le_u32_at(&b, off + 12) as i64;
        b[off + 12..off + 16].copy_from_slice(&((n + delta) as u32).to_le_bytes());
        fix_chunk_crc(&mut b, off);
        std::fs::write(&p, &b).unwrap();
        let e = expect_err(&p);
        assert_eq!(e.thread, Some(tid), "{e}");
        assert_eq!(e.offset, (off + 12) as u64, "{e}");
        assert_eq!(
            e.message,
            format!(
                "chunk header says {} records, the payload holds {n}",
                n + delta
            )
        );
    }
}

#[test]
fn rewriting_keeps_every_record_and_the_stored_counts_match_the_streams() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = small_trace(dir.path());
    let (stored, sbytes) = small_trace_stored(dir.path());
    let a = read_all(&path).unwrap();
    assert_eq!(a, read_all(&stored).unwrap());
    assert!(
        bytes.len() < sbytes.len(),
        "{} vs {}",
        bytes.len(),
        sbytes.len()
    );
    let back = dir.path().join("back.itrace");
    rewrite(&stored, &back, true).unwrap();
    assert_eq!(
        std::fs::read(&back).unwrap(),
        bytes,
        "rewriting is deterministic"
    );
    // The counts the writer stored are what the streams hold.
    let t = Trace::open(&path).unwrap();
    for (tid, stream) in a.iter().enumerate() {
        let k = t.threads[tid].counts.clone().expect("v2 stores counts");
        let (mut loads, mut stores, mut branches, mut taken) = (0, 0, 0, 0);
        let mut markers = [0u64; Marker::KINDS];
        for (r, mem) in stream {
            match r {
                Record::Inst(i) => {
                    loads += mem.iter().filter(|m| !m.write).count() as u64;
                    stores += mem.iter().filter(|m| m.write).count() as u64;
                    if t.program.insts[i.sidx as usize].branch.is_branch() {
                        branches += 1;
                        taken += i.taken as u64;
                    }
                }
                Record::Marker(m) => markers[m.kind_index()] += 1,
            }
        }
        assert_eq!(
            (k.loads, k.stores, k.branches, k.taken),
            (loads, stores, branches, taken)
        );
        assert_eq!(k.markers, markers);
        assert!(markers.iter().sum::<u64>() > 0);
    }
}

#[test]
fn a_failed_writer_leaves_no_file_that_looks_complete() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dropped.itrace");
    {
        let mut w = TraceWriter::create(&p, TraceMeta::default()).unwrap();
        w.add_static(StaticInst::new(0x10, 4, OpClass::IntAlu))
            .unwrap();
        w.inst(0, 0, false, &[]).unwrap();
        // dropped without finish()
    }
    assert!(!p.exists());
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "partial file left behind"
    );
}

#[test]
fn writer_rejects_duplicate_pcs_and_undeclared_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = TraceWriter::create(&dir.path().join("x.itrace"), TraceMeta::default()).unwrap();
    w.add_static(StaticInst::new(0x10, 4, OpClass::IntAlu))
        .unwrap();
    assert!(
        w.add_static(StaticInst::new(0x10, 2, OpClass::IntAlu))
            .is_err()
    );
    assert!(w.inst(0, 5, false, &[]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random bytes, with or without a valid prologue, never panic the reader.
    #[test]
    fn random_bytes_never_panic(mut b in prop::collection::vec(any::<u8>(), 0..600), prologue in any::<bool>()) {
        if prologue && b.len() >= 16 {
            b[0..8].copy_from_slice(b"ISIMTRC\0");
            let version = 1 + (b[8] & 1); // v1 or v2
            b[8..12].copy_from_slice(&[version, 0, 0, 0]);
            let crc = crc32(&b[0..12]);
            b[12..16].copy_from_slice(&crc.to_le_bytes());
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.itrace");
        std::fs::write(&p, &b).unwrap();
        prop_assert!(read_all(&p).is_err());
    }

    /// Mutated chunk payloads with repaired checksums reach the record decoder itself: it
    /// must report an error or decode something, never panic or loop.
    #[test]
    fn mutated_payloads_with_valid_checksums_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), thread in 0usize..2) {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut bytes) = small_trace_stored(dir.path());
        let t = Trace::open(&path).unwrap();
        let off = t.threads[thread].chunks[0] as usize;
        let plen = le_u32_at(&bytes, off + 8) as usize;
        for (i, v) in edits {
            bytes[off + CHUNK_HEADER_LEN as usize + i.index(plen)] = v;
        }
        fix_chunk_crc(&mut bytes, off);
        std::fs::write(&path, &bytes).unwrap();
        match read_all(&path) {
            Ok(_) => {}
            Err(e) => prop_assert_eq!(e.thread, Some(thread as u32), "{}", e),
        }
    }
}

/// Streams long enough to fill many chunks, with an indirect branch before every other
/// instruction (its record ends only with the next instruction's index, so a chunk must
/// never close between the two), written through the serial API and through per-thread
/// encoders on host threads of their own, read back record for record.
#[test]
fn long_streams_of_indirect_branches_round_trip_through_both_writer_apis() {
    let dir = tempfile::tempdir().unwrap();
    let mut prog = Vec::new();
    for k in 0..64u64 {
        let mut j = StaticInst::new(0x1000 + 0x20 * k, 2, OpClass::Jump);
        j.branch = BranchKind::IndirectJump;
        prog.push(j);
        let mut l = StaticInst::new(0x1010 + 0x20 * k, 4, OpClass::Load);
        l.mem = vec![MemSpec {
            size: 8,
            write: false,
        }];
        prog.push(l);
    }
    // Thread t: indirect jump k → load at a pseudo-random slot, its address random too.
    let events = |t: u32| -> Vec<(u32, Vec<MemAccess>)> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
        let mut v = Vec::new();
        let mut k = 0u32;
        for _ in 0..60_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push((2 * k, Vec::new()));
            let next = (x % 64) as u32;
            v.push((
                2 * next + 1,
                vec![MemAccess {
                    addr: x & 0xffff_fff8,
                    size: 8,
                    write: false,
                }],
            ));
            k = next;
        }
        v
    };
    let write = |path: &Path, parallel: bool| {
        let mut w = TraceWriter::create(path, TraceMeta::default()).unwrap();
        for s in &prog {
            w.add_static(s.clone()).unwrap();
        }
        if parallel {
            let encs = w.encoders(3).unwrap();
            std::thread::scope(|s| {
                for mut e in encs {
                    let ev = events(e.thread());
                    s.spawn(move || {
                        for (sidx, mem) in ev {
                            e.inst(sidx, false, &mem).unwrap();
                        }
                        e.finish().unwrap();
                    });
                }
            });
        } else {
            for t in 0..3 {
                for (sidx, mem) in events(t) {
                    w.inst(t, sidx, false, &mem).unwrap();
                }
            }
        }
        w.finish().unwrap();
    };
    let (a, b) = (
        dir.path().join("serial.itrace"),
        dir.path().join("par.itrace"),
    );
    write(&a, false);
    write(&b, true);
    let (ra, rb) = (read_all(&a).unwrap(), read_all(&b).unwrap());
    assert_eq!(ra, rb);
    let t = Trace::open(&a).unwrap();
    for (tid, stream) in ra.iter().enumerate() {
        assert!(
            t.threads[tid].chunks.len() > 3,
            "{} chunks",
            t.threads[tid].chunks.len()
        );
        let want = events(tid as u32);
        assert_eq!(stream.len(), want.len());
        for ((r, mem), (sidx, wmem)) in stream.iter().zip(&want) {
            let Record::Inst(i) = r else { panic!("{r:?}") };
            assert_eq!(i.sidx, *sidx);
            assert_eq!(mem, wmem);
        }
    }
}

/// `Trace::max_alive` bounds the threads alive at once by the create/join structure: main
/// (thread 0) creates 1 and 2, joins both, creates 3 and 4, joins 3; thread 4 creates 5 and
/// never joins it. At most main + 2 of its children + thread 4's child are alive: 4, though
/// the trace has 6 threads. A trace with one thread needs one core.
#[test]
fn max_alive_counts_children_created_and_not_yet_joined() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rounds.itrace");
    let meta = TraceMeta {
        isa: "x86-64".into(),
        workload: "rounds".into(),
        params: vec![],
        producer: "sim-frontend/tests/format.rs".into(),
    };
    let mut w = TraceWriter::create(&path, meta).unwrap();
    let m = |w: &mut TraceWriter, t: u32, mk: Marker| w.marker(t, mk).unwrap();
    m(&mut w, 0, Marker::ThreadStart);
    for c in [1, 2] {
        m(&mut w, 0, Marker::ThreadCreate { child: c });
    }
    for c in [1, 2] {
        m(&mut w, 0, Marker::ThreadJoin { child: c });
    }
    for c in [3, 4] {
        m(&mut w, 0, Marker::ThreadCreate { child: c });
    }
    m(&mut w, 0, Marker::ThreadJoin { child: 3 });
    m(&mut w, 4, Marker::ThreadCreate { child: 5 });
    for t in 0..6 {
        if t > 0 {
            m(&mut w, t, Marker::ThreadStart);
        }
        m(&mut w, t, Marker::ThreadEnd);
    }
    w.finish().unwrap();
    let t = Trace::open(&path).unwrap();
    assert_eq!(t.thread_count(), 6);
    assert_eq!(t.max_alive().unwrap(), 4);

    let one = dir.path().join("one.itrace");
    workloads::find("balanced")
        .unwrap()
        .generate(
            &Params {
                threads: 1,
                size: 64,
                seed: 1,
            },
            &one,
        )
        .unwrap();
    assert_eq!(Trace::open(&one).unwrap().max_alive().unwrap(), 1);
}
