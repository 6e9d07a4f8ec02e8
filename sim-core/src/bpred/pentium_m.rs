//! A Pentium M-like hybrid predictor, designed from the public descriptions of that core
//! (Gochman et al., "The Intel Pentium M Processor: Microarchitecture and Performance",
//! Intel Technology Journal 7(2), 2003; Uzelac & Milenković, "Experiment Flows and
//! Microbenchmarks for Reverse Engineering of Branch Predictor Structures", ISPASS 2009).
//! Those give the structure, not every detail; the choices below are isim's own.
//!
//! Three direction components, consulted in priority order:
//! 1. A **loop predictor** (`loop_entries`, direct-mapped, fully tagged). Each entry counts
//!    how many times its branch went the loop-body direction in a row before going the other
//!    way once (the exit). When the same trip count repeats [`LOOP_CONFIDENT`] times in a row
//!    it predicts the exit exactly, overriding the others. Counters are 6 bits wide, so it
//!    handles loops of up to [`LOOP_MAX_TRIP`] body outcomes + 1 exit (64 executions);
//!    longer runs make the entry give up. An entry is allocated when a conditional branch
//!    without one is mispredicted (a loop branch is mispredicted at its exit, so the
//!    allocation takes the body direction to be the opposite of that outcome; two
//!    exit-direction outcomes in a row turn the entry round). An entry with confidence is
//!    not replaced at once: a conflicting allocation first ages it.
//! 2. A **tagged global predictor** (`global_entries` 2-bit counters with 16-bit PC tags),
//!    indexed by the branch PC XOR a folded **path history**: every *taken* branch of any
//!    kind shifts the history left by two and XORs in a hash of its PC, as the public
//!    descriptions of the Pentium M's path information register say. Not-taken branches
//!    leave the path unchanged. It predicts only on a tag hit; entries are allocated when
//!    the bimodal prediction was wrong and there was no hit, so branches that the bimodal
//!    table handles do not take space.
//! 3. A **bimodal** table (`bimodal_entries` 2-bit counters indexed by PC), always updated,
//!    used when neither of the others predicts.
//!
//! Indirect branches use a `btb_entries` direct-mapped BTB (the real part has a
//! set-associative BTB and a history-indexed indirect-target predictor, neither modelled);
//! returns use the shared return-address stack.

use super::{
    BranchPredictor, CounterTable, TargetPredictor, fold, history_len, low_mask, pc_index,
    table_bits,
};
use sim_frontend::model::BranchKind;

/// Most consecutive body-direction outcomes a loop entry can count (6-bit counters).
pub const LOOP_MAX_TRIP: u8 = 63;

/// Consecutive repeats of the same trip count after which a loop entry predicts.
pub const LOOP_CONFIDENT: u8 = 2;

/// Saturation value of a loop entry's confidence.
const LOOP_CONF_MAX: u8 = 3;

/// `iter` value meaning "ran past LOOP_MAX_TRIP": the current run is not a trackable loop.
const LOOP_OVERFLOW: u8 = u8::MAX;

/// One loop-predictor entry.
#[derive(Debug, Clone, Copy)]
struct LoopEntry {
    /// Full PC of the branch; `u64::MAX` marks an empty entry.
    tag: u64,
    /// The loop-body direction (taken for a backward loop branch).
    body_taken: bool,
    /// Learned body outcomes before each exit; 0 means none learned.
    trip: u8,
    /// Body outcomes seen since the last exit (or [`LOOP_OVERFLOW`]).
    iter: u8,
    /// How many times in a row `trip` repeated, saturating at [`LOOP_CONF_MAX`].
    conf: u8,
}

impl LoopEntry {
    const EMPTY: LoopEntry = LoopEntry {
        tag: u64::MAX,
        body_taken: true,
        trip: 0,
        iter: 0,
        conf: 0,
    };

    /// The entry's prediction, if it is confident.
    #[inline]
    fn predict(&self) -> Option<bool> {
        (self.trip > 0 && self.conf >= LOOP_CONFIDENT && self.iter != LOOP_OVERFLOW).then_some(
            if self.iter < self.trip {
                self.body_taken
            } else {
                !self.body_taken
            },
        )
    }

    /// Learns one outcome of its branch.
    #[inline]
    fn update(&mut self, taken: bool) {
        if taken == self.body_taken {
            if self.iter != LOOP_OVERFLOW {
                self.iter = if self.iter < LOOP_MAX_TRIP {
                    self.iter + 1
                } else {
                    LOOP_OVERFLOW
                };
            }
            // Running past the learned trip count means the count changed.
            if self.iter > self.trip {
                self.conf = 0;
            }
        } else if self.iter == 0 {
            // Two exit-direction outcomes in a row: no loop runs this way round. The entry was
            // allocated on the wrong outcome (e.g. the cold miss of an always-taken start), so
            // take this outcome as the first of a body in the other direction.
            self.body_taken = taken;
            self.iter = 1;
            self.trip = 0;
            self.conf = 0;
        } else {
            if self.iter == LOOP_OVERFLOW {
                self.trip = 0;
                self.conf = 0;
            } else if self.iter == self.trip {
                self.conf = (self.conf + 1).min(LOOP_CONF_MAX);
            } else {
                self.trip = self.iter;
                self.conf = 0;
            }
            self.iter = 0;
        }
    }
}

/// One tagged global-predictor entry.
#[derive(Debug, Clone, Copy)]
struct GlobalEntry {
    valid: bool,
    tag: u16,
    counter: u8,
}

/// Loop predictor + tagged path-history global predictor + bimodal fallback + BTB.
#[derive(Debug, Clone)]
pub struct PentiumM {
    loops: Vec<LoopEntry>,
    loop_bits: u32,
    global: Vec<GlobalEntry>,
    global_bits: u32,
    bimodal: CounterTable,
    /// Path history: hashed PCs of recent taken branches.
    path: u64,
    path_mask: u64,
    targets: TargetPredictor,
}

impl PentiumM {
    /// Builds the predictor with the given table sizes (powers of two) and `history_bits`
    /// (1..=64) of path history. Every counter starts weakly not-taken, every entry empty.
    pub fn new(
        global_entries: u32,
        bimodal_entries: u32,
        loop_entries: u32,
        btb_entries: u32,
        history_bits: u32,
    ) -> PentiumM {
        PentiumM {
            loops: vec![LoopEntry::EMPTY; loop_entries as usize],
            loop_bits: table_bits("pentium-m loop_entries", loop_entries),
            global: vec![
                GlobalEntry {
                    valid: false,
                    tag: 0,
                    counter: 1,
                };
                global_entries as usize
            ],
            global_bits: table_bits("pentium-m global_entries", global_entries),
            bimodal: CounterTable::new("pentium-m bimodal_entries", bimodal_entries, 2),
            path: 0,
            path_mask: low_mask(history_len("pentium-m history_bits", history_bits)),
            targets: TargetPredictor::new(btb_entries),
        }
    }

    /// The 16-bit partial tag of a global entry: the PC folded to 16 bits.
    #[inline]
    fn global_tag(pc: u64) -> u16 {
        fold(pc, 16) as u16
    }

    /// Records a taken branch in the path history.
    #[inline]
    fn push_path(&mut self, pc: u64) {
        self.path = ((self.path << 2) ^ fold(pc, 16)) & self.path_mask;
    }

    /// Predicts and learns one conditional branch; returns true if mispredicted.
    fn conditional(&mut self, pc: u64, taken: bool) -> bool {
        let loop_idx = pc_index(pc, self.loop_bits);
        let loop_hit = self.loops[loop_idx].tag == pc;
        let loop_pred = if loop_hit {
            self.loops[loop_idx].predict()
        } else {
            None
        };

        let global_idx =
            pc_index(pc, self.global_bits) ^ fold(self.path, self.global_bits) as usize;
        let tag = Self::global_tag(pc);
        let g = self.global[global_idx];
        let global_hit = g.valid && g.tag == tag;
        let global_pred = global_hit.then_some(g.counter >= 2);

        let bimodal_idx = pc_index(pc, self.bimodal.bits());
        let bimodal_pred = self.bimodal.predict(bimodal_idx);

        let predicted = loop_pred.or(global_pred).unwrap_or(bimodal_pred);
        let wrong = predicted != taken;

        // Loop predictor.
        let entry = &mut self.loops[loop_idx];
        if loop_hit {
            if loop_pred.is_some_and(|p| p != taken) {
                entry.conf = 0;
            }
            entry.update(taken);
        } else if wrong {
            if entry.tag == LoopEntry::EMPTY.tag || entry.conf == 0 {
                *entry = LoopEntry {
                    tag: pc,
                    body_taken: !taken,
                    ..LoopEntry::EMPTY
                };
            } else {
                entry.conf -= 1;
            }
        }

        // Global predictor.
        let g = &mut self.global[global_idx];
        if global_hit {
            if taken {
                g.counter = (g.counter + 1).min(3);
            } else {
                g.counter = g.counter.saturating_sub(1);
            }
        } else if bimodal_pred != taken {
            *g = GlobalEntry {
                valid: true,
                tag,
                counter: if taken { 2 } else { 1 },
            };
        }

        self.bimodal.update(bimodal_idx, taken);
        if taken {
            self.push_path(pc);
        }
        wrong
    }
}

impl BranchPredictor for PentiumM {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        match kind {
            BranchKind::None => false,
            BranchKind::Conditional => self.conditional(pc, taken),
            _ => {
                // Every unconditional branch is taken and so part of the path.
                self.push_path(pc);
                self.targets.predict_and_update(pc, kind, target)
            }
        }
    }

    #[inline]
    fn note_call(&mut self, return_addr: u64) {
        self.targets.note_call(return_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loop_entry() -> LoopEntry {
        LoopEntry {
            tag: 0x40,
            body_taken: true,
            ..LoopEntry::EMPTY
        }
    }

    /// Feeds `runs` loop executions of `body` taken outcomes and one exit.
    fn feed(e: &mut LoopEntry, body: u32, runs: u32) {
        for _ in 0..runs {
            for _ in 0..body {
                e.update(true);
            }
            e.update(false);
        }
    }

    #[test]
    fn loop_entry_predicts_after_the_trip_count_repeats() {
        let mut e = loop_entry();
        feed(&mut e, 9, 1);
        assert_eq!(e.predict(), None, "trip count seen once");
        feed(&mut e, 9, 1);
        assert_eq!(e.predict(), None, "confidence 1 is below LOOP_CONFIDENT");
        feed(&mut e, 9, 1);
        for _ in 0..9 {
            assert_eq!(e.predict(), Some(true));
            e.update(true);
        }
        assert_eq!(e.predict(), Some(false), "the exit is predicted");
    }

    #[test]
    fn loop_entry_gives_up_on_a_changed_trip_count() {
        let mut e = loop_entry();
        feed(&mut e, 5, 4);
        assert!(e.predict().is_some());
        feed(&mut e, 7, 1);
        assert_eq!(e.predict(), None);
    }

    /// The boundary of the 6-bit counters: 63 body iterations are tracked, 64 are not.
    #[test]
    fn loop_entry_tracks_up_to_the_maximum_trip_count() {
        let mut e = loop_entry();
        feed(&mut e, LOOP_MAX_TRIP as u32, 4);
        assert_eq!(e.trip, LOOP_MAX_TRIP);
        assert!(e.predict().is_some());

        let mut e = loop_entry();
        feed(&mut e, LOOP_MAX_TRIP as u32 + 1, 4);
        assert_eq!(e.predict(), None);
    }

    /// Regression: an always-taken start gives a cold miss on a taken outcome, which allocates
    /// the entry with the body direction "not taken". The entry must turn round on the next
    /// taken outcome, or it never learns the loop.
    #[test]
    fn loop_entry_allocated_the_wrong_way_round_turns_round() {
        let mut e = LoopEntry {
            tag: 0x40,
            body_taken: false,
            ..LoopEntry::EMPTY
        };
        e.update(true);
        e.update(true);
        e.update(false);
        assert!(e.body_taken);
        feed(&mut e, 2, 3);
        assert_eq!(e.trip, 2);
        assert_eq!(e.predict(), Some(true));
    }

    /// Branch B repeats the random outcome of branch A just before it. Only the global
    /// predictor can know B: A's outcome decides whether A's PC entered the path history.
    #[test]
    fn global_predictor_captures_correlation_through_the_path() {
        let mut p = PentiumM::new(2048, 4096, 128, 2048, 15);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut wrong_b = 0;
        for i in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = x & 1 == 1;
            p.predict_and_update(0x2000, BranchKind::Conditional, a, 0x2100);
            let w = p.predict_and_update(0x2040, BranchKind::Conditional, a, 0x2100);
            if i >= 1000 {
                wrong_b += w as u32;
            }
        }
        assert!(wrong_b < 40, "missed {wrong_b} of 4000 correlated branches");
    }
}
