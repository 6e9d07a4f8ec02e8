//! Branch predictors. One trait, [`BranchPredictor`], one file per predictor, and the
//! [`Predictor`] enum that the config selects through [`build`], so the per-branch call is a
//! `match`, not a virtual call. The parts every predictor shares — the return-address stack,
//! the branch target buffer, tables of saturating counters, history registers and the index
//! hashes — live here, and the loop predictor of the Pentium M model and TAGE lives in
//! `loop_pred.rs`, so no predictor copies another's code.
//!
//! Contract (every implementation):
//! * `predict_and_update` is called once per executed branch of one hardware thread, in
//!   program order. It forms its prediction from its own state, `pc` and `kind` only — never
//!   from `taken` or `target`, which it may read only afterwards, to learn — and returns true
//!   iff that prediction was wrong.
//! * Conditional branches are judged on direction only. Their `target` is the branch's
//!   *static* taken target (`StaticInst::target`), passed whether or not the branch was taken;
//!   only the static predictor looks at it.
//! * Direct jumps and direct calls are never mispredicted: their target is in the instruction
//!   and the front end knows it. They may still update state (path history).
//! * Indirect jumps and calls are predicted by a direct-mapped, fully tagged branch target
//!   buffer holding the last target per PC ([`DEFAULT_BTB_ENTRIES`] entries, except for the
//!   Pentium M model, which sizes its own); they are mispredicted iff the buffer has no entry
//!   for the PC or its target differs from `target`.
//! * Returns are predicted by a [`RAS_ENTRIES`]-entry return-address stack and are
//!   mispredicted iff the popped address differs from `target` (an empty stack mispredicts).
//!   The predictor does not know instruction sizes, so the core calls
//!   [`BranchPredictor::note_call`] with the fall-through address (`pc + size`) for every
//!   direct and indirect call, before or after that call's `predict_and_update` (calls do not
//!   pop, so the order does not matter). `predict_and_update` itself never pushes.
//! * `BranchKind::None` is answered `false` and changes nothing.
//! * No allocation after [`build`], no randomness: the same branch stream gives the same
//!   answers. Tables are flat `Vec`s sized at build time; every size is a power of two and
//!   every history length is 1..=64 bits, except TAGE's geometric history lengths, which
//!   reach [`TAGE_MAX_HISTORY`] outcomes in a circular buffer. Each predictor's settings
//!   state these rules beside their fields ([`BpredConfig::check`]); the isim config layer
//!   reports every violation, and [`build`] refuses one with a [`ParamError`].
//!
//! Settings: [`BpredConfig`] is the one definition of a predictor's parameters. Each
//! predictor's file defines its settings struct (documented fields, `Default`, and a `check`
//! that visits every field with its rule); the isim config layer reads the TOML into it
//! through serde and takes parameter names, defaults and rules from it. Adding a predictor
//! is its own file, a variant of [`BpredConfig`] and of [`Predictor`] here (with their
//! match arms), and `docs/config.md`.

mod bimodal;
mod gshare;
mod loop_pred;
mod pentium_m;
mod static_pred;
mod tage;
mod tournament;

#[cfg(test)]
mod tests;

pub use bimodal::{Bimodal, BimodalConfig};
pub use gshare::{Gshare, GshareConfig};
pub use pentium_m::{PentiumM, PentiumMConfig};
pub use static_pred::StaticPredictor;
pub use tage::{
    TAGE_MAX_HISTORY, TAGE_MAX_TABLES, TAGE_MAX_TAG_BITS, TAGE_MIN_TAG_BITS, Tage, TageConfig,
};
pub use tournament::{Tournament, TournamentConfig};

use std::fmt;

use serde::{Deserialize, Serialize};
use sim_frontend::model::BranchKind;

/// Entries of every predictor's return-address stack. Deeper call chains overwrite the oldest
/// entries, so the outermost returns of a chain deeper than this are mispredicted.
pub const RAS_ENTRIES: usize = 16;

/// Entries of the branch target buffer of the predictors whose config does not size one
/// (static, bimodal, gshare, tournament, TAGE).
pub const DEFAULT_BTB_ENTRIES: u32 = 512;

/// The branch predictor's settings: which predictor (`type` in the TOML's
/// `[branch_predictor]` table, as serde spells it) and that predictor's parameters, each
/// defined with its documentation, default and rule in the predictor's own file. This is the
/// one definition the `isim` config layer reads, validates (through [`BpredConfig::check`])
/// and writes back; adding a predictor is a file, a variant here and the docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum BpredConfig {
    /// Backward taken, forward not taken (compares the static target with the PC); no state.
    Static,
    /// 2-bit counters indexed by PC.
    Bimodal(BimodalConfig),
    /// 2-bit counters indexed by PC XOR global outcome history (McFarling's gshare).
    Gshare(GshareConfig),
    /// Alpha 21264-style: a local-history predictor, a global predictor and a chooser.
    Tournament(TournamentConfig),
    /// Pentium M-like hybrid: loop predictor, tagged global (path-history) predictor and
    /// bimodal fallback, plus its own BTB.
    PentiumM(PentiumMConfig),
    /// TAGE (Seznec & Michaud, JILP 2006) with L-TAGE's loop predictor: a bimodal base
    /// table, tagged tables indexed by geometrically longer global histories, a loop
    /// predictor; the default BTB.
    Tage(TageConfig),
}

impl BpredConfig {
    /// Every predictor with its default settings, in the order the docs list them.
    pub fn all() -> [BpredConfig; 6] {
        [
            BpredConfig::Static,
            BpredConfig::Bimodal(BimodalConfig::default()),
            BpredConfig::Gshare(GshareConfig::default()),
            BpredConfig::Tournament(TournamentConfig::default()),
            BpredConfig::PentiumM(PentiumMConfig::default()),
            BpredConfig::Tage(TageConfig::default()),
        ]
    }

    /// The predictor of type `name` with its default settings, or `None` for an unknown
    /// type.
    pub fn default_of(name: &str) -> Option<BpredConfig> {
        Self::all().into_iter().find(|c| c.type_name() == name)
    }

    /// The predictor's name as the TOML `type` spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            BpredConfig::Static => "static",
            BpredConfig::Bimodal(_) => "bimodal",
            BpredConfig::Gshare(_) => "gshare",
            BpredConfig::Tournament(_) => "tournament",
            BpredConfig::PentiumM(_) => "pentium-m",
            BpredConfig::Tage(_) => "tage",
        }
    }

    /// Runs the predictor's parameter visitor.
    fn visit(&self) -> Params {
        let mut p = Params::default();
        match self {
            BpredConfig::Static => {}
            BpredConfig::Bimodal(c) => c.check(&mut p),
            BpredConfig::Gshare(c) => c.check(&mut p),
            BpredConfig::Tournament(c) => c.check(&mut p),
            BpredConfig::PentiumM(c) => c.check(&mut p),
            BpredConfig::Tage(c) => c.check(&mut p),
        }
        p
    }

    /// The names of this type's parameters (not `type`), in the order the docs list them.
    pub fn param_names(&self) -> Vec<&'static str> {
        self.visit().names
    }

    /// Every rule the settings break, in parameter order (a rule relating several
    /// parameters right after the parameter it is charged to); empty when they are valid.
    pub fn check(&self) -> Vec<ParamError> {
        self.visit().errors
    }
}

/// What is wrong with one parameter of a predictor's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A table size that is not a power of two.
    NotPowerOfTwo,
    /// A history length outside 1 to 64 bits.
    HistoryBits,
    /// A value outside `lo..=hi`.
    OutOfRange {
        /// The smallest allowed value.
        lo: u32,
        /// The largest allowed value.
        hi: u32,
    },
    /// A rule relating the parameter to others, stated in full ("must be at least ...").
    Relation(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotPowerOfTwo => f.write_str("must be a power of two"),
            Problem::HistoryBits => f.write_str("must be between 1 and 64 bits"),
            Problem::OutOfRange { lo, hi } => write!(f, "must be between {lo} and {hi}"),
            Problem::Relation(rule) => f.write_str(rule),
        }
    }
}

/// A parameter that breaks its rule: its name (as the TOML spells it), value and problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter, e.g. `history_bits`.
    pub param: &'static str,
    /// Its value.
    pub value: u32,
    /// What is wrong with it.
    pub problem: Problem,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.param, self.value, self.problem)
    }
}

impl std::error::Error for ParamError {}

/// What a predictor's `check` records as it visits its parameters: their names in order
/// and every broken rule. Each predictor's settings call one method per parameter, so the
/// parameter list and the rules are written once, beside the fields.
#[derive(Debug, Default)]
pub(crate) struct Params {
    names: Vec<&'static str>,
    errors: Vec<ParamError>,
}

impl Params {
    /// Records `param` and, when `ok` is false, `problem`; returns `ok`.
    fn visit(&mut self, param: &'static str, value: u32, ok: bool, problem: Problem) -> bool {
        self.names.push(param);
        if !ok {
            self.errors.push(ParamError {
                param,
                value,
                problem,
            });
        }
        ok
    }

    /// A table size: a nonzero power of two.
    pub(crate) fn pow2(&mut self, param: &'static str, value: u32) -> bool {
        self.visit(
            param,
            value,
            value.is_power_of_two(),
            Problem::NotPowerOfTwo,
        )
    }

    /// A history length: 1 to 64 bits.
    pub(crate) fn history_bits(&mut self, param: &'static str, value: u32) -> bool {
        self.visit(
            param,
            value,
            (1..=64).contains(&value),
            Problem::HistoryBits,
        )
    }

    /// An integer within `lo..=hi`.
    pub(crate) fn range(&mut self, param: &'static str, value: u32, lo: u32, hi: u32) -> bool {
        self.visit(
            param,
            value,
            (lo..=hi).contains(&value),
            Problem::OutOfRange { lo, hi },
        )
    }

    /// A broken rule relating an already visited `param` to others.
    pub(crate) fn relation(&mut self, param: &'static str, value: u32, rule: String) {
        self.errors.push(ParamError {
            param,
            value,
            problem: Problem::Relation(rule),
        });
    }
}

/// A branch predictor of one hardware thread. See the module documentation for the contract.
pub trait BranchPredictor {
    /// Predicts the branch at `pc` of kind `kind`, then learns its real outcome (`taken`,
    /// `target`). Returns true if the prediction was wrong (direction for conditional
    /// branches; target for indirect jumps/calls and returns). For conditional branches
    /// `target` is the static taken target, whether or not the branch was taken.
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool;

    /// Pushes `return_addr` (the call's `pc + size`) on the return-address stack. The core
    /// calls it once for every direct or indirect call.
    fn note_call(&mut self, return_addr: u64);
}

/// The predictor the config chose, held by value so that the per-branch call is a `match`.
/// One per simulated thread, built once: its size (TAGE's folded-history lanes) costs
/// nothing, a box would cost a pointer chase per branch.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Predictor {
    /// Backward taken, forward not taken.
    Static(StaticPredictor),
    /// 2-bit counters indexed by PC.
    Bimodal(Bimodal),
    /// Counters indexed by PC XOR global history.
    Gshare(Gshare),
    /// Local + global + chooser.
    Tournament(Tournament),
    /// Loop + tagged global + bimodal.
    PentiumM(PentiumM),
    /// Bimodal base + geometric-history tagged tables + loop.
    Tage(Tage),
}

/// Builds the predictor `cfg` describes, with every table allocated and reset, or names
/// the first parameter that breaks its rule ([`BpredConfig::check`]; the isim config layer
/// reports them all before this is called).
pub fn build(cfg: &BpredConfig) -> Result<Predictor, ParamError> {
    if let Some(e) = cfg.check().into_iter().next() {
        return Err(e);
    }
    Ok(match cfg {
        BpredConfig::Static => Predictor::Static(StaticPredictor::new()),
        BpredConfig::Bimodal(c) => Predictor::Bimodal(Bimodal::new(c)),
        BpredConfig::Gshare(c) => Predictor::Gshare(Gshare::new(c)),
        BpredConfig::Tournament(c) => Predictor::Tournament(Tournament::new(c)),
        BpredConfig::PentiumM(c) => Predictor::PentiumM(PentiumM::new(c)),
        BpredConfig::Tage(c) => Predictor::Tage(Tage::new(c)),
    })
}

impl BranchPredictor for Predictor {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        match self {
            Predictor::Static(p) => p.predict_and_update(pc, kind, taken, target),
            Predictor::Bimodal(p) => p.predict_and_update(pc, kind, taken, target),
            Predictor::Gshare(p) => p.predict_and_update(pc, kind, taken, target),
            Predictor::Tournament(p) => p.predict_and_update(pc, kind, taken, target),
            Predictor::PentiumM(p) => p.predict_and_update(pc, kind, taken, target),
            Predictor::Tage(p) => p.predict_and_update(pc, kind, taken, target),
        }
    }

    #[inline]
    fn note_call(&mut self, return_addr: u64) {
        match self {
            Predictor::Static(p) => p.note_call(return_addr),
            Predictor::Bimodal(p) => p.note_call(return_addr),
            Predictor::Gshare(p) => p.note_call(return_addr),
            Predictor::Tournament(p) => p.note_call(return_addr),
            Predictor::PentiumM(p) => p.note_call(return_addr),
            Predictor::Tage(p) => p.note_call(return_addr),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared parts.

/// log2 of a table size, which must be a nonzero power of two.
pub(crate) fn table_bits(what: &str, entries: u32) -> u32 {
    assert!(
        entries.is_power_of_two(),
        "branch predictor: {what} = {entries} is not a power of two"
    );
    entries.trailing_zeros()
}

/// Checks a history length against the range the config layer allows.
pub(crate) fn history_len(what: &str, bits: u32) -> u32 {
    assert!(
        (1..=64).contains(&bits),
        "branch predictor: {what} = {bits} is not between 1 and 64"
    );
    bits
}

/// The low `bits` bits set (all 64 for `bits >= 64`).
#[inline]
pub(crate) fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Folds `value` into `bits` bits by XOR-ing its `bits`-wide chunks, so that a history
/// longer than a table's index still influences the index instead of being cut off.
#[inline]
pub(crate) fn fold(mut value: u64, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    if bits >= 64 {
        return value;
    }
    let mask = low_mask(bits);
    let mut folded = 0;
    while value != 0 {
        folded ^= value & mask;
        value >>= bits;
    }
    folded
}

/// A table index from a PC: the low `bits` bits XOR the next `bits` bits. No low bits are
/// dropped, because x86 branches may sit at any byte address; folding in the next bits keeps
/// code spread over more than one table-span apart from aliasing systematically. Within an
/// aligned block of `2^bits` bytes the map is one-to-one.
#[inline]
pub(crate) fn pc_index(pc: u64, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    ((pc ^ (pc >> bits)) & low_mask(bits)) as usize
}

/// A table of saturating counters, each 0..=`max`, predicting taken in the upper half.
#[derive(Debug, Clone)]
pub(crate) struct CounterTable {
    counters: Vec<u8>,
    bits: u32,
    max: u8,
}

impl CounterTable {
    /// `entries` counters of `width` bits, each starting weakly not-taken (`2^(width-1) - 1`).
    pub(crate) fn new(what: &str, entries: u32, width: u32) -> CounterTable {
        let bits = table_bits(what, entries);
        let max = ((1u32 << width) - 1) as u8;
        CounterTable {
            counters: vec![max / 2; entries as usize],
            bits,
            max,
        }
    }

    /// log2 of the number of counters.
    #[inline]
    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// The direction counter `idx` predicts (`idx` is reduced modulo the table size).
    #[inline]
    pub(crate) fn predict(&self, idx: usize) -> bool {
        self.counters[idx & (self.counters.len() - 1)] > self.max / 2
    }

    /// Moves counter `idx` one step towards `taken`, saturating.
    #[inline]
    pub(crate) fn update(&mut self, idx: usize, taken: bool) {
        let mask = self.counters.len() - 1;
        let c = &mut self.counters[idx & mask];
        if taken {
            if *c < self.max {
                *c += 1;
            }
        } else if *c > 0 {
            *c -= 1;
        }
    }
}

/// A global history register of conditional-branch outcomes, newest in bit 0.
#[derive(Debug, Clone)]
pub(crate) struct OutcomeHistory {
    value: u64,
    mask: u64,
}

impl OutcomeHistory {
    /// An all-not-taken history of `bits` bits.
    pub(crate) fn new(what: &str, bits: u32) -> OutcomeHistory {
        OutcomeHistory {
            value: 0,
            mask: low_mask(history_len(what, bits)),
        }
    }

    /// The current history.
    #[inline]
    pub(crate) fn value(&self) -> u64 {
        self.value
    }

    /// Shifts in one outcome.
    #[inline]
    pub(crate) fn push(&mut self, taken: bool) {
        self.value = ((self.value << 1) | taken as u64) & self.mask;
    }
}

/// A circular return-address stack of [`RAS_ENTRIES`] entries. A push onto a full stack
/// overwrites the oldest entry; a pop from an empty stack predicts nothing (a mispredict).
#[derive(Debug, Clone)]
pub(crate) struct ReturnStack {
    entries: [u64; RAS_ENTRIES],
    /// Slot of the newest entry.
    top: usize,
    /// Valid entries, at most `RAS_ENTRIES`.
    len: usize,
}

impl ReturnStack {
    pub(crate) fn new() -> ReturnStack {
        ReturnStack {
            entries: [0; RAS_ENTRIES],
            top: RAS_ENTRIES - 1,
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, addr: u64) {
        self.top = (self.top + 1) % RAS_ENTRIES;
        self.entries[self.top] = addr;
        self.len = (self.len + 1).min(RAS_ENTRIES);
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let addr = self.entries[self.top];
        self.top = (self.top + RAS_ENTRIES - 1) % RAS_ENTRIES;
        self.len -= 1;
        Some(addr)
    }
}

/// A direct-mapped branch target buffer remembering the last target of each indirect branch,
/// tagged with the full PC so that a conflict is a miss, never a wrong-branch hit.
#[derive(Debug, Clone)]
pub(crate) struct Btb {
    /// (pc, target) per slot; `EMPTY` in the pc marks an unused slot.
    slots: Vec<(u64, u64)>,
    bits: u32,
}

impl Btb {
    const EMPTY: u64 = u64::MAX;

    pub(crate) fn new(entries: u32) -> Btb {
        let bits = table_bits("btb_entries", entries);
        Btb {
            slots: vec![(Btb::EMPTY, 0); entries as usize],
            bits,
        }
    }

    /// True if the stored target for `pc` is not `target` (or there is none); then stores it.
    #[inline]
    pub(crate) fn predict_and_update(&mut self, pc: u64, target: u64) -> bool {
        let slot = &mut self.slots[pc_index(pc, self.bits)];
        let wrong = *slot != (pc, target);
        *slot = (pc, target);
        wrong
    }
}

/// The target half every predictor shares: the return-address stack and a BTB.
#[derive(Debug, Clone)]
pub(crate) struct TargetPredictor {
    ras: ReturnStack,
    btb: Btb,
}

impl TargetPredictor {
    pub(crate) fn new(btb_entries: u32) -> TargetPredictor {
        TargetPredictor {
            ras: ReturnStack::new(),
            btb: Btb::new(btb_entries),
        }
    }

    /// Pushes a call's return address.
    #[inline]
    pub(crate) fn note_call(&mut self, return_addr: u64) {
        self.ras.push(return_addr);
    }

    /// Predicts and learns every kind but `Conditional` (answered `false` here: the direction
    /// predictors own it). Returns true on a mispredicted target.
    #[inline]
    pub(crate) fn predict_and_update(&mut self, pc: u64, kind: BranchKind, target: u64) -> bool {
        match kind {
            BranchKind::None
            | BranchKind::Conditional
            | BranchKind::DirectJump
            | BranchKind::DirectCall => false,
            BranchKind::IndirectJump | BranchKind::IndirectCall => {
                self.btb.predict_and_update(pc, target)
            }
            BranchKind::Return => self.ras.pop() != Some(target),
        }
    }
}

#[cfg(test)]
mod part_tests {
    use super::*;

    #[test]
    fn two_bit_counter_saturates_and_starts_weakly_not_taken() {
        let mut t = CounterTable::new("t", 1, 2);
        assert!(!t.predict(0), "starts weakly not-taken");
        t.update(0, true);
        assert!(t.predict(0), "one taken flips a weak counter");
        for _ in 0..10 {
            t.update(0, true);
        }
        t.update(0, false);
        assert!(
            t.predict(0),
            "saturated at 3: one not-taken leaves it weakly taken"
        );
        t.update(0, false);
        assert!(!t.predict(0));
    }

    #[test]
    fn three_bit_counter_needs_four_steps_from_saturation() {
        let mut t = CounterTable::new("t", 1, 3);
        for _ in 0..10 {
            t.update(0, true);
        }
        for _ in 0..3 {
            t.update(0, false);
            assert!(t.predict(0));
        }
        t.update(0, false);
        assert!(!t.predict(0));
    }

    #[test]
    fn fold_keeps_every_history_bit_in_play() {
        assert_eq!(fold(0b1_0000_0011, 4), 0b0010);
        assert_eq!(fold(u64::MAX, 64), u64::MAX);
        assert_eq!(fold(0xffff, 8), 0);
        assert_eq!(fold(0x1_00, 8), 1);
    }

    #[test]
    fn pc_index_is_one_to_one_within_an_aligned_block() {
        let mut seen = [false; 512];
        for pc in 0x40_0000..0x40_0000 + 512u64 {
            let i = pc_index(pc, 9);
            assert!(!seen[i], "pc {pc:#x} collides");
            seen[i] = true;
        }
    }

    #[test]
    fn return_stack_keeps_the_newest_entries() {
        let mut s = ReturnStack::new();
        assert_eq!(s.pop(), None);
        for a in 0..RAS_ENTRIES as u64 + 2 {
            s.push(a);
        }
        for a in (2..RAS_ENTRIES as u64 + 2).rev() {
            assert_eq!(s.pop(), Some(a));
        }
        assert_eq!(s.pop(), None, "the two oldest were overwritten");
    }

    /// Two indirect branches that share a slot never borrow each other's entry, even when
    /// their targets agree: the slot is tagged with the full PC.
    #[test]
    fn btb_conflict_is_a_miss_even_with_the_same_target() {
        let mut b = Btb::new(512);
        let (x, y) = (0x80_0000, 0x80_0201);
        assert_eq!(pc_index(x, 9), pc_index(y, 9));
        assert!(b.predict_and_update(x, 0x1234));
        assert!(!b.predict_and_update(x, 0x1234));
        assert!(b.predict_and_update(y, 0x1234));
        assert!(b.predict_and_update(x, 0x1234));
    }

    #[test]
    fn build_rejects_a_table_that_is_not_a_power_of_two() {
        let e = build(&BpredConfig::Bimodal(BimodalConfig { entries: 1000 })).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("entries = 1000: must be a power of two")
        );
    }

    #[test]
    fn build_rejects_a_zero_history() {
        let e = build(&BpredConfig::Gshare(GshareConfig {
            entries: 1024,
            history_bits: 0,
        }))
        .err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("history_bits = 0: must be between 1 and 64 bits")
        );
    }
}
