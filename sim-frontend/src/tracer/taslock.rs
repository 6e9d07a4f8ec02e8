//! Test-and-set spin locks written by hand (`while (xchg(&w, 1)) while (w) pause; … w = 0`):
//! found in a capture's atomic instructions and the holders' plain stores, and handed to
//! `futexlock.rs` as locks, so that replay arbitrates them in simulated time like any mutex
//! (docs/tracing.md, "How synchronization replays").
//!
//! **Why apart.** A lock word of `futexlock.rs` is freed by an atomic instruction whose value
//! the plugin records. A test-and-set lock is freed by a plain store (a release `store(0)`
//! compiles to a `mov` on x86-64): its value is recorded only if some thread was watching the
//! line (spinning with `pause`), and it has no sequence number otherwise. Its atomic
//! instructions all leave the same value (the "taken" constant), whether they took the lock
//! or found it taken, so their values alone do not say which took it.
//!
//! **The pattern.** A *candidate* is a word whose atomic instructions, by at least two
//! threads, all leave one non-zero value. Each thread's plain stores to it are read from its
//! capture ([`Candidates::addrs`]). Read per thread in program order, a store must follow one
//! of the thread's atomic instructions on the word with no store between: the last atomic
//! instruction before it took the lock, the ones before that found it taken, and the store is
//! the release. In sequence order the acquisitions must then be a lock's: no thread retries
//! while it holds the word; every store whose value was recorded left 0. Anything else (a
//! store with no acquisition before it, a recorded non-zero store, a holder's atomic on the
//! word) means the word is no such lock and it is left alone.
//!
//! **Output.** Each release becomes an [`Atomic`] marked `plain`, leaving 0, inserted in its
//! thread's list, and numbered as the next acquisition of the word by anyone (the last one:
//! after every event of the word): `futexlock.rs` orders a plain release before an atomic
//! instruction of the same number, so that the failed attempts made while the word was held
//! come before it, and the history reads as a lock's. The store's own number, when recorded,
//! is not used: a store's callback can take its number after the load that read it.

use std::collections::{HashMap, HashSet};

use super::futexlock::{Atomic, NO_FRAME};

/// A plain store of a candidate word, read from its thread's capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainStore {
    /// Its position: instructions of the thread before it.
    pub at: u64,
    /// Its raw static index.
    pub raw: u32,
    /// The address.
    pub addr: u64,
    /// The store's size in bytes.
    pub size: u8,
    /// The value it left, if the plugin recorded it (the line was watched).
    pub value: Option<u64>,
}

/// The candidate words of a capture ([`candidates`]).
#[derive(Debug, Default)]
pub struct Candidates {
    /// Their addresses, whose plain stores the converter reads from each thread's capture.
    pub addrs: HashSet<u64>,
    /// The value each one's atomic instructions leave (the "taken" constant). The plugin
    /// reads a word's value just after the instruction, and a holder's plain store can land
    /// in between: an attempt that found the word taken can read 0 back. Such values are
    /// taken as this one once the word is found to be a lock.
    pub taken: HashMap<u64, u64>,
}

/// What [`find`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Test-and-set lock words recognised.
    pub words: usize,
    /// Candidates whose stores did not read as a lock's (left alone).
    pub rejected: usize,
}

/// The words whose atomic instructions, by at least two threads, all leave one non-zero value
/// (but for some that read 0 back, see [`Candidates::taken`]).
pub fn candidates(atomics: &[Vec<Atomic>]) -> Candidates {
    // Per word: the non-zero value its atomics leave (None: none yet; u64::MAX: several),
    // the first thread, whether there are others, and how many read 0 and how many not.
    let mut seen: HashMap<u64, (Option<u64>, u32, bool, u64, u64)> = HashMap::new();
    for (t, list) in atomics.iter().enumerate() {
        for a in list {
            let e = seen.entry(a.addr).or_insert((None, t as u32, false, 0, 0));
            if a.value == 0 {
                e.3 += 1;
            } else {
                e.4 += 1;
                if e.0.is_some_and(|v| v != a.value) {
                    e.0 = Some(u64::MAX);
                } else {
                    e.0 = Some(a.value);
                }
            }
            e.2 |= e.1 != t as u32;
        }
    }
    let mut out = Candidates::default();
    for (w, (v, _, many, zeros, others)) in seen {
        if let Some(v) = v
            && v != u64::MAX
            && many
            && zeros < others
        {
            out.addrs.insert(w);
            out.taken.insert(w, v);
        }
    }
    out
}

/// An acquisition of a word: (its sequence number, thread, its release's index among the
/// word's releases).
type Acq = (u64, u32, usize);

/// Adds the releases of the test-and-set lock words among the candidates to `atomics` (see
/// the module docs). `stores[t]` are thread `t`'s plain stores of candidate words, in program
/// order.
pub fn find(atomics: &mut [Vec<Atomic>], stores: &[Vec<PlainStore>], c: &Candidates) -> Found {
    let mut found = Found::default();
    let mut words: Vec<u64> = stores.iter().flatten().map(|s| s.addr).collect();
    words.sort_unstable();
    words.dedup();
    // Per thread, the releases to insert.
    let mut add: Vec<Vec<Atomic>> = vec![Vec::new(); atomics.len()];
    for w in words {
        let Some(&taken) = c.taken.get(&w) else {
            continue;
        };
        match lock_releases(atomics, stores, w, taken) {
            Some(rel) => {
                found.words += 1;
                for a in atomics.iter_mut().flatten().filter(|a| a.addr == w) {
                    a.value = taken;
                }
                for (t, a) in rel {
                    add[t as usize].push(a);
                }
            }
            None => found.rejected += 1,
        }
    }
    for (list, new) in atomics.iter_mut().zip(add) {
        if !new.is_empty() {
            list.extend(new);
            list.sort_by_key(|a| a.at);
        }
    }
    found
}

/// The releases of word `w` as atomics to insert (thread, release), if its history is a
/// test-and-set lock's.
fn lock_releases(
    atomics: &[Vec<Atomic>],
    stores: &[Vec<PlainStore>],
    w: u64,
    taken: u64,
) -> Option<Vec<(u32, Atomic)>> {
    let mut acqs: Vec<Acq> = Vec::new();
    // Per thread, the sequence numbers of its atomics on the word (failed or not).
    let mut tries: Vec<Vec<u64>> = vec![Vec::new(); atomics.len()];
    let mut releases: Vec<PlainStore> = Vec::new();
    for (t, list) in atomics.iter().enumerate() {
        let mine: Vec<&Atomic> = list.iter().filter(|a| a.addr == w).collect();
        tries[t] = mine.iter().map(|a| a.seq).collect();
        let mut k = 0;
        // The thread's atomics on `w` are read in program order against its stores.
        let mut last: Option<usize> = None;
        for s in stores.get(t).into_iter().flatten().filter(|s| s.addr == w) {
            if s.value.is_some_and(|v| v != 0 && v != taken) {
                return None;
            }
            while k < mine.len() && mine[k].at < s.at {
                last = Some(k);
                k += 1;
            }
            // A store with no attempt since the thread's previous store is no release.
            let i = last.take()?;
            acqs.push((mine[i].seq, t as u32, releases.len()));
            releases.push(*s);
        }
    }
    let mut takers: Vec<u32> = acqs.iter().map(|a| a.1).collect();
    takers.sort_unstable();
    takers.dedup();
    if takers.len() < 2 {
        return None;
    }
    acqs.sort_unstable();
    let end = atomics
        .iter()
        .flatten()
        .filter(|a| a.addr == w)
        .map(|a| a.seq)
        .max()
        .unwrap_or(0)
        + 1;
    let mut out = Vec::with_capacity(acqs.len());
    for (k, &(seq, t, r)) in acqs.iter().enumerate() {
        let next = acqs.get(k + 1).map_or(end, |a| a.0);
        // The holder makes no attempt while it holds the word.
        let own = &tries[t as usize];
        let from = own.partition_point(|&s| s <= seq);
        if own.get(from).is_some_and(|&s| s < next) {
            return None;
        }
        let s = releases[r];
        out.push((
            t,
            Atomic {
                at: s.at,
                raw: s.raw,
                addr: w,
                size: s.size,
                value: 0,
                seq: next,
                plain: true,
                frame: NO_FRAME,
            },
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xchg(at: u64, seq: u64) -> Atomic {
        Atomic {
            at,
            raw: 1,
            addr: 0x100,
            size: 4,
            value: 1,
            seq,
            plain: false,
            frame: NO_FRAME,
        }
    }

    fn store(at: u64, value: Option<u64>) -> PlainStore {
        PlainStore {
            at,
            raw: 2,
            addr: 0x100,
            size: 4,
            value,
        }
    }

    /// No word found, one rejected.
    const REJECTED: Found = Found {
        words: 0,
        rejected: 1,
    };

    /// [`find`] on the candidates of `a`.
    fn found(a: &mut [Vec<Atomic>], s: &[Vec<PlainStore>]) -> Found {
        let c = candidates(a);
        find(a, s, &c)
    }

    /// Two threads: thread 0 takes the word at 10 (seq 1), thread 1 fails at 5 (seq 2) and
    /// 20 (seq 3), thread 0 releases at 30, thread 1 takes it at 40 (seq 4), releases at 50.
    fn two() -> (Vec<Vec<Atomic>>, Vec<Vec<PlainStore>>) {
        (
            vec![
                vec![xchg(10, 1)],
                vec![xchg(5, 2), xchg(20, 3), xchg(40, 4)],
            ],
            vec![vec![store(30, None)], vec![store(50, Some(0))]],
        )
    }

    #[test]
    fn a_word_taken_by_exchanges_and_freed_by_its_holders_plain_stores_is_a_lock() {
        let (mut a, s) = two();
        assert!(candidates(&a).addrs.contains(&0x100));
        let f = found(&mut a, &s);
        assert_eq!(
            f,
            Found {
                words: 1,
                rejected: 0
            }
        );
        // Thread 0's release is numbered as thread 1's acquisition (4), after its failures.
        let r0: Vec<_> = a[0]
            .iter()
            .filter(|x| x.plain)
            .map(|x| (x.at, x.seq))
            .collect();
        assert_eq!(r0, vec![(30, 4)]);
        // The last release comes after every event of the word.
        let r1: Vec<_> = a[1]
            .iter()
            .filter(|x| x.plain)
            .map(|x| (x.at, x.seq))
            .collect();
        assert_eq!(r1, vec![(50, 5)]);
        // Inserted in program order.
        assert!(a[1].windows(2).all(|p| p[0].at <= p[1].at));
    }

    #[test]
    fn a_store_without_an_attempt_before_it_or_a_non_zero_store_is_no_release() {
        let (mut a, mut s) = two();
        s[0].insert(0, store(2, None));
        assert_eq!(found(&mut a, &s), REJECTED);
        assert!(a.iter().flatten().all(|x| !x.plain));
        let (mut a, mut s) = two();
        s[1][0].value = Some(2);
        assert_eq!(found(&mut a, &s), REJECTED);
    }

    #[test]
    fn a_holder_that_tries_again_while_it_holds_the_word_is_no_lock() {
        let (mut a, s) = two();
        // Thread 0 exchanges again at 20 (seq 3), before its release and thread 1's take.
        a[0].push(Atomic {
            at: 20,
            seq: 3,
            ..xchg(0, 0)
        });
        a[1][1].seq = 6;
        assert_eq!(found(&mut a, &s), REJECTED);
    }

    #[test]
    fn a_try_that_read_back_the_holders_zero_is_still_a_try() {
        // Thread 1's try at 20 read 0 back: thread 0's release landed before the plugin
        // read the word. The word is a lock all the same, and the try leaves 1.
        let (mut a, s) = two();
        a[1][1].value = 0;
        assert_eq!(
            found(&mut a, &s),
            Found {
                words: 1,
                rejected: 0
            }
        );
        assert_eq!(a[1][1].value, 1);
    }

    #[test]
    fn counters_and_words_of_one_thread_are_no_candidates() {
        let mut a = two().0;
        a[1][2].value = 2;
        assert!(candidates(&a).addrs.is_empty());
        let a = vec![vec![xchg(1, 1), xchg(2, 2)], vec![]];
        assert!(candidates(&a).addrs.is_empty());
    }
}
