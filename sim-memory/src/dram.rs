//! DRAM banks and their row buffers (`[dram] banks`): what an access costs depends on the row
//! its bank has open, and a bank serves one access at a time.
//!
//! Each controller has `banks` banks. Consecutive lines go to consecutive banks (a
//! line-interleaved mapping, as in ChampSim's default: offset, bank, column, row from the low
//! address bits up), and a bank's row holds `row_bytes`, so one row index covers
//! `banks × row_bytes` bytes of addresses. The policy is open-page: a bank keeps the row of
//! its last access open. An access to the open row (a *row hit*) costs the column access
//! `t_cas`; to a bank with no row open (*empty*, never used) `t_rcd + t_cas`; to another row
//! (a *conflict*) `t_rp + t_rcd + t_cas`. The bank is busy from the start of that access to the
//! end of its data burst on the controller's channel ([`Slots`], the bandwidth calendar); an
//! access that finds its bank busy waits for it. `[dram] latency` stays what a conflict on an
//! idle controller costs, so the part of it that is not the bank's (the controller, the way
//! there and back) is `latency − (t_rp + t_rcd + t_cas)`, added to every access.
//!
//! **Out-of-order requests.** Cores run ahead in their own simulated time, so a bank's
//! requests do not arrive in time order. Each bank keeps its busy intervals in time order, up
//! to [`RETAIN`] cycles after they ended (counted back from the latest request it has seen); a
//! request takes the first gap at or after its time that holds it, and its row state is that
//! of the interval before the gap. An access placed in a gap before intervals placed earlier
//! does not re-time them (they keep the row state they were given). A request older than a
//! forgotten interval is served as a conflict on an idle bank and leaves no trace (as
//! [`Slots`] serves requests older than its horizon).
//!
//! **Refresh** (optional, `t_refi` and `t_rfc`): at every multiple of `t_refi` each bank
//! refreshes for `t_rfc` cycles: a busy interval in its calendar, put there before any access
//! that could reach it (an access does not run into a refresh, as a controller that knows the
//! refresh is due issues none that would), after which no row is open. All banks are due at
//! the same instants, as in ChampSim.
//!
//! Reads and write-backs both take bank time and change the open row; a write-back's time
//! is the time it is sent (writes are posted: nobody waits for them).

use std::collections::VecDeque;

use crate::slots::Slots;

/// Cycles a bank remembers a busy interval after it ended, counted back from the latest
/// request the bank has seen.
pub const RETAIN: u64 = 1 << 14;

/// The bank model's parameters, in core cycles (`banks == 0`: no bank model).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BankParams {
    /// Banks per controller.
    pub banks: u32,
    /// Bytes of one bank's row (its row buffer); a multiple of the line size.
    pub row_bytes: u64,
    /// Precharge: closing an open row.
    pub t_rp: u32,
    /// Activate: opening a row.
    pub t_rcd: u32,
    /// Column access, from the command to the data.
    pub t_cas: u32,
    /// Refresh interval: every bank is refreshed at each multiple of it (0: no refresh).
    pub t_refi: u64,
    /// Refresh time: a bank can do nothing else for this long from each multiple of
    /// `t_refi` on, and has no row open afterwards.
    pub t_rfc: u64,
}

impl BankParams {
    /// Whether the bank model is on.
    pub fn enabled(&self) -> bool {
        self.banks > 0
    }

    /// Why these parameters cannot be modelled with lines of `line` bytes and a DRAM latency
    /// of `latency` cycles, if they cannot (the one home of the rule: the config layer and
    /// [`crate::Memory::new`] both ask it).
    pub fn check(&self, line: u64, latency: u32) -> Result<(), String> {
        if !self.enabled() {
            return Ok(());
        }
        if !self.banks.is_power_of_two() {
            return Err(format!(
                "dram.banks must be a power of two (got {})",
                self.banks
            ));
        }
        if self.row_bytes < line
            || !(self.row_bytes / line).is_power_of_two()
            || self.row_bytes % line != 0
        {
            return Err(format!(
                "dram.row_size must be a power-of-two number of lines ({line} bytes each; got {} bytes)",
                self.row_bytes
            ));
        }
        if self.t_refi > 0 && self.t_rfc + self.conflict_cycles() * 2 >= self.t_refi {
            return Err(format!(
                "dram.t_refi ({} cycles) must leave room between refreshes (dram.t_rfc {} cycles and two row conflicts)",
                self.t_refi, self.t_rfc
            ));
        }
        if self.conflict_cycles() > latency as u64 {
            return Err(format!(
                "dram.t_rp + dram.t_rcd + dram.t_cas ({} cycles) must not exceed dram.latency ({latency} cycles), \
                 which is a row conflict's whole latency on an idle controller",
                self.conflict_cycles()
            ));
        }
        Ok(())
    }

    /// Bank cycles of a row conflict, the most an access takes in its bank.
    pub fn conflict_cycles(&self) -> u64 {
        (self.t_rp + self.t_rcd + self.t_cas) as u64
    }
}

/// How an access found its bank's row buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowState {
    /// The row was open.
    Hit,
    /// No row was open.
    Empty,
    /// Another row was open.
    Conflict,
}

/// Row-buffer counters of one controller: `[reads, writes]` each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BankStats {
    /// Accesses that found their row open.
    pub row_hits: [u64; 2],
    /// Accesses to a bank with no row open.
    pub row_empty: [u64; 2],
    /// Accesses that closed another row first.
    pub row_conflicts: [u64; 2],
    /// Cycles accesses waited for their bank to be free.
    pub bank_wait_cycles: [u64; 2],
}

#[derive(Debug, Clone, Copy, Default)]
struct Busy {
    start: u64,
    end: u64,
    row: u64,
}

#[derive(Debug, Clone, Default)]
struct Bank {
    /// Busy intervals in time order (by start and by end: they do not overlap).
    busy: VecDeque<Busy>,
    /// The latest end of a forgotten interval (0: none forgotten). The row state before the
    /// first remembered interval is then unknown (taken as a conflict), and a request before
    /// it is older than the history.
    forgot_end: u64,
    /// The latest request time seen.
    latest: u64,
    /// When the next refresh not yet in `busy` is due.
    next_refresh: u64,
}

/// The row of a refresh's busy interval: none is open after it.
const CLOSED: u64 = u64::MAX;

/// The banks of one DRAM controller.
#[derive(Debug, Clone)]
pub struct Banks {
    p: BankParams,
    /// Lines per row, as a shift.
    row_shift: u32,
    banks: Vec<Bank>,
    /// Counters.
    pub stats: BankStats,
}

impl Banks {
    /// The banks of one controller for lines of `1 << line_shift` bytes. `p.banks` and
    /// `p.row_bytes / line` must be powers of two (the config layer checks).
    pub fn new(p: BankParams, line_shift: u32) -> Banks {
        debug_assert!(p.banks.is_power_of_two());
        let lines_per_row = (p.row_bytes >> line_shift).max(1);
        debug_assert!(lines_per_row.is_power_of_two());
        Banks {
            p,
            row_shift: lines_per_row.trailing_zeros(),
            banks: vec![
                Bank {
                    next_refresh: if p.t_refi > 0 { p.t_refi } else { u64::MAX },
                    ..Bank::default()
                };
                p.banks as usize
            ],
            stats: BankStats::default(),
        }
    }

    /// Bank and row of a line (its address over the line size).
    pub fn place(&self, line: u64) -> (usize, u64) {
        let banks = self.p.banks as u64;
        ((line % banks) as usize, (line / banks) >> self.row_shift)
    }

    /// The first gap of bank `b` at or after `t` that holds an access to `row` taking
    /// `dur(state)` cycles: its index in the calendar, its start, and the row state there
    /// (that of the interval before it; a refresh leaves no row open).
    fn gap(
        &self,
        b: usize,
        t: u64,
        dur: impl Fn(RowState) -> u64,
        row: u64,
    ) -> (usize, u64, RowState) {
        let bank = &self.banks[b];
        // From the first interval that ends after `t` on.
        let mut i = bank.busy.partition_point(|x| x.end <= t);
        loop {
            let prev = i.checked_sub(1).map(|j| bank.busy[j]);
            let start = prev.map_or(t, |p| p.end.max(t));
            let state = match prev {
                Some(p) if p.row == CLOSED => RowState::Empty,
                Some(p) if p.row == row => RowState::Hit,
                Some(_) => RowState::Conflict,
                None if bank.forgot_end > 0 => RowState::Conflict,
                None => RowState::Empty,
            };
            if i == bank.busy.len() || start + dur(state) <= bank.busy[i].start {
                return (i, start, state);
            }
            i += 1;
        }
    }

    /// Puts bank `b`'s next refresh in its calendar: `t_rfc` cycles in the first gap from
    /// the time it is due (an access placed there before, out of time order, finishes first).
    fn refresh(&mut self, b: usize) {
        let at = self.banks[b].next_refresh;
        let rfc = self.p.t_rfc;
        let (i, start, _) = self.gap(b, at, |_| rfc, CLOSED);
        let bank = &mut self.banks[b];
        bank.busy.insert(
            i,
            Busy {
                start,
                end: start + rfc,
                row: CLOSED,
            },
        );
        bank.next_refresh += self.p.t_refi;
    }

    fn cycles(&self, state: RowState) -> u64 {
        let p = &self.p;
        match state {
            RowState::Hit => p.t_cas as u64,
            RowState::Empty => (p.t_rcd + p.t_cas) as u64,
            RowState::Conflict => p.conflict_cycles(),
        }
    }

    /// One access to `line` arriving at the controller at cycle `t` (a read, or a write-back
    /// when `write`): waits for its bank, opens its row as needed, then takes a burst on the
    /// controller's channel `slots` for core `core`. Returns when the burst ends and how the
    /// row buffer was found.
    pub fn access(
        &mut self,
        line: u64,
        t: u64,
        write: bool,
        slots: &mut Slots,
        core: usize,
    ) -> (u64, RowState) {
        let (b, row) = self.place(line);
        let burst = slots.slot_cycles.ceil() as u64;
        let w = write as usize;
        let bank = &mut self.banks[b];
        // Forget what ended long before the latest request.
        bank.latest = bank.latest.max(t);
        while let Some(f) = bank.busy.front() {
            if f.end + RETAIN >= bank.latest {
                break;
            }
            bank.forgot_end = bank.forgot_end.max(f.end);
            bank.busy.pop_front();
        }
        if t < bank.forgot_end {
            // Older than anything remembered: an idle bank, state unknown.
            self.stats.row_conflicts[w] += 1;
            let done = slots.request(core, t + self.p.conflict_cycles());
            return (done, RowState::Conflict);
        }
        // Refreshes due by the time this access could end are in the calendar first; those
        // that would be forgotten at once (after a long idle time) are skipped as forgotten.
        if self.p.t_refi > 0 {
            let (refi, rfc) = (self.p.t_refi, self.p.t_rfc);
            let bank = &mut self.banks[b];
            if bank.next_refresh + RETAIN < t {
                let last = (t - RETAIN) / refi * refi;
                bank.forgot_end = bank.forgot_end.max(last + rfc);
                bank.next_refresh = last + refi;
            }
            let bank = &self.banks[b];
            let last = bank.busy.back().map_or(0, |x| x.end);
            let horizon = t.max(last) + self.p.conflict_cycles() + burst;
            while self.banks[b].next_refresh <= horizon {
                self.refresh(b);
            }
        }
        let (i, start, state) = self.gap(b, t, |state| self.cycles(state) + burst, row);
        let data = start + self.cycles(state);
        let done = slots.request(core, data);
        self.banks[b].busy.insert(
            i,
            Busy {
                start,
                end: done.max(data + burst),
                row,
            },
        );
        let s = &mut self.stats;
        match state {
            RowState::Hit => s.row_hits[w] += 1,
            RowState::Empty => s.row_empty[w] += 1,
            RowState::Conflict => s.row_conflicts[w] += 1,
        }
        s.bank_wait_cycles[w] += start - t;
        (done, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Arbitration;

    /// 4 banks, 2 lines per row of each bank; tRP 10, tRCD 20, tCAS 30; a burst of 8 cycles
    /// (64-byte lines at 8 bytes a cycle).
    fn banks() -> (Banks, Slots) {
        (
            Banks::new(params(), 6),
            Slots::new(64, 8.0, Arbitration::Fifo, 1),
        )
    }

    fn params() -> BankParams {
        BankParams {
            banks: 4,
            row_bytes: 128,
            t_rp: 10,
            t_rcd: 20,
            t_cas: 30,
            t_refi: 0,
            t_rfc: 0,
        }
    }

    #[test]
    fn lines_interleave_across_banks_and_rows_lie_above_them() {
        let (b, _) = banks();
        // Lines 0-3 in banks 0-3, row 0; lines 4-7 in banks 0-3, row 0 (2 lines a row);
        // line 8 in bank 0, row 1.
        assert_eq!(b.place(0), (0, 0));
        assert_eq!(b.place(3), (3, 0));
        assert_eq!(b.place(4), (0, 0));
        assert_eq!(b.place(8), (0, 1));
        assert_eq!(b.place(13), (1, 1));
    }

    #[test]
    fn an_access_costs_what_its_row_state_says_and_waits_for_its_bank() {
        let (mut b, mut s) = banks();
        // Empty bank: tRCD + tCAS, then the burst.
        assert_eq!(b.access(0, 0, false, &mut s, 0), (58, RowState::Empty));
        // The same row much later: tCAS.
        assert_eq!(b.access(4, 1000, false, &mut s, 0), (1038, RowState::Hit));
        // Another row of the same bank: tRP + tRCD + tCAS.
        assert_eq!(
            b.access(8, 2000, false, &mut s, 0),
            (2068, RowState::Conflict)
        );
        // Issued while the bank is busy with that access (until 2068): waits for it, then
        // finds row 1 open.
        assert_eq!(
            b.access(12, 2010, false, &mut s, 0),
            (2068 + 38, RowState::Hit)
        );
        assert_eq!(b.stats.bank_wait_cycles[0], 58);
        // Another bank at the same time is not delayed by the bank, only by the channel's
        // slot if it is taken.
        // (The channel's slot of 2144-2152 is free.)
        let (done, state) = b.access(1, 2100, false, &mut s, 0);
        assert_eq!(state, RowState::Empty);
        assert_eq!(done, 2100 + 58);
        assert_eq!(b.stats.row_hits, [2, 0]);
        assert_eq!(b.stats.row_empty, [2, 0]);
        assert_eq!(b.stats.row_conflicts, [1, 0]);
    }

    #[test]
    fn a_late_arriving_early_request_takes_a_gap_in_the_past() {
        let (mut b, mut s) = banks();
        assert_eq!(b.access(0, 1000, false, &mut s, 0).0, 1058);
        // Earlier than that access and done before it starts: fits in front, row empty.
        assert_eq!(b.access(8, 100, false, &mut s, 0), (158, RowState::Empty));
        // Fits between the two (950 + tCAS + burst = 988 ≤ 1000): a hit on the row the late
        // request opened.
        assert_eq!(b.access(8, 950, false, &mut s, 0), (988, RowState::Hit));
        // Fits nowhere before the access at 1000 (ends 1058): after it, a conflict (row 1
        // after row 0).
        assert_eq!(
            b.access(8, 960, false, &mut s, 0),
            (1058 + 68, RowState::Conflict)
        );
    }

    #[test]
    fn a_request_older_than_the_history_is_an_unqueued_conflict() {
        let (mut b, mut s) = banks();
        b.access(0, 10, false, &mut s, 0);
        b.access(4, 100, false, &mut s, 0);
        // Long after: the two are forgotten, and the row the bank has open is not known.
        let late = 100 + RETAIN + 1000;
        assert_eq!(
            b.access(0, late, false, &mut s, 0),
            (late + 68, RowState::Conflict)
        );
        assert_eq!(
            b.access(8, 50, true, &mut s, 0),
            (50 + 68, RowState::Conflict)
        );
        assert_eq!(b.stats.row_conflicts, [1, 1]);
        // Remembered intervals are unchanged: the next read after them hits row 0.
        assert_eq!(b.access(4, 2 * RETAIN, false, &mut s, 0).1, RowState::Hit);
    }

    #[test]
    fn a_refresh_holds_every_bank_and_closes_its_row() {
        let (_, mut s) = banks();
        let mut b = Banks::new(
            BankParams {
                t_refi: 1000,
                t_rfc: 100,
                ..params()
            },
            6,
        );
        assert_eq!(b.access(0, 20, false, &mut s, 0), (78, RowState::Empty));
        // Row 0 open; at 970 a hit (38 cycles) would run into the refresh due at 1000: after
        // it, with the row closed.
        assert_eq!(
            b.access(4, 970, false, &mut s, 0),
            (1100 + 58, RowState::Empty)
        );
        // An older request that fits before the refresh still finds row 0 open.
        assert_eq!(b.access(4, 900, false, &mut s, 0), (938, RowState::Hit));
        // Open again after it; the refresh at 2000 closes it.
        assert_eq!(b.access(4, 1500, false, &mut s, 0), (1538, RowState::Hit));
        assert_eq!(b.access(4, 2500, false, &mut s, 0), (2558, RowState::Empty));
        // Inside a refresh: waits for its end. Another bank refreshes at the same instants.
        assert_eq!(
            b.access(1, 3050, false, &mut s, 0),
            (3100 + 58, RowState::Empty)
        );
        // Long after (a billion cycles: a million refreshes skipped, not put in the
        // calendar): the last refresh closed the row.
        let late = 1_000_000_500;
        assert_eq!(
            b.access(1, late, false, &mut s, 0),
            (late + 58, RowState::Empty)
        );
        // What it keeps: the refreshes of the last RETAIN cycles and the access.
        let kept = b.banks[1].busy.len() as u64;
        assert!(kept <= RETAIN / 1000 + 2, "{kept}");
    }

    /// Reference model: a bank per line index mod 4, served one access at a time in arrival
    /// order (the requests arrive in time order, so the gap search must agree with it), each
    /// burst taking the first free cycle of the channel from its data on. Random lines over
    /// 64 rows.
    #[test]
    fn requests_in_time_order_match_a_queue_per_bank() {
        let mut b = Banks::new(params(), 6);
        let mut s = Slots::new(64, 64.0, Arbitration::Fifo, 1);
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut free = [0u64; 4];
        let mut channel = std::collections::BTreeSet::new();
        let mut open: [Option<u64>; 4] = [None; 4];
        let mut t = 0;
        for _ in 0..5000 {
            t += next() % 40;
            let line = next() % 512;
            let (bank, row) = ((line % 4) as usize, line / 4 / 2);
            let start = t.max(free[bank]);
            let cost = match open[bank] {
                Some(r) if r == row => 30,
                Some(_) => 60,
                None => 50,
            };
            open[bank] = Some(row);
            let mut slot = start + cost;
            while !channel.insert(slot) {
                slot += 1;
            }
            free[bank] = slot + 1;
            let (done, _) = b.access(line, t, false, &mut s, 0);
            assert_eq!(done, slot + 1, "line {line} at {t}");
        }
    }
}
