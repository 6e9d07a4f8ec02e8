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
//!   it prefetches `degree` strides ahead — or, for strides shorter than a line, the next
//!   `degree` lines in the stride's direction (a stream).

/// Which prefetcher a level has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrefetchKind {
    /// No prefetching.
    #[default]
    None,
    /// The next `degree` lines on a miss or first use.
    NextLine,
    /// Per-PC stride detection.
    Stride,
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

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    pc: u64,
    last: u64,
    stride: i64,
    confidence: u8,
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
        let line = addr >> line_shift;
        match self.p.kind {
            PrefetchKind::None => {}
            PrefetchKind::NextLine => {
                if trigger {
                    out.extend((1..=self.p.degree as u64).map(|k| line.wrapping_add(k)));
                }
            }
            PrefetchKind::Stride => {
                let e = &mut self.table[(pc as usize ^ (pc >> 6) as usize) % ENTRIES];
                if e.pc != pc {
                    *e = Entry {
                        pc,
                        last: addr,
                        stride: 0,
                        confidence: 0,
                    };
                    return;
                }
                let d = addr.wrapping_sub(e.last) as i64;
                e.last = addr;
                if d == 0 {
                    return;
                }
                if d == e.stride {
                    e.confidence = (e.confidence + 1).min(3);
                } else {
                    e.stride = d;
                    e.confidence = 0;
                }
                if !trigger || e.confidence < 1 {
                    return;
                }
                let line_bytes = 1i64 << line_shift;
                if d.abs() < line_bytes {
                    let dir = d.signum() as u64;
                    out.extend(
                        (1..=self.p.degree as u64).map(|k| line.wrapping_add(dir.wrapping_mul(k))),
                    );
                } else {
                    out.extend(
                        (1..=self.p.degree as u64)
                            .map(|k| addr.wrapping_add((d as u64).wrapping_mul(k)) >> line_shift),
                    );
                }
            }
        }
    }
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
        let mut p = pf(PrefetchKind::Stride, 2);
        let mut out = Vec::new();
        // A 256-byte stride: the first access allocates, the second sets the stride, the third
        // confirms it; from then on each trigger fetches two strides ahead.
        for (i, want) in [
            (0u64, vec![]),
            (1, vec![]),
            (2, vec![3u64, 4]),
            (3, vec![4, 5]),
        ] {
            p.train(0x40, 0x10_000 + 256 * i, 6, true, &mut out);
            let lines: Vec<u64> = want.iter().map(|k| (0x10_000 + 256 * k) >> 6).collect();
            assert_eq!(out, lines, "access {i}");
        }
        // A short stride (8 bytes, a stream) fetches the next lines instead, backwards too.
        let mut out2 = Vec::new();
        for i in 0..4u64 {
            p.train(0x80, 0x20_000 - 8 * i, 6, true, &mut out2);
        }
        let line = (0x20_000u64 - 24) >> 6;
        assert_eq!(out2, vec![line - 1, line - 2]);
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
}
