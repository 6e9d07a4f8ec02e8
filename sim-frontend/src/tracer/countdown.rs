//! Waits for a counter that other threads count down to zero (Rust's `thread::scope` waiting
//! for its threads, a latch), found in the atomic instructions of a capture and turned into
//! one recorded dependence per counting thread, so that replay lets the waiter go on only when
//! every thread has done its part in simulated time, not when the thread that happened to
//! count last in the traced run did (docs/tracing.md, "How synchronization replays").
//!
//! **The pattern.** A word that is not a lock word has a history (sequence order, see
//! `futexlock.rs`) in which an instruction of thread `U` leaves 0 where the value before was
//! not 0: the count reached zero. Its *episode* is every instruction on the word since the
//! word last held 0. The thread the count reaching zero lets go on, `W`, is found one of two
//! ways:
//! * `U` then notifies through a futex word `P` (not a lock word): `U`'s next atomic
//!   instruction, within [`NOTIFY_GAP`] instructions, leaves a non-zero value in `P`, and the
//!   next instruction in `P`'s history, of another thread `W`, takes it back to 0 (it consumed
//!   the notification: Rust's thread parker, whether `W` had blocked or not). `W` waits there;
//! * or `W` waited on the futex of the word itself and its wait started before the count
//!   reached zero and returned after (a latch's waiter). `W` waits at the futex wait.
//!
//! **The result** is a [`Dep`]: at that place `W` waits for each other thread's last
//! instruction in the episode, wherever it came in the traced run.

use std::collections::{HashMap, HashSet};

use super::futexlock::Atomic;
use super::raw::Op;
use super::sync::RawMark;

/// Most instructions between the count reaching zero and the notification's atomic
/// instruction (Rust's `fetch_sub` then `unpark`: a few dozen).
pub const NOTIFY_GAP: u64 = 512;

/// One waiter's dependences on the threads of a counter's episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dep {
    /// The counter word.
    pub word: u64,
    /// The waiting thread.
    pub waiter: u32,
    /// Where it waits: before its instruction at this position.
    pub at: u64,
    /// The first of its instructions left out before `at` (a spin-wait's looking; `at` when
    /// none are).
    pub from: u64,
    /// The sequence number of the event there (the consuming instruction or the wait's end).
    pub seq: u64,
    /// Per other thread of the episode, its last instruction on the counter: (thread,
    /// position just after it, its sequence number), by thread.
    pub sources: Vec<(u32, u64, u64)>,
    /// The wait goes before the thread's own markers at `at` (a first look under a lock it
    /// had just taken: the wait belongs before that lock), not after them.
    pub before: bool,
}

/// Finds the waits for counters counted down to zero. `by_word` holds each word's history
/// (sequence number, thread, index in its atomics), sorted; `locks` the lock words; `futex`
/// the words some thread waited on or woke; `marks` and `mark_at` every thread's raw markers
/// and their positions.
pub fn find(
    atomics: &[Vec<Atomic>],
    by_word: &HashMap<u64, Vec<(u64, u32, usize)>>,
    locks: &HashSet<u64>,
    futex: &HashSet<u64>,
    marks: &[Vec<RawMark>],
    mark_at: &[Vec<u64>],
) -> Vec<Dep> {
    let at = |e: &(u64, u32, usize)| atomics[e.1 as usize][e.2];
    // Each thread's futex waits that returned 0: (word, start seq, end seq, position).
    let mut waits: Vec<(u64, u64, u64, u32, u64)> = Vec::new();
    for (t, ms) in marks.iter().enumerate() {
        for (k, m) in ms.iter().enumerate() {
            if m.op == Op::FutexWait
                && let Some(d) = ms.get(k + 1)
                && d.op == Op::Done
                && d.args[0] == 0
            {
                waits.push((m.args[0], m.seq, d.seq, t as u32, mark_at[t][k]));
            }
        }
    }
    let mut words: Vec<u64> = by_word.keys().copied().collect();
    words.sort_unstable();
    let mut out = Vec::new();
    for x in words.into_iter().filter(|w| !locks.contains(w)) {
        let h = &by_word[&x];
        let mut begin = 0;
        for z in 1..h.len() {
            let (before, after) = (at(&h[z - 1]).value, at(&h[z]).value);
            if after != 0 {
                continue;
            }
            let episode = &h[begin..=z];
            begin = z + 1;
            if before == 0 {
                continue;
            }
            let (zseq, u, zi) = h[z];
            let mut waiters: Vec<(u32, u64, u64)> = Vec::new();
            // A notification through a futex word the waiter takes back to 0.
            let za = atomics[u as usize][zi];
            if let Some(n) = atomics[u as usize].get(zi + 1)
                && n.at - za.at <= NOTIFY_GAP
                && n.addr != x
                && n.value != 0
                && futex.contains(&n.addr)
                && !locks.contains(&n.addr)
                && let Some(ph) = by_word.get(&n.addr)
            {
                let i = ph.partition_point(|e| e.0 <= n.seq);
                if let Some(c) = ph.get(i)
                    && c.1 != u
                    && at(c).value == 0
                {
                    waiters.push((c.1, at(c).at, c.0));
                }
            }
            // Waits on the counter itself across the moment it reached zero.
            for &(w, s, e, t, pos) in &waits {
                if w == x && s < zseq && zseq < e && t != u {
                    waiters.push((t, pos, e));
                }
            }
            for (w, pos, seq) in waiters {
                let mut sources: Vec<(u32, u64, u64)> = Vec::new();
                for e in episode.iter().filter(|e| e.1 != w) {
                    let a = at(e);
                    match sources.iter_mut().find(|s| s.0 == e.1) {
                        Some(s) => *s = (e.1, a.at + 1, e.0),
                        None => sources.push((e.1, a.at + 1, e.0)),
                    }
                }
                sources.sort_unstable();
                if !sources.is_empty() {
                    out.push(Dep {
                        word: x,
                        waiter: w,
                        at: pos,
                        from: pos,
                        seq,
                        sources,
                        before: false,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atomic(at: u64, addr: u64, value: u64, seq: u64) -> Atomic {
        Atomic {
            at,
            raw: 0,
            addr,
            size: 8,
            value,
            seq,
        }
    }

    fn histories(atomics: &[Vec<Atomic>]) -> HashMap<u64, Vec<(u64, u32, usize)>> {
        let mut h: HashMap<u64, Vec<(u64, u32, usize)>> = HashMap::new();
        for (t, a) in atomics.iter().enumerate() {
            for (i, x) in a.iter().enumerate() {
                h.entry(x.addr).or_default().push((x.seq, t as u32, i));
            }
        }
        h.values_mut().for_each(|v| v.sort_unstable());
        h
    }

    fn raw(op: Op, a: u64, seq: u64) -> RawMark {
        RawMark {
            op,
            args: [a, 0, 0],
            seq,
        }
    }

    const C: u64 = 0x100; // the counter
    const P: u64 = 0x200; // the waiter's parker

    /// A scope: thread 0 counts three threads in, threads 1..3 count out; thread 2 is the
    /// last in the traced run and unparks thread 0, which had not parked yet (its parker
    /// goes 0 -> 1 -> 0 without a wait). Thread 0 waits for all three, at its `fetch_sub`.
    #[test]
    fn the_scope_waits_for_every_thread_that_counted_down() {
        let a = vec![
            vec![
                atomic(10, C, 1, 1),
                atomic(11, C, 2, 2),
                atomic(12, C, 3, 3),
                atomic(90, P, 0, 9), // park: 1 -> 0, no wait
            ],
            vec![atomic(50, C, 2, 4)],
            vec![atomic(70, C, 0, 7), atomic(80, P, 1, 8)],
            vec![atomic(60, C, 1, 5)],
        ];
        // Somebody once waited on the parker: it is a futex word.
        let marks = vec![vec![raw(Op::FutexWait, P, 100), raw(Op::Done, 0, 101)]];
        let deps = find(
            &a,
            &histories(&a),
            &HashSet::new(),
            &HashSet::from([P]),
            &marks,
            &[vec![95, 95]],
        );
        assert_eq!(
            deps,
            vec![Dep {
                word: C,
                waiter: 0,
                at: 90,
                from: 90,
                seq: 9,
                sources: vec![(1, 51, 4), (2, 71, 7), (3, 61, 5)],
                before: false,
            }]
        );
    }

    /// A counter that reaches zero without notifying anybody (a reference count), or whose
    /// next instruction is on a word nobody waits on, gives no dependence; nor does a count
    /// that was already zero.
    #[test]
    fn a_count_reaching_zero_without_a_waiter_is_no_dependence() {
        let a = vec![
            vec![atomic(10, C, 1, 1), atomic(11, C, 2, 2)],
            vec![atomic(50, C, 1, 3)],
            vec![atomic(70, C, 0, 4), atomic(80, P, 1, 5)],
            vec![atomic(90, P, 0, 6)],
        ];
        assert!(
            find(
                &a,
                &histories(&a),
                &HashSet::new(),
                &HashSet::new(),
                &[],
                &[]
            )
            .is_empty()
        );
    }

    /// A latch: thread 0 waits on the counter's own futex from before the count reached zero
    /// until after; it waits for both counting threads.
    #[test]
    fn a_wait_on_the_counter_itself_waits_for_every_count() {
        let a = vec![
            vec![atomic(5, C, 2, 1)],
            vec![atomic(50, C, 1, 3)],
            vec![atomic(70, C, 0, 5)],
        ];
        let marks = vec![
            vec![raw(Op::FutexWait, C, 2), raw(Op::Done, 0, 6)],
            vec![],
            vec![raw(Op::FutexWake, C, 5)],
        ];
        let deps = find(
            &a,
            &histories(&a),
            &HashSet::new(),
            &HashSet::from([C]),
            &marks,
            &[vec![20, 20], vec![], vec![71]],
        );
        assert_eq!(deps.len(), 1);
        assert_eq!((deps[0].waiter, deps[0].at), (0, 20));
        assert_eq!(deps[0].sources, vec![(1, 51, 3), (2, 71, 5)]);
    }
}
