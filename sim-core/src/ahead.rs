//! Front ends ahead (the exact model on more than one host thread): decoder host threads
//! that decode the simulated threads' records and predict their branches while the calling
//! thread times them.
//!
//! Each simulated thread has a [`Queue`] of decoded batches; each decoder host thread serves
//! a fixed set of queues (thread `t` goes to decoder `t mod decoders`), always filling the
//! emptiest one that has room, and sleeps only when every one of its queues is full
//! ([`DEPTH`] batches). The simulating thread takes batches from the queues and gives the
//! spent ones back for reuse; it wakes a sleeping decoder only when a queue it took from is
//! down to [`LOW`] batches, or when it finds one empty. A decoder therefore sleeps and wakes
//! once per several batches of all its threads, not once per batch of each: on a virtual
//! machine a wake-up is a system call and an inter-processor interrupt, and with one host
//! thread per simulated thread (as before) the simulating thread lost ~5 % of its time
//! waking front ends and being descheduled for them (`perf`, blocked_lu at 8 threads).
//!
//! A front end's results depend only on its own thread's records (see `engine::Front`), so
//! which decoder fills which batch, and when, changes no result.
//!
//! Liveness: a decoder that stops for any reason (end of its streams, the run's stop flag, a
//! panic) closes its queues on the way out ([`Closer`]), so the simulating thread never waits
//! for a batch that cannot come; the run sets the stop flag and wakes every decoder however
//! it ends ([`Decoders`]), so no decoder sleeps for ever.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;

use crate::engine::{Fed, Msg};

/// Records a decoder puts in one batch: more than the `BATCH_RECORDS` decoded on the
/// simulating thread itself, since each hand-over costs (with 512, dep-chain at 8 threads
/// ran 12 % slower on two host threads than with whole chunks of ~64 K records; with 4 K,
/// 25 % faster: a batch that size is still in the host's caches when it is read).
pub(crate) const AHEAD_RECORDS: usize = 4096;

/// Decoded batches a queue holds at most (besides the one being timed).
pub(crate) const DEPTH: usize = 3;

/// A queue down to this many batches after a take wakes its decoder.
pub(crate) const LOW: usize = 1;

/// One simulated thread's decoded batches, from its decoder to the simulating thread.
#[derive(Default)]
pub(crate) struct Queue {
    state: Mutex<Slots>,
    /// Signalled when a batch arrives or the queue closes while the simulating thread waits.
    arrived: Condvar,
}

#[derive(Default)]
struct Slots {
    /// Decoded batches (or the stream's end, or its error), oldest first.
    ready: VecDeque<Msg>,
    /// Spent batches, for the decoder to refill (their buffers keep their capacity).
    spent: Vec<Fed>,
    /// The simulating thread waits for this queue.
    waiting: bool,
    /// The decoder has stopped: nothing more will arrive.
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        // A panic while holding the lock leaves the slots consistent (each update is one
        // push or pop), so a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next batch (or end, or error) of the thread, giving back its `spent` batch;
    /// waits if none is decoded yet. `None` if the decoder stopped before sending the end.
    pub(crate) fn take(&self, spent: Fed, decoder: &Waker) -> Option<Msg> {
        let mut s = self.lock();
        s.spent.push(spent);
        loop {
            if let Some(msg) = s.ready.pop_front() {
                let low = s.ready.len() <= LOW;
                drop(s);
                if low {
                    decoder.wake();
                }
                return Some(msg);
            }
            if s.closed {
                return None;
            }
            s.waiting = true;
            decoder.wake();
            s = self.arrived.wait(s).unwrap_or_else(|p| p.into_inner());
            s.waiting = false;
        }
    }
}

/// How the simulating thread wakes one decoder.
#[derive(Default)]
pub(crate) struct Waker {
    /// The decoder is asleep or about to be: it found every queue full.
    sleeping: AtomicBool,
    /// The decoder's host thread (set by the decoder itself before it can first sleep).
    thread: OnceLock<Thread>,
}

impl Waker {
    /// Wakes the decoder if it sleeps (a wake-up it does not need costs it one pass over its
    /// queues; one it misses cannot happen: see [`decode`]).
    pub(crate) fn wake(&self) {
        if self.sleeping.load(Ordering::SeqCst)
            && let Some(t) = self.thread.get()
        {
            t.unpark();
        }
    }

    /// Records the calling thread as the decoder's.
    fn register(&self) {
        let _ = self.thread.set(std::thread::current());
    }
}

/// Closes a decoder's queues when it stops, however it stops.
struct Closer<'a>(&'a [Arc<Queue>]);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        for q in self.0 {
            q.lock().closed = true;
            q.arrived.notify_all();
        }
    }
}

/// The body of one decoder host thread: fills `queues` until every stream has ended or
/// `stop` is set. `fill(i, f)` decodes stream `i`'s next batch into `f` and returns `None`,
/// or returns the stream's end or error (`Msg::End`, `Msg::Failed`).
///
/// No wake-up is lost: the decoder registers its thread with `waker` before anything else,
/// and to sleep it sets `sleeping`, then looks at every queue under its lock; the simulating
/// thread takes a batch under the same lock, then reads `sleeping` (and, if set, the thread,
/// registered before the flag was first set). If the decoder looked first, the simulating
/// thread sees the flag and unparks it (an unpark before the park makes the park return at
/// once); if the take came first, the decoder sees the room it made and does not park.
pub(crate) fn decode(
    mut fill: impl FnMut(usize, &mut Fed) -> Option<Msg>,
    queues: &[Arc<Queue>],
    waker: &Waker,
    stop: &AtomicBool,
) {
    waker.register();
    let _closer = Closer(queues);
    let mut open = vec![true; queues.len()];
    // The emptiest open queue with room (ties: the first), if any.
    let pick = |open: &[bool]| {
        let mut best: Option<(usize, usize)> = None;
        for (i, q) in queues.iter().enumerate() {
            if !open[i] {
                continue;
            }
            let len = q.lock().ready.len();
            if len < DEPTH && best.is_none_or(|(_, l)| len < l) {
                best = Some((i, len));
            }
        }
        best.map(|(i, _)| i)
    };
    while !stop.load(Ordering::Relaxed) {
        let Some(i) = pick(&open) else {
            if !open.contains(&true) {
                return;
            }
            waker.sleeping.store(true, Ordering::SeqCst);
            if pick(&open).is_none() && !stop.load(Ordering::SeqCst) {
                std::thread::park();
            }
            waker.sleeping.store(false, Ordering::SeqCst);
            continue;
        };
        let q = &queues[i];
        let mut f = q.lock().spent.pop().unwrap_or_default();
        let msg = match fill(i, &mut f) {
            None => Msg::Batch(f),
            Some(end) => {
                open[i] = false;
                end
            }
        };
        let mut s = q.lock();
        s.ready.push_back(msg);
        if s.waiting {
            q.arrived.notify_one();
        }
    }
}

/// The decoders of a run (their host threads, as spawned): sets the stop flag and wakes
/// every decoder when dropped, so that they all return whatever ends the run (its end, an
/// error, a panic). An unpark makes what came before it visible to the thread it wakes, and
/// one before the park makes the park return at once, so a decoder sees the flag either way.
pub(crate) struct Decoders<'a> {
    pub(crate) stop: &'a AtomicBool,
    pub(crate) threads: Vec<Thread>,
}

impl Drop for Decoders<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in &self.threads {
            t.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch whose sequence number is its length (`mispredicted` holds nothing else here).
    fn seq(f: &Fed) -> usize {
        f.mispredicted.len()
    }

    /// Streams `i` of `lens[i]` batches, numbered 0, 1, ...; the batch numbered
    /// `panic_at` of stream 0, if any, panics instead.
    fn filler(
        lens: Vec<usize>,
        panic_at: Option<usize>,
    ) -> impl FnMut(usize, &mut Fed) -> Option<Msg> {
        let mut next = vec![0; lens.len()];
        move |i, f| {
            if next[i] == lens[i] {
                return Some(Msg::End);
            }
            assert!(
                i != 0 || Some(next[i]) != panic_at,
                "the decoder fails on purpose"
            );
            f.mispredicted.clear();
            f.mispredicted.resize(next[i], false);
            next[i] += 1;
            None
        }
    }

    /// Every stream's batches arrive complete and in order, then its end, whatever order the
    /// simulating thread takes them in and however often the decoder sleeps for full queues;
    /// spent batches come back to be refilled.
    #[test]
    fn batches_arrive_in_order_then_the_end() {
        let lens = vec![40, 1, 0, 75, 13];
        let queues: Vec<Arc<Queue>> = lens.iter().map(|_| Arc::default()).collect();
        let waker = Arc::new(Waker::default());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (qs, w, st) = (&queues, &waker, &stop);
            let h = s.spawn(move || decode(filler(lens.clone(), None), qs, w, st));
            let _decoders = Decoders {
                stop: &stop,
                threads: vec![h.thread().clone()],
            };
            let mut next = vec![0usize; queues.len()];
            let mut ended = vec![false; queues.len()];
            let mut reused = 0;
            let mut x = 0x9e37_79b9u32;
            while ended.contains(&false) {
                // A pseudo-random open stream; sometimes a pause, so queues fill up.
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let i = (x as usize) % queues.len();
                if ended[i] {
                    continue;
                }
                if x % 16 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
                let spent = Fed {
                    mispredicted: Vec::with_capacity(1000),
                    ..Fed::default()
                };
                match queues[i].take(spent, &waker) {
                    Some(Msg::Batch(f)) => {
                        assert_eq!(seq(&f), next[i], "stream {i}");
                        reused += (f.mispredicted.capacity() >= 1000) as usize;
                        next[i] += 1;
                    }
                    Some(Msg::End) => {
                        assert_eq!(next[i], [40, 1, 0, 75, 13][i], "stream {i} ended early");
                        ended[i] = true;
                    }
                    Some(Msg::Failed(_)) => panic!("no stream fails here"),
                    None => panic!("stream {i}: the decoder stopped before its end"),
                }
            }
            assert!(reused > 0, "no spent batch was refilled");
        });
    }

    /// A decoder that panics closes its queues: the simulating thread gets what was decoded,
    /// then `None`, and does not wait for ever.
    #[test]
    fn a_decoder_that_fails_closes_its_queues() {
        let queues: Vec<Arc<Queue>> = (0..2).map(|_| Arc::default()).collect();
        let waker = Waker::default();
        let stop = AtomicBool::new(false);
        let mut got = [0usize; 2];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                s.spawn(|| decode(filler(vec![100, 100], Some(5)), &queues, &waker, &stop));
                for (i, q) in queues.iter().enumerate() {
                    while let Some(msg) = q.take(Fed::default(), &waker) {
                        let Msg::Batch(f) = msg else {
                            panic!("stream {i} cannot end: it has 100 batches")
                        };
                        assert_eq!(seq(&f), got[i]);
                        got[i] += 1;
                    }
                }
            })
        }));
        assert!(r.is_err(), "the decoder's panic reaches the scope");
        assert_eq!(got[0], 5, "stream 0: the batches before the failure");
        // Nobody took from stream 1 before the failure: its queue held at most DEPTH
        // batches (how many depends on how fast stream 0 was taken: the emptiest goes first).
        assert!(got[1] <= DEPTH, "stream 1: {} batches", got[1]);
    }

    /// A decoder asleep on full queues returns when the run's decoders are dropped.
    #[test]
    fn dropping_the_decoders_stops_a_sleeping_one() {
        let queues: Vec<Arc<Queue>> = (0..3).map(|_| Arc::default()).collect();
        let waker = Arc::new(Waker::default());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (qs, w, st) = (&queues, &waker, &stop);
            let h = s.spawn(move || decode(filler(vec![1000; 3], None), qs, w, st));
            let decoders = Decoders {
                stop: &stop,
                threads: vec![h.thread().clone()],
            };
            // Nobody takes: every queue fills, and the decoder goes to sleep.
            while !waker.sleeping.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            for q in &queues {
                assert_eq!(q.lock().ready.len(), DEPTH);
            }
            drop(decoders);
            h.join().unwrap();
            for q in &queues {
                assert!(q.lock().closed);
            }
        });
    }
}
