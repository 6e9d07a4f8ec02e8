//! `false-sharing`: every thread increments its own counter, but the counters are adjacent
//! 8-byte words, so up to eight threads' counters share one 64-byte line
//! (`false_sharing.c:15`). Each store invalidates the other threads' copies: with one thread
//! the loop hits in L1; with several, most loads are served by a neighbour's cache.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, OpClass};

pub(super) const WORKLOAD: Workload = Workload {
    name: "false-sharing",
    summary: "per-thread counters packed into shared cache lines",
    shows: "coherence misses without true sharing: the load/store of counter[tid] at \
            false_sharing.c:15 ping-pongs the line between cores (L1-neighbour hits)",
    size_meaning: "increments per thread",
    work_per_thread: true,
    default_size: 10000,
    max_size: 1 << 28,
    emit,
};

fn emit(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let np = p.threads;
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("count_worker", "false_sharing.c");
    let top = a.label();
    a.bind(top);
    let ld = a.load(15, reg::RAX, &[reg::RDI], 8);
    let add = a.op(15, OpClass::IntAlu, &[reg::RAX], &[reg::RAX]);
    let st = a.store(15, reg::RAX, &[reg::RDI], 8);
    let inc = a.op(14, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let cmp = a.op(14, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let br = a.branch(14, BranchKind::Conditional, Some(top), &[reg::FLAGS]);
    a.finish(w)?;
    let mut em = Em { w };
    frame.begin(&mut em, np)?;
    for t in 0..np {
        let c = DATA_BASE + 8 * t as u64;
        for i in 0..p.size {
            em.m(t, ld, &[c])?;
            em.x(t, add)?;
            em.m(t, st, &[c])?;
            em.x(t, inc)?;
            em.x(t, cmp)?;
            em.br(t, br, i + 1 < p.size)?;
        }
    }
    frame.end(&mut em, np)
}
