//! The engine's choice of the next thread to run: the runnable thread with the smallest clock
//! (the lowest id among equals) and the smallest clock of the other runnable threads, kept
//! in a tournament tree over the threads instead of found by a scan of every thread per
//! turn. A memory-bound thread's turn ends after one or two instructions (a miss takes longer
//! than the quantum), so the scan grew with the threads: ~6 % of the host's time on
//! pointer-chase at 64 threads. The tree answers in `log2(threads)` steps and, after a turn
//! that moved one thread's clock, updates in as many.
//!
//! The tree is a cache of the threads' clocks and states: the engine tells it each change
//! ([`Sched::update`] for the thread that ran and each thread a marker woke or blocked,
//! [`Sched::rebuild`] after a round, which changes most), and its answers are exactly those
//! of the scan it replaces (a test compares them on random clocks and updates; the engine's
//! debug builds compare them on every turn). Its methods are out of line: they run once per
//! turn, and inlined they changed the code of the engine's instruction loop around them.

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Sched {
    /// By thread id, padded to `p`: the thread's clock if it can run, else infinity (also
    /// for the padding).
    clock: Vec<f64>,
    /// Node `k` (1-based, children `2k` and `2k+1`; leaf `p + t` for thread `t`, holding
    /// `t`): the thread whose clock is the smallest under it, the lowest id among equals.
    win: Vec<u32>,
    /// Leaves: the thread count rounded up to a power of two (at least 1).
    p: usize,
    /// Threads that can run.
    runnable: usize,
}

impl Sched {
    /// A tree over `threads` threads, none of them runnable yet.
    pub(crate) fn new(threads: usize) -> Sched {
        let p = threads.max(1).next_power_of_two();
        let mut win = vec![0u32; 2 * p];
        for (i, w) in win[p..].iter_mut().enumerate() {
            *w = i as u32;
        }
        for k in (1..p).rev() {
            win[k] = win[2 * k];
        }
        Sched {
            clock: vec![f64::INFINITY; p],
            win,
            p,
            runnable: 0,
        }
    }

    /// The winner of two subtrees' winners: the smaller clock; on a tie the left one, whose
    /// id is lower.
    #[inline]
    fn pick(&self, left: u32, right: u32) -> u32 {
        if self.clock[right as usize] < self.clock[left as usize] {
            right
        } else {
            left
        }
    }

    /// Every thread's clock and whether it can run, from `threads` (clock, runnable), in id
    /// order.
    #[inline(never)]
    pub(crate) fn rebuild(&mut self, threads: impl Iterator<Item = (f64, bool)>) {
        self.runnable = 0;
        self.clock.fill(f64::INFINITY);
        for (c, (now, can)) in self.clock.iter_mut().zip(threads) {
            if can {
                debug_assert!(now < f64::INFINITY, "a runnable thread's clock is finite");
                *c = now;
                self.runnable += 1;
            }
        }
        for k in (1..self.p).rev() {
            self.win[k] = self.pick(self.win[2 * k], self.win[2 * k + 1]);
        }
    }

    /// Thread `t` now has clock `now` and can run or not (`can`): the path from its leaf to
    /// the root is recomputed if that changed anything. After several updates, each node has
    /// been computed last when every leaf under it held its new clock, so the tree is right.
    #[inline(never)]
    pub(crate) fn update(&mut self, t: u32, now: f64, can: bool) {
        debug_assert!(
            !can || now < f64::INFINITY,
            "a runnable thread's clock is finite"
        );
        let t = t as usize;
        let c = if can { now } else { f64::INFINITY };
        let old = self.clock[t];
        if c != old {
            self.runnable = self.runnable + can as usize - (old < f64::INFINITY) as usize;
            self.clock[t] = c;
            self.up(t);
        }
    }

    /// Recomputes the winners on the path from leaf `t` to the root.
    #[inline]
    fn up(&mut self, t: usize) {
        let mut k = (self.p + t) / 2;
        while k >= 1 {
            self.win[k] = self.pick(self.win[2 * k], self.win[2 * k + 1]);
            k /= 2;
        }
    }

    /// The runnable thread with the smallest clock (the lowest id among equals) and that
    /// clock, and the smallest clock of the other runnable threads (infinity if none);
    /// `None` if no thread can run.
    #[inline(never)]
    pub(crate) fn first(&self) -> Option<(f64, u32, f64)> {
        let w = self.win[1];
        let at = self.clock[w as usize];
        if at == f64::INFINITY {
            return None;
        }
        let mut second = f64::INFINITY;
        let mut k = self.p + w as usize;
        while k > 1 {
            let c = self.clock[self.win[k ^ 1] as usize];
            if c < second {
                second = c;
            }
            k /= 2;
        }
        Some((at, w, second))
    }

    /// Threads that can run.
    #[inline]
    pub(crate) fn runnable(&self) -> usize {
        self.runnable
    }
}

/// What [`Sched::first`] answers, found by a scan of `threads` (clock, runnable) in id order:
/// the engine's choice before the tree, kept as the tree's oracle.
pub(crate) fn scan(threads: impl Iterator<Item = (f64, bool)>) -> Option<(f64, u32, f64)> {
    let mut first: Option<(f64, u32)> = None;
    let mut second = f64::INFINITY;
    for (i, (now, can)) in threads.enumerate() {
        if !can {
            continue;
        }
        match first {
            None => first = Some((now, i as u32)),
            Some(f) if now < f.0 => {
                second = second.min(f.0);
                first = Some((now, i as u32));
            }
            Some(_) => second = second.min(now),
        }
    }
    first.map(|(at, t)| (at, t, second))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree answers what the scan answers, on every thread count from 1 to 70, with clocks
    /// drawn from a few values (so that ties are common) and threads that cannot run, after a
    /// rebuild or updates of a few threads or of all (as after a marker or a round), and
    /// after runs of single-thread updates, as the engine does them.
    #[test]
    fn the_tree_answers_what_the_scan_answers() {
        /// A clock from a few values, and whether the thread can run (three times in four).
        fn draw(next: &mut impl FnMut() -> u64) -> (f64, bool) {
            ((next() % 8) as f64 * 0.5, next() % 4 != 0)
        }
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let (mut compared, mut ties, mut nobody, mut updated) = (0u64, 0u64, 0u64, 0u64);
        for n in 1..=70usize {
            let mut s = Sched::new(n);
            let mut th: Vec<(f64, bool)> = vec![(0.0, false); n];
            for round in 0..60 {
                if round % 3 == 0 {
                    for t in th.iter_mut() {
                        *t = draw(&mut next);
                    }
                    s.rebuild(th.iter().copied());
                } else {
                    // A few threads change (as at a marker), or all (as in a round).
                    let k = if round % 3 == 1 {
                        1 + (next() % 3) as usize
                    } else {
                        n
                    };
                    for _ in 0..k {
                        let t = (next() % n as u64) as usize;
                        th[t] = draw(&mut next);
                        s.update(t as u32, th[t].0, th[t].1);
                    }
                    updated += 1;
                }
                assert_eq!(s.runnable(), th.iter().filter(|t| t.1).count());
                for _ in 0..30 {
                    let want = scan(th.iter().copied());
                    assert_eq!(s.first(), want, "{n} threads: {th:?}");
                    compared += 1;
                    match want {
                        None => {
                            nobody += 1;
                            break;
                        }
                        Some((at, t, second)) => {
                            ties += (at == second) as u64;
                            // The engine's turn: the first thread's clock moves forward.
                            let now = at + (next() % 5) as f64 * 0.5;
                            th[t as usize].0 = now;
                            s.update(t, now, true);
                        }
                    }
                }
            }
        }
        // The comparisons covered ties, the case of no runnable thread, and updates of
        // several threads.
        assert!(
            compared > 50_000 && ties > 1_000 && nobody > 10 && updated > 2_000,
            "{compared} {ties} {nobody} {updated}"
        );
    }
}
