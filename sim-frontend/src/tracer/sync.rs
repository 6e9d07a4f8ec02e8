//! Turns the synchronization markers of a capture into the trace's markers with the traced
//! run's happens-before edges (docs/tracing.md, "How synchronization replays"). Replay keeps
//! the wake edges (which signal or futex wake released which waiter: a data dependence); a
//! mutex acquisition's edge only ranks it for breaking a lock-order cycle, since replay
//! arbitrates mutexes in simulated time.
//!
//! **Input.** Per thread, every raw marker in program order with its sequence number (the
//! plugin numbers all threads' markers from one counter at the moment they happen; a blocking
//! call's `Done` marker is the moment it returned).
//!
//! **Edges.** Each blocking operation gets the event that let it proceed in the traced run:
//! * a mutex acquisition (lock, successful trylock, the re-lock at the end of a condition
//!   wait, OpenMP `critical` and locks) follows the latest release of that mutex (unlock, or
//!   a condition wait's release) before the acquisition; a lock call that failed (EDEADLK of
//!   an error-checking mutex) took nothing and is left out;
//! * a condition wait waits for the earliest signal or broadcast of its condition between its
//!   start and its return that no earlier-woken waiter took (a signal wakes one waiter, a
//!   broadcast all); none (a timeout, a spurious wake) means no edge;
//! * a futex wait that returned 0 waits, alike, for a wake of its address in that interval.
//!
//! Every edge goes from a smaller to a larger sequence number, as does program order, so the
//! edges alone never form a cycle (mutexes arbitrated in simulated time can; the engine breaks
//! such a cycle by these ranks).
//! Barriers (pthread, OpenMP, and barriers built from a condition variable) are replayed by
//! their participant count: in the traced run every participant arrived before any left,
//! which keeps them consistent with the edges.
//!
//! **Barriers built by hand.** A condition variable that is only ever broadcast (never
//! signalled), where every broadcast woke at least one waiter and each broadcast's episode
//! (the broadcaster plus the waiters it woke) involves the same `n ≥ 2` distinct threads (a
//! team: a hand-off that wakes changing threads is no barrier), over at least two episodes
//! (one cannot tell a barrier from a hand-off to the one thread waiting), is the classic
//! mutex + condition + counter barrier: each episode becomes one barrier of `n` participants
//! (the waiters at their wait, the broadcaster at its broadcast, which names the episode).
//!
//! **Release indices.** Only releases some edge points at get a [`Marker::Release`]; they are
//! numbered densely in sequence order.

use std::collections::HashMap;

use super::raw::{LockSpin, Op, SEM_UNKNOWN};
use crate::model::{Marker, Order, Spin, channel_addr};

/// One raw marker of a thread, as read from the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawMark {
    /// The operation.
    pub op: Op,
    /// Its first three arguments.
    pub args: [u64; 3],
    /// Its sequence number.
    pub seq: u64,
}

/// Barrier ids of OpenMP regions: the fork, the implicit barrier at the end, explicit ones.
/// Region ids from the interposer are far above any user address; these stay distinct.
fn omp_barrier_id(region: u64, which: u64) -> u64 {
    region.wrapping_mul(4).wrapping_add(which)
}

/// A futex wait's return when the word no longer held the value it was to wait on.
const EAGAIN: i64 = 11;

/// Ids of the barrier episodes found in condition variables (above any user address).
const HAND_BARRIER: u64 = 0x6861_6e64_0000_0000;

/// What the converter writes for each raw marker.
#[derive(Debug, Default)]
pub struct Plan {
    /// Per thread, per raw marker: the range of `markers` to write at its place.
    pub starts: Vec<Vec<u32>>,
    /// The markers.
    pub markers: Vec<Marker>,
    /// Critical sections that found their condition true where the same code elsewhere
    /// waited, each now waiting for the section that made it so ([`Marker::CondReady`]).
    pub skipped_waits: u64,
    /// Hand-built barrier episodes recognised, and the conditions they came from.
    pub hand_barriers: u64,
    /// Condition variables recognised as barriers.
    pub hand_barrier_conds: usize,
    /// Reads of channels (pipes, eventfds, socket pairs) that got bytes.
    pub channel_reads: u64,
    /// Those of them that wait for the traced write that gave them their bytes.
    pub channel_waits: u64,
    /// Per thread and raw marker of a channel read that took bytes of several writes: the
    /// buffer's address, and for each write after the first the range of the buffer its
    /// bytes filled (offsets from its start) and the wait for it, to be written before the
    /// thread's first load in that range (docs/tracing.md).
    pub deferred: HashMap<(u32, u32), (u64, Vec<Deferred>)>,
}

/// A wait for one of a channel read's later writes ([`Plan::deferred`]): the range of the
/// read's buffer its bytes filled (offsets from the buffer's start, or addresses once the
/// conversion placed the buffer), and the wait.
pub type Deferred = (u64, u64, Marker);

impl Plan {
    /// The markers to write for raw marker `k` of thread `t`.
    pub fn at(&self, t: usize, k: usize) -> &[Marker] {
        let s = &self.starts[t];
        match (s.get(k), s.get(k + 1)) {
            (Some(&a), Some(&b)) => &self.markers[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// What pass 1 saw of one thread's critical sections on interposed mutexes, for the
/// condition waits they skipped ([`plan_with`]). Branches are the capture's static indices.
#[derive(Debug, Default, Clone)]
pub struct CondSections {
    /// Each critical section that ended in a condition wait: the wait's raw marker index and
    /// the last conditional branch the section ran before it in the code that took the lock
    /// (its predicate test), if any.
    pub waits: Vec<(u32, u32)>,
    /// Each critical section that ended in an unlock without a condition wait.
    pub checks: Vec<Check>,
}

impl CondSections {
    /// Names the markers by `map` (old index → new, `u32::MAX` where removed: futexlock.rs's
    /// `Locks::raw_index`), dropping the sections whose marker went.
    pub fn renumber(&mut self, map: &[u32]) {
        let to = |k: u32| map.get(k as usize).copied().filter(|&n| n != u32::MAX);
        self.waits
            .retain_mut(|w| to(w.0).map(|n| w.0 = n).is_some());
        self.checks
            .retain_mut(|c| to(c.mark).map(|n| c.mark = n).is_some());
    }
}

/// A critical section that did not wait ([`CondSections::checks`]): its lock's raw marker
/// index and the first [`Check::BRANCHES`] distinct conditional branches it ran in the code
/// that took the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// The lock's raw marker index.
    pub mark: u32,
    /// The branches; `n` of them are valid.
    pub branches: [u32; Check::BRANCHES],
    /// How many.
    pub n: u8,
}

impl Check {
    /// Branches kept per section: a predicate's test comes first after the lock (after, in
    /// C++, the lock call's error test).
    pub const BRANCHES: usize = 4;

    /// The valid branches.
    pub fn branches(&self) -> &[u32] {
        &self.branches[..self.n as usize]
    }
}

/// Pass 1's view of one thread's critical sections on interposed mutexes: it follows the
/// thread's markers and, inside a section, the conditional branches of the code that took
/// the lock (the shallowest call depth the section has reached: the lock call's own code,
/// run deeper, is forgotten when it returns), and gathers [`CondSections`].
#[derive(Debug, Default)]
pub struct SectionTracker {
    /// The sections the thread holds, innermost last.
    open: Vec<OpenSection>,
    /// A lock call not yet returned: its mutex and marker index.
    lock: Option<(u64, u32)>,
    /// What it found.
    pub found: CondSections,
}

/// A critical section being followed ([`SectionTracker`]).
#[derive(Debug)]
struct OpenSection {
    mutex: u64,
    /// The call depth of the code that took the lock, as far as seen.
    depth: u32,
    /// The last conditional branch at that depth.
    last: Option<u32>,
    check: Check,
}

impl SectionTracker {
    /// Sections followed at once; a thread holding more (locks it never releases) forgets
    /// its oldest.
    const MAX_OPEN: usize = 64;

    /// The thread runs static instruction `raw` at call depth `depth`.
    #[inline]
    pub fn exec(&mut self, depth: usize, raw: u32, conditional: bool) {
        let Some(s) = self.open.last_mut() else {
            return;
        };
        let depth = u32::try_from(depth).unwrap_or(u32::MAX);
        if depth < s.depth {
            s.depth = depth;
            s.last = None;
            s.check.n = 0;
        }
        if conditional && depth == s.depth {
            s.last = Some(raw);
            let n = s.check.n as usize;
            if n < Check::BRANCHES && !s.check.branches[..n].contains(&raw) {
                s.check.branches[n] = raw;
                s.check.n += 1;
            }
        }
    }

    /// The thread's raw marker `k`.
    pub fn marker(&mut self, k: u32, op: Op, args: &[u64]) {
        match op {
            Op::MutexLock => self.lock = Some((args[0], k)),
            Op::Done => {
                if let Some((mutex, mark)) = self.lock.take()
                    && acquired(args[0] as i64)
                {
                    if self.open.len() == Self::MAX_OPEN {
                        self.open.remove(0);
                    }
                    self.open.push(OpenSection {
                        mutex,
                        depth: u32::MAX,
                        last: None,
                        check: Check {
                            mark,
                            branches: [0; Check::BRANCHES],
                            n: 0,
                        },
                    });
                }
            }
            Op::CondWait => {
                self.lock = None;
                if let Some(i) = self.open.iter().rposition(|s| s.mutex == args[1]) {
                    let s = self.open.remove(i);
                    if let Some(b) = s.last {
                        self.found.waits.push((k, b));
                    }
                }
            }
            Op::MutexUnlock => {
                if let Some(i) = self.open.iter().rposition(|s| s.mutex == args[0]) {
                    let s = self.open.remove(i);
                    if s.check.n > 0 {
                        self.found.checks.push(s.check);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether a lock call that returned `ret` holds the mutex: on success, and on a robust
/// mutex's `EOWNERDEAD` (the previous owner died; the caller now owns it).
pub(super) fn acquired(ret: i64) -> bool {
    const EOWNERDEAD: i64 = 130;
    ret == 0 || ret == EOWNERDEAD
}

/// Where one event is: thread, raw marker index.
type At = (u32, u32);

/// One holder's acquisition or release of a mutex: sequence number, kind, where.
type MutexEvent = (u64, Ev, At);

/// A mutex event's kind, in [`plan_with`]'s sequence-ordered list.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A mutex is released (unlock; a condition wait's start).
    Release,
    /// A mutex is acquired (at the Done of a lock or of a condition wait).
    Acquire,
}

/// A blocking operation with its return (the `Done` that closed it).
#[derive(Clone, Copy)]
struct Blocking {
    done_seq: u64,
    ret: i64,
}

/// How [`plan`] maps the operations it does not order itself (thread ids, section names, the
/// region of interest): the converter's callback, returning the marker to write, if any.
pub type Simple<'a> = dyn FnMut(u32, Op, [u64; 3]) -> Option<Marker> + 'a;

/// Plans the markers of every thread. `marks[t]` are thread `t`'s raw markers in order;
/// `simple` translates the operations that need no edges.
pub fn plan(marks: &[Vec<RawMark>], simple: &mut Simple<'_>) -> Plan {
    plan_with(marks, &[], simple)
}

/// [`plan`], with what pass 1 saw of each thread's critical sections (`sections[t]`, or
/// none), for the condition waits they skipped.
pub fn plan_with(
    marks: &[Vec<RawMark>],
    sections: &[CondSections],
    simple: &mut Simple<'_>,
) -> Plan {
    // 1. Pair each blocking operation with the Done that closes it (the next one not taken by
    //    an inner operation), and gather the events by kind.
    // Per thread, per marker: the index of the Done that closes it (`NONE`: not a blocking
    // operation, or one that never returned). A flat array, as every marker is looked up.
    const NONE: u32 = u32::MAX;
    let mut closed: Vec<Vec<u32>> = Vec::with_capacity(marks.len());
    for ms in marks {
        let mut by = vec![NONE; ms.len()];
        let mut open: Vec<u32> = Vec::new();
        for (k, m) in ms.iter().enumerate() {
            match m.op {
                Op::Done => {
                    if let Some(o) = open.pop() {
                        by[o as usize] = k as u32;
                    }
                }
                Op::Join
                | Op::Barrier
                | Op::MutexLock
                | Op::RwRead
                | Op::RwWrite
                | Op::SemWait
                | Op::SemPost
                | Op::MutexUnlock
                | Op::CondWait
                | Op::CondSignal
                | Op::CondBroadcast
                | Op::OmpBarrier
                | Op::FutexWait => open.push(k as u32),
                _ => {}
            }
        }
        closed.push(by);
    }
    let blocking = |at: At| {
        let d = closed[at.0 as usize][at.1 as usize];
        (d != NONE).then(|| {
            let m = &marks[at.0 as usize][d as usize];
            Blocking {
                done_seq: m.seq,
                ret: m.args[0] as i64,
            }
        })
    };

    // 2. Every event in sequence order: (seq, kind, object, where).
    let mut mutex_events: Vec<(u64, Ev, u64, At)> = Vec::new();
    let mut signals: HashMap<u64, Vec<(u64, bool, At)>> = HashMap::new();
    let mut cond_waits: HashMap<u64, Vec<(u64, u64, At)>> = HashMap::new();
    let mut wakes: HashMap<u64, Vec<(u64, bool, At)>> = HashMap::new();
    let mut futex_waits: HashMap<u64, Vec<(u64, u64, At)>> = HashMap::new();
    // Futex waits that returned at once because the word had changed (EAGAIN), with the
    // sequence number of their thread's event before them: (that, their own, where).
    let mut futex_again: HashMap<u64, Vec<(u64, u64, At)>> = HashMap::new();
    // Each channel stream's reads and writes: (sequence number, bytes, where); a write's
    // number is the one it took as it began.
    let mut channel_writes: HashMap<u64, Vec<(u64, u64, At)>> = HashMap::new();
    let mut channel_reads: HashMap<u64, Vec<(u64, u64, At)>> = HashMap::new();
    // Reads into a known buffer: (where, the buffer's address).
    let mut read_buffer: HashMap<At, u64> = HashMap::new();
    for (t, ms) in marks.iter().enumerate() {
        for (k, m) in ms.iter().enumerate() {
            let at = (t as u32, k as u32);
            let b = blocking(at);
            match m.op {
                Op::MutexLock | Op::RwRead | Op::RwWrite => {
                    if let Some(b) = b
                        && acquired(b.ret)
                    {
                        mutex_events.push((b.done_seq, Ev::Acquire, m.args[0], at));
                    }
                }
                Op::MutexUnlock => mutex_events.push((m.seq, Ev::Release, m.args[0], at)),
                Op::CondWait => {
                    mutex_events.push((m.seq, Ev::Release, m.args[1], at));
                    if let Some(b) = b {
                        mutex_events.push((b.done_seq, Ev::Acquire, m.args[1], at));
                        cond_waits
                            .entry(m.args[0])
                            .or_default()
                            .push((m.seq, b.done_seq, at));
                    }
                }
                Op::CondSignal | Op::CondBroadcast => signals.entry(m.args[0]).or_default().push((
                    m.seq,
                    m.op == Op::CondBroadcast,
                    at,
                )),
                // A wake of (nearly) every waiter is a broadcast; others wake one each.
                Op::FutexWake => {
                    wakes
                        .entry(m.args[0])
                        .or_default()
                        .push((m.seq, m.args[1] >= 1 << 30, at))
                }
                Op::ChannelWrite | Op::ChannelRead => {
                    let to = if m.op == Op::ChannelWrite {
                        &mut channel_writes
                    } else {
                        &mut channel_reads
                    };
                    let seq = if m.op == Op::ChannelWrite {
                        m.args[2]
                    } else {
                        m.seq
                    };
                    to.entry(m.args[0]).or_default().push((seq, m.args[1], at));
                    if m.op == Op::ChannelRead && m.args[2] != 0 {
                        read_buffer.insert(at, m.args[2]);
                    }
                }
                Op::FutexWait => match b {
                    Some(b) if b.ret == 0 => futex_waits
                        .entry(m.args[0])
                        .or_default()
                        .push((m.seq, b.done_seq, at)),
                    Some(b) if b.ret == -EAGAIN && k > 0 => futex_again
                        .entry(m.args[0])
                        .or_default()
                        .push((ms[k - 1].seq, m.seq, at)),
                    _ => {}
                },
                _ => {}
            }
        }
    }

    // 3. Edges: `wake_edge[at]` = the signal or wake that ended the wait at `at`;
    //    `lock_edge[at]` = the release its (re-)acquisition of a mutex follows.
    let mut wake_edge: HashMap<At, At> = HashMap::new();
    let mut woken_by: HashMap<At, Vec<At>> = HashMap::new();
    let match_waits = |sources: &mut HashMap<u64, Vec<(u64, bool, At)>>,
                       waits: &mut HashMap<u64, Vec<(u64, u64, At)>>,
                       edges: &mut HashMap<At, At>,
                       woken_by: &mut HashMap<At, Vec<At>>| {
        let mut objs: Vec<u64> = waits.keys().copied().collect();
        objs.sort_unstable();
        for obj in objs {
            let Some(src) = sources.get_mut(&obj) else {
                continue;
            };
            src.sort_unstable();
            let mut taken = vec![false; src.len()];
            let ws = waits.get_mut(&obj).expect("listed");
            // Waiters in the order they woke.
            ws.sort_unstable_by_key(|w| (w.1, w.0, w.2));
            for &(start, end, at) in ws.iter() {
                let first = src.partition_point(|s| s.0 <= start);
                let mut pick = None;
                let mut last = None;
                for (i, s) in src.iter().enumerate().skip(first) {
                    if s.0 >= end {
                        break;
                    }
                    if s.2.0 == at.0 {
                        continue;
                    }
                    last = Some(i);
                    if s.1 || !taken[i] {
                        pick = Some(i);
                        break;
                    }
                }
                if let Some(i) = pick.or(last) {
                    if !src[i].1 {
                        taken[i] = true;
                    }
                    edges.insert(at, src[i].2);
                    woken_by.entry(src[i].2).or_default().push(at);
                }
            }
        }
    };
    match_waits(&mut signals, &mut cond_waits, &mut wake_edge, &mut woken_by);
    let mut futex_woken = HashMap::new();
    match_waits(
        &mut wakes,
        &mut futex_waits,
        &mut wake_edge,
        &mut futex_woken,
    );
    // A waiter whose futex wait found the word already changed was let go by the broadcast
    // that changed it without sleeping (a Rust `Condvar`'s waiter whose `notify_all` came
    // between its load of the word and its wait: under QEMU, as the host scheduled the traced
    // run). For the barrier test below it is one of that broadcast's episode, so that a Rust
    // `Barrier` is recognised whether or not every waiter slept. Its broadcast: the last one on
    // the word after the waiter's event before the wait, if one came before the wait (the
    // word changed and the wake followed, then the wait came); else the first one after it
    // (the word changed, the wait came, then the wake). It did not sleep, but it saw the
    // change, and what it does next (re-lock, find its condition true: rayon's `LockLatch`
    // set by the pool while `main` waits for its job) follows the broadcaster's: its wait
    // waits for that wake in simulated time (a wake edge), so that the waiter does not run
    // ahead of the work it waited for.
    let mut objs: Vec<u64> = futex_again.keys().copied().collect();
    objs.sort_unstable();
    for obj in objs {
        let Some(src) = wakes.get(&obj) else {
            continue;
        };
        // The word's broadcasts in sequence order (a lock word has many wakes, none of them
        // a broadcast, and many EAGAIN waits: it is skipped at once).
        let mut bc: Vec<(u64, bool, At)> = src.iter().filter(|s| s.1).copied().collect();
        if bc.is_empty() {
            continue;
        }
        bc.sort_unstable();
        for &(prev, seq, at) in &futex_again[&obj] {
            // Another thread's broadcast: a binary search, then a step past the waiter's own.
            let other = |s: &&(u64, bool, At)| s.2.0 != at.0;
            let i = bc.partition_point(|s| s.0 < seq);
            let pick = bc[..i]
                .iter()
                .rev()
                .take_while(|s| s.0 > prev)
                .find(other)
                .or_else(|| bc[i..].iter().find(other));
            if let Some(s) = pick {
                futex_woken.entry(s.2).or_insert_with(Vec::new).push(at);
                wake_edge.insert(at, s.2);
            }
        }
    }

    // A read of a channel needs the writes that gave it its bytes: reads return the bytes in
    // the order they were written, so they are the writes whose bytes, counted from the
    // stream's first, overlap the read's (the stream's writes in the order they began: exact
    // with one writer; with several, a read is never paired with a write that began after it
    // returned, whose writer could have waited for what the reader did next, for the bytes the
    // read got were written by writes begun before it returned, and at least as many bytes as
    // that were begun before it). The read waits for the one that gave its first byte (a read
    // returns once there is one), and for each later one the thread waits before its first load
    // of that write's bytes in its buffer (`Plan::deferred`: a read that took several messages
    // is one that would have taken fewer, had they not been there yet); a read whose buffer the
    // plugin did not see (`readv`, `recvmsg`) waits for the write of its last byte. An
    // eventfd's reads and writes are 8 bytes each, so its k-th read waits for its k-th write:
    // exact in semaphore mode (`EFD_SEMAPHORE`, one unit a read) and for one write per read; a
    // counter-mode read that took the sum of several writes waits for fewer than it took. When
    // the bytes were there in the traced run is not used.
    let mut deferred_edges: Vec<(At, u64, u64, At)> = Vec::new();
    let mut channel_waits = 0u64;
    let channel_reads_n = channel_reads.values().map(|r| r.len() as u64).sum();
    let mut streams: Vec<u64> = channel_reads.keys().copied().collect();
    streams.sort_unstable();
    for s in streams {
        let Some(ws) = channel_writes.get_mut(&s) else {
            continue;
        };
        ws.sort_unstable();
        let rs = channel_reads.get_mut(&s).expect("listed");
        rs.sort_unstable();
        // Bytes written by the end of each write.
        let written: Vec<u64> = ws
            .iter()
            .scan(0u64, |total, w| {
                *total = total.saturating_add(w.1);
                Some(*total)
            })
            .collect();
        let mut read = 0u64;
        for &(_, bytes, at) in rs.iter() {
            let from = read;
            read = read.saturating_add(bytes);
            let last = written.partition_point(|&e| e < read);
            if last >= ws.len() {
                continue;
            }
            channel_waits += 1;
            let first = if read_buffer.contains_key(&at) {
                written.partition_point(|&e| e <= from)
            } else {
                last
            };
            // (A thread reading its own write waits for nobody.)
            if ws[first].2.0 != at.0 {
                wake_edge.insert(at, ws[first].2);
            }
            for j in first + 1..=last {
                if ws[j].2.0 != at.0 {
                    let lo = written[j - 1].max(from) - from;
                    let hi = written[j].min(read) - from;
                    deferred_edges.push((at, lo, hi, ws[j].2));
                }
            }
        }
    }

    // Per thread, per marker (a flat array: every lock and unlock is looked up below);
    // `NO_AT` where the acquisition follows no other thread's release.
    const NO_AT: At = (u32::MAX, u32::MAX);
    let mut lock_edge: Vec<Vec<At>> = marks.iter().map(|ms| vec![NO_AT; ms.len()]).collect();
    mutex_events.sort_unstable();
    // Releases of each mutex in sequence order, for the re-locks below.
    let mut releases_of: HashMap<u64, Vec<(u64, At)>> = HashMap::new();
    for &(seq, ev, m, at) in &mutex_events {
        if ev == Ev::Release {
            releases_of.entry(m).or_default().push((seq, at));
        }
    }
    let mut last_release: HashMap<u64, At> = HashMap::new();
    for &(seq, ev, m, at) in &mutex_events {
        match ev {
            Ev::Release => {
                last_release.insert(m, at);
            }
            Ev::Acquire => {
                let mut pred = last_release.get(&m).copied();
                // The re-lock that ends a condition wait waits for the first release of the
                // mutex after the wake-up (the signaller's unlock), not for whatever critical
                // sections other threads happened to run before the traced waiter got the
                // mutex back: under QEMU a woken thread is often slow to run, and keeping
                // that incidental order would make it wait for others' next phase.
                if marks[at.0 as usize][at.1 as usize].op == Op::CondWait
                    && let Some(w) = wake_edge.get(&at)
                {
                    let ws = marks[w.0 as usize][w.1 as usize].seq;
                    let rs = &releases_of[&m];
                    let i = rs.partition_point(|r| r.0 <= ws);
                    if let Some(&(rseq, r)) = rs.get(i)
                        && rseq < seq
                    {
                        pred = Some(r);
                    }
                }
                if let Some(r) = pred
                    && r.0 != at.0
                {
                    lock_edge[at.0 as usize][at.1 as usize] = r;
                }
            }
        }
    }

    // 4. Barriers built from condition variables (and from futexes the same way: Rust's
    //    `Barrier` is a mutex and a condition variable on futexes).
    let mut barrier_of: HashMap<At, (u64, u32, bool)> = HashMap::new();
    let mut hand_barriers = 0u64;
    let mut hand_barrier_conds = 0usize;
    let mut barrier_conds: Vec<u64> = Vec::new();
    let mut objs: Vec<(bool, u64)> = signals.keys().map(|&c| (false, c)).collect();
    objs.extend(wakes.keys().map(|&a| (true, a)));
    objs.sort_unstable();
    for (is_futex, c) in objs {
        let (src, woken_by) = if is_futex {
            (&wakes[&c], &futex_woken)
        } else {
            (&signals[&c], &woken_by)
        };
        // One episode cannot tell a barrier from a hand-off (a broadcast that woke the one
        // thread waiting for an item); a barrier is used at least twice.
        if src.len() < 2 || src.iter().any(|s| !s.1) {
            continue;
        }
        let sizes: Vec<usize> = src
            .iter()
            .map(|s| woken_by.get(&s.2).map_or(0, |w| w.len()))
            .collect();
        let n = sizes[0] + 1;
        if n < 2 || sizes.iter().any(|&k| k + 1 != n) {
            continue;
        }
        // Each episode's threads (broadcaster and waiters) are distinct, and every episode
        // involves the same threads: a team. (A broadcast hand-off between changing pairs of
        // threads — a producer waking one consumer of several, as pigz's work queue does —
        // has episodes of one size too, but is no barrier.)
        let team = |s: &(u64, bool, At)| {
            let mut ts: Vec<u32> = woken_by[&s.2].iter().map(|w| w.0).collect();
            ts.push(s.2.0);
            ts.sort_unstable();
            ts
        };
        let first = team(&src[0]);
        let is_team = first.windows(2).all(|w| w[0] != w[1]);
        if !is_team || src.iter().any(|s| team(s) != first) {
            continue;
        }
        hand_barrier_conds += 1;
        if !is_futex {
            barrier_conds.push(c);
        }
        for s in src {
            let id = HAND_BARRIER | hand_barriers;
            hand_barriers += 1;
            barrier_of.insert(s.2, (id, n as u32, true));
            for &w in &woken_by[&s.2] {
                barrier_of.insert(w, (id, n as u32, false));
            }
        }
    }

    // 4b. Condition waits a critical section skipped: it found its condition true, where
    //     other runs of the same code (the same predicate test under the same mutex) waited
    //     on a condition variable. What made the condition true was another thread's
    //     critical section, which signalled the condition (inside it, or just after its
    //     unlock): the section waits for that section's unlock before it asks for the
    //     mutex, as a wait would have waited for the signal. The signals no waiter took are
    //     handed to the skipping sections first come, first served (a queue's items, a token
    //     passed round), each to one section of another thread whose mutex it took after
    //     that unlock in the traced run. Barriers built from conditions are barriers
    //     already.
    let ready_edge = skipped_waits(
        marks,
        sections,
        &signals,
        &woken_by,
        &barrier_conds,
        &mutex_events,
        &blocking,
    );

    // 5. Release indices, densely in sequence order of the releases edges point at.
    // Per thread, per marker: its release index (`NONE`: no edge points at it).
    let mut index: Vec<Vec<u32>> = marks.iter().map(|ms| vec![NONE; ms.len()]).collect();
    let mut targets: Vec<(u64, At)> = Vec::new();
    let edges = lock_edge.iter().flatten().filter(|&&r| r != NO_AT);
    let deferred_writes = deferred_edges.iter().map(|d| &d.3);
    let ready_signals = ready_edge.values().map(|r| &r.1);
    for &r in wake_edge
        .values()
        .chain(edges)
        .chain(deferred_writes)
        .chain(ready_signals)
    {
        let i = &mut index[r.0 as usize][r.1 as usize];
        if *i == NONE {
            *i = 0;
            targets.push((marks[r.0 as usize][r.1 as usize].seq, r));
        }
    }
    targets.sort_unstable();
    for (i, &(_, r)) in targets.iter().enumerate() {
        index[r.0 as usize][r.1 as usize] = i.min(Order::MAX_RELEASE as usize) as u32;
    }
    let order_of = |e: Option<At>| {
        e.map_or(Order::NONE, |r| {
            Order::after(index[r.0 as usize][r.1 as usize])
        })
    };
    let lock_edge = |at: At| Some(lock_edge[at.0 as usize][at.1 as usize]).filter(|&r| r != NO_AT);
    let release = |at: At, out: &mut Vec<Marker>| {
        let i = index[at.0 as usize][at.1 as usize];
        if i != NONE {
            out.push(Marker::Release { index: i });
        }
    };

    // 5b. Semaphores whose initial value the interposer did not see (`sem_open`): the least
    //     the traced run's order needs, every wait taking a unit a post or the initial value
    //     gave before it.
    let mut sem_events: Vec<(u64, u64, bool)> = Vec::new();
    for (t, ms) in marks.iter().enumerate() {
        for (k, m) in ms.iter().enumerate() {
            if !matches!(m.op, Op::SemWait | Op::SemPost) || m.args[1] != SEM_UNKNOWN {
                continue;
            }
            let b = blocking((t as u32, k as u32));
            if m.op == Op::SemPost {
                sem_events.push((m.args[0], m.seq, true));
            } else if let Some(b) = b
                && acquired(b.ret)
            {
                sem_events.push((m.args[0], b.done_seq, false));
            }
        }
    }
    sem_events.sort_unstable();
    let mut sem_init: HashMap<u64, u32> = HashMap::new();
    for run in sem_events.chunk_by(|a, b| a.0 == b.0) {
        let (mut units, mut need) = (0i64, 0i64);
        for &(_, _, post) in run {
            units += if post { 1 } else { -1 };
            need = need.max(-units);
        }
        sem_init.insert(run[0].0, u32::try_from(need).unwrap_or(u32::MAX));
    }
    let initial = |addr: u64, given: u64| {
        u32::try_from(given).unwrap_or_else(|_| sem_init.get(&addr).copied().unwrap_or(0))
    };

    let mut deferred: HashMap<(u32, u32), (u64, Vec<Deferred>)> = HashMap::new();
    for &(at, lo, hi, w) in &deferred_edges {
        let e = deferred
            .entry(at)
            .or_insert_with(|| (read_buffer[&at], Vec::new()));
        e.1.push((
            lo,
            hi,
            Marker::FutexWait {
                addr: channel_addr(marks[at.0 as usize][at.1 as usize].args[0]),
                wake: order_of(Some(w)),
            },
        ));
    }

    // 6. The markers, thread by thread.
    let mut out = Plan {
        skipped_waits: ready_edge.len() as u64,
        hand_barriers,
        hand_barrier_conds,
        channel_reads: channel_reads_n,
        channel_waits,
        deferred,
        ..Plan::default()
    };
    for (t, ms) in marks.iter().enumerate() {
        let mut starts = Vec::with_capacity(ms.len() + 1);
        for (k, m) in ms.iter().enumerate() {
            starts.push(out.markers.len() as u32);
            let at = (t as u32, k as u32);
            let b = blocking(at);
            let v = &mut out.markers;
            let [a0, a1, a2] = m.args;
            match m.op {
                Op::MutexLock => {
                    // A lock that never returned (the process ended while it waited) is left
                    // out: the thread ends there. So is one that failed (an error-checking
                    // mutex's EDEADLK): the thread did not take the mutex.
                    if b.is_some_and(|b| acquired(b.ret)) {
                        if let Some(&(cond, signal)) = ready_edge.get(&at) {
                            v.push(Marker::CondReady {
                                cond,
                                wake: order_of(Some(signal)),
                            });
                        }
                        // futexlock.rs marks a lock found in traced code with a third argument
                        // of 1 (the interposer's lock calls, into code the trace does not
                        // hold, have 0), and how its code spins with a second argument
                        // (`LockSpin`: 1 for the default spin, as futexlock.rs and glibc's
                        // spin lock say, or libgomp's turns).
                        let spin = match LockSpin::of_arg(a1) {
                            LockSpin::None => Spin::NONE,
                            LockSpin::Default => Spin::DEFAULT,
                            LockSpin::Gomp(n) => Spin::gomp(u32::try_from(n).unwrap_or(u32::MAX)),
                        };
                        v.push(Marker::MutexLock {
                            addr: a0,
                            order: order_of(lock_edge(at)),
                            spin,
                            call: a2 == 0,
                        });
                    }
                }
                Op::RwRead | Op::RwWrite => {
                    // As a mutex lock: one that failed (a timeout) or never returned is left
                    // out.
                    if b.is_some_and(|b| acquired(b.ret)) {
                        v.push(Marker::RwLock {
                            addr: a0,
                            order: order_of(lock_edge(at)),
                            write: m.op == Op::RwWrite,
                        });
                    }
                }
                Op::SemWait => {
                    // A wait that failed (a timeout, a failed try, EINTR) or never returned
                    // took nothing.
                    if b.is_some_and(|b| b.ret == 0) {
                        v.push(Marker::SemWait {
                            addr: a0,
                            init: initial(a0, a1),
                        });
                    }
                }
                Op::SemPost => {
                    if b.is_none_or(|b| b.ret == 0) {
                        v.push(Marker::SemPost {
                            addr: a0,
                            init: initial(a0, a1),
                            // A semaphore on a futex word (`atomicsem.rs`) says so; the
                            // interposed `sem_post` leaves it 0.
                            wakes: a2 == 1,
                        });
                    }
                }
                Op::MutexUnlock => {
                    // A second argument of 1: released by a plain store (the interposer's
                    // `pthread_spin_unlock`, a test-and-set lock found by `taslock.rs`).
                    v.push(Marker::MutexUnlock {
                        addr: a0,
                        plain: a1 != 0,
                    });
                    release(at, v);
                }
                Op::CondWait => {
                    release(at, v);
                    if b.is_some() {
                        if let Some(&(id, n, lead)) = barrier_of.get(&at) {
                            v.push(Marker::Barrier {
                                id,
                                participants: n,
                                lead,
                            });
                        }
                        v.push(Marker::CondWait {
                            cond: a0,
                            mutex: a1,
                            wake: order_of(wake_edge.get(&at).copied()),
                            relock: order_of(lock_edge(at)),
                        });
                    }
                }
                Op::CondSignal => {
                    v.push(Marker::CondSignal { cond: a0 });
                    release(at, v);
                }
                Op::CondBroadcast => {
                    if let Some(&(id, n, lead)) = barrier_of.get(&at) {
                        v.push(Marker::Barrier {
                            id,
                            participants: n,
                            lead,
                        });
                    }
                    v.push(Marker::CondBroadcast { cond: a0 });
                    release(at, v);
                }
                Op::FutexWait => {
                    if b.is_some() {
                        if let Some(&(id, n, lead)) = barrier_of.get(&at) {
                            v.push(Marker::Barrier {
                                id,
                                participants: n,
                                lead,
                            });
                        }
                        v.push(Marker::FutexWait {
                            addr: a0,
                            wake: order_of(wake_edge.get(&at).copied()),
                        });
                    }
                }
                Op::FutexWake => {
                    if let Some(&(id, n, lead)) = barrier_of.get(&at) {
                        v.push(Marker::Barrier {
                            id,
                            participants: n,
                            lead,
                        });
                    }
                    v.push(Marker::FutexWake { addr: a0 });
                    release(at, v);
                }
                Op::ChannelWrite => {
                    if index[t][k] != NONE {
                        v.push(Marker::FutexWake {
                            addr: channel_addr(a0),
                        });
                        release(at, v);
                    }
                }
                Op::ChannelRead => {
                    if let Some(&w) = wake_edge.get(&at) {
                        v.push(Marker::FutexWait {
                            addr: channel_addr(a0),
                            wake: order_of(Some(w)),
                        });
                    }
                }
                Op::Barrier | Op::Join | Op::OmpBarrier if b.is_none() => {
                    // Still waiting when the process ended: never completed.
                }
                Op::OmpBegin => v.push(Marker::Barrier {
                    id: omp_barrier_id(a0, 1),
                    participants: a2.clamp(1, u32::MAX as u64) as u32,
                    lead: a1 == 0,
                }),
                Op::OmpEnd | Op::OmpBarrier => v.push(Marker::Barrier {
                    id: omp_barrier_id(a0, if m.op == Op::OmpEnd { 2 } else { 3 }),
                    participants: a1.clamp(1, u32::MAX as u64) as u32,
                    lead: false,
                }),
                op => {
                    if let Some(mk) = simple(t as u32, op, m.args) {
                        v.push(mk);
                    }
                }
            }
        }
        starts.push(out.markers.len() as u32);
        out.starts.push(starts);
    }
    out
}

/// Marker `k` of a thread's `ms`, if it is there and an `op`.
fn marker_at(ms: &[RawMark], k: u32, op: Op) -> Option<u32> {
    ms.get(k as usize).filter(|m| m.op == op).map(|_| k)
}

/// The critical sections that skipped a condition wait, each with the condition and the
/// signal it waits for (step 4b of [`plan_with`]): keyed by the section's lock marker.
fn skipped_waits(
    marks: &[Vec<RawMark>],
    sections: &[CondSections],
    signals: &HashMap<u64, Vec<(u64, bool, At)>>,
    woken_by: &HashMap<At, Vec<At>>,
    barrier_conds: &[u64],
    mutex_events: &[(u64, Ev, u64, At)],
    blocking: &dyn Fn(At) -> Option<Blocking>,
) -> HashMap<At, (u64, At)> {
    let mut out = HashMap::new();
    // The predicate tests that came before waits: per (thread, mutex, branch) the condition
    // that thread waited on (a thread's own condition: a token passed round through one
    // condition per thread); per (mutex, branch) the condition every thread waited on, if
    // only one.
    let mut own: HashMap<(u32, u64, u32), u64> = HashMap::new();
    let mut any: HashMap<(u64, u32), Option<u64>> = HashMap::new();
    // And per branch, where the condition lies from the mutex, if always at one place (a
    // queue's mutex and conditions in one structure, the same code serving several queues:
    // a queue whose consumer never waited has its condition found so).
    let mut offset: HashMap<u32, Option<u64>> = HashMap::new();
    for (t, cs) in sections.iter().enumerate() {
        let ms = &marks[t];
        for &(k, branch) in &cs.waits {
            let Some(k) = marker_at(ms, k, Op::CondWait) else {
                continue;
            };
            let [cond, mutex, _] = ms[k as usize].args;
            if barrier_conds.contains(&cond) {
                continue;
            }
            own.insert((t as u32, mutex, branch), cond);
            any.entry((mutex, branch))
                .and_modify(|c| {
                    if *c != Some(cond) {
                        *c = None;
                    }
                })
                .or_insert(Some(cond));
            let d = cond.wrapping_sub(mutex);
            offset
                .entry(branch)
                .and_modify(|o| {
                    if *o != Some(d) {
                        *o = None;
                    }
                })
                .or_insert(Some(d));
        }
    }
    if own.is_empty() {
        return out;
    }
    // The sections that ran such a test and did not wait: (condition, mutex, acquired at,
    // where).
    let mut skips: Vec<(u64, u64, u64, At)> = Vec::new();
    for (t, cs) in sections.iter().enumerate() {
        let ms = &marks[t];
        for c in &cs.checks {
            let Some(k) = marker_at(ms, c.mark, Op::MutexLock) else {
                continue;
            };
            let at = (t as u32, k);
            let Some(b) = blocking(at).filter(|b| acquired(b.ret)) else {
                continue;
            };
            let mutex = ms[k as usize].args[0];
            let cond = c.branches().iter().find_map(|&br| {
                own.get(&(t as u32, mutex, br))
                    .copied()
                    .or_else(|| any.get(&(mutex, br)).copied().flatten())
                    .or_else(|| {
                        let c = mutex.wrapping_add(offset.get(&br).copied().flatten()?);
                        signals.contains_key(&c).then_some(c)
                    })
            });
            if let Some(cond) = cond {
                skips.push((cond, mutex, b.done_seq, at));
            }
        }
    }
    skips.sort_unstable();
    // Each holder's acquisitions and releases of the mutexes those sections took.
    let mutexes: std::collections::HashSet<u64> = skips.iter().map(|s| s.1).collect();
    let mut held: HashMap<(u64, u32), Vec<MutexEvent>> = HashMap::new();
    for &(seq, ev, m, at) in mutex_events {
        if mutexes.contains(&m) {
            held.entry((m, at.0)).or_default().push((seq, ev, at));
        }
    }
    for run in skips.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let (cond, mutex) = (run[0].0, run[0].1);
        let Some(src) = signals.get(&cond) else {
            continue;
        };
        // The signals that woke nobody, each at the release that ended the critical section
        // that made the condition true: the signaller's section around it, or its last one
        // before it (a signal made after the unlock); in the order of those releases.
        let mut spare: Vec<(u64, At)> = src
            .iter()
            .filter(|s| !woken_by.contains_key(&s.2))
            .filter_map(|&(seq, _, at)| {
                let evs = held.get(&(mutex, at.0))?;
                let i = evs.partition_point(|e| e.0 < seq);
                match evs[..i].last() {
                    Some(&(_, Ev::Acquire, _)) => evs[i..].iter().find(|e| e.1 == Ev::Release),
                    last => last,
                }
                .map(|e| (e.0, e.2))
            })
            .collect();
        spare.sort_unstable();
        spare.dedup();
        let mut used = vec![false; spare.len()];
        let mut front = 0;
        for &(_, _, seq, at) in run {
            while used.get(front) == Some(&true) {
                front += 1;
            }
            // The first one not yet handed out, of another thread, released before the
            // section took its mutex (a thread's own, rare, are looked past a bounded way).
            let pick = (front..spare.len())
                .take_while(|&i| spare[i].0 < seq)
                .take(256)
                .find(|&i| !used[i] && spare[i].1.0 != at.0);
            if let Some(i) = pick {
                used[i] = true;
                out.insert(at, (cond, spare[i].1));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mk(op: Op, args: [u64; 3], seq: u64) -> RawMark {
        RawMark { op, args, seq }
    }

    fn done(seq: u64) -> RawMark {
        mk(Op::Done, [0; 3], seq)
    }

    fn none(_: u32, _: Op, _: [u64; 3]) -> Option<Marker> {
        None
    }

    /// An error-checking mutex locked twice by its owner: the second call returns EDEADLK
    /// and takes nothing, so it is no acquisition (replay would otherwise count the mutex
    /// held twice); a robust mutex's EOWNERDEAD is one (the caller owns it).
    #[test]
    fn a_lock_call_that_failed_is_no_acquisition() {
        const M: u64 = 0x10;
        const EDEADLK: u64 = 35;
        const EOWNERDEAD: u64 = 130;
        let t0 = vec![
            mk(Op::MutexLock, [M, 0, 0], 0),
            done(1),
            mk(Op::MutexLock, [M, 0, 0], 2),
            mk(Op::Done, [EDEADLK, 0, 0], 3),
            mk(Op::MutexUnlock, [M, 0, 0], 4),
            done(5),
            mk(Op::MutexLock, [M, 0, 0], 6),
            mk(Op::Done, [EOWNERDEAD, 0, 0], 7),
        ];
        let p = plan(&[t0], &mut none);
        let lock = Marker::MutexLock {
            addr: M,
            order: Order::NONE,
            spin: Spin::NONE,
            call: true,
        };
        assert_eq!(p.at(0, 0), &[lock]);
        assert_eq!(p.at(0, 2), &[], "EDEADLK took nothing");
        assert_eq!(p.at(0, 6), &[lock], "EOWNERDEAD owns the mutex");
    }

    /// A semaphore whose `sem_init` the interposer saw keeps that initial value; one it did
    /// not see gets the least the traced order needs: here thread 1 took two units before
    /// thread 0's first post (and a third after it), so 2. A wait that failed (a try that
    /// found no unit) takes nothing and is no marker.
    #[test]
    fn a_semaphore_without_its_initial_value_gets_the_least_the_traced_order_needs() {
        const S: u64 = 0x30;
        const T: u64 = 0x40;
        const FAILED: u64 = u64::MAX; // -1
        let t0 = vec![
            mk(Op::SemPost, [S, SEM_UNKNOWN, 0], 4),
            done(5),
            mk(Op::SemPost, [T, 8, 0], 6),
            done(7),
        ];
        let t1 = vec![
            mk(Op::SemWait, [S, SEM_UNKNOWN, 0], 0),
            done(1),
            mk(Op::SemWait, [S, SEM_UNKNOWN, 0], 2),
            done(3),
            mk(Op::SemWait, [S, SEM_UNKNOWN, 0], 8),
            mk(Op::Done, [FAILED, 0, 0], 9),
            mk(Op::SemWait, [S, SEM_UNKNOWN, 0], 10),
            done(11),
        ];
        let p = plan(&[t0, t1], &mut none);
        assert_eq!(
            p.at(0, 0),
            &[Marker::SemPost {
                addr: S,
                init: 2,
                wakes: false
            }]
        );
        assert_eq!(
            p.at(0, 2),
            &[Marker::SemPost {
                addr: T,
                init: 8,
                wakes: false
            }]
        );
        assert_eq!(p.at(1, 0), &[Marker::SemWait { addr: S, init: 2 }]);
        assert_eq!(p.at(1, 4), &[], "a failed wait took nothing");
        assert_eq!(p.at(1, 6), &[Marker::SemWait { addr: S, init: 2 }]);
    }

    /// The classic barrier: thread 1 waits (releasing the mutex), thread 0 arrives last and
    /// broadcasts; the wait becomes a barrier of 2 named by the broadcaster, with the wake and
    /// re-lock edges pointing at the broadcast and the broadcaster's unlock. A second episode
    /// (the roles swapped) follows: one episode alone is no barrier.
    /// A consumer that found an item already queued (its section ran the predicate test that
    /// its other sections waited after, and did not wait) waits for the producer's signal
    /// that no waiter took, first come, first served: its second section for the second
    /// put's signal, its third for the third's. A section that did not run the test (another
    /// path under the same mutex) waits for nothing, and neither does one with no signal
    /// left before it.
    #[test]
    fn a_section_that_found_its_condition_true_waits_for_the_signal_that_made_it_so() {
        const M: u64 = 0x10;
        const C: u64 = 0x20;
        const TEST: u32 = 7;
        let put = |s: u64| {
            [
                mk(Op::MutexLock, [M, 0, 0], s),
                done(s + 1),
                mk(Op::CondSignal, [C, 0, 0], s + 2),
                done(s + 3),
                mk(Op::MutexUnlock, [M, 0, 0], s + 4),
                done(s + 5),
            ]
        };
        let t0: Vec<RawMark> = [10, 20, 30].into_iter().flat_map(put).collect();
        let section = |s: u64| {
            [
                mk(Op::MutexLock, [M, 0, 0], s),
                done(s + 1),
                mk(Op::MutexUnlock, [M, 0, 0], s + 2),
                done(s + 3),
            ]
        };
        let mut t1 = vec![
            mk(Op::MutexLock, [M, 0, 0], 0),
            done(1),
            mk(Op::CondWait, [C, M, 0], 2),
            done(16),
            mk(Op::MutexUnlock, [M, 0, 0], 17),
            done(18),
        ];
        for s in [26, 40, 44, 50] {
            t1.extend(section(s));
        }
        let check = |mark: u32, branch: u32| Check {
            mark,
            branches: [branch, 0, 0, 0],
            n: 1,
        };
        let sections = [
            CondSections::default(),
            CondSections {
                waits: vec![(2, TEST)],
                checks: vec![
                    check(6, TEST),
                    check(10, TEST),
                    check(14, 9),
                    check(18, TEST),
                ],
            },
        ];
        let p = plan_with(&[t0, t1], &sections, &mut none);
        assert_eq!(p.skipped_waits, 2);
        // The edge goes to the unlock of the producer's section that signalled.
        let release_after = |k: usize| match p.at(0, k) {
            [
                Marker::MutexUnlock { addr: M, .. },
                Marker::Release { index },
            ] => Order::after(*index),
            other => panic!("unlock {k}: {other:?}"),
        };
        let lock = |m: &Marker| matches!(m, Marker::MutexLock { addr: M, .. });
        for (k, unlock) in [(6, 10), (10, 16)] {
            match p.at(1, k) {
                [Marker::CondReady { cond: C, wake }, l] if lock(l) => {
                    assert_eq!(*wake, release_after(unlock), "section at marker {k}")
                }
                other => panic!("section at marker {k}: {other:?}"),
            }
        }
        assert!(
            matches!(p.at(1, 14), [l] if lock(l)),
            "another path: {:?}",
            p.at(1, 14)
        );
        assert!(
            matches!(p.at(1, 18), [l] if lock(l)),
            "no signal left: {:?}",
            p.at(1, 18)
        );

        // A signal made after the unlock (C++'s `notify_one` after the lock's scope), and the
        // consumer took the mutex between the two: the section that made the condition true
        // is the one before the signal, released before the consumer's section began.
        let t0 = vec![
            mk(Op::MutexLock, [M, 0, 0], 10),
            done(11),
            mk(Op::MutexUnlock, [M, 0, 0], 12),
            done(13),
            mk(Op::CondSignal, [C, 0, 0], 16),
            done(17),
        ];
        let mut t1 = vec![
            mk(Op::MutexLock, [M, 0, 0], 0),
            done(1),
            mk(Op::CondWait, [C, M, 0], 2),
            mk(Op::Done, [110, 0, 0], 3), // ETIMEDOUT
            mk(Op::MutexUnlock, [M, 0, 0], 4),
            done(5),
        ];
        t1.extend(section(14));
        let sections = [
            CondSections::default(),
            CondSections {
                waits: vec![(2, TEST)],
                checks: vec![check(6, TEST)],
            },
        ];
        let p = plan_with(&[t0, t1], &sections, &mut none);
        assert_eq!(p.skipped_waits, 1);
        let unlock = match p.at(0, 2) {
            [Marker::MutexUnlock { .. }, Marker::Release { index }] => Order::after(*index),
            other => panic!("unlock: {other:?}"),
        };
        let ready = p.at(1, 6);
        assert!(
            matches!(ready, [Marker::CondReady { cond: C, wake }, l] if *wake == unlock && lock(l)),
            "{ready:?}"
        );
    }

    /// Pass 1's section tracker: a section's branches are those of the code that took the
    /// lock (the lock call's own, deeper and before it returned, are forgotten); the last
    /// of them before a condition wait is its test; a section that ends in an unlock is a
    /// check, one the thread never took (a failed trylock) nothing.
    #[test]
    fn the_section_tracker_keeps_the_branches_of_the_code_that_took_the_lock() {
        const M: u64 = 0x10;
        let mut t = SectionTracker::default();
        t.marker(0, Op::MutexLock, &[M, 0, 0]);
        t.marker(1, Op::Done, &[0, 0, 0]);
        t.exec(3, 100, true); // inside the lock call
        t.exec(2, 101, false); // back in the caller
        t.exec(2, 7, true); // the predicate's test
        t.exec(3, 102, true); // inside the wait call
        t.marker(2, Op::CondWait, &[0x20, M, 0]);
        t.marker(3, Op::Done, &[0, 0, 0]);
        t.exec(2, 8, true); // after the wait: the mutex is held again, but no check
        t.marker(4, Op::MutexUnlock, &[M, 0, 0]);
        t.marker(5, Op::MutexLock, &[M, 0, 0]);
        t.marker(6, Op::Done, &[0, 0, 0]);
        t.exec(3, 100, true);
        t.exec(2, 7, true);
        t.exec(2, 7, true);
        t.exec(2, 9, true);
        t.marker(7, Op::MutexUnlock, &[M, 0, 0]);
        t.marker(8, Op::MutexLock, &[M, 0, 0]);
        t.marker(9, Op::Done, &[16, 0, 0]); // EBUSY
        t.exec(2, 7, true);
        t.marker(10, Op::MutexUnlock, &[M, 0, 0]);
        assert_eq!(t.found.waits, vec![(2, 7)]);
        assert_eq!(
            t.found.checks,
            vec![Check {
                mark: 5,
                branches: [7, 9, 0, 0],
                n: 2
            }]
        );
    }

    #[test]
    fn a_condition_only_broadcast_to_everyone_else_is_a_barrier() {
        const M: u64 = 0x10;
        const C: u64 = 0x20;
        let mut t0 = vec![
            mk(Op::MutexLock, [M, 0, 0], 3),
            done(4),
            mk(Op::CondBroadcast, [C, 0, 0], 5),
            done(6),
            mk(Op::MutexUnlock, [M, 0, 0], 7),
            done(8),
        ];
        let mut t1 = vec![
            mk(Op::MutexLock, [M, 0, 0], 0),
            done(1),
            mk(Op::CondWait, [C, M, 0], 2),
            done(9),
            mk(Op::MutexUnlock, [M, 0, 0], 10),
            done(11),
        ];
        let first = plan(&[t0.clone(), t1.clone()], &mut none);
        assert_eq!(first.hand_barriers, 0, "one episode is no barrier");
        t0.extend([
            mk(Op::MutexLock, [M, 0, 0], 12),
            done(13),
            mk(Op::CondWait, [C, M, 0], 14),
            done(21),
            mk(Op::MutexUnlock, [M, 0, 0], 22),
            done(23),
        ]);
        t1.extend([
            mk(Op::MutexLock, [M, 0, 0], 15),
            done(16),
            mk(Op::CondBroadcast, [C, 0, 0], 17),
            done(18),
            mk(Op::MutexUnlock, [M, 0, 0], 19),
            done(20),
        ]);
        let p = plan(&[t0, t1], &mut none);
        assert_eq!(p.hand_barriers, 2);
        let id = HAND_BARRIER;
        // Releases in sequence order: t1's wait start (2), the broadcast (5), t0's unlock (7).
        assert_eq!(
            p.at(0, 0),
            &[Marker::MutexLock {
                addr: M,
                order: Order::after(0),
                spin: Spin::NONE,
                call: true,
            }]
        );
        assert_eq!(
            p.at(0, 2),
            &[
                Marker::Barrier {
                    id,
                    participants: 2,
                    lead: true
                },
                Marker::CondBroadcast { cond: C },
                Marker::Release { index: 1 },
            ]
        );
        assert_eq!(
            p.at(0, 4),
            &[
                Marker::MutexUnlock {
                    addr: M,
                    plain: false,
                },
                Marker::Release { index: 2 }
            ]
        );
        assert_eq!(
            p.at(1, 0),
            &[Marker::MutexLock {
                addr: M,
                order: Order::NONE,
                spin: Spin::NONE,
                call: true,
            }]
        );
        assert_eq!(
            p.at(1, 2),
            &[
                Marker::Release { index: 0 },
                Marker::Barrier {
                    id,
                    participants: 2,
                    lead: false
                },
                Marker::CondWait {
                    cond: C,
                    mutex: M,
                    wake: Order::after(1),
                    relock: Order::after(2),
                },
            ]
        );
        assert!(p.at(1, 3).is_empty(), "a Done writes nothing");
    }

    /// A Rust `Barrier` (a mutex and a condition variable on futexes) over two episodes of
    /// three threads, the last to arrive waking the others with one broadcast wake. Under QEMU
    /// a waiter's wait can find the word already changed by that broadcast and return EAGAIN
    /// without sleeping, whether the wake came before its wait or after: that waiter is still
    /// one of the episode, and the barrier is recognised either way (it was not, and which
    /// traces of a Rust barrier program had barriers depended on the host's scheduling).
    #[test]
    fn a_futex_barrier_is_found_when_a_waiter_did_not_sleep() {
        const C: u64 = 0x30;
        const ALL: u64 = i32::MAX as u64;
        let again = (-EAGAIN) as u64;
        // Episode 1: t1 and t2 sleep, t0 broadcasts at 5. Episode 2: t0 sleeps, t1 broadcasts
        // at 25, and t2's wait (at `wait`) returns EAGAIN.
        let threads = |wait: u64| {
            let t0 = vec![
                mk(Op::FutexWake, [C, ALL, 0], 5),
                done(6),
                mk(Op::FutexWait, [C, 0, 0], 20),
                done(30),
            ];
            let t1 = vec![
                mk(Op::FutexWait, [C, 0, 0], 1),
                done(10),
                mk(Op::FutexWake, [C, ALL, 0], 25),
                done(26),
            ];
            let t2 = vec![
                mk(Op::FutexWait, [C, 0, 0], 2),
                done(11),
                mk(Op::FutexWait, [C, 0, 0], wait),
                mk(Op::Done, [again, 0, 0], wait + 1),
            ];
            vec![t0, t1, t2]
        };
        // The wake before the wait (27), and after it (22).
        for wait in [27, 22] {
            let p = plan(&threads(wait), &mut none);
            assert_eq!(p.hand_barriers, 2, "wait at {wait}");
            assert!(
                matches!(
                    p.at(2, 2).first(),
                    Some(Marker::Barrier {
                        participants: 3,
                        lead: false,
                        ..
                    })
                ),
                "wait at {wait}: {:?}",
                p.at(2, 2)
            );
        }
        // Without the EAGAIN waiter in the second episode (it had returned 0 but nobody woke
        // it: a timeout), the episodes differ: no barrier.
        let mut ts = threads(27);
        ts[2][3] = mk(Op::Done, [(-110i64) as u64, 0, 0], 28);
        assert_eq!(plan(&ts, &mut none).hand_barriers, 0);
    }

    /// A Rust `Condvar` waiter whose futex wait returned at once (EAGAIN: the broadcast changed
    /// the word between its load and its wait) did not sleep but saw the change, and what it
    /// does next follows the broadcaster (rayon's `LockLatch`: `main` finds its job done). Its
    /// wait waits for the broadcast, whether the wake came before the wait or after it; before,
    /// it had no wake edge and `main` ran ahead of the pool's work in replay.
    #[test]
    fn a_futex_wait_that_found_the_word_changed_waits_for_the_broadcast() {
        const C: u64 = 0x40;
        const ALL: u64 = i32::MAX as u64;
        let again = (-EAGAIN) as u64;
        for wait in [7, 4] {
            let t0 = vec![mk(Op::FutexWake, [C, ALL, 0], 5)];
            let t1 = vec![
                mk(Op::FutexWake, [0x50, 1, 0], 1),
                mk(Op::FutexWait, [C, 0, 0], wait),
                mk(Op::Done, [again, 0, 0], wait + 2),
            ];
            let p = plan(&[t0, t1], &mut none);
            assert!(
                matches!(p.at(0, 0).last(), Some(Marker::Release { .. })),
                "wait at {wait}: {:?}",
                p.at(0, 0)
            );
            assert!(
                matches!(p.at(1, 1).last(), Some(Marker::FutexWait { wake, .. }) if *wake != Order::NONE),
                "wait at {wait}: {:?}",
                p.at(1, 1)
            );
        }
    }

    /// Broadcast episodes of one size are a barrier only if every episode involves the same
    /// threads. A producer (t0) that broadcasts each item to whichever single consumer is
    /// waiting — t1, then t2 — has two episodes of two threads each, but no team: no barrier
    /// (the waits keep their wake edges). The same two episodes between t0 and t1 only are a
    /// barrier episode each.
    #[test]
    fn a_broadcast_hand_off_between_changing_threads_is_no_barrier() {
        const C: u64 = 0x20;
        let consumer = |wait: u64| vec![mk(Op::CondWait, [C, 0x10, 0], wait), done(wait + 2)];
        let producer = vec![
            mk(Op::CondBroadcast, [C, 0, 0], 1),
            done(2),
            mk(Op::CondBroadcast, [C, 0, 0], 11),
            done(12),
        ];
        // t1 waits at 0 (woken by the broadcast at 1); t2 at 10 (woken by the one at 11).
        let p = plan(&[producer.clone(), consumer(0), consumer(10)], &mut none);
        assert_eq!(p.hand_barriers, 0, "changing pairs are no team");
        for t in [1, 2] {
            assert!(
                matches!(p.at(t, 0).last(), Some(Marker::CondWait { wake, .. }) if *wake != Order::NONE),
                "thread {t}: {:?}",
                p.at(t, 0)
            );
        }
        // The same pair twice: t1 waits at 0 and again at 10.
        let mut t1 = consumer(0);
        t1.extend(consumer(10));
        let p = plan(&[producer, t1], &mut none);
        assert_eq!(
            p.hand_barriers, 2,
            "one episode per broadcast of the same team"
        );
    }

    /// Signals are taken one per waiter, earliest first; a wait with no signal in its interval
    /// (a timeout) has no edge; a signal before a wait started never wakes it.
    #[test]
    fn each_signal_wakes_one_waiter_and_timeouts_have_no_edge() {
        const M: u64 = 0x10;
        const C: u64 = 0x20;
        // t1 and t2 wait from seq 1 and 2; t0 signals at 3 and 4 (lost before: at 0).
        let t0 = vec![
            mk(Op::CondSignal, [C, 0, 0], 0),
            mk(Op::CondSignal, [C, 0, 0], 3),
            mk(Op::CondSignal, [C, 0, 0], 4),
        ];
        let t1 = vec![mk(Op::CondWait, [C, M, 0], 1), done(6)];
        let t2 = vec![mk(Op::CondWait, [C, M, 0], 2), done(5)];
        // t3 waits after every signal and times out.
        let t3 = vec![mk(Op::CondWait, [C, M, 0], 7), done(8)];
        let p = plan(&[t0, t1, t2, t3], &mut none);
        assert_eq!(p.hand_barriers, 0, "signalled conditions are not barriers");
        let wake = |t: usize| match p.at(t, 0).last() {
            Some(Marker::CondWait { wake, .. }) => *wake,
            m => panic!("{m:?}"),
        };
        // Releases in sequence order: t2's wait start (seq 2, which t1's re-lock at 6 follows),
        // the signals at 3 and 4. t2 woke first and took the signal at 3; t1 the one at 4.
        assert_eq!(wake(2), Order::after(1));
        assert_eq!(wake(1), Order::after(2));
        assert_eq!(wake(3), Order::NONE);
        assert_eq!(p.at(0, 0), &[Marker::CondSignal { cond: C }]);
    }

    /// A channel's reads wait for the write whose bytes include their last, counted from the
    /// stream's first byte, whenever the traced run made them: a read of two items waits for
    /// the second, one whose bytes no traced write gave waits for nothing and is counted.
    #[test]
    fn a_channel_read_waits_for_the_write_that_gave_its_last_byte() {
        const S: u64 = 6;
        // (A write returns one sequence number after it began.)
        let w = |seq: u64| mk(Op::ChannelWrite, [S, 8, seq - 1], seq);
        // Writes of 8 bytes at 1, 5 and 9 (the last after every read) by thread 0.
        let t0 = vec![w(1), w(5), w(9)];
        // Thread 1 reads 16 bytes at 6, then 8 at 7 (before the write that gave them), then
        // 8 more than were ever written.
        let r = |n: u64, seq: u64| mk(Op::ChannelRead, [S, n, 0], seq);
        let t1 = vec![r(16, 6), r(8, 7), r(8, 10)];
        let p = plan(&[t0, t1], &mut none);
        let wait = |k: usize| p.at(1, k).to_vec();
        let addr = channel_addr(S);
        // Release indices in sequence order of the writes waited for: 5 then 9.
        assert_eq!(
            wait(0),
            [Marker::FutexWait {
                addr,
                wake: Order::after(0)
            }]
        );
        assert_eq!(
            wait(1),
            [Marker::FutexWait {
                addr,
                wake: Order::after(1)
            }]
        );
        assert!(wait(2).is_empty());
        assert!(
            p.at(0, 0).is_empty(),
            "a write nobody waits for: {:?}",
            p.at(0, 0)
        );
        assert_eq!(
            p.at(0, 1),
            &[Marker::FutexWake { addr }, Marker::Release { index: 0 }]
        );
        assert_eq!((p.channel_reads, p.channel_waits), (3, 2));
        assert!(p.deferred.is_empty(), "no buffer, no waits at loads");
        // The same reads into a buffer at 0x5000: the read of two items waits for the first
        // at once, and for the second before the first load of bytes 8-16 of its buffer.
        let t0 = vec![w(1), w(5), w(9)];
        let r = |n: u64, seq: u64| mk(Op::ChannelRead, [S, n, 0x5000], seq);
        let t1 = vec![r(16, 6), r(8, 7)];
        let p = plan(&[t0, t1], &mut none);
        assert_eq!(
            p.at(1, 0),
            &[Marker::FutexWait {
                addr,
                wake: Order::after(0)
            }]
        );
        let later = Marker::FutexWait {
            addr,
            wake: Order::after(1),
        };
        assert_eq!(p.deferred[&(1, 0)], (0x5000, vec![(8, 16, later)]));
        assert_eq!(
            p.at(1, 1),
            &[Marker::FutexWait {
                addr,
                wake: Order::after(2)
            }]
        );
        // Two writers: thread 0's 16 bytes began at 1 and returned at 10 (the pipe full for a
        // while), thread 2's 8 began at 3 and returned at 4. Thread 1's read of 8 bytes at 6
        // took thread 0's (begun first), whatever the order of the returns: it waits for
        // thread 0's write, not for thread 2's.
        let t0 = vec![mk(Op::ChannelWrite, [S, 16, 1], 10)];
        let t1 = vec![mk(Op::ChannelRead, [S, 8, 0], 6)];
        let t2 = vec![mk(Op::ChannelWrite, [S, 8, 3], 4)];
        let p = plan(&[t0, t1, t2], &mut none);
        let first = Marker::FutexWait {
            addr,
            wake: Order::after(0),
        };
        assert_eq!(p.at(1, 0), &[first]);
        assert_eq!(
            p.at(0, 0),
            &[Marker::FutexWake { addr }, Marker::Release { index: 0 }]
        );
        assert!(p.at(2, 0).is_empty());
    }

    /// A lock handed around three threads: each acquisition waits for the release just
    /// before it in the traced run, whoever asked first.
    #[test]
    fn lock_edges_follow_the_recorded_acquisition_order() {
        const M: u64 = 0x10;
        let lock = |s: u64, d: u64| [mk(Op::MutexLock, [M, 0, 0], s), done(d)];
        let unlock = |s: u64| [mk(Op::MutexUnlock, [M, 0, 0], s), done(s + 1)];
        // t0 holds it first; t2 asks at 2 but gets it at 9, after t1 (asked at 4, got it at 6).
        let t0: Vec<RawMark> = [lock(0, 1), unlock(3)].concat();
        let t1: Vec<RawMark> = [lock(5, 6), unlock(7)].concat();
        let t2: Vec<RawMark> = [lock(2, 9), unlock(10)].concat();
        let p = plan(&[t0, t1, t2], &mut none);
        let order = |t: usize| match p.at(t, 0) {
            [Marker::MutexLock { order, .. }] => *order,
            m => panic!("{m:?}"),
        };
        assert_eq!(order(0), Order::NONE);
        assert_eq!(order(1), Order::after(0), "after t0's unlock (seq 3)");
        assert_eq!(order(2), Order::after(1), "after t1's unlock (seq 7)");
        assert_eq!(
            p.at(2, 2),
            &[Marker::MutexUnlock {
                addr: M,
                plain: false,
            }],
            "nobody waits for the last unlock"
        );
    }
}
