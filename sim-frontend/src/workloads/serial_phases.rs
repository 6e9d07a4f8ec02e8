//! `serial-phases`: rounds of a serial phase (thread 0 alone, `phases.c:21`) followed by a
//! parallel phase (every thread, `phases.c:29`). The serial loop runs P times as many
//! iterations as each thread's parallel loop, so both blocks execute equally often in total —
//! yet the serial block runs with one thread while the parallel one shares the machine with
//! P − 1 others. A parallelism-weighted ranking (ParaShares Fig. 1) puts the serial block
//! first; a raw execution count cannot tell them apart.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, OpClass};

/// Serial + parallel rounds.
pub const ROUNDS: u64 = 4;

pub(super) const WORKLOAD: Workload = Workload {
    name: "serial-phases",
    summary: "serial phases (thread 0) alternating with parallel phases (all threads)",
    shows: "parallelism-weighted block ranks differ from raw counts (ParaShares Fig. 1): the \
            serial block phases.c:21 and the parallel block phases.c:29 execute equally often, \
            but the serial one runs alone",
    size_meaning: "parallel-loop iterations per thread per round (the serial loop runs threads x size)",
    work_per_thread: true,
    default_size: 2048,
    max_size: 1 << 24,
    emit,
};

fn emit(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let np = p.threads;
    let kp = p.size;
    let ks = kp * np as u64;
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("phases_worker", "phases.c");
    let r_top = a.label();
    let skip = a.label();
    let s_top = a.label();
    let p_top = a.label();
    a.bind(r_top);
    let tid_cmp = a.op(19, OpClass::IntAlu, &[reg::FLAGS], &[reg::RDI]);
    let tid_br = a.branch(19, BranchKind::Conditional, Some(skip), &[reg::FLAGS]);
    a.bind(s_top);
    let s_ld = a.load(21, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let s_mul = a.op(
        21,
        OpClass::FpMul,
        &[reg::XMM0],
        &[reg::XMM0, reg::XMM0 + 1],
    );
    let s_st = a.store(22, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let s_inc = a.op(20, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let s_cmp = a.op(20, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let s_br = a.branch(20, BranchKind::Conditional, Some(s_top), &[reg::FLAGS]);
    a.bind(skip);
    let bar_a = a.op(24, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    a.bind(p_top);
    let p_ld = a.load(29, reg::XMM0 + 2, &[reg::RDX, reg::RCX], 8);
    let p_add = a.op(
        29,
        OpClass::FpAdd,
        &[reg::XMM0 + 2],
        &[reg::XMM0 + 2, reg::XMM0 + 1],
    );
    let p_st = a.store(30, reg::XMM0 + 2, &[reg::RDX, reg::RCX], 8);
    let p_inc = a.op(28, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let p_cmp = a.op(28, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let p_br = a.branch(28, BranchKind::Conditional, Some(p_top), &[reg::FLAGS]);
    let bar_b = a.op(32, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    let r_inc = a.op(18, OpClass::IntAlu, &[reg::RBX], &[reg::RBX]);
    let r_cmp = a.op(18, OpClass::IntAlu, &[reg::FLAGS], &[reg::RBX]);
    let r_br = a.branch(18, BranchKind::Conditional, Some(r_top), &[reg::FLAGS]);
    a.finish(w)?;

    let serial = DATA_BASE;
    let par = DATA_BASE + (1 << 30);
    let mut em = Em { w };
    frame.begin(&mut em, np)?;
    for r in 0..ROUNDS {
        for t in 0..np {
            em.x(t, tid_cmp)?;
            em.br(t, tid_br, t != 0)?;
        }
        for i in 0..ks {
            em.m(0, s_ld, &[serial + i * 8])?;
            em.x(0, s_mul)?;
            em.m(0, s_st, &[serial + i * 8])?;
            em.x(0, s_inc)?;
            em.x(0, s_cmp)?;
            em.br(0, s_br, i + 1 < ks)?;
        }
        Frame::barrier(&mut em, np, bar_a, super::BARRIER_BASE)?;
        for t in 0..np {
            let base = par + t as u64 * kp * 8;
            for i in 0..kp {
                em.m(t, p_ld, &[base + i * 8])?;
                em.x(t, p_add)?;
                em.m(t, p_st, &[base + i * 8])?;
                em.x(t, p_inc)?;
                em.x(t, p_cmp)?;
                em.br(t, p_br, i + 1 < kp)?;
            }
        }
        Frame::barrier(&mut em, np, bar_b, super::BARRIER_BASE)?;
        for t in 0..np {
            em.x(t, r_inc)?;
            em.x(t, r_cmp)?;
            em.br(t, r_br, r + 1 < ROUNDS)?;
        }
    }
    frame.end(&mut em, np)
}
