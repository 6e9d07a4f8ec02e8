//! One-shot publications through an atomic word: a thread sets a flag in a word with an
//! atomic read-modify-write (Rust's mpsc channel marks a message's slot written, `fetch_or`),
//! and another thread, having waited for that flag, sets another one in the same word with an
//! instruction of its own (the channel's receiver marks the slot read). When the receiver
//! found the message already there it did not spin, so no spin-wait (`spinwait.rs`) ties it
//! to the sender; replayed without an edge it would run ahead of the messages it consumed.
//!
//! **The pattern.** A word's atomic history (every traced read-modify-write on it, in sequence
//! order) splits into episodes where a value is not a superset of the bits before it (the word
//! was reset by plain stores between: a channel block's memory reused). An episode of exactly
//! two instructions, by two threads, at two different static instructions, the first leaving
//! a non-zero value and the second a strict superset of it, is a publication: the second
//! instruction waits, in simulated time, for the first. Not one: a counter (its steps are
//! additions, `lock xadd`, `add`, `sub`, `inc`, `dec`, whose values can look like a flag
//! added by accident of the bits: a Rust `Arc`'s count taken from 5 to 4 by one thread's
//! end and back to 5 by the next spawn, whichever the host ran first), a bitmap every thread sets at
//! the same instruction (order of no consequence), a second instruction that is an exchange
//! (its value is a store's, whatever it found), an episode of three or more (a race for the
//! word: who came first was the host's doing), and words that are locks, semaphores,
//! counters counted down, futex words or touched by untraced code (the caller excludes
//! them).

use std::collections::HashMap;

use super::countdown::Dep;
use super::futexlock::Atomic;
use super::raw::AtomicKind;

/// The publications' waits: for each, the second instruction's thread waits before it for
/// the first one (a [`Dep`] with one source and nothing left out). `by_word` holds each
/// word's history (sequence number, thread, index in its atomics), sorted; `excluded` says
/// which words are something else; `kind` what each static instruction is: neither of the
/// two may be an addition (a counter's step), nor the second an exchange, whose value does
/// not build on the one it found (a latch's `swap(SET)` after a waiter marked itself sleepy).
pub fn find(
    atomics: &[Vec<Atomic>],
    by_word: &HashMap<u64, Vec<(u64, u32, usize)>>,
    excluded: impl Fn(u64) -> bool,
    kind: impl Fn(u32) -> Option<AtomicKind>,
) -> Vec<Dep> {
    let adds = |raw: u32| kind(raw) == Some(AtomicKind::Arithmetic);
    let mut words: Vec<u64> = by_word
        .iter()
        .filter(|(w, ev)| ev.len() >= 2 && !excluded(**w))
        .map(|(w, _)| *w)
        .collect();
    words.sort_unstable();
    let mut out = Vec::new();
    for w in words {
        let ev = &by_word[&w];
        let x = |k: usize| &atomics[ev[k].1 as usize][ev[k].2];
        let mut i = 0;
        while i < ev.len() {
            let mut j = i + 1;
            while j < ev.len() && x(j).value & x(j - 1).value == x(j - 1).value {
                j += 1;
            }
            if j - i == 2 {
                let (a, b) = (x(i), x(i + 1));
                let (ta, tb) = (ev[i].1, ev[i + 1].1);
                if ta != tb
                    && a.raw != b.raw
                    && a.value != 0
                    && b.value != a.value
                    && !adds(a.raw)
                    && !matches!(kind(b.raw), Some(AtomicKind::Swap | AtomicKind::Arithmetic))
                {
                    out.push(Dep {
                        word: w,
                        waiter: tb,
                        at: b.at,
                        from: b.at,
                        seq: b.seq,
                        sources: vec![(ta, a.at + 1, a.seq)],
                        before: false,
                    });
                }
            }
            i = j;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::futexlock;
    use super::*;

    fn atomic(at: u64, raw: u32, addr: u64, value: u64, seq: u64) -> Atomic {
        Atomic {
            at,
            raw,
            addr,
            size: 8,
            value,
            seq,
            plain: false,
            frame: futexlock::NO_FRAME,
        }
    }

    /// A channel's slots: the sender marks each written (1, instruction 10), the receiver
    /// marks it read (3, instruction 20); slot 0x100's memory is reused for a second message
    /// (reset by plain stores: 3 then 1). Each read waits for its write, whichever thread
    /// the host ran first. A shared counter (one instruction, 1 then 2 then 3), a bitmap two
    /// threads set at one instruction, a race of three on a word, an exchange after a flag
    /// (0x600: a latch set over a waiter's mark), a count taken from 5 to 4 by one thread's
    /// `lock xadd` and back to 5 by another's (0x700: an `Arc` dropped at a thread's end and
    /// cloned for the next spawn) and an excluded word are none.
    #[test]
    fn a_flag_set_by_one_thread_and_added_to_by_another_is_a_publication() {
        let sender = vec![
            atomic(100, 10, 0x100, 1, 1),
            atomic(200, 10, 0x108, 1, 3),
            atomic(300, 10, 0x100, 1, 5),
            atomic(400, 30, 0x200, 1, 7),
            atomic(500, 40, 0x300, 1, 9),
            atomic(600, 50, 0x400, 1, 11),
            atomic(700, 10, 0x500, 1, 13),
            atomic(800, 60, 0x600, 1, 16),
            atomic(900, 70, 0x700, 5, 18),
            atomic(910, 70, 0x700, 5, 20),
        ];
        let receiver = vec![
            atomic(50, 20, 0x100, 3, 2),
            atomic(60, 20, 0x108, 3, 4),
            atomic(70, 20, 0x100, 3, 6),
            atomic(80, 30, 0x200, 2, 8),
            atomic(90, 40, 0x300, 3, 10),
            atomic(95, 51, 0x400, 3, 12),
            atomic(99, 52, 0x400, 7, 14),
            atomic(98, 20, 0x500, 3, 15),
            atomic(97, 21, 0x600, 3, 17),
            atomic(96, 71, 0x700, 4, 19),
        ];
        let atomics = vec![sender, receiver];
        let deps = find(
            &atomics,
            &futexlock::histories(&atomics),
            |w| w == 0x500,
            |raw| {
                Some(match raw {
                    21 => AtomicKind::Swap,
                    70 | 71 => AtomicKind::Arithmetic,
                    _ => AtomicKind::Locked,
                })
            },
        );
        // (word, waiter, where, its source: thread, just after, sequence number)
        type Wait = (u64, u32, u64, (u32, u64, u64));
        let got: Vec<Wait> = deps
            .iter()
            .map(|d| {
                assert_eq!((d.from, d.before, d.sources.len()), (d.at, false, 1));
                (d.word, d.waiter, d.at, d.sources[0])
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0x100, 1, 50, (0, 101, 1)),
                (0x100, 1, 70, (0, 301, 5)),
                (0x108, 1, 60, (0, 201, 3)),
            ]
        );
    }
}
