//! `lu-owner`: a blocked LU-like sweep in which block (I, J) belongs to thread (I + J) mod P
//! (SPLASH-2 LU's ownership scheme, LIME Fig. 6). At step k every thread scans all trailing
//! blocks, tests ownership, and updates only its own; since the trailing square holds a
//! different number of blocks for each residue of (I + J) mod P, threads get unequal work.
//! The imbalance is introduced by the ownership-test branch at `lu.c:52`: the threads that take
//! its fall-through (owned) edge more often arrive late at the barrier at `lu.c:60`.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, OpClass};

/// Block edge in elements.
pub const B: u64 = 8;

pub(super) const WORKLOAD: Workload = Workload {
    name: "lu-owner",
    summary: "blocked LU-like sweep; block (I,J) owned by thread (I+J) mod P",
    shows: "control-flow imbalance introduced at the ownership test (lu.c:52, LIME Fig. 6); \
            threads owning more trailing blocks arrive late at the barrier at lu.c:60",
    size_meaning: "matrix edge in 8x8 blocks",
    work_per_thread: false,
    default_size: 16,
    max_size: 128,
    emit,
};

/// Number of update-block visits of thread `t` over the whole run: the analytic answer for
/// how much work each thread gets (used by tests).
pub fn owned_updates(n: u64, p: u64, t: u64) -> u64 {
    let mut c = 0;
    for k in 0..n.saturating_sub(1) {
        for i in k + 1..n {
            for j in k + 1..n {
                c += ((i + j) % p == t) as u64;
            }
        }
    }
    c
}

fn emit(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let n = p.size;
    let np = p.threads;
    let nrow = n * B;
    let at = |r: u64, c: u64| DATA_BASE + (r * nrow + c) * 8;
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("lu_worker", "lu.c");
    let k_top = a.label();
    let skip_diag = a.label();
    let diag_top = a.label();
    let i_top = a.label();
    let j_top = a.label();
    let upd_top = a.label();
    let skip_blk = a.label();
    a.bind(k_top);
    let k_set = a.op(36, OpClass::IntAlu, &[reg::RBX], &[reg::RBX]);
    let d_cmp = a.op(38, OpClass::IntAlu, &[reg::FLAGS], &[reg::RBX, reg::RDI]);
    let d_br = a.branch(38, BranchKind::Conditional, Some(skip_diag), &[reg::FLAGS]);
    a.bind(diag_top);
    let d_ld = a.load(40, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let d_div = a.op(
        40,
        OpClass::FpDiv,
        &[reg::XMM0],
        &[reg::XMM0, reg::XMM0 + 1],
    );
    let d_st = a.store(41, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let d_inc = a.op(39, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let d_cmp2 = a.op(39, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let d_loop = a.branch(39, BranchKind::Conditional, Some(diag_top), &[reg::FLAGS]);
    a.bind(skip_diag);
    let bar1 = a.op(45, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    let i_set = a.op(50, OpClass::IntAlu, &[reg::R8], &[reg::RBX]);
    a.bind(i_top);
    let j_set = a.op(51, OpClass::IntAlu, &[reg::R8 + 1], &[reg::RBX]);
    a.bind(j_top);
    let own_add = a.op(52, OpClass::IntAlu, &[reg::RAX], &[reg::R8, reg::R8 + 1]);
    let own_mod = a.op(52, OpClass::IntDiv, &[reg::RDX], &[reg::RAX, reg::RBP]);
    let own_cmp = a.op(52, OpClass::IntAlu, &[reg::FLAGS], &[reg::RDX, reg::RDI]);
    let own_br = a.branch(52, BranchKind::Conditional, Some(skip_blk), &[reg::FLAGS]);
    a.bind(upd_top);
    let u_ik = a.load(54, reg::XMM0 + 2, &[reg::R8 + 2], 8);
    let u_kj = a.load(54, reg::XMM0 + 3, &[reg::R8 + 3], 8);
    let u_ij = a.load(55, reg::XMM0 + 4, &[reg::R8 + 4], 8);
    let u_mul = a.op(
        55,
        OpClass::FpMul,
        &[reg::XMM0 + 2],
        &[reg::XMM0 + 2, reg::XMM0 + 3],
    );
    let u_sub = a.op(
        55,
        OpClass::FpAdd,
        &[reg::XMM0 + 4],
        &[reg::XMM0 + 4, reg::XMM0 + 2],
    );
    let u_st = a.store(56, reg::XMM0 + 4, &[reg::R8 + 4], 8);
    let u_inc = a.op(53, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let u_cmp = a.op(53, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let u_loop = a.branch(53, BranchKind::Conditional, Some(upd_top), &[reg::FLAGS]);
    a.bind(skip_blk);
    let j_inc = a.op(51, OpClass::IntAlu, &[reg::R8 + 1], &[reg::R8 + 1]);
    let j_cmp = a.op(51, OpClass::IntAlu, &[reg::FLAGS], &[reg::R8 + 1]);
    let j_loop = a.branch(51, BranchKind::Conditional, Some(j_top), &[reg::FLAGS]);
    let i_inc = a.op(50, OpClass::IntAlu, &[reg::R8], &[reg::R8]);
    let i_cmp = a.op(50, OpClass::IntAlu, &[reg::FLAGS], &[reg::R8]);
    let i_loop = a.branch(50, BranchKind::Conditional, Some(i_top), &[reg::FLAGS]);
    let bar2 = a.op(60, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    let k_inc = a.op(35, OpClass::IntAlu, &[reg::RBX], &[reg::RBX]);
    let k_cmp = a.op(35, OpClass::IntAlu, &[reg::FLAGS], &[reg::RBX]);
    let k_loop = a.branch(35, BranchKind::Conditional, Some(k_top), &[reg::FLAGS]);
    a.finish(w)?;

    let mut em = Em { w };
    frame.begin(&mut em, np)?;
    let steps = n.saturating_sub(1);
    for k in 0..steps {
        let diag_owner = (2 * k) % np as u64;
        for t in 0..np {
            em.x(t, k_set)?;
            em.x(t, d_cmp)?;
            let owner = t as u64 == diag_owner;
            em.br(t, d_br, !owner)?;
            if owner {
                for e in 0..B * B {
                    let addr = at(k * B + e / B, k * B + e % B);
                    em.m(t, d_ld, &[addr])?;
                    em.x(t, d_div)?;
                    em.m(t, d_st, &[addr])?;
                    em.x(t, d_inc)?;
                    em.x(t, d_cmp2)?;
                    em.br(t, d_loop, e + 1 < B * B)?;
                }
            }
        }
        Frame::barrier(&mut em, np, bar1, super::BARRIER_BASE)?;
        for t in 0..np {
            em.x(t, i_set)?;
            for bi in k + 1..n {
                em.x(t, j_set)?;
                for bj in k + 1..n {
                    em.x(t, own_add)?;
                    em.x(t, own_mod)?;
                    em.x(t, own_cmp)?;
                    let mine = (bi + bj) % np as u64 == t as u64;
                    em.br(t, own_br, !mine)?;
                    if mine {
                        for e in 0..B * B {
                            let (i, j) = (e / B, e % B);
                            em.m(t, u_ik, &[at(bi * B + i, k * B + j)])?;
                            em.m(t, u_kj, &[at(k * B + i, bj * B + j)])?;
                            let ij = at(bi * B + i, bj * B + j);
                            em.m(t, u_ij, &[ij])?;
                            em.x(t, u_mul)?;
                            em.x(t, u_sub)?;
                            em.m(t, u_st, &[ij])?;
                            em.x(t, u_inc)?;
                            em.x(t, u_cmp)?;
                            em.br(t, u_loop, e + 1 < B * B)?;
                        }
                    }
                    em.x(t, j_inc)?;
                    em.x(t, j_cmp)?;
                    em.br(t, j_loop, bj + 1 < n)?;
                }
                em.x(t, i_inc)?;
                em.x(t, i_cmp)?;
                em.br(t, i_loop, bi + 1 < n)?;
            }
        }
        Frame::barrier(&mut em, np, bar2, super::BARRIER_BASE)?;
        for t in 0..np {
            em.x(t, k_inc)?;
            em.x(t, k_cmp)?;
            em.br(t, k_loop, k + 1 < steps)?;
        }
    }
    frame.end(&mut em, np)
}
