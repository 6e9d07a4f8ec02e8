//! A TAGE-class predictor with a loop component, designed from the published descriptions:
//! Seznec & Michaud, "A case for (partially) TAgged GEometric history length branch
//! prediction", JILP 8, 2006 (the TAGE structure, its update and allocation rules), and
//! Seznec, "A 256 Kbits L-TAGE branch predictor", CBP-2, 2006/JILP 9, 2007 (the loop
//! predictor, the path history, the counter deciding whether new entries defer to the
//! alternate prediction). The choices the papers leave open, and the departures from them,
//! are isim's own and are marked as such below.
//!
//! Components:
//! * A **base** bimodal table (`base_entries` 2-bit counters indexed by PC).
//! * `tables` **tagged tables** of `table_entries` entries each. Table `i` is indexed by a
//!   hash of the PC, the newest `L(i)` conditional-branch outcomes (global history) and up to
//!   16 bits of path history (bit 0 of the PC of each recent conditional branch), and tagged
//!   with a `tag_bits`-bit partial tag from a second hash of the same. The lengths form the
//!   geometric series `L(1) = min_history`, `L(tables) = max_history`,
//!   `L(i) = round(min_history * (max_history / min_history)^((i-1)/(tables-1)))`, nudged
//!   apart where rounding would make two equal. An entry holds a 3-bit signed prediction
//!   counter (taken iff >= 0) and a 2-bit "useful" counter. Histories longer than the index
//!   or the tag are folded (XOR of the history's index-wide chunks) in circular registers
//!   updated incrementally, a rotation and two XORs per branch and register, as the 2006
//!   paper describes: nothing is recomputed from the whole history. (isim keeps a kind of
//!   register for four tables in one host SIMD word, and folds the 16-bit path history
//!   when it needs it.)
//! * A **loop predictor** (`loop_entries`, the direct-mapped, fully tagged table of
//!   `loop_pred.rs`, shared with the Pentium M model) with L-TAGE's 10-bit iteration
//!   counters, so loops of up to 1024 executions with a constant trip count are predicted
//!   exactly, whatever other branches their bodies hold.
//!
//! Prediction: the *provider* is the matching tagged entry with the longest history; the
//! *alternate* prediction is the next matching one, or the base table. When the provider's
//! entry is newly allocated (weak counter, usefulness 0) the alternate prediction is used
//! instead if a 4-bit counter says that has been the better policy for new entries. A
//! confident loop-predictor entry overrides all of this while it has been right at least as
//! often as TAGE where the two disagreed. L-TAGE keeps that score in one 7-bit counter for
//! the whole loop predictor; isim keeps a 4-bit one per loop entry, because with one global
//! score a single branch that looks like a loop without being one (a "taken every third
//! time" pattern restarted every 16 iterations, which TAGE predicts) loses often enough to
//! switch the loop predictor off for every real loop too.
//!
//! Update: the provider's counter learns the outcome (and, while it is new, the alternate's
//! too, since the alternate may be what is used); the base table learns only when there is
//! no provider. The provider's usefulness counter moves up when its prediction was right and
//! the alternate's wrong, down in the opposite case. When the TAGE prediction and the
//! provider were both wrong, one entry is allocated in a table of longer history than the
//! provider's, among those whose usefulness is 0: the shortest such table twice as often as
//! the next (the paper draws this at random; isim takes every third allocation to the
//! second candidate, so the predictor stays deterministic). If none is free, the usefulness
//! of every longer-history candidate drops by one instead. Every 2^18 (256 K) conditional
//! branches, the high bit, then (the next time) the low bit, of every usefulness counter is
//! cleared, so entries that stopped being useful can be replaced (the 2006 paper's reset).
//!
//! Only conditional branches enter the histories; unconditional ones are predicted by the
//! shared BTB and return stack. The global history is a circular bit buffer of the next
//! power of two above `max_history`, allocated at build time like every table.

use serde::{Deserialize, Serialize};

use super::loop_pred::LoopTable;
use super::{
    BranchPredictor, CounterTable, DEFAULT_BTB_ENTRIES, Params, TargetPredictor, fold, low_mask,
    pc_index, table_bits,
};
use sim_frontend::model::BranchKind;

/// The settings of `type = "tage"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TageConfig {
    /// Tagged tables (2 to [`TAGE_MAX_TABLES`]).
    pub tables: u32,
    /// Entries of each tagged table (a power of two).
    pub table_entries: u32,
    /// Bits of each tagged entry's partial tag ([`TAGE_MIN_TAG_BITS`] to
    /// [`TAGE_MAX_TAG_BITS`]).
    pub tag_bits: u32,
    /// Global history length of the shortest-history tagged table (1 to
    /// [`TAGE_MAX_HISTORY`]).
    pub min_history: u32,
    /// Global history length of the longest-history tagged table (1 to
    /// [`TAGE_MAX_HISTORY`], at least `min_history + tables - 1`).
    pub max_history: u32,
    /// 2-bit counters of the bimodal base table (a power of two).
    pub base_entries: u32,
    /// Entries of the loop predictor (a power of two).
    pub loop_entries: u32,
}

impl Default for TageConfig {
    fn default() -> Self {
        TageConfig {
            // Seznec & Michaud, JILP 2006: the 8-component TAGE (bimodal base + 7 tagged
            // tables) whose history lengths run geometrically from 5 to 130 outcomes
            // (5, 9, 15, 25, 44, 76, 130).
            tables: 7,
            min_history: 5,
            max_history: 130,
            // isim's choice: 1 K entries per tagged table, between the 2006 paper's 64 Kbit
            // designs and L-TAGE's 256 Kbit budget (Seznec, CBP-2 2006); about 115 Kbit of
            // tagged entries in all.
            table_entries: 1024,
            // isim's choice: one tag width for every table, within the 8 to 15 bits of the
            // TAGE papers (which widen the tags with the history length).
            tag_bits: 11,
            // isim's choice: the same size as the "bimodal" predictor's default table.
            base_entries: 4096,
            // L-TAGE's 64-entry loop predictor (Seznec, CBP-2 2006); isim's is direct-mapped.
            loop_entries: 64,
        }
    }
}

impl TageConfig {
    /// Visits each parameter with its rule; a history range too short for the table count
    /// is charged to `max_history` (when the three values are each in range).
    pub(crate) fn check(&self, p: &mut Params) {
        let tables = p.range("tables", self.tables, 2, TAGE_MAX_TABLES);
        p.pow2("table_entries", self.table_entries);
        p.range(
            "tag_bits",
            self.tag_bits,
            TAGE_MIN_TAG_BITS,
            TAGE_MAX_TAG_BITS,
        );
        let min = p.range("min_history", self.min_history, 1, TAGE_MAX_HISTORY);
        let max = p.range("max_history", self.max_history, 1, TAGE_MAX_HISTORY);
        if tables && min && max {
            // Each is in range, so neither the sum nor the subtraction can overflow.
            let (n, least) = (self.tables, self.min_history + (self.tables - 1));
            if self.max_history < least {
                p.relation(
                    "max_history",
                    self.max_history,
                    format!(
                        "must be at least min_history + tables - 1 = {least}, so that each of the \
                         {n} tagged tables has a longer history than the one before"
                    ),
                );
            }
        }
        p.pow2("base_entries", self.base_entries);
        p.pow2("loop_entries", self.loop_entries);
    }
}

/// Most tagged tables a TAGE predictor may have.
pub const TAGE_MAX_TABLES: u32 = 16;

/// Longest global history, in conditional-branch outcomes, a tagged table may use.
pub const TAGE_MAX_HISTORY: u32 = 1024;

/// Narrowest partial tag (two folded history registers feed it, one `tag_bits - 1` wide).
pub const TAGE_MIN_TAG_BITS: u32 = 2;

/// Widest partial tag.
pub const TAGE_MAX_TAG_BITS: u32 = 16;

/// Bounds of the 3-bit signed prediction counters (2006 paper).
const CTR_MIN: i8 = -4;
const CTR_MAX: i8 = 3;

/// The counter value of an entry never allocated (outside `CTR_MIN..=CTR_MAX`).
const EMPTY_CTR: i8 = i8::MIN;

/// Saturation of the 2-bit usefulness counters (2006 paper).
const U_MAX: u8 = 3;

/// Conditional branches between two usefulness resets (the 2006 paper's 256 K).
const U_RESET_PERIOD: u32 = 1 << 18;

/// Bounds of the 4-bit counter choosing the alternate prediction for new entries.
const ALT_MIN: i8 = -8;
const ALT_MAX: i8 = 7;

/// Bits of path history (L-TAGE's 16).
const PATH_BITS: u32 = 16;

/// Width of the loop predictor's iteration counters (L-TAGE's 10).
const LOOP_COUNT_BITS: u32 = 10;

/// One tagged entry: 4 bytes, so that the tables of the default predictor (7 × 1024
/// entries) fit in a host's 32 KiB L1 data cache.
#[derive(Debug, Clone, Copy)]
struct TaggedEntry {
    /// Partial tag.
    tag: u16,
    /// 3-bit signed prediction counter: taken iff >= 0; [`EMPTY_CTR`] in an entry never
    /// allocated, which matches no tag.
    ctr: i8,
    /// 2-bit usefulness counter.
    u: u8,
}

impl TaggedEntry {
    const EMPTY: TaggedEntry = TaggedEntry {
        tag: 0,
        ctr: EMPTY_CTR,
        u: 0,
    };

    /// Whether the entry holds partial tag `tag`.
    #[inline]
    fn matches(&self, tag: u16) -> bool {
        self.tag == tag && self.ctr != EMPTY_CTR
    }

    /// A weak counter and no proven usefulness: the entry was (as good as) just allocated.
    #[inline]
    fn is_new(&self) -> bool {
        (self.ctr == 0 || self.ctr == -1) && self.u == 0
    }
}

/// Tables whose folded histories [`Folds`] updates together: four `u32` lanes, one host
/// SIMD register.
const GROUP: usize = 4;

/// Groups of lanes enough for [`TAGE_MAX_TABLES`] tables.
const GROUPS: usize = (TAGE_MAX_TABLES as usize).div_ceil(GROUP);

/// One register of every tagged table, lane `t` for table `t`, in groups of [`GROUP`].
type Lanes = [[u32; GROUP]; GROUPS];

/// Every table's global history folded to its index width, to `tag_bits` and to
/// `tag_bits - 1` (the two tag registers differ, so the tag is not just the index again),
/// kept incrementally: bit `k` of a table's newest `length` outcomes (0 = newest) is
/// XOR-ed into bit `k mod width`. The registers of one kind have one width for every table,
/// so a branch updates them lane by lane with the same shifts, a group of tables at a time
/// (the host's SIMD units do a group in one operation). The path history's fold is not
/// kept: it is computed from the 16-bit path register when needed ([`Folds::path`]).
#[derive(Debug, Clone)]
struct Folds {
    index: Lanes,
    tag: Lanes,
    tag2: Lanes,
    /// Per kind (index, tag, tag2), lane `t`: bit `length(t) mod width`, where the bit
    /// leaving table `t`'s window lands after the rotation; 0 in lanes of no table.
    out: [Lanes; 3],
    /// Per kind: the register width (at least 1).
    width: [u32; 3],
    /// Per kind: the register's bits (`width` ones).
    mask: [u32; 3],
    /// Groups holding a table.
    groups: usize,
}

impl Folds {
    /// Empty histories for tables of history lengths `lengths` (at most
    /// [`TAGE_MAX_TABLES`]), folded to `index_bits` (at most 31), `tag_bits` and
    /// `tag_bits - 1` bits (each at least 1 after clamping).
    fn new(lengths: &[u32], index_bits: u32, tag_bits: u32) -> Folds {
        let width = [index_bits, tag_bits, tag_bits - 1].map(|w| w.clamp(1, 31));
        let mut out = [[[0u32; GROUP]; GROUPS]; 3];
        for (k, w) in width.iter().enumerate() {
            for (t, &length) in lengths.iter().enumerate() {
                out[k][t / GROUP][t % GROUP] = 1 << (length % w);
            }
        }
        Folds {
            index: [[0; GROUP]; GROUPS],
            tag: [[0; GROUP]; GROUPS],
            tag2: [[0; GROUP]; GROUPS],
            out,
            width,
            mask: width.map(|w| u32::MAX >> (32 - w)),
            groups: lengths.len().div_ceil(GROUP),
        }
    }

    /// Shifts `newest` into every table's registers; `oldest` holds, in lane `t`, all ones
    /// if the bit leaving table `t`'s window (the history's bit `length(t) - 1` before the
    /// shift) is set, else 0.
    #[inline]
    fn push(&mut self, newest: bool, oldest: &Lanes) {
        let g = self.groups;
        let n = newest as u32;
        for (k, regs) in [&mut self.index, &mut self.tag, &mut self.tag2]
            .into_iter()
            .enumerate()
        {
            // Rotate left by one within `w` bits (the top bit comes back as bit 0), insert
            // the new bit, remove the old one; branch-free, since `oldest` is a past
            // outcome, as unpredictable as the branches it records.
            let (w, mask, out) = (self.width[k], self.mask[k], &self.out[k]);
            for ((r, o), old) in regs.iter_mut().zip(out).zip(oldest).take(g) {
                for j in 0..GROUP {
                    let v = r[j];
                    r[j] = (((v << 1) & mask) | ((v >> (w - 1)) ^ n)) ^ (o[j] & old[j]);
                }
            }
        }
    }

    /// For each table `t` of the groups in use: the newest `min(length(t), 16)` bits of the
    /// path history `path` (bit 0 newest, at most 16 bits set; `span` holds the masks)
    /// folded to the index width, as an incremental fold of those bits would hold them.
    #[inline]
    fn path(&self, path: u32, span: &Lanes) -> Lanes {
        let (w, mask) = (self.width[0], self.mask[0]);
        let mut f: Lanes = [[0; GROUP]; GROUPS];
        for (fg, sg) in f.iter_mut().zip(span).take(self.groups) {
            let mut s = 0;
            while s < PATH_BITS {
                for j in 0..GROUP {
                    fg[j] ^= ((path & sg[j]) >> s) & mask;
                }
                s += w;
            }
        }
        f
    }
}

/// A circular buffer of conditional-branch outcomes, newest at `head`.
#[derive(Debug, Clone)]
struct GlobalHistory {
    bits: Vec<bool>,
    mask: usize,
    head: usize,
}

impl GlobalHistory {
    /// All not-taken, holding at least `length + 1` outcomes.
    fn new(length: u32) -> GlobalHistory {
        let size = (length as usize + 1).next_power_of_two();
        GlobalHistory {
            bits: vec![false; size],
            mask: size - 1,
            head: 0,
        }
    }

    /// Outcome `k` (0 = newest).
    #[inline]
    fn bit(&self, k: u32) -> bool {
        self.bits[(self.head + k as usize) & self.mask]
    }

    #[inline]
    fn push(&mut self, taken: bool) {
        self.head = (self.head + self.mask) & self.mask;
        self.bits[self.head] = taken;
    }
}

/// The geometric series of history lengths from `min` to `max` over `tables` tables,
/// rounded, then made strictly increasing (needs `max - min >= tables - 1`).
pub(crate) fn geometric_lengths(tables: u32, min: u32, max: u32) -> Vec<u32> {
    let n = tables as usize;
    let ratio = f64::from(max) / f64::from(min);
    let mut lengths: Vec<u32> = (0..n)
        .map(|i| {
            if i == n - 1 {
                max
            } else {
                let exp = i as f64 / (n - 1) as f64;
                (f64::from(min) * ratio.powf(exp)).round() as u32
            }
        })
        .collect();
    for i in 1..n {
        lengths[i] = lengths[i].max(lengths[i - 1] + 1);
    }
    for i in (0..n - 1).rev() {
        lengths[i] = lengths[i].min(lengths[i + 1] - 1);
    }
    lengths
}

/// Base bimodal table + geometric-history tagged tables + loop predictor. See the module
/// documentation.
#[derive(Debug, Clone)]
pub struct Tage {
    /// Number of tagged tables.
    tables: usize,
    /// log2 of the entries of one tagged table.
    index_bits: u32,
    tag_bits: u32,
    /// `index_bits` and `tag_bits` ones.
    index_mask: u32,
    tag_mask: u32,
    /// Every tagged table, table `t` at `t << index_bits`.
    entries: Vec<TaggedEntry>,
    /// History length of each tagged table, shortest first.
    lengths: Vec<u32>,
    /// Every table's folded histories.
    folds: Folds,
    /// Lane `t`: the newest `min(length(t), 16)` bits set, the span of table `t`'s path
    /// history.
    path_span: Lanes,
    history: GlobalHistory,
    /// Bit 0 of the PCs of recent conditional branches, newest in bit 0.
    path: u64,
    base: CounterTable,
    /// >= 0: a new provider entry defers to the alternate prediction.
    use_alt_on_new: i8,
    loops: LoopTable,
    /// Conditional branches since the last usefulness reset.
    u_tick: u32,
    /// Which bit the next usefulness reset clears.
    reset_high_next: bool,
    /// Allocations so far (every third takes the second free candidate).
    allocations: u32,
    targets: TargetPredictor,
}

impl Tage {
    /// Builds the predictor: `tables` tagged tables (2..=[`TAGE_MAX_TABLES`]) of
    /// `table_entries` entries (a power of two) with `tag_bits`-bit tags
    /// ([`TAGE_MIN_TAG_BITS`]..=[`TAGE_MAX_TAG_BITS`]), history lengths from `min_history`
    /// (>= 1) to `max_history` (<= [`TAGE_MAX_HISTORY`], at least `min_history + tables - 1`),
    /// a `base_entries`-counter bimodal table, a `loop_entries`-entry loop predictor and a
    /// [`DEFAULT_BTB_ENTRIES`]-entry BTB.
    ///
    /// # Panics
    /// On any parameter outside those ranges (the isim config layer rejects them first).
    pub fn new(cfg: &TageConfig) -> Tage {
        let TageConfig {
            tables,
            table_entries,
            tag_bits,
            min_history,
            max_history,
            base_entries,
            loop_entries,
        } = *cfg;
        assert!(
            (2..=TAGE_MAX_TABLES).contains(&tables),
            "branch predictor: tage tables = {tables} is not between 2 and {TAGE_MAX_TABLES}"
        );
        assert!(
            (TAGE_MIN_TAG_BITS..=TAGE_MAX_TAG_BITS).contains(&tag_bits),
            "branch predictor: tage tag_bits = {tag_bits} is not between \
             {TAGE_MIN_TAG_BITS} and {TAGE_MAX_TAG_BITS}"
        );
        assert!(
            min_history >= 1
                && max_history <= TAGE_MAX_HISTORY
                && max_history >= min_history + (tables - 1),
            "branch predictor: tage history lengths {min_history}..={max_history} do not give \
             {tables} distinct lengths within 1..={TAGE_MAX_HISTORY}"
        );
        let index_bits = table_bits("tage table_entries", table_entries);
        let n = tables as usize;
        let lengths = geometric_lengths(tables, min_history, max_history);
        let folds = Folds::new(&lengths, index_bits, tag_bits);
        let mut path_span = [[0; GROUP]; GROUPS];
        for (t, &length) in lengths.iter().enumerate() {
            path_span[t / GROUP][t % GROUP] = low_mask(length.min(PATH_BITS)) as u32;
        }
        Tage {
            tables: n,
            index_bits,
            tag_bits,
            index_mask: low_mask(index_bits) as u32,
            tag_mask: low_mask(tag_bits) as u32,
            entries: vec![TaggedEntry::EMPTY; n << index_bits],
            lengths,
            folds,
            path_span,
            history: GlobalHistory::new(max_history),
            path: 0,
            base: CounterTable::new("tage base_entries", base_entries, 2),
            use_alt_on_new: 0,
            loops: LoopTable::new("tage loop_entries", loop_entries, LOOP_COUNT_BITS),
            u_tick: 0,
            reset_high_next: true,
            allocations: 0,
            targets: TargetPredictor::new(DEFAULT_BTB_ENTRIES),
        }
    }

    /// The history length of each tagged table, shortest first.
    pub fn history_lengths(&self) -> &[u32] {
        &self.lengths
    }

    /// Predicts and learns one conditional branch; returns true if mispredicted.
    fn conditional(&mut self, pc: u64, taken: bool) -> bool {
        let n = self.tables;
        let (index_mask, tag_mask) = (self.index_mask, self.tag_mask);
        let pc_idx = pc_index(pc, self.index_bits) as u32;
        let pc_tag = fold(pc, self.tag_bits) as u32;

        // Index and tag of every table, a group of tables at a time (the same operations
        // in every lane); then the provider and the alternate.
        let f = &self.folds;
        let path = f.path(self.path as u32, &self.path_span);
        let mut idxs: Lanes = [[0; GROUP]; GROUPS];
        let mut tag_lanes: Lanes = [[0; GROUP]; GROUPS];
        for (g, (ix, tg)) in idxs
            .iter_mut()
            .zip(&mut tag_lanes)
            .enumerate()
            .take(f.groups)
        {
            for j in 0..GROUP {
                ix[j] = (pc_idx ^ f.index[g][j] ^ path[g][j]) & index_mask;
                tg[j] = (pc_tag ^ f.tag[g][j] ^ (f.tag2[g][j] << 1)) & tag_mask;
            }
        }
        let (idxs, tag_lanes) = (idxs.as_flattened(), tag_lanes.as_flattened());
        // Table `t`'s slot in `entries` and its tag.
        let index_bits = self.index_bits;
        let slot = |t: usize| (t << index_bits) | idxs[t] as usize;
        let tag = |t: usize| tag_lanes[t] as u16;
        let mut provider = None;
        let mut alt = None;
        for t in (0..n).rev() {
            if self.entries[slot(t)].matches(tag(t)) {
                if provider.is_none() {
                    provider = Some(t);
                } else if alt.is_none() {
                    alt = Some(t);
                }
            }
        }
        let base_idx = pc_index(pc, self.base.bits());
        let base_pred = self.base.predict(base_idx);
        let alt_pred = alt.map_or(base_pred, |a| self.entries[slot(a)].ctr >= 0);
        let (provider_pred, provider_new) = match provider {
            Some(p) => {
                let e = self.entries[slot(p)];
                (e.ctr >= 0, e.is_new())
            }
            None => (base_pred, false),
        };
        let tage_pred = if provider_new && self.use_alt_on_new >= 0 {
            alt_pred
        } else {
            provider_pred
        };
        let loop_look = self.loops.lookup(pc);
        let predicted = match loop_look.pred {
            Some(l) if loop_look.trusted => l,
            _ => tage_pred,
        };
        let wrong = predicted != taken;

        // Loop predictor, and whether to believe it.
        if let Some(l) = loop_look.pred.filter(|&l| l != tage_pred) {
            self.loops.record_disagreement(loop_look, l == taken);
        }
        self.loops.update(pc, loop_look, taken, wrong);

        // Whether new entries should defer to the alternate prediction.
        if provider_new && provider_pred != alt_pred {
            self.use_alt_on_new = step(self.use_alt_on_new, alt_pred == taken, ALT_MIN, ALT_MAX);
        }

        // Allocation in a longer-history table.
        let from = provider.map_or(0, |p| p + 1);
        if tage_pred != taken && provider_pred != taken && from < n {
            let mut free = (from..n).filter(|&t| self.entries[slot(t)].u == 0);
            match (free.next(), free.next()) {
                (None, _) => {
                    for t in from..n {
                        let e = &mut self.entries[slot(t)];
                        e.u = e.u.saturating_sub(1);
                    }
                }
                (Some(first), second) => {
                    let chosen = match second {
                        Some(s) if self.allocations % 3 == 2 => s,
                        _ => first,
                    };
                    self.allocations = self.allocations.wrapping_add(1);
                    self.entries[slot(chosen)] = TaggedEntry {
                        tag: tag(chosen),
                        ctr: if taken { 0 } else { -1 },
                        u: 0,
                    };
                }
            }
        }

        // Counters.
        match provider {
            Some(p) => {
                let e = &mut self.entries[slot(p)];
                e.ctr = step(e.ctr, taken, CTR_MIN, CTR_MAX);
                if provider_pred != alt_pred {
                    e.u = if provider_pred == taken {
                        (e.u + 1).min(U_MAX)
                    } else {
                        e.u.saturating_sub(1)
                    };
                }
                if provider_new {
                    match alt {
                        Some(a) => {
                            let e = &mut self.entries[slot(a)];
                            e.ctr = step(e.ctr, taken, CTR_MIN, CTR_MAX);
                        }
                        None => self.base.update(base_idx, taken),
                    }
                }
            }
            None => self.base.update(base_idx, taken),
        }

        // Periodic usefulness reset.
        self.u_tick += 1;
        if self.u_tick == U_RESET_PERIOD {
            self.u_tick = 0;
            let keep = if self.reset_high_next { 0b01 } else { 0b10 };
            for e in &mut self.entries {
                e.u &= keep;
            }
            self.reset_high_next = !self.reset_high_next;
        }

        // Histories.
        let mut oldest: Lanes = [[0; GROUP]; GROUPS];
        for (o, &length) in oldest.as_flattened_mut().iter_mut().zip(&self.lengths) {
            *o = (self.history.bit(length - 1) as u32).wrapping_neg();
        }
        self.folds.push(taken, &oldest);
        self.history.push(taken);
        self.path = ((self.path << 1) | (pc & 1)) & low_mask(PATH_BITS);
        wrong
    }
}

/// `c` moved one step up (`up`) or down, saturating within `min..=max`.
#[inline]
fn step(c: i8, up: bool, min: i8, max: i8) -> i8 {
    if up {
        (c + 1).min(max)
    } else {
        (c - 1).max(min)
    }
}

impl BranchPredictor for Tage {
    #[inline]
    fn predict_and_update(&mut self, pc: u64, kind: BranchKind, taken: bool, target: u64) -> bool {
        if kind == BranchKind::Conditional {
            return self.conditional(pc, taken);
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
    use super::super::{BpredConfig, ParamError, Problem, build};
    use super::*;

    /// The 2006 paper's 8-component TAGE spans 5 to 130 outcomes over 7 tagged tables.
    #[test]
    fn history_lengths_form_the_papers_geometric_series() {
        assert_eq!(geometric_lengths(7, 5, 130), [5, 9, 15, 25, 44, 76, 130]);
        assert_eq!(geometric_lengths(4, 5, 130), [5, 15, 44, 130]);
        // Rounding would repeat lengths: they are pushed apart, the ends kept.
        assert_eq!(geometric_lengths(5, 1, 5), [1, 2, 3, 4, 5]);
        assert_eq!(geometric_lengths(4, 2, 6), [2, 3, 4, 6]);
        let p = Tage::new(&TageConfig::default());
        assert_eq!(p.history_lengths(), [5, 9, 15, 25, 44, 76, 130]);
    }

    /// Every table's incrementally folded registers equal the fold computed from the whole
    /// history, for lengths shorter than, equal to, multiples of and longer than the width,
    /// in every lane of several groups; and the path's fold computed on demand equals the
    /// fold of its newest bits.
    #[test]
    fn folded_history_matches_a_fold_of_the_whole_history() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1du64);
        let lengths = [1, 5, 9, 10, 11, 20, 22, 44, 130, 1024];
        for (index_bits, tag_bits) in [(10, 11), (0, 2), (1, 16), (31, 9)] {
            let mut f = Folds::new(&lengths, index_bits, tag_bits);
            let mut h = GlobalHistory::new(1024);
            for round in 0..3000 {
                let b = next() & 1 == 1;
                let mut oldest = [[0; GROUP]; GROUPS];
                for (t, &length) in lengths.iter().enumerate() {
                    oldest[t / GROUP][t % GROUP] = (h.bit(length - 1) as u32).wrapping_neg();
                }
                f.push(b, &oldest);
                h.push(b);
                if round % 7 != 0 {
                    continue;
                }
                for (t, &length) in lengths.iter().enumerate() {
                    let regs = [&f.index, &f.tag, &f.tag2];
                    for (k, &width) in f.width.iter().enumerate() {
                        let mut want = 0u32;
                        for i in 0..length {
                            want ^= (h.bit(i) as u32) << (i % width);
                        }
                        assert_eq!(
                            regs[k][t / GROUP][t % GROUP],
                            want,
                            "length {length} width {width} (kind {k})"
                        );
                    }
                }
            }
        }
        for index_bits in [1, 3, 10, 15, 16, 31] {
            let spans = [1u32, 5, 10, 16, 16];
            let f = Folds::new(&spans, index_bits, 8);
            let mut span_masks = [[0; GROUP]; GROUPS];
            for (m, &s) in span_masks.as_flattened_mut().iter_mut().zip(&spans) {
                *m = low_mask(s) as u32;
            }
            for _ in 0..20 {
                let path = (next() & 0xffff) as u32;
                let got = f.path(path, &span_masks);
                for (t, &span) in spans.iter().enumerate() {
                    let mut want = 0u32;
                    for i in 0..span {
                        want ^= ((path >> i) & 1) << (i % index_bits);
                    }
                    assert_eq!(
                        got.as_flattened()[t],
                        want,
                        "span {span} width {index_bits}"
                    );
                }
            }
        }
    }

    fn build_error(cfg: TageConfig) -> ParamError {
        match build(&BpredConfig::Tage(cfg)) {
            Ok(_) => panic!("{cfg:?} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn build_rejects_too_short_a_history_range() {
        let e = build_error(TageConfig {
            tables: 8,
            max_history: 10,
            ..TageConfig::default()
        });
        assert_eq!((e.param, e.value), ("max_history", 10));
        assert!(
            e.to_string().contains("min_history + tables - 1 = 12"),
            "{e}"
        );
    }

    #[test]
    fn build_rejects_a_one_bit_tag() {
        let e = build_error(TageConfig {
            tag_bits: 1,
            ..TageConfig::default()
        });
        assert_eq!(
            e,
            ParamError {
                param: "tag_bits",
                value: 1,
                problem: Problem::OutOfRange {
                    lo: TAGE_MIN_TAG_BITS,
                    hi: TAGE_MAX_TAG_BITS
                }
            }
        );
    }

    /// The usefulness counters lose their high bit, then their low bit, every 256 K
    /// conditional branches.
    #[test]
    fn usefulness_is_reset_periodically() {
        let mut p = Tage::new(&TageConfig {
            tables: 2,
            table_entries: 2,
            tag_bits: 8,
            min_history: 1,
            max_history: 2,
            base_entries: 2,
            loop_entries: 1,
        });
        for e in &mut p.entries {
            e.u = U_MAX;
        }
        // A branch that is always taken: after the first miss no entry changes usefulness.
        for _ in 0..U_RESET_PERIOD - 1 {
            p.predict_and_update(0x40, BranchKind::Conditional, true, 0);
        }
        assert!(p.entries.iter().any(|e| e.u == U_MAX));
        p.predict_and_update(0x40, BranchKind::Conditional, true, 0);
        assert!(p.entries.iter().all(|e| e.u <= 1), "high bit cleared");
        for _ in 0..U_RESET_PERIOD {
            p.predict_and_update(0x40, BranchKind::Conditional, true, 0);
        }
        assert!(p.entries.iter().all(|e| e.u == 0), "low bit cleared");
    }
}
