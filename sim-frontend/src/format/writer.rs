//! Writes trace format v3. Producers (generators, importers, the tracer) declare static
//! instructions, then hand over each thread's dynamic instructions and markers in program
//! order; the writer decides what is implied and what must be spelled out, compresses each
//! chunk with zstd, and counts what each stream holds for the tables.
//!
//! A write that fails for lack of space (a full disk, a file size limit) is reported as such,
//! with how many bytes the trace had taken so far.
//!
//! Threads' streams are independent once the static table is known: [`TraceWriter::encoders`]
//! hands out one [`ThreadEncoder`] per thread, to be driven on as many host threads; each
//! compresses its own chunks, and chunks go to the file in the order they are completed
//! (the thread directory records where each is, so the layout needs no fixed order).
//!
//! The output goes to `<path>.partial` and is renamed to `<path>` only by [`TraceWriter::finish`],
//! so a producer that fails or is killed never leaves a file that looks like a complete trace.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::tables::{self, StreamCounts, Tables, ThreadDir};
use super::{
    CHUNK_HEADER_LEN, CHUNK_MAGIC, CHUNK_TARGET, H_DYN_MEM, H_HIT_SHIFT, H_MARKER, H_TAKEN,
    HIT_BITS, MAGIC, PRED_SLOTS, Predictor, SEM_WAKES_BIT, TRAILER_MAGIC, VERSION, ZSTD_LEVEL,
    code, put_varint, zigzag,
};
use crate::error::TraceError;
use crate::model::{
    BranchKind, Marker, MemAccess, Order, Program, Spin, SrcLoc, StaticInst, TraceMeta,
};

/// Highest thread id a writer accepts (a guard against a garbage id allocating gigabytes).
pub const MAX_THREADS: u32 = 1 << 20;

#[derive(Default)]
struct ThreadEnc {
    buf: Vec<u8>,
    chunk_records: u32,
    dir: ThreadDir,
    pred: Predictor,
    /// PC that the control flow of the last instruction implies, if any.
    expected_pc: Option<u64>,
    /// The last record is an indirect branch whose target varint is not yet written.
    pending_indirect: bool,
    /// What the stream holds so far.
    counts: StreamCounts,
    /// Chunks a [`ThreadEncoder`] wrote apart, appended to the file by
    /// [`TraceWriter::finish`] in thread order.
    spill: Option<Spill>,
}

/// One thread's chunks as a [`ThreadEncoder`] compressed them, in a file of their own beside
/// the trace (`<trace>.partial.t<N>`): encoders on several host threads finish in any order,
/// and the trace must not depend on it, so each thread's chunks are appended to the trace in
/// thread order once all are done (the same bytes as encoding on one host thread).
struct Spill {
    path: PathBuf,
    out: BufWriter<File>,
    /// Bytes written so far.
    len: u64,
    /// Each chunk's offset in this file.
    chunks: Vec<u64>,
}

impl ThreadEnc {
    /// The chunk has reached its target size and its last record is complete (an indirect
    /// branch's record ends with its successor, written with the next instruction: records
    /// never straddle chunks).
    fn chunk_full(&self) -> bool {
        self.buf.len() >= CHUNK_TARGET && !self.pending_indirect
    }

    /// Encodes one instruction (see [`TraceWriter::inst`]); the error is the message.
    #[inline(always)]
    fn inst(
        &mut self,
        program: &Program,
        mem_base: &[u32],
        sidx: u32,
        taken: bool,
        mem: &[MemAccess],
    ) -> Result<(), String> {
        let Some(s) = program.insts.get(sidx as usize) else {
            return Err(format!("static index {sidx} not declared"));
        };
        let (pc, size, branch, target) = (s.pc, s.size, s.branch, s.target);
        let shape_matches = mem.len() == s.mem.len()
            && mem
                .iter()
                .zip(&s.mem)
                .all(|(a, m)| a.size == m.size && a.write == m.write);
        if !shape_matches && mem.iter().any(|a| a.size == 0) {
            return Err(format!("pc {pc:#x}: memory access of size 0"));
        }
        let base = mem_base[sidx as usize] as usize;
        let th = self;
        if th.pending_indirect {
            put_varint(&mut th.buf, sidx as u64 + 1);
            th.pending_indirect = false;
            th.expected_pc = Some(pc);
            th.end_record();
        }
        if th.expected_pc != Some(pc) {
            th.buf.push(H_MARKER | code::JUMP);
            put_varint(&mut th.buf, sidx as u64);
        }
        let hpos = th.buf.len();
        th.buf.push(0);
        let mut h = 0u8;
        if branch == BranchKind::Conditional && taken {
            h |= H_TAKEN;
        }
        if shape_matches {
            for (i, a) in mem.iter().enumerate() {
                let slot = &mut th.pred.slots[(base + i) & (PRED_SLOTS - 1)];
                let predicted = slot.0.wrapping_add(slot.1);
                if i < HIT_BITS && a.addr == predicted {
                    h |= 1 << (H_HIT_SHIFT + i as u32);
                } else if i < HIT_BITS && a.addr == th.pred.last {
                    th.buf.push(0);
                    slot.1 = a.addr.wrapping_sub(slot.0);
                } else {
                    put_varint(&mut th.buf, zigzag(a.addr.wrapping_sub(predicted) as i64));
                    slot.1 = a.addr.wrapping_sub(slot.0);
                }
                slot.0 = a.addr;
                th.pred.last = a.addr;
            }
        } else {
            h |= H_DYN_MEM;
            put_varint(&mut th.buf, mem.len() as u64);
            for a in mem {
                th.buf.extend_from_slice(&[a.size, a.write as u8]);
                put_varint(
                    &mut th.buf,
                    zigzag(a.addr.wrapping_sub(th.pred.dyn_last) as i64),
                );
                th.pred.dyn_last = a.addr;
                th.pred.last = a.addr;
            }
        }
        th.buf[hpos] = h;
        th.dir.instructions += 1;
        for a in mem {
            if a.write {
                th.counts.stores += 1;
            } else {
                th.counts.loads += 1;
            }
        }
        if branch.is_branch() {
            th.counts.branches += 1;
            th.counts.taken += (branch != BranchKind::Conditional || taken) as u64;
        }
        match branch {
            BranchKind::None => th.expected_pc = Some(pc.wrapping_add(size as u64)),
            BranchKind::Conditional => {
                th.expected_pc = Some(if taken {
                    target
                } else {
                    pc.wrapping_add(size as u64)
                })
            }
            BranchKind::DirectJump | BranchKind::DirectCall => th.expected_pc = Some(target),
            BranchKind::IndirectJump | BranchKind::IndirectCall | BranchKind::Return => {
                th.pending_indirect = true;
                th.expected_pc = None;
                return Ok(());
            }
        }
        th.end_record();
        Ok(())
    }

    /// Encodes one marker.
    fn marker(&mut self, m: Marker) {
        self.close_pending();
        self.counts.markers[m.kind_index()] += 1;
        let b = &mut self.buf;
        let mut put = |c: u8, args: &[u64]| {
            b.push(H_MARKER | c);
            for &a in args {
                put_varint(b, a);
            }
        };
        match m {
            Marker::ThreadStart => put(code::THREAD_START, &[]),
            Marker::ThreadEnd => put(code::THREAD_END, &[]),
            Marker::RoiBegin => put(code::ROI_BEGIN, &[]),
            Marker::RoiEnd => put(code::ROI_END, &[]),
            Marker::Barrier {
                id,
                participants,
                lead,
            } => put(
                if lead {
                    code::BARRIER_LEAD
                } else {
                    code::BARRIER
                },
                &[id, participants as u64],
            ),
            Marker::MutexLock {
                addr,
                order,
                spin,
                call: true,
            } => put(
                code::MUTEX_LOCK_CALL,
                &[addr, order_or_zero(order), encode_spin(spin)],
            ),
            Marker::MutexLock {
                addr,
                order,
                spin: Spin::NONE,
                ..
            } if order == Order::SIM => put(code::MUTEX_LOCK, &[addr]),
            Marker::MutexLock {
                addr,
                order,
                spin: Spin::NONE,
                ..
            } => put(code::MUTEX_LOCK_ORDERED, &[addr, order.encode()]),
            Marker::MutexLock {
                addr, order, spin, ..
            } => {
                debug_assert_eq!(spin, Spin::DEFAULT, "a traced lock spins as Spin::DEFAULT");
                put(code::MUTEX_LOCK_SPINNING, &[addr, order_or_zero(order)])
            }
            Marker::RwLock { addr, order, write } => put(
                code::RW_LOCK,
                &[addr, order_or_zero(order), u64::from(write)],
            ),
            Marker::SemWait { addr, init } => put(code::SEM_WAIT, &[addr, u64::from(init)]),
            Marker::SemPost { addr, init, wakes } => put(
                code::SEM_POST,
                &[addr, u64::from(init) | u64::from(wakes) << SEM_WAKES_BIT],
            ),
            Marker::MutexUnlock { addr, plain } => put(
                if plain {
                    code::MUTEX_UNLOCK_PLAIN
                } else {
                    code::MUTEX_UNLOCK
                },
                &[addr],
            ),
            Marker::CondWait {
                cond,
                mutex,
                wake,
                relock,
            } if wake == Order::SIM && relock == Order::SIM => put(code::COND_WAIT, &[cond, mutex]),
            Marker::CondWait {
                cond,
                mutex,
                wake,
                relock,
            } => put(
                code::COND_WAIT_ORDERED,
                &[cond, mutex, wake.encode(), relock.encode()],
            ),
            Marker::FutexWait { addr, wake } => put(code::FUTEX_WAIT, &[addr, wake.encode()]),
            Marker::CondReady { cond, wake } => put(code::COND_READY, &[cond, wake.encode()]),
            Marker::FutexWake { addr } => put(code::FUTEX_WAKE, &[addr]),
            Marker::Release { index } => put(code::RELEASE, &[index as u64]),
            Marker::CondSignal { cond } => put(code::COND_SIGNAL, &[cond]),
            Marker::CondBroadcast { cond } => put(code::COND_BROADCAST, &[cond]),
            Marker::ThreadCreate { child } => put(code::CREATE, &[child as u64]),
            Marker::ThreadJoin { child } => put(code::JOIN, &[child as u64]),
            Marker::SectionBegin { name } => put(code::SECTION_BEGIN, &[name as u64]),
            Marker::SectionEnd { name } => put(code::SECTION_END, &[name as u64]),
        }
        self.end_record();
    }

    fn close_pending(&mut self) {
        if self.pending_indirect {
            self.buf.push(0);
            self.pending_indirect = false;
            self.expected_pc = None;
            self.end_record();
        }
    }

    fn end_record(&mut self) {
        self.chunk_records += 1;
        self.dir.records += 1;
    }
}

/// The output file, shared by every thread's chunks.
struct Sink {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    offset: u64,
}

impl Sink {
    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), TraceError> {
        let out = self.out.as_mut().expect("writer used after finish");
        out.write_all(bytes).map_err(|e| {
            write_error(
                &self.path,
                self.offset + bytes.len() as u64,
                "write failed",
                e,
            )
        })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }
}

/// A chunk compressor and its output buffer, reused from chunk to chunk.
struct Packer {
    zstd: zstd::bulk::Compressor<'static>,
    zbuf: Vec<u8>,
    compress: bool,
}

impl Packer {
    fn new(path: &Path, compress: bool) -> Result<Packer, TraceError> {
        Ok(Packer {
            zstd: zstd::bulk::Compressor::new(ZSTD_LEVEL)
                .map_err(|e| TraceError::io(path, 0, "cannot start the zstd compressor", e))?,
            zbuf: Vec::with_capacity(CHUNK_TARGET + CHUNK_TARGET / 8),
            compress,
        })
    }

    /// Compresses thread `tid`'s pending records (if any) into a chunk and appends it to the
    /// file, recording where it went.
    fn flush(
        &mut self,
        th: &mut ThreadEnc,
        tid: u32,
        sink: &Mutex<Sink>,
    ) -> Result<(), TraceError> {
        if th.buf.is_empty() {
            return Ok(());
        }
        let records = th.chunk_records;
        th.chunk_records = 0;
        // Compressed unless that does not make it smaller (decoded length 0: stored as is).
        self.zbuf.clear();
        self.zbuf
            .reserve(zstd::zstd_safe::compress_bound(th.buf.len()));
        let compressed = self.compress
            && self
                .zstd
                .compress_to_buffer(&th.buf, &mut self.zbuf)
                .is_ok_and(|n| n < th.buf.len());
        let (stored, decoded_len): (&[u8], u32) = if compressed {
            (&self.zbuf, th.buf.len() as u32)
        } else {
            (&th.buf, 0)
        };
        let mut hdr = [0u8; CHUNK_HEADER_LEN as usize];
        hdr[0..4].copy_from_slice(CHUNK_MAGIC);
        hdr[4..8].copy_from_slice(&tid.to_le_bytes());
        hdr[8..12].copy_from_slice(&(stored.len() as u32).to_le_bytes());
        hdr[12..16].copy_from_slice(&records.to_le_bytes());
        hdr[16..20].copy_from_slice(&decoded_len.to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&hdr[0..20]);
        crc.update(stored);
        hdr[20..24].copy_from_slice(&crc.finalize().to_le_bytes());
        if let Some(sp) = th.spill.as_mut() {
            sp.chunks.push(sp.len);
            for part in [&hdr[..], stored] {
                sp.out.write_all(part).map_err(|e| {
                    write_error(&sp.path, sp.len + part.len() as u64, "write failed", e)
                })?;
                sp.len += part.len() as u64;
            }
        } else {
            let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
            th.dir.chunks.push(sink.offset);
            sink.write_raw(&hdr)?;
            sink.write_raw(stored)?;
        }
        th.buf.clear();
        Ok(())
    }
}

/// One thread's stream being encoded on a host thread of its own (from
/// [`TraceWriter::encoders`]).
pub struct ThreadEncoder<'a> {
    tid: u32,
    th: &'a mut ThreadEnc,
    program: &'a Program,
    mem_base: &'a [u32],
    sink: &'a Mutex<Sink>,
    /// Made at the first chunk: encoders waiting their turn hold no compressor.
    packer: Option<Packer>,
    compress: bool,
    path: &'a Path,
    /// The trace's `.partial` file, beside which the chunks are kept (see [`Spill`]).
    tmp: &'a Path,
}

impl ThreadEncoder<'_> {
    /// The thread this encoder writes.
    pub fn thread(&self) -> u32 {
        self.tid
    }

    /// As [`TraceWriter::inst`], for this encoder's thread.
    #[inline]
    pub fn inst(&mut self, sidx: u32, taken: bool, mem: &[MemAccess]) -> Result<(), TraceError> {
        if let Err(msg) = self.th.inst(self.program, self.mem_base, sidx, taken, mem) {
            return Err(TraceError::at(self.path, Some(self.tid), 0, msg));
        }
        self.maybe_flush()
    }

    /// As [`TraceWriter::marker`], for this encoder's thread.
    pub fn marker(&mut self, m: Marker) -> Result<(), TraceError> {
        self.th.marker(m);
        self.maybe_flush()
    }

    fn maybe_flush(&mut self) -> Result<(), TraceError> {
        if self.th.chunk_full() {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        if self.th.buf.is_empty() {
            return Ok(());
        }
        let packer = match &mut self.packer {
            Some(p) => p,
            None => self.packer.insert(Packer::new(self.path, self.compress)?),
        };
        if self.th.spill.is_none() {
            let mut name = self.tmp.as_os_str().to_owned();
            name.push(format!(".t{}", self.tid));
            let path = PathBuf::from(name);
            let f =
                File::create(&path).map_err(|e| TraceError::io(&path, 0, "cannot create", e))?;
            self.th.spill = Some(Spill {
                path,
                out: BufWriter::with_capacity(1 << 20, f),
                len: 0,
                chunks: Vec::new(),
            });
        }
        packer.flush(self.th, self.tid, self.sink)
    }

    /// Writes the thread's last chunk.
    pub fn finish(mut self) -> Result<(), TraceError> {
        self.th.close_pending();
        self.flush()?;
        if let Some(sp) = self.th.spill.as_mut() {
            sp.out
                .flush()
                .map_err(|e| write_error(&sp.path, sp.len, "write failed", e))?;
        }
        Ok(())
    }
}

/// A library lock call's spin ([`code::MUTEX_LOCK_CALL`]): 0 for none, 1 for
/// [`Spin::DEFAULT`] (what traces written before turns were counted say of a lock that
/// spins), else 2 + 2 × turns + 1 if it spins again after a lost race.
fn encode_spin(spin: Spin) -> u64 {
    if !spin.spins() {
        0
    } else if spin == Spin::DEFAULT {
        1
    } else {
        2 + 2 * u64::from(spin.turns) + u64::from(spin.again)
    }
}

/// An order field that may be absent: 0 for none ([`Order::SIM`]), else the order plus one.
fn order_or_zero(order: Order) -> u64 {
    if order == Order::SIM {
        0
    } else {
        order.encode() + 1
    }
}

/// A failed write of the trace, said plainly when the disk (or a file size limit) is full.
fn write_error(path: &Path, offset: u64, what: &str, e: std::io::Error) -> TraceError {
    const ENOSPC: i32 = 28;
    const EFBIG: i32 = 27;
    const EDQUOT: i32 = 122;
    match e.raw_os_error() {
        Some(ENOSPC | EFBIG | EDQUOT) => {
            let mut err = TraceError::io(path, offset, what, e);
            err.message = format!(
                "{}; the trace needed at least {offset} bytes ({:.1} MB) so far, and its \
                 partial file is removed: free space, raise the limit, or write the trace \
                 elsewhere",
                err.message,
                offset as f64 / 1e6
            );
            err
        }
        _ => TraceError::io(path, offset, what, e),
    }
}

/// Streams a trace to disk. See the module docs.
pub struct TraceWriter {
    path: PathBuf,
    tmp: PathBuf,
    /// The file, shared by the chunks of every thread.
    sink: Mutex<Sink>,
    /// The serial API's chunk compressor.
    packer: Packer,
    meta: TraceMeta,
    program: Program,
    by_pc: HashMap<u64, u32>,
    mem_base: Vec<u32>,
    n_specs: u32,
    threads: Vec<ThreadEnc>,
}

impl TraceWriter {
    /// Creates `<path>.partial` and writes the prologue.
    pub fn create(path: &Path, meta: TraceMeta) -> Result<TraceWriter, TraceError> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        let tmp = PathBuf::from(tmp);
        let f = File::create(&tmp).map_err(|e| TraceError::io(path, 0, "cannot create", e))?;
        let mut w = TraceWriter {
            path: path.to_path_buf(),
            tmp,
            sink: Mutex::new(Sink {
                path: path.to_path_buf(),
                out: Some(BufWriter::with_capacity(1 << 20, f)),
                offset: 0,
            }),
            packer: Packer::new(path, true)?,
            meta,
            program: Program::default(),
            by_pc: HashMap::new(),
            mem_base: Vec::new(),
            n_specs: 0,
            threads: Vec::new(),
        };
        let mut pro = Vec::with_capacity(16);
        pro.extend_from_slice(MAGIC);
        pro.extend_from_slice(&VERSION.to_le_bytes());
        pro.extend_from_slice(&0u16.to_le_bytes());
        let crc = crc32fast::hash(&pro);
        pro.extend_from_slice(&crc.to_le_bytes());
        w.sink_mut().write_raw(&pro)?;
        Ok(w)
    }

    fn sink_mut(&mut self) -> &mut Sink {
        self.sink.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&mut self, thread: Option<u32>, msg: impl Into<String>) -> TraceError {
        let offset = self.sink_mut().offset;
        TraceError::at(&self.path, thread, offset, msg)
    }

    /// Whether chunks are compressed (the default) or stored as they are: for tests that edit
    /// payloads in place, and to measure what compression saves.
    pub fn set_compression(&mut self, on: bool) {
        self.packer.compress = on;
    }

    /// The source map, for producers to fill in names.
    pub fn source_mut(&mut self) -> &mut crate::model::SourceMap {
        &mut self.program.source
    }

    /// The static table so far.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Static index of the instruction at `pc`, if declared.
    pub fn sidx_of(&self, pc: u64) -> Option<u32> {
        self.by_pc.get(&pc).copied()
    }

    /// Declares a static instruction and returns its index. PCs must be unique.
    pub fn add_static(&mut self, inst: StaticInst) -> Result<u32, TraceError> {
        if self.by_pc.contains_key(&inst.pc) {
            return Err(self.err(
                None,
                format!("static instruction at pc {:#x} declared twice", inst.pc),
            ));
        }
        if inst.size == 0 || inst.mem.iter().any(|m| m.size == 0) {
            return Err(self.err(
                None,
                format!("pc {:#x}: zero instruction or operand size", inst.pc),
            ));
        }
        if inst.mem.len() > 255 || inst.srcs.len() > 255 || inst.dsts.len() > 255 {
            return Err(self.err(None, format!("pc {:#x}: more than 255 operands", inst.pc)));
        }
        let sidx = self.program.insts.len() as u32;
        self.by_pc.insert(inst.pc, sidx);
        self.mem_base.push(self.n_specs);
        self.n_specs += inst.mem.len() as u32;
        self.program.insts.push(inst);
        Ok(sidx)
    }

    fn thread(&mut self, tid: u32) -> Result<&mut ThreadEnc, TraceError> {
        if tid >= MAX_THREADS {
            return Err(self.err(
                Some(tid),
                format!("thread id {tid} exceeds the limit {MAX_THREADS}"),
            ));
        }
        if self.threads.len() <= tid as usize {
            self.threads
                .resize_with(tid as usize + 1, ThreadEnc::default);
        }
        Ok(&mut self.threads[tid as usize])
    }

    /// Appends one executed instruction to thread `tid`. `taken` matters for conditional
    /// branches only. `mem` lists the accesses in operand order; when they match the static
    /// shape they are predicted, otherwise they are stored explicitly.
    pub fn inst(
        &mut self,
        tid: u32,
        sidx: u32,
        taken: bool,
        mem: &[MemAccess],
    ) -> Result<(), TraceError> {
        self.thread(tid)?;
        let th = &mut self.threads[tid as usize];
        if let Err(msg) = th.inst(&self.program, &self.mem_base, sidx, taken, mem) {
            return Err(self.err(Some(tid), msg));
        }
        self.maybe_flush(tid)
    }

    /// Appends a marker to thread `tid`.
    pub fn marker(&mut self, tid: u32, m: Marker) -> Result<(), TraceError> {
        self.thread(tid)?.marker(m);
        self.maybe_flush(tid)
    }

    fn maybe_flush(&mut self, tid: u32) -> Result<(), TraceError> {
        if self.threads[tid as usize].chunk_full() {
            self.flush_chunk(tid)?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self, tid: u32) -> Result<(), TraceError> {
        let th = &mut self.threads[tid as usize];
        self.packer.flush(th, tid, &self.sink)
    }

    /// One encoder per thread `0..threads`, for encoding the threads' streams on several host
    /// threads at once (each encoder is `Send`). Every static instruction must be declared
    /// first. Instructions and markers given to an encoder go to its thread's stream exactly
    /// as through [`TraceWriter::inst`] and [`TraceWriter::marker`]; [`ThreadEncoder::finish`]
    /// writes its last chunk.
    pub fn encoders(&mut self, threads: u32) -> Result<Vec<ThreadEncoder<'_>>, TraceError> {
        if threads > 0 {
            self.thread(threads - 1)?;
        }
        let compress = self.packer.compress;
        let mut v = Vec::with_capacity(threads as usize);
        for (tid, th) in self.threads.iter_mut().enumerate().take(threads as usize) {
            v.push(ThreadEncoder {
                tid: tid as u32,
                th,
                program: &self.program,
                mem_base: &self.mem_base,
                sink: &self.sink,
                packer: None,
                compress,
                path: &self.path,
                tmp: &self.tmp,
            });
        }
        Ok(v)
    }

    /// Flushes every stream, writes the tables and trailer, and renames the file into place.
    pub fn finish(mut self) -> Result<(), TraceError> {
        let nf = self.program.source.functions.len();
        let nfile = self.program.source.files.len();
        for s in &self.program.insts {
            let bad = |i: u32, n: usize| i != SrcLoc::UNKNOWN && i as usize >= n;
            if bad(s.loc.function, nf) || bad(s.loc.file, nfile) {
                return Err(self.err(
                    None,
                    format!(
                        "pc {:#x}: source location names a missing function or file",
                        s.pc
                    ),
                ));
            }
        }
        for tid in 0..self.threads.len() as u32 {
            self.threads[tid as usize].close_pending();
            self.flush_chunk(tid)?;
        }
        self.append_spills()?;
        let t = Tables {
            meta: std::mem::take(&mut self.meta),
            threads: self
                .threads
                .iter()
                .map(|t| ThreadDir {
                    counts: Some(t.counts.clone()),
                    ..t.dir.clone()
                })
                .collect(),
            program: std::mem::take(&mut self.program),
        };
        let plain = tables::encode(&t);
        // Format v2 stores the tables as one zstd frame (its header records the decoded size).
        let path = self.path.clone();
        let sink = self.sink_mut();
        let body = zstd::bulk::compress(&plain, ZSTD_LEVEL)
            .map_err(|e| TraceError::io(&path, sink.offset, "cannot compress the tables", e))?;
        let tables_off = sink.offset;
        sink.write_raw(&body)?;
        let mut tr = Vec::with_capacity(32);
        tr.extend_from_slice(TRAILER_MAGIC);
        tr.extend_from_slice(&tables_off.to_le_bytes());
        tr.extend_from_slice(&(body.len() as u64).to_le_bytes());
        tr.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        let crc = crc32fast::hash(&tr);
        tr.extend_from_slice(&crc.to_le_bytes());
        sink.write_raw(&tr)?;
        let offset = sink.offset;
        let out = sink.out.take().expect("finish called once");
        let f = out
            .into_inner()
            .map_err(|e| write_error(&path, offset, "flush failed", e.into_error()))?;
        f.sync_all()
            .map_err(|e| write_error(&path, offset, "sync failed", e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| {
            TraceError::io(
                &self.path,
                0,
                "cannot move the finished trace into place",
                e,
            )
        })?;
        Ok(())
    }
}

impl TraceWriter {
    /// Appends the chunks each [`ThreadEncoder`] kept apart, thread by thread, and removes
    /// their files.
    fn append_spills(&mut self) -> Result<(), TraceError> {
        let sink = self.sink.get_mut().unwrap_or_else(|p| p.into_inner());
        let mut block = vec![0u8; 1 << 20];
        for th in &mut self.threads {
            let Some(sp) = th.spill.take() else { continue };
            drop(sp.out);
            let base = sink.offset;
            let mut f = File::open(&sp.path)
                .map_err(|e| TraceError::io(&sp.path, 0, "cannot reopen", e))?;
            let mut copied = 0u64;
            loop {
                let n = std::io::Read::read(&mut f, &mut block)
                    .map_err(|e| TraceError::io(&sp.path, copied, "cannot read", e))?;
                if n == 0 {
                    break;
                }
                sink.write_raw(&block[..n])?;
                copied += n as u64;
            }
            if copied != sp.len {
                return Err(TraceError::io(
                    &sp.path,
                    copied,
                    "cannot read back",
                    std::io::Error::other(format!("{} bytes expected", sp.len)),
                ));
            }
            th.dir.chunks.extend(sp.chunks.iter().map(|c| base + c));
            let _ = std::fs::remove_file(&sp.path);
        }
        Ok(())
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if self.sink_mut().out.take().is_some() {
            // Not finished: remove the partial file so nothing looks complete.
            let _ = std::fs::remove_file(&self.tmp);
        }
        for th in &mut self.threads {
            if let Some(sp) = th.spill.take() {
                drop(sp.out);
                let _ = std::fs::remove_file(&sp.path);
            }
        }
    }
}

/// Rewrites the trace at `src` (any version this isim reads) into `dst` in the current
/// format, chunks compressed or not: the same records, tables and source map. The upgrade
/// path of v1 traces, and a way to compare sizes.
pub fn rewrite(src: &Path, dst: &Path, compress: bool) -> Result<(), TraceError> {
    let t = crate::format::reader::Trace::open(src)?;
    let mut w = TraceWriter::create(dst, t.meta.clone())?;
    w.set_compression(compress);
    *w.source_mut() = t.program.source.clone();
    for s in &t.program.insts {
        w.add_static(s.clone())?;
    }
    let mut batch = crate::model::Batch::default();
    for tid in 0..t.thread_count() {
        let mut st = t.stream(tid)?;
        while st.next_batch(&mut batch)? {
            for r in &batch.records {
                match r {
                    crate::model::Record::Inst(i) => {
                        w.inst(tid, i.sidx, i.taken, batch.mem_of(i))?;
                    }
                    crate::model::Record::Marker(m) => w.marker(tid, *m)?,
                }
            }
        }
    }
    w.finish()
}
