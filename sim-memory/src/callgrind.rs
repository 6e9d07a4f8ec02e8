//! A cache model with callgrind's (and cachegrind's) semantics, built on the same cache arrays
//! as the real hierarchy, so that callgrind can serve as a peer oracle for them: separate I1
//! and D1, a unified LL reached only on an L1 miss (no inclusion, no back-invalidation, L1
//! evictions do not go to LL), true LRU, write-allocate with writes handled like reads (no
//! dirty state, no write-backs), a read-modify-write counted as one data access, and an access
//! that straddles two lines updating both but counting as one access and at most one miss;
//! when such an access misses L1 on either line, LL looks up both of its lines.

use crate::cache::{Cache, SHARED};
use crate::config::{CacheParams, ReplacementKind};

/// Miss counters in callgrind's terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallgrindCounts {
    /// Instruction fetches (Ir).
    pub ir: u64,
    /// I1 misses (I1mr).
    pub i1_misses: u64,
    /// LL misses of instruction fetches (ILmr).
    pub il_misses: u64,
    /// Data accesses (Dr + Dw).
    pub d_refs: u64,
    /// D1 misses (D1mr + D1mw).
    pub d1_misses: u64,
    /// LL misses of data accesses (DLmr + DLmw).
    pub dl_misses: u64,
}

/// The callgrind-compatible model.
#[derive(Debug, Clone)]
pub struct CallgrindModel {
    i1: Cache,
    d1: Cache,
    ll: Cache,
    shift: u32,
    /// Counters so far.
    pub counts: CallgrindCounts,
}

/// One level of callgrind's geometry: size, associativity, line size (as `--D1=` takes them).
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    /// Bytes.
    pub size: u64,
    /// Ways.
    pub assoc: u32,
    /// Line bytes.
    pub line: u32,
}

fn params(g: Geometry) -> CacheParams {
    CacheParams {
        size: g.size,
        associativity: g.assoc,
        line_size: g.line,
        data_latency: 0,
        tag_latency: 0,
        replacement: ReplacementKind::Lru,
    }
}

impl CallgrindModel {
    /// A model with callgrind's `--I1`, `--D1` and `--LL` geometries (equal line sizes).
    pub fn new(i1: Geometry, d1: Geometry, ll: Geometry) -> CallgrindModel {
        CallgrindModel {
            i1: Cache::new(params(i1)),
            d1: Cache::new(params(d1)),
            ll: Cache::new(params(ll)),
            shift: d1.line.trailing_zeros(),
            counts: CallgrindCounts::default(),
        }
    }

    /// Looks up one line: a hit refreshes it, a miss fills it. Returns whether it missed.
    fn lookup(c: &mut Cache, line: u64) -> bool {
        match c.find(line) {
            Some(s) => {
                c.touch(s);
                false
            }
            None => {
                c.fill(line, SHARED);
                true
            }
        }
    }

    /// One access: L1 looks up every line it touches; if any missed, LL looks up *all* of
    /// them (as callgrind does for a line-straddling access). Returns (L1 miss, LL miss).
    fn access(&mut self, instr: bool, addr: u64, size: u32) -> (bool, bool) {
        let first = addr >> self.shift;
        let last = addr.wrapping_add(size.max(1) as u64 - 1) >> self.shift;
        let l1 = if instr { &mut self.i1 } else { &mut self.d1 };
        let mut m1 = Self::lookup(l1, first);
        if last != first {
            m1 |= Self::lookup(l1, last);
        }
        if !m1 {
            return (false, false);
        }
        let mut ml = Self::lookup(&mut self.ll, first);
        if last != first {
            ml |= Self::lookup(&mut self.ll, last);
        }
        (true, ml)
    }

    /// An instruction fetch of `size` bytes at `addr`.
    pub fn ifetch(&mut self, addr: u64, size: u32) {
        let (m1, ml) = self.access(true, addr, size);
        self.counts.ir += 1;
        self.counts.i1_misses += m1 as u64;
        self.counts.il_misses += ml as u64;
    }

    /// A data read, write or read-modify-write of `size` bytes at `addr`.
    pub fn data(&mut self, addr: u64, size: u32) {
        let (m1, ml) = self.access(false, addr, size);
        self.counts.d_refs += 1;
        self.counts.d1_misses += m1 as u64;
        self.counts.dl_misses += ml as u64;
    }
}
