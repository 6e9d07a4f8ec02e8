//! The bimodal predictor (Smith, 1981): one 2-bit saturating counter per table entry,
//! indexed by PC, so each branch learns its own bias and nothing else. It is the baseline
//! the history-based predictors are measured against, and its table is the fallback of the
//! Pentium M model.

use serde::{Deserialize, Serialize};

use super::{
    BranchPredictor, CounterTable, DEFAULT_BTB_ENTRIES, Params, TargetPredictor, pc_index,
};
use sim_frontend::model::BranchKind;

/// The settings of `type = "bimodal"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BimodalConfig {
    /// 2-bit counters in the table, indexed by PC (a power of two).
    pub entries: u32,
}

impl Default for BimodalConfig {
    fn default() -> Self {
        BimodalConfig { entries: 4096 }
    }
}

impl BimodalConfig {
    /// Visits each parameter with its rule.
    pub(crate) fn check(&self, p: &mut Params) {
        p.pow2("entries", self.entries);
    }
}

/// 2-bit counters indexed by PC, starting weakly not-taken.
#[derive(Debug, Clone)]
pub struct Bimodal {
    counters: CounterTable,
    targets: TargetPredictor,
}

impl Bimodal {
    /// `entries` counters (a power of two) and a [`DEFAULT_BTB_ENTRIES`]-entry BTB.
    pub fn new(cfg: &BimodalConfig) -> Bimodal {
        Bimodal {
            counters: CounterTable::new("bimodal entries", cfg.entries, 2),
            targets: TargetPredictor::new(DEFAULT_BTB_ENTRIES),
        }
    }
}

impl BranchPredictor for Bimodal {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        if kind == BranchKind::Conditional {
            let idx = pc_index(pc, self.counters.bits());
            let predicted = self.counters.predict(idx);
            self.counters.update(idx, taken);
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

    /// Two branches of opposite bias share a counter only when they alias; in a table large
    /// enough to separate them each is learned perfectly, in a one-entry table they fight.
    #[test]
    fn aliasing_branches_interfere_only_when_they_share_a_counter() {
        let run = |entries: u32| {
            let mut p = Bimodal::new(&BimodalConfig { entries });
            let mut wrong = 0;
            for i in 0..1000 {
                let a = p.predict_and_update(0x1000, BranchKind::Conditional, true, 0x800);
                let b = p.predict_and_update(0x1001, BranchKind::Conditional, false, 0x800);
                if i >= 10 {
                    wrong += a as u32 + b as u32;
                }
            }
            wrong
        };
        assert_eq!(run(1024), 0);
        // One counter oscillating between 1 and 2: the taken branch sees 1 (wrong), the
        // not-taken one sees 2 (wrong).
        assert_eq!(run(1), 2 * 990);
    }
}
