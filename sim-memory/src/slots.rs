//! A calendar of transfer slots: the bandwidth model shared by the bus and the DRAM
//! controllers. Time is cut into slots of `line / bandwidth` cycles; one transfer occupies one
//! slot, so no more than the configured bandwidth can ever be delivered.
//!
//! **Out-of-order requests.** Each core runs ahead in its own simulated time, so requests do
//! not arrive in time order. A request at time `t` takes the first free slot at or after `t`
//! (as permitted by the arbitration policy), wherever earlier or later requests already sit:
//! a late-arriving early request can still use an idle slot in the past of requests already
//! placed. Only a horizon of `HORIZON` slots is remembered; a request older than the horizon
//! is treated as arriving at its start (documented error bounded by the cores' skew).
//!
//! **Arbitration** chooses which free slots a core may take:
//! * FIFO: the first free slot.
//! * Round-robin: a core that competes with `k` active cores takes at most one slot in `k`
//!   (its next slot is at least `k` after its previous one), so contending cores share evenly.
//! * Fixed priority (core 0 highest): a core may not take slots that the measured recent
//!   demand of higher-priority cores would use: slot `s` is open to core `c` only if a
//!   low-discrepancy sequence value of `s` is at least the higher-priority cores' recent
//!   utilisation. A saturated high-priority core therefore starves lower ones.
//!
//! Recent demand is counted per core over windows of `WINDOW` slots (current and previous).

use crate::config::Arbitration;

/// Slots remembered ahead of the oldest one.
pub const HORIZON: u64 = 1 << 16;
/// Demand-measuring window, in slots.
pub const WINDOW: u64 = 1024;

/// One shared transfer resource.
#[derive(Debug, Clone)]
pub struct Slots {
    /// Cycles per slot.
    pub slot_cycles: f64,
    arbitration: Arbitration,
    base: u64,
    busy: Vec<u64>,
    cores: usize,
    last_slot: Vec<u64>,
    window: u64,
    demand_cur: Vec<u32>,
    demand_prev: Vec<u32>,
    /// Transfers served.
    pub transfers: u64,
    /// Sum of queueing delays in cycles.
    pub wait_cycles: u64,
}

const WORDS: usize = (HORIZON / 64) as usize;

impl Slots {
    /// A resource moving `bytes` per transfer at `bytes_per_cycle`, shared by `cores`.
    pub fn new(bytes: u64, bytes_per_cycle: f64, arbitration: Arbitration, cores: usize) -> Slots {
        Slots {
            slot_cycles: bytes as f64 / bytes_per_cycle,
            arbitration,
            base: 0,
            busy: vec![0; WORDS],
            cores,
            last_slot: vec![0; cores],
            window: 0,
            demand_cur: vec![0; cores],
            demand_prev: vec![0; cores],
            transfers: 0,
            wait_cycles: 0,
        }
    }

    #[inline]
    fn is_busy(&self, s: u64) -> bool {
        let i = (s % HORIZON) as usize;
        self.busy[i / 64] >> (i % 64) & 1 != 0
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
            for old in self.base..new_base {
                let i = (old % HORIZON) as usize;
                self.busy[i / 64] &= !(1 << (i % 64));
            }
        }
        self.base = new_base;
    }

    fn roll_window(&mut self, s: u64) {
        let w = s / WINDOW;
        if w > self.window {
            if w == self.window + 1 {
                std::mem::swap(&mut self.demand_cur, &mut self.demand_prev);
            } else {
                self.demand_prev.iter_mut().for_each(|d| *d = 0);
            }
            self.demand_cur.iter_mut().for_each(|d| *d = 0);
            self.window = w;
        }
    }

    fn recent(&self, c: usize) -> u32 {
        self.demand_cur[c].max(self.demand_prev[c])
    }

    /// Whether core `c` may take slot `s` under the policy.
    fn open(&self, c: usize, s: u64) -> bool {
        match self.arbitration {
            Arbitration::Fifo => true,
            Arbitration::RoundRobin => {
                let active = (0..self.cores)
                    .filter(|&x| x == c || self.recent(x) > 0)
                    .count() as u64;
                self.last_slot[c] == 0 || s >= self.last_slot[c] + active
            }
            Arbitration::FixedPriority => {
                let higher: u32 = (0..c).map(|x| self.recent(x)).sum();
                let util = higher as f64 / WINDOW as f64;
                // Weyl sequence: evenly spread, deterministic.
                let u = (s as f64 * 0.618_033_988_749_895).fract();
                u >= util
            }
        }
    }

    /// Places one transfer requested by core `c` at cycle `t`; returns the cycle at which it
    /// completes (≥ t + one slot).
    pub fn request(&mut self, c: usize, t: u64) -> u64 {
        let c = c.min(self.cores.saturating_sub(1));
        let mut s = (t as f64 / self.slot_cycles).ceil() as u64;
        if s < self.base {
            s = self.base;
        }
        if s >= self.base + HORIZON / 2 {
            self.advance_to(s);
        }
        self.roll_window(s);
        let limit = self.base + HORIZON;
        while s < limit && (self.is_busy(s) || !self.open(c, s)) {
            s += 1;
        }
        if s >= limit {
            // Saturated beyond the horizon: slide it and take the first slot past it.
            self.advance_to(s);
        }
        self.mark(s);
        self.last_slot[c] = s;
        self.demand_cur[c] += 1;
        self.transfers += 1;
        let done = ((s + 1) as f64 * self.slot_cycles).ceil() as u64;
        let ideal = t + self.slot_cycles.ceil() as u64;
        self.wait_cycles += done.saturating_sub(ideal);
        done.max(ideal)
    }
}
