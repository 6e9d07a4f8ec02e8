//! Hardware prefetchers at the L1D and the L2: which lines to fetch ahead of the demand
//! stream. This file decides only the candidates; `hierarchy.rs` issues them as loads that
//! fill the cache (and the levels beyond it) and take bus and DRAM bandwidth like a miss,
//! and counts their usefulness.
//!
//! Both kinds are *tagged*: they train on every demand access that reaches their level and
//! issue when the demand misses there or makes the first use of a line a prefetch brought
//! (so a stream that the prefetcher keeps ahead of still advances it).
//! * `next-line`: the `degree` lines after the demanded one.
//! * `stride`: a table of 64 entries indexed by the instruction's PC remembers the last
//!   address and stride of that instruction; after the same non-zero stride twice in a row
//!   it prefetches up to `degree` strides ahead — or, for strides shorter than a line, the
//!   next `degree` lines in the stride's direction (a stream) — remembering how far it has
//!   gone, so that each trigger asks only for what lies beyond. Its distance ramps up over the
//!   first four triggers of a stride (a quarter of `degree`, a half, three quarters, all), and
//!   it never crosses the demand's 4 KiB page.

isim_names::indexed_enum! {
    /// Which prefetcher a level has (`prefetcher` in `[cache.l1d]` and `[cache.l2]`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum PrefetchKind {
        /// No prefetching.
        None = "none",
        /// The next `degree` lines on a miss or on the first use of a prefetched line.
        NextLine = "next-line",
        /// Per-instruction stride detection (a stream when the stride is under a line).
        Stride = "stride",
    }
}
isim_names::serde_by_name!(PrefetchKind);

impl Default for PrefetchKind {
    /// No prefetching.
    fn default() -> Self {
        PrefetchKind::None
    }
}

/// A level's prefetcher: its kind and how many lines it fetches per trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrefetchParams {
    /// The prefetcher.
    pub kind: PrefetchKind,
    /// Lines (or strides) fetched ahead per trigger, 1..=32.
    pub degree: u32,
}

const ENTRIES: usize = 64;

/// Prefetches stay within the demand's 4 KiB page.
const PAGE_SHIFT: u32 = 12;

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    pc: u64,
    last: u64,
    stride: i64,
    confidence: u8,
    /// The farthest position already prefetched for this stride (a line number for a
    /// stream, an address otherwise), so a trigger asks only for what lies beyond it.
    ahead: Option<i64>,
    /// Triggers so far with this stride (up to 4), for the ramp-up.
    run: u8,
}

/// One prefetcher instance (per core and level).
#[derive(Debug, Clone)]
pub struct Prefetcher {
    p: PrefetchParams,
    table: Vec<Entry>,
}

impl Prefetcher {
    /// A prefetcher with parameters `p` (its table empty).
    pub fn new(p: PrefetchParams) -> Prefetcher {
        Prefetcher {
            p,
            table: if p.kind == PrefetchKind::Stride {
                vec![Entry::default(); ENTRIES]
            } else {
                Vec::new()
            },
        }
    }

    /// Whether it ever prefetches.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.p.kind != PrefetchKind::None && self.p.degree > 0
    }

    /// [`Prefetcher::train`] for an access that does not trigger, which asks for nothing:
    /// only the stride table learns. Inlined into the L1-hit paths.
    #[inline]
    pub fn learn(&mut self, pc: u64, addr: u64) {
        if self.p.kind == PrefetchKind::Stride {
            let i = slot_of(pc);
            observe(&mut self.table[i], pc, addr);
        }
    }

    /// Trains on a demand access by `pc` to byte address `addr` (line `addr >> line_shift`)
    /// and, if `trigger` (the demand missed here or first used a prefetched line), writes the
    /// lines to prefetch into `out` (cleared first; at most `degree`, never the demanded
    /// line).
    pub fn train(
        &mut self,
        pc: u64,
        addr: u64,
        line_shift: u32,
        trigger: bool,
        out: &mut Vec<u64>,
    ) {
        out.clear();
        self.decide(pc, addr, line_shift, trigger, |line| out.push(line));
    }

    /// [`Prefetcher::train`], handing each line to `emit` instead of a list.
    #[inline]
    pub fn decide(
        &mut self,
        pc: u64,
        addr: u64,
        line_shift: u32,
        trigger: bool,
        emit: impl FnMut(u64),
    ) {
        match self.p.kind {
            PrefetchKind::None => {}
            PrefetchKind::NextLine => next_lines(self.p, addr >> line_shift, trigger, emit),
            PrefetchKind::Stride => {
                let i = slot_of(pc);
                stride(
                    self.p,
                    &mut self.table[i],
                    pc,
                    addr,
                    line_shift,
                    trigger,
                    emit,
                );
            }
        }
    }

    /// The lines a triggered [`Prefetcher::decide`] would ask for now, changing nothing.
    #[inline]
    pub fn peek(&self, pc: u64, addr: u64, line_shift: u32, emit: impl FnMut(u64)) {
        match self.p.kind {
            PrefetchKind::None => {}
            PrefetchKind::NextLine => next_lines(self.p, addr >> line_shift, true, emit),
            PrefetchKind::Stride => {
                // The same decision on a copy of the only entry it would change.
                let mut e = self.table[slot_of(pc)];
                stride(self.p, &mut e, pc, addr, line_shift, true, emit);
            }
        }
    }
}

/// The stride table's entry for `pc`.
#[inline]
fn slot_of(pc: u64) -> usize {
    (pc as usize ^ (pc >> 6) as usize) % ENTRIES
}

/// The next-line prefetcher's decision: the `degree` lines after `line` if `trigger`.
#[inline]
fn next_lines(p: PrefetchParams, line: u64, trigger: bool, mut emit: impl FnMut(u64)) {
    if trigger {
        (1..=p.degree as u64).for_each(|k| emit(line.wrapping_add(k)));
    }
}

/// Entry `e` (the table's slot of `pc`) learns an access by `pc` to `addr`: true if `pc`
/// owned it already and moved by a non-zero stride (then in `stride`), which is when a
/// trigger may prefetch.
#[inline]
fn observe(e: &mut Entry, pc: u64, addr: u64) -> bool {
    if e.pc != pc {
        *e = Entry {
            pc,
            last: addr,
            stride: 0,
            confidence: 0,
            ahead: None,
            run: 0,
        };
        return false;
    }
    let d = addr.wrapping_sub(e.last) as i64;
    e.last = addr;
    if d == 0 {
        return false;
    }
    if d == e.stride {
        e.confidence = (e.confidence + 1).min(3);
    } else {
        e.stride = d;
        e.confidence = 0;
        e.ahead = None;
        e.run = 0;
    }
    true
}

/// The stride prefetcher's decision for an access by `pc` to `addr`, made on `pc`'s entry
/// `e`: it learns the access and, if `trigger`, hands the lines to fetch to `emit`.
#[inline]
fn stride(
    p: PrefetchParams,
    e: &mut Entry,
    pc: u64,
    addr: u64,
    line_shift: u32,
    trigger: bool,
    mut emit: impl FnMut(u64),
) {
    if !observe(e, pc, addr) {
        return;
    }
    let d = e.stride;
    if !trigger || e.confidence < 1 {
        return;
    }
    let line = addr >> line_shift;
    // Positions in units of the stride: lines for a stream (a stride under a line), bytes
    // otherwise; only those beyond what was already prefetched.
    let stream = d.abs() < 1i64 << line_shift;
    let (cur, unit) = if stream {
        (line as i64, d.signum())
    } else {
        (addr as i64, d)
    };
    // Ramp up: a quarter of the degree at the first trigger of a stride, then a half, three
    // quarters and the whole, as streamers grow their distance while a stream lasts (a short
    // run, like one row of a small matrix, is not overshot by the full degree).
    e.run = (e.run + 1).min(4);
    let degree = (p.degree as i64 * e.run as i64 / 4).max(1);
    let first = match e.ahead {
        Some(a) => {
            let done = a.wrapping_sub(cur) / unit;
            if (0..degree).contains(&done) {
                done + 1
            } else if done >= degree {
                return;
            } else {
                1
            }
        }
        None => 1,
    };
    // Never across the 4 KiB page of the demand (hardware prefetchers see physical addresses,
    // and the next virtual page may be anywhere).
    let page = (addr >> PAGE_SHIFT) as i64;
    let mut last = first - 1;
    for k in first..=degree {
        let pos = cur.wrapping_add(unit.wrapping_mul(k)) as u64;
        let target = if stream { pos } else { pos >> line_shift };
        if ((target << line_shift) >> PAGE_SHIFT) as i64 != page {
            break;
        }
        emit(target);
        last = k;
    }
    e.ahead = Some(cur.wrapping_add(unit.wrapping_mul(last)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pf(kind: PrefetchKind, degree: u32) -> Prefetcher {
        Prefetcher::new(PrefetchParams { kind, degree })
    }

    #[test]
    fn next_line_fetches_the_following_lines_only_when_triggered() {
        let mut p = pf(PrefetchKind::NextLine, 3);
        let mut out = Vec::new();
        p.train(0x40, 0x1000, 6, false, &mut out);
        assert!(out.is_empty());
        p.train(0x40, 0x1008, 6, true, &mut out);
        assert_eq!(out, vec![0x41, 0x42, 0x43]);
    }

    #[test]
    fn stride_learns_a_constant_stride_per_pc_and_ignores_a_random_one() {
        let mut p = pf(PrefetchKind::Stride, 4);
        let mut out = Vec::new();
        // A 256-byte stride from a page start: the first access allocates, the second sets
        // the stride, the third confirms it and fetches one stride ahead (a quarter of the
        // degree); the distance then ramps to 2, 3 and 4 strides, each trigger asking only
        // for what lies beyond the previous ones.
        let at = |i: u64| 0x10_000 + 256 * i;
        let mut got = Vec::new();
        for i in 0..8 {
            p.train(0x40, at(i), 6, true, &mut out);
            got.push(out.clone());
        }
        let lines = |v: &[u64]| v.iter().map(|&i| at(i) >> 6).collect::<Vec<u64>>();
        assert_eq!(got[..2], [vec![], vec![]]);
        assert_eq!(got[2], lines(&[3]), "{got:?}");
        assert_eq!(got[3], lines(&[4, 5]), "{got:?}");
        assert_eq!(got[4], lines(&[6, 7]), "{got:?}");
        assert_eq!(got[5], lines(&[8, 9]), "{got:?}");
        assert_eq!(got[6], lines(&[10]), "{got:?}");
        // Never across the page: 16 strides of 256 B fill it; at access 14 the ramped
        // distance would reach stride 18, but the page ends at stride 15.
        for i in 8..15 {
            p.train(0x40, at(i), 6, true, &mut out);
            assert!(
                out.iter().all(|&l| l << 6 >> 12 == at(i) >> 12),
                "{i}: {out:?}"
            );
        }
        assert!(
            out.is_empty(),
            "at stride 14 the page holds only stride 15, fetched already"
        );

        // A short stride (8 bytes, a stream) fetches the next lines instead, backwards too;
        // a trigger in a line whose successors were fetched already asks for nothing.
        let mut got = Vec::new();
        for i in 0..10u64 {
            p.train(0x80, 0x20_800 - 8 * i, 6, true, &mut out);
            got.push(out.clone());
        }
        let l = 0x207f8u64 >> 6; // the line of accesses 1..=8
        assert_eq!(got[2], vec![l - 1], "{got:?}");
        assert_eq!(got[3], vec![l - 2], "{got:?}");
        assert_eq!(got[4], vec![l - 3], "{got:?}");
        assert_eq!(got[5], vec![l - 4], "{got:?}");
        assert!(got[6..9].iter().all(Vec::is_empty), "{got:?}");
        assert_eq!(got[9], vec![l - 5], "{got:?}");
        // Another PC with no constant stride never prefetches.
        let mut x = 12345u64;
        for _ in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            p.train(0xc0, (x >> 20) & !63, 6, true, &mut out);
            assert!(out.is_empty(), "{out:?}");
        }
    }

    /// `learn` is `train` without a trigger: over a mixed sequence of strided, repeated and
    /// random accesses by a few PCs, a prefetcher that learns the untriggered ones asks for
    /// the same lines at every trigger, and ends in the same state, as one trained on all.
    #[test]
    fn learning_is_training_without_a_trigger() {
        for kind in [
            PrefetchKind::Stride,
            PrefetchKind::NextLine,
            PrefetchKind::None,
        ] {
            let (mut a, mut b) = (pf(kind, 4), pf(kind, 4));
            let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
            let mut rnd = crate::xorshift(0x9e37_79b9_7f4a_7c15);
            let mut addr = [0x10_0000u64, 0x20_0000, 0x30_0000];
            for i in 0..20_000u64 {
                let x = rnd();
                let k = (x % 3) as usize;
                addr[k] = match (x >> 8) % 8 {
                    0 => addr[k],
                    1 => (x >> 20) & 0xff_ffc0,
                    _ => addr[k].wrapping_add([8, 64, 200][k]),
                };
                let pc = 0x400 + 0x40 * k as u64;
                let trigger = (x >> 16) % 4 == 0;
                if trigger {
                    a.train(pc, addr[k], 6, true, &mut out_a);
                } else {
                    a.learn(pc, addr[k]);
                    out_a.clear();
                }
                b.train(pc, addr[k], 6, trigger, &mut out_b);
                assert_eq!(out_a, out_b, "{kind:?} access {i}");
            }
            assert_eq!(
                format!("{:?}", a.table),
                format!("{:?}", b.table),
                "{kind:?}"
            );
        }
    }

    /// `peek` asks for the lines a triggered `train` asks for, and changes nothing.
    #[test]
    fn peeking_is_a_triggered_training_that_changes_nothing() {
        for kind in [PrefetchKind::Stride, PrefetchKind::NextLine] {
            let mut p = pf(kind, 4);
            let mut out = Vec::new();
            let (mut rnd, mut asked) = (crate::xorshift(0x1234_5678_9abc_def1), 0);
            let mut addrs = [0x10_0000u64, 0x20_0000, 0x30_0000];
            for i in 0..5_000u64 {
                let x = rnd();
                let k = (x >> 40) as usize % 3;
                addrs[k] = match x % 16 {
                    0 => (x >> 20) & 0xff_ffc0,
                    _ => addrs[k].wrapping_add([8, 64, 192][k]),
                };
                let (pc, addr) = (0x400 + 0x40 * k as u64, addrs[k]);
                let before = format!("{:?}", p.table);
                let mut peeked = Vec::new();
                p.peek(pc, addr, 6, |l| peeked.push(l));
                assert_eq!(before, format!("{:?}", p.table), "{kind:?} access {i}");
                let trigger = (x >> 16) % 2 == 0;
                p.train(pc, addr, 6, trigger, &mut out);
                if trigger {
                    assert_eq!(peeked, out, "{kind:?} access {i}");
                    asked += out.len();
                }
            }
            assert!(asked > 500, "{kind:?}: only {asked} lines asked for");
        }
    }
}
