//! The loop predictor shared by the Pentium M model and TAGE (L-TAGE's loop component):
//! a direct-mapped table, fully tagged with the branch PC, whose entries count how many times
//! their branch went the loop-body direction in a row before going the other way once (the
//! exit). When the same trip count repeats [`LOOP_CONFIDENT`] times in a row the entry
//! predicts the exit exactly, however long the loop and whatever other branches its body
//! holds, which no history-indexed table can do for loops longer than its history.
//!
//! Each table has its own counter width: a run of more body outcomes than the counters hold
//! makes the entry give up until the next exit. An entry is allocated when a conditional
//! branch without one is mispredicted (a loop branch is mispredicted at its exit, so the
//! allocation takes the body direction to be the opposite of that outcome; two exit-direction
//! outcomes in a row turn the entry round). An entry with confidence is not replaced at once:
//! a conflicting allocation first ages it.
//!
//! Each entry also keeps a small *trust* counter for predictors that consult it next to
//! another component (TAGE): the caller reports every time the confident entry and the other
//! component disagreed, and whether the entry was the one that was right; the entry is
//! trusted while it has been right at least as often as wrong there. A branch whose outcomes
//! merely look like a loop for a while (a "taken every third time" pattern restarted every
//! 16 iterations, say) thus stops overriding a component that predicts it correctly, without
//! silencing the real loops around it.

use super::{pc_index, table_bits};

/// Consecutive repeats of the same trip count after which a loop entry predicts.
pub(crate) const LOOP_CONFIDENT: u8 = 2;

/// Saturation value of a loop entry's confidence.
const LOOP_CONF_MAX: u8 = 3;

/// Bounds of an entry's 4-bit trust counter.
const TRUST_MIN: i8 = -8;
const TRUST_MAX: i8 = 7;

/// `iter` value meaning "ran past the table's maximum trip count": the current run is not a
/// trackable loop.
const LOOP_OVERFLOW: u16 = u16::MAX;

/// One loop-predictor entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopEntry {
    /// Full PC of the branch; `u64::MAX` marks an empty entry.
    pub(crate) tag: u64,
    /// The loop-body direction (taken for a backward loop branch).
    pub(crate) body_taken: bool,
    /// Learned body outcomes before each exit; 0 means none learned.
    pub(crate) trip: u16,
    /// Body outcomes seen since the last exit (or [`LOOP_OVERFLOW`]).
    pub(crate) iter: u16,
    /// How many times in a row `trip` repeated, saturating at [`LOOP_CONF_MAX`].
    pub(crate) conf: u8,
    /// Right minus wrong where the entry's prediction and another component's differed,
    /// saturating within `TRUST_MIN..=TRUST_MAX`.
    pub(crate) trust: i8,
}

impl LoopEntry {
    pub(crate) const EMPTY: LoopEntry = LoopEntry {
        tag: u64::MAX,
        body_taken: true,
        trip: 0,
        iter: 0,
        conf: 0,
        trust: 0,
    };

    /// The entry's prediction, if it is confident.
    #[inline]
    pub(crate) fn predict(&self) -> Option<bool> {
        (self.trip > 0 && self.conf >= LOOP_CONFIDENT && self.iter != LOOP_OVERFLOW).then_some(
            if self.iter < self.trip {
                self.body_taken
            } else {
                !self.body_taken
            },
        )
    }

    /// Learns one outcome of its branch; runs of more than `max_trip` body outcomes overflow.
    #[inline]
    pub(crate) fn update(&mut self, taken: bool, max_trip: u16) {
        if taken == self.body_taken {
            if self.iter != LOOP_OVERFLOW {
                self.iter = if self.iter < max_trip {
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

/// What a lookup found, carried from prediction to update of the same branch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopLookup {
    idx: usize,
    hit: bool,
    /// The entry's prediction when it hit and is confident.
    pub(crate) pred: Option<bool>,
    /// Whether the entry has earned the right to override another component.
    pub(crate) trusted: bool,
}

/// A direct-mapped table of [`LoopEntry`]s with `count_bits`-bit iteration counters.
#[derive(Debug, Clone)]
pub(crate) struct LoopTable {
    entries: Vec<LoopEntry>,
    bits: u32,
    max_trip: u16,
}

impl LoopTable {
    /// `entries` (a power of two) empty entries counting up to `2^count_bits - 1` body
    /// outcomes, so loops of up to `2^count_bits` executions (exit included) are predicted.
    pub(crate) fn new(what: &str, entries: u32, count_bits: u32) -> LoopTable {
        assert!(
            (1..16).contains(&count_bits),
            "loop counters of {count_bits} bits"
        );
        LoopTable {
            entries: vec![LoopEntry::EMPTY; entries as usize],
            bits: table_bits(what, entries),
            max_trip: ((1u32 << count_bits) - 1) as u16,
        }
    }

    /// Most body outcomes an entry can count.
    #[cfg(test)]
    pub(crate) fn max_trip(&self) -> u16 {
        self.max_trip
    }

    /// The entry of `pc` and its prediction, if any.
    #[inline]
    pub(crate) fn lookup(&self, pc: u64) -> LoopLookup {
        let idx = pc_index(pc, self.bits);
        let entry = &self.entries[idx];
        let hit = entry.tag == pc;
        LoopLookup {
            idx,
            hit,
            pred: if hit { entry.predict() } else { None },
            trusted: hit && entry.trust >= 0,
        }
    }

    /// Records that the entry `look` found predicted `look.pred` while another component
    /// predicted the opposite, and whether the entry was the one that was right. Call it
    /// before [`LoopTable::update`] for the same branch.
    #[inline]
    pub(crate) fn record_disagreement(&mut self, look: LoopLookup, loop_right: bool) {
        if look.hit {
            let t = &mut self.entries[look.idx].trust;
            *t = if loop_right {
                (*t + 1).min(TRUST_MAX)
            } else {
                (*t - 1).max(TRUST_MIN)
            };
        }
    }

    /// Learns the outcome of the branch `look` was made for. `mispredicted` says whether the
    /// predictor as a whole was wrong: only then does a branch without an entry get one.
    #[inline]
    pub(crate) fn update(&mut self, pc: u64, look: LoopLookup, taken: bool, mispredicted: bool) {
        let entry = &mut self.entries[look.idx];
        if look.hit {
            if look.pred.is_some_and(|p| p != taken) {
                entry.conf = 0;
            }
            entry.update(taken, self.max_trip);
        } else if mispredicted {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Pentium M model's 6-bit counters.
    const SIX_BIT_MAX: u16 = 63;

    fn loop_entry() -> LoopEntry {
        LoopEntry {
            tag: 0x40,
            body_taken: true,
            ..LoopEntry::EMPTY
        }
    }

    /// Feeds `runs` loop executions of `body` taken outcomes and one exit.
    fn feed(e: &mut LoopEntry, body: u32, runs: u32, max_trip: u16) {
        for _ in 0..runs {
            for _ in 0..body {
                e.update(true, max_trip);
            }
            e.update(false, max_trip);
        }
    }

    #[test]
    fn loop_entry_predicts_after_the_trip_count_repeats() {
        let mut e = loop_entry();
        feed(&mut e, 9, 1, SIX_BIT_MAX);
        assert_eq!(e.predict(), None, "trip count seen once");
        feed(&mut e, 9, 1, SIX_BIT_MAX);
        assert_eq!(e.predict(), None, "confidence 1 is below LOOP_CONFIDENT");
        feed(&mut e, 9, 1, SIX_BIT_MAX);
        for _ in 0..9 {
            assert_eq!(e.predict(), Some(true));
            e.update(true, SIX_BIT_MAX);
        }
        assert_eq!(e.predict(), Some(false), "the exit is predicted");
    }

    #[test]
    fn loop_entry_gives_up_on_a_changed_trip_count() {
        let mut e = loop_entry();
        feed(&mut e, 5, 4, SIX_BIT_MAX);
        assert!(e.predict().is_some());
        feed(&mut e, 7, 1, SIX_BIT_MAX);
        assert_eq!(e.predict(), None);
    }

    /// The boundary of the counters: with 6 bits 63 body iterations are tracked, 64 are not;
    /// with 10 bits (TAGE's) 1023 are.
    #[test]
    fn loop_entry_tracks_up_to_the_maximum_trip_count() {
        let mut e = loop_entry();
        feed(&mut e, SIX_BIT_MAX as u32, 4, SIX_BIT_MAX);
        assert_eq!(e.trip, SIX_BIT_MAX);
        assert!(e.predict().is_some());

        let mut e = loop_entry();
        feed(&mut e, SIX_BIT_MAX as u32 + 1, 4, SIX_BIT_MAX);
        assert_eq!(e.predict(), None);

        let ten = LoopTable::new("t", 1, 10).max_trip();
        assert_eq!(ten, 1023);
        let mut e = loop_entry();
        feed(&mut e, ten as u32, 4, ten);
        assert_eq!(e.trip, ten);
        assert!(e.predict().is_some());
        let mut e = loop_entry();
        feed(&mut e, ten as u32 + 1, 4, ten);
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
        e.update(true, SIX_BIT_MAX);
        e.update(true, SIX_BIT_MAX);
        e.update(false, SIX_BIT_MAX);
        assert!(e.body_taken);
        feed(&mut e, 2, 3, SIX_BIT_MAX);
        assert_eq!(e.trip, 2);
        assert_eq!(e.predict(), Some(true));
    }

    /// Trust drops with each disagreement the entry loses and comes back with each it wins;
    /// a new allocation starts trusted.
    #[test]
    fn trust_follows_the_disagreements_and_resets_on_allocation() {
        let mut t = LoopTable::new("t", 1, 6);
        let look = t.lookup(0x40);
        assert!(!look.trusted, "no entry yet");
        t.update(0x40, look, false, true);
        assert!(t.lookup(0x40).trusted);
        t.record_disagreement(t.lookup(0x40), false);
        assert!(!t.lookup(0x40).trusted);
        t.record_disagreement(t.lookup(0x40), true);
        assert!(t.lookup(0x40).trusted);
        for _ in 0..20 {
            t.record_disagreement(t.lookup(0x40), false);
        }
        assert_eq!(t.entries[0].trust, TRUST_MIN);
        let look = t.lookup(0x80);
        t.update(0x80, look, false, true);
        assert!(
            t.lookup(0x80).trusted,
            "replaced: the old entry's conf was 0"
        );
    }

    /// A confident entry is aged, not replaced, by one conflicting allocation.
    #[test]
    fn a_confident_entry_survives_one_conflicting_allocation() {
        let mut t = LoopTable::new("t", 1, 6);
        let (a, b) = (0x40, 0x80);
        for _ in 0..4 {
            for i in 0..6 {
                let look = t.lookup(a);
                t.update(a, look, i != 5, look.pred != Some(i != 5));
            }
        }
        assert!(t.lookup(a).pred.is_some());
        let look = t.lookup(b);
        t.update(b, look, false, true);
        assert!(t.lookup(a).hit, "aged, still there");
        for _ in 0..3 {
            let look = t.lookup(b);
            t.update(b, look, false, true);
        }
        assert!(!t.lookup(a).hit, "replaced once its confidence ran out");
    }
}
