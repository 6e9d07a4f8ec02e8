//! The record decoder: turns one chunk's payload into [`Record`]s. This is the hot loop of
//! trace reading (≥ 100 M records/s is the target), so it works on flat arrays only — the
//! static index of each instruction comes from the previous one's fall-through or target
//! entry, never from hashing a PC — and appends to a reused [`Batch`] without allocating
//! per record.

use super::{
    DecodeEntry, FlowTables, H_DYN_MEM, H_HIT_SHIFT, H_MARKER, H_TAKEN, HIT_BITS, PRED_SLOTS,
    Predictor, SEM_WAKES_BIT, code, get_varint, unzigzag,
};
use crate::model::{Batch, BranchKind, Inst, Marker, MemAccess, NO_SIDX, Order, Record, Spin};

/// Decoding state carried from one chunk of a thread to the next.
#[derive(Clone)]
pub struct StreamState {
    /// Static index the control flow implies for the next instruction.
    pub next: u32,
    /// Address predictor (mirrors the writer's).
    pub pred: Predictor,
}

impl Default for StreamState {
    fn default() -> Self {
        StreamState {
            next: NO_SIDX,
            pred: Predictor::default(),
        }
    }
}

/// A decoding failure: byte position within the payload and what was wrong.
pub type Fail = (usize, String);

#[inline(always)]
fn varint(p: &[u8], pos: &mut usize, what: &str) -> Result<u64, Fail> {
    let at = *pos;
    // Fast path: one byte.
    if let Some(&b) = p.get(at)
        && b < 0x80
    {
        *pos = at + 1;
        return Ok(b as u64);
    }
    get_varint(p, pos).ok_or_else(|| (at, format!("bad or cut varint ({what})")))
}

/// A recorded order read from the stream.
#[cold]
fn order(v: u64, at: usize) -> Result<Order, Fail> {
    Order::decode(v).ok_or_else(|| (at, format!("order {v} out of range")))
}

/// An order field that may be absent: 0 for none ([`Order::SIM`]), else an order plus one.
fn order_or_sim(v: u64, at: usize) -> Result<Order, Fail> {
    match v {
        0 => Ok(Order::SIM),
        v => order(v - 1, at),
    }
}

/// Decodes `payload` from byte `*cursor` into `out` (appending) until its end or until
/// `max_records` records were appended, leaves `*cursor` where it stopped (a record
/// boundary) and returns how many of the records were instructions. A caller decodes a chunk
/// a few hundred records at a time so that the records it reads next are still in the host's
/// L1 cache (a whole chunk's records are megabytes). `limits` bound the sizes a marker may
/// name (thread ids, section names) so that wrong data is an error here, not later.
pub fn decode_payload(
    flow: &FlowTables,
    st: &mut StreamState,
    payload: &[u8],
    cursor: &mut usize,
    max_records: usize,
    limits: &Limits,
    out: &mut Batch,
) -> Result<u64, Fail> {
    let entries: &[DecodeEntry] = &flow.entries;
    let mut pos = *cursor;
    let mut insts = 0u64;
    let stop = out.records.len().saturating_add(max_records);
    while pos < payload.len() && out.records.len() < stop {
        let at = pos;
        let h = payload[pos];
        pos += 1;
        if h & H_MARKER == 0 {
            let sidx = st.next;
            let Some(e) = entries.get(sidx as usize) else {
                return Err((at, "instruction record with no known current instruction (the previous one implies no successor, and no jump precedes it)".into()));
            };
            let mem_start = out.mem.len() as u32;
            if h & H_DYN_MEM != 0 {
                if h & !(H_DYN_MEM | H_TAKEN) != 0 {
                    return Err((
                        at,
                        format!(
                            "bad instruction header {h:#04x}: hit bits with an explicit operand list"
                        ),
                    ));
                }
                let n = varint(payload, &mut pos, "operand count")?;
                if n > (payload.len() - pos) as u64 / 3 {
                    return Err((at, format!("operand count {n} larger than the chunk")));
                }
                for _ in 0..n {
                    let (Some(&size), Some(&w)) = (payload.get(pos), payload.get(pos + 1)) else {
                        return Err((pos, "chunk ends inside a memory operand".into()));
                    };
                    if size == 0 || w > 1 {
                        return Err((
                            pos,
                            format!("bad memory operand (size {size}, write flag {w})"),
                        ));
                    }
                    pos += 2;
                    let d = unzigzag(varint(payload, &mut pos, "address delta")?);
                    let addr = st.pred.dyn_last.wrapping_add(d as u64);
                    st.pred.dyn_last = addr;
                    st.pred.last = addr;
                    out.mem.push(MemAccess {
                        addr,
                        size,
                        write: w == 1,
                    });
                }
            } else {
                let n = e.n_mem as usize;
                let hit_mask = ((1u32 << n.min(HIT_BITS)) - 1) << H_HIT_SHIFT;
                if (h as u32) & !(hit_mask | H_TAKEN as u32) != 0 {
                    return Err((
                        at,
                        format!(
                            "bad instruction header {h:#04x} for an instruction with {n} memory operands"
                        ),
                    ));
                }
                let base = e.mem_base as usize;
                for i in 0..n {
                    let slot = &mut st.pred.slots[(base + i) & (PRED_SLOTS - 1)];
                    let predicted = slot.0.wrapping_add(slot.1);
                    let addr = if i < HIT_BITS && (h >> (H_HIT_SHIFT + i as u32)) & 1 != 0 {
                        predicted
                    } else {
                        let z = varint(payload, &mut pos, "address delta")?;
                        let a = if z == 0 && i < HIT_BITS {
                            st.pred.last
                        } else {
                            predicted.wrapping_add(unzigzag(z) as u64)
                        };
                        slot.1 = a.wrapping_sub(slot.0);
                        a
                    };
                    slot.0 = addr;
                    st.pred.last = addr;
                    let spec = flow.specs[base + i];
                    out.mem.push(MemAccess {
                        addr,
                        size: spec.size,
                        write: spec.write,
                    });
                }
            }
            let taken_bit = h & H_TAKEN != 0;
            let (taken, next) = match e.branch {
                BranchKind::None => {
                    if taken_bit {
                        return Err((at, "taken bit on a non-branch instruction".into()));
                    }
                    (false, e.fallthrough)
                }
                BranchKind::Conditional => {
                    if taken_bit {
                        // A target outside the table decodes as "successor unknown": the
                        // writer then put a jump before the next instruction.
                        (true, e.target)
                    } else {
                        (false, e.fallthrough)
                    }
                }
                BranchKind::DirectJump | BranchKind::DirectCall => {
                    if taken_bit {
                        return Err((at, "taken bit on an unconditional branch".into()));
                    }
                    (true, e.target)
                }
                BranchKind::IndirectJump | BranchKind::IndirectCall | BranchKind::Return => {
                    if taken_bit {
                        return Err((at, "taken bit on an unconditional branch".into()));
                    }
                    let t = varint(payload, &mut pos, "indirect target")?;
                    if t > entries.len() as u64 {
                        return Err((at, format!("indirect target index {} out of range", t - 1)));
                    }
                    (true, if t == 0 { NO_SIDX } else { (t - 1) as u32 })
                }
            };
            st.next = next;
            insts += 1;
            if e.branch != BranchKind::None {
                out.branches.push(out.records.len() as u32);
            }
            out.records.push(Record::Inst(Inst {
                sidx,
                taken,
                next,
                mem_start,
                mem_len: out.mem.len() as u32 - mem_start,
            }));
        } else if let Some(m) = marker(
            h & !H_MARKER,
            at,
            payload,
            &mut pos,
            entries.len(),
            limits,
            st,
        )? {
            out.records.push(Record::Marker(m));
        }
    }
    *cursor = pos;
    Ok(insts)
}

/// Decodes the marker with code `c` whose header byte was at `at` and whose arguments start at
/// `*pos` (advanced past them); `None` for a jump, which only sets where the next instruction
/// is. Out of line: markers are rare, and inlined their decoding made the instruction path
/// keep its state on the stack.
#[inline(never)]
fn marker(
    c: u8,
    at: usize,
    payload: &[u8],
    pos: &mut usize,
    statics: usize,
    limits: &Limits,
    st: &mut StreamState,
) -> Result<Option<Marker>, Fail> {
    let mut arg = |what: &str| varint(payload, pos, what);
    Ok(Some(match c {
        code::THREAD_START => Marker::ThreadStart,
        code::THREAD_END => Marker::ThreadEnd,
        code::ROI_BEGIN => Marker::RoiBegin,
        code::ROI_END => Marker::RoiEnd,
        code::BARRIER | code::BARRIER_LEAD => {
            let id = arg("barrier id")?;
            let p = arg("barrier participants")?;
            if p == 0 || p > limits.max_participants {
                return Err((
                    at,
                    format!(
                        "barrier with {p} participants (trace has {} threads)",
                        limits.max_participants
                    ),
                ));
            }
            Marker::Barrier {
                id,
                participants: p as u32,
                lead: c == code::BARRIER_LEAD,
            }
        }
        code::MUTEX_LOCK => Marker::MutexLock {
            addr: arg("mutex address")?,
            order: Order::SIM,
            spin: Spin::NONE,
            call: false,
        },
        code::MUTEX_LOCK_ORDERED => Marker::MutexLock {
            addr: arg("mutex address")?,
            order: order(arg("lock order")?, at)?,
            spin: Spin::NONE,
            call: false,
        },
        code::MUTEX_LOCK_SPINNING => Marker::MutexLock {
            addr: arg("mutex address")?,
            order: order_or_sim(arg("lock order")?, at)?,
            spin: Spin::DEFAULT,
            call: false,
        },
        code::MUTEX_LOCK_CALL => Marker::MutexLock {
            addr: arg("mutex address")?,
            order: order_or_sim(arg("lock order")?, at)?,
            spin: match arg("spin")? {
                0 => Spin::NONE,
                1 => Spin::DEFAULT,
                v => {
                    let turns = (v - 2) / 2;
                    Spin {
                        turns: u32::try_from(turns).map_err(|_| {
                            (at, format!("spin of {turns} turns is more than 2^32 - 1"))
                        })?,
                        again: v % 2 == 1,
                    }
                }
            },
            call: true,
        },
        code::RW_LOCK => Marker::RwLock {
            addr: arg("lock address")?,
            order: order_or_sim(arg("lock order")?, at)?,
            write: match arg("write flag")? {
                0 => false,
                1 => true,
                v => return Err((at, format!("write flag {v} is neither 0 nor 1"))),
            },
        },
        code::SEM_WAIT => {
            let addr = arg("semaphore address")?;
            let init = u32::try_from(arg("initial value")?)
                .map_err(|_| (at, "semaphore initial value above 2^32 - 1".to_string()))?;
            Marker::SemWait { addr, init }
        }
        code::SEM_POST => {
            let addr = arg("semaphore address")?;
            let v = arg("initial value")?;
            if v >> SEM_WAKES_BIT > 1 {
                return Err((
                    at,
                    format!(
                        "semaphore post argument {v:#x}: above bit {SEM_WAKES_BIT} (the wake flag)"
                    ),
                ));
            }
            Marker::SemPost {
                addr,
                init: v as u32,
                wakes: v >> SEM_WAKES_BIT == 1,
            }
        }
        code::COND_WAIT_ORDERED => Marker::CondWait {
            cond: arg("condition address")?,
            mutex: arg("mutex address")?,
            wake: order(arg("wake order")?, at)?,
            relock: order(arg("relock order")?, at)?,
        },
        code::FUTEX_WAIT => Marker::FutexWait {
            addr: arg("futex address")?,
            wake: order(arg("wake order")?, at)?,
        },
        code::COND_READY => Marker::CondReady {
            cond: arg("condition address")?,
            wake: order(arg("wake order")?, at)?,
        },
        code::FUTEX_WAKE => Marker::FutexWake {
            addr: arg("futex address")?,
        },
        code::RELEASE => {
            let v = arg("release index")?;
            if v > Order::MAX_RELEASE as u64 {
                return Err((at, format!("release index {v} out of range")));
            }
            Marker::Release { index: v as u32 }
        }
        code::MUTEX_UNLOCK | code::MUTEX_UNLOCK_PLAIN => Marker::MutexUnlock {
            addr: arg("mutex address")?,
            plain: c == code::MUTEX_UNLOCK_PLAIN,
        },
        code::COND_WAIT => Marker::CondWait {
            cond: arg("condition address")?,
            mutex: arg("mutex address")?,
            wake: Order::SIM,
            relock: Order::SIM,
        },
        code::COND_SIGNAL => Marker::CondSignal {
            cond: arg("condition address")?,
        },
        code::COND_BROADCAST => Marker::CondBroadcast {
            cond: arg("condition address")?,
        },
        code::CREATE | code::JOIN => {
            let child = below(arg("child thread")?, limits.threads, at, |v, n| {
                format!("create/join names thread {v}, but the trace has {n} threads")
            })?;
            if c == code::CREATE {
                Marker::ThreadCreate { child }
            } else {
                Marker::ThreadJoin { child }
            }
        }
        code::SECTION_BEGIN | code::SECTION_END => {
            let name = below(arg("section name")?, limits.sections, at, |v, n| {
                format!("section name index {v} out of range ({n} names)")
            })?;
            if c == code::SECTION_BEGIN {
                Marker::SectionBegin { name }
            } else {
                Marker::SectionEnd { name }
            }
        }
        code::JUMP => {
            st.next = below(arg("jump target")?, statics as u64, at, |v, n| {
                format!("jump to static index {v}, but the table has {n}")
            })?;
            return Ok(None);
        }
        _ => return Err((at, format!("unknown marker code {c:#04x}"))),
    }))
}

/// A marker's index argument `v` (a thread, a section name, a static instruction), which
/// must be below `n`; otherwise the error `msg(v, n)` at the marker's header byte `at`.
fn below(v: u64, n: u64, at: usize, msg: impl FnOnce(u64, u64) -> String) -> Result<u32, Fail> {
    if v < n {
        // The bounds are the sizes of a trace's tables, which index with u32.
        Ok(v as u32)
    } else {
        Err((at, msg(v, n)))
    }
}

/// Bounds that markers are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Number of threads in the trace.
    pub threads: u64,
    /// Largest barrier participant count accepted.
    pub max_participants: u64,
    /// Number of section names.
    pub sections: u64,
}
