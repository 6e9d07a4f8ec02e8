//! The raw capture protocol between the pieces of `isim trace` (a crate of its own, without
//! dependencies, so that the two shared libraries build in seconds): the magic system calls by which
//! the interposition library and `include/isim.h` talk to the QEMU plugin, and the files the
//! plugin writes for `sim_frontend::tracer::convert` to turn into a trace v1.
//!
//! **Magic system calls.** Guest code cannot call into the plugin, and plugin API v1 cannot read
//! guest registers or memory, but it sees every system call with its number and arguments. A
//! magic call is `syscall` with number `SYS_BASE + op` and its arguments in the usual registers;
//! QEMU answers `-ENOSYS` (a real kernel does too, so marked programs run unchanged natively).
//!
//! **Files** in the capture directory:
//! * `static.bin`: one entry per distinct instruction address, appended as blocks are
//!   translated: `u64 vaddr, u8 len, len bytes of code`. An entry's position is its raw index.
//! * `t<N>.raw`: thread `N`'s events, little-endian `u32` words (see [`Word`]).
//! * `modules.tsv`: the objects the guest had loaded when `main` started, written by the
//!   interposition library: `load_bias<TAB>start<TAB>end<TAB>path` per executable segment.
//! * `threads.tsv`: written by the plugin at exit: `N<TAB>state` per thread it saw.

/// First magic system call number (far above Linux's, which end below 1,000).
pub const SYS_BASE: i64 = 0x1515_0000;

/// The operations of the magic system calls. The numbers are part of `include/isim.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    /// `main` is about to run (interposition library). Starts recording the main thread.
    MainBegin = 0,
    /// `main` returned (interposition library). Stops recording.
    MainEnd = 1,
    /// A created thread starts (`a1` = its sequence number).
    ThreadStart = 2,
    /// The calling thread ends.
    ThreadEnd = 3,
    /// Create thread `a1` (sequence number); untraced until [`Op::Resume`].
    Create = 4,
    /// Join thread `a1`; untraced until [`Op::Resume`].
    Join = 5,
    /// Barrier wait at `a1` with `a2` participants; untraced until [`Op::Resume`].
    Barrier = 6,
    /// Mutex lock at `a1`; untraced until [`Op::Resume`].
    MutexLock = 7,
    /// Mutex unlock at `a1`; untraced until [`Op::Resume`].
    MutexUnlock = 8,
    /// Condition wait on `a1` with mutex `a2`; untraced until [`Op::Resume`].
    CondWait = 9,
    /// Condition signal on `a1`; untraced until [`Op::Resume`].
    CondSignal = 10,
    /// Condition broadcast on `a1`; untraced until [`Op::Resume`].
    CondBroadcast = 11,
    /// `ISIM_ROI_BEGIN()`.
    RoiBegin = 12,
    /// `ISIM_ROI_END()`.
    RoiEnd = 13,
    /// `ISIM_SECTION_BEGIN(name)`: `a1..a6` hold up to 48 bytes of the name.
    SectionBegin = 14,
    /// `ISIM_SECTION_END(name)`.
    SectionEnd = 15,
    /// End of an untraced interval (after the real pthread call returned).
    Resume = 16,
    /// Start of an untraced interval without a marker.
    Suppress = 17,
    /// A fatal signal arrived (the interposition library's handler): write out what the
    /// calling thread recorded, since the process dies without running exit handlers.
    Crash = 18,
    /// The blocking call named by the thread's previous marker returned (its sequence number
    /// is when: a mutex acquired, a condition wait woken with its mutex re-held, a barrier or
    /// join passed). `a1` = the call's return value.
    Done = 19,
    /// A `futex` wait system call made by traced code on address `a1` (the plugin's own
    /// marker; its [`Op::Done`] carries the result: 0 woken, negative errno otherwise).
    FutexWait = 20,
    /// A `futex` wake system call made by traced code on address `a1`, waking at most `a2`
    /// threads.
    FutexWake = 21,
    /// An OpenMP team thread starts the body of parallel region `a1` as thread `a2` of a team
    /// of `a3` (the interposer's wrapper around the outlined function).
    OmpBegin = 22,
    /// The thread finished the body of region `a1` (team of `a2`): it arrives at the region's
    /// implicit barrier.
    OmpEnd = 23,
    /// An OpenMP barrier of region `a1` (team of `a2`): explicit, or the end of a worksharing
    /// construct without `nowait`.
    OmpBarrier = 24,
}

impl Op {
    /// Every operation, indexed by its number.
    pub const ALL: [Op; 25] = [
        Op::MainBegin,
        Op::MainEnd,
        Op::ThreadStart,
        Op::ThreadEnd,
        Op::Create,
        Op::Join,
        Op::Barrier,
        Op::MutexLock,
        Op::MutexUnlock,
        Op::CondWait,
        Op::CondSignal,
        Op::CondBroadcast,
        Op::RoiBegin,
        Op::RoiEnd,
        Op::SectionBegin,
        Op::SectionEnd,
        Op::Resume,
        Op::Suppress,
        Op::Crash,
        Op::Done,
        Op::FutexWait,
        Op::FutexWake,
        Op::OmpBegin,
        Op::OmpEnd,
        Op::OmpBarrier,
    ];

    /// The operation of a system call number, if it is a magic one.
    pub fn from_syscall(num: i64) -> Option<Op> {
        let k = num.checked_sub(SYS_BASE)?;
        Op::ALL.get(usize::try_from(k).ok()?).copied()
    }

    /// How many `u64` arguments the raw stream records after this marker.
    pub fn nargs(self) -> usize {
        match self {
            Op::ThreadStart | Op::Create | Op::Join => 1,
            Op::MutexLock | Op::MutexUnlock | Op::CondSignal | Op::CondBroadcast => 1,
            Op::Barrier | Op::CondWait | Op::OmpEnd | Op::OmpBarrier => 2,
            Op::Done | Op::FutexWait => 1,
            Op::FutexWake => 2,
            Op::OmpBegin => 3,
            Op::SectionBegin | Op::SectionEnd => 6,
            _ => 0,
        }
    }

    /// True if the plugin stops recording the thread after this marker (the real pthread
    /// call that follows is replayed by the simulator, not traced).
    pub fn suppresses(self) -> bool {
        matches!(
            self,
            Op::Create
                | Op::Join
                | Op::Barrier
                | Op::MutexLock
                | Op::MutexUnlock
                | Op::CondWait
                | Op::CondSignal
                | Op::CondBroadcast
                | Op::Suppress
                | Op::OmpEnd
                | Op::OmpBarrier
        )
    }
}

/// The tag of a raw word (its low two bits).
pub mod word {
    /// `raw index << 2`: an instruction executes.
    pub const EXEC: u32 = 0;
    /// `size_shift << 2 | store << 5 | 1`, then the address as two words (low, high).
    pub const MEM: u32 = 1;
    /// `op << 2 | 2`, then [`super::Op::nargs`] arguments, two words each, then the marker's
    /// sequence number (two words).
    pub const MARK: u32 = 2;
}

/// One decoded raw event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// An instruction (raw static index) executes.
    Exec(u32),
    /// A memory access of the preceding instruction.
    Mem {
        /// Guest virtual address.
        addr: u64,
        /// Size in bytes.
        size: u8,
        /// True for a store.
        store: bool,
    },
    /// A magic system call; its arguments are in [`RawReader::args`] until the next one, and
    /// its sequence number in [`RawReader::seq`]: the plugin numbers the markers of all threads
    /// from one atomic counter at the moment each is recorded, so if one marker's event
    /// happened before another's in the traced run, its number is smaller. The converter
    /// derives replay's happens-before edges from these numbers.
    Mark(Op),
}

/// Decodes the words of a raw file held in memory (see [`RawReader`]), with each marker's
/// arguments.
pub fn decode(bytes: &[u8], mut f: impl FnMut(Word, [u64; 6])) -> Result<(), String> {
    let mut r = RawReader::new(bytes);
    while let Some(w) = r.next_word() {
        f(w, r.args);
    }
    r.error.map_or(Ok(()), Err)
}

/// Streams the words of a raw file from any reader, in 4 MiB reads. A cut final event (the
/// process was killed while writing) ends the stream.
pub struct RawReader<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// Words consumed so far (for error messages).
    pub word: u64,
    /// Arguments of the last marker read.
    pub args: [u64; 6],
    /// Sequence number of the last marker read (see [`Word::Mark`]).
    pub seq: u64,
    /// Why the stream stopped early, if it did (an I/O error or a word no writer makes).
    pub error: Option<String>,
}

impl<R: std::io::Read> RawReader<R> {
    /// A reader over `inner`.
    pub fn new(inner: R) -> Self {
        RawReader {
            inner,
            buf: vec![0; 4 << 20],
            pos: 0,
            len: 0,
            eof: false,
            word: 0,
            args: [0; 6],
            seq: 0,
            error: None,
        }
    }

    fn refill(&mut self, n: usize) -> std::io::Result<bool> {
        self.buf.copy_within(self.pos..self.len, 0);
        self.len -= self.pos;
        self.pos = 0;
        while !self.eof && self.len < n {
            let k = self.inner.read(&mut self.buf[self.len..])?;
            if k == 0 {
                self.eof = true;
            }
            self.len += k;
        }
        Ok(self.len >= n)
    }

    #[inline(always)]
    fn u32_at(&self, i: usize) -> u32 {
        u32::from_le_bytes(self.buf[i..i + 4].try_into().unwrap())
    }

    #[inline(always)]
    fn u64_at(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.buf[i..i + 8].try_into().unwrap())
    }

    /// Makes at least `n` bytes available at `pos` unless the input ends first (or fails: then
    /// in [`RawReader::error`]).
    #[inline(always)]
    fn have(&mut self, n: usize) -> bool {
        self.len - self.pos >= n || self.have_slow(n)
    }

    #[cold]
    #[inline(never)]
    fn have_slow(&mut self, n: usize) -> bool {
        match self.refill(n) {
            Ok(b) => b,
            Err(e) => {
                self.error = Some(e.to_string());
                false
            }
        }
    }

    /// The next event; `None` at the end, at a cut final event, or at an error (then in
    /// [`RawReader::error`]).
    #[inline(always)]
    pub fn next_word(&mut self) -> Option<Word> {
        if !self.have(4) {
            return None;
        }
        let x = self.u32_at(self.pos);
        match x & 3 {
            word::EXEC => {
                self.pos += 4;
                self.word += 1;
                Some(Word::Exec(x >> 2))
            }
            word::MEM => {
                if !self.have(12) {
                    return None;
                }
                let addr = self.u64_at(self.pos + 4);
                self.pos += 12;
                self.word += 3;
                Some(Word::Mem {
                    addr,
                    size: 1u8 << ((x >> 2) & 7).min(7),
                    store: (x >> 5) & 1 == 1,
                })
            }
            _ => self.mark(x),
        }
    }

    #[cold]
    fn mark(&mut self, x: u32) -> Option<Word> {
        let at = self.word;
        let op = (x & 3 == word::MARK)
            .then(|| Op::ALL.get((x >> 2) as usize).copied())
            .flatten();
        let Some(op) = op else {
            self.error = Some(format!("bad word {x:#x} at word {at}"));
            return None;
        };
        let k = op.nargs();
        if !self.have(12 + 8 * k) {
            return None;
        }
        self.args = [0; 6];
        for j in 0..k {
            self.args[j] = self.u64_at(self.pos + 4 + 8 * j);
        }
        self.seq = self.u64_at(self.pos + 4 + 8 * k);
        self.pos += 12 + 8 * k;
        self.word += 3 + 2 * k as u64;
        Some(Word::Mark(op))
    }
}

/// Packs a section name (up to 48 bytes; longer names are cut) into six arguments.
pub fn pack_name(name: &[u8]) -> [u64; 6] {
    let mut a = [0u64; 6];
    for (i, &b) in name.iter().take(48).enumerate() {
        a[i / 8] |= (b as u64) << (8 * (i % 8));
    }
    a
}

/// Unpacks a section name packed by [`pack_name`] (or by `include/isim.h`).
pub fn unpack_name(a: &[u64; 6]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_long_names_are_cut_at_48_bytes() {
        assert_eq!(unpack_name(&pack_name(b"solve")), "solve");
        let long = "x".repeat(60);
        assert_eq!(unpack_name(&pack_name(long.as_bytes())).len(), 48);
    }

    #[test]
    fn raw_words_decode_and_a_cut_tail_ends_the_stream() {
        let mut b = Vec::new();
        let mut put = |x: u32| b.extend_from_slice(&x.to_le_bytes());
        put(7 << 2);
        put(3 << 2 | 1 << 5 | word::MEM);
        put(0x1000);
        put(0x1);
        put((Op::Barrier as u32) << 2 | word::MARK);
        for v in [0x20u32, 0, 4, 0, 77, 0] {
            put(v);
        }
        put(9 << 2);
        let mut got = Vec::new();
        decode(&b, |w, a| got.push((w, a))).unwrap();
        let none = [0; 6];
        let bar = [0x20, 4, 0, 0, 0, 0];
        let mem = Word::Mem {
            addr: 0x1_0000_1000,
            size: 8,
            store: true,
        };
        // A marker's arguments stay readable until the next marker.
        assert_eq!(
            got,
            vec![
                (Word::Exec(7), none),
                (mem, none),
                (Word::Mark(Op::Barrier), bar),
                (Word::Exec(9), bar),
            ]
        );
        // Cut inside the barrier's arguments: the events before it survive.
        let mut got = Vec::new();
        decode(&b[..b.len() - 12], |w, _| got.push(w)).unwrap();
        assert_eq!(got.len(), 2);
        // The sequence number is read with the marker.
        let mut r = RawReader::new(&b[..]);
        while let Some(w) = r.next_word() {
            if w == Word::Mark(Op::Barrier) {
                assert_eq!(r.seq, 77);
            }
        }
        let mut got = Vec::new();
        decode(&b[..b.len() - 20], |w, _| got.push(w)).unwrap();
        assert_eq!(got.len(), 2);
        assert!(decode(&[3, 0, 0, 0], |_, _| {}).is_err());
        assert_eq!(Op::from_syscall(SYS_BASE + 6), Some(Op::Barrier));
        assert_eq!(Op::from_syscall(60), None);
    }
}
