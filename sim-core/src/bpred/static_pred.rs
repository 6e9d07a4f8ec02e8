//! The static predictor: backward conditional branches (loops) are predicted taken, forward
//! ones not taken, with no learned direction state. Indirect branches and returns still use
//! the shared BTB and return-address stack, so "static" changes only the direction half.

use super::{BranchPredictor, DEFAULT_BTB_ENTRIES, TargetPredictor};
use sim_frontend::model::BranchKind;

/// Backward taken, forward not taken (BTFN).
#[derive(Debug, Clone)]
pub struct StaticPredictor {
    targets: TargetPredictor,
}

impl StaticPredictor {
    /// A static predictor with a [`DEFAULT_BTB_ENTRIES`]-entry BTB.
    pub fn new() -> StaticPredictor {
        StaticPredictor {
            targets: TargetPredictor::new(DEFAULT_BTB_ENTRIES),
        }
    }
}

impl Default for StaticPredictor {
    fn default() -> Self {
        StaticPredictor::new()
    }
}

impl BranchPredictor for StaticPredictor {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        if kind == BranchKind::Conditional {
            // A branch to itself is the tightest loop there is, so "backward" includes it.
            let predicted = target <= pc;
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

    #[test]
    fn direction_follows_the_sign_of_the_displacement() {
        let mut p = StaticPredictor::new();
        let c = BranchKind::Conditional;
        // Backward (and self) targets: taken is right, not-taken wrong.
        assert!(!p.predict_and_update(0x100, c, true, 0x80));
        assert!(!p.predict_and_update(0x100, c, true, 0x100));
        assert!(p.predict_and_update(0x100, c, false, 0x80));
        // Forward targets: the reverse.
        assert!(!p.predict_and_update(0x100, c, false, 0x101));
        assert!(p.predict_and_update(0x100, c, true, 0x180));
    }
}
