//! Opens a trace (format v3, or v1 and v2 as earlier isim wrote them) and streams each
//! thread's records in bounded memory: one chunk (≤ 64 KiB of decoded payload as written) per
//! stream at a time, or a few more with read-ahead.
//!
//! Opening checks the prologue, the trailer and the tables; each chunk is checked (magic,
//! thread, length, CRC-32) and, in v2, decompressed (to exactly the length its header states)
//! before it is decoded, and the totals are checked at the end of a
//! stream, so a damaged trace is reported — with file, thread and byte offset — rather than
//! simulated. When the trailer is missing (the usual sign of a truncated file) the chunks are
//! scanned from the start to say where the data stops.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, Sender, bounded};

use super::decode::{Limits, StreamState, decode_payload};
use super::tables::{self, ThreadDir};
use super::{
    CHUNK_MAGIC, CHUNK_MAX, FlowTables, MAGIC, OLDEST_VERSION, PROLOGUE_LEN, TABLES_MAX,
    TRAILER_LEN, TRAILER_MAGIC, VERSION, chunk_header_len,
};
use crate::error::TraceError;
use crate::model::{Batch, Marker, Program, Record, TraceMeta};

/// An open trace: its header, tables and thread directory. Streams borrow it.
pub struct Trace {
    path: PathBuf,
    /// Header metadata.
    pub meta: TraceMeta,
    /// Static instructions and source map.
    pub program: Program,
    /// Per-thread stream directory.
    pub threads: Vec<ThreadDir>,
    flow: FlowTables,
    tables_off: u64,
    limits: Limits,
    version: u16,
}

fn read_at(
    file: &File,
    path: &Path,
    off: u64,
    buf: &mut [u8],
    what: &str,
) -> Result<(), TraceError> {
    file.read_exact_at(buf, off)
        .map_err(|e| TraceError::io(path, off, &format!("cannot read {what}"), e))
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

impl Trace {
    /// Opens and validates a trace file.
    pub fn open(path: &Path) -> Result<Trace, TraceError> {
        let file = File::open(path).map_err(|e| TraceError::io(path, 0, "cannot open trace", e))?;
        let len = file
            .metadata()
            .map_err(|e| TraceError::io(path, 0, "cannot stat trace", e))?
            .len();
        if len < PROLOGUE_LEN {
            return Err(TraceError::at(
                path,
                None,
                len,
                format!(
                    "file is only {len} bytes; a trace starts with a {PROLOGUE_LEN}-byte prologue (empty or truncated file?)"
                ),
            ));
        }
        let mut pro = [0u8; 16];
        read_at(&file, path, 0, &mut pro, "prologue")?;
        if &pro[0..8] != MAGIC {
            return Err(TraceError::at(
                path,
                None,
                0,
                format!(
                    "not an isim trace: the file starts with {:?}, expected {:?}",
                    String::from_utf8_lossy(&pro[0..8]),
                    String::from_utf8_lossy(MAGIC)
                ),
            ));
        }
        let version = u16::from_le_bytes([pro[8], pro[9]]);
        if version > VERSION {
            return Err(TraceError::at(
                path,
                None,
                8,
                format!(
                    "trace format version {version} is newer than this isim reads (version {VERSION}); upgrade isim"
                ),
            ));
        }
        if version < OLDEST_VERSION {
            return Err(TraceError::at(
                path,
                None,
                8,
                format!("trace format version {version} does not exist"),
            ));
        }
        if crc32fast::hash(&pro[0..12]) != le_u32(&pro[12..16]) {
            return Err(TraceError::at(
                path,
                None,
                12,
                "prologue checksum mismatch (damaged header)",
            ));
        }
        let flags = u16::from_le_bytes([pro[10], pro[11]]);
        if flags != 0 {
            return Err(TraceError::at(
                path,
                None,
                10,
                format!("unknown prologue flags {flags:#x}"),
            ));
        }
        if len < PROLOGUE_LEN + TRAILER_LEN {
            return Err(diagnose_truncation(&file, path, len, version));
        }
        let mut tr = [0u8; 32];
        read_at(&file, path, len - TRAILER_LEN, &mut tr, "trailer")?;
        if &tr[0..8] != TRAILER_MAGIC || crc32fast::hash(&tr[0..28]) != le_u32(&tr[28..32]) {
            return Err(diagnose_truncation(&file, path, len, version));
        }
        let tables_off = le_u64(&tr[8..16]);
        let tables_len = le_u64(&tr[16..24]);
        let tables_crc = le_u32(&tr[24..28]);
        if tables_off < PROLOGUE_LEN
            || tables_off.checked_add(tables_len) != Some(len - TRAILER_LEN)
        {
            return Err(TraceError::at(
                path,
                None,
                len - TRAILER_LEN + 8,
                format!(
                    "trailer places the tables at {tables_off}+{tables_len}, which does not end where the trailer starts ({})",
                    len - TRAILER_LEN
                ),
            ));
        }
        let mut body = vec![0u8; tables_len as usize];
        read_at(&file, path, tables_off, &mut body, "tables")?;
        if crc32fast::hash(&body) != tables_crc {
            return Err(TraceError::at(
                path,
                None,
                tables_off,
                "tables checksum mismatch (damaged trace tables)",
            ));
        }
        if version >= 2 {
            body = decompress_tables(&body, path, tables_off)?;
        }
        let t = tables::decode(&body, tables_off, version).map_err(|(pos, msg)| {
            if version >= 2 {
                TraceError::at(
                    path,
                    None,
                    tables_off,
                    format!("byte {pos} of the decoded tables: {msg}"),
                )
            } else {
                TraceError::at(path, None, tables_off + pos as u64, msg)
            }
        })?;
        let flow = FlowTables::build(&t.program);
        let n = t.threads.len() as u64;
        Ok(Trace {
            path: path.to_path_buf(),
            meta: t.meta,
            limits: Limits {
                threads: n,
                max_participants: n,
                sections: t.program.source.sections.len() as u64,
            },
            program: t.program,
            threads: t.threads,
            flow,
            tables_off,
            version,
        })
    }

    /// The trace's format version (1 to 4).
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The file this trace was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of threads.
    pub fn thread_count(&self) -> u32 {
        self.threads.len() as u32
    }

    /// An upper bound on how many threads are alive at once, in any replay: 1 (the main
    /// thread) plus, for each thread, the most children it has created and not yet joined at
    /// any point of its stream (a child joined by its creator has ended before the creator
    /// goes on; one joined elsewhere, or never, counts as alive to the end). A program that
    /// creates and joins threads in rounds of R needs R + 1 cores, not one per thread ever
    /// created. Reads every stream (markers only matter, but the records are decoded).
    pub fn max_alive(&self) -> Result<u32, TraceError> {
        let mut total = 1u32;
        let mut b = Batch::default();
        for t in 0..self.thread_count() {
            let mut s = self.stream(t)?;
            let mut alive: Vec<u32> = Vec::new();
            let mut most = 0usize;
            while s.next_batch(&mut b)? {
                for r in &b.records {
                    match r {
                        Record::Marker(Marker::ThreadCreate { child }) => {
                            alive.push(*child);
                            most = most.max(alive.len());
                        }
                        Record::Marker(Marker::ThreadJoin { child }) => {
                            alive.retain(|c| c != child);
                        }
                        _ => {}
                    }
                }
            }
            total = total.saturating_add(most as u32);
        }
        Ok(total.min(self.thread_count().max(1)))
    }

    /// Control-flow tables (for consumers that follow `sidx`s themselves).
    pub fn flow(&self) -> &FlowTables {
        &self.flow
    }

    fn check_tid(&self, tid: u32) -> Result<&ThreadDir, TraceError> {
        self.threads.get(tid as usize).ok_or_else(|| {
            TraceError::at(
                &self.path,
                Some(tid),
                0,
                format!(
                    "no thread {tid}: the trace has {} threads",
                    self.threads.len()
                ),
            )
        })
    }

    /// A stream over thread `tid` reading chunks on demand.
    pub fn stream(&self, tid: u32) -> Result<ThreadStream<'_>, TraceError> {
        self.check_tid(tid)?;
        let file = File::open(&self.path)
            .map_err(|e| TraceError::io(&self.path, 0, "cannot open trace", e))?;
        Ok(self.make_stream(tid, Source::Direct(file)))
    }

    /// A stream over thread `tid` whose chunks are read and checked `depth` ahead by a
    /// background thread (useful when the file is not in the page cache).
    pub fn stream_readahead(&self, tid: u32, depth: usize) -> Result<ThreadStream<'_>, TraceError> {
        let dir = self.check_tid(tid)?;
        let file = File::open(&self.path)
            .map_err(|e| TraceError::io(&self.path, 0, "cannot open trace", e))?;
        let (tx, rx) = bounded(depth.max(1));
        let (recycle_tx, recycle_rx) = bounded::<Vec<u8>>(depth.max(1) + 2);
        let chunks = dir.chunks.clone();
        let path = self.path.clone();
        let tables_off = self.tables_off;
        let version = self.version;
        std::thread::spawn(move || {
            let mut unpack = Unpacker::default();
            for off in chunks {
                let mut buf = recycle_rx.try_recv().unwrap_or_default();
                let r = unpack
                    .read_chunk(&file, &path, tid, off, tables_off, version, &mut buf)
                    .map(|n| (n, buf));
                let failed = r.is_err();
                if tx.send(r).is_err() || failed {
                    return;
                }
            }
        });
        Ok(self.make_stream(
            tid,
            Source::Ahead {
                rx,
                recycle: recycle_tx,
            },
        ))
    }

    fn make_stream(&self, tid: u32, source: Source) -> ThreadStream<'_> {
        ThreadStream {
            trace: self,
            tid,
            next_chunk: 0,
            source,
            state: StreamState::default(),
            buf: Vec::new(),
            pos: 0,
            chunk: None,
            unpack: Unpacker::default(),
            records: 0,
            instructions: 0,
        }
    }
}

/// A v2 tables section (one zstd frame) decoded, its size taken from the frame header and
/// bounded.
fn decompress_tables(stored: &[u8], path: &Path, off: u64) -> Result<Vec<u8>, TraceError> {
    let size = match zstd::zstd_safe::get_frame_content_size(stored) {
        Ok(Some(n)) if n <= TABLES_MAX => n,
        Ok(Some(n)) => {
            return Err(TraceError::at(
                path,
                None,
                off,
                format!("the tables say they decode to {n} bytes; at most {TABLES_MAX}"),
            ));
        }
        _ => {
            return Err(TraceError::at(
                path,
                None,
                off,
                "the tables are not a zstd frame with its size (damaged trace tables)",
            ));
        }
    };
    let body = zstd::bulk::decompress(stored, size as usize).map_err(|e| {
        TraceError::at(
            path,
            None,
            off,
            format!("the tables do not decompress (damaged trace tables): {e}"),
        )
    })?;
    if body.len() as u64 != size {
        return Err(TraceError::at(
            path,
            None,
            off,
            format!(
                "the tables decompress to {} bytes, their frame says {size}",
                body.len()
            ),
        ));
    }
    Ok(body)
}

/// What a chunk's header says, once the chunk is read and checked.
#[derive(Debug, Clone, Copy)]
struct ChunkInfo {
    /// Records in the payload.
    records: u32,
    /// The payload was stored compressed (decode errors then point into the decoded bytes).
    compressed: bool,
}

/// Reads chunks, keeping the buffers and the zstd context from one chunk to the next.
#[derive(Default)]
struct Unpacker {
    /// A compressed payload as stored.
    stored: Vec<u8>,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Unpacker {
    /// Reads and checks the chunk at `off` into `buf` (decompressed: the records' bytes).
    #[allow(clippy::too_many_arguments)]
    fn read_chunk(
        &mut self,
        file: &File,
        path: &Path,
        tid: u32,
        off: u64,
        tables_off: u64,
        version: u16,
        buf: &mut Vec<u8>,
    ) -> Result<ChunkInfo, TraceError> {
        let err = |at: u64, msg: String| TraceError::at(path, Some(tid), at, msg);
        let hl = chunk_header_len(version);
        if off + hl > tables_off {
            return Err(err(
                off,
                format!("chunk header at {off} overlaps the tables at {tables_off}"),
            ));
        }
        let mut h = [0u8; 24];
        let h = &mut h[..hl as usize];
        read_at(file, path, off, h, "chunk header").map_err(|mut e| {
            e.thread = Some(tid);
            e
        })?;
        if &h[0..4] != CHUNK_MAGIC {
            return Err(err(
                off,
                "no chunk header where the directory says a chunk starts".into(),
            ));
        }
        let owner = le_u32(&h[4..8]);
        let plen = le_u32(&h[8..12]);
        let count = le_u32(&h[12..16]);
        let decoded = if version >= 2 { le_u32(&h[16..20]) } else { 0 };
        let crc_at = hl as usize - 4;
        if owner != tid {
            return Err(err(
                off + 4,
                format!(
                    "chunk belongs to thread {owner}, but the directory lists it for thread {tid}"
                ),
            ));
        }
        if plen > CHUNK_MAX || off + hl + plen as u64 > tables_off {
            return Err(err(
                off + 8,
                format!(
                    "chunk payload length {plen} runs past the chunk area (ends at {tables_off})"
                ),
            ));
        }
        if decoded > CHUNK_MAX {
            return Err(err(
                off + 16,
                format!("chunk says its payload decodes to {decoded} bytes; at most {CHUNK_MAX}"),
            ));
        }
        let target = if decoded == 0 {
            &mut *buf
        } else {
            &mut self.stored
        };
        target.resize(plen as usize, 0);
        read_at(file, path, off + hl, target, "chunk payload")?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[0..crc_at]);
        crc.update(target);
        if crc.finalize() != le_u32(&h[crc_at..crc_at + 4]) {
            return Err(err(off, "chunk checksum mismatch (damaged data)".into()));
        }
        if decoded != 0 {
            let z = match &mut self.zstd {
                Some(z) => z,
                None => self
                    .zstd
                    .insert(zstd::bulk::Decompressor::new().map_err(|e| {
                        TraceError::io(path, off, "cannot start the zstd decompressor", e)
                    })?),
            };
            buf.clear();
            buf.reserve(decoded as usize);
            // Decompressing into the buffer's capacity bounds the output: a frame that
            // decodes to more than the header says fails instead of growing the buffer.
            let n = z
                .decompress_to_buffer(&self.stored[..], buf)
                .map_err(|e| {
                    err(
                        off + hl,
                        format!(
                            "chunk payload does not decompress to the {decoded} bytes its header states: {e}"
                        ),
                    )
                })?;
            if n != decoded as usize {
                return Err(err(
                    off + 16,
                    format!("chunk payload decompresses to {n} bytes, its header says {decoded}"),
                ));
            }
        }
        Ok(ChunkInfo {
            records: count,
            compressed: decoded != 0,
        })
    }
}

/// Scans chunk headers from the start of the file to say where a trace without a valid
/// trailer stops.
fn diagnose_truncation(file: &File, path: &Path, len: u64, version: u16) -> TraceError {
    let hl = chunk_header_len(version);
    let mut off = PROLOGUE_LEN;
    let mut last: Option<u32> = None;
    loop {
        if off == len {
            return TraceError::at(
                path,
                last,
                len,
                format!(
                    "file ends right after a complete chunk{}; the tables and trailer are missing (truncated trace?)",
                    last.map(|t| format!(" of thread {t}")).unwrap_or_default()
                ),
            );
        }
        let mut h = [0u8; 24];
        let avail = ((len - off) as usize).min(hl as usize);
        if let Err(e) = read_at(file, path, off, &mut h[..avail], "chunk header") {
            return e;
        }
        if avail < 4 || &h[0..4] != CHUNK_MAGIC {
            if avail < 4 && CHUNK_MAGIC.starts_with(&h[..avail]) {
                return TraceError::at(
                    path,
                    last,
                    len,
                    format!("file ends inside a chunk header at byte {off} (truncated trace)"),
                );
            }
            return TraceError::at(
                path,
                None,
                len,
                format!(
                    "the trailer is missing or damaged: the file ends at byte {len} inside the trace tables, which start at byte {off} (truncated trace?)"
                ),
            );
        }
        if avail < hl as usize {
            let tid = (avail >= 8).then(|| le_u32(&h[4..8]));
            return TraceError::at(
                path,
                tid.or(last),
                len,
                format!("file ends inside the chunk header at byte {off} (truncated trace)"),
            );
        }
        let tid = le_u32(&h[4..8]);
        let plen = le_u32(&h[8..12]) as u64;
        let end = off + hl + plen;
        if end > len {
            return TraceError::at(
                path,
                Some(tid),
                off,
                format!(
                    "chunk of thread {tid} at byte {off} is cut: it needs {plen} payload bytes, but the file ends at byte {len} (truncated trace)"
                ),
            );
        }
        last = Some(tid);
        off = end;
    }
}

enum Source {
    Direct(File),
    Ahead {
        rx: Receiver<Result<(ChunkInfo, Vec<u8>), TraceError>>,
        recycle: Sender<Vec<u8>>,
    },
}

/// One thread's records, decoded a chunk at a time.
pub struct ThreadStream<'a> {
    trace: &'a Trace,
    tid: u32,
    next_chunk: usize,
    source: Source,
    state: StreamState,
    buf: Vec<u8>,
    /// Where decoding stopped in `buf`.
    pos: usize,
    /// The chunk in `buf`, while it has records left to decode or to check.
    chunk: Option<OpenChunk>,
    unpack: Unpacker,
    /// Records of the chunks checked so far.
    records: u64,
    instructions: u64,
}

/// The chunk a stream is decoding: where it is, what its header promised and how many
/// records came out of it so far.
struct OpenChunk {
    off: u64,
    records: u32,
    compressed: bool,
    decoded: u64,
}

/// Records [`ThreadStream::next_batch`] decodes at most at once: few enough that a batch
/// (32 bytes a record, plus its accesses) stays in the host's L1/L2 caches until the
/// simulation reads it on the same host thread (a whole chunk's records are megabytes), many
/// enough that a call costs little per record.
pub const BATCH_RECORDS: usize = 512;

impl ThreadStream<'_> {
    /// The thread this stream reads.
    pub fn thread(&self) -> u32 {
        self.tid
    }

    /// Replaces `batch`'s contents with the stream's next records, at most [`BATCH_RECORDS`]
    /// of them. Returns `Ok(false)` at the end of the stream (after checking the stream's
    /// totals against the directory).
    pub fn next_batch(&mut self, batch: &mut Batch) -> Result<bool, TraceError> {
        self.next_records(batch, BATCH_RECORDS)
    }

    /// [`ThreadStream::next_batch`] with at most `max` (at least 1) records instead: more
    /// where a batch is handed to another host thread, whose caches it reaches whatever its
    /// size, and each hand-over costs a wake-up.
    pub fn next_records(&mut self, batch: &mut Batch, max: usize) -> Result<bool, TraceError> {
        batch.clear();
        let max = max.max(1);
        loop {
            if let Some(c) = &mut self.chunk
                && self.pos < self.buf.len()
            {
                let (off, compressed) = (c.off, c.compressed);
                let tr = self.trace;
                let before = batch.records.len();
                let insts = decode_payload(
                    &tr.flow,
                    &mut self.state,
                    &self.buf,
                    &mut self.pos,
                    max - before,
                    &tr.limits,
                    batch,
                )
                .map_err(|(pos, msg)| {
                    if compressed {
                        // The file offset of a decoded byte does not exist: name the chunk
                        // and the position in its decoded payload.
                        TraceError::at(
                            &tr.path,
                            Some(self.tid),
                            off,
                            format!("byte {pos} of the chunk's decoded payload: {msg}"),
                        )
                    } else {
                        let payload_off = off + chunk_header_len(tr.version);
                        TraceError::at(&tr.path, Some(self.tid), payload_off + pos as u64, msg)
                    }
                })?;
                c.decoded += (batch.records.len() - before) as u64;
                self.instructions += insts;
                if batch.records.len() >= max {
                    return Ok(true);
                }
                // The chunk is done: go on to the next.
                continue;
            }
            self.close_chunk()?;
            if !self.open_chunk()? {
                return Ok(!batch.records.is_empty());
            }
        }
    }

    /// Checks the chunk just decoded to its end against its header's record count.
    fn close_chunk(&mut self) -> Result<(), TraceError> {
        let Some(c) = self.chunk.take() else {
            return Ok(());
        };
        if c.decoded != c.records as u64 {
            return Err(TraceError::at(
                &self.trace.path,
                Some(self.tid),
                c.off + 12,
                format!(
                    "chunk header says {} records, the payload holds {}",
                    c.records, c.decoded
                ),
            ));
        }
        self.records += c.decoded;
        Ok(())
    }

    /// Reads the next chunk into the buffer; false at the end of the stream (after checking
    /// the stream's totals against the directory).
    fn open_chunk(&mut self) -> Result<bool, TraceError> {
        let tr = self.trace;
        let dir = &tr.threads[self.tid as usize];
        let Some(&off) = dir.chunks.get(self.next_chunk) else {
            if self.records != dir.records || self.instructions != dir.instructions {
                return Err(TraceError::at(
                    &tr.path,
                    Some(self.tid),
                    tr.tables_off,
                    format!(
                        "stream holds {} records ({} instructions) but the directory says {} ({})",
                        self.records, self.instructions, dir.records, dir.instructions
                    ),
                ));
            }
            return Ok(false);
        };
        self.next_chunk += 1;
        let info = match &mut self.source {
            Source::Direct(f) => self.unpack.read_chunk(
                f,
                &tr.path,
                self.tid,
                off,
                tr.tables_off,
                tr.version,
                &mut self.buf,
            )?,
            Source::Ahead { rx, recycle } => {
                let (n, buf) = rx.recv().map_err(|_| {
                    TraceError::at(
                        &tr.path,
                        Some(self.tid),
                        off,
                        "read-ahead thread stopped unexpectedly",
                    )
                })??;
                let old = std::mem::replace(&mut self.buf, buf);
                let _ = recycle.try_send(old);
                n
            }
        };
        self.pos = 0;
        self.chunk = Some(OpenChunk {
            off,
            records: info.records,
            compressed: info.compressed,
            decoded: 0,
        });
        Ok(true)
    }
}
