//! A calendar of transfer slots: the bandwidth model shared by the bus and the DRAM
//! controllers. Time is cut into slots of `line / bandwidth` cycles; one transfer occupies one
//! slot, so no more than the configured bandwidth can ever be delivered: over any stretch of
//! time, at most one transfer more than bandwidth × length.
//!
//! **An idle resource costs one slot.** A request at time `t` may take the slot that contains
//! `t` if that slot is free: the transfer then starts at `t` rather than at the next slot
//! boundary and completes `ceil(line / bandwidth)` cycles after the request, whatever the
//! phase of `t` within the slot. (Such a transfer overlaps the next slot by less than one
//! slot; each slot still carries one transfer, hence the bound of one transfer above.) A
//! request that must wait starts at the beginning of the slot it is given.
//!
//! **Out-of-order requests.** Each core runs ahead in its own simulated time, so requests do
//! not arrive in time order. A request at time `t` takes the first free slot that has not
//! ended at `t` (as permitted by the arbitration policy), wherever earlier or later requests
//! already sit: a late-arriving early request can still use an idle slot in the past of
//! requests already placed. Only a horizon of `HORIZON` slots is remembered; a request older
//! than the horizon is served as on an idle resource: it cannot conflict with any transfer
//! still remembered (the bandwidth bound then holds only within the horizon, which spans
//! 65,536 slots — hundreds of thousands of cycles at realistic bandwidths).
//!
//! **Arbitration** chooses which free slots a core may take:
//! * FIFO: the first free slot.
//! * Round-robin: a core that competes with `k` active cores takes at most one slot in `k`
//!   (its next slot is at least `k` after its previous one), so contending cores share evenly.
//! * Fixed priority (core 0 highest): a core may not take the slots that the recent
//!   *pressure* of higher-priority cores claims: slot `s` is open to core `c` only if a
//!   low-discrepancy sequence value of `s` is at least the sum, over cores `0..c`, of the
//!   fraction of recent slots during which that core had a request pending (waiting or in
//!   transfer). Pressure is what a real fixed-priority arbiter obeys — it serves a lower core
//!   only when no higher one is waiting — and, unlike the slots a higher core was granted, it
//!   does not shrink when lower cores take slots: a measure of slots granted settles at any
//!   split (the more a low core takes, the less the high one is granted, the more the low one
//!   may take), so a saturating high-priority core would not starve the others. With pressure
//!   it does, down to `STARVED_SHARE` of the slots, which stay open to every core so that a
//!   starved core still advances instead of being pushed past the horizon. The price of
//!   committing each transfer to a slot when it is requested: to serve a *light*
//!   high-priority core promptly, slots are held for it that it often leaves unused. With a
//!   saturating low-priority core and a high-priority one asking for 5–70 % of the bus, the
//!   high one gets 88–98 % of what it asks and 16–24 % of the bus stays idle (measured with
//!   the streams of `tests/rules.rs`); counting slots granted instead wastes nothing but
//!   leaves the high core only about half of what it asks for.
//!
//! Recent demand (transfers, for round-robin) and pressure (pending slots, for fixed
//! priority) are counted per core over windows of `WINDOW` slots (current and previous). A
//! core's pending slots are the union of its requests' intervals, from the slot of the request
//! to the slot granted, assuming each core presents its own requests in time order (a request
//! earlier than the same core's previous ones adds only the slots beyond them).

use crate::config::Arbitration;
use crate::cycles::{to_f64, to_u64};

/// Slots remembered ahead of the oldest one.
pub const HORIZON: u64 = 1 << 16;
/// Demand-measuring window, in slots.
pub const WINDOW: u64 = 1024;
/// Fraction of the slots that fixed priority leaves open to every core, however much
/// pressure the higher-priority cores exert.
pub const STARVED_SHARE: f64 = 1.0 / 64.0;

/// One shared transfer resource.
#[derive(Debug, Clone)]
pub struct Slots {
    /// Cycles per slot.
    pub slot_cycles: f64,
    /// `slot_cycles` rounded up: the latency of a transfer on an idle resource.
    idle_cycles: u64,
    arbitration: Arbitration,
    base: u64,
    busy: Vec<u64>,
    cores: usize,
    last_slot: Vec<u64>,
    window: u64,
    demand_cur: Vec<u32>,
    demand_prev: Vec<u32>,
    /// Per core: one past the last slot counted as pending.
    pending_end: Vec<u64>,
    pending_cur: Vec<u32>,
    pending_prev: Vec<u32>,
    /// Transfers served.
    pub transfers: u64,
    /// Sum of queueing delays in cycles.
    pub wait_cycles: u64,
}

const WORDS: usize = (HORIZON / 64) as usize;

impl Slots {
    /// A resource moving `bytes` per transfer at `bytes_per_cycle`, shared by `cores`.
    pub fn new(bytes: u64, bytes_per_cycle: f64, arbitration: Arbitration, cores: usize) -> Slots {
        let slot_cycles = bytes as f64 / bytes_per_cycle;
        Slots {
            slot_cycles,
            idle_cycles: ceil(slot_cycles),
            arbitration,
            base: 0,
            busy: vec![0; WORDS],
            cores,
            last_slot: vec![0; cores],
            window: 0,
            demand_cur: vec![0; cores],
            demand_prev: vec![0; cores],
            pending_end: vec![0; cores],
            pending_cur: vec![0; cores],
            pending_prev: vec![0; cores],
            transfers: 0,
            wait_cycles: 0,
        }
    }

    #[inline]
    fn is_busy(&self, s: u64) -> bool {
        let i = (s % HORIZON) as usize;
        self.busy[i / 64] >> (i % 64) & 1 != 0
    }

    /// The first slot from `s` on, before `limit`, that no transfer holds (`limit` if none):
    /// a word of the calendar at a time.
    #[inline]
    fn next_free(&self, mut s: u64, limit: u64) -> u64 {
        while s < limit {
            let i = (s % HORIZON) as usize;
            // The free slots of `s`'s word from `s` on (the calendar's words are aligned
            // with slot numbers: `HORIZON` is a multiple of 64).
            let free = !self.busy[i / 64] >> (i % 64);
            if free != 0 {
                return (s + free.trailing_zeros() as u64).min(limit);
            }
            s += 64 - (i % 64) as u64;
        }
        limit
    }

    #[inline]
    fn mark(&mut self, s: u64) {
        let i = (s % HORIZON) as usize;
        self.busy[i / 64] |= 1 << (i % 64);
    }

    /// Moves the horizon so that `s` lies in its first half.
    fn advance_to(&mut self, s: u64) {
        let new_base = s.saturating_sub(HORIZON / 4);
        if new_base <= self.base {
            return;
        }
        if new_base - self.base >= HORIZON {
            self.busy.iter_mut().for_each(|w| *w = 0);
        } else {
            // Whole words where aligned, single bits at the ragged ends.
            let mut old = self.base;
            while old < new_base {
                let i = (old % HORIZON) as usize;
                if i % 64 == 0 && new_base - old >= 64 {
                    self.busy[i / 64] = 0;
                    old += 64;
                } else {
                    self.busy[i / 64] &= !(1 << (i % 64));
                    old += 1;
                }
            }
        }
        self.base = new_base;
    }

    fn roll_window(&mut self, s: u64) {
        let w = s / WINDOW;
        if w > self.window {
            if w == self.window + 1 {
                std::mem::swap(&mut self.demand_cur, &mut self.demand_prev);
                std::mem::swap(&mut self.pending_cur, &mut self.pending_prev);
            } else {
                self.demand_prev.iter_mut().for_each(|d| *d = 0);
                self.pending_prev.iter_mut().for_each(|d| *d = 0);
            }
            self.demand_cur.iter_mut().for_each(|d| *d = 0);
            self.pending_cur.iter_mut().for_each(|d| *d = 0);
            self.window = w;
        }
    }

    fn recent(&self, c: usize) -> u32 {
        self.demand_cur[c].max(self.demand_prev[c])
    }

    fn pressure(&self, c: usize) -> u32 {
        self.pending_cur[c].max(self.pending_prev[c])
    }

    /// The policy's bound for core `c`, computed once per request: for round-robin the number
    /// of active cores, for fixed priority the pressure of the higher-priority cores as a
    /// fraction of the window (capped so that `STARVED_SHARE` of the slots stay open).
    fn bound(&self, c: usize) -> f64 {
        match self.arbitration {
            Arbitration::Fifo => 0.0,
            Arbitration::RoundRobin => (0..self.cores)
                .filter(|&x| x == c || self.recent(x) > 0)
                .count() as f64,
            Arbitration::FixedPriority => {
                let higher: u64 = (0..c).map(|x| self.pressure(x) as u64).sum();
                (higher as f64 / WINDOW as f64).min(1.0 - STARVED_SHARE)
            }
        }
    }

    /// Whether core `c` may take slot `s` under the policy, given its `bound`.
    fn open(&self, c: usize, s: u64, bound: f64) -> bool {
        match self.arbitration {
            Arbitration::Fifo => true,
            Arbitration::RoundRobin => {
                self.last_slot[c] == 0 || s >= self.last_slot[c] + to_u64(bound)
            }
            Arbitration::FixedPriority => {
                // Weyl sequence: evenly spread, deterministic.
                let u = (to_f64(s) * 0.618_033_988_749_895).fract();
                u >= bound
            }
        }
    }

    /// Places one transfer requested by core `c` at cycle `t`; returns the cycle at which it
    /// completes: `t` + one slot (rounded up) if the slot containing `t` is free and open to
    /// `c`, else the end of the later slot it was given.
    pub fn request(&mut self, c: usize, t: u64) -> u64 {
        let c = c.min(self.cores.saturating_sub(1));
        // The slot containing `t`: if it is free, the transfer starts at `t` itself.
        // (Truncation is the floor of a non-negative time; `f64::floor` is a libm call on
        // the x86-64 baseline, once per transfer.)
        let mut s = to_u64(to_f64(t) / self.slot_cycles);
        if s < self.base {
            // Older than anything remembered: nothing to conflict with, so it is served as on
            // an idle resource. (Moving it forward to the horizon instead would return a
            // latency as long as the skew, which pushes the requester's clock further ahead
            // and makes the next request older still.)
            self.transfers += 1;
            return t + self.idle_cycles;
        }
        if s >= self.base + HORIZON / 2 {
            self.advance_to(s);
        }
        self.roll_window(s);
        let first = s;
        let bound = self.bound(c);
        let limit = self.base + HORIZON;
        loop {
            s = self.next_free(s, limit);
            if s >= limit || self.open(c, s, bound) {
                break;
            }
            s += 1;
        }
        debug_assert!(s >= limit || !self.is_busy(s));
        if s >= limit {
            // Saturated beyond the horizon: slide it and take the first slot past it.
            self.advance_to(s);
        }
        self.mark(s);
        self.last_slot[c] = s;
        self.demand_cur[c] += 1;
        // Pressure: the slots from the request to the grant not already counted for `c`.
        let from = first.max(self.pending_end[c]);
        if s + 1 > from {
            let n = u32::try_from(s + 1 - from).unwrap_or(u32::MAX);
            self.pending_cur[c] = self.pending_cur[c].saturating_add(n);
            self.pending_end[c] = s + 1;
        }
        self.transfers += 1;
        // A transfer in the slot containing `t` ends one slot after `t` (`ideal`); one in a
        // later slot ends with that slot, which is later still.
        let done = ceil(to_f64(s + 1) * self.slot_cycles);
        let ideal = t + self.idle_cycles;
        self.wait_cycles += done.saturating_sub(ideal);
        done.max(ideal)
    }
}

/// `x.ceil() as u64` for a non-negative cycle count below 2^53, without `f64::ceil`'s libm
/// call.
#[inline]
fn ceil(x: f64) -> u64 {
    let f = to_u64(x);
    f + (to_f64(f) < x) as u64
}

#[cfg(test)]
mod tests {
    use super::{HORIZON, Slots, ceil};
    use crate::config::Arbitration;

    /// The word-at-a-time search for a free slot finds what a slot-by-slot scan finds, on
    /// calendars from empty to nearly full, from every phase of a word, across the ring's
    /// wrap-around and up to limits anywhere in the horizon.
    #[test]
    fn the_free_slot_search_is_a_scan_slot_by_slot() {
        let mut rnd = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for density in [0u64, 1, 50, 90, 99, 100] {
            let mut sl = Slots::new(64, 1.0, Arbitration::Fifo, 1);
            sl.base = rnd() % (1 << 30);
            for s in sl.base..sl.base + HORIZON {
                if rnd() % 100 < density {
                    sl.mark(s);
                }
            }
            for _ in 0..2000 {
                let s = sl.base + rnd() % HORIZON;
                let limit = if rnd() % 2 == 0 {
                    sl.base + HORIZON
                } else {
                    s + rnd() % (sl.base + HORIZON - s + 1)
                };
                let mut naive = s;
                while naive < limit && sl.is_busy(naive) {
                    naive += 1;
                }
                assert_eq!(
                    sl.next_free(s, limit),
                    naive,
                    "density {density} %, base {}, from {s} to {limit}",
                    sl.base
                );
            }
        }
    }

    /// The libm-free ceiling agrees with `f64::ceil` on integers, on values just above and
    /// below them, and on the slot lengths bandwidths give (bytes / bytes per cycle).
    #[test]
    fn ceil_is_f64_ceil_on_cycle_counts() {
        let mut xs = vec![0.0, 0.5, 1.0, 1.5, 2.0 - f64::EPSILON, 1e15, 1e15 + 0.5];
        for k in 0..2000u64 {
            let k = k as f64;
            xs.extend([
                k,
                k + 1e-9,
                k - 1e-9,
                k * 0.37,
                k * 64.0 / 25.6,
                k * 64.0 / 3.0,
            ]);
        }
        for x in xs.into_iter().filter(|&x| x >= 0.0) {
            assert_eq!(ceil(x), x.ceil() as u64, "{x}");
        }
    }
}
