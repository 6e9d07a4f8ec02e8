//! `lock-contention`: each thread alternates private work (`lock.c:20`) with a call to
//! `critical_update`, which takes one global mutex, updates a shared counter and releases it
//! (`lock.c:10–13`). The critical section is a quarter of the private work, so from about
//! five threads on the lock is the bottleneck and time shifts into `sync-crit-sect`.
//! It is also the workload that exercises calls and returns in the trace.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, Marker, OpClass, Order, Spin};

/// Register-only instructions of private work per iteration.
pub const PRIVATE_OPS: usize = 32;
/// Register-only instructions inside the critical section besides the update.
pub const CRITICAL_OPS: usize = 8;
/// The mutex's address.
pub const LOCK_ADDR: u64 = 0x60_1000;

pub(super) const WORKLOAD: Workload = Workload {
    name: "lock-contention",
    summary: "private work alternating with a short critical section under one mutex",
    shows: "serialization on a lock: time moves into sync-crit-sect as threads are added; \
            the mutex is taken at lock.c:10",
    size_meaning: "critical sections per thread",
    work_per_thread: true,
    default_size: 2000,
    max_size: 1 << 24,
    emit,
};

fn emit(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let np = p.threads;
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("critical_update", "lock.c");
    let crit = a.label();
    a.bind(crit);
    let lock = a.op(10, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    let ld = a.load(11, reg::RAX, &[reg::RSI], 8);
    let add = a.op(11, OpClass::IntAlu, &[reg::RAX], &[reg::RAX]);
    let st = a.store(11, reg::RAX, &[reg::RSI], 8);
    let work: Vec<u32> = (0..CRITICAL_OPS)
        .map(|i| {
            a.op(
                12,
                OpClass::IntAlu,
                &[reg::R8 + (i % 4) as u8],
                &[reg::R8 + (i % 4) as u8],
            )
        })
        .collect();
    let unlock = a.op(13, OpClass::Other, &[reg::RAX], &[reg::RDI]);
    let ret = a.branch(14, BranchKind::Return, None, &[reg::RSP]);
    a.func("lock_worker", "lock.c");
    let top = a.label();
    a.bind(top);
    let private: Vec<u32> = (0..PRIVATE_OPS)
        .map(|i| {
            a.op(
                20,
                OpClass::IntAlu,
                &[reg::RBX + (i % 2) as u8],
                &[reg::RBX + (i % 2) as u8],
            )
        })
        .collect();
    let call = a.branch(21, BranchKind::DirectCall, Some(crit), &[reg::RSP]);
    let inc = a.op(19, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let cmp = a.op(19, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let br = a.branch(19, BranchKind::Conditional, Some(top), &[reg::FLAGS]);
    a.finish(w)?;

    let shared = DATA_BASE;
    let mut em = Em { w };
    frame.begin(&mut em, np)?;
    for t in 0..np {
        let sp = 0x7fff_0000_0000 - (t as u64) * (1 << 20) - 8;
        for i in 0..p.size {
            for &s in &private {
                em.x(t, s)?;
            }
            em.m(t, call, &[sp])?;
            em.x(t, lock)?;
            em.mark(
                t,
                Marker::MutexLock {
                    addr: LOCK_ADDR,
                    order: Order::SIM,
                    spin: Spin::NONE,
                    call: false,
                },
            )?;
            em.m(t, ld, &[shared])?;
            em.x(t, add)?;
            em.m(t, st, &[shared])?;
            for &s in &work {
                em.x(t, s)?;
            }
            em.x(t, unlock)?;
            em.mark(
                t,
                Marker::MutexUnlock {
                    addr: LOCK_ADDR,
                    plain: false,
                },
            )?;
            em.m(t, ret, &[sp])?;
            em.x(t, inc)?;
            em.x(t, cmp)?;
            em.br(t, br, i + 1 < p.size)?;
        }
    }
    frame.end(&mut em, np)
}
