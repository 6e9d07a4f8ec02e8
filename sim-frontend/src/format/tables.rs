//! The tables section at the end of a trace: metadata, the thread directory (where each
//! thread's chunks are), the source map and the static instruction table. It is written last
//! because a tracer learns all of these only as the program runs. Format v2 adds each
//! stream's counts (loads, stores, branches, markers by kind) after the static table, so that
//! a summary of the trace needs no decoding.

use super::{get_varint, put_varint, unzigzag, zigzag};
use crate::model::{BranchKind, Marker, MemSpec, OpClass, Program, SrcLoc, StaticInst, TraceMeta};

/// What one thread's stream holds, counted by the writer (format v2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamCounts {
    /// Read memory operands.
    pub loads: u64,
    /// Write memory operands.
    pub stores: u64,
    /// Branch instructions (every kind).
    pub branches: u64,
    /// Taken branches (unconditional ones always are).
    pub taken: u64,
    /// Markers by [`Marker::kind_index`].
    pub markers: [u64; Marker::KINDS],
}

/// Where one thread's stream lives in the file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadDir {
    /// Dynamic instructions in the stream.
    pub instructions: u64,
    /// Records (instructions + markers) in the stream.
    pub records: u64,
    /// File offsets of the thread's chunks, in stream order.
    pub chunks: Vec<u64>,
    /// The stream's counts, as the writer recorded them (format v2; none in v1 traces).
    pub counts: Option<StreamCounts>,
}

/// Everything in the tables section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tables {
    /// Header metadata.
    pub meta: TraceMeta,
    /// One directory entry per thread.
    pub threads: Vec<ThreadDir>,
    /// Static instructions and source map.
    pub program: Program,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_strs(out: &mut Vec<u8>, v: &[String]) {
    put_varint(out, v.len() as u64);
    for s in v {
        put_str(out, s);
    }
}

fn opt_index(i: u32) -> u64 {
    if i == SrcLoc::UNKNOWN {
        0
    } else {
        i as u64 + 1
    }
}

/// Serializes the tables section.
pub fn encode(t: &Tables) -> Vec<u8> {
    let mut out = Vec::new();
    put_str(&mut out, &t.meta.isa);
    put_str(&mut out, &t.meta.workload);
    put_str(&mut out, &t.meta.producer);
    put_varint(&mut out, t.meta.params.len() as u64);
    for (k, v) in &t.meta.params {
        put_str(&mut out, k);
        put_str(&mut out, v);
    }
    put_varint(&mut out, t.threads.len() as u64);
    for th in &t.threads {
        put_varint(&mut out, th.instructions);
        put_varint(&mut out, th.records);
        put_varint(&mut out, th.chunks.len() as u64);
        let mut prev = 0u64;
        for &c in &th.chunks {
            put_varint(&mut out, c - prev);
            prev = c;
        }
    }
    let src = &t.program.source;
    put_strs(&mut out, &src.functions);
    put_strs(&mut out, &src.files);
    put_strs(&mut out, &src.sections);
    put_varint(&mut out, t.program.insts.len() as u64);
    let mut prev_pc = 0u64;
    for s in &t.program.insts {
        put_varint(&mut out, zigzag(s.pc.wrapping_sub(prev_pc) as i64));
        prev_pc = s.pc;
        out.extend_from_slice(&[s.size, s.class as u8, s.branch as u8, static_flags(s)]);
        if s.branch.is_direct() {
            put_varint(&mut out, zigzag(s.target.wrapping_sub(s.pc) as i64));
        }
        for regs in [&s.srcs, &s.dsts] {
            out.push(regs.len() as u8);
            out.extend_from_slice(regs);
        }
        out.push(s.mem.len() as u8);
        for m in &s.mem {
            out.extend_from_slice(&[m.size, m.write as u8]);
        }
        put_varint(&mut out, opt_index(s.loc.function));
        put_varint(&mut out, opt_index(s.loc.file));
        put_varint(&mut out, s.loc.line as u64);
    }
    // Format v2: the streams' counts.
    for th in &t.threads {
        let c = th.counts.clone().unwrap_or_default();
        for v in [c.loads, c.stores, c.branches, c.taken] {
            put_varint(&mut out, v);
        }
        put_varint(&mut out, c.markers.len() as u64);
        for &m in &c.markers {
            put_varint(&mut out, m);
        }
    }
    out
}

/// The static flags byte: bit 0 starts a basic block; bit 1 says that the first
/// `flags >> 2` sources are the address registers (`StaticInst::addr_srcs`).
fn static_flags(s: &StaticInst) -> u8 {
    let mut f = s.block_start as u8;
    if let Some(n) = s.addr_srcs {
        f |= 2 | (n.min(s.srcs.len() as u8).min(63) << 2);
    }
    f
}

/// A decoding failure: position within the section and what was expected.
pub type Fail = (usize, String);

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn fail<T>(&self, msg: impl Into<String>) -> Result<T, Fail> {
        Err((self.pos, msg.into()))
    }

    fn varint(&mut self, what: &str) -> Result<u64, Fail> {
        let at = self.pos;
        get_varint(self.buf, &mut self.pos)
            .ok_or_else(|| (at, format!("bad or cut varint ({what})")))
    }

    /// A count of items each at least `min_bytes` long: bounded by the bytes left, so a
    /// corrupt count cannot make us allocate more than the section's size.
    fn count(&mut self, what: &str, min_bytes: usize) -> Result<usize, Fail> {
        let at = self.pos;
        let n = self.varint(what)?;
        let left = (self.buf.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes as u64) > left {
            return Err((
                at,
                format!("{what} = {n} does not fit in the {left} bytes left"),
            ));
        }
        Ok(n as usize)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Fail> {
        let at = self.pos;
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| (at, format!("{what} = {v} exceeds 32 bits")))
    }

    fn byte(&mut self, what: &str) -> Result<u8, Fail> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.fail(format!("section ends inside {what}")),
        }
    }

    fn bytes(&mut self, n: usize, what: &str) -> Result<&[u8], Fail> {
        if self.buf.len() - self.pos < n {
            return self.fail(format!("section ends inside {what}"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn string(&mut self, what: &str) -> Result<String, Fail> {
        let n = self.count(what, 1)?;
        let at = self.pos;
        let b = self.bytes(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| (at, format!("{what} is not UTF-8")))
    }

    fn strings(&mut self, what: &str) -> Result<Vec<String>, Fail> {
        let n = self.count(what, 1)?;
        (0..n).map(|_| self.string(what)).collect()
    }

    fn index(&mut self, what: &str, len: usize) -> Result<u32, Fail> {
        let at = self.pos;
        let v = self.varint(what)?;
        if v == 0 {
            return Ok(SrcLoc::UNKNOWN);
        }
        if v > len as u64 {
            return Err((
                at,
                format!("{what} index {} out of range (table has {len})", v - 1),
            ));
        }
        Ok((v - 1) as u32)
    }
}

/// Parses the tables section of a format `version` trace, checking every index and count
/// against what exists. `chunk_area_end` bounds chunk offsets.
pub fn decode(buf: &[u8], chunk_area_end: u64, version: u16) -> Result<Tables, Fail> {
    let header_len = super::chunk_header_len(version);
    let mut c = Cursor { buf, pos: 0 };
    let mut meta = TraceMeta {
        isa: c.string("ISA name")?,
        workload: c.string("workload name")?,
        producer: c.string("producer")?,
        params: Vec::new(),
    };
    let np = c.count("parameter count", 2)?;
    for _ in 0..np {
        let k = c.string("parameter name")?;
        let v = c.string("parameter value")?;
        meta.params.push((k, v));
    }
    let nt = c.count("thread count", 3)?;
    let mut threads = Vec::with_capacity(nt);
    for t in 0..nt {
        let instructions = c.varint("instruction count")?;
        let records = c.varint("record count")?;
        if instructions > records {
            return c.fail(format!(
                "thread {t}: {instructions} instructions but only {records} records"
            ));
        }
        let nc = c.count("chunk count", 1)?;
        let mut chunks = Vec::with_capacity(nc);
        let mut off = 0u64;
        for _ in 0..nc {
            let at = c.pos;
            off = off
                .checked_add(c.varint("chunk offset")?)
                .ok_or((at, "chunk offset overflows".to_string()))?;
            if off < super::PROLOGUE_LEN || off + header_len > chunk_area_end {
                return Err((
                    at,
                    format!(
                        "thread {t}: chunk offset {off} outside the chunk area {}..{chunk_area_end}",
                        super::PROLOGUE_LEN
                    ),
                ));
            }
            if let Some(&last) = chunks.last()
                && off <= last
            {
                return Err((at, format!("thread {t}: chunk offsets not increasing")));
            }
            chunks.push(off);
        }
        threads.push(ThreadDir {
            instructions,
            records,
            chunks,
            counts: None,
        });
    }
    let mut program = Program::default();
    program.source.functions = c.strings("function name")?;
    program.source.files = c.strings("file name")?;
    program.source.sections = c.strings("section name")?;
    let ns = c.count("static instruction count", 11)?;
    program.insts.reserve(ns);
    let mut seen = std::collections::HashSet::with_capacity(ns);
    let mut prev_pc = 0u64;
    for i in 0..ns {
        let at = c.pos;
        let pc = prev_pc.wrapping_add(unzigzag(c.varint("pc")?) as u64);
        prev_pc = pc;
        if !seen.insert(pc) {
            return Err((
                at,
                format!("static instruction {i}: pc {pc:#x} appears twice"),
            ));
        }
        let size = c.byte("size")?;
        if size == 0 {
            return c.fail(format!("static instruction {i} (pc {pc:#x}): size 0"));
        }
        let cb = c.byte("op class")?;
        let class = OpClass::from_code(cb)
            .ok_or_else(|| (c.pos - 1, format!("unknown op class code {cb}")))?;
        let bb = c.byte("branch kind")?;
        let branch = BranchKind::from_code(bb)
            .ok_or_else(|| (c.pos - 1, format!("unknown branch kind code {bb}")))?;
        let flags = c.byte("flags")?;
        if flags & 2 == 0 && flags > 1 {
            return Err((c.pos - 1, format!("unknown static flags {flags:#x}")));
        }
        let flags_pos = c.pos - 1;
        let target = if branch.is_direct() {
            pc.wrapping_add(unzigzag(c.varint("branch target")?) as u64)
        } else {
            0
        };
        let ns = c.byte("source register count")? as usize;
        let srcs = c.bytes(ns, "source registers")?.to_vec();
        let addr_srcs = if flags & 2 != 0 {
            let n = flags >> 2;
            if n as usize > ns {
                return Err((
                    flags_pos,
                    format!("flags give {n} address registers of {ns} sources"),
                ));
            }
            Some(n)
        } else {
            None
        };
        let nd = c.byte("destination register count")? as usize;
        let dsts = c.bytes(nd, "destination registers")?.to_vec();
        let nm = c.byte("memory operand count")? as usize;
        let mut mem = Vec::with_capacity(nm);
        for _ in 0..nm {
            let size = c.byte("memory operand size")?;
            let w = c.byte("memory operand direction")?;
            if size == 0 || w > 1 {
                return Err((
                    c.pos - 2,
                    format!("bad memory operand (size {size}, write {w})"),
                ));
            }
            mem.push(MemSpec {
                size,
                write: w == 1,
            });
        }
        let function = c.index("function", program.source.functions.len())?;
        let file = c.index("file", program.source.files.len())?;
        let line = c.u32("line")?;
        program.insts.push(StaticInst {
            pc,
            size,
            class,
            branch,
            target,
            srcs,
            addr_srcs,
            dsts,
            mem,
            block_start: flags & 1 != 0,
            loc: SrcLoc {
                function,
                file,
                line,
            },
        });
    }
    if version >= 2 {
        for (t, th) in threads.iter_mut().enumerate() {
            let mut k = StreamCounts {
                loads: c.varint("load count")?,
                stores: c.varint("store count")?,
                branches: c.varint("branch count")?,
                taken: c.varint("taken-branch count")?,
                markers: [0; Marker::KINDS],
            };
            if k.taken > k.branches || k.branches > th.instructions {
                return c.fail(format!(
                    "thread {t}: {} taken of {} branches in {} instructions",
                    k.taken, k.branches, th.instructions
                ));
            }
            let nk = c.count("marker kind count", 1)?;
            if nk > Marker::KINDS {
                return c.fail(format!(
                    "thread {t}: counts of {nk} marker kinds; this isim knows {} (a trace from a newer isim?)",
                    Marker::KINDS
                ));
            }
            for m in k.markers.iter_mut().take(nk) {
                *m = c.varint("marker count")?;
            }
            let markers: u64 = k.markers.iter().sum();
            if th.instructions.checked_add(markers) != Some(th.records) {
                return c.fail(format!(
                    "thread {t}: {} instructions and {markers} markers, but {} records",
                    th.instructions, th.records
                ));
            }
            th.counts = Some(k);
        }
    }
    if c.pos != buf.len() {
        return c.fail(format!(
            "{} unexpected bytes after the {}",
            buf.len() - c.pos,
            if version >= 2 {
                "stream counts"
            } else {
                "static table"
            }
        ));
    }
    Ok(Tables {
        meta,
        threads,
        program,
    })
}
