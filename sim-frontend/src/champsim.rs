//! Import of ChampSim `input_instr` traces (64-byte records; raw, `.gz` or `.xz`, recognised
//! by their magic bytes) into an isim trace, so that isim and ChampSim can run the same work.
//!
//! Record layout (little-endian): `u64 ip`, `u8 is_branch`, `u8 branch_taken`,
//! `u8 destination_registers[2]`, `u8 source_registers[4]`, `u64 destination_memory[2]`
//! (stores), `u64 source_memory[4]` (loads); 0 marks an empty slot. ChampSim records carry no
//! instruction size, operand size or branch kind, so the importer infers them:
//! * the branch kind from the registers read and written (ChampSim's numbering: SP = 6,
//!   FLAGS = 25, IP = 26), as ChampSim itself does;
//! * a branch's target from the next record's ip when taken;
//! * an instruction's size from the next record's ip when control falls through; a call's
//!   (which never falls through) from where its return went: each input's calls are kept on
//!   a stack, and a return followed by the record at `ip` pops the call it returns from,
//!   whose size is `ip` minus the call's (2 to 15 bytes; a return that lands elsewhere, as
//!   after a `longjmp`, teaches nothing). 4 if never observed. Memory operands are taken to be
//!   8 bytes.
//!
//! The first pass over the input learns the static table, the second writes the streams. Each
//! input file becomes one thread; thread 0 creates the others at the start and joins them at
//! the end, with no other synchronization.
//!
//! [`export`] goes the other way: one thread of any isim trace (a traced real program, a
//! built-in workload) becomes an `input_instr` file that ChampSim runs, with the registers
//! each branch kind reads and writes in ChampSim's convention, so that ChampSim infers the
//! same kinds. What the format cannot hold is counted, not hidden: synchronization markers,
//! memory operands beyond 4 loads or 2 stores, accesses at address 0, source registers
//! beyond 4 and destinations beyond 2.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, Marker, MemAccess, MemSpec, OpClass, StaticInst, TraceMeta};

/// Bytes per `input_instr` record.
pub const RECORD: usize = 64;
/// ChampSim's stack-pointer register number.
pub const REG_SP: u8 = 6;
/// ChampSim's flags register number.
pub const REG_FLAGS: u8 = 25;
/// ChampSim's instruction-pointer register number.
pub const REG_IP: u8 = 26;
/// The `isa` of an imported trace: its register numbers are ChampSim's own.
pub const ISA: &str = "champsim";
/// Operand size assumed for every memory access (ChampSim does not record sizes).
pub const MEM_SIZE: u8 = 8;

/// One decoded `input_instr` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChampRecord {
    /// Instruction pointer.
    pub ip: u64,
    /// Non-zero if the instruction is a branch.
    pub is_branch: u8,
    /// Non-zero if the branch was taken.
    pub taken: u8,
    /// Destination registers (0 = empty).
    pub dst_regs: [u8; 2],
    /// Source registers (0 = empty).
    pub src_regs: [u8; 4],
    /// Store addresses (0 = empty).
    pub dst_mem: [u64; 2],
    /// Load addresses (0 = empty).
    pub src_mem: [u64; 4],
}

impl ChampRecord {
    /// Parses one 64-byte record.
    pub fn parse(b: &[u8; RECORD]) -> ChampRecord {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        ChampRecord {
            ip: u64_at(0),
            is_branch: b[8],
            taken: b[9],
            dst_regs: [b[10], b[11]],
            src_regs: [b[12], b[13], b[14], b[15]],
            dst_mem: [u64_at(16), u64_at(24)],
            src_mem: [u64_at(32), u64_at(40), u64_at(48), u64_at(56)],
        }
    }

    /// The 64-byte record (the inverse of [`ChampRecord::parse`]).
    pub fn to_bytes(&self) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        b[0..8].copy_from_slice(&self.ip.to_le_bytes());
        b[8] = self.is_branch;
        b[9] = self.taken;
        b[10..12].copy_from_slice(&self.dst_regs);
        b[12..16].copy_from_slice(&self.src_regs);
        for (i, a) in self.dst_mem.iter().chain(&self.src_mem).enumerate() {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        b
    }

    /// The branch kind, inferred from the registers as ChampSim does.
    pub fn branch_kind(&self) -> BranchKind {
        if self.is_branch == 0 {
            return BranchKind::None;
        }
        let reads = |r: u8| self.src_regs.contains(&r);
        let writes = |r: u8| self.dst_regs.contains(&r);
        let reads_other = self
            .src_regs
            .iter()
            .any(|&r| r != 0 && r != REG_SP && r != REG_FLAGS && r != REG_IP);
        let stack = reads(REG_SP) && writes(REG_SP);
        match (
            writes(REG_IP),
            stack,
            reads(REG_IP),
            reads(REG_FLAGS),
            reads_other,
        ) {
            (true, true, true, _, false) => BranchKind::DirectCall,
            (true, true, true, _, true) => BranchKind::IndirectCall,
            (true, true, false, _, _) => BranchKind::Return,
            (true, false, _, true, false) => BranchKind::Conditional,
            (true, false, _, false, false) => BranchKind::DirectJump,
            // Indirect jumps and anything unclassifiable: the target is taken from the
            // stream, which is always right.
            _ => BranchKind::IndirectJump,
        }
    }

    fn mem(&self) -> impl Iterator<Item = MemAccess> + '_ {
        let loads = self
            .src_mem
            .iter()
            .filter(|&&a| a != 0)
            .map(|&addr| MemAccess {
                addr,
                size: MEM_SIZE,
                write: false,
            });
        let stores = self
            .dst_mem
            .iter()
            .filter(|&&a| a != 0)
            .map(|&addr| MemAccess {
                addr,
                size: MEM_SIZE,
                write: true,
            });
        loads.chain(stores)
    }
}

/// Reads records from one file, raw or compressed.
struct Records {
    path: PathBuf,
    inner: Box<dyn Read>,
    index: u64,
}

impl Records {
    fn open(path: &Path) -> Result<Records, TraceError> {
        let mut f = File::open(path)
            .map_err(|e| TraceError::io(path, 0, "cannot open ChampSim trace", e))?;
        let mut magic = [0u8; 6];
        let n = f
            .read(&mut magic)
            .map_err(|e| TraceError::io(path, 0, "cannot read", e))?;
        let f = File::open(path).map_err(|e| TraceError::io(path, 0, "cannot reopen", e))?;
        let buf = BufReader::with_capacity(1 << 20, f);
        let inner: Box<dyn Read> = if n >= 6 && magic == [0xFD, b'7', b'z', b'X', b'Z', 0] {
            Box::new(BufReader::new(xz2::read::XzDecoder::new_multi_decoder(buf)))
        } else if n >= 2 && magic[0..2] == [0x1F, 0x8B] {
            Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(buf)))
        } else {
            Box::new(buf)
        };
        Ok(Records {
            path: path.to_path_buf(),
            inner,
            index: 0,
        })
    }

    /// The next record, `None` at a clean end; a partial record is an error.
    fn next(&mut self) -> Result<Option<ChampRecord>, TraceError> {
        let mut b = [0u8; RECORD];
        let mut got = 0;
        while got < RECORD {
            match self.inner.read(&mut b[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TraceError::io(
                        &self.path,
                        self.index * RECORD as u64 + got as u64,
                        &format!("cannot read record {} (decompressed offset)", self.index),
                        e,
                    ));
                }
            }
        }
        if got == 0 {
            return Ok(None);
        }
        let off = self.index * RECORD as u64;
        if got < RECORD {
            return Err(TraceError::at(
                &self.path,
                None,
                off + got as u64,
                format!(
                    "input ends inside record {} ({got} of {RECORD} bytes; offsets are in the decompressed stream): a ChampSim trace is a sequence of 64-byte records",
                    self.index
                ),
            ));
        }
        self.index += 1;
        let r = ChampRecord::parse(&b);
        if r.is_branch > 1 || r.taken > 1 {
            return Err(TraceError::at(
                &self.path,
                None,
                off + 8,
                format!(
                    "record {}: is_branch = {}, branch_taken = {}; expected 0 or 1 (not a ChampSim input_instr trace, or the 96-byte cloudsuite variant?)",
                    self.index - 1,
                    r.is_branch,
                    r.taken
                ),
            ));
        }
        Ok(Some(r))
    }
}

#[derive(Default)]
struct IpInfo {
    size: Option<u8>,
    target: Option<u64>,
    kind: BranchKind,
    srcs: Vec<u8>,
    dsts: Vec<u8>,
    mem: Vec<MemSpec>,
}

/// Counts of what was imported, per input file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCounts {
    /// Records (= instructions).
    pub instructions: u64,
    /// Load operands.
    pub loads: u64,
    /// Store operands.
    pub stores: u64,
    /// Branch records.
    pub branches: u64,
}

/// Imports `inputs` (one thread each) into a trace at `out`. `progress` is called with the
/// number of records processed so far (both passes).
pub fn import(
    inputs: &[PathBuf],
    out: &Path,
    mut progress: impl FnMut(u64),
) -> Result<Vec<ImportCounts>, TraceError> {
    if inputs.is_empty() {
        return Err(TraceError::at(out, None, 0, "no input files"));
    }
    let mut order: Vec<u64> = Vec::new();
    let mut info: HashMap<u64, IpInfo> = HashMap::new();
    let mut done = 0u64;
    for path in inputs {
        let mut rs = Records::open(path)?;
        // The ips of the calls this input is inside, innermost last.
        let mut calls: Vec<u64> = Vec::new();
        let mut cur = rs.next()?;
        while let Some(r) = cur {
            let next = rs.next()?;
            let e = info.entry(r.ip).or_insert_with(|| {
                order.push(r.ip);
                IpInfo {
                    kind: r.branch_kind(),
                    srcs: r.src_regs.iter().copied().filter(|&x| x != 0).collect(),
                    dsts: r.dst_regs.iter().copied().filter(|&x| x != 0).collect(),
                    mem: r
                        .mem()
                        .map(|m| MemSpec {
                            size: m.size,
                            write: m.write,
                        })
                        .collect(),
                    ..IpInfo::default()
                }
            });
            let kind = e.kind;
            if let Some(n) = next {
                let falls = e.kind == BranchKind::None
                    || (e.kind == BranchKind::Conditional && r.taken == 0);
                if falls {
                    let d = n.ip.wrapping_sub(r.ip);
                    if e.size.is_none() && (1..=15).contains(&d) {
                        e.size = Some(d as u8);
                    }
                } else if e.target.is_none() && e.kind.is_direct() {
                    e.target = Some(n.ip);
                }
            }
            match kind {
                BranchKind::DirectCall | BranchKind::IndirectCall => {
                    // Bounded: a thread that calls without returning (a longjmp loop) keeps
                    // only its innermost calls.
                    if calls.len() == 1 << 16 {
                        calls.drain(..1 << 15);
                    }
                    calls.push(r.ip);
                }
                BranchKind::Return => {
                    if let (Some(c), Some(n)) = (calls.pop(), next) {
                        let d = n.ip.wrapping_sub(c);
                        if (2..=15).contains(&d)
                            && let Some(call) = info.get_mut(&c)
                            && call.size.is_none()
                        {
                            call.size = Some(d as u8);
                        }
                    }
                }
                _ => {}
            }
            done += 1;
            if done % (1 << 20) == 0 {
                progress(done);
            }
            cur = next;
        }
    }
    let meta = TraceMeta {
        isa: ISA.into(),
        workload: inputs
            .iter()
            .map(|p| {
                p.file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(","),
        params: vec![("files".into(), inputs.len().to_string())],
        producer: concat!("isim-import-champsim ", env!("CARGO_PKG_VERSION")).into(),
    };
    let mut w = TraceWriter::create(out, meta)?;
    let mut sidx_of: HashMap<u64, u32> = HashMap::with_capacity(order.len());
    for ip in order {
        let e = info.remove(&ip).expect("every ordered ip has info");
        let class = match e.kind {
            BranchKind::None if e.mem.iter().any(|m| !m.write) => OpClass::Load,
            BranchKind::None if !e.mem.is_empty() => OpClass::Store,
            BranchKind::None => OpClass::IntAlu,
            BranchKind::Conditional => OpClass::CondBranch,
            BranchKind::DirectJump | BranchKind::IndirectJump => OpClass::Jump,
            BranchKind::DirectCall | BranchKind::IndirectCall => OpClass::Call,
            BranchKind::Return => OpClass::Return,
        };
        let mut s = StaticInst::new(ip, e.size.unwrap_or(4), class);
        s.branch = e.kind;
        s.target = e.target.unwrap_or(0);
        s.srcs = e.srcs;
        s.dsts = e.dsts;
        s.mem = e.mem;
        sidx_of.insert(ip, w.add_static(s)?);
    }
    let n = inputs.len() as u32;
    w.marker(0, Marker::ThreadStart)?;
    w.marker(0, Marker::RoiBegin)?;
    for c in 1..n {
        w.marker(0, Marker::ThreadCreate { child: c })?;
    }
    let mut counts = Vec::with_capacity(inputs.len());
    let mut mem: Vec<MemAccess> = Vec::with_capacity(6);
    for (t, path) in inputs.iter().enumerate() {
        let t = t as u32;
        if t > 0 {
            w.marker(t, Marker::ThreadStart)?;
        }
        let mut c = ImportCounts::default();
        let mut rs = Records::open(path)?;
        while let Some(r) = rs.next()? {
            mem.clear();
            mem.extend(r.mem());
            c.instructions += 1;
            c.loads += mem.iter().filter(|m| !m.write).count() as u64;
            c.stores += mem.iter().filter(|m| m.write).count() as u64;
            c.branches += (r.is_branch != 0) as u64;
            let Some(&sidx) = sidx_of.get(&r.ip) else {
                return Err(TraceError::at(
                    path,
                    None,
                    (rs.index - 1) * RECORD as u64,
                    format!(
                        "record {}: ip {:#x} was not in the file during the first pass (did the file change while importing?)",
                        rs.index - 1,
                        r.ip
                    ),
                ));
            };
            w.inst(t, sidx, r.taken != 0, &mem)?;
            done += 1;
            if done % (1 << 20) == 0 {
                progress(done);
            }
        }
        if t > 0 {
            w.marker(t, Marker::ThreadEnd)?;
        }
        counts.push(c);
    }
    for c in 1..n {
        w.marker(0, Marker::ThreadJoin { child: c })?;
    }
    w.marker(0, Marker::RoiEnd)?;
    w.marker(0, Marker::ThreadEnd)?;
    w.finish()?;
    progress(done);
    Ok(counts)
}

/// What [`export`] wrote and what the format could not hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// Records written (= instructions exported).
    pub instructions: u64,
    /// Load operands written.
    pub loads: u64,
    /// Store operands written.
    pub stores: u64,
    /// Branch records.
    pub branches: u64,
    /// Taken branches.
    pub taken: u64,
    /// Markers (synchronization, ROI, thread events) left out: the format has none.
    pub markers_dropped: u64,
    /// Memory operands left out (beyond 4 loads or 2 stores, or at address 0).
    pub mem_dropped: u64,
    /// Register operands left out (beyond 4 sources or 2 destinations).
    pub regs_dropped: u64,
}

/// ChampSim's register for isim register `r`: isim's stack pointer (4) and flags (17) become
/// ChampSim's SP and FLAGS; every other register moves above ChampSim's special ones, so it
/// never reads as SP, FLAGS or IP.
fn champ_reg(r: u8) -> u8 {
    match r {
        4 => REG_SP,
        17 => REG_FLAGS,
        _ => 27 + (r % 229),
    }
}

/// The record of one executed instruction of static `s`.
fn record_of(s: &StaticInst, taken: bool, mem: &[MemAccess], c: &mut ExportCounts) -> ChampRecord {
    let mut r = ChampRecord {
        ip: s.pc,
        ..ChampRecord::default()
    };
    let other = || {
        s.srcs
            .iter()
            .map(|&x| champ_reg(x))
            .find(|&x| x != REG_SP && x != REG_FLAGS)
            .unwrap_or(27)
    };
    // Registers per kind as ChampSim classifies them (see `branch_kind`).
    let (srcs, dsts): (Vec<u8>, Vec<u8>) = match s.branch {
        BranchKind::None => {
            let mut srcs: Vec<u8> = s.srcs.iter().map(|&x| champ_reg(x)).collect();
            let mut dsts: Vec<u8> = s.dsts.iter().map(|&x| champ_reg(x)).collect();
            srcs.dedup();
            dsts.dedup();
            (srcs, dsts)
        }
        BranchKind::Conditional => (vec![REG_IP, REG_FLAGS], vec![REG_IP]),
        BranchKind::DirectJump => (vec![], vec![REG_IP]),
        BranchKind::IndirectJump => (vec![other()], vec![REG_IP]),
        BranchKind::DirectCall => (vec![REG_IP, REG_SP], vec![REG_IP, REG_SP]),
        BranchKind::IndirectCall => (vec![REG_IP, REG_SP, other()], vec![REG_IP, REG_SP]),
        BranchKind::Return => (vec![REG_SP], vec![REG_IP, REG_SP]),
    };
    for (i, &x) in srcs.iter().enumerate() {
        match r.src_regs.get_mut(i) {
            Some(slot) => *slot = x,
            None => c.regs_dropped += 1,
        }
    }
    for (i, &x) in dsts.iter().enumerate() {
        match r.dst_regs.get_mut(i) {
            Some(slot) => *slot = x,
            None => c.regs_dropped += 1,
        }
    }
    if s.branch != BranchKind::None {
        r.is_branch = 1;
        r.taken = (s.branch != BranchKind::Conditional || taken) as u8;
        c.branches += 1;
        c.taken += r.taken as u64;
    }
    let (mut nl, mut ns) = (0, 0);
    for a in mem {
        let slots: &mut [u64] = if a.write {
            &mut r.dst_mem
        } else {
            &mut r.src_mem
        };
        let n = if a.write { &mut ns } else { &mut nl };
        if a.addr == 0 || *n >= slots.len() {
            c.mem_dropped += 1;
            continue;
        }
        slots[*n] = a.addr;
        *n += 1;
    }
    c.loads += nl as u64;
    c.stores += ns as u64;
    c.instructions += 1;
    r
}

/// Writes thread `tid` of `trace` to `out` as ChampSim `input_instr` records: xz-compressed
/// when `out` ends in `.xz`, gzip when `.gz`, raw otherwise. With `roi_only`, only the
/// instructions between the thread's region-of-interest markers. The file is written as
/// `<out>.partial` and renamed into place when complete. `progress` gets the instructions
/// exported so far.
pub fn export(
    trace: &crate::Trace,
    tid: u32,
    roi_only: bool,
    out: &Path,
    mut progress: impl FnMut(u64),
) -> Result<ExportCounts, TraceError> {
    use crate::model::{Batch, Record};
    use std::io::Write;
    let mut stream = trace.stream(tid)?;
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let file =
        File::create(&tmp).map_err(|e| TraceError::io(&tmp, 0, "cannot create output", e))?;
    let name = out.to_string_lossy();
    // xz preset 1: about five times faster than the default 6 on these records, for files a
    // few percent larger; an export of tens of millions of records is minutes at preset 6.
    let mut w: Box<dyn Write> = if name.ends_with(".xz") {
        Box::new(xz2::write::XzEncoder::new(std::io::BufWriter::new(file), 1))
    } else if name.ends_with(".gz") {
        Box::new(flate2::write::GzEncoder::new(
            std::io::BufWriter::new(file),
            flate2::Compression::default(),
        ))
    } else {
        Box::new(std::io::BufWriter::new(file))
    };
    let mut c = ExportCounts::default();
    let mut batch = Batch::default();
    let mut in_roi = !roi_only;
    let result = (|| -> Result<(), TraceError> {
        while stream.next_batch(&mut batch)? {
            for rec in &batch.records {
                match rec {
                    Record::Marker(m) => {
                        match m {
                            Marker::RoiBegin if roi_only => in_roi = true,
                            Marker::RoiEnd if roi_only => in_roi = false,
                            _ => {}
                        }
                        c.markers_dropped += 1;
                    }
                    Record::Inst(i) if in_roi => {
                        let s = &trace.program.insts[i.sidx as usize];
                        let r = record_of(s, i.taken, batch.mem_of(i), &mut c);
                        w.write_all(&r.to_bytes()).map_err(|e| {
                            TraceError::io(&tmp, c.instructions * RECORD as u64, "cannot write", e)
                        })?;
                        if c.instructions % (1 << 20) == 0 {
                            progress(c.instructions);
                        }
                    }
                    Record::Inst(_) => {}
                }
            }
        }
        w.flush()
            .map_err(|e| TraceError::io(&tmp, 0, "cannot write", e))?;
        drop(std::mem::replace(&mut w, Box::new(std::io::sink())));
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, out)
        .map_err(|e| TraceError::io(out, 0, "cannot rename into place", e))?;
    progress(c.instructions);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record at `ip`: a plain instruction, or a branch of the kind its registers say.
    fn rec(ip: u64, branch: bool, taken: bool, srcs: &[u8], dsts: &[u8]) -> ChampRecord {
        let mut r = ChampRecord {
            ip,
            is_branch: branch as u8,
            taken: taken as u8,
            ..ChampRecord::default()
        };
        r.src_regs[..srcs.len()].copy_from_slice(srcs);
        r.dst_regs[..dsts.len()].copy_from_slice(dsts);
        r
    }

    /// Calls never fall through, so their sizes come from where their returns go: a 2-byte
    /// indirect call (`call rax`) and a 5-byte direct call, each returning to the byte after
    /// it, are imported with those sizes (not the 4 assumed for an instruction never seen to
    /// fall through), so a return stack pushes the right address. A return that lands
    /// elsewhere (as after a `longjmp`) teaches its call nothing.
    #[test]
    fn calls_take_their_sizes_from_where_their_returns_land() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.trace");
        let (sp, ip, rax) = (REG_SP, REG_IP, 1u8);
        let mut recs = Vec::new();
        for i in 0..50 {
            recs.push(rec(0x1000, false, false, &[], &[rax]));
            recs.push(rec(0x1003, true, true, &[sp, ip, rax], &[sp, ip])); // call rax
            recs.push(rec(0x2000, false, false, &[], &[]));
            recs.push(rec(0x2004, true, true, &[sp], &[sp, ip])); // ret
            recs.push(rec(0x1005, true, true, &[sp, ip], &[sp, ip])); // call 0x3000
            recs.push(rec(0x3000, true, true, &[sp], &[sp, ip])); // ret
            recs.push(rec(0x100a, true, true, &[sp, ip], &[sp, ip])); // call 0x4000
            recs.push(rec(0x4000, true, true, &[sp], &[sp, ip])); // ret elsewhere
            recs.push(rec(0x5000, true, i + 1 < 50, &[ip, 25], &[ip])); // loop branch
        }
        let bytes: Vec<u8> = recs.iter().flat_map(|r| r.to_bytes()).collect();
        std::fs::write(&input, bytes).unwrap();
        let out = dir.path().join("out.itrace");
        import(std::slice::from_ref(&input), &out, |_| {}).unwrap();
        let trace = crate::Trace::open(&out).unwrap();
        let size = |pc: u64| {
            let s = trace.program.insts.iter().find(|s| s.pc == pc).unwrap();
            (s.branch, s.size)
        };
        assert_eq!(size(0x1003), (BranchKind::IndirectCall, 2));
        assert_eq!(size(0x1005), (BranchKind::DirectCall, 5));
        assert_eq!(
            size(0x100a),
            (BranchKind::DirectCall, 4),
            "a return to 0x5000"
        );
        assert_eq!(size(0x1000).1, 3, "a fall-through");
    }
}
