//! Microkernels whose timing has an analytic answer, for validating the core and memory
//! models: each thread runs the same kernel on private data (usually with one thread).
//!
//! * `stream` — triad `a[i] = b[i] + s*c[i]` over 8-byte elements: 2 loads and 1 store per
//!   iteration, one new line per array every 8 iterations; bandwidth-bound once the arrays
//!   exceed the caches.
//! * `pointer-chase` — one load per step whose address is the previous load's value, over a
//!   single random cycle of 64-byte-spaced nodes (Sattolo's algorithm): no memory-level
//!   parallelism, so time ≈ steps × load latency.
//! * `dep-chain` — 8 dependent integer adds per iteration: IPC → 1 / int-alu latency.
//! * `indep-alu` — 8 adds on 8 different registers per iteration: IPC → dispatch width.
//! * `random-branch` — a conditional branch taken with probability ½ from a seeded random
//!   sequence (its bits read from a 4 KiB table that stays in L1): no predictor beats ~50 %
//!   mispredictions on it, and each costs the front-end depth plus a short resolution.

use super::asm::{Asm, Em, reg};
use super::{DATA_BASE, Frame, Params, Rng, Workload};
use crate::error::TraceError;
use crate::format::writer::TraceWriter;
use crate::model::{BranchKind, OpClass};

pub(super) const STREAM: Workload = Workload {
    name: "stream",
    summary: "STREAM triad a[i] = b[i] + s*c[i] on private slices",
    shows: "bandwidth-bound streaming: per thread 2 loads + 1 store per element, one new \
            64-byte line per array every 8 elements (stream.c:20)",
    size_meaning: "elements per thread",
    work_per_thread: true,
    default_size: 32768,
    max_size: 1 << 28,
    emit: gen_stream,
};

pub(super) const POINTER_CHASE: Workload = Workload {
    name: "pointer-chase",
    summary: "dependent loads around one random cycle of 64-byte-spaced nodes",
    shows: "latency-bound memory: every load depends on the previous one (chase.c:15), so \
            time = steps x load latency with no overlap",
    size_meaning: "nodes per thread (each visited once)",
    work_per_thread: true,
    default_size: 16384,
    max_size: 1 << 26,
    emit: gen_chase,
};

pub(super) const DEP_CHAIN: Workload = Workload {
    name: "dep-chain",
    summary: "8 dependent integer adds per loop iteration",
    shows: "dependence-bound execution: IPC = 1 / int-alu latency (dep.c:12)",
    size_meaning: "loop iterations per thread",
    work_per_thread: true,
    default_size: 100000,
    max_size: 1 << 28,
    emit: gen_dep,
};

pub(super) const INDEP_ALU: Workload = Workload {
    name: "indep-alu",
    summary: "8 independent integer adds per loop iteration",
    shows: "dispatch-bound execution: IPC = dispatch width (indep.c:12)",
    size_meaning: "loop iterations per thread",
    work_per_thread: true,
    default_size: 100000,
    max_size: 1 << 28,
    emit: gen_indep,
};

pub(super) const RANDOM_BRANCH: Workload = Workload {
    name: "random-branch",
    summary: "a branch taken with probability 1/2 from a seeded random sequence",
    shows: "branch misprediction cost: ~50 % of the branch at branch.c:16 mispredict \
            whatever the predictor",
    size_meaning: "loop iterations per thread",
    work_per_thread: true,
    default_size: 100000,
    max_size: 1 << 28,
    emit: gen_branch,
};

/// Bytes between consecutive threads' private data.
const SLICE: u64 = 1 << 32;

fn loop_tail(a: &mut Asm, line: u32, top: super::asm::Label) -> [u32; 3] {
    let inc = a.op(line, OpClass::IntAlu, &[reg::RCX], &[reg::RCX]);
    let cmp = a.op(line, OpClass::IntAlu, &[reg::FLAGS], &[reg::RCX]);
    let br = a.branch(line, BranchKind::Conditional, Some(top), &[reg::FLAGS]);
    [inc, cmp, br]
}

fn tail(em: &mut Em, t: u32, s: [u32; 3], more: bool) -> Result<(), TraceError> {
    em.x(t, s[0])?;
    em.x(t, s[1])?;
    em.br(t, s[2], more)
}

fn gen_stream(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("triad", "stream.c");
    let top = a.label();
    a.bind(top);
    let lb = a.load(20, reg::XMM0, &[reg::RSI, reg::RCX], 8);
    let lc = a.load(20, reg::XMM0 + 1, &[reg::RDX, reg::RCX], 8);
    let mul = a.op(
        20,
        OpClass::FpMul,
        &[reg::XMM0 + 1],
        &[reg::XMM0 + 1, reg::XMM0 + 3],
    );
    let add = a.op(
        20,
        OpClass::FpAdd,
        &[reg::XMM0],
        &[reg::XMM0, reg::XMM0 + 1],
    );
    let st = a.store(20, reg::XMM0, &[reg::RDI, reg::RCX], 8);
    let lt = loop_tail(&mut a, 19, top);
    a.finish(w)?;
    let mut em = Em { w };
    frame.begin(&mut em, p.threads)?;
    for t in 0..p.threads {
        let base = DATA_BASE + t as u64 * SLICE;
        let (aa, bb, cc) = (base, base + (SLICE / 4), base + (SLICE / 2));
        for i in 0..p.size {
            em.m(t, lb, &[bb + 8 * i])?;
            em.m(t, lc, &[cc + 8 * i])?;
            em.x(t, mul)?;
            em.x(t, add)?;
            em.m(t, st, &[aa + 8 * i])?;
            tail(&mut em, t, lt, i + 1 < p.size)?;
        }
    }
    frame.end(&mut em, p.threads)
}

/// Node order of thread `t`'s chase: a single cycle over `n` nodes (Sattolo's algorithm).
pub fn chase_cycle(n: u64, seed: u64, t: u32) -> Vec<u64> {
    let mut next: Vec<u64> = (0..n).collect();
    let mut rng = Rng::new(seed, t as u64);
    for i in (1..n as usize).rev() {
        let j = rng.below(i as u64) as usize;
        next.swap(i, j);
    }
    next
}

fn gen_chase(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("chase", "chase.c");
    let top = a.label();
    a.bind(top);
    let ld = a.load(15, reg::RAX, &[reg::RAX], 8);
    let lt = loop_tail(&mut a, 14, top);
    a.finish(w)?;
    let mut em = Em { w };
    frame.begin(&mut em, p.threads)?;
    for t in 0..p.threads {
        let base = DATA_BASE + t as u64 * SLICE;
        let next = chase_cycle(p.size, p.seed, t);
        let mut node = 0u64;
        for i in 0..p.size {
            em.m(t, ld, &[base + node * 64])?;
            node = next[node as usize];
            tail(&mut em, t, lt, i + 1 < p.size)?;
        }
    }
    frame.end(&mut em, p.threads)
}

fn gen_alu(p: &Params, w: &mut TraceWriter, dependent: bool) -> Result<(), TraceError> {
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    let file = if dependent { "dep.c" } else { "indep.c" };
    a.func(if dependent { "dep_chain" } else { "indep_alu" }, file);
    let top = a.label();
    a.bind(top);
    let ops: Vec<u32> = (0..8u8)
        .map(|i| {
            let r = if dependent { reg::RAX } else { reg::R8 + i };
            a.op(12, OpClass::IntAlu, &[r], &[r])
        })
        .collect();
    let lt = loop_tail(&mut a, 11, top);
    a.finish(w)?;
    let mut em = Em { w };
    frame.begin(&mut em, p.threads)?;
    for t in 0..p.threads {
        for i in 0..p.size {
            for &s in &ops {
                em.x(t, s)?;
            }
            tail(&mut em, t, lt, i + 1 < p.size)?;
        }
    }
    frame.end(&mut em, p.threads)
}

fn gen_dep(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    gen_alu(p, w, true)
}

fn gen_indep(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    gen_alu(p, w, false)
}

fn gen_branch(p: &Params, w: &mut TraceWriter) -> Result<(), TraceError> {
    let mut a = Asm::new();
    let frame = Frame::code(&mut a);
    a.func("random_branch", "branch.c");
    let top = a.label();
    let then = a.label();
    let join = a.label();
    a.bind(top);
    let ld = a.load(15, reg::RAX, &[reg::RSI, reg::RCX], 8);
    let test = a.op(16, OpClass::IntAlu, &[reg::FLAGS], &[reg::RAX]);
    let br = a.branch(16, BranchKind::Conditional, Some(then), &[reg::FLAGS]);
    let else_op = a.op(17, OpClass::IntAlu, &[reg::RBX], &[reg::RBX]);
    let jmp = a.branch(17, BranchKind::DirectJump, Some(join), &[]);
    a.bind(then);
    let then_op = a.op(18, OpClass::IntAlu, &[reg::RDX], &[reg::RDX]);
    a.bind(join);
    let lt = loop_tail(&mut a, 14, top);
    a.finish(w)?;
    let mut em = Em { w };
    frame.begin(&mut em, p.threads)?;
    for t in 0..p.threads {
        let base = DATA_BASE + t as u64 * SLICE;
        let mut rng = Rng::new(p.seed, t as u64);
        for i in 0..p.size {
            // The random bits are read from a 4 KiB table that stays in L1, so the branch
            // resolves after a short L1-hit chain.
            em.m(t, ld, &[base + 8 * (i % 512)])?;
            em.x(t, test)?;
            let taken = rng.next_u64() & 1 == 1;
            em.br(t, br, taken)?;
            if taken {
                em.x(t, then_op)?;
            } else {
                em.x(t, else_op)?;
                em.x(t, jmp)?;
            }
            tail(&mut em, t, lt, i + 1 < p.size)?;
        }
    }
    frame.end(&mut em, p.threads)
}
