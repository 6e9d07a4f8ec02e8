//! A Pentium M-like hybrid predictor, designed from the public descriptions of that core
//! (Gochman et al., "The Intel Pentium M Processor: Microarchitecture and Performance",
//! Intel Technology Journal 7(2), 2003; Uzelac & Milenković, "Experiment Flows and
//! Microbenchmarks for Reverse Engineering of Branch Predictor Structures", ISPASS 2009).
//! Those give the structure, not every detail; the choices below are isim's own.
//!
//! Three direction components, consulted in priority order:
//! 1. A **loop predictor** (`loop_entries`, direct-mapped, fully tagged; the table
//!    `loop_pred.rs` describes, shared with TAGE). Its iteration counters are 6 bits wide
//!    ([`LOOP_COUNT_BITS`]), so it handles loops of up to 63 body outcomes + 1 exit (64
//!    executions); longer runs make the entry give up. A confident entry overrides the
//!    others.
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

use serde::{Deserialize, Serialize};

use super::loop_pred::LoopTable;
use super::{
    BranchPredictor, CounterTable, Params, TargetPredictor, fold, history_len, low_mask, pc_index,
    table_bits,
};
use sim_frontend::model::BranchKind;

/// The settings of `type = "pentium-m"`. Every table size is a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PentiumMConfig {
    /// Entries of the tagged global (path-history) predictor.
    pub global_entries: u32,
    /// 2-bit counters of the bimodal fallback table.
    pub bimodal_entries: u32,
    /// Entries of the loop predictor.
    pub loop_entries: u32,
    /// Entries of the branch target buffer for indirect branches.
    pub btb_entries: u32,
    /// Bits of path history (1 to 64).
    pub history_bits: u32,
}

impl Default for PentiumMConfig {
    /// isim's own sizes (the public descriptions give the structure, not all sizes):
    /// 2048-entry global predictor, 4096-entry bimodal table, 128-entry loop predictor,
    /// 2048-entry BTB, 15 bits of hashed path history.
    fn default() -> Self {
        PentiumMConfig {
            global_entries: 2048,
            bimodal_entries: 4096,
            loop_entries: 128,
            btb_entries: 2048,
            history_bits: 15,
        }
    }
}

impl PentiumMConfig {
    /// Visits each parameter with its rule.
    pub(crate) fn check(&self, p: &mut Params) {
        p.pow2("global_entries", self.global_entries);
        p.pow2("bimodal_entries", self.bimodal_entries);
        p.pow2("loop_entries", self.loop_entries);
        p.pow2("btb_entries", self.btb_entries);
        p.history_bits("history_bits", self.history_bits);
    }
}

/// Width of the loop predictor's iteration counters.
const LOOP_COUNT_BITS: u32 = 6;

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
    loops: LoopTable,
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
    pub fn new(cfg: &PentiumMConfig) -> PentiumM {
        let PentiumMConfig {
            global_entries,
            bimodal_entries,
            loop_entries,
            btb_entries,
            history_bits,
        } = *cfg;
        PentiumM {
            loops: LoopTable::new("pentium-m loop_entries", loop_entries, LOOP_COUNT_BITS),
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
        let loop_look = self.loops.lookup(pc);

        let global_idx =
            pc_index(pc, self.global_bits) ^ fold(self.path, self.global_bits) as usize;
        let tag = Self::global_tag(pc);
        let g = self.global[global_idx];
        let global_hit = g.valid && g.tag == tag;
        let global_pred = global_hit.then_some(g.counter >= 2);

        let bimodal_idx = pc_index(pc, self.bimodal.bits());
        let bimodal_pred = self.bimodal.predict(bimodal_idx);

        let predicted = loop_look.pred.or(global_pred).unwrap_or(bimodal_pred);
        let wrong = predicted != taken;

        self.loops.update(pc, loop_look, taken, wrong);

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

    /// Branch B repeats the random outcome of branch A just before it. Only the global
    /// predictor can know B: A's outcome decides whether A's PC entered the path history.
    #[test]
    fn global_predictor_captures_correlation_through_the_path() {
        let mut p = PentiumM::new(&PentiumMConfig::default());
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut wrong_b = 0;
        for i in 0..5000 {
            let x = next();
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
