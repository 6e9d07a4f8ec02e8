//! Spin-waits on plain memory (a flag, a test-and-set lock's word, C++20 `std::barrier`'s
//! phase, a hand-written barrier's counter): the iterations a waiting thread ran were as many
//! as the host's scheduling made them, and the moment it went on followed the traced run. Each
//! one found is replaced by a wait, in simulated time, for the store that ended it
//! (docs/tracing.md, "How synchronization replays").
//!
//! **Input.** The plugin watches the lines a thread loaded just before a `pause` (the spin
//! hint) and records, with a sequence number, the value every store to a watched line left
//! and the value a load read when it differs from the last one that thread saw there
//! (`isim_trace_protocol::word`); every atomic read-modify-write records the value it left
//! too, and an `xchg` is a store here like a plain one (a sequentially consistent `store`
//! compiles to one; a counter's `lock xadd` or `cmpxchg` is an arrival, not a release).
//! [`Detector`] reads one thread's stream in the converter's first pass.
//!
//! **A spin** of thread `W` on address `A`: a *run* of loads of `A` that all read the value
//! `W` last saw there (not recorded: the value did not change), ended by a recorded load of
//! `A` reading another value. A run has at least one load besides the last; nothing between
//! its loads but looking: no plain store outside the thread's own stack, no atomic
//! read-modify-write, no synchronization marker but futex waits and wakes; at most [`SLACK`]
//! instructions between two loads, and at most [`PER_CHECK`] per load in all (plus
//! [`SLACK`]): a loop doing nothing but looking. **The store that ended it**: the recorded
//! store of the new value to `A` by another thread, the first one after `W` last saw the old
//! value there (or, if there is none, the last one before), in sequence order: the load's own
//! sequence number does not bound it, since a store's callback can take its number after the
//! load that read it took its own, but only with nothing else of the storer's numbered in
//! between (the store itself came first). The instructions after the run's first look, up to the
//! last load, are left out and `W` waits there for that store ([`find`]); futex waits among
//! them go too (whether the waiter slept was the host's doing). A change found at the first
//! look, with no spin, is a dependence all the same (the host happened to run the storer
//! first), and so is a thread's very first look at an address when it read another thread's
//! store ([`Detector::first_looks`]); if that store was not recorded (nobody watched the line
//! yet), the converter finds it by reading the captures again ([`unrecorded_wanted`],
//! [`place_unrecorded`]). A spin whose store was not recorded stays as traced.
//!
//! **A parker** (a Rust `thread::park` loop on a flag: look, the parker's atomic on its
//! state, a futex wait on that very word, look again) spins too: a look, such a futex wait
//! begun within [`PER_CHECK`] instructions of it and a load within [`SLACK`] of the wait that
//! reads another value are a spin from the first look on, the parker's code and futex calls
//! left out with it; the plugin watches the lines a thread loaded just before a futex wait,
//! as at a `pause`. A condition variable's wait (its last atomic releases a mutex, another
//! word) is none: what its thread looked at was under that mutex, whose order the replay
//! decides (`sync.rs`).
//!
//! **A poller** (`sched_yield` between its turns, atomics of its own within them: a rayon
//! worker looking for a job) is no spin, but at each yield the plugin watches what the turn
//! looked at and records the yield ([`Detector::yielded`]): a look that reads, after a yield,
//! another value than the thread saw there before it ([`Change::polled`]) waits for the
//! store it read, a plain one or an atomic read-modify-write, numbered before the look
//! ([`find`]).

use std::collections::{HashMap, HashSet};

use super::countdown::Dep;
use super::raw::Op;

/// Most instructions per look at the spun-on address in a spin (a `pause` loop, a back-off
/// with `sched_yield`).
pub const PER_CHECK: u64 = 64;
/// Instructions a spin may have beyond that (the way into a futex wait and back), and the
/// most between two looks of one spin.
pub const SLACK: u64 = 4096;

/// Instructions at most between a lock and a look under it (lock, load, unlock: a few).
const LOOK_UNDER_LOCK: u64 = 64;
/// Most addresses a thread is followed on at once.
const OPEN: usize = 8;

/// A recorded plain store of a watched line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Store {
    /// Its position: instructions of the thread before it.
    pub at: u64,
    /// The address.
    pub addr: u64,
    /// The value it left.
    pub value: u64,
    /// Its sequence number.
    pub seq: u64,
    /// It came right after the thread's atomic instruction, with no wait or call between (a
    /// barrier's last arrival storing the release).
    pub arrival: bool,
}

/// A load that read a value other than the one its thread last saw at that address: the end
/// of a spin, or a first look that already found the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// The address.
    pub addr: u64,
    /// The first instruction after the spin's first look (polling under a lock: the first
    /// look's lock); `to` if there was no spin.
    pub from: u64,
    /// Where the thread waits, the end of the instructions left out: the load that read the
    /// new value, or, polling under a lock, the lock call before that load.
    pub to: u64,
    /// The new value.
    pub value: u64,
    /// The load's sequence number.
    pub seq: u64,
    /// The sequence number of the thread's previous recorded access there (when it saw the
    /// old value, or a store of its own).
    pub since: u64,
    /// The thread waited for it and did nothing else since its last atomic instruction: a spin
    /// ended here, or, without one, the load came right after an atomic instruction (a
    /// barrier's arrival) with no other wait or call in between. Only such changes can be a
    /// barrier's arrivals: each was, in the traced run, before the store that released it (or
    /// just after its arrival, with nothing between that waits for others).
    pub clean: bool,
    /// Without a spin: the position of a lock the thread took just before this load (a look
    /// under a lock), where a wait for the store belongs.
    pub under_lock: Option<u64>,
    /// The thread's first recorded look at the address ([`Detector::first_looks`]): what it
    /// saw there before is unknown, and `since` is its last sequence number before the look.
    pub first: bool,
    /// Not clean only because of one change read between the thread's atomic instruction and
    /// this look (its index among the thread's changes), itself found without a spin right
    /// after that instruction: clean after all if no other thread's store left that value
    /// ([`find`]), a counter bumped atomically. C++'s `atomic::wait` reads its waiter pool's
    /// version, which every notify bumps, between a `std::barrier` arrival and its first look
    /// at the phase; a flag another thread stored is a wait that ended.
    pub after: Option<u32>,
    /// The address is on the thread's own stack: another thread's store there is a result
    /// handed to it (rayon's `join` latch in the waiting owner's frame, set by the thief), a
    /// data dependence whether or not any thread spun on it ([`find`]).
    pub own: bool,
    /// The thread yielded (`sched_yield`) since its previous recorded access there, or this
    /// is its first recorded look and it has yielded before (the line was watched from a
    /// yield on): it was polling, and this look may have found what it polled for changed by
    /// another thread (a rayon worker that finds a job in another worker's deque or the
    /// pool's injector) — a data dependence on the store it read, a plain one or an atomic
    /// read-modify-write numbered after this bound ([`find`]): the thread's previous recorded
    /// access there, or, at a first look, its yield before last (its previous turn's look,
    /// unrecorded, came after that).
    pub polled: Option<u64>,
    /// The position of the thread's last `sched_yield` before the look, if it yielded: a
    /// yield inside a lock's or a semaphore's attempt was waiting for that, not polling
    /// (`futexlock.rs`).
    pub yield_at: Option<u64>,
}

impl Change {
    /// A clean spin on `addr` (tests): its looks from `from` to the load at `to` that read
    /// `value` (numbered `seq`), the thread's previous access there numbered `since`.
    #[cfg(test)]
    pub fn clean_spin(addr: u64, from: u64, to: u64, value: u64, seq: u64, since: u64) -> Change {
        Change {
            addr,
            from,
            to,
            value,
            seq,
            since,
            clean: true,
            under_lock: None,
            first: false,
            after: None,
            own: false,
            polled: None,
            yield_at: None,
        }
    }

    /// Whether a spin came before it.
    pub fn spun(&self) -> bool {
        self.from < self.to
    }
}

/// An address a thread is followed on: the value it last saw there, and its current run of
/// looks (loads of the address with nothing but looking between them).
#[derive(Debug, Clone, Copy)]
struct Open {
    addr: u64,
    value: u64,
    /// The sequence number of the recorded access that saw `value`.
    seq: u64,
    /// The thread's yields before that access ([`Detector::yielded`]).
    yields: u64,
    /// The run's first load (position), its loads, and its last load.
    run_start: u64,
    run_loads: u64,
    last_load: u64,
    /// The thread did something besides looking since the run's last load: the next load
    /// starts a new run.
    broken: bool,
    /// Polling under a lock: the one mutex the run locks and unlocks, its first unlock and
    /// its last lock (positions).
    mutex: Option<u64>,
    first_unlock: Option<u64>,
    last_lock: Option<u64>,
    /// The lock (position, mutex) right before the run's first load, if the thread's last
    /// marker was one: the first look's own lock.
    first_lock: Option<(u64, u64)>,
    /// A futex wait the thread began within [`PER_CHECK`] instructions of its last load here,
    /// and that load (positions): it looked, then slept (a Rust `thread::park` loop on a flag).
    parked: Option<(u64, u64)>,
}

/// Finds one thread's spins and recorded stores as its stream is read.
#[derive(Debug, Default)]
pub struct Detector {
    open: Vec<Open>,
    /// The changes seen (spins' ends among them).
    pub changes: Vec<Change>,
    /// The recorded stores.
    pub stores: Vec<Store>,
    /// The thread's first recorded look at each address, when it read a value (another
    /// thread's store, or what memory held): a poller that found the word already changed at
    /// its very first look (the host ran the storer first) depends on that store all the same.
    /// Kept apart from `changes`, with no effect on the runs followed: most first looks read
    /// what no thread stored.
    pub first_looks: Vec<Change>,
    /// Spins whose end the plugin did not see: a run of looks at an address ended by the
    /// thread's own atomic instruction there, the last look's new value unrecorded. The plugin
    /// reads a load's value after the load, and another thread can change the word back in
    /// between (a test-and-set lock freed and taken again at once: the waiter's last look
    /// read 0, the plugin 1 again, the same as before). No store can be named for such a spin,
    /// but it was spinning all the same: a spin lock's attempts chain through these
    /// (`futexlock.rs`), and nothing else reads them. `value`, `seq` and `since` are those of
    /// the last value seen there.
    pub blind: Vec<Change>,
    /// The largest sequence number of the thread's recorded values so far.
    last_seq: u64,
    /// One past the position of its last atomic read-modify-write, and of its last marker or
    /// change seen (0: none).
    last_atomic: u64,
    last_event: u64,
    /// The last event was a change found without a spin right after an atomic instruction:
    /// its index in `changes`, and `last_event` before it.
    event_change: Option<(u32, u64)>,
    /// One past the position of the atomic instruction before the last one (0: none).
    prev_atomic: u64,
    /// The thread's last marker, if it was a lock: (position, mutex).
    last_lock_mark: Option<(u64, u64)>,
    /// The last access given to [`Detector::access`] was on the thread's own stack.
    last_own: bool,
    /// Per address whose entry was evicted from `open`: the value the thread last saw there,
    /// that access's sequence number, and the thread's yields before it.
    evicted: HashMap<u64, (u64, u64, u64)>,
    /// The thread's `sched_yield` calls so far, and the sequence numbers of its last two.
    yields: u64,
    yield_seqs: [u64; 2],
    /// The position of its last yield.
    yield_at: Option<u64>,
    /// The address of its last atomic read-modify-write.
    last_atomic_addr: u64,
}

impl Detector {
    /// A memory access of the instruction at position `at`: `own` if it is on the thread's
    /// own stack, `atomic` if the instruction is an atomic read-modify-write (which is doing,
    /// not looking).
    #[inline]
    pub fn access(&mut self, at: u64, addr: u64, store: bool, own: bool, atomic: bool) {
        self.last_own = own;
        if atomic && self.last_atomic != at + 1 {
            self.prev_atomic = self.last_atomic;
            self.last_atomic = at + 1;
        }
        if atomic {
            self.last_atomic_addr = addr;
        }
        if self.open.is_empty() {
            return;
        }
        for o in &mut self.open {
            if atomic
                && o.addr == addr
                && !o.broken
                && o.run_loads >= 2
                && at - o.last_load <= PER_CHECK
                && at - o.run_start <= PER_CHECK * o.run_loads + SLACK
            {
                // The loop left its looks for an atomic instruction on the word: its last
                // look read what let it go, whatever the plugin saw there.
                self.blind.push(Change {
                    addr,
                    from: o.run_start + 1,
                    to: o.last_load,
                    value: o.value,
                    seq: o.seq,
                    since: o.seq,
                    clean: true,
                    under_lock: None,
                    first: false,
                    after: None,
                    own,
                    polled: None,
                    yield_at: self.yield_at,
                });
            }
            if atomic || (store && !own) {
                o.broken = true;
            } else if !store && o.addr == addr {
                if o.broken || at - o.last_load > SLACK {
                    o.run_start = at;
                    o.run_loads = 0;
                    o.broken = false;
                    o.mutex = None;
                    o.first_unlock = None;
                    o.last_lock = None;
                    o.first_lock = self.last_lock_mark;
                }
                o.run_loads += 1;
                o.last_load = at;
            }
        }
    }

    /// The thread called `sched_yield` (its marker numbered `seq`): polling, part of looking
    /// (a spin's run goes on), and what it looks at again afterwards it polls
    /// ([`Change::polled`]).
    pub fn yielded(&mut self, seq: u64, at: u64) {
        self.yields += 1;
        self.yield_at = Some(at);
        self.yield_seqs = [self.yield_seqs[1], seq];
    }

    /// A marker `op` (its first argument `arg`) of the thread before its instruction at `at`.
    /// Futex waits and wakes, results and the ends of untraced calls are part of looking; so
    /// are the locks and unlocks of
    /// one mutex (polling under a lock: lock, read, unlock, yield, again); anything else means
    /// the thread is doing something besides looking.
    pub fn marker(&mut self, at: u64, op: Op, arg: u64) {
        // A parker's sleep: its atomic on the futex word itself just before the wait (Rust's
        // `park` marks its state parked, then waits on it). A condition variable's wait
        // releases a mutex before it (another word): what the thread looked at then was
        // under that mutex, whose order the replay decides (`sync.rs`'s skipped waits).
        if op == Op::FutexWait
            && self.last_atomic_addr == arg
            && at - self.last_atomic.min(at) <= PER_CHECK
        {
            for o in &mut self.open {
                if at - o.last_load <= PER_CHECK {
                    o.parked = Some((at, o.last_load));
                }
            }
        }
        if matches!(
            op,
            Op::FutexWait | Op::FutexWake | Op::Done | Op::Resume | Op::Suppress
        ) {
            return;
        }
        self.last_event = at + 1;
        self.event_change = None;
        self.last_lock_mark = (op == Op::MutexLock).then_some((at, arg));
        for o in &mut self.open {
            let poll = matches!(op, Op::MutexLock | Op::MutexUnlock)
                && !o.broken
                && o.mutex.is_none_or(|m| m == arg);
            if !poll {
                o.broken = true;
                continue;
            }
            o.mutex = Some(arg);
            if op == Op::MutexLock {
                o.last_lock = Some(at);
            } else if o.first_unlock.is_none() {
                o.first_unlock = Some(at);
            }
        }
    }

    /// The position of a lock the thread took just before a load at `at` (its last marker,
    /// at most [`LOOK_UNDER_LOCK`] instructions before): a look under that lock.
    fn look_under_lock(&self, at: u64) -> Option<u64> {
        self.last_lock_mark
            .filter(|&(p, _)| self.last_event == p + 1 && at - p <= LOOK_UNDER_LOCK)
            .map(|(p, _)| p)
    }

    /// The value an `xchg` at position `at` left at `addr` (its access was just given to
    /// [`Detector::access`]): a store that can end a spin like a plain one (a C11 or C++
    /// `store` with the default sequential consistency is an `xchg`, and so is a hand-built
    /// barrier's release of its waiters). It is an arrival when it came right after
    /// the thread's previous atomic instruction (the barrier's counter), as a plain store is.
    /// The thread's own view of the address follows it, as after a plain store of its own.
    pub fn atomic_store(&mut self, at: u64, addr: u64, value: u64, seq: u64) {
        let arrival = self.prev_atomic > self.last_event && at + 1 - self.prev_atomic <= SLACK;
        self.access_recorded(at, addr, true, value, seq, arrival, None);
    }

    /// A recorded value of the thread's (any access's, atomic or not) with sequence number
    /// `seq`, after it was given to the other methods.
    pub fn sequence(&mut self, seq: u64) {
        self.last_seq = self.last_seq.max(seq);
    }

    /// A recorded plain access at position `at` (its access was just given to
    /// [`Detector::access`]).
    pub fn recorded(&mut self, at: u64, addr: u64, store: bool, value: u64, seq: u64) {
        let near = at + 1 - self.last_atomic <= SLACK;
        let arrived = self.last_atomic > self.last_event && near;
        let after = self
            .event_change
            .filter(|&(_, before)| !arrived && near && self.last_atomic > before)
            .map(|(k, _)| k);
        self.access_recorded(at, addr, store, value, seq, arrived, after);
    }

    /// A recorded access; `arrived`: it came right after the thread's arrival (its atomic
    /// instruction) with no event between; `after`: but for one change ([`Change::after`]).
    #[allow(clippy::too_many_arguments)]
    fn access_recorded(
        &mut self,
        at: u64,
        addr: u64,
        store: bool,
        value: u64,
        seq: u64,
        arrived: bool,
        after: Option<u32>,
    ) {
        if store {
            self.stores.push(Store {
                at,
                addr,
                value,
                seq,
                arrival: arrived,
            });
        }
        let i = match self.open.iter().position(|o| o.addr == addr) {
            Some(i) => i,
            None => {
                if self.open.len() == OPEN {
                    let o = self.open.remove(0);
                    self.evicted.insert(o.addr, (o.value, o.seq, o.yields));
                }
                // An address whose entry was evicted (more than `OPEN` watched addresses
                // since): a load of another value than it last saw there is a change, seen
                // without a spin (a barrier's phase read after the thread looked elsewhere).
                if let Some((v, since, yields)) = self.evicted.remove(&addr)
                    && !store
                    && v != value
                {
                    self.changes.push(Change {
                        addr,
                        from: at,
                        to: at,
                        value,
                        seq,
                        since,
                        clean: arrived,
                        under_lock: self.look_under_lock(at),
                        first: false,
                        after,
                        own: self.last_own,
                        polled: (self.yields > yields).then_some(since),
                        yield_at: self.yield_at,
                    });
                    self.event_change =
                        arrived.then_some(((self.changes.len() - 1) as u32, self.last_event));
                    self.last_event = at + 1;
                    for x in &mut self.open {
                        x.broken = true;
                    }
                } else if !store {
                    self.first_looks.push(Change {
                        addr,
                        from: at,
                        to: at,
                        value,
                        seq,
                        since: self.last_seq,
                        clean: arrived,
                        under_lock: self.look_under_lock(at),
                        first: true,
                        after: None,
                        own: self.last_own,
                        polled: (self.yields > 0).then_some(self.yield_seqs[0]),
                        yield_at: self.yield_at,
                    });
                }
                self.open.push(Open {
                    addr,
                    value,
                    seq,
                    yields: self.yields,
                    run_start: at,
                    run_loads: 0,
                    last_load: at,
                    broken: true,
                    mutex: None,
                    first_unlock: None,
                    last_lock: None,
                    first_lock: None,
                    parked: None,
                });
                return;
            }
        };
        let o = &mut self.open[i];
        if !store && o.value == value {
            // The plugin forgot it had told this value (its memo is small): a look like the
            // others, part of the run.
            return;
        }
        if !store && o.value != value {
            // `run_loads` counts this load too: a spin looked at least once before.
            let mut spun = !o.broken
                && o.run_loads >= 2
                && at - o.run_start <= PER_CHECK * o.run_loads + SLACK;
            // A look, a parker's futex wait just after it and this load soon after the wait
            // are a spin too: the thread slept until the word changed, and whether it slept
            // was the host's doing (the parker's atomics and futex calls go with the spin).
            let parked = o
                .parked
                .filter(|&(p, _)| !spun && at - p <= SLACK)
                .map(|(_, look)| look);
            spun |= parked.is_some();
            // Polling under a lock leaves out whole iterations, from the first look's lock
            // (or, if it was not seen, its unlock) to the last lock: what remains is one
            // look under the lock, as when the first look found the value.
            let (from, to) = match (o.mutex, o.first_unlock, o.last_lock) {
                (None, ..) => (parked.unwrap_or(o.run_start) + 1, at),
                (Some(m), Some(u), Some(l)) if u < l => match o.first_lock {
                    Some((f, fm)) if fm == m => (f, l),
                    _ => (u, l),
                },
                _ => {
                    spun = false;
                    (at, at)
                }
            };
            let polled = (self.yields > o.yields).then_some(o.seq);
            // Without a spin, the look is a barrier's if it comes right after the thread's
            // arrival (an atomic instruction) with no other wait or call in between.
            self.changes.push(Change {
                addr,
                from: if spun { from } else { at },
                to: if spun { to } else { at },
                value,
                seq,
                since: o.seq,
                clean: spun || arrived,
                under_lock: if spun { None } else { self.look_under_lock(at) },
                first: false,
                after: if spun { None } else { after },
                own: self.last_own,
                polled,
                yield_at: self.yield_at,
            });
            self.event_change =
                (!spun && arrived).then_some(((self.changes.len() - 1) as u32, self.last_event));
            self.last_event = at + 1;
            // A wait that ended here is no looking at the other addresses.
            for (j, x) in self.open.iter_mut().enumerate() {
                x.broken |= j != i;
            }
        }
        let o = &mut self.open[i];
        o.value = value;
        o.seq = seq;
        o.yields = self.yields;
        o.broken = true;
        o.parked = None;
    }
}

/// A plain store whose value was not recorded (its line was not watched yet when it was made),
/// found by reading a thread's capture again ([`unrecorded_wanted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unrecorded {
    /// Its position: instructions of the thread before it.
    pub at: u64,
    /// The address.
    pub addr: u64,
    /// The largest sequence number the thread had taken before it (its last marker or
    /// recorded value): the store came after that event in the traced run.
    pub after: u64,
}

/// The addresses some thread spun on.
fn spun_on(changes: &[Vec<Change>]) -> HashSet<u64> {
    changes
        .iter()
        .flatten()
        .filter(|c| c.spun())
        .map(|c| c.addr)
        .collect()
}

/// The addresses whose unrecorded stores are wanted: those of first looks
/// ([`Change::first`]) at an address some thread spins on that read a value no other thread's
/// recorded store left there. The poller found the flag already set at its very first look,
/// and the store that set it came before anybody watched the line (nobody had polled yet).
pub fn unrecorded_wanted(changes: &[Vec<Change>], stores: &[Vec<Store>]) -> HashSet<u64> {
    let spun_on = spun_on(changes);
    let mut stored: HashMap<(u64, u64), Vec<u32>> = HashMap::new();
    for (t, ss) in stores.iter().enumerate() {
        for s in ss {
            stored.entry((s.addr, s.value)).or_default().push(t as u32);
        }
    }
    let mut want = HashSet::new();
    for (w, list) in changes.iter().enumerate() {
        for c in list.iter().filter(|c| c.first && spun_on.contains(&c.addr)) {
            let others = stored
                .get(&(c.addr, c.value))
                .is_some_and(|ts| ts.iter().any(|&t| t != w as u32));
            if !others {
                want.insert(c.addr);
            }
        }
    }
    want
}

/// Gives each first look [`unrecorded_wanted`] asked for the store it read, as a recorded
/// store of the value it read: the last unrecorded store to its address by another thread
/// that may have come before the look (made after an event numbered before the look's own
/// number), the latest being the one whose value a later load reads. `found[t]` are thread
/// `t`'s unrecorded stores to the wanted addresses, in order.
pub fn place_unrecorded(
    changes: &[Vec<Change>],
    stores: &mut [Vec<Store>],
    found: &[Vec<Unrecorded>],
) {
    let wanted = unrecorded_wanted(changes, stores);
    let mut placed: HashSet<(u32, u64)> = HashSet::new();
    for (w, list) in changes.iter().enumerate() {
        for c in list.iter().filter(|c| c.first && wanted.contains(&c.addr)) {
            let best = found
                .iter()
                .enumerate()
                .filter(|&(u, _)| u != w)
                .flat_map(|(u, ss)| ss.iter().map(move |s| (u, s)))
                .filter(|(_, s)| s.addr == c.addr && s.after < c.seq)
                .max_by_key(|(u, s)| (s.after, *u));
            if let Some((u, s)) = best
                && placed.insert((u as u32, s.at))
            {
                stores[u].push(Store {
                    at: s.at,
                    addr: s.addr,
                    value: c.value,
                    seq: s.after,
                    arrival: false,
                });
            }
        }
    }
}

/// A recorded store as a candidate: (sequence number, thread, position).
type Candidate = (u64, u32, u64);

/// Per store read (by its sequence number): its thread, its position, and the changes that
/// read it (thread, index in its changes).
type Readers = HashMap<u64, (u32, u64, Vec<(u32, usize)>)>;

/// A barrier built on a spun-on address: one participant's arrival at one episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierMark {
    /// The participant.
    pub thread: u32,
    /// Its instructions left out before `at` (its spinning; `at` when none).
    pub from: u64,
    /// Where it arrives: before its instruction at this position.
    pub at: u64,
    /// The episode (dense from 0 over the trace).
    pub episode: u64,
    /// Participants.
    pub participants: u32,
}

/// What [`find`] returns.
#[derive(Debug, Default)]
pub struct SpinWaits {
    /// Changes outside barriers, as dependences on the stores they read (a spin's range
    /// `from..at` left out).
    pub deps: Vec<Dep>,
    /// Barriers built on spun-on addresses, every participant's arrival at every episode.
    pub barriers: Vec<BarrierMark>,
    /// Addresses those barriers were found on.
    pub barrier_words: u64,
    /// Spins found whose ending store was not recorded (left as traced).
    pub unmatched: u64,
    /// Polled looks ([`Change::polled`]) as dependences on the stores they read (kept apart
    /// from `deps`, to be counted apart).
    pub polls: Vec<Dep>,
}

/// Turns every thread's spins into waits. `changes[t]` and `stores[t]` are thread `t`'s; changes on
/// `skip` addresses (lock words, replayed as mutexes) are left alone; `taken[t]` are thread `t`'s
/// instruction ranges `[start, end)` other rewriting already uses (a spin overlapping one stays as
/// traced).
///
/// Each change is matched to the store it read: the first recorded store of its value there, by
/// another thread, after the thread last saw the old value (the load's own sequence number does not
/// bound it: the store's callback may have taken its number after the load's, when its thread
/// numbered nothing between the two); if none, the last one before the load. **A barrier**: an address some thread spun on, whose stores, each with the
/// threads whose changes read it, form episodes of which at least two, and at least half, are
/// complete: the whole team (`n ≥ 2` threads: every thread of any episode) took part once, the
/// store was an arrival ([`Store::arrival`]: the storer had just arrived, it did not hand something
/// over) and every reader's change [`Change::clean`]: a sense-reversing barrier, C++'s
/// `std::barrier` phase. (An episode is incomplete when its store came before the line was watched,
/// so that some readers were not seen.) Who stored in the traced run (who arrived last there) is
/// the host's doing, so each complete episode becomes a barrier of `n` participants: the storer at
/// its store, the others at their reading load (their spinning left out). **Otherwise** (other
/// addresses, incomplete episodes) each change waits for the store it read, whether the thread spun
/// first or found it at its first look (the host ran the storer first): a data dependence, on an
/// address some thread spins on (not on a word that only shares a watched line, such as the data a
/// spun-on lock word protects, which the lock's arbitration orders).
pub fn find(
    changes: &[Vec<Change>],
    stores: &[Vec<Store>],
    rmw: &[Vec<Store>],
    skip: &HashSet<u64>,
    taken: &[Vec<(u64, u64)>],
) -> SpinWaits {
    // Per address and value, the recorded stores: (sequence number, thread, position).
    let mut by: HashMap<(u64, u64), Vec<Candidate>> = HashMap::new();
    // The stores that came right after their thread's arrival: (thread, sequence number).
    let mut arrivals: HashSet<(u32, u64)> = HashSet::new();
    for (t, ss) in stores.iter().enumerate() {
        for s in ss {
            by.entry((s.addr, s.value))
                .or_default()
                .push((s.seq, t as u32, s.at));
            if s.arrival {
                arrivals.insert((t as u32, s.seq));
            }
        }
    }
    by.values_mut().for_each(|v| v.sort_unstable());
    // A poller's look reads atomic read-modify-writes too (the pool injector's tail index,
    // moved by a compare-and-swap): per address and value, both kinds, for polled changes.
    let mut by_polled: HashMap<(u64, u64), Vec<Candidate>> = HashMap::new();
    let polled: HashSet<(u64, u64)> = changes
        .iter()
        .flatten()
        .filter(|c| c.polled.is_some())
        .map(|c| (c.addr, c.value))
        .collect();
    for kind in [stores, rmw] {
        for (t, ss) in kind.iter().enumerate() {
            for s in ss.iter().filter(|s| polled.contains(&(s.addr, s.value))) {
                by_polled
                    .entry((s.addr, s.value))
                    .or_default()
                    .push((s.seq, t as u32, s.at));
            }
        }
    }
    by_polled.values_mut().for_each(|v| v.sort_unstable());
    // Barriers and dependences are found only on addresses some thread spins on (a word that
    // only shares its line with one, the data a spun-on lock word protects, read and written
    // right after each acquisition, is left to the lock's arbitration), and on the reader's
    // own stack.
    let spun_on = spun_on(changes);
    // Each change's store, if found: (store's seq, its thread, its position).
    let mut read: Vec<Vec<Option<(u64, u32, u64)>>> = Vec::with_capacity(changes.len());
    // Per thread, the sequence numbers of its recorded stores and atomic instructions, in
    // order: a store numbered after a load can have been read by it only if its thread
    // recorded nothing between the two (see `raced`).
    let numbered: Vec<Vec<u64>> = stores
        .iter()
        .zip(rmw.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(ss, rs)| {
            let mut v: Vec<u64> = ss
                .iter()
                .chain(rs.into_iter().flatten())
                .map(|s| s.seq)
                .collect();
            v.sort_unstable();
            v
        })
        .collect();
    // A store numbered after the load that read its value: its callback took its number
    // after the load's, the store itself having come first. Between a store and its callback
    // its thread runs nothing, so nothing else of that thread is numbered between the load and
    // the store; a store with something between came after the look (the value it read was an
    // earlier store's, of the same value), and waiting for it can close a cycle the replay has
    // to break (16 workers each taking a recursive mutex, each looking at its owner field
    // first: each look matched to another worker's later unlock).
    let raced = |load: u64, s: &(u64, u32, u64)| {
        let v = &numbered[s.1 as usize];
        let k = v.partition_point(|&q| q <= load);
        v.get(k).is_none_or(|&q| q >= s.0)
    };
    // Per address, per store read (by sequence number): its thread and position, and the
    // changes that read it (thread, index).
    let mut episodes: HashMap<u64, Readers> = HashMap::new();
    for (w, list) in changes.iter().enumerate() {
        let mut r = Vec::with_capacity(list.len());
        for (k, c) in list.iter().enumerate() {
            if skip.contains(&c.addr) {
                r.push(None);
                continue;
            }
            let others: Vec<&(u64, u32, u64)> = by
                .get(&(c.addr, c.value))
                .map(|v| v.iter().filter(|s| s.1 != w as u32).collect())
                .unwrap_or_default();
            let i = others.partition_point(|s| s.0 <= c.since);
            let j = others.partition_point(|s| s.0 < c.seq);
            // A look at the reader's own stack (a frame's latch) takes the last such store
            // before it, and after the reader's own last access there if it saw one: the first
            // after that (or, at a first look, after the reader's last event) may be a later
            // frame's at the same address, a wait the replay cannot meet.
            let found = if c.own {
                j.checked_sub(1)
                    .filter(|&k| c.first || k >= i)
                    .and_then(|k| others.get(k))
            } else {
                others
                    .get(i)
                    .filter(|s| s.0 < c.seq || raced(c.seq, s))
                    .or_else(|| j.checked_sub(1).and_then(|k| others.get(k)))
            }
            .map(|&&s| s);
            if let Some((seq, u, at)) = found
                && !c.first
            {
                episodes
                    .entry(c.addr)
                    .or_default()
                    .entry(seq)
                    .or_insert((u, at, Vec::new()))
                    .2
                    .push((w as u32, k));
            }
            r.push(found);
        }
        read.push(r);
    }
    // Clean, or clean but for a change between its arrival and it that read no other
    // thread's store: a counter bumped atomically ([`Change::after`]).
    let clean = |w: usize, k: usize| {
        let c = &changes[w][k];
        c.clean || c.after.is_some_and(|j| read[w][j as usize].is_none())
    };
    // Each thread's ranges by start, with the largest end so far: a range that starts by
    // `at` and ends after `from` exists iff the largest end among those starting by `at`
    // does (a search, not a scan: a semaphore's thousands of takes are ranges too).
    let by_start: Vec<(Vec<u64>, Vec<u64>)> = taken
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.sort_unstable();
            let ends = r
                .iter()
                .scan(0u64, |m, &(_, e)| {
                    *m = (*m).max(e);
                    Some(*m)
                })
                .collect();
            (r.into_iter().map(|x| x.0).collect(), ends)
        })
        .collect();
    let overlaps = |t: u32, from: u64, at: u64| {
        by_start.get(t as usize).is_some_and(|(starts, ends)| {
            let k = starts.partition_point(|&s| s <= at);
            k > 0 && from < ends[k - 1]
        })
    };
    let mut out = SpinWaits::default();
    let mut barrier_words: HashSet<u64> = HashSet::new();
    // The changes that are barrier arrivals (thread, index).
    let mut in_barrier: HashSet<(u32, usize)> = HashSet::new();
    let mut next_episode = 0u64;
    let mut addrs: Vec<u64> = episodes.keys().copied().collect();
    addrs.sort_unstable();
    for a in addrs {
        let eps = &episodes[&a];
        let mut seqs: Vec<u64> = eps.keys().copied().collect();
        seqs.sort_unstable();
        let team = |seq: &u64| {
            let (u, _, rs) = &eps[seq];
            let mut ts: Vec<u32> = rs.iter().map(|r| r.0).collect();
            ts.push(*u);
            ts.sort_unstable();
            ts
        };
        // The team: every thread of any episode. An episode is complete when all of them
        // took part once, the store was an arrival and every reader's change clean.
        let mut all: Vec<u32> = seqs.iter().flat_map(team).collect();
        all.sort_unstable();
        all.dedup();
        let complete = |q: &u64| {
            let (u, at, rs) = &eps[q];
            team(q) == all
                && arrivals.contains(&(*u, *q))
                && !overlaps(*u, at + 1, at + 1)
                && rs.iter().all(|&(w, k)| {
                    let c = changes[w as usize][k];
                    clean(w as usize, k) && !overlaps(w, c.from, c.to)
                })
        };
        let done: Vec<&u64> = seqs.iter().filter(|q| complete(q)).collect();
        // A barrier is used at least twice, nearly always by its whole team (an episode can
        // be incomplete: its store came before the line was watched, so some of its readers
        // were not seen).
        if !spun_on.contains(&a) || all.len() < 2 || done.len() < 2 || 2 * done.len() < seqs.len() {
            continue;
        }
        barrier_words.insert(a);
        let n = all.len() as u32;
        for q in done {
            let (u, at, rs) = &eps[q];
            let episode = next_episode;
            next_episode += 1;
            out.barriers.push(BarrierMark {
                thread: *u,
                from: at + 1,
                at: at + 1,
                episode,
                participants: n,
            });
            for &(w, k) in rs {
                let c = changes[w as usize][k];
                in_barrier.insert((w, k));
                out.barriers.push(BarrierMark {
                    thread: w,
                    from: c.from,
                    at: c.to,
                    episode,
                    participants: n,
                });
            }
        }
    }
    out.barrier_words = barrier_words.len() as u64;
    for (w, list) in changes.iter().enumerate() {
        for (k, c) in list.iter().enumerate() {
            if skip.contains(&c.addr)
                || in_barrier.contains(&(w as u32, k))
                || !(spun_on.contains(&c.addr) || c.own || c.polled.is_some())
                || (c.first && barrier_words.contains(&c.addr))
            {
                continue;
            }
            // A poll's look (on an address nobody spun on) reads plain stores and atomic
            // read-modify-writes alike: the last of its value before the look, if it came after
            // the thread last saw the old value. Never a later one: a poller's look is not
            // bounded by a spin's end, and a store after it would be a wait the replay may not
            // meet (a store whose callback numbered it after the look is lost: no wait).
            let polled = c.polled.filter(|_| !(spun_on.contains(&c.addr) || c.own));
            let read = if let Some(since) = polled {
                by_polled.get(&(c.addr, c.value)).and_then(|v| {
                    v.iter()
                        .rfind(|s| s.1 != w as u32 && s.0 < c.seq)
                        .filter(|s| s.0 > since)
                        .copied()
                })
            } else {
                read[w][k]
            };
            let Some((seq, u, at)) = read else {
                out.unmatched += c.spun() as u64;
                continue;
            };
            if overlaps(w as u32, c.from, c.to) {
                out.unmatched += c.spun() as u64;
                continue;
            }
            // A first look under a lock waits before that lock, not holding it.
            let (from, to, before) = match c.under_lock {
                Some(p) if c.from == c.to => (p, p, true),
                _ => (c.from, c.to, false),
            };
            let dep = Dep {
                word: c.addr,
                waiter: w as u32,
                from,
                at: to,
                seq: c.seq,
                sources: vec![(u, at + 1, seq)],
                before,
            };
            if polled.is_some() {
                out.polls.push(dep);
            } else {
                out.deps.push(dep);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0x1000;

    /// rayon's `join`: the thief sets the latch in the owner's frame with an `xchg` (seq 15);
    /// the owner, which ran other jobs between its looks (no spin), finds it set at a look
    /// (seq 20): a dependence on that store, though nobody spun on the address, because it
    /// is on the owner's own stack. A later frame's latch at the same address, set at seq 30,
    /// is not the one read, though it is the first after the owner's last event (seq 16); nor
    /// by a later look (seq 28) after the owner reset the latch (seq 22). The same look at an
    /// address off the owner's stack that nobody spun on is left to other means (the data a
    /// lock protects).
    #[test]
    fn a_look_that_finds_another_threads_store_in_its_own_frame_is_a_dependence() {
        for own in [true, false] {
            let mut owner = Detector::default();
            // A steal attempt's atomic after the thief's store, before the look.
            owner.sequence(16);
            owner.access(40, A, false, own, false);
            owner.recorded(40, A, false, 3, 20);
            // The next frame at the address: the owner resets the latch (seq 22) and reads it
            // set at seq 28, but the only store of 3 after its reset is seq 30's, after the
            // look: not the one read (a store the capture missed), no dependence.
            owner.access(50, A, true, own, false);
            owner.recorded(50, A, true, 0, 22);
            owner.access(60, A, false, own, false);
            owner.recorded(60, A, false, 3, 28);
            let mut thief = Detector::default();
            thief.access(7, A, true, false, true);
            thief.atomic_store(7, A, 3, 15);
            thief.access(90, A, true, false, true);
            thief.atomic_store(90, A, 3, 30);
            let mut changes = vec![owner.changes.clone(), vec![]];
            changes[0].extend(owner.first_looks.clone());
            let stores = vec![owner.stores, thief.stores];
            let w = find(&changes, &stores, &[], &HashSet::new(), &[]);
            if own {
                assert_eq!(w.deps.len(), 1, "{:?}", w.deps);
                let d = &w.deps[0];
                assert_eq!((d.waiter, d.at, d.seq), (0, 40, 20));
                assert_eq!(d.sources, vec![(1, 8, 15)]);
            } else {
                assert!(w.deps.is_empty(), "{:?}", w.deps);
            }
        }
    }

    /// A pool worker polling between `sched_yield`s (rayon's idle loop): it looks at the
    /// pool's injector tail (0, seq 10), yields, and looks again at 40, reading 1 (seq 25):
    /// `main`'s compare-and-swap left 1 there at seq 20. The worker's look depends on that
    /// atomic, though nobody spun on the address (its turns do atomics of their own). Without
    /// a yield between its looks the same change is no dependence (data a lock may order); nor
    /// is a look whose only store of its value was numbered after it (a store the replay would
    /// have to run first: it may wait for the reader), or before the worker last saw 0.
    #[test]
    fn a_pollers_look_across_a_yield_waits_for_the_store_it_read() {
        let rmw = |seq| {
            vec![
                vec![],
                vec![Store {
                    at: 7,
                    addr: A,
                    value: 1,
                    seq,
                    arrival: false,
                }],
            ]
        };
        for (yielded, seq, dep) in [
            (true, 20, true),
            (false, 20, false),
            (true, 30, false),
            (true, 5, false),
        ] {
            let mut worker = Detector::default();
            worker.access(10, A, false, false, false);
            worker.recorded(10, A, false, 0, 10);
            // A steal attempt's atomic on another word between the looks.
            worker.access(20, A + 512, true, false, true);
            if yielded {
                worker.yielded(12, 0);
            }
            worker.access(40, A, false, false, false);
            worker.recorded(40, A, false, 1, 25);
            assert_eq!(worker.changes.len(), 1);
            assert_eq!(worker.changes[0].polled, yielded.then_some(10));
            let changes = vec![worker.changes, vec![]];
            let w = find(&changes, &[vec![], vec![]], &rmw(seq), &HashSet::new(), &[]);
            assert!(w.deps.is_empty(), "{:?}", w.deps);
            if dep {
                assert_eq!(w.polls.len(), 1, "{:?}", w.polls);
                let d = &w.polls[0];
                assert_eq!((d.waiter, d.from, d.at, d.seq), (0, 40, 40, 25));
                assert_eq!(d.sources, vec![(1, 8, 20)]);
            } else {
                assert!(w.polls.is_empty(), "{yielded} {seq}: {:?}", w.polls);
            }
        }
    }

    /// A poller's first recorded look (the line was watched from its last yield on: its
    /// earlier turns' looks were not recorded) that reads another thread's store numbered
    /// after its yield before last waits for it; a store numbered before that yield is not
    /// the one its previous turn missed, and a first look before any yield is no poll.
    #[test]
    fn a_pollers_first_recorded_look_waits_for_a_store_since_its_previous_turn() {
        for (yields, seq, dep) in [(2, 20, true), (2, 2, false), (0, 20, false)] {
            let mut worker = Detector::default();
            for k in 0..yields {
                worker.yielded(3 + 5 * k, 0);
            }
            worker.access(40, A, false, false, false);
            worker.recorded(40, A, false, 1, 25);
            assert_eq!(worker.first_looks.len(), 1);
            let store = Store {
                at: 7,
                addr: A,
                value: 1,
                seq,
                arrival: false,
            };
            let changes = vec![worker.first_looks, vec![]];
            let w = find(&changes, &[vec![], vec![store]], &[], &HashSet::new(), &[]);
            assert!(w.deps.is_empty(), "{:?}", w.deps);
            if dep {
                assert_eq!(w.polls.len(), 1, "{:?}", w.polls);
                assert_eq!(w.polls[0].sources, vec![(1, 8, seq)]);
            } else {
                assert!(w.polls.is_empty(), "{yields} {seq}: {:?}", w.polls);
            }
        }
    }

    /// A flag wait: after some work, a first look at 10 reads 0 (recorded by an earlier
    /// look), eight more loads read 0 in a `pause` loop, then the load at 50 reads 1: a spin
    /// from 11 to 50.
    fn flag_wait(d: &mut Detector) {
        d.access(2, A, false, false, false);
        d.recorded(2, A, false, 0, 5);
        d.access(5, 0x5000, true, false, false); // work
        d.access(10, A, false, false, false);
        for i in 0..8 {
            d.access(12 + 4 * i, 0x7000, true, true, false); // its own stack
            d.access(14 + 4 * i, A, false, false, false);
        }
        d.access(50, A, false, false, false);
        d.recorded(50, A, false, 1, 9);
    }

    #[test]
    fn a_pause_loop_that_only_looks_is_a_spin() {
        let mut d = Detector::default();
        flag_wait(&mut d);
        assert_eq!(d.changes, vec![Change::clean_spin(A, 11, 50, 1, 9, 5)]);
    }

    /// A test-and-set lock's waiter whose last look read the word free, where the plugin read
    /// it taken again (the holder freed it and another thread took it between the load and
    /// the plugin's read): no change is recorded, and the loop leaves its looks for an
    /// exchange on the word. That run is a spin all the same, with no store to name
    /// ([`Detector::blind`]); a run left for an atomic instruction elsewhere, or one that did
    /// work, is not. (Found in a trace of `examples/c/spin_counter.c -x`, 1 in 50: 82,703
    /// instructions of spinning kept as work.)
    #[test]
    fn a_spin_left_for_an_exchange_on_its_word_is_a_spin_whose_end_was_not_seen() {
        let exchange = |d: &mut Detector, at: u64| {
            d.access(at, A, true, false, true);
            d.atomic_store(at, A, 1, at);
        };
        let spin = |d: &mut Detector| {
            exchange(d, 100); // found it taken
            d.access(104, A, false, false, false);
            d.recorded(104, A, false, 1, 101); // the memo had 0: recorded, the same value
            for k in 1..=50u64 {
                d.access(104 + 5 * k, A, false, false, false);
            }
        };
        let mut d = Detector::default();
        spin(&mut d);
        exchange(&mut d, 356);
        assert!(d.changes.is_empty(), "{:?}", d.changes);
        let b: Vec<(u64, u64, u64)> = d.blind.iter().map(|c| (c.addr, c.from, c.to)).collect();
        assert_eq!(b, vec![(A, 105, 354)]);
        assert!(d.blind[0].spun());
        // An exchange on another word ends the run, and is no end of a spin on this one.
        let mut other = Detector::default();
        spin(&mut other);
        other.access(356, A + 64, true, false, true);
        exchange(&mut other, 360);
        assert!(other.blind.is_empty(), "{:?}", other.blind);
        // A store between the looks and the exchange: work, no spin.
        let mut work = Detector::default();
        spin(&mut work);
        work.access(355, 0x5000, true, false, false);
        exchange(&mut work, 356);
        assert!(work.blind.is_empty(), "{:?}", work.blind);
        // The exchange long after the last look: the thread did something else in between.
        let mut late = Detector::default();
        spin(&mut late);
        exchange(&mut late, 354 + PER_CHECK + 1);
        assert!(late.blind.is_empty(), "{:?}", late.blind);
        // A recorded end: a change, no blind spin.
        let mut seen = Detector::default();
        spin(&mut seen);
        seen.access(355, A, false, false, false);
        seen.recorded(355, A, false, 0, 300);
        exchange(&mut seen, 356);
        assert_eq!(seen.changes.len(), 1);
        assert!(seen.blind.is_empty(), "{:?}", seen.blind);
    }

    /// A store outside the thread's stack, an atomic instruction or a synchronization call
    /// between the looks, or a long way between them, means the thread did work: the run
    /// starts again, and a run of one load is no spin.
    #[test]
    fn a_loop_that_does_work_is_no_spin() {
        let look = |d: &mut Detector, at: u64| d.access(at, A, false, false, false);
        let start = |d: &mut Detector| {
            look(d, 2);
            d.recorded(2, A, false, 0, 5);
            look(d, 10);
        };
        let mut store = Detector::default();
        start(&mut store);
        store.access(20, 0x5000, true, false, false);
        look(&mut store, 30);
        store.recorded(30, A, false, 1, 9);
        let mut atomic = Detector::default();
        start(&mut atomic);
        atomic.access(20, 0x5000, false, false, true);
        look(&mut atomic, 30);
        atomic.recorded(30, A, false, 1, 9);
        let mut sync = Detector::default();
        start(&mut sync);
        sync.marker(20, Op::Barrier, 0x9000);
        look(&mut sync, 30);
        sync.recorded(30, A, false, 1, 9);
        let mut far = Detector::default();
        start(&mut far);
        let end = 10 + SLACK + 1;
        look(&mut far, end);
        far.recorded(end, A, false, 1, 9);
        for d in [store, atomic, sync, far] {
            assert!(
                d.changes.iter().all(|c| !c.spun() && c.to == c.from),
                "{:?}",
                d.changes
            );
            assert_eq!(d.changes.len(), 1);
        }
    }

    /// A Rust `thread::park` loop on a flag: a look (the flag 0), the parker's atomic on its
    /// state word and a futex wait on that word, the thread's handle code between, then a
    /// look after the wake that reads 1: a spin from the first look to the last, whatever
    /// the parker did (whether the thread slept was the host's doing). A condition
    /// variable's wait (its last atomic releases a mutex, another word: what it looked at was
    /// under that mutex), a wait begun long after the look, and a look long after the wake
    /// are none.
    #[test]
    fn a_look_then_a_parkers_futex_wait_then_a_look_is_a_spin() {
        const P: u64 = 0x7000; // the parker's state
        const M: u64 = 0x7100; // a condition variable's mutex
        let run = |atomic_on: u64, wait_at: u64, look_at: u64| {
            let mut d = Detector::default();
            d.access(10, A, false, false, false);
            d.recorded(10, A, false, 0, 5);
            d.access(20, 0x8000, false, false, false); // the thread handle
            d.access(wait_at - 2, atomic_on, true, false, true);
            d.marker(wait_at, Op::FutexWait, P);
            d.marker(wait_at, Op::Done, 0);
            d.access(wait_at + 5, P, true, false, true); // the parker's state taken back
            d.access(look_at, A, false, false, false);
            d.recorded(look_at, A, false, 1, 9);
            d.changes
        };
        let parked = run(P, 40, 60);
        assert_eq!(parked.len(), 1);
        assert_eq!((parked[0].from, parked[0].to), (11, 60));
        assert!(parked[0].spun() && parked[0].clean);
        for (what, changes) in [
            ("condition variable", run(M, 40, 60)),
            ("late wait", run(P, 10 + PER_CHECK + 3, 10 + PER_CHECK + 20)),
            ("late look", run(P, 40, 40 + SLACK + 1)),
        ] {
            assert_eq!(changes.len(), 1, "{what}");
            assert!(!changes[0].spun(), "{what}: {changes:?}");
        }
    }

    /// A poller whose very first look (under a lock) found the flag already set waits, before
    /// that lock, for the store that set it, recorded or not: in the traced run the host
    /// happened to run the storer first (`poll_lock.c` traced pinned to one CPU). Thread 2
    /// spins on the flag, so it is one; thread 0 sets it to 1, then to 2.
    #[test]
    fn a_first_look_that_finds_the_flag_set_waits_for_the_store_that_set_it() {
        const M: u64 = 0x9000;
        let mut d = Detector::default();
        d.recorded(3, 0x5000, false, 7, 2); // elsewhere: its number bounds what came after
        d.sequence(2);
        d.marker(8, Op::MutexLock, M);
        d.access(9, A, false, false, false);
        d.recorded(9, A, false, 1, 6);
        d.sequence(6);
        assert!(d.changes.is_empty(), "{:?}", d.changes);
        let look = Change {
            addr: A,
            from: 9,
            to: 9,
            value: 1,
            seq: 6,
            since: 2,
            clean: false,
            under_lock: Some(8),
            first: true,
            after: None,
            own: false,
            polled: None,
            yield_at: None,
        };
        assert_eq!(d.first_looks.last(), Some(&look));
        let spin = Change::clean_spin(A, 11, 50, 2, 30, 20);
        let changes = vec![vec![], vec![look], vec![spin]];
        let store = |at, value, seq| Store {
            at,
            addr: A,
            value,
            seq,
            arrival: false,
        };
        let stores = vec![vec![store(100, 1, 4), store(200, 2, 25)], vec![], vec![]];
        assert!(unrecorded_wanted(&changes, &stores).is_empty());
        let w = find(&changes, &stores, &[], &HashSet::new(), &[]);
        let first = Dep {
            word: A,
            waiter: 1,
            from: 8,
            at: 8,
            seq: 6,
            sources: vec![(0, 101, 4)],
            before: true,
        };
        assert_eq!(w.deps.len(), 2);
        assert_eq!(w.deps[0], first);
        // The store of 1 came before the line was watched: not recorded. Of thread 0's
        // unrecorded stores there, the last one that may have come before the look (made
        // after an event numbered 3, before the look's 6; not the one after event 9).
        let mut stores = vec![vec![store(200, 2, 25)], vec![], vec![]];
        assert_eq!(unrecorded_wanted(&changes, &stores), HashSet::from([A]));
        let found = vec![
            vec![
                Unrecorded {
                    at: 90,
                    addr: A,
                    after: 1,
                },
                Unrecorded {
                    at: 100,
                    addr: A,
                    after: 3,
                },
                Unrecorded {
                    at: 150,
                    addr: A,
                    after: 9,
                },
            ],
            vec![],
            vec![],
        ];
        place_unrecorded(&changes, &mut stores, &found);
        let w = find(&changes, &stores, &[], &HashSet::new(), &[]);
        assert_eq!(
            w.deps[0],
            Dep {
                sources: vec![(0, 101, 3)],
                ..first
            }
        );
    }

    /// A first look at a word other threads store the same value to again and again (a
    /// recursive mutex's owner field, 0 at every unlock) reads the last such store before it,
    /// not the next one: that store, numbered after the look, came after it unless its thread
    /// recorded nothing in between (their callbacks raced). Sixteen rayon workers each looking
    /// at the owner field before taking the mutex, each look matched to another worker's
    /// later unlock, made waits in a cycle the replay had to force (30 in one trace).
    #[test]
    fn a_first_look_waits_for_a_later_store_only_when_their_numbers_raced() {
        let look = Change {
            first: true,
            clean: false,
            ..Change::clean_spin(A, 40, 40, 0, 20, 3)
        };
        // Thread 2 spins on A, so A is a word threads wait on.
        let changes = vec![
            vec![],
            vec![look],
            vec![Change::clean_spin(A, 5, 9, 0, 8, 6)],
        ];
        let store = |at, seq| Store {
            at,
            addr: A,
            value: 0,
            seq,
            arrival: false,
        };
        let stores = vec![vec![store(100, 2)], vec![], vec![], vec![store(300, 30)]];
        let changes = [changes, vec![vec![]]].concat();
        let lock = |seq| Store {
            at: 290,
            addr: A - 8,
            value: 1,
            seq,
            arrival: false,
        };
        // The sources of thread 1's wait when thread 3 took the mutex (an atomic) at `seq`.
        let sources = |seq| {
            let rmw = vec![vec![], vec![], vec![], vec![lock(seq)]];
            let w = find(&changes, &stores, &rmw, &HashSet::new(), &[]);
            w.deps
                .iter()
                .filter(|d| d.waiter == 1)
                .map(|d| d.sources.clone())
                .collect::<Vec<_>>()
        };
        // Between the look (20) and its store (30): the look read thread 0's earlier store.
        assert_eq!(sources(25), vec![vec![(0, 101, 2)]]);
        // Nothing of thread 3's numbered between the look and its store: the store came
        // first, its callback later.
        assert_eq!(sources(31), vec![vec![(3, 301, 30)]]);
    }

    /// The wait is for the first store of the value read, by another thread, after the
    /// thread last saw the old value; an unrecorded one leaves the spin alone.
    #[test]
    fn a_spin_waits_for_the_store_it_read() {
        let mut d = Detector::default();
        flag_wait(&mut d);
        let stores = vec![
            vec![],
            vec![
                Store {
                    at: 100,
                    addr: A,
                    value: 1,
                    seq: 2,
                    arrival: false,
                },
                Store {
                    at: 200,
                    addr: A,
                    value: 1,
                    seq: 7,
                    arrival: false,
                },
                Store {
                    at: 300,
                    addr: A,
                    value: 1,
                    seq: 12,
                    arrival: false,
                },
            ],
        ];
        let w = find(
            &[d.changes.clone(), vec![]],
            &stores,
            &[],
            &HashSet::new(),
            &[],
        );
        assert_eq!(w.unmatched, 0);
        assert_eq!(
            w.deps,
            vec![Dep {
                word: A,
                waiter: 0,
                from: 11,
                at: 50,
                seq: 9,
                sources: vec![(1, 201, 7)],
                before: false,
            }]
        );
        // The store's number came after the load's (their callbacks raced): still that one,
        // not the older store of the same value.
        let raced = vec![vec![], vec![stores[1][0], stores[1][2]]];
        let w = find(
            &[d.changes.clone(), vec![]],
            &raced,
            &[],
            &HashSet::new(),
            &[],
        );
        assert_eq!(w.deps[0].sources, vec![(1, 301, 12)]);
        let none = find(
            &[d.changes.clone(), vec![]],
            &[vec![], vec![]],
            &[],
            &HashSet::new(),
            &[],
        );
        assert_eq!((none.deps.len(), none.unmatched), (0, 1));
        let lock = find(&[d.changes, vec![]], &stores, &[], &HashSet::from([A]), &[]);
        assert_eq!((lock.deps.len(), lock.unmatched), (0, 0));
    }

    /// A sense-reversing barrier of three threads over two episodes: thread 0 stores the new
    /// sense first, thread 1 second (whoever arrived last in the traced run); the others read
    /// it, one after a spin. Every episode has the team {0, 1, 2}: a barrier of 3, each
    /// participant arriving once per episode, no dependence. An incomplete episode beside
    /// them waits for its store; with mostly incomplete ones it is no barrier, and the changes
    /// wait for their stores.
    #[test]
    fn stores_read_by_the_same_team_every_episode_are_a_barrier() {
        let store = |at, value, seq| Store {
            at,
            addr: A,
            value,
            seq,
            arrival: true,
        };
        let change =
            |from, to, value, seq, since| Change::clean_spin(A, from, to, value, seq, since);
        let stores = vec![vec![store(100, 1, 10)], vec![store(300, 0, 20)], vec![]];
        let changes = vec![
            vec![change(250, 290, 0, 22, 10)],
            vec![change(120, 120, 1, 11, 1)],
            vec![change(130, 180, 1, 12, 2), change(310, 310, 0, 21, 12)],
        ];
        let w = find(&changes, &stores, &[], &HashSet::new(), &[]);
        assert_eq!((w.barrier_words, w.deps.len(), w.unmatched), (1, 0, 0));
        let mut marks: Vec<(u64, u32, u64, u64)> = w
            .barriers
            .iter()
            .map(|b| (b.episode, b.thread, b.from, b.at))
            .collect();
        marks.sort_unstable();
        assert_eq!(
            marks,
            vec![
                (0, 0, 101, 101),
                (0, 1, 120, 120),
                (0, 2, 130, 180),
                (1, 0, 250, 290),
                (1, 1, 301, 301),
                (1, 2, 310, 310)
            ]
        );
        assert!(w.barriers.iter().all(|b| b.participants == 3));
        // Nobody spun on it (the data next to a spun-on lock word, stored and read right
        // after each acquisition): no barrier, no dependence.
        let mut flat = changes.clone();
        flat.iter_mut().flatten().for_each(|c| c.from = c.to);
        let w = find(&flat, &stores, &[], &HashSet::new(), &[]);
        assert_eq!((w.barrier_words, w.deps.len()), (0, 0));
        // Stores that hand something over (no arrival before them): no barrier.
        let mut handed = stores.clone();
        handed.iter_mut().flatten().for_each(|s| s.arrival = false);
        assert_eq!(
            find(&changes, &handed, &[], &HashSet::new(), &[]).barrier_words,
            0
        );
        // A third episode read by thread 0 alone (its store came before the line was
        // watched, say): still a barrier of the two complete ones, and the third's reader
        // waits for its store.
        let mut stores3 = stores.clone();
        stores3[2].push(store(500, 1, 30));
        let mut changes3 = changes.clone();
        changes3[0].push(change(400, 480, 1, 31, 22));
        let w = find(&changes3, &stores3, &[], &HashSet::new(), &[]);
        assert_eq!((w.barrier_words, w.barriers.len()), (1, 6));
        let waits: Vec<(u32, u32)> = w.deps.iter().map(|d| (d.waiter, d.sources[0].0)).collect();
        assert_eq!(waits, vec![(0, 2)]);
        // Two more such: most episodes incomplete, no barrier. Every change waits for the
        // store it read, with a spin or without.
        stores3[1].push(store(600, 0, 40));
        changes3[0].push(change(610, 650, 0, 41, 31));
        stores3[2].push(store(700, 1, 50));
        changes3[0].push(change(710, 750, 1, 51, 41));
        let w = find(&changes3, &stores3, &[], &HashSet::new(), &[]);
        assert_eq!((w.barrier_words, w.barriers.len()), (0, 0));
        let waits: Vec<(u32, u32)> = w.deps.iter().map(|d| (d.waiter, d.sources[0].0)).collect();
        assert_eq!(
            waits,
            vec![(0, 1), (0, 2), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1)]
        );
        // Without any spin on the address (a word that only shares a watched line), no
        // dependence at all.
        let mut looks = changes3.clone();
        looks.iter_mut().flatten().for_each(|c| c.from = c.to);
        assert!(
            find(&looks, &stores3, &[], &HashSet::new(), &[])
                .deps
                .is_empty()
        );
    }

    /// A load of `addr` at position `at` that the plugin recorded (it read `value`).
    fn look(d: &mut Detector, at: u64, addr: u64, value: u64, seq: u64) {
        d.access(at, addr, false, false, false);
        d.recorded(at, addr, false, value, seq);
    }

    /// A first look that already reads the new value is a barrier's arrival only right after
    /// the thread's own atomic instruction (its arrival); after a wait on another address (a
    /// consumer that waited for `ready` and then reads `data`), it is not, so that the store
    /// of `data` is never made to wait for that reader.
    #[test]
    fn a_look_without_a_spin_is_clean_only_right_after_an_arrival() {
        const B: u64 = 0x2000;
        let mut d = Detector::default();
        look(&mut d, 1, A, 0, 1);
        d.access(5, 0x3000, true, false, true); // arrival: an atomic instruction
        look(&mut d, 8, A, 1, 4);
        assert!(d.changes[0].clean && !d.changes[0].spun());
        let mut c = Detector::default();
        look(&mut c, 1, A, 0, 1);
        look(&mut c, 2, B, 0, 2);
        c.access(3, 0x3000, true, false, true);
        look(&mut c, 9, B, 1, 5); // `ready` changed: a wait ended
        look(&mut c, 10, A, 1, 6); // `data`
        assert!(c.changes[0].clean);
        assert!(!c.changes[1].clean);
    }

    /// C++'s `std::barrier`: after its arrival (an atomic instruction) a waiter registers
    /// with `atomic::wait`'s waiter pool (another atomic) and reads the pool's version, which
    /// every release bumps with an atomic add, and only then looks at the phase; beside a busy
    /// host CPU the release has often come by then. The phase's change is clean but for the
    /// version's, and counts as a barrier arrival when no other thread stored that version
    /// (an atomic counter); when another thread stored it (a flag: a wait that ended), the
    /// episode is not complete and the look waits for its store instead.
    #[test]
    fn a_look_after_an_arrival_and_a_counters_bump_is_a_barrier_arrival() {
        const V: u64 = 0x2000;
        let mut d = Detector::default();
        look(&mut d, 1, A, 0, 1);
        look(&mut d, 2, V, 0, 2);
        d.access(5, 0x3000, true, false, true); // arrival
        d.access(7, 0x4000, true, false, true); // the waiter pool's count of waiters
        look(&mut d, 8, V, 1, 5); // the pool's version, bumped
        look(&mut d, 9, A, 1, 6); // the phase: released already
        assert!(d.changes[0].clean);
        assert_eq!((d.changes[1].clean, d.changes[1].after), (false, Some(0)));
        // A second episode: a spin on the phase.
        let mut spin = d.changes[1];
        (spin.from, spin.to, spin.value, spin.seq, spin.since) = (250, 290, 0, 22, 6);
        (spin.clean, spin.after) = (true, None);
        let changes = vec![vec![d.changes[0], d.changes[1], spin], vec![]];
        let store = |at, addr, value, seq, arrival| Store {
            at,
            addr,
            value,
            seq,
            arrival,
        };
        let stores = vec![
            vec![],
            vec![store(100, A, 1, 4, true), store(300, A, 0, 20, true)],
        ];
        let w = find(&changes, &stores, &[], &HashSet::new(), &[]);
        assert_eq!((w.barrier_words, w.barriers.len(), w.deps.len()), (1, 4, 0));
        // The version a plain store of another thread left: a flag, not part of the arrival.
        let mut flagged = stores.clone();
        flagged[1].insert(0, store(50, V, 1, 3, false));
        let w = find(&changes, &flagged, &[], &HashSet::new(), &[]);
        assert_eq!(w.barrier_words, 0);
        // Two changes between the arrival and the look: not clean.
        let mut e = Detector::default();
        look(&mut e, 1, A, 0, 1);
        look(&mut e, 2, V, 0, 2);
        look(&mut e, 3, V + 64, 0, 3);
        e.access(5, 0x3000, true, false, true);
        look(&mut e, 8, V, 1, 5);
        look(&mut e, 9, V + 64, 1, 6);
        look(&mut e, 10, A, 1, 7);
        assert_eq!((e.changes[2].clean, e.changes[2].after), (false, None));
    }

    /// Polling under a lock (lock, look, unlock, yield, again): the range left out starts
    /// at the first look's lock, so that one look under the lock remains, as when the first
    /// look found the value; a first look that found it under a lock just taken says where
    /// that lock is (a wait for the store belongs before it).
    #[test]
    fn polling_under_a_lock_leaves_one_look_and_a_first_look_names_its_lock() {
        const M: u64 = 0x9000;
        let mut d = Detector::default();
        d.access(2, A, false, false, false);
        d.recorded(2, A, false, 0, 1);
        d.access(4, 0x5000, true, false, false); // work
        for k in 0..3u64 {
            let at = 10 + 10 * k;
            d.marker(at, Op::MutexLock, M);
            d.access(at + 2, A, false, false, false);
            d.marker(at + 4, Op::MutexUnlock, M);
            d.marker(at + 6, Op::Suppress, 0); // sched_yield, untraced
        }
        d.marker(40, Op::MutexLock, M);
        d.access(42, A, false, false, false);
        d.recorded(42, A, false, 1, 7);
        d.marker(44, Op::MutexUnlock, M);
        let c = d.changes[0];
        assert_eq!((c.from, c.to, c.under_lock), (10, 40, None), "{c:?}");
        // Later, work, then a first look under a lock finds the next value at once.
        d.access(60, 0x5000, true, false, false);
        d.marker(70, Op::MutexLock, M);
        d.access(72, A, false, false, false);
        d.recorded(72, A, false, 2, 11);
        let c = d.changes[1];
        assert_eq!((c.from, c.to, c.under_lock), (72, 72, Some(70)), "{c:?}");
        // A look far from the lock is no look under it.
        d.marker(80, Op::MutexUnlock, M);
        d.marker(90, Op::MutexLock, M);
        d.access(200, A, false, false, false);
        d.recorded(200, A, false, 3, 15);
        assert_eq!(d.changes[2].under_lock, None);
    }

    /// A thread that looked at more than `OPEN` watched addresses since it last saw one (the
    /// nodes of a tree barrier) still sees that one's new value as a change.
    #[test]
    fn a_new_value_is_a_change_after_the_address_was_forgotten() {
        let mut d = Detector::default();
        d.access(1, A, false, false, false);
        d.recorded(1, A, false, 0, 3);
        for k in 0..OPEN as u64 {
            let b = 0x10_0000 + 64 * k;
            d.access(10 + k, b, false, false, false);
            d.recorded(10 + k, b, false, 7, 4 + k);
        }
        d.access(100, A, false, false, false);
        d.recorded(100, A, false, 1, 40);
        let c = d.changes.last().copied().unwrap();
        assert_eq!(
            (c.addr, c.value, c.since, c.from, c.to),
            (A, 1, 3, 100, 100),
            "{c:?}"
        );
        // The same value again is no change.
        let n = d.changes.len();
        for k in 0..OPEN as u64 {
            let b = 0x20_0000 + 64 * k;
            d.access(200 + k, b, false, false, false);
            d.recorded(200 + k, b, false, 7, 50 + k);
        }
        d.access(300, A, false, false, false);
        d.recorded(300, A, false, 1, 70);
        assert_eq!(d.changes.len(), n);
    }
}
