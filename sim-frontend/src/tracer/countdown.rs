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
//!   reached zero and returned after (a latch's waiter). `W` waits at the futex wait;
//! * or, when neither is found (nobody was notified: the scope's owner looked only after
//!   every thread had finished), `W` is the one thread of the episode that only counted up
//!   (the owner, which spawned the others), and it waits at its first plain load of the word
//!   after its last count, found in its capture (`first_loads`), if its next recorded event
//!   came after the count reached zero in the traced run (then no counting thread waited for
//!   anything `W` did from that load on, and the wait cannot close a cycle);
//! * or, for a latch (the episode only counted down: each instruction left less than the one
//!   before, and the first is the same instruction as a later one, so a plain store had set
//!   the count), every other thread whose first access to the word after its last event
//!   before the zero is a plain load (it read zero: it looked after the latch opened), with
//!   the same condition on its next event.
//!
//! **A zero nobody waited for** is no episode's end when a thread that counted up in the
//! episode counts up again from zero without having looked at the count in between (its
//! capture is read for a plain load): a Rust scope's owner whose first threads had all
//! finished before it spawned the next, as the host happened to run them. The episode then
//! runs on to the next zero, and the owner's wait there covers every thread it counted.
//!
//! **The result** is a [`Dep`]: at that place `W` waits for each other thread's last
//! instruction in the episode, wherever it came in the traced run; and for what a count came
//! after. A thread that drops the last reference to something shared (a count of another word
//! taken to zero) and then, within [`NOTIFY_GAP`] instructions, counts down, counts for the
//! threads that had dropped theirs: a Rust scope's owner that drops the handle of a thread
//! that had already finished frees the thread's result and counts the thread down for it. In
//! simulated time that thread may finish later, and the count is its own: `W` waits for the
//! other holders' drops too (one step back, not transitively).

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
/// and their positions; `first_loads` finds plain loads in the capture. Returns the
/// dependences and how many of their waits were found at a plain load (nobody notified).
pub fn find(
    atomics: &[Vec<Atomic>],
    by_word: &HashMap<u64, Vec<(u64, u32, usize)>>,
    locks: &HashSet<u64>,
    futex: &HashSet<u64>,
    marks: &[Vec<RawMark>],
    mark_at: &[Vec<u64>],
    mut first_loads: impl FnMut(&[LoadQuery]) -> Vec<Option<u64>>,
) -> (Vec<Dep>, u64) {
    let at = |e: &(u64, u32, usize)| atomics[e.1 as usize][e.2];
    // Each thread's futex waits that returned 0, by word: (start seq, end seq, thread,
    // position).
    let mut waits: HashMap<u64, Vec<(u64, u64, u32, u64)>> = HashMap::new();
    for (t, ms) in marks.iter().enumerate() {
        for (k, m) in ms.iter().enumerate() {
            if m.op == Op::FutexWait
                && let Some(d) = ms.get(k + 1)
                && d.op == Op::Done
                && d.args[0] == 0
            {
                waits
                    .entry(m.args[0])
                    .or_default()
                    .push((m.seq, d.seq, t as u32, mark_at[t][k]));
            }
        }
    }
    let mut words: Vec<u64> = by_word.keys().copied().collect();
    words.sort_unstable();
    let mut out = Vec::new();
    // Counts that reached zero with nobody notified: the owner's query, the zero's number and
    // the episode.
    let mut unparked: Vec<(LoadQuery, u64, Vec<Entry>)> = Vec::new();
    let words: Vec<u64> = words.into_iter().filter(|w| !locks.contains(w)).collect();
    // Per thread, the counts it took to zero: (position, word, the other threads' last
    // instructions of the episode), by position.
    let mut zeroings: Zeroings = vec![Vec::new(); atomics.len()];
    // Each word's episodes that reached zero, in the order of `words`.
    let episodes: Vec<Vec<(usize, usize)>> = words
        .iter()
        .map(|x| zero_episodes(&by_word[x], |e| at(e).value))
        .collect();
    for (&x, eps) in words.iter().zip(&episodes) {
        let h = &by_word[&x];
        for &(begin, z) in eps {
            let (_, u, zi) = h[z];
            let others = last_of_others(atomics, &h[begin..=z], u);
            if !others.is_empty() {
                zeroings[u as usize].push((atomics[u as usize][zi].at, x, others));
            }
        }
    }
    zeroings.iter_mut().for_each(|z| z.sort_unstable());
    let dep = |word: u64, episode: &[Entry], waiter: u32, pos: u64, seq: u64| {
        dep(atomics, &zeroings, word, episode, waiter, pos, seq)
    };
    // The threads a count reaching zero let go on, through a futex: (thread, position,
    // sequence number of the event there).
    let woken = |x: u64, h: &[Entry], z: usize| {
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
        for &(s, e, t, pos) in waits.get(&x).map_or(&[][..], |w| w) {
            if s < zseq && zseq < e && t != u {
                waiters.push((t, pos, e));
            }
        }
        waiters
    };
    // A count that reached zero with nobody let go on, counted up again from zero by a
    // thread that had counted up in it, which had not looked at it in between (a Rust
    // scope's owner spawning its next thread after the ones before had all finished, as the
    // host happened to run them): the zero was no moment anybody waited for, and the count
    // goes on as one episode to the zero that was (the owner then waits for every thread
    // it counted, whichever finished first in the traced run). Whether the thread looked is
    // read from the capture: a pool that waits for its pending count at each round, found
    // zero at its look and counts up again for the next round, keeps its rounds.
    let mut joins: Vec<(u64, usize, LoadQuery)> = Vec::new();
    for (&x, eps) in words.iter().zip(&episodes) {
        let h = &by_word[&x];
        for &(begin, z) in eps {
            let Some(next) = h.get(z + 1) else { continue };
            let (r, na) = (next.1, at(next));
            let mut prev = if begin == 0 {
                0
            } else {
                at(&h[begin - 1]).value
            };
            let mut last = None;
            let mut up = false;
            for e in &h[begin..=z] {
                let v = at(e).value;
                if e.1 == r {
                    last = Some(at(e).at);
                    up |= v > prev;
                }
                prev = v;
            }
            // (A count only the thread made, a reference count nobody shares, is no scope's:
            // no look is asked of the capture for it, round after round.)
            let shared = h[begin..=z].iter().any(|e| e.1 != r);
            if na.value == 1 && up && shared && woken(x, h, z).is_empty() {
                let from = last.map_or(0, |a| a + 1);
                joins.push((
                    x,
                    z,
                    LoadQuery {
                        thread: r,
                        word: x,
                        from,
                        to: na.at.saturating_sub(1).max(from),
                    },
                ));
            }
        }
    }
    let joined: HashSet<(u64, usize)> = if joins.is_empty() {
        HashSet::new()
    } else {
        let queries: Vec<LoadQuery> = joins.iter().map(|j| j.2).collect();
        joins
            .iter()
            .zip(first_loads(&queries))
            .filter(|(_, look)| look.is_none())
            .map(|(j, _)| (j.0, j.1))
            .collect()
    };
    for (&x, eps) in words.iter().zip(&episodes) {
        let h = &by_word[&x];
        // Each joined zero's episode goes on into the next (the last has none to go on in).
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(eps.len());
        let mut carried = None;
        for (i, &(begin, z)) in eps.iter().enumerate() {
            let begin = carried.take().unwrap_or(begin);
            if i + 1 < eps.len() && joined.contains(&(x, z)) {
                carried = Some(begin);
            } else {
                merged.push((begin, z));
            }
        }
        for (begin, z) in merged {
            let episode = &h[begin..=z];
            let (zseq, u, _) = h[z];
            let waiters = woken(x, h, z);
            // Nobody was notified, and nobody waited: somebody looked at the count after it
            // reached zero, with a plain load, and went on. Where it looked is read from the
            // capture (below).
            if waiters.is_empty() && pure_countdown(episode, |e| at(e)) {
                // A latch (set by a plain store, counted down only) that nobody waited on: a
                // thread that looked at it after it opened read zero with a plain load. Each
                // other thread's first access to it after its last event before the zero, if
                // a load, is such a look (a store first: it reads its own value).
                for (t, a) in atomics.iter().enumerate().filter(|&(t, _)| t as u32 != u) {
                    let (ms, ma) = (
                        marks.get(t).map_or(&[][..], |m| m),
                        mark_at.get(t).map_or(&[][..], |m| m),
                    );
                    let (k, i) = (
                        ms.partition_point(|m| m.seq < zseq),
                        a.partition_point(|a| a.seq < zseq),
                    );
                    let before = [
                        k.checked_sub(1).and_then(|k| ma.get(k).copied()),
                        i.checked_sub(1).map(|i| a[i].at + 1),
                    ];
                    let Some(from) = before.into_iter().flatten().max() else {
                        continue;
                    };
                    let q = LoadQuery {
                        thread: t as u32,
                        word: x,
                        from,
                        to: u64::MAX,
                    };
                    unparked.push((q, zseq, episode.to_vec()));
                }
            } else if waiters.is_empty() {
                // Otherwise the thread that only counted up (the scope's owner, which spawned
                // the others) looked, at its first load of the counter after its last count.
                let prev = |j: usize| if j == 0 { 0 } else { at(&h[j - 1]).value };
                // Per thread of the episode: its counts up and down.
                let mut counts: Vec<(u32, u32, u32)> = Vec::new();
                for (j, e) in h.iter().enumerate().take(z + 1).skip(z + 1 - episode.len()) {
                    let k = match counts.iter().position(|c| c.0 == e.1) {
                        Some(k) => k,
                        None => {
                            counts.push((e.1, 0, 0));
                            counts.len() - 1
                        }
                    };
                    match at(e).value.cmp(&prev(j)) {
                        std::cmp::Ordering::Greater => counts[k].1 += 1,
                        std::cmp::Ordering::Less => counts[k].2 += 1,
                        std::cmp::Ordering::Equal => {}
                    }
                }
                // The owner only counted up; or it counted the zero itself, having counted up
                // more than down (a Rust scope's owner drops the handle of a thread that had
                // already finished, and with it the thread's count), or it made every count
                // (it dropped every thread's handle: the threads are in the episode only through
                // what `dep` finds its counts came after); then its look follows within a few
                // hundred instructions.
                let alone = counts.len() == 1;
                let owners: Vec<(u32, u64)> = counts
                    .iter()
                    .filter(|c| c.1 > 0 && (c.2 == 0 || (c.0 == u && (c.1 > c.2 || alone))))
                    .map(|c| (c.0, if c.0 == u { NOTIFY_GAP } else { u64::MAX }))
                    .collect();
                // (A count only its owner made, and after no other thread's drop, is the
                // thread's own business: no look is asked for.)
                if let [(s, within)] = owners[..]
                    && let Some(last) = episode.iter().rfind(|e| e.1 == s)
                    && dep(x, episode, s, 0, zseq).is_some()
                {
                    let from = at(last).at + 1;
                    unparked.push((
                        LoadQuery {
                            thread: s,
                            word: x,
                            from,
                            to: from.saturating_add(within),
                        },
                        zseq,
                        episode.to_vec(),
                    ));
                }
            }
            for (w, pos, seq) in waiters {
                if let Some(d) = dep(x, episode, w, pos, seq) {
                    out.push(d);
                }
            }
        }
    }
    if unparked.is_empty() {
        return (out, 0);
    }
    let mut by_load = 0;
    let queries: Vec<LoadQuery> = unparked.iter().map(|u| u.0).collect();
    let found = first_loads(&queries);
    for ((q, zseq, episode), pos) in unparked.into_iter().zip(found) {
        let Some(pos) = pos else { continue };
        // Only if every event of the owner from that load on came after the count reached
        // zero in the traced run (its load read zero): then none of the counting threads
        // waited for any of them, and the wait cannot close a cycle.
        let t = q.thread as usize;
        let k = mark_at[t].partition_point(|&a| a < pos);
        let i = atomics[t].partition_point(|a| a.at < pos);
        let next = match (marks[t].get(k).zip(mark_at[t].get(k)), atomics[t].get(i)) {
            (Some((m, &ma)), Some(a)) => Some(if ma <= a.at { m.seq } else { a.seq }),
            (Some((m, _)), None) => Some(m.seq),
            (None, Some(a)) => Some(a.seq),
            (None, None) => None,
        };
        if next.is_none_or(|s| s > zseq)
            && let Some(d) = dep(q.word, &episode, q.thread, pos, zseq)
        {
            out.push(d);
            by_load += 1;
        }
    }
    (out, by_load)
}

/// One instruction of a word's history: (sequence number, thread, index in its atomics).
type Entry = (u64, u32, usize);

/// A thread's first plain load of a word at or after a position, asked of the capture for a
/// count nobody was notified of ([`find`]'s `first_loads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadQuery {
    /// The thread.
    pub thread: u32,
    /// The counter's address.
    pub word: u64,
    /// The first position that may hold the load.
    pub from: u64,
    /// The last (`u64::MAX`: any).
    pub to: u64,
}

/// Whether `episode` only counted down: each instruction left less than the one before, and
/// the first (whose value before is not known: a plain store set it) is the same instruction
/// as a later one (a latch's `count_down`; a reference count's first step is a clone, another
/// instruction than its drops).
fn pure_countdown(episode: &[Entry], at: impl Fn(&Entry) -> Atomic) -> bool {
    episode.len() >= 2
        && episode
            .windows(2)
            .all(|p| at(&p[1]).value < at(&p[0]).value)
        && episode[1..]
            .iter()
            .any(|e| at(e).raw == at(&episode[0]).raw)
}

/// Per thread, the counts it took to zero (a reference count's last drop): (position, word,
/// the other threads' last instructions of that episode), by position.
type Zeroings = Vec<Vec<(u64, u64, Vec<(u32, u64, u64)>)>>;

/// The least value a count does not reach: a word that held one is a pointer (the head of a
/// free list, swapped in and out by compare-and-swaps), not a count. A 64-bit program's
/// addresses are above it under QEMU (its guest addresses start at 0x40_0000_0000), and so
/// are a position-independent program's natively; a count of 2^32 is not seen.
const COUNT_LIMIT: u64 = 1 << 32;

/// A word's episodes that reached zero from a value that was not zero: (index of the
/// episode's first instruction, index of the one that left zero), `value` giving what an
/// instruction left. An episode is every instruction since the word last held zero; one that
/// left a value of [`COUNT_LIMIT`] or more is no count's, and is not returned.
fn zero_episodes(h: &[Entry], value: impl Fn(&Entry) -> u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut begin = 0;
    for z in 1..h.len() {
        if value(&h[z]) != 0 {
            continue;
        }
        if value(&h[z - 1]) != 0 && h[begin..z].iter().all(|e| value(e) < COUNT_LIMIT) {
            out.push((begin, z));
        }
        begin = z + 1;
    }
    out
}

/// Per thread of `episode` but `waiter`, its last instruction in it: (thread, position just
/// after it, its sequence number), by thread.
fn last_of_others(atomics: &[Vec<Atomic>], episode: &[Entry], waiter: u32) -> Vec<(u32, u64, u64)> {
    let mut sources: Vec<(u32, u64, u64)> = Vec::new();
    for e in episode.iter().filter(|e| e.1 != waiter) {
        let a = atomics[e.1 as usize][e.2];
        match sources.iter_mut().find(|s| s.0 == e.1) {
            Some(s) => *s = (e.1, a.at + 1, e.0),
            None => sources.push((e.1, a.at + 1, e.0)),
        }
    }
    sources.sort_unstable();
    sources
}

/// `waiter`'s dependence, at `pos`, on every other thread's last instruction of a counter's
/// `episode` (`None` if the waiter was alone in it); and on what each count of the episode
/// (the waiter's own too) came after: a thread that counts down just after it dropped the
/// last reference to something (within [`NOTIFY_GAP`] instructions: a Rust scope's owner
/// dropping the handle of a thread that had finished, and with it the thread's count) counts
/// for the threads that had dropped theirs, and the waiter waits for their drops too.
fn dep(
    atomics: &[Vec<Atomic>],
    zeroings: &Zeroings,
    word: u64,
    episode: &[Entry],
    waiter: u32,
    pos: u64,
    seq: u64,
) -> Option<Dep> {
    let mut sources = last_of_others(atomics, episode, waiter);
    for e in episode {
        let at = atomics[e.1 as usize][e.2].at;
        let z = &zeroings[e.1 as usize];
        let i = z.partition_point(|x| x.0 < at.saturating_sub(NOTIFY_GAP));
        for (_, _, srcs) in z[i..]
            .iter()
            .take_while(|x| x.0 < at)
            .filter(|x| x.1 != word)
        {
            for &s in srcs.iter().filter(|s| s.0 != waiter) {
                match sources.iter_mut().find(|x| x.0 == s.0) {
                    Some(x) if x.1 < s.1 => *x = s,
                    Some(_) => {}
                    None => sources.push(s),
                }
            }
        }
    }
    sources.sort_unstable();
    (!sources.is_empty()).then_some(Dep {
        word,
        waiter,
        at: pos,
        from: pos,
        seq,
        sources,
        before: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracer::futexlock::NO_FRAME;

    fn no_loads(q: &[LoadQuery]) -> Vec<Option<u64>> {
        vec![None; q.len()]
    }

    fn atomic(at: u64, addr: u64, value: u64, seq: u64) -> Atomic {
        Atomic {
            at,
            raw: 0,
            addr,
            size: 8,
            value,
            seq,
            plain: false,
            frame: NO_FRAME,
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

    /// [`find`] on `a` with no lock words and no futex words: the waits it finds at the
    /// owner's plain loads (`ask` answers the load queries).
    fn find_unnotified(
        a: &[Vec<Atomic>],
        marks: &[Vec<RawMark>],
        mark_at: &[Vec<u64>],
        ask: impl FnMut(&[LoadQuery]) -> Vec<Option<u64>>,
    ) -> (Vec<Dep>, u64) {
        find(
            a,
            &histories(a),
            &HashSet::new(),
            &HashSet::new(),
            marks,
            mark_at,
            ask,
        )
    }

    /// A load-query answer that expects thread 0's one query for counter [`C`] over
    /// `from..to` and finds its load at `at`.
    fn one_query(from: u64, to: u64, at: u64) -> impl FnMut(&[LoadQuery]) -> Vec<Option<u64>> {
        move |q| {
            assert_eq!(
                q,
                &[LoadQuery {
                    thread: 0,
                    word: C,
                    from,
                    to
                }]
            );
            vec![Some(at)]
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
        let (deps, _) = find(
            &a,
            &histories(&a),
            &HashSet::new(),
            &HashSet::from([P]),
            &marks,
            &[vec![95, 95]],
            no_loads,
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

    /// A scope whose count reached zero between two spawns (threads 1 and 2 had finished
    /// before the owner, thread 0, spawned thread 3, as the host ran them) and again at its
    /// end, where thread 3 unparks the owner: the owner did not look at the count between
    /// its zero and its next spawn, so the count is one episode, and the owner waits at its
    /// park for all three threads. Had it looked there (a pool waiting for its pending count
    /// each round, and finding it zero), the rounds stay apart: it waits at that look for
    /// threads 1 and 2, and at its park for thread 3.
    #[test]
    fn a_count_the_host_let_reach_zero_between_spawns_is_one_episode() {
        let a = vec![
            vec![
                atomic(10, C, 1, 1),
                atomic(11, C, 2, 2),
                atomic(20, C, 1, 5), // counted up again from zero: the next spawn
                atomic(90, P, 0, 9), // park: 1 -> 0, no wait
            ],
            vec![atomic(50, C, 1, 3)],
            vec![atomic(70, C, 0, 4)],
            vec![atomic(60, C, 0, 7), atomic(61, P, 1, 8)],
        ];
        let marks = vec![
            vec![raw(Op::FutexWait, P, 100), raw(Op::Done, 0, 101)],
            vec![],
            vec![],
            vec![],
        ];
        let mark_at = [vec![95, 95], vec![], vec![], vec![]];
        // (where the owner looked between its zero and its next spawn, if it did)
        let run = |look: Option<u64>| {
            let mut asked: Vec<LoadQuery> = Vec::new();
            let (deps, _) = find(
                &a,
                &histories(&a),
                &HashSet::new(),
                &HashSet::from([P]),
                &marks,
                &mark_at,
                |q: &[LoadQuery]| {
                    asked.extend(q.iter().filter(|q| q.word == C));
                    q.iter().map(|q| look.filter(|_| q.word == C)).collect()
                },
            );
            // (waiter, where, sources)
            type Wait = (u32, u64, Vec<(u32, u64, u64)>);
            let deps: Vec<Wait> = deps
                .into_iter()
                .map(|d| (d.waiter, d.at, d.sources))
                .collect();
            (deps, asked)
        };
        let (deps, asked) = run(None);
        assert_eq!(
            asked,
            vec![LoadQuery {
                thread: 0,
                word: C,
                from: 12,
                to: 19
            }]
        );
        assert_eq!(
            deps,
            vec![(0, 90, vec![(1, 51, 3), (2, 71, 4), (3, 61, 7)])]
        );
        let (deps, _) = run(Some(15));
        assert_eq!(
            deps,
            vec![
                (0, 90, vec![(3, 61, 7)]),
                (0, 15, vec![(1, 51, 3), (2, 71, 4)]),
            ]
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
                &[],
                no_loads
            )
            .0
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
        let (deps, _) = find(
            &a,
            &histories(&a),
            &HashSet::new(),
            &HashSet::from([C]),
            &marks,
            &[vec![20, 20], vec![], vec![71]],
            no_loads,
        );
        assert_eq!(deps.len(), 1);
        assert_eq!((deps[0].waiter, deps[0].at), (0, 20));
        assert_eq!(deps[0].sources, vec![(1, 51, 3), (2, 71, 5)]);
    }

    /// A scope whose owner looked at the count only after every thread had finished: nobody
    /// was notified, and the owner (thread 0, the one that only counted up) waits at its first
    /// plain load of the counter after its last count, for both threads; unless its next
    /// recorded event came before the count reached zero (the load may have read it non-zero,
    /// and a counting thread may have waited for what the owner did next).
    #[test]
    fn an_owner_that_read_zero_without_parking_waits_at_its_load() {
        let a = vec![
            vec![atomic(10, C, 1, 1), atomic(11, C, 2, 2)],
            vec![atomic(50, C, 1, 3)],
            vec![atomic(70, C, 0, 4)],
        ];
        let ask = one_query(12, u64::MAX, 40);
        let after = vec![vec![raw(Op::MainEnd, 0, 9)], vec![], vec![]];
        let (deps, by_load) = find_unnotified(&a, &after, &[vec![45], vec![], vec![]], ask);
        assert_eq!(by_load, 1);
        assert_eq!(
            deps,
            vec![Dep {
                word: C,
                waiter: 0,
                at: 40,
                from: 40,
                seq: 4,
                sources: vec![(1, 51, 3), (2, 71, 4)],
                before: false,
            }]
        );
        let before = vec![vec![raw(Op::MainEnd, 0, 2)], vec![], vec![]];
        let (deps, by_load) = find_unnotified(
            &a,
            &before,
            &[vec![45], vec![], vec![]],
            |q: &[LoadQuery]| vec![Some(40); q.len()],
        );
        assert_eq!((deps.len(), by_load), (0, 0));
    }

    /// A word that holds addresses, not a count: the head of a free list that threads push
    /// chunks onto and pop them off with compare-and-swaps (glibc's malloc fastbins, shared by
    /// threads that share an arena), empty again at the last pop. Read as a count, the same
    /// history as above would make thread 0 wait at its load for the other threads' pushes and
    /// pops, wherever they came in the traced run: in a Rust program traced beside a CPU hog,
    /// the main thread then waited in `malloc`, between two of its spawns, for six threads to
    /// end (issue 42's host independence, 2026-12-07).
    #[test]
    fn a_word_of_addresses_is_no_count() {
        const P: u64 = 0x40_0006_0100; // chunk addresses, as a program traced under QEMU has
        let a = vec![
            vec![atomic(10, C, P, 1), atomic(11, C, P + 0x40, 2)],
            vec![atomic(50, C, P, 3)],
            vec![atomic(70, C, 0, 4)],
        ];
        let after = vec![vec![raw(Op::MainEnd, 0, 9)], vec![], vec![]];
        let (deps, by_load) = find_unnotified(
            &a,
            &after,
            &[vec![45], vec![], vec![]],
            |q: &[LoadQuery]| vec![Some(40); q.len()],
        );
        assert_eq!((deps.len(), by_load), (0, 0));
    }

    /// The owner counted the last thread down itself (it dropped the handle of a thread that
    /// had finished): having counted up more than down, it waits at its look within
    /// [`NOTIFY_GAP`] instructions of its zero, for the other thread's count.
    #[test]
    fn an_owner_that_counted_the_zero_itself_waits_at_its_look() {
        let a = vec![
            vec![
                atomic(10, C, 1, 1),
                atomic(11, C, 2, 2),
                atomic(60, C, 0, 5),
            ],
            vec![atomic(50, C, 1, 3)],
        ];
        let ask = one_query(61, 61 + NOTIFY_GAP, 70);
        let (deps, by_load) = find_unnotified(
            &a,
            &[vec![raw(Op::MainEnd, 0, 9)], vec![]],
            &[vec![80], vec![]],
            ask,
        );
        assert_eq!(by_load, 1);
        assert_eq!(deps.len(), 1);
        assert_eq!((deps[0].waiter, deps[0].at), (0, 70));
        assert_eq!(deps[0].sources, vec![(1, 51, 3)]);
    }

    /// The owner counted thread 2's part down itself, having dropped the last reference to
    /// thread 2's result (thread 2 had dropped its own before, at 30): the owner waits for
    /// thread 2's drop as for thread 1's count, though thread 2 never touched the counter;
    /// and so when it made every count itself.
    #[test]
    fn a_count_made_after_dropping_the_last_reference_waits_for_the_other_drops() {
        const R: u64 = 0x300; // thread 2's result, shared with the owner
        // The owner's waits, its count at 1,000 and its look at 1,010.
        let owner_waits = |a: &[Vec<Atomic>]| {
            find_unnotified(
                a,
                &[vec![raw(Op::MainEnd, 0, 9)], vec![], vec![]],
                &[vec![1020], vec![], vec![]],
                one_query(1001, 1001 + NOTIFY_GAP, 1010),
            )
            .0
        };
        let a = vec![
            vec![
                atomic(10, C, 1, 1),
                Atomic {
                    raw: 8, // the clone
                    ..atomic(11, R, 2, 2)
                },
                atomic(12, C, 2, 3),
                atomic(995, R, 0, 7),
                atomic(1000, C, 0, 8),
            ],
            vec![atomic(50, C, 1, 6)],
            vec![atomic(30, R, 1, 4)],
        ];
        let deps = owner_waits(&a);
        assert_eq!(deps.len(), 1);
        assert_eq!((deps[0].waiter, deps[0].at), (0, 1010));
        assert_eq!(deps[0].sources, vec![(1, 51, 6), (2, 31, 4)]);
        // Dropped long before its count (more than NOTIFY_GAP instructions): not its part.
        let mut far = a.clone();
        far[0][3].at = 1000 - NOTIFY_GAP - 1;
        assert_eq!(owner_waits(&far)[0].sources, vec![(1, 51, 6)]);
        // The owner made every count (it held thread 2's handle, the only thread here):
        // it waits for thread 2's drop alone.
        let alone = vec![
            vec![
                Atomic {
                    raw: 9, // the count up: another instruction than the count down
                    ..atomic(10, C, 1, 1)
                },
                Atomic {
                    raw: 8, // the clone
                    ..atomic(11, R, 2, 2)
                },
                atomic(995, R, 0, 7),
                atomic(1000, C, 0, 8),
            ],
            vec![],
            vec![atomic(30, R, 1, 4)],
        ];
        let deps = owner_waits(&alone);
        assert_eq!(deps.len(), 1);
        assert_eq!(deps[0].sources, vec![(2, 31, 4)]);
    }

    /// A thread's own count, up and down to zero round after round with nobody else's drop
    /// before it (a reference count no other thread shares), is no wait: no look is asked
    /// of the capture (before, one query per round, and a long thread's capture read once per
    /// query's word: 200,000 rounds of a tree build took the conversion from a minute to
    /// beyond 13).
    #[test]
    fn a_count_only_its_thread_made_asks_for_no_look() {
        let own: Vec<Atomic> = (0..1_000u64)
            .flat_map(|r| {
                [
                    Atomic {
                        raw: 9,
                        ..atomic(400 * r + 10, C, 1, 2 * r + 1)
                    },
                    atomic(400 * r + 20, C, 0, 2 * r + 2),
                ]
            })
            .collect();
        let a = vec![vec![], own];
        let (deps, by_load) = find_unnotified(
            &a,
            &[vec![raw(Op::MainEnd, 0, 1_000_000)], vec![]],
            &[vec![5], vec![]],
            |q| panic!("{} looks asked for", q.len()),
        );
        assert!(deps.is_empty());
        assert_eq!(by_load, 0);
    }

    /// A latch set by a plain store and counted down by threads 1 and 2 with one instruction
    /// (7), nobody waiting on it: thread 0, which looked after it opened, waits at its load
    /// (its first access after its last event before the zero, at 5) for both.
    /// A word whose first step is another instruction (8: a reference count's clone) is no
    /// latch, and nobody's look is asked about.
    #[test]
    fn a_latch_that_opened_before_its_waiter_looked_waits_at_the_look() {
        let latch = |first: u32| {
            vec![
                vec![],
                vec![Atomic {
                    raw: first,
                    ..atomic(50, C, 1, 3)
                }],
                vec![Atomic {
                    raw: 7,
                    ..atomic(60, C, 0, 5)
                }],
            ]
        };
        let marks = vec![
            vec![raw(Op::Create, 1, 1), raw(Op::MainEnd, 0, 9)],
            vec![],
            vec![],
        ];
        let mark_at = vec![vec![5, 100], vec![], vec![]];
        let a = latch(7);
        let ask = |q: &[LoadQuery]| {
            let expect = |thread, from, to| LoadQuery {
                thread,
                word: C,
                from,
                to,
            };
            assert_eq!(q, &[expect(0, 5, u64::MAX), expect(1, 51, u64::MAX)]);
            vec![Some(40), None]
        };
        let (deps, by_load) = find_unnotified(&a, &marks, &mark_at, ask);
        assert_eq!(by_load, 1);
        assert_eq!(
            deps,
            vec![Dep {
                word: C,
                waiter: 0,
                at: 40,
                from: 40,
                seq: 5,
                sources: vec![(1, 51, 3), (2, 61, 5)],
                before: false,
            }]
        );
        let a = latch(8);
        let (deps, _) = find_unnotified(&a, &marks, &mark_at, |q: &[LoadQuery]| {
            assert!(q.iter().all(|q| q.thread != 0), "{q:?}");
            vec![None; q.len()]
        });
        assert!(deps.is_empty());
    }
}
