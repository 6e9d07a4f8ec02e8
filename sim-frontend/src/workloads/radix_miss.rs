//! `radix-miss`: a radix-sort histogram pass with identical control flow in every thread. Each
//! thread reads its own keys sequentially and increments `hist[bucket]` (`radix.c:32`). In
//! odd-numbered threads the buckets are spread over a 32 MiB table, so that load misses at
//! every level; in even-numbered threads they fall in a 2 KiB table that stays in L1. All
//! threads execute exactly the same instructions; the imbalance at the barrier at `radix.c:35`
//! is caused by the misses of the load at `radix.c:32` alone.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Rng, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, OpClass};

pub(super) const WORKLOAD: Workload = Workload {
    name: "radix-miss",
    summary: "histogram pass, same control flow everywhere; odd threads' bucket loads miss",
    shows: "imbalance caused by one load's cache misses (radix.c:32), not by control flow: \
            odd threads scatter over 32 MiB, even threads stay within 2 KiB",
    size_meaning: "keys per thread",
    work_per_thread: true,
    default_size: 16384,
    max_size: 1 << 26,
    emit,
};

/// Bytes of the bucket table that missing (odd) threads scatter over.
pub const BIG_TABLE: u64 = 32 << 20;
/// Bytes of the bucket table that hitting (even) threads use.
pub const SMALL_TABLE: u64 = 2 << 10;

/// True if thread `t` is one of the missing threads.
pub fn misses(t: u32) -> bool {
    t % 2 == 1
}

fn emit(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let np = p.threads;
    let n = p.size;
    let keys_base = DATA_BASE;
    let hist_base = DATA_BASE + (1 << 32);
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("radix_histogram", "radix.c");
    let top = a.label();
    a.bind(top);
    let ld_key = a.load(30, reg::RAX, &[reg::RSI, reg::RCX], 8);
    let bucket = a.op(31, OpClass::IntAlu, &[reg::RDX], &[reg::RAX]);
    let ld_h = a.load(32, reg::R8, &[reg::RDI, reg::RDX], 8);
    let add = a.op(32, OpClass::IntAlu, &[reg::R8], &[reg::R8]);
    let st_h = a.store(32, reg::R8, &[reg::RDI, reg::RDX], 8);
    let inc = a.op(29, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let cmp = a.op(29, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let br = a.branch(29, BranchKind::Conditional, Some(top), &[reg::FLAGS]);
    let bar = a.op(35, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    a.finish(w)?;

    let mut em = Em { w };
    frame.begin(&mut em, np)?;
    for t in 0..np {
        let mut rng = Rng::new(p.seed, t as u64);
        let table = if misses(t) { BIG_TABLE } else { SMALL_TABLE };
        let my_hist = hist_base + t as u64 * (2 * BIG_TABLE);
        let my_keys = keys_base + t as u64 * n * 8;
        for i in 0..n {
            em.m(t, ld_key, &[my_keys + i * 8])?;
            em.x(t, bucket)?;
            let h = my_hist + rng.below(table / 8) * 8;
            em.m(t, ld_h, &[h])?;
            em.x(t, add)?;
            em.m(t, st_h, &[h])?;
            em.x(t, inc)?;
            em.x(t, cmp)?;
            em.br(t, br, i + 1 < n)?;
        }
    }
    Frame::barrier(&mut em, np, bar, super::BARRIER_BASE)?;
    frame.end(&mut em, np)
}
