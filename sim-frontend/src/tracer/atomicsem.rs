//! Semaphores built on a futex word in the program's own code (libstdc++'s C++20
//! `std::counting_semaphore` and `std::binary_semaphore`, and any semaphore made the same way),
//! read from a word's atomic history so that `futexlock.rs` replaces their acquisitions and
//! releases by semaphore markers: replay hands out units in simulated time, as it does for a
//! POSIX semaphore's interposed calls (docs/tracing.md, "How synchronization replays").
//!
//! **The signature.** The word is 32 bits and its count never goes below 0. A unit is taken by
//! a compare-and-swap that lowers the count by one (one that found another count changes
//! nothing: a failed try); units are given back by another atomic instruction that raises it
//! (`fetch_add`), and a release that found the count at 0 wakes the word's futex right after
//! (libstdc++ 12 always does: it does not count its sleepers). Every futex wake on the word
//! must be such a release's, and the word must be taken and given at least once each (by one
//! thread or several: a program's one-thread run times its semaphore as its many-thread run
//! does). A mutex's word (0 to 1 by a compare-and-swap, freed by a swap) never raises the
//! count before a wake, and a reference count is lowered by `fetch_sub`, not a
//! compare-and-swap, and never waited on: neither reads as a semaphore.
//!
//! **The initial count** is the count before the word's first instruction in sequence order:
//! one more than it left if that was a take; if it was a release, what it left less one (a
//! `release()` of one unit; the amount of a first release that did not start from 0 is not in
//! the capture), or 0 if it woke the futex.

use std::collections::HashMap;

use super::futexlock::Atomic;
use super::raw::AtomicKind;

/// Most instructions from a release to its futex wake (the notify call's way into the system
/// call) for the wake to be that release's.
pub const WAKE_PATH: u64 = 64;

/// The role of one instruction of a semaphore word's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Took a unit.
    Take,
    /// Gave units back.
    Give {
        /// The count was 0 before (the releaser wakes the futex).
        from_zero: bool,
    },
    /// A compare-and-swap that found another count than it expected.
    Failed,
}

/// A semaphore word read from its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Semaphore {
    /// The role of each instruction of the history, in the history's order.
    pub roles: Vec<Role>,
    /// The count before the first.
    pub initial: u64,
}

/// Reads a word's history as a semaphore's (see the module docs), or `None`. `events` are
/// (sequence number, thread, index in its atomics) in sequence order, `kind(raw)` the kind of
/// instruction `raw`, and `wakes` the futex wakes of the word: (thread, sequence number, and
/// the thread's instructions before it).
pub fn read(
    events: &[(u64, u32, usize)],
    atomics: &[Vec<Atomic>],
    kind: impl Fn(u32) -> Option<AtomicKind>,
    wakes: &[(u32, u64, u64)],
) -> Option<Semaphore> {
    // Each thread's wakes of the word in its program order: (position, sequence number).
    let mut by_thread: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for &(t, seq, at) in wakes {
        by_thread.entry(t).or_default().push((at, seq));
    }
    by_thread.values_mut().for_each(|v| v.sort_unstable());
    // Whether the thread's next wake after `a` is within the wake's path of it.
    let woke = |t: u32, a: &Atomic| {
        by_thread.get(&t).is_some_and(|v| {
            let k = v.partition_point(|x| x.0 <= a.at);
            v.get(k)
                .is_some_and(|&(at, seq)| at - a.at <= WAKE_PATH && seq > a.seq)
        })
    };
    let mut roles = Vec::with_capacity(events.len());
    let mut value: Option<u64> = None;
    let mut initial = 0;
    let (mut takes, mut gives) = (0u64, 0u64);
    for &(_, t, i) in events {
        let a = &atomics[t as usize][i];
        if a.size != 4 || a.plain || a.value >= 1 << 31 {
            return None;
        }
        let cas = match kind(a.raw) {
            Some(AtomicKind::CompareExchange) => true,
            Some(AtomicKind::Locked | AtomicKind::Arithmetic) => false,
            _ => return None,
        };
        let before = match value {
            Some(v) => v,
            None if cas => a.value + 1,
            None if woke(t, a) => 0,
            None => a.value.checked_sub(1)?,
        };
        if value.is_none() {
            initial = before;
        }
        let role = if cas && a.value + 1 == before {
            takes += 1;
            Role::Take
        } else if cas && a.value == before {
            Role::Failed
        } else if !cas && a.value > before {
            gives += 1;
            Role::Give {
                from_zero: before == 0,
            }
        } else {
            return None;
        };
        value = Some(a.value);
        roles.push(role);
    }
    // Every release from 0 wakes the futex right after; every wake follows one.
    let gives_wake = events.iter().zip(&roles).all(|(&(_, t, i), r)| {
        !matches!(r, Role::Give { from_zero: true }) || woke(t, &atomics[t as usize][i])
    });
    // Each thread's instructions on the word in its program order: (position, role).
    let mut mine: HashMap<u32, Vec<(u64, Role)>> = HashMap::new();
    for (&(_, t, i), &r) in events.iter().zip(&roles) {
        mine.entry(t)
            .or_default()
            .push((atomics[t as usize][i].at, r));
    }
    let wakes_follow = wakes.iter().all(|&(t, _, at)| {
        mine.get(&t).is_some_and(|v| {
            let k = v.partition_point(|x| x.0 < at);
            k > 0
                && matches!(v[k - 1].1, Role::Give { from_zero: true })
                && at - v[k - 1].0 <= WAKE_PATH
        })
    });
    (gives_wake && wakes_follow && takes > 0 && gives > 0).then_some(Semaphore { roles, initial })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracer::futexlock::NO_FRAME;

    /// Instruction 1 is the taking compare-and-swap, 2 the releasing `lock xadd`, 3 an
    /// `xchg`.
    fn kind(raw: u32) -> Option<AtomicKind> {
        match raw {
            1 => Some(AtomicKind::CompareExchange),
            2 => Some(AtomicKind::Locked),
            3 => Some(AtomicKind::Swap),
            _ => None,
        }
    }

    fn op(t: u32, at: u64, raw: u32, value: u64, seq: u64) -> (u32, Atomic) {
        (
            t,
            Atomic {
                at,
                raw,
                addr: 0x100,
                size: 4,
                value,
                seq,
                plain: false,
                frame: NO_FRAME,
            },
        )
    }

    /// A word's history: its events as `read` takes them, and the threads' atomics.
    type History = (Vec<(u64, u32, usize)>, Vec<Vec<Atomic>>);

    /// The history's events and the threads' atomics from (thread, atomic) in sequence order.
    fn history(ops: &[(u32, Atomic)]) -> History {
        let mut atomics: Vec<Vec<Atomic>> = vec![Vec::new(); 3];
        let mut events = Vec::new();
        for &(t, a) in ops {
            events.push((a.seq, t, atomics[t as usize].len()));
            atomics[t as usize].push(a);
        }
        (events, atomics)
    }

    /// A binary semaphore used as a lock by two threads: each takes the unit (1 to 0) and
    /// gives it back (0 to 1), waking the futex each time; thread 1 fails once.
    #[test]
    fn a_binary_semaphore_used_as_a_lock_is_read_with_its_initial_count() {
        let (ev, at) = history(&[
            op(0, 10, 1, 0, 1),
            op(1, 12, 1, 0, 2),
            op(0, 40, 2, 1, 3),
            op(1, 60, 1, 0, 5),
            op(1, 90, 2, 1, 6),
        ]);
        let wakes = [(0, 4, 45), (1, 7, 100)];
        let s = read(&ev, &at, kind, &wakes).expect("a semaphore");
        assert_eq!(s.initial, 1);
        let give = Role::Give { from_zero: true };
        assert_eq!(
            s.roles,
            vec![Role::Take, Role::Failed, give, Role::Take, give]
        );
        // A release from 0 that did not wake the futex, or a wake after no release: no.
        assert_eq!(read(&ev, &at, kind, &wakes[..1]), None);
        let stray = [(0, 4, 45), (1, 7, 100), (1, 3, 13)];
        assert_eq!(read(&ev, &at, kind, &stray), None);
    }

    /// A pool of four: the producer's first release finds 0 and wakes; later ones do not.
    #[test]
    fn a_counting_semaphore_starting_empty_reads_its_count_from_the_first_wake() {
        let (ev, at) = history(&[
            op(0, 10, 2, 1, 1),
            op(0, 20, 2, 2, 3),
            op(1, 25, 1, 1, 4),
            op(1, 30, 1, 0, 5),
        ]);
        let s = read(&ev, &at, kind, &[(0, 2, 15)]).expect("a semaphore");
        assert_eq!(s.initial, 0);
        assert_eq!(s.roles[1], Role::Give { from_zero: false });
    }

    /// A mutex's word (taken by a compare-and-swap from 0, freed by an exchange), a count
    /// lowered below zero, a count only ever raised, and a reference count (raised and
    /// lowered by `lock xadd`) are no semaphores. One thread alone taking and giving is one.
    #[test]
    fn words_that_are_not_semaphores_are_left_alone() {
        let (ev, at) = history(&[op(0, 10, 1, 1, 1), op(1, 20, 3, 0, 2)]);
        assert_eq!(read(&ev, &at, kind, &[]), None);
        let (ev, at) = history(&[op(0, 10, 2, 2, 1), op(1, 20, 2, 3, 2)]);
        assert_eq!(read(&ev, &at, kind, &[]), None);
        let (ev, at) = history(&[op(0, 10, 2, 2, 1), op(1, 20, 2, 1, 2)]);
        assert_eq!(read(&ev, &at, kind, &[]), None);
        let (ev, at) = history(&[op(0, 10, 1, 0, 1), op(0, 20, 2, 1, 2)]);
        assert!(read(&ev, &at, kind, &[(0, 3, 25)]).is_some());
        let (ev, at) = history(&[op(0, 10, 1, 0, 1), op(1, 20, 1, u64::from(u32::MAX), 2)]);
        assert_eq!(read(&ev, &at, kind, &[]), None);
    }
}
