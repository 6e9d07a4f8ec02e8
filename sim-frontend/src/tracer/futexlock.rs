//! Locks built directly on futexes (Rust's `std::sync::Mutex`, glibc's internal locks behind
//! `malloc` and `stdio`, hand-built futex mutexes), found in the atomic instructions of a
//! capture and turned into mutex markers, so that replay arbitrates them in simulated time
//! like pthread mutexes (docs/tracing.md, "How synchronization replays").
//!
//! **Input.** Per thread: its raw markers with the number of instructions executed before
//! each, and its atomic read-modify-write instructions (`lock`-prefixed, `xchg` with memory)
//! with the address, the value the word held just after, and a sequence number from the
//! markers' counter (the plugin takes one lock around every atomic instruction of the
//! process, so the values of one word in sequence order are its history, each instruction's
//! value before being the previous one's after).
//!
//! **A lock word** holds 0 when free. Its history, in sequence order, must read as a lock's:
//! an *acquisition* turns 0 into non-zero (a successful compare-and-swap or swap) with no
//! holder; a *release* by the holder leaves 0 (Rust's and glibc's unlock swap in 0); any other
//! thread's instruction on a held word leaves it non-zero (a failed attempt: a compare-and-swap
//! that found it taken, the swap to "contended" before a futex wait). Anything else (a holder
//! changing the word without freeing it, a non-holder freeing it, a history with a plain store
//! in it) means the word is not such a lock, and it is left alone. A word is taken as a lock
//! if its history reads so and it is a futex word (some thread waited on or woke it), or if an
//! instruction that acquires a lock found that way also acquires it (another instance of the
//! same lock type that never blocked in the traced run), or if `taslock.rs` found plain
//! stores that release it (a test-and-set lock: those stores join the word's history as
//! [`Atomic::plain`] entries). Not recognised: read/write locks other than Rust's (several
//! threads hold them at once), and words the untraced part of the program also updates.
//!
//! **A semaphore word** (C++20's `std::counting_semaphore`, read by `atomicsem.rs`): its
//! takes become semaphore waits placed where the attempt began (the whole call it ran in,
//! when [`Atomic::frame`] shows one entered just before), its releases posts with their
//! futex wakes.
//!
//! **A read/write lock word** (Rust std's, [`rw_roles`]): a count of readers, the writer's
//! value [`RW_MASK`], waiting flags; read and write acquisitions become read/write lock
//! markers, releases unlocks, and the futex calls of its word and of the writers' word
//! beside it go.
//!
//! **Rewriting.** An acquisition becomes a `MutexLock` marker with its `Done`, placed where
//! the thread's attempt began: the acquiring instruction and the failed attempts before it
//! (each within [`SPIN_GAP`] instructions of the next, or separated from it by a futex wait
//! on the word), with the spinning and futex waiting between them, are left out; replay's
//! mutex arbitration decides the wait and performs the lock word's atomic write itself. A
//! release becomes a `MutexUnlock` and its `Done` in place of the releasing instruction. The
//! futex waits and wakes of a lock word are dropped: the mutex markers replace them.
//!
//! **Dependences.** The same rewriting places the waits that `countdown.rs` (a counter several
//! threads count down to zero) and `spinwait.rs` (a spin ended by another thread's store)
//! find: each is a futex wait and its result in the waiting thread, paired with a futex wake
//! just after the other thread's instruction, at an address of their own ([`COUNTDOWN`] and
//! up), so that `sync.rs` pairs them as it pairs any futex wait with its wake. A spin's
//! looking is left out (an edit), and its futex waits with it.

use std::collections::{HashMap, HashSet};

use super::atomicsem;
use super::countdown;
use super::publish;
use super::raw::{AtomicKind, Op};
use super::spinwait::{self, Change, Store};
use super::sync::RawMark;

/// The order of markers at one position: dependences waited for before the thread's own
/// markers there (a first look under a lock waits before taking it), the thread's own
/// (raw) markers, then the markers added after them.
const BEFORE: u8 = 0;
const RAW: u8 = 1;
const ADDED: u8 = 2;

/// A marker added to a thread: (position, [`BEFORE`] or [`ADDED`], order, marker, end of the
/// instructions left out).
type DepItem = (u64, u8, usize, RawMark, u64);
/// Most instructions between two failed attempts of one acquisition (the spinning between
/// them: Rust spins 100 times, a few instructions each, before it waits on the futex).
pub const SPIN_GAP: u64 = 4096;
/// Fewest instructions between a failed attempt and the thread's next atomic instruction on
/// the word, with no futex wait between, that show the lock's code spinning on the word (Rust
/// spins with a load, a compare, a `pause` and a count, 100 times at most; glibc's lock goes
/// from its failed compare-and-swap to its exchange within a dozen instructions).
pub const SPIN_SHOWN: u64 = 48;

/// Whether `name` (demangled) is the slow path of a lock that spins on its word before it
/// waits on the futex: Rust std's futex `Mutex::lock_contended` (100 loads and `pause`s;
/// `std::sys::sync::mutex::futex` since Rust 1.77, `std::sys::unix::locks::futex_mutex`
/// before). glibc's internal locks (`__lll_lock_wait_private`) do not spin.
pub fn spinning_slow_path(name: &str) -> bool {
    name.ends_with("Mutex>::lock_contended") || name.ends_with("Mutex::lock_contended")
}

/// An atomic read-modify-write instruction of a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Atomic {
    /// Its position: instructions of the thread before it.
    pub at: u64,
    /// Its raw static index (which instruction it is).
    pub raw: u32,
    /// The address of its access.
    pub addr: u64,
    /// The access's size in bytes.
    pub size: u8,
    /// The value there just after it.
    pub value: u64,
    /// Its sequence number.
    pub seq: u64,
    /// Not an atomic instruction: a plain store that releases a test-and-set lock
    /// (`taslock.rs`), numbered as the word's next acquisition and ordered before it.
    pub plain: bool,
    /// The position of the call that entered the function it ran in ([`NO_FRAME`] if none
    /// was seen): a semaphore's take leaves out the whole call when it can.
    pub frame: u64,
}

/// [`Atomic::frame`] of an instruction whose function's call was not seen.
pub const NO_FRAME: u64 = u64::MAX;

/// Instructions of a thread to leave out, with the markers that replace them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edit {
    /// First instruction left out (position in the thread's stream).
    pub start: u64,
    /// First instruction kept after it, unless `unwind` says to go on.
    pub end: u64,
    /// The replacing markers: indices `first..first + count` of the thread's marker list.
    pub first: u32,
    /// How many.
    pub count: u32,
    /// A lock's acquisition or release: if the instructions left out entered a function
    /// they did not leave (the slow path a contended attempt called: Rust's
    /// `lock_contended`, glibc's `__lll_lock_wait`, a release's futex wake), the edit goes on
    /// past `end` to that function's return, at most [`UNWIND_MAX`] instructions, so that
    /// the thread continues as after an uncontended call (which never enters it).
    pub unwind: bool,
}

/// Most instructions from the call that entered a semaphore's take to the attempt's first
/// sign (the function's prologue and the first look at the count) for the take to be the
/// whole call.
pub const TAKE_ENTRY: u64 = 32;

/// Most instructions an edit's `unwind` leaves out after its end (a slow path's epilogue,
/// a wake's system call and return: a dozen or two).
pub const UNWIND_MAX: u64 = 64;
/// Most instructions from a lock's release to the futex wake that follows it (the word was
/// marked contended) for that wake to be the release's own slow path, left out with it.
pub const WAKE_PATH: u64 = 64;

/// Whether an edit replacing this marker unwinds (see [`Edit::unwind`]): a lock's
/// acquisition and release do; a dependence's wait and wake remove no call of their own.
fn unwinds(op: Op) -> bool {
    matches!(
        op,
        Op::MutexLock | Op::MutexUnlock | Op::RwRead | Op::RwWrite | Op::SemWait | Op::SemPost
    )
}

/// What [`find`] returns.
#[derive(Debug, Default)]
pub struct Locks {
    /// Per thread, its markers with the lock words' futex operations removed and the lock
    /// markers added, in program order (what `sync::plan` plans).
    pub marks: Vec<Vec<RawMark>>,
    /// Per thread, per raw marker: its index in `marks`, or `u32::MAX` if removed.
    pub raw_index: Vec<Vec<u32>>,
    /// Per thread, its edits in stream order.
    pub edits: Vec<Vec<Edit>>,
    /// Lock words recognised.
    pub words: usize,
    /// Of those, read/write locks (Rust's std `RwLock`, [`RW_MASK`]).
    pub read_write: usize,
    /// Their acquisitions.
    pub acquisitions: u64,
    /// Acquisitions with at least one failed attempt before them.
    pub contended: u64,
    /// Acquisitions of locks whose code spins on a held word (seen spinning on this word,
    /// or on another begun by the same instruction, or whose slow path in the program's
    /// code spins: [`spinning_slow_path`]): their markers say so, and replay spins them
    /// before they sleep (`[locks] spin`).
    pub spinning: u64,
    /// Futex words with atomic instructions whose history is not a lock's nor a
    /// semaphore's (left alone).
    pub rejected: usize,
    /// Semaphore words (`atomicsem.rs`), replaced by semaphore markers.
    pub semaphores: usize,
    /// Their takes.
    pub semaphore_takes: u64,
    /// Their releases.
    pub semaphore_gives: u64,
    /// Waits for a counter counted down to zero (see `countdown.rs`).
    pub countdown_waits: u64,
    /// Their dependences (one per other thread of the counter's episode).
    pub countdown_edges: u64,
    /// Of those, count-downs made as the counting thread ended (a scope's join).
    pub countdown_exits: u64,
    /// Of the waits, those of an owner that saw the count at zero with a plain load and
    /// consumed no notification (placed at that load).
    pub countdown_loads: u64,
    /// Spin-waits replaced by a wait for the store that ended them (see `spinwait.rs`).
    pub spin_waits: u64,
    /// Their instructions left out.
    pub spin_instructions: u64,
    /// Spins found but left as traced (their store was not recorded, or they overlap a
    /// lock's attempt).
    pub spin_unmatched: u64,
    /// Loads that found another thread's store on a spun-on line at their first look (no
    /// spin), replayed as dependences on it.
    pub spin_reads: u64,
    /// Atomic instructions that added a flag to one another thread had set at another
    /// instruction (a one-shot publication: `publish.rs`), replayed as waits for it.
    pub published: u64,
    /// A poller's looks across its yields that read another thread's store (see
    /// `spinwait.rs`), replayed as dependences on it.
    pub spin_polls: u64,
    /// Barriers built on spun-on addresses (see `spinwait.rs`).
    pub spin_barrier_words: u64,
    /// Their participants' arrivals (one per participant per episode).
    pub spin_barrier_episodes: u64,
}

/// Barrier ids of the barriers built on spun-on addresses (far above any user address and the
/// other synthetic ids).
pub const SPIN_BARRIER: u64 = 0x7370_6e00_0000_0000;

/// The futex address of the dependences of countdown wait `k` (far above any user address,
/// distinct from the hand-built barriers' ids), so that they pair only with each other.
pub const COUNTDOWN: u64 = 0x636e_7400_0000_0000;

/// Most instructions between a thread's count-down and its end for the count-down to be its
/// exit (a Rust scoped thread's end: its packet dropped, thread-local destructors, the C
/// library's thread exit).
pub const EXIT_GAP: u64 = 65_536;

/// A semaphore's take or release by a thread (`atomicsem.rs`): a semaphore marker with its
/// `Done` in place of the instructions `begin..end`.
struct SemEpisode {
    word: u64,
    initial: u64,
    take: bool,
    begin: u64,
    end: u64,
    /// The marker's sequence number (a take's first try) and its `Done`'s (the take).
    seq: u64,
    done: u64,
}

/// One lock episode of a thread: attempt start, acquisition, release (indices into the
/// thread's atomics).
struct Episode {
    start: usize,
    /// Where the attempt's instructions begin: the first try's, or, for a test-and-set
    /// lock, the spin on the word just before it (test and test-and-set) when there is one.
    begin: u64,
    acquire: usize,
    release: Option<usize>,
    /// A read/write lock's: for writing (`Some(true)`) or reading.
    rw: Option<bool>,
}

/// Whether a thread's spin on `w` (its `spins`, `spinwait.rs`) fills the gap between its
/// failed attempt at `from` and its next attempt at `to`, but for a few instructions at each
/// end (a test-and-set lock's `while (w) pause;` between two exchanges, however long the
/// holder held it in the traced run).
fn spun_between(spins: &[Change], w: u64, from: u64, to: u64) -> bool {
    ending_before(spins, to)
        .iter()
        .any(|c| c.addr == w && c.from > from && c.from - from <= spinwait::PER_CHECK)
}

/// Where a thread's spin on `w` that ends a few instructions before its try at `to` began
/// (the first instruction after its first look), if the spin came after the thread's
/// previous instruction on the word (at `prev`).
fn spin_before(spins: &[Change], w: u64, prev: Option<u64>, to: u64) -> Option<u64> {
    ending_before(spins, to)
        .iter()
        .filter(|c| c.addr == w && prev.is_none_or(|p| c.from > p))
        .map(|c| c.from)
        .min()
}

/// Per thread (of `n`), its changes (`spinwait.rs`) that `keep` keeps, sorted by their end.
fn changes_by_end(
    changes: &[Vec<Change>],
    n: usize,
    keep: impl Fn(&Change) -> bool,
) -> Vec<Vec<Change>> {
    (0..n)
        .map(|t| {
            let mut v: Vec<Change> = changes
                .get(t)
                .into_iter()
                .flatten()
                .filter(|c| keep(c))
                .copied()
                .collect();
            v.sort_by_key(|c| c.to);
            v
        })
        .collect()
}

/// The spins of `spins` (a thread's, sorted by their end) that end within
/// [`spinwait::PER_CHECK`] instructions before `to`.
fn ending_before(spins: &[Change], to: u64) -> &[Change] {
    let lo = spins.partition_point(|c| c.to < to.saturating_sub(spinwait::PER_CHECK));
    let hi = spins.partition_point(|c| c.to < to);
    &spins[lo..hi.max(lo)]
}

/// The role of each instruction of a word's history, or `None` if it is no lock's history.
/// `events` are (sequence number, thread, index in its atomics), in sequence order.
fn roles(events: &[(u64, u32, usize)], atomics: &[Vec<Atomic>]) -> Option<Vec<Role>> {
    roles_of(
        events
            .iter()
            .map(|&(_, t, i)| (t, atomics[t as usize][i].value)),
    )
}

/// [`roles`] of a word's history read whole, with `hidden`, the instructions on it that the
/// trace does not hold (sequence number, thread, value left): the roles of `events` alone.
/// glibc's malloc takes its arena's lock in wrapped calls (`pthread_create` allocating the
/// new thread's memory, a join freeing it) and in a thread's exit path (freeing its cache);
/// without those acquisitions and releases the lock's history reads as no lock's (a holder
/// seen taking the word it holds) whenever threads share an arena, and the lock's futex
/// calls stayed as the traced run paired them.
fn roles_whole(
    events: &[(u64, u32, usize)],
    hidden: Option<&Vec<(u64, u32, u64)>>,
    atomics: &[Vec<Atomic>],
) -> Option<Vec<Role>> {
    let Some(hidden) = hidden else {
        return roles(events, atomics);
    };
    // Both, in sequence order: (sequence number, thread, value left, one of `events`).
    let mut whole: Vec<(u64, u32, u64, bool)> = events
        .iter()
        .map(|&(seq, t, i)| (seq, t, atomics[t as usize][i].value, true))
        .chain(hidden.iter().map(|&(seq, t, v)| (seq, t, v, false)))
        .collect();
    whole.sort_unstable();
    let r = roles_of(whole.iter().map(|w| (w.1, w.2)))?;
    Some(
        r.into_iter()
            .zip(&whole)
            .filter(|(_, w)| w.3)
            .map(|(r, _)| r)
            .collect(),
    )
}

/// The roles of a history given as (thread, value left) in sequence order ([`roles`]).
fn roles_of(events: impl ExactSizeIterator<Item = (u32, u64)>) -> Option<Vec<Role>> {
    let mut holder: Option<u32> = None;
    let mut value = 0u64;
    let mut out = Vec::with_capacity(events.len());
    for (t, after) in events {
        let role = match holder {
            None if value == 0 && after != 0 => {
                holder = Some(t);
                Role::Acquire
            }
            Some(h) if h == t && after == 0 => {
                holder = None;
                Role::Release
            }
            Some(h) if h != t && value != 0 && after != 0 => Role::Failed,
            _ => return None,
        };
        value = after;
        out.push(role);
    }
    Some(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Acquire,
    Release,
    Failed,
    /// A read/write lock's acquisition for reading and its release ([`rw_roles`]).
    ReadAcquire,
    ReadRelease,
    /// A read/write lock's waiting flags cleared by a thread that wakes waiters (part of a
    /// release's wake path, not of an attempt).
    Wake,
}

/// Rust std's futex read/write lock (`std::sys::sync::rwlock::futex`): its state word holds
/// a 30-bit count of readers, or this value when a writer holds it, and two waiting flags
/// above.
pub const RW_MASK: u64 = (1 << 30) - 1;

/// The role of each instruction of a read/write lock's state word history ([`RW_MASK`]), or
/// `None` if it is not one: the count goes up by one (a read acquisition, the count not at
/// the writer's value), down by one (a holding reader's release), from 0 to the writer's value
/// (a write acquisition) and back (the writer's release); an instruction that leaves the
/// count unchanged sets a waiting flag or failed (part of an attempt), or clears a flag (a
/// releaser waking the waiters). The word must be written by a 32-bit instruction, never
/// hold bits above the two flags, and be taken for writing at least once.
fn rw_roles(events: &[(u64, u32, usize)], atomics: &[Vec<Atomic>]) -> Option<Vec<Role>> {
    let mut writer: Option<u32> = None;
    let mut readers: Vec<u32> = Vec::new();
    let mut value = 0u64;
    let mut wrote = false;
    let mut out = Vec::with_capacity(events.len());
    for &(_, t, i) in events {
        let a = atomics[t as usize][i];
        if a.size != 4 || a.plain {
            return None;
        }
        let (before, after) = (value & RW_MASK, a.value & RW_MASK);
        let role = if after == before {
            if value & !a.value != 0 {
                Role::Wake
            } else {
                Role::Failed
            }
        } else if before == 0 && after == RW_MASK {
            writer = Some(t);
            wrote = true;
            Role::Acquire
        } else if before == RW_MASK && after == 0 && writer == Some(t) {
            writer = None;
            Role::Release
        } else if before != RW_MASK && after == before + 1 && after < RW_MASK {
            readers.push(t);
            Role::ReadAcquire
        } else if before != RW_MASK && before == after + 1 {
            let k = readers.iter().position(|&r| r == t)?;
            readers.swap_remove(k);
            Role::ReadRelease
        } else {
            return None;
        };
        value = a.value;
        out.push(role);
    }
    wrote.then_some(out)
}

/// Finds the lock words and rewrites each thread's markers (see the module docs).
/// `marks[t]` are thread `t`'s raw markers, `mark_at[t]` the position of each, `atomics[t]`
/// its atomic instructions in order, `hidden` the atomic instructions the trace does not hold
/// (thread, instruction: the traced threads' in wrapped calls and exit paths, untraced
/// threads' under numbers of their own), read only as part of a lock word's history
/// ([`roles_whole`]), `changes[t]` and `stores[t]` its spin-waits and recorded
/// plain stores (`spinwait.rs`), which it also turns into markers and edits, with the waits
/// for counters counted down to zero (`countdown.rs`); `blind[t]` its spins whose end was not
/// recorded ([`spinwait::Detector::blind`]), read only as a spin lock's spinning.
/// `kind(raw)` says what atomic instruction `raw` is (an `xchg`, a compare-and-swap, …);
/// `spinning_code(raw)` whether the failure path of instruction `raw` (a lock call's first compare-and-swap) enters a lock
/// slow path that spins ([`spinning_slow_path`]), read from the program's code;
/// Each word's history: its atomic instructions (sequence number, thread, index in the
/// thread's `atomics`) in sequence order, a test-and-set lock's release (a plain store,
/// `taslock.rs`, numbered as the word's next acquisition) before that acquisition.
pub fn histories(atomics: &[Vec<Atomic>]) -> HashMap<u64, Vec<(u64, u32, usize)>> {
    let mut by_word: HashMap<u64, Vec<(u64, u32, usize)>> = HashMap::new();
    for (t, a) in atomics.iter().enumerate() {
        for (i, x) in a.iter().enumerate() {
            by_word
                .entry(x.addr)
                .or_default()
                .push((x.seq, t as u32, i));
        }
    }
    for v in by_word.values_mut() {
        v.sort_unstable_by_key(|&(seq, t, i)| (seq, !atomics[t as usize][i].plain, t, i));
    }
    by_word
}

/// `first_loads` answers `countdown::find`'s questions about plain loads (from the capture).
#[allow(clippy::too_many_arguments)]
pub fn find(
    marks: Vec<Vec<RawMark>>,
    mark_at: &[Vec<u64>],
    atomics: &[Vec<Atomic>],
    hidden: &[(u32, Atomic)],
    changes: &[Vec<Change>],
    blind: &[Vec<Change>],
    stores: &[Vec<Store>],
    kind: impl Fn(u32) -> Option<AtomicKind>,
    mut spinning_code: impl FnMut(u32) -> bool,
    mut tested_after: impl FnMut(u32) -> u64,
    first_loads: impl FnMut(&[countdown::LoadQuery]) -> Vec<Option<u64>>,
) -> Locks {
    let n = marks.len();
    let futex: HashSet<u64> = marks
        .iter()
        .flatten()
        .filter(|m| matches!(m.op, Op::FutexWait | Op::FutexWake))
        .map(|m| m.args[0])
        .collect();
    let by_word = histories(atomics);
    // The untraced instructions on those words: (sequence number, thread, value left).
    let mut hidden_by_word: HashMap<u64, Vec<(u64, u32, u64)>> = HashMap::new();
    for (t, x) in hidden.iter().filter(|(_, x)| by_word.contains_key(&x.addr)) {
        hidden_by_word
            .entry(x.addr)
            .or_default()
            .push((x.seq, *t, x.value));
    }
    let mut words: Vec<u64> = by_word.keys().copied().collect();
    words.sort_unstable();
    let mut out = Locks::default();
    // What the program's code says after each semaphore release (`tested_after`), by raw
    // static index: read once per instruction, not per release.
    let mut code_tests: HashMap<u32, u64> = HashMap::new();
    // Lock words with the role of each instruction of their history.
    let mut locks: Vec<(u64, Vec<Role>)> = Vec::new();
    let mut acquirers: HashSet<u32> = HashSet::new();
    // Futex wakes by word: (thread, sequence number).
    let mut wakes: HashMap<u64, Vec<(u32, u64)>> = HashMap::new();
    for (t, ms) in marks.iter().enumerate() {
        for m in ms.iter().filter(|m| m.op == Op::FutexWake) {
            wakes.entry(m.args[0]).or_default().push((t as u32, m.seq));
        }
    }
    let lock_like = |w: u64, r: &[Role]| {
        let ev = &by_word[&w];
        let mut takers: Vec<u32> = ev
            .iter()
            .zip(r)
            .filter(|(_, role)| **role == Role::Acquire)
            .map(|(e, _)| e.1)
            .collect();
        takers.sort_unstable();
        takers.dedup();
        // A lock is taken by several threads (a thread parker is "taken" by its owner only),
        // and its futex is woken by a thread that has just released it.
        if takers.len() < 2 {
            return false;
        }
        let Some(ws) = wakes.get(&w) else {
            return true;
        };
        // Per thread, its instructions on the word: (sequence number, role).
        let mut per: HashMap<u32, Vec<(u64, Role)>> = HashMap::new();
        for (e, &role) in ev.iter().zip(r) {
            per.entry(e.1).or_default().push((e.0, role));
        }
        ws.iter().all(|&(t, seq)| {
            per.get(&t).is_some_and(|l| {
                let i = l.partition_point(|x| x.0 < seq);
                i > 0 && l[i - 1].1 == Role::Release
            })
        })
    };
    // Read/write lock words ([`rw_roles`]), taken by two threads or more, futex words or not
    // (the writer's count is that lock's signature).
    let mut rw_words: HashSet<u64> = HashSet::new();
    let rw_lock = |w: u64| {
        let ev = &by_word[&w];
        let r = rw_roles(ev, atomics)?;
        let mut takers: Vec<u32> = ev
            .iter()
            .zip(&r)
            .filter(|(_, role)| matches!(role, Role::Acquire | Role::ReadAcquire))
            .map(|(e, _)| e.1)
            .collect();
        takers.sort_unstable();
        takers.dedup();
        (takers.len() >= 2).then_some(r)
    };
    // A read/write lock first: one whose readers never overlapped in the traced run (one
    // host CPU) would otherwise read as a mutex.
    for &w in &words {
        if let Some(r) = rw_lock(w) {
            rw_words.insert(w);
            locks.push((w, r));
        }
    }
    for &w in words
        .iter()
        .filter(|w| futex.contains(w) && !rw_words.contains(w))
    {
        match roles_whole(&by_word[&w], hidden_by_word.get(&w), atomics).filter(|r| lock_like(w, r))
        {
            Some(r) => {
                for (&(_, t, i), role) in by_word[&w].iter().zip(&r) {
                    if *role == Role::Acquire {
                        acquirers.insert(atomics[t as usize][i].raw);
                    }
                }
                locks.push((w, r));
            }
            None => out.rejected += 1,
        }
    }
    // Words no thread waited on: another instance of the same lock code, or a futex mutex's
    // signature (a 32-bit word freed by swapping in 0, as Rust's and glibc's mutexes are), so
    // that a lock is one whether or not it happened to block in the traced run; or a spin
    // lock: a word of another size freed by swapping in 0 (no futex waits on anything but 32
    // bits: a `std::atomic<bool>` lock whose release is a sequentially consistent store,
    // which gcc compiles to an exchange), or a test-and-set lock freed by a plain store.
    // Spin locks' waiters only spin (`spin_words`).
    let mut spin_words: HashSet<u64> = HashSet::new();
    for &w in words
        .iter()
        .filter(|w| !futex.contains(w) && !rw_words.contains(w))
    {
        let ev = &by_word[&w];
        let Some(r) = roles_whole(ev, hidden_by_word.get(&w), atomics).filter(|r| lock_like(w, r))
        else {
            continue;
        };
        let at = |e: &(u64, u32, usize)| atomics[e.1 as usize][e.2];
        let by_lock_code = ev
            .iter()
            .zip(&r)
            .any(|(e, role)| *role == Role::Acquire && acquirers.contains(&at(e).raw));
        let signature = ev
            .iter()
            .zip(&r)
            .all(|(e, role)| *role != Role::Release || kind(at(e).raw) == Some(AtomicKind::Swap));
        let futex_size = ev.iter().all(|e| at(e).size == 4);
        // A test-and-set lock (`taslock.rs` found its releases).
        let tas = ev.iter().any(|e| at(e).plain);
        if tas || signature && !futex_size {
            spin_words.insert(w);
        }
        if tas || by_lock_code || signature {
            locks.push((w, r));
        }
    }
    out.words = locks.len();
    out.read_write = rw_words.len();
    // Semaphores on futex words that are no lock (`atomicsem.rs`).
    let mut sems: Vec<(u64, atomicsem::Semaphore)> = Vec::new();
    {
        let taken: HashSet<u64> = locks.iter().map(|l| l.0).collect();
        let mut wake_at: HashMap<u64, Vec<(u32, u64, u64)>> = HashMap::new();
        for (t, ms) in marks.iter().enumerate() {
            for (m, &at) in ms.iter().zip(&mark_at[t]) {
                if m.op == Op::FutexWake {
                    wake_at
                        .entry(m.args[0])
                        .or_default()
                        .push((t as u32, m.seq, at));
                }
            }
        }
        for &w in words
            .iter()
            .filter(|w| futex.contains(w) && !taken.contains(w) && !rw_words.contains(w))
        {
            let ws = wake_at.get(&w).map_or(&[][..], |v| &v[..]);
            if let Some(s) = atomicsem::read(&by_word[&w], atomics, &kind, ws) {
                sems.push((w, s));
            }
        }
    }
    out.semaphores = sems.len();
    out.rejected -= sems.len();

    // Per thread: its episodes (word, episode), and the futex markers to remove.
    let mut episodes: Vec<Vec<(u64, Episode)>> = (0..n).map(|_| Vec::new()).collect();
    // Words whose lock code was seen spinning, and the instructions that began those
    // attempts (the lock call's first compare-and-swap, shared by every lock of its type).
    let mut spun_words: HashSet<u64> = HashSet::new();
    let mut spun_code: HashSet<u32> = HashSet::new();
    // Lock and semaphore words: their futex calls go, and no count-down or spin is read on
    // them.
    let lock_set: HashSet<u64> = locks
        .iter()
        .map(|l| l.0)
        .chain(sems.iter().map(|s| s.0))
        .collect();
    // Each thread's spins (`spinwait.rs`), by their end, with those whose end the plugin did
    // not see: a spin lock's attempts chain through them.
    let mut spins = changes_by_end(changes, n, |c| c.spun());
    for (v, b) in spins.iter_mut().zip(blind) {
        v.extend(b.iter().filter(|c| c.spun()));
        v.sort_by_key(|c| c.to);
    }
    // A read/write lock's writers wait on a futex word of their own beside the state word
    // (Rust's `writer_notify`), which a releaser bumps and wakes: its futex calls go with
    // the lock's.
    let notify: HashMap<u64, u64> = rw_words
        .iter()
        .filter_map(|&w| {
            [w + 4, w.wrapping_sub(4)]
                .into_iter()
                .find(|x| futex.contains(x) && !lock_set.contains(x))
                .map(|x| (w, x))
        })
        .collect();
    let lock_futex: HashSet<u64> = lock_set.iter().chain(notify.values()).copied().collect();
    // The writers' words were counted as futex words that are not locks.
    out.rejected -= notify.values().filter(|x| by_word.contains_key(x)).count();
    for (w, r) in &locks {
        // Each thread's instructions on the word, in its program order (= sequence order).
        let mut per: Vec<Vec<(usize, Role)>> = (0..n).map(|_| Vec::new()).collect();
        for (&(_, t, i), &role) in by_word[w].iter().zip(r) {
            per[t as usize].push((i, role));
        }
        for (t, list) in per.iter().enumerate() {
            // Futex waits of this thread on the word, by position.
            let waits: Vec<u64> = marks[t]
                .iter()
                .zip(&mark_at[t])
                .filter(|(m, _)| {
                    m.op == Op::FutexWait && (m.args[0] == *w || notify.get(w) == Some(&m.args[0]))
                })
                .map(|(_, &at)| at)
                .collect();
            let at = |i: usize| atomics[t][i].at;
            let mut failed: Vec<usize> = Vec::new();
            // Positions of the thread's instructions on the word so far.
            let mut seen: Vec<u64> = Vec::new();
            for &(i, role) in list {
                seen.push(at(i));
                match role {
                    Role::Wake => {}
                    Role::Failed => failed.push(i),
                    Role::Release | Role::ReadRelease => {
                        // The thread's last open episode of the word (a reader holding it
                        // twice releases the inner one first).
                        if let Some(e) = episodes[t]
                            .iter_mut()
                            .rev()
                            .take_while(|e| e.0 == *w)
                            .find(|e| e.1.release.is_none())
                        {
                            e.1.release = Some(i);
                        }
                        failed.clear();
                    }
                    Role::Acquire | Role::ReadAcquire => {
                        // Chain back the failed attempts that are part of this one.
                        let mut start = i;
                        let mut spun = false;
                        for &f in failed.iter().rev() {
                            let near = at(start) - at(f) <= SPIN_GAP
                                || spin_words.contains(w)
                                    && spun_between(&spins[t], *w, at(f), at(start));
                            // A wait at a position in [at(f), at(start)] (positions sorted).
                            let k = waits.partition_point(|&x| x < at(f));
                            let waited = waits.get(k).is_some_and(|&x| x <= at(start));
                            if !(near || waited) {
                                break;
                            }
                            spun |= !waited && at(start) - at(f) >= SPIN_SHOWN;
                            start = f;
                        }
                        if spun {
                            spun_words.insert(*w);
                            spun_code.insert(atomics[t][start].raw);
                        }
                        // A test-and-set lock's attempt that looked at the word, spinning,
                        // before its first try (after its previous instruction on the word):
                        // the spin is part of the attempt. So is a read/write lock's (Rust's
                        // reader finds the word write-locked at its first load and spins
                        // before any compare-and-swap).
                        let prev = seen
                            .partition_point(|&p| p < at(start))
                            .checked_sub(1)
                            .map(|k| seen[k]);
                        let begin = (spin_words.contains(w) || rw_words.contains(w))
                            .then(|| spin_before(&spins[t], *w, prev, at(start)))
                            .flatten()
                            .unwrap_or(at(start));
                        out.acquisitions += 1;
                        out.contended += (start != i) as u64;
                        failed.clear();
                        episodes[t].push((
                            *w,
                            Episode {
                                start,
                                begin,
                                acquire: i,
                                release: None,
                                rw: rw_words.contains(w).then_some(role == Role::Acquire),
                            },
                        ));
                    }
                }
            }
        }
    }

    // Semaphores: each take, from the start of its attempt (failed tries, futex waits and the
    // spin on the word before it) to the compare-and-swap, and each release with its wake.
    let mut sem_eps: Vec<Vec<SemEpisode>> = (0..n).map(|_| Vec::new()).collect();
    // Each thread's recorded looks at semaphore words, by their end.
    let sem_set: HashSet<u64> = sems.iter().map(|s| s.0).collect();
    let looks = changes_by_end(changes, n, |c| sem_set.contains(&c.addr));
    for (w, sem) in &sems {
        let mut per: Vec<Vec<(usize, atomicsem::Role)>> = (0..n).map(|_| Vec::new()).collect();
        for (&(_, t, i), &role) in by_word[w].iter().zip(&sem.roles) {
            per[t as usize].push((i, role));
        }
        for (t, list) in per.iter().enumerate() {
            let at = |i: usize| atomics[t][i].at;
            let waits: Vec<u64> = marks[t]
                .iter()
                .zip(&mark_at[t])
                .filter(|(m, _)| m.op == Op::FutexWait && m.args[0] == *w)
                .map(|(_, &x)| x)
                .collect();
            let mut failed: Vec<usize> = Vec::new();
            let mut prev: Option<u64> = None;
            for &(i, role) in list {
                match role {
                    atomicsem::Role::Failed => failed.push(i),
                    atomicsem::Role::Take => {
                        let mut start = i;
                        for &f in failed.iter().rev() {
                            let k = waits.partition_point(|&x| x < at(f));
                            let waited = waits.get(k).is_some_and(|&x| x <= at(start));
                            if at(start) - at(f) > SPIN_GAP && !waited {
                                break;
                            }
                            start = f;
                        }
                        // The attempt began at the first sign of it since the thread's
                        // previous instruction on the word: a futex wait there, a recorded
                        // look that found the count at 0, or a spin on the word (the program
                        // reads a semaphore's count only to take a unit). A look that found
                        // units stays: the uncontended take's few instructions.
                        let after = prev.map_or(0, |p| p + 1);
                        let k = waits.partition_point(|&x| x < after);
                        let wait = waits.get(k).copied().filter(|&x| x <= at(start));
                        let (lo, hi) = (
                            looks[t].partition_point(|c| c.to < after),
                            looks[t].partition_point(|c| c.to <= at(start)),
                        );
                        let look = looks[t][lo..hi.max(lo)]
                            .iter()
                            .filter(|c| {
                                c.addr == *w && c.from >= after && (c.spun() || c.value == 0)
                            })
                            .map(|c| c.from.min(c.to))
                            .min();
                        let mut begin = wait.into_iter().chain(look).fold(at(start), u64::min);
                        // A take made in a function of its own (libstdc++'s
                        // `__atomic_wait_address_bare`, entered a few instructions before the
                        // attempt's first sign, after the thread's previous instruction on the
                        // word): the whole call goes, so that a contended take and an
                        // uncontended one leave the same instructions (the edit unwinds to its
                        // return).
                        let frame = atomics[t][i].frame;
                        if frame != NO_FRAME
                            && frame <= begin
                            && begin - frame <= TAKE_ENTRY
                            && frame >= after
                        {
                            begin = frame;
                        }
                        out.semaphore_takes += 1;
                        sem_eps[t].push(SemEpisode {
                            word: *w,
                            initial: sem.initial,
                            take: true,
                            begin,
                            end: at(i) + 1,
                            seq: atomics[t][start].seq,
                            done: atomics[t][i].seq,
                        });
                        failed.clear();
                    }
                    atomicsem::Role::Give { .. } => {
                        // The release's futex wake (the next marker, within the wake's path,
                        // no atomic instruction between) goes with it, and with it the test
                        // of the count that chose the wake; a release without a wake loses
                        // that test too (its branch skipped the wake), so that a thread
                        // replays the same instructions however often the traced run found
                        // the count at 0.
                        let x = at(i);
                        let next_atomic = atomics[t].get(i + 1).map_or(u64::MAX, |a| a.at);
                        let k = mark_at[t].partition_point(|&p| p <= x);
                        let next_mark = mark_at[t].get(k).copied().unwrap_or(u64::MAX);
                        let end = match (marks[t].get(k), mark_at[t].get(k)) {
                            (Some(m), Some(&wake))
                                if m.op == Op::FutexWake
                                    && m.args[0] == *w
                                    && wake - x <= atomicsem::WAKE_PATH
                                    && next_atomic >= wake =>
                            {
                                wake.max(x + 1)
                            }
                            _ => {
                                let raw = atomics[t][i].raw;
                                let tests =
                                    *code_tests.entry(raw).or_insert_with(|| tested_after(raw));
                                let tested = x + 1 + tests;
                                if tested <= next_atomic && tested <= next_mark {
                                    tested
                                } else {
                                    x + 1
                                }
                            }
                        };
                        out.semaphore_gives += 1;
                        sem_eps[t].push(SemEpisode {
                            word: *w,
                            initial: sem.initial,
                            take: false,
                            begin: x,
                            end,
                            seq: atomics[t][i].seq,
                            done: atomics[t][i].seq,
                        });
                    }
                }
                if role != atomicsem::Role::Failed {
                    prev = Some(at(i));
                }
            }
        }
    }

    // Waits for counters counted down to zero, and spin-waits ended by another thread's
    // store: each dependence is a futex wait of the waiter paired with a wake after the other
    // thread's instruction, at an address of its own; barriers built on spun-on addresses
    // become barrier markers. A spin that overlaps a lock's attempt or another spin of its
    // thread stays as traced.
    let (countdowns, by_load) = countdown::find(
        atomics,
        &by_word,
        &lock_set,
        &futex,
        &marks,
        mark_at,
        first_loads,
    );
    out.countdown_waits = countdowns.len() as u64;
    out.countdown_loads = by_load;
    let mut taken: Vec<Vec<(u64, u64)>> = (0..n)
        .map(|t| {
            let a = &atomics[t];
            let mut r: Vec<(u64, u64)> = Vec::new();
            for (_, e) in &episodes[t] {
                r.push((e.begin, a[e.acquire].at + 1));
                if let Some(x) = e.release {
                    r.push((a[x].at, a[x].at + 1));
                }
            }
            r.extend(sem_eps[t].iter().map(|e| (e.begin, e.end)));
            r
        })
        .collect();
    // Every atomic read-modify-write as a store a poller's look may read.
    let rmw: Vec<Vec<Store>> = atomics
        .iter()
        .map(|a| {
            a.iter()
                .map(|x| Store {
                    at: x.at,
                    addr: x.addr,
                    value: x.value,
                    seq: x.seq,
                    arrival: false,
                })
                .collect()
        })
        .collect();
    // A look after a yield that was part of a lock's or a semaphore's attempt (libstdc++'s
    // semaphore yields in its spin) is no poll: the thread waited for the lock, and what it
    // read under it the lock ordered.
    let changes: Vec<Vec<Change>> = changes
        .iter()
        .zip(&taken)
        .map(|(cs, ranges)| {
            let mut r = ranges.clone();
            r.sort_unstable();
            cs.iter()
                .map(|c| {
                    let mut c = *c;
                    let inside = c.yield_at.is_some_and(|y| {
                        let k = r.partition_point(|x| x.0 <= y);
                        r[..k].iter().rev().take(4).any(|&(_, e)| y < e)
                    });
                    if inside {
                        c.polled = None;
                    }
                    c
                })
                .collect()
        })
        .collect();
    let spun = spinwait::find(&changes, stores, &rmw, &lock_set, &taken);
    out.spin_unmatched = spun.unmatched;
    out.spin_barrier_words = spun.barrier_words;
    // Per thread: (position, order, marker, end of the instructions left out).
    let mut dep_items: Vec<Vec<DepItem>> = (0..n).map(|_| Vec::new()).collect();
    // Per thread: the ranges of spinning left out, whose futex waits go with them.
    let mut spun_ranges: Vec<Vec<(u64, u64)>> = (0..n).map(|_| Vec::new()).collect();
    for b in &spun.barriers {
        let t = b.thread as usize;
        if b.from < b.at {
            spun_ranges[t].push((b.from, b.at));
            out.spin_instructions += b.at - b.from;
            out.spin_waits += 1;
        }
        taken[t].push((b.from, b.at + 1));
        let mark = RawMark {
            op: Op::Barrier,
            args: [SPIN_BARRIER + b.episode, b.participants as u64, 0],
            seq: 0,
        };
        let done = RawMark {
            op: Op::Done,
            args: [0; 3],
            seq: 0,
        };
        let list = &mut dep_items[t];
        list.push((b.from, ADDED, list.len(), mark, b.at));
        list.push((b.from, ADDED, list.len(), done, b.at));
    }
    out.spin_barrier_episodes = spun.barriers.len() as u64;
    let counted: HashSet<u64> = countdowns.iter().map(|d| d.word).collect();
    let mut deps = countdowns;
    let polls = spun.deps.len();
    for (k, d) in spun.deps.into_iter().chain(spun.polls).enumerate() {
        let spun = d.from < d.at;
        let r = &mut taken[d.waiter as usize];
        if r.iter().any(|&(s, e)| s <= d.at && d.from < e) {
            out.spin_unmatched += spun as u64;
            continue;
        }
        r.push((d.from, d.at + 1));
        if spun {
            out.spin_waits += 1;
            out.spin_instructions += d.at - d.from;
        } else if k < polls {
            out.spin_reads += 1;
        } else {
            out.spin_polls += 1;
        }
        deps.push(d);
    }
    // One-shot publications through a word (a channel's slot marked written, then read): the
    // second instruction waits for the first (`publish.rs`), on words no other reading
    // claimed.
    let claimed = |w: u64| {
        lock_set.contains(&w)
            || futex.contains(&w)
            || counted.contains(&w)
            || hidden_by_word.contains_key(&w)
            || sems.iter().any(|s| s.0 == w)
    };
    for d in publish::find(atomics, &by_word, claimed, &kind) {
        let r = &mut taken[d.waiter as usize];
        if r.iter().any(|&(s, e)| s <= d.at && d.at < e) {
            continue;
        }
        r.push((d.at, d.at + 1));
        out.published += 1;
        deps.push(d);
    }
    // A count-down its thread made as it ended (after it, no synchronization but futex calls
    // and its end, within `EXIT_GAP` instructions: a Rust scope's thread): the waiter's wait
    // for it is a join of that thread (`model::EXIT_COUNT`).
    let at_exit = |t: u32, pos: u64| {
        let (ms, at) = (&marks[t as usize], &mark_at[t as usize]);
        let from = at.partition_point(|&a| a < pos);
        ms[from..].last().is_some_and(|m| m.op == Op::ThreadEnd)
            && at
                .last()
                .is_some_and(|&end| end.saturating_sub(pos) <= EXIT_GAP)
            && ms[from..].iter().all(|m| {
                matches!(
                    m.op,
                    Op::FutexWait
                        | Op::FutexWake
                        | Op::Done
                        | Op::Resume
                        | Op::Suppress
                        | Op::ThreadEnd
                )
            })
    };
    let mut exits = vec![Vec::new(); deps.len()];
    for (k, d) in deps.iter().enumerate().take(out.countdown_waits as usize) {
        exits[k] = d.sources.iter().map(|s| at_exit(s.0, s.1)).collect();
    }
    for (k, d) in deps.iter().enumerate() {
        if d.from < d.at {
            spun_ranges[d.waiter as usize].push((d.from, d.at));
        }
        // The pairing in `sync.rs` takes a wake between a wait's start and its end: the end
        // goes after every source (a store's number can be larger than that of the load that
        // read it, when their callbacks raced).
        let first = d.sources.iter().map(|s| s.2).min().unwrap_or(d.seq);
        let last = d
            .sources
            .iter()
            .map(|s| s.2 + 1)
            .max()
            .unwrap_or(0)
            .max(d.seq);
        for (i, &(t, pos, seq)) in d.sources.iter().enumerate() {
            let addr = if exits[k].get(i).copied().unwrap_or(false) {
                out.countdown_exits += 1;
                crate::model::exit_count_addr(k as u64, t)
            } else {
                COUNTDOWN + k as u64
            };
            if d.from == d.at {
                out.countdown_edges += 1;
            }
            let wait = RawMark {
                op: Op::FutexWait,
                args: [addr, d.word, 0],
                seq: first - 1,
            };
            let done = RawMark {
                op: Op::Done,
                args: [0; 3],
                seq: last,
            };
            let list = &mut dep_items[d.waiter as usize];
            let kind = if d.before { BEFORE } else { ADDED };
            list.push((d.from, kind, list.len(), wait, d.at));
            list.push((d.from, kind, list.len(), done, d.at));
            let wake = RawMark {
                op: Op::FutexWake,
                args: [addr, 1, 0],
                seq,
            };
            let list = &mut dep_items[t as usize];
            list.push((pos, ADDED, list.len(), wake, pos));
        }
    }

    // The new marker lists and the edits.
    let mut code_spins: HashMap<u32, bool> = HashMap::new();
    for (t, ms) in marks.into_iter().enumerate() {
        // (position, BEFORE / RAW / ADDED, order, marker, edit end)
        let mut items: Vec<(u64, u8, usize, RawMark, u64)> = Vec::with_capacity(ms.len());
        let mut removed = vec![false; ms.len()];
        for (k, m) in ms.iter().enumerate() {
            let lock_futex =
                matches!(m.op, Op::FutexWait | Op::FutexWake) && lock_futex.contains(&m.args[0]);
            let at = mark_at[t][k];
            let spun_wait =
                m.op == Op::FutexWait && spun_ranges[t].iter().any(|&(s, e)| s <= at && at <= e);
            // Polling under a lock: the iterations' locks and unlocks left out with them (the
            // range runs from the first look's lock, left out, or its unlock, kept, to the
            // last lock, kept).
            let spun_lock = spun_ranges[t].iter().any(|&(s, e)| {
                (m.op == Op::MutexUnlock && s < at || m.op == Op::MutexLock && s <= at) && at < e
            });
            if lock_futex || spun_wait || spun_lock {
                removed[k] = true;
                // A call's result goes with it.
                if m.op != Op::FutexWake
                    && let Some(d) = ms.get(k + 1)
                    && d.op == Op::Done
                {
                    removed[k + 1] = true;
                }
            }
        }
        for (k, m) in ms.iter().enumerate() {
            if !removed[k] {
                items.push((mark_at[t][k], RAW, k, *m, 0));
            }
        }
        let a = &atomics[t];
        let mark = |op, arg: u64, seq| RawMark {
            op,
            args: [arg, 0, 0],
            seq,
        };
        // Dependences first at a position (they remove nothing): a count's wake belongs
        // before a lock attempt that starts at the next instruction.
        for &(pos, kind, k, m, end) in &dep_items[t] {
            items.push((pos, kind, k, m, end));
        }
        let lk = 1 << 40;
        for (j, (w, e)) in episodes[t].iter().enumerate() {
            let (s, q) = (a[e.start], a[e.acquire]);
            let rel = e.release.map(|r| a[r]);
            // A release followed closely by the thread's futex wake on the word (the next
            // marker, no atomic instruction between): the wake path goes with the release,
            // as it would not run had the word not been marked contended.
            let rel_end = e.release.map(|r| {
                let at = a[r].at;
                let k = mark_at[t].partition_point(|&x| x <= at);
                if e.rw.is_some() {
                    // A read/write lock's release wakes through a path of its own (clearing
                    // the waiting flags, bumping the writers' word, a wake of each word):
                    // the futex wakes of the lock's words that follow it, each within
                    // `WAKE_PATH` instructions of the last, go with it.
                    let mut end = at + 1;
                    for (m, &x) in ms[k..].iter().zip(&mark_at[t][k..]) {
                        let ours = m.args[0] == *w || notify.get(w) == Some(&m.args[0]);
                        if m.op != Op::FutexWake || !ours || x - (end - 1) > WAKE_PATH {
                            break;
                        }
                        end = x.max(end);
                    }
                    return end;
                }
                let next_atomic = a.get(r + 1).map_or(u64::MAX, |x| x.at);
                match (ms.get(k), mark_at[t].get(k)) {
                    (Some(m), Some(&wake))
                        if m.op == Op::FutexWake
                            && m.args[0] == *w
                            && wake - at <= WAKE_PATH
                            && next_atomic >= wake =>
                    {
                        wake.max(at + 1)
                    }
                    _ => at + 1,
                }
            });
            // A lock whose code spins: its marker's second argument is 1. Seen spinning in
            // the traced run, or its code's slow path is one that spins, or a test-and-set
            // lock: a run in which the lock was never contended (one host CPU) replays as one
            // in which it was.
            let spins = spun_words.contains(w)
                || spin_words.contains(w)
                || spun_code.contains(&s.raw)
                || *code_spins
                    .entry(s.raw)
                    .or_insert_with(|| spinning_code(s.raw));
            let lock = match e.rw {
                Some(write) => RawMark {
                    op: if write { Op::RwWrite } else { Op::RwRead },
                    args: [*w, 0, 0],
                    seq: s.seq,
                },
                None => RawMark {
                    op: Op::MutexLock,
                    // Found in traced code: its instructions are in the stream (no call
                    // cost).
                    args: [*w, u64::from(spins), 1],
                    seq: s.seq,
                },
            };
            out.spinning += u64::from(spins && e.rw.is_none());
            let added = [
                Some((e.begin, lock, q.at + 1)),
                Some((e.begin, mark(Op::Done, 0, q.seq), q.at + 1)),
                // A test-and-set lock's plain store (`taslock.rs`) is a release the thread does
                // not wait for: the unlock's second argument says so.
                rel.zip(rel_end).map(|(r, end)| {
                    let mut m = mark(Op::MutexUnlock, *w, r.seq);
                    m.args[1] = u64::from(r.plain);
                    (r.at, m, end)
                }),
                rel.zip(rel_end)
                    .map(|(r, end)| (r.at, mark(Op::Done, 0, r.seq), end)),
            ];
            for (k, x) in added.into_iter().enumerate() {
                if let Some((pos, m, end)) = x {
                    items.push((pos, ADDED, lk + 4 * j + k, m, end));
                }
            }
        }
        let sk = 1 << 41;
        for (j, e) in sem_eps[t].iter().enumerate() {
            let op = if e.take { Op::SemWait } else { Op::SemPost };
            // A release says that it wakes the futex whenever it finds the count at 0: the
            // signature `atomicsem.rs` read (libstdc++'s).
            let m = RawMark {
                op,
                args: [e.word, e.initial, u64::from(!e.take)],
                seq: e.seq,
            };
            items.push((e.begin, ADDED, sk + 2 * j, m, e.end));
            items.push((
                e.begin,
                ADDED,
                sk + 2 * j + 1,
                mark(Op::Done, 0, e.done),
                e.end,
            ));
        }
        items.sort_unstable_by_key(|x| (x.0, x.1, x.2));
        let mut list = Vec::with_capacity(items.len());
        let mut index = vec![u32::MAX; ms.len()];
        let mut edits: Vec<Edit> = Vec::new();
        for (at, kind, k, m, end) in items {
            let here = list.len() as u32;
            list.push(m);
            if kind == RAW {
                index[k] = here;
            } else if let Some(e) = edits.last_mut()
                && e.start == at
                && e.end == end
            {
                e.count += 1;
                e.unwind |= unwinds(m.op);
            } else {
                edits.push(Edit {
                    start: at,
                    end,
                    first: here,
                    count: 1,
                    unwind: unwinds(m.op),
                });
            }
        }
        out.marks.push(list);
        out.raw_index.push(index);
        out.edits.push(edits);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No plain loads asked of a capture are found.
    fn no_loads(q: &[countdown::LoadQuery]) -> Vec<Option<u64>> {
        vec![None; q.len()]
    }

    /// [`find`] with no spin-waits, no lock code known to spin and no plain loads.
    fn find_plain(
        marks: Vec<Vec<RawMark>>,
        mark_at: &[Vec<u64>],
        atomics: &[Vec<Atomic>],
    ) -> Locks {
        find_with_hidden(marks, mark_at, atomics, &[])
    }

    /// [`find_plain`] with atomic instructions the trace does not hold.
    fn find_with_hidden(
        marks: Vec<Vec<RawMark>>,
        mark_at: &[Vec<u64>],
        atomics: &[Vec<Atomic>],
        hidden: &[(u32, Atomic)],
    ) -> Locks {
        find(
            marks,
            mark_at,
            atomics,
            hidden,
            &[],
            &[],
            &[],
            swap,
            |_| false,
            |_| 0,
            no_loads,
        )
    }

    fn atomic(at: u64, raw: u32, addr: u64, value: u64, seq: u64) -> Atomic {
        Atomic {
            at,
            raw,
            addr,
            size: 4,
            value,
            seq,
            plain: false,
            frame: NO_FRAME,
        }
    }

    /// Instruction 2 of the tests is the releasing swap, 8 a `lock xadd`, the others
    /// compare-and-swaps.
    fn swap(raw: u32) -> Option<AtomicKind> {
        Some(match raw {
            2 => AtomicKind::Swap,
            8 => AtomicKind::Locked,
            _ => AtomicKind::CompareExchange,
        })
    }

    /// The spin argument of every lock marker, thread by thread.
    fn lock_spins(l: &Locks) -> Vec<u64> {
        l.marks
            .iter()
            .flatten()
            .filter(|m| m.op == Op::MutexLock)
            .map(|m| m.args[1])
            .collect()
    }

    fn raw(op: Op, a: u64, seq: u64) -> RawMark {
        RawMark {
            op,
            args: [a, 0, 0],
            seq,
        }
    }

    /// Two threads on a Rust-style futex mutex at 0x100: thread 0 takes it at once; thread 1
    /// fails, spins, swaps in 2, waits on the futex, and takes it after thread 0's release
    /// woke it. A second word (0x200) taken by the same instruction never blocked: it is a
    /// lock too. A counter (0x300) that only grows is not.
    #[test]
    fn a_contended_futex_mutex_becomes_lock_markers_and_its_spinning_is_left_out() {
        const W: u64 = 0x100;
        let a0 = vec![
            atomic(10, 1, W, 1, 1),      // acquire (cas 0 -> 1)
            atomic(50, 2, W, 0, 5),      // release (swap 0; it was 2): then a futex wake
            atomic(60, 1, 0x200, 1, 8),  // acquire another instance
            atomic(70, 2, 0x200, 0, 9),  // release
            atomic(80, 3, 0x300, 1, 10), // counter
        ];
        let a1 = vec![
            atomic(5, 1, W, 1, 2),        // failed cas (held)
            atomic(105, 4, W, 2, 3),      // swap 2: failed, then futex wait
            atomic(200, 4, W, 2, 7),      // swap 2 after the wake: acquires (it was 0)
            atomic(230, 2, W, 0, 11),     // release
            atomic(240, 3, 0x300, 2, 12), // counter
            atomic(300, 1, 0x200, 1, 13), // the other instance, here too
            atomic(310, 2, 0x200, 0, 14),
        ];
        let m0 = vec![raw(Op::FutexWake, W, 6), raw(Op::Done, 0, 6)];
        let m1 = vec![raw(Op::FutexWait, W, 4), raw(Op::Done, 0, 7)];
        let mark_at = vec![vec![51, 51], vec![106, 190]];
        let l = find_plain(vec![m0, m1], &mark_at, &[a0, a1]);
        assert_eq!(
            (l.words, l.acquisitions, l.contended, l.rejected),
            (2, 4, 1, 0)
        );
        // Thread 1: its wait is gone; lock at its first attempt (5) up to the acquisition.
        assert_eq!(l.raw_index[1], vec![u32::MAX, u32::MAX]);
        let ops: Vec<(Op, u64, u64)> = l.marks[1]
            .iter()
            .map(|m| (m.op, m.args[0], m.seq))
            .collect();
        assert_eq!(
            ops,
            vec![
                (Op::MutexLock, W, 2),
                (Op::Done, 0, 7),
                (Op::MutexUnlock, W, 11),
                (Op::Done, 0, 11),
                (Op::MutexLock, 0x200, 13),
                (Op::Done, 0, 13),
                (Op::MutexUnlock, 0x200, 14),
                (Op::Done, 0, 14)
            ]
        );
        let edit = |start, end, first| Edit {
            start,
            end,
            first,
            count: 2,
            unwind: true,
        };
        assert_eq!(
            l.edits[1],
            vec![
                edit(5, 201, 0),
                edit(230, 231, 2),
                edit(300, 301, 4),
                edit(310, 311, 6)
            ]
        );
        // Thread 0: its wake is gone (the unlock replaces it), both words are locked.
        let ops0: Vec<Op> = l.marks[0].iter().map(|m| m.op).collect();
        assert_eq!(ops0.iter().filter(|&&o| o == Op::MutexLock).count(), 2);
        assert!(!ops0.contains(&Op::FutexWake));
        assert_eq!(l.edits[0][0].start, 10);
        assert_eq!(l.edits[0][0].end, 11);
        // Thread 1 spun 100 instructions between its failed attempt and its swap: every lock
        // begun by that compare-and-swap spins, in both threads, the never-blocked word too.
        assert_eq!(lock_spins(&l), vec![1, 1, 1, 1]);
        assert_eq!(l.spinning, 4);
    }

    /// glibc's lock goes from its failed compare-and-swap straight to its exchange and futex
    /// wait: no spinning shown, so its lock markers do not spin; a lock whose failed attempt
    /// is followed by a long gap only across a futex wait does not either.
    #[test]
    fn a_lock_that_goes_straight_to_its_futex_wait_does_not_spin() {
        const W: u64 = 0x100;
        let a0 = vec![
            atomic(10, 1, W, 1, 1), // acquire (cas 0 -> 1)
            atomic(50, 2, W, 0, 5), // release (swap 0; it was 2): then a futex wake
        ];
        let a1 = vec![
            atomic(5, 1, W, 1, 2),    // failed cas (held)
            atomic(12, 4, W, 2, 3),   // exchange 2 seven instructions later: failed, futex wait
            atomic(200, 4, W, 2, 7),  // exchange 2 after the wake: acquires (it was 0)
            atomic(230, 2, W, 0, 11), // release
        ];
        let m0 = vec![raw(Op::FutexWake, W, 6), raw(Op::Done, 0, 6)];
        let m1 = vec![raw(Op::FutexWait, W, 4), raw(Op::Done, 0, 7)];
        let mark_at = vec![vec![51, 51], vec![13, 190]];
        let l = find_plain(vec![m0, m1], &mark_at, &[a0, a1]);
        assert_eq!((l.words, l.acquisitions, l.contended), (1, 2, 1));
        assert_eq!(lock_spins(&l), vec![0, 0]);
        assert_eq!(l.spinning, 0);
    }

    /// A release that finds the word marked contended calls the futex wake: the wake path
    /// (its argument set-up, the system call, the return) goes with the release, since a
    /// release of an uncontended lock never runs it; the acquisition's edit and the
    /// release's unwind to the return of what they entered. A wake farther than
    /// [`WAKE_PATH`], or after another atomic instruction, is not the release's own.
    #[test]
    fn a_contended_release_leaves_out_its_futex_wake_path() {
        const W: u64 = 0x100;
        let history = |wake_at: u64, between: bool| {
            let mut a0 = vec![
                atomic(10, 1, W, 1, 1), // acquire (cas 0 -> 1)
                atomic(50, 2, W, 0, 5), // release (swap 0; it was 2): then a futex wake
            ];
            if between {
                a0.push(atomic(55, 3, 0x300, 1, 6)); // a counter's add before the wake
            }
            let a1 = vec![
                atomic(5, 1, W, 1, 2),    // failed cas (held)
                atomic(12, 4, W, 2, 3),   // exchange 2: failed, futex wait
                atomic(200, 4, W, 2, 8),  // exchange 2 after the wake: acquires (it was 0)
                atomic(230, 2, W, 0, 11), // release
            ];
            let m0 = vec![raw(Op::FutexWake, W, 7), raw(Op::Done, 0, 7)];
            let m1 = vec![raw(Op::FutexWait, W, 4), raw(Op::Done, 0, 9)];
            let mark_at = vec![vec![wake_at, wake_at], vec![13, 190]];
            find_plain(vec![m0, m1], &mark_at, &[a0, a1])
        };
        let ends = |l: &Locks| -> Vec<(u64, u64, bool)> {
            l.edits[0]
                .iter()
                .map(|e| (e.start, e.end, e.unwind))
                .collect()
        };
        // The wake 20 instructions after the release: left out up to it.
        assert_eq!(ends(&history(70, false)), [(10, 11, true), (50, 70, true)]);
        // Too far to be its own, or after another atomic instruction: the release alone.
        assert_eq!(
            ends(&history(50 + WAKE_PATH + 1, false)),
            [(10, 11, true), (50, 51, true)]
        );
        assert_eq!(ends(&history(70, true)), [(10, 11, true), (50, 51, true)]);
        // The waiter's acquisition: from its first attempt through the acquiring exchange.
        let l = history(70, false);
        assert_eq!(
            l.edits[1][0],
            Edit {
                start: 5,
                end: 201,
                first: 0,
                count: 2,
                unwind: true
            }
        );
    }

    /// A word whose holder changes it without freeing it, or that a non-holder frees, is no
    /// lock: its futex markers stay and nothing is rewritten.
    #[test]
    fn a_futex_word_whose_history_is_not_a_locks_is_left_alone() {
        const W: u64 = 0x100;
        // A semaphore-like word: thread 0 raises it to 1, thread 1 brings it to 0.
        let a0 = vec![atomic(10, 1, W, 1, 1)];
        let a1 = vec![atomic(20, 2, W, 0, 3)];
        let m1 = vec![raw(Op::FutexWait, W, 2), raw(Op::Done, 0, 4)];
        let l = find_plain(vec![vec![], m1], &[vec![], vec![15, 18]], &[a0, a1]);
        assert_eq!((l.words, l.rejected), (0, 1));
        assert_eq!(l.raw_index[1], vec![0, 1]);
        assert!(l.edits.iter().all(Vec::is_empty));
    }

    /// A lock's history goes on where the trace does not (glibc frees an ended thread's
    /// malloc cache into its arena under the arena's lock after the thread's end, and takes
    /// that lock inside wrapped calls: `Op::Atomic`): thread 2 takes and frees the word there, between thread 0's
    /// release and thread 1's attempts. Read without those two, thread 1's second swap would
    /// be a holder's change of its own lock (no lock: the word's futex calls would stay as the
    /// traced run paired them); read whole, thread 1 failed once and then took it.
    #[test]
    fn a_lock_taken_where_the_trace_does_not_go_is_still_a_lock() {
        const W: u64 = 0x100;
        let a0 = vec![atomic(10, 1, W, 1, 1), atomic(20, 2, W, 0, 2)];
        let a1 = vec![
            atomic(30, 2, W, 2, 4),
            atomic(40, 2, W, 2, 8),
            atomic(50, 2, W, 0, 9),
        ];
        let hidden = [(2, atomic(70, 1, W, 1, 3)), (2, atomic(70, 2, W, 0, 7))];
        let m1 = vec![raw(Op::FutexWait, W, 5), raw(Op::Done, 0, 6)];
        let marks = vec![vec![], m1, vec![]];
        let mark_at = [vec![], vec![31, 31], vec![]];
        let atomics = [a0, a1, vec![]];
        let whole =
            |hidden: &[(u32, Atomic)]| find_with_hidden(marks.clone(), &mark_at, &atomics, hidden);
        let l = whole(&[]);
        assert_eq!((l.words, l.rejected), (0, 1));
        let l = whole(&hidden);
        assert_eq!((l.words, l.rejected), (1, 0));
        // Thread 1's futex wait went with the word's history: one acquisition, from its
        // first swap on.
        assert!(!l.edits[1].is_empty());
    }

    /// Rust's thread parker reads like a lock its owner takes (0 → -1 when it parks, back to 0
    /// when it wakes), and another thread's unpark like a failed attempt followed by a wake:
    /// taken by one thread, woken by a non-releaser, it is no lock.
    #[test]
    fn a_thread_parker_is_no_lock() {
        const W: u64 = 0x100;
        let a0 = vec![atomic(10, 1, W, u32::MAX as u64, 1), atomic(30, 2, W, 0, 5)];
        let a1 = vec![atomic(20, 3, W, 1, 3)];
        let m0 = vec![raw(Op::FutexWait, W, 2), raw(Op::Done, 0, 4)];
        let m1 = vec![raw(Op::FutexWake, W, 4)];
        let l = find_plain(vec![m0, m1], &[vec![11, 11], vec![21]], &[a0, a1]);
        assert_eq!((l.words, l.rejected), (0, 1));
        assert_eq!(l.raw_index, vec![vec![0, 1], vec![0]]);
    }

    /// A failed attempt long before the acquisition (a `try_lock` that gave up, then other
    /// work) is not part of it and stays in the stream.
    #[test]
    fn a_failed_attempt_far_before_the_acquisition_is_kept() {
        const W: u64 = 0x100;
        let a0 = vec![atomic(10, 1, W, 1, 1), atomic(20_000, 2, W, 0, 4)];
        let a1 = vec![atomic(100, 1, W, 1, 2), atomic(50_000, 1, W, 1, 6)];
        let m0 = vec![raw(Op::FutexWake, W, 5)];
        let l = find_plain(vec![m0, vec![]], &[vec![21_000], vec![]], &[a0, a1]);
        assert_eq!((l.words, l.acquisitions, l.contended), (1, 2, 0));
        assert_eq!(l.edits[1][0].start, 50_000);
    }

    /// A load that read another thread's store waits for it even when the store's sequence
    /// number came after the load's (their callbacks raced): the synthetic wait's result is
    /// numbered after the wake, so that `sync.rs` pairs them.
    #[test]
    fn a_dependence_on_a_store_numbered_after_its_load_is_paired() {
        use super::spinwait::{Change, Store};
        const A: u64 = 0x500;
        let change = Change::clean_spin(A, 11, 50, 1, 9, 5);
        let store = Store {
            at: 70,
            addr: A,
            value: 1,
            seq: 12,
            arrival: false,
        };
        let l = find(
            vec![vec![], vec![]],
            &[vec![], vec![]],
            &[vec![], vec![]],
            &[],
            &[vec![change], vec![]],
            &[],
            &[vec![], vec![store]],
            swap,
            |_| false,
            |_| 0,
            no_loads,
        );
        assert_eq!((l.spin_waits, l.spin_instructions), (1, 39));
        let w: Vec<(Op, u64)> = l.marks[0].iter().map(|m| (m.op, m.seq)).collect();
        assert_eq!(w, vec![(Op::FutexWait, 11), (Op::Done, 13)]);
        assert_eq!(l.edits[0][0].start, 11);
        assert_eq!(l.edits[0][0].end, 50);
        let u: Vec<(Op, u64, u64)> = l.marks[1]
            .iter()
            .map(|m| (m.op, m.args[0], m.seq))
            .collect();
        assert_eq!(u, vec![(Op::FutexWake, COUNTDOWN, 12)]);
        assert_eq!((l.edits[1][0].start, l.edits[1][0].end), (71, 71));
    }

    /// A test-and-set lock: exchanges that all leave 1, freed by the holders' plain stores
    /// (`taslock.rs` added them, numbered as the next acquisition). Its history reads as a
    /// lock's, the tries made while it was held before the release; a waiter's tries far
    /// apart are one attempt when its spin on the word fills the gap.
    #[test]
    fn a_test_and_set_lock_freed_by_plain_stores_is_a_lock_and_its_spin_one_attempt() {
        const W: u64 = 0x100;
        let xchg = |at, seq| atomic(at, 1, W, 1, seq);
        let release = |at, seq| Atomic {
            plain: true,
            frame: NO_FRAME,
            ..atomic(at, 5, W, 0, seq)
        };
        // Thread 0 takes it (seq 1), holds it long; thread 1 tries at 5 and 9,000 (seqs 2,
        // 3), both while it is held; thread 0's release is numbered 4, thread 1's take.
        let a0 = vec![xchg(10, 1), release(10_000, 4)];
        let a1 = vec![
            xchg(5, 2),
            xchg(9_000, 3),
            xchg(10_100, 4),
            release(10_200, 5),
        ];
        let spin = Change::clean_spin(W, 8, 8_997, 0, 3, 2);
        let run_with = |changes: &[Vec<Change>], blind: &[Vec<Change>]| {
            find(
                vec![vec![], vec![]],
                &[vec![], vec![]],
                &[a0.clone(), a1.clone()],
                &[],
                changes,
                blind,
                &[],
                swap,
                |_| false,
                |_| 0,
                no_loads,
            )
        };
        let run = |changes: &[Vec<Change>]| run_with(changes, &[]);
        let l = run(&[vec![], vec![spin]]);
        assert_eq!((l.words, l.acquisitions, l.contended), (1, 2, 1));
        // Both threads' acquisitions spin (a test-and-set lock spins until it gets the word).
        assert_eq!(lock_spins(&l), vec![1, 1]);
        // Thread 1's attempt runs from its first try to its take, its release is one store.
        let spans: Vec<(u64, u64)> = l.edits[1].iter().map(|e| (e.start, e.end)).collect();
        assert_eq!(spans, vec![(5, 10_101), (10_200, 10_201)]);
        assert_eq!((l.edits[0][1].start, l.edits[0][1].end), (10_000, 10_001));
        // A spin whose end the plugin did not see (`spinwait::Detector::blind`) chains them
        // the same way.
        let blind = run_with(&[vec![], vec![]], &[vec![], vec![spin]]);
        assert_eq!(blind.edits, l.edits);
        assert_eq!(blind.marks, l.marks);
        // Without the spin between them, tries 9,000 instructions apart are not one attempt.
        let l = run(&[vec![], vec![]]);
        assert_eq!(l.edits[1][0].start, 9_000);
    }

    /// Test and test-and-set: a thread spins on the word before its first try; the spin is
    /// part of its attempt, left out with it.
    #[test]
    fn a_spin_on_a_test_and_set_lock_before_its_first_try_is_part_of_the_attempt() {
        const W: u64 = 0x100;
        let release = |at, seq| Atomic {
            plain: true,
            frame: NO_FRAME,
            ..atomic(at, 5, W, 0, seq)
        };
        let a0 = vec![atomic(10, 1, W, 1, 1), release(900, 2)];
        let a1 = vec![atomic(1_000, 1, W, 1, 2), release(1_100, 3)];
        let spin = Change::clean_spin(W, 6, 997, 0, 2, 1);
        let l = find(
            vec![vec![], vec![]],
            &[vec![], vec![]],
            &[a0, a1],
            &[],
            &[vec![], vec![spin]],
            &[],
            &[],
            swap,
            |_| false,
            |_| 0,
            no_loads,
        );
        assert_eq!((l.words, l.acquisitions), (1, 2));
        assert_eq!((l.edits[1][0].start, l.edits[1][0].end), (6, 1_001));
        // Thread 0 looked at the word once, with no spin: its attempt is its try.
        assert_eq!((l.edits[0][0].start, l.edits[0][0].end), (10, 11));
    }

    /// Rust's futex read/write lock: a reader count in the state word, the writer's value
    /// [`RW_MASK`], waiting flags above; writers wait on a word of their own beside it. Two
    /// readers hold it together, a writer alone; the flags a waiter sets are part of its
    /// attempt, those a releaser clears part of its release; every futex call of both words
    /// goes, the markers taking their place.
    #[test]
    fn a_rust_read_write_lock_becomes_read_and_write_markers() {
        const W: u64 = 0x100;
        const N: u64 = 0x104; // writer_notify
        const WW: u64 = 1 << 31; // writers waiting
        let rw = |at, raw, value, seq| atomic(at, raw, W, value, seq);
        // Thread 0 reads (1), thread 1 reads too (2); thread 2 tries to write (fails: 2),
        // sets the writers' flag and waits on the notify word; both readers release, the
        // last one clears the flag, bumps and wakes the notify word; thread 2 takes it
        // (MASK), releases it.
        let a0 = vec![rw(10, 1, 1, 1), rw(100, 2, WW | 1, 6)];
        let a1 = vec![
            rw(20, 1, 2, 2),
            rw(200, 2, WW, 7),
            rw(210, 3, 0, 8),
            atomic(220, 4, N, 1, 9),
        ];
        let a2 = vec![
            rw(30, 5, 2, 3),
            rw(40, 6, WW | 2, 4),
            rw(300, 5, RW_MASK, 11),
            rw(400, 7, 0, 12),
        ];
        let m1 = vec![raw(Op::FutexWake, N, 10)];
        let m2 = vec![raw(Op::FutexWait, N, 5), raw(Op::Done, 0, 10)];
        let mark_at = vec![vec![], vec![230], vec![50, 290]];
        let l = find_plain(vec![vec![], m1, m2], &mark_at, &[a0, a1, a2]);
        assert_eq!((l.words, l.read_write, l.acquisitions), (1, 1, 3));
        assert_eq!(l.rejected, 0, "the notify word is the lock's");
        let ops = |t: usize| -> Vec<Op> { l.marks[t].iter().map(|m| m.op).collect() };
        assert_eq!(
            ops(0),
            vec![Op::RwRead, Op::Done, Op::MutexUnlock, Op::Done]
        );
        // Thread 1's release takes its wake path with it: the flag, the bump, the wake.
        assert_eq!(
            ops(1),
            vec![Op::RwRead, Op::Done, Op::MutexUnlock, Op::Done]
        );
        assert_eq!((l.edits[1][1].start, l.edits[1][1].end), (200, 230));
        // Thread 2's attempt runs from its first try, across its wait, to its take.
        assert_eq!(
            ops(2),
            vec![Op::RwWrite, Op::Done, Op::MutexUnlock, Op::Done]
        );
        assert_eq!((l.edits[2][0].start, l.edits[2][0].end), (30, 301));
    }

    /// A binary semaphore used as a lock (libstdc++'s: a compare-and-swap takes the unit
    /// inside a call of its own, a `lock xadd` gives it back and the futex is woken): thread 0
    /// takes it at once; thread 1 finds it taken, sleeps on the futex, and takes it after
    /// thread 0's release. Both takes become semaphore waits replacing the whole call, both
    /// releases posts with their wakes, and the futex calls go.
    #[test]
    fn a_semaphore_on_a_futex_word_becomes_semaphore_markers() {
        const S: u64 = 0x100;
        let take = |at, frame, value, seq| Atomic {
            frame,
            ..atomic(at, 1, S, value, seq)
        };
        let give = |at, value, seq| atomic(at, 8, S, value, seq);
        let atomics = [
            vec![take(10, 5, 0, 1), give(40, 1, 4)],
            vec![take(60, 15, 0, 7), give(90, 1, 8)],
        ];
        let marks = vec![
            vec![raw(Op::FutexWake, S, 5)],
            vec![
                raw(Op::FutexWait, S, 2),
                raw(Op::Done, 0, 6),
                raw(Op::FutexWake, S, 9),
            ],
        ];
        let mark_at = vec![vec![45], vec![20, 20, 95]];
        let l = find_plain(marks.clone(), &mark_at, &atomics);
        assert_eq!((l.words, l.semaphores), (0, 1));
        assert_eq!((l.semaphore_takes, l.semaphore_gives), (2, 2));
        assert_eq!(l.rejected, 0);
        for t in 0..2 {
            let ops: Vec<Op> = l.marks[t].iter().map(|m| m.op).collect();
            assert_eq!(ops, vec![Op::SemWait, Op::Done, Op::SemPost, Op::Done]);
            assert_eq!(l.marks[t][0].args[..2], [S, 1], "the initial count");
        }
        let spans = |t: usize| -> Vec<(u64, u64, bool)> {
            l.edits[t]
                .iter()
                .map(|e| (e.start, e.end, e.unwind))
                .collect()
        };
        assert_eq!(spans(0), vec![(5, 11, true), (40, 45, true)]);
        // Thread 1's take runs from its call, across its futex wait, to its compare-and-swap.
        assert_eq!(spans(1), vec![(15, 61, true), (90, 95, true)]);
        // A call entered long before the attempt's first sign is not the take's.
        let late = 15 + TAKE_ENTRY + 1;
        let mark_at = vec![vec![45], vec![late, late, 95]];
        let l = find_plain(marks, &mark_at, &atomics);
        assert_eq!((l.edits[1][0].start, l.edits[1][0].end), (late, 61));
    }

    /// A semaphore's release that found the count at 0 wakes the futex, one that did not
    /// branches past the wake: both lose the test of the count with the release (the code
    /// reader says 2 instructions, a `test` and a `jg`), so that a thread replays the same
    /// instructions however often the traced run found the count at 0. Thread 0 takes the
    /// unit, gives it back from 0 (and wakes), gives another from 1 (no wake); thread 1 takes
    /// both.
    #[test]
    fn a_semaphore_release_loses_its_test_whether_or_not_it_wakes() {
        const S: u64 = 0x100;
        let take = |at, value, seq| Atomic {
            frame: at - 2,
            ..atomic(at, 1, S, value, seq)
        };
        let give = |at, value, seq| atomic(at, 8, S, value, seq);
        let atomics = [
            vec![take(10, 0, 1), give(40, 1, 2), give(70, 2, 4)],
            vec![take(100, 1, 5), take(130, 0, 6)],
        ];
        let marks = vec![vec![raw(Op::FutexWake, S, 3)], vec![]];
        let mark_at = vec![vec![45], vec![]];
        let ends = |tested: u64| {
            let l = find(
                marks.clone(),
                &mark_at,
                &atomics,
                &[],
                &[],
                &[],
                &[],
                swap,
                |_| false,
                |_| tested,
                no_loads,
            );
            assert_eq!((l.semaphore_takes, l.semaphore_gives), (3, 2));
            l.edits[0]
                .iter()
                .map(|e| (e.start, e.end))
                .collect::<Vec<_>>()
        };
        assert_eq!(ends(2), vec![(8, 11), (40, 45), (70, 73)]);
        // Code the reader cannot read: the release alone.
        assert_eq!(ends(0), vec![(8, 11), (40, 45), (70, 71)]);
    }

    #[test]
    fn a_reader_count_that_is_never_taken_for_writing_is_no_read_write_lock() {
        // 0 -> 1 -> 0 by two threads: a counter (or a mutex), never the writer's value.
        let a0 = vec![atomic(10, 1, 0x100, 1, 1), atomic(20, 2, 0x100, 0, 2)];
        let a1 = vec![atomic(10, 1, 0x100, 1, 3), atomic(20, 2, 0x100, 0, 4)];
        let events = vec![(1, 0, 0), (2, 0, 1), (3, 1, 0), (4, 1, 1)];
        assert!(rw_roles(&events, &[a0.clone(), a1.clone()]).is_none());
        // A reader releasing a hold it does not have is no read/write lock either.
        let mut a1 = a1;
        a1[0].value = RW_MASK;
        a1[1].value = 0;
        let events = vec![(1, 0, 0), (2, 1, 1), (3, 1, 0)];
        assert!(rw_roles(&events, &[a0, a1]).is_none());
    }

    /// A one-byte lock freed by an exchange of 0 (a `std::atomic<bool>` lock's sequentially
    /// consistent `store(false)`): no futex waits on a byte, so it is a spin lock; its tries
    /// far apart are one attempt when the thread's spin fills the gap.
    #[test]
    fn a_byte_lock_freed_by_an_exchange_is_a_spin_lock() {
        const W: u64 = 0x100;
        let byte = |at, raw, value, seq| Atomic {
            size: 1,
            ..atomic(at, raw, W, value, seq)
        };
        let a0 = vec![byte(10, 1, 1, 1), byte(10_000, 2, 0, 4)];
        let a1 = vec![
            byte(5, 1, 1, 2),
            byte(9_000, 1, 1, 3),
            byte(10_100, 1, 1, 5),
            byte(10_200, 2, 0, 6),
        ];
        let spin = Change::clean_spin(W, 8, 8_997, 0, 3, 2);
        let l = find(
            vec![vec![], vec![]],
            &[vec![], vec![]],
            &[a0.clone(), a1.clone()],
            &[],
            &[vec![], vec![spin]],
            &[],
            &[],
            swap,
            |_| false,
            |_| 0,
            no_loads,
        );
        assert_eq!((l.words, l.acquisitions, l.contended), (1, 2, 1));
        assert_eq!(lock_spins(&l), vec![1, 1]);
        assert_eq!((l.edits[1][0].start, l.edits[1][0].end), (5, 10_101));
        // The same history on a 32-bit word is a futex mutex's that never blocked: its tries
        // 9,000 instructions apart are not one attempt (its waiters could have slept).
        let four = |a: Vec<Atomic>| -> Vec<Atomic> {
            a.into_iter().map(|x| Atomic { size: 4, ..x }).collect()
        };
        let l = find(
            vec![vec![], vec![]],
            &[vec![], vec![]],
            &[four(a0), four(a1)],
            &[],
            &[vec![], vec![spin]],
            &[],
            &[],
            swap,
            |_| false,
            |_| 0,
            no_loads,
        );
        assert_eq!(l.words, 1);
        assert_eq!(l.edits[1][0].start, 9_000);
    }
}
