//! Trace format v4 (and v1 to v3, which the reader still reads): the byte layout shared by the
//! writer and the reader.
//!
//! `docs/trace-format.md` is the normative description; this module holds the constants and
//! the pieces both sides must compute identically (varints, the per-thread address predictor,
//! the control-flow tables). The writer is in [`writer`], the streaming reader in [`reader`],
//! and the per-record decoder — the hot loop — in [`decode`].

pub mod decode;
pub mod reader;
pub mod tables;
pub mod writer;

use std::collections::HashMap;

use crate::model::{BranchKind, MemSpec, NO_SIDX, Program};

/// File magic, first 8 bytes.
pub const MAGIC: &[u8; 8] = b"ISIMTRC\0";
/// Trailer magic, first 8 bytes of the last 32.
pub const TRAILER_MAGIC: &[u8; 8] = b"ISIMEND\0";
/// Chunk header magic.
pub const CHUNK_MAGIC: &[u8; 4] = b"ICHK";
/// The format version this code writes (it reads this one and every earlier one). Version 3
/// differs from 2 only in giving the address-delta value 0 a meaning (see [`Predictor::last`]);
/// no version 1 or 2 writer wrote it, so one decoder reads all three. Version 4 adds one marker
/// code ([`code::MUTEX_LOCK_SPINNING`]) that no earlier writer wrote, version 5 another
/// ([`code::MUTEX_LOCK_CALL`]: an earlier trace's interposed lock calls read as locks whose
/// code costs nothing, as they replayed when it was written), version 6 another
/// ([`code::RW_LOCK`], [`code::SEM_WAIT`], [`code::SEM_POST`]: read/write locks and
/// semaphores, which earlier traces replayed through their futexes), version 7 another
/// ([`code::MUTEX_UNLOCK_PLAIN`]: an earlier trace's releases read as locked instructions, as
/// they replayed when it was written), and version 8 lets [`code::MUTEX_LOCK_CALL`]'s spin
/// be more than 1 (a count of turns: libgomp's locks), which no earlier writer wrote; version
/// 9 adds [`code::COND_READY`] (a condition wait a critical section skipped), which no
/// earlier writer wrote.
pub const VERSION: u16 = 9;
/// The bit of a semaphore post's second argument that says its release wakes the futex
/// whenever it finds the count at 0 ([`crate::model::Marker::SemPost`]).
pub const SEM_WAKES_BIT: u32 = 32;
/// The oldest format version this code reads.
pub const OLDEST_VERSION: u16 = 1;
/// Prologue length: magic, version, flags, crc.
pub const PROLOGUE_LEN: u64 = 16;
/// Trailer length.
pub const TRAILER_LEN: u64 = 32;
/// Chunk header length in format v2: v1's fields plus the decoded payload length.
pub const CHUNK_HEADER_LEN: u64 = 24;
/// Chunk header length in format v1.
pub const CHUNK_HEADER_LEN_V1: u64 = 20;
/// The writer closes a chunk once its (decoded) payload reaches this many bytes.
pub const CHUNK_TARGET: usize = 64 * 1024;
/// The reader rejects tables sections that decode to more than this (a corrupt size must not
/// make it allocate without bound).
pub const TABLES_MAX: u64 = 1 << 30;
/// zstd level of the writer's chunk and tables compression.
pub const ZSTD_LEVEL: i32 = 3;

/// The chunk header length of format `version`.
pub fn chunk_header_len(version: u16) -> u64 {
    if version >= 2 {
        CHUNK_HEADER_LEN
    } else {
        CHUNK_HEADER_LEN_V1
    }
}
/// The reader rejects chunk payloads larger than this (a corrupt length must not make it
/// allocate gigabytes).
pub const CHUNK_MAX: u32 = 16 * 1024 * 1024;

/// Instruction header bit: a conditional branch was taken.
pub const H_TAKEN: u8 = 0x01;
/// Instruction header bit: the memory operands are listed explicitly (count, then each
/// operand's size, direction and address delta) instead of following the static shape.
pub const H_DYN_MEM: u8 = 0x02;
/// Instruction header: bit `H_HIT_SHIFT + i` says memory operand `i` (i < 5) is at the
/// predicted address and no delta follows.
pub const H_HIT_SHIFT: u32 = 2;
/// Number of memory operands that have a hit bit in the header.
pub const HIT_BITS: usize = 5;
/// Marker records have the top bit set; the low 7 bits are the marker code.
pub const H_MARKER: u8 = 0x80;

/// Marker codes (low 7 bits of a marker header byte).
pub mod code {
    /// Thread start.
    pub const THREAD_START: u8 = 1;
    /// Thread end.
    pub const THREAD_END: u8 = 2;
    /// ROI begin.
    pub const ROI_BEGIN: u8 = 3;
    /// ROI end.
    pub const ROI_END: u8 = 4;
    /// Barrier wait: varint id, varint participants.
    pub const BARRIER: u8 = 5;
    /// Mutex lock: varint address.
    pub const MUTEX_LOCK: u8 = 6;
    /// Mutex unlock: varint address.
    pub const MUTEX_UNLOCK: u8 = 7;
    /// Condition wait: varint cond, varint mutex.
    pub const COND_WAIT: u8 = 8;
    /// Condition signal: varint cond.
    pub const COND_SIGNAL: u8 = 9;
    /// Condition broadcast: varint cond.
    pub const COND_BROADCAST: u8 = 10;
    /// Thread create: varint child.
    pub const CREATE: u8 = 11;
    /// Thread join: varint child.
    pub const JOIN: u8 = 12;
    /// Named section begin: varint name index.
    pub const SECTION_BEGIN: u8 = 13;
    /// Named section end: varint name index.
    pub const SECTION_END: u8 = 14;
    /// Mutex lock with a recorded order: varint address, varint order.
    pub const MUTEX_LOCK_ORDERED: u8 = 15;
    /// Condition wait with recorded orders: varint cond, varint mutex, varint wake, varint
    /// relock.
    pub const COND_WAIT_ORDERED: u8 = 16;
    /// Barrier wait whose call site names the episode: as [`BARRIER`].
    pub const BARRIER_LEAD: u8 = 17;
    /// Futex wait: varint address, varint order.
    pub const FUTEX_WAIT: u8 = 18;
    /// Futex wake: varint address.
    pub const FUTEX_WAKE: u8 = 19;
    /// Recorded release: varint index.
    pub const RELEASE: u8 = 20;
    /// Mutex lock whose implementation spins before it sleeps (version 4): varint address,
    /// varint 0 (no recorded order) or a recorded order plus one.
    pub const MUTEX_LOCK_SPINNING: u8 = 21;
    /// Mutex lock by a call into a library the trace does not hold (version 5): varint
    /// address, varint 0 (no recorded order) or a recorded order plus one, varint spin: 0 if
    /// its implementation does not spin, 1 if it spins as `Spin::DEFAULT` (`[locks] spin`),
    /// else 2 + 2 × its turns, plus 1 if it spins again after a lost race (since 2026-12-07:
    /// libgomp's locks).
    pub const MUTEX_LOCK_CALL: u8 = 22;
    /// Read/write lock by a library call (version 6): varint address, varint 0 (no recorded
    /// order) or a recorded order plus one, varint 1 for writing (else 0: reading).
    pub const RW_LOCK: u8 = 23;
    /// Semaphore wait (version 6): varint address, varint initial value.
    pub const SEM_WAIT: u8 = 24;
    /// Semaphore post (version 6): varint address, varint initial value, plus
    /// 2^[`super::SEM_WAKES_BIT`] if the release calls futex wake whenever it finds the count
    /// at 0 (a reader before it refuses the bit as a value above 2^32 - 1).
    pub const SEM_POST: u8 = 25;
    /// Mutex unlock by a plain store (version 7): varint address.
    pub const MUTEX_UNLOCK_PLAIN: u8 = 26;
    /// A critical section that found its condition already true waits for the section that
    /// made it so (version 9): varint condition address, varint wake order (0 = none, k + 1
    /// = after release k: that section's unlock).
    pub const COND_READY: u8 = 27;
    /// Control continues at a static index not implied by the previous instruction.
    pub const JUMP: u8 = 0x7f;
}

/// Entries in each thread's address-predictor table (a power of two).
pub const PRED_SLOTS: usize = 1024;

/// Per-thread address predictor: for each slot, the last address and last stride of the
/// memory operands mapped to it. Operand `i` of static instruction `s` uses slot
/// `(mem_base[s] + i) % PRED_SLOTS`; writer and reader update it identically.
#[derive(Clone)]
pub struct Predictor {
    /// (last address, last stride) per slot.
    pub slots: Box<[(u64, u64); PRED_SLOTS]>,
    /// Address of the last explicitly listed (dynamic-shape) operand.
    pub dyn_last: u64,
    /// Address of the thread's previous memory operand, of whatever kind (format v3): an
    /// operand `i < HIT_BITS` that misses its prediction and is at this address is written as
    /// the delta value 0 (which such an operand could not have otherwise), so that the store
    /// of a read-modify-write at a random address (`hist[k]++`) costs one byte, not a second
    /// copy of the load's delta.
    pub last: u64,
}

impl Default for Predictor {
    fn default() -> Self {
        Predictor {
            slots: Box::new([(0, 0); PRED_SLOTS]),
            dyn_last: 0,
            last: 0,
        }
    }
}

/// What the decoder needs to know about one static instruction, flattened for the hot loop.
#[derive(Debug, Clone, Copy)]
pub struct DecodeEntry {
    /// Successor at `pc + size`, or [`NO_SIDX`].
    pub fallthrough: u32,
    /// Static target of a direct branch, or [`NO_SIDX`].
    pub target: u32,
    /// Index of the first operand's [`MemSpec`] in the flat spec array, which is also its
    /// predictor base.
    pub mem_base: u32,
    /// Number of static memory operands.
    pub n_mem: u8,
    /// The branch kind.
    pub branch: BranchKind,
}

/// The control-flow and operand tables derived from a program, identical on both sides.
#[derive(Debug, Clone, Default)]
pub struct FlowTables {
    /// One entry per static instruction.
    pub entries: Vec<DecodeEntry>,
    /// All static memory operand shapes, flattened in static-index order.
    pub specs: Vec<MemSpec>,
}

impl FlowTables {
    /// Builds the tables. PC lookups happen here, once per static instruction, so that the
    /// decoder never hashes.
    pub fn build(program: &Program) -> FlowTables {
        let mut by_pc: HashMap<u64, u32> = HashMap::with_capacity(program.insts.len());
        for (i, s) in program.insts.iter().enumerate() {
            by_pc.entry(s.pc).or_insert(i as u32);
        }
        let mut entries = Vec::with_capacity(program.insts.len());
        let mut specs = Vec::new();
        for s in &program.insts {
            let fallthrough = by_pc
                .get(&s.pc.wrapping_add(s.size as u64))
                .copied()
                .unwrap_or(NO_SIDX);
            let target = if s.branch.is_direct() {
                by_pc.get(&s.target).copied().unwrap_or(NO_SIDX)
            } else {
                NO_SIDX
            };
            entries.push(DecodeEntry {
                fallthrough,
                target,
                mem_base: specs.len() as u32,
                n_mem: s.mem.len() as u8,
                branch: s.branch,
            });
            specs.extend_from_slice(&s.mem);
        }
        FlowTables { entries, specs }
    }
}

/// Appends an unsigned LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Maps a signed delta to an unsigned varint value (small magnitudes stay small).
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads an unsigned LEB128 varint at `*pos`; `None` if it runs past the end or exceeds
/// 64 bits (ten bytes, the last one ≤ 1).
#[inline]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}
