//! The tournament predictor in the style of the Alpha 21264 (Kessler, IEEE Micro 1999): a
//! local predictor (per-branch history registers indexing 3-bit counters), a global predictor
//! (2-bit counters indexed gshare-style by PC XOR global outcome history) and a chooser
//! (2-bit counters indexed by global history) that learns, per global context, which of the
//! two to believe. The 21264 indexes its global table by history alone; XOR-ing in the PC is
//! the "gshare-like" variant, which separates branches that share a history.

use serde::{Deserialize, Serialize};

use super::{
    BranchPredictor, CounterTable, DEFAULT_BTB_ENTRIES, OutcomeHistory, Params, TargetPredictor,
    fold, history_len, low_mask, pc_index, table_bits,
};
use sim_frontend::model::BranchKind;

/// The settings of `type = "tournament"`. Every table size is a power of two, every history
/// length 1 to 64 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TournamentConfig {
    /// Per-branch local history registers (indexed by PC).
    pub local_history_entries: u32,
    /// Bits in each local history register.
    pub local_history_bits: u32,
    /// 3-bit counters of the local predictor (indexed by local history).
    pub local_entries: u32,
    /// 2-bit counters of the global predictor (indexed by PC XOR global history).
    pub global_entries: u32,
    /// Bits of global outcome history.
    pub history_bits: u32,
    /// 2-bit counters of the chooser (indexed by global history).
    pub chooser_entries: u32,
}

impl Default for TournamentConfig {
    /// The Alpha 21264 tournament predictor (Kessler, IEEE Micro 1999).
    fn default() -> Self {
        TournamentConfig {
            local_history_entries: 1024,
            local_history_bits: 10,
            local_entries: 1024,
            global_entries: 4096,
            history_bits: 12,
            chooser_entries: 4096,
        }
    }
}

impl TournamentConfig {
    /// Visits each parameter with its rule.
    pub(crate) fn check(&self, p: &mut Params) {
        p.pow2("local_history_entries", self.local_history_entries);
        p.history_bits("local_history_bits", self.local_history_bits);
        p.pow2("local_entries", self.local_entries);
        p.pow2("global_entries", self.global_entries);
        p.history_bits("history_bits", self.history_bits);
        p.pow2("chooser_entries", self.chooser_entries);
    }
}

/// Local + global predictors with a chooser.
#[derive(Debug, Clone)]
pub struct Tournament {
    /// Per-branch outcome histories, newest in bit 0, indexed by PC.
    local_histories: Vec<u64>,
    local_history_index_bits: u32,
    local_history_bits: u32,
    /// 3-bit counters indexed by local history (PC bits above it when the table is larger).
    local: CounterTable,
    /// 2-bit counters indexed by PC XOR global history.
    global: CounterTable,
    /// 2-bit counters indexed by global history; taken means "believe the global predictor".
    chooser: CounterTable,
    history: OutcomeHistory,
    targets: TargetPredictor,
}

impl Tournament {
    /// Builds the predictor with the given table sizes (powers of two) and history lengths
    /// (1..=64 bits), plus a [`DEFAULT_BTB_ENTRIES`]-entry BTB. The chooser starts weakly
    /// preferring the local predictor; every counter starts weakly not-taken.
    pub fn new(cfg: &TournamentConfig) -> Tournament {
        let TournamentConfig {
            local_history_entries,
            local_history_bits,
            local_entries,
            global_entries,
            history_bits,
            chooser_entries,
        } = *cfg;
        Tournament {
            local_histories: vec![0; local_history_entries as usize],
            local_history_index_bits: table_bits(
                "tournament local_history_entries",
                local_history_entries,
            ),
            local_history_bits: history_len("tournament local_history_bits", local_history_bits),
            local: CounterTable::new("tournament local_entries", local_entries, 3),
            global: CounterTable::new("tournament global_entries", global_entries, 2),
            chooser: CounterTable::new("tournament chooser_entries", chooser_entries, 2),
            history: OutcomeHistory::new("tournament history_bits", history_bits),
            targets: TargetPredictor::new(DEFAULT_BTB_ENTRIES),
        }
    }

    /// Index of the local counter: the branch's local history, with PC bits above it when
    /// the table has more entries than the history has patterns (the 21264's 1024-entry
    /// table with 10-bit histories is indexed by history alone).
    #[inline]
    fn local_index(&self, pc: u64, local_history: u64) -> usize {
        let bits = self.local.bits();
        let pc_part = (pc_index(pc, bits) as u64)
            .checked_shl(self.local_history_bits)
            .unwrap_or(0);
        ((fold(local_history, bits) ^ pc_part) & low_mask(bits)) as usize
    }
}

impl BranchPredictor for Tournament {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        if kind != BranchKind::Conditional {
            return self.targets.predict_and_update(pc, kind, target);
        }
        let lh_slot = pc_index(pc, self.local_history_index_bits);
        let local_history = self.local_histories[lh_slot];
        let local_idx = self.local_index(pc, local_history);
        let ghist = self.history.value();
        let global_idx =
            pc_index(pc, self.global.bits()) ^ fold(ghist, self.global.bits()) as usize;
        let chooser_idx = fold(ghist, self.chooser.bits()) as usize;

        let local_pred = self.local.predict(local_idx);
        let global_pred = self.global.predict(global_idx);
        let use_global = self.chooser.predict(chooser_idx);
        let predicted = if use_global { global_pred } else { local_pred };

        // The chooser learns only when the two disagree: then exactly one of them was right.
        if local_pred != global_pred {
            self.chooser.update(chooser_idx, global_pred == taken);
        }
        self.local.update(local_idx, taken);
        self.global.update(global_idx, taken);
        self.local_histories[lh_slot] =
            ((local_history << 1) | taken as u64) & low_mask(self.local_history_bits);
        self.history.push(taken);
        predicted != taken
    }

    #[inline]
    fn note_call(&mut self, return_addr: u64) {
        self.targets.note_call(return_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpred::{Gshare, GshareConfig};

    /// Branch A alternates, but between two executions of A run 16 always-taken branches,
    /// more than the 12 bits of global history: A's own past is visible only to the local
    /// predictor, and the global predictor sees one constant history. The chooser must learn
    /// to believe the local predictor for A; gshare alone is left with one counter facing an
    /// alternation (wrong at least half the time).
    #[test]
    fn chooser_picks_the_local_predictor_for_a_locally_periodic_branch() {
        fn run(p: &mut dyn BranchPredictor) -> u32 {
            let mut wrong_a = 0;
            for i in 0..4000 {
                for j in 0..16u64 {
                    p.predict_and_update(0x5000 + 8 * j, BranchKind::Conditional, true, 0);
                }
                let w = p.predict_and_update(0x4000, BranchKind::Conditional, i % 2 == 0, 0);
                if i >= 1000 {
                    wrong_a += w as u32;
                }
            }
            wrong_a
        }
        let t = run(&mut Tournament::new(&TournamentConfig::default()));
        let g = run(&mut Gshare::new(&GshareConfig {
            entries: 4096,
            history_bits: 12,
        }));
        assert_eq!(t, 0, "tournament missed {t} of 3000 executions of A");
        assert!(g >= 1500, "gshare missed only {g} of 3000 executions of A");
    }
}
