//! `balanced`: a Jacobi-like sweep in which every thread does exactly the same work on its own
//! slice: per round it reads and writes `size` elements of a private array
//! (`jacobi.c:14–15`) and meets the others at the barrier at `jacobi.c:18`. Control flow,
//! instruction counts and access patterns are identical across threads, and each slice is
//! aligned the same way, so the only differences between threads come from sharing the
//! memory system. It is the negative control of the imbalance analyses: LIME should find
//! nothing to blame.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, OpClass};

pub(super) const WORKLOAD: Workload = Workload {
    name: "balanced",
    summary: "identical Jacobi-like sweeps over private slices, a barrier per round",
    shows: "no imbalance by construction (the negative control): every thread runs the same \
            instructions on the same access pattern; LIME should report no cause above 0.1",
    size_meaning: "elements per thread per round (8 rounds)",
    work_per_thread: true,
    default_size: 2048,
    max_size: 1 << 24,
    emit,
};

/// Rounds (barrier-delimited sections) per run.
pub const ROUNDS: u64 = 8;

fn emit(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let np = p.threads;
    let n = p.size;
    // Each slice starts on its own page, one page past the previous slice's end: no line is
    // shared, and every thread sees the same alignment.
    let stride = (n * 8).next_multiple_of(4096) + 4096;
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("jacobi_round", "jacobi.c");
    let top = a.label();
    a.bind(top);
    let ld = a.load(14, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let ld2 = a.load(14, reg::XMM0 + 1, &[reg::RSI, reg::RCX], 8);
    let add = a.op(
        14,
        OpClass::FpAdd,
        &[reg::XMM0],
        &[reg::XMM0, reg::XMM0 + 1],
    );
    let mul = a.op(14, OpClass::FpMul, &[reg::XMM0], &[reg::XMM0]);
    let st = a.store(15, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let inc = a.op(13, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let cmp = a.op(13, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let br = a.branch(13, BranchKind::Conditional, Some(top), &[reg::FLAGS]);
    let bar = a.op(18, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    a.finish(w)?;

    let mut em = Em { w };
    frame.begin(&mut em, np)?;
    for _round in 0..ROUNDS {
        for t in 0..np {
            let base = DATA_BASE + t as u64 * stride;
            for i in 0..n {
                let e = base + i * 8;
                let nb = base + ((i + 1) % n) * 8;
                em.m(t, ld, &[e])?;
                em.m(t, ld2, &[nb])?;
                em.x(t, add)?;
                em.x(t, mul)?;
                em.m(t, st, &[e])?;
                em.x(t, inc)?;
                em.x(t, cmp)?;
                em.br(t, br, i + 1 < n)?;
            }
        }
        Frame::barrier(&mut em, np, bar, super::BARRIER_BASE)?;
    }
    frame.end(&mut em, np)
}
