//! The gshare predictor (McFarling, 1993): 2-bit counters indexed by PC XOR the global
//! history of conditional-branch outcomes, so a branch can learn patterns that depend on its
//! own recent past and on its neighbours' (a loop of N iterations is learned when the history
//! holds at least N - 1 outcomes of it). A history longer than the index is folded in.

use serde::{Deserialize, Serialize};

use super::{
    BranchPredictor, CounterTable, DEFAULT_BTB_ENTRIES, OutcomeHistory, Params, TargetPredictor,
    fold, pc_index,
};
use sim_frontend::model::BranchKind;

/// The settings of `type = "gshare"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GshareConfig {
    /// 2-bit counters in the table (a power of two).
    pub entries: u32,
    /// Bits of global outcome history (1 to 64).
    pub history_bits: u32,
}

impl Default for GshareConfig {
    /// 16 K counters indexed by 14 bits of PC XOR 14 bits of history (McFarling's gshare).
    fn default() -> Self {
        GshareConfig {
            entries: 16384,
            history_bits: 14,
        }
    }
}

impl GshareConfig {
    /// Visits each parameter with its rule.
    pub(crate) fn check(&self, p: &mut Params) {
        p.pow2("entries", self.entries);
        p.history_bits("history_bits", self.history_bits);
    }
}

/// 2-bit counters indexed by PC XOR global outcome history.
#[derive(Debug, Clone)]
pub struct Gshare {
    counters: CounterTable,
    history: OutcomeHistory,
    targets: TargetPredictor,
}

impl Gshare {
    /// `entries` counters (a power of two), `history_bits` (1..=64) of global history and a
    /// [`DEFAULT_BTB_ENTRIES`]-entry BTB.
    pub fn new(cfg: &GshareConfig) -> Gshare {
        Gshare {
            counters: CounterTable::new("gshare entries", cfg.entries, 2),
            history: OutcomeHistory::new("gshare history_bits", cfg.history_bits),
            targets: TargetPredictor::new(DEFAULT_BTB_ENTRIES),
        }
    }
}

impl BranchPredictor for Gshare {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        if kind == BranchKind::Conditional {
            let bits = self.counters.bits();
            let idx = pc_index(pc, bits) ^ fold(self.history.value(), bits) as usize;
            let predicted = self.counters.predict(idx);
            self.counters.update(idx, taken);
            self.history.push(taken);
            return predicted != taken;
        }
        self.targets.predict_and_update(pc, kind, target)
    }

    #[inline]
    fn note_call(&mut self, return_addr: u64) {
        self.targets.note_call(return_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpred::{Bimodal, BimodalConfig};

    /// Branch B repeats the random outcome of branch A just before it: only a predictor that
    /// sees global history can know B. Over 5,000 pairs, gshare gets B right after warm-up
    /// while bimodal is left at a coin toss.
    #[test]
    fn global_history_captures_correlation_between_branches() {
        fn run(p: &mut dyn BranchPredictor) -> u32 {
            let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15u64);
            let mut wrong_b = 0;
            for i in 0..5000 {
                let x = next();
                let a = x & 1 == 1;
                p.predict_and_update(0x2000, BranchKind::Conditional, a, 0x2100);
                let w = p.predict_and_update(0x2040, BranchKind::Conditional, a, 0x2100);
                if i >= 500 {
                    wrong_b += w as u32;
                }
            }
            wrong_b
        }
        let g = run(&mut Gshare::new(&GshareConfig {
            entries: 4096,
            history_bits: 12,
        }));
        let b = run(&mut Bimodal::new(&BimodalConfig { entries: 4096 }));
        assert!(g < 45, "gshare missed {g} of 4500 correlated branches");
        assert!(
            b > 1800,
            "bimodal missed only {b} of 4500 correlated branches"
        );
    }
}
