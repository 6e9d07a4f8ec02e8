//! The value every omitted key takes: the default machine, a modest modern 1-socket 8-core
//! part (Skylake-like core, 3 GHz), spelled out in `configs/default.toml` and documented in
//! `docs/config.md`. A test checks that the file and this code describe the same machine,
//! so neither can drift from the other.
//!
//! Two tables are special. `[branch_predictor]` parameters default per `type` (a gshare
//! config gets gshare's defaults, not the default tournament's). `[cache.l3]` has no
//! default instance: an omitted `[cache.l3]` means a machine without an L3, while a present
//! one fills its omitted keys from [`l3`]. `[tlb]` likewise: omitted, no translation is
//! modelled (the default machine has none); present, its omitted keys come from [`tlb`].

use sim_memory::{Arbitration, PrefetchKind, Protocol, ReplacementKind};

use super::machine::{
    BranchPredictorConfig, BusConfig, CacheConfig, CacheHierarchyConfig, CoherenceConfig,
    CoreConfig, DramConfig, MachineConfig, OffSocketConfig, OpLatencies, SharedBy, SystemConfig,
    TlbConfig,
};
use super::units::{Bandwidth, Frequency, Size, Time};

const LINE: Size = Size(64);

/// The default machine, field by field (equal to loading `configs/default.toml`).
pub(super) fn machine() -> MachineConfig {
    MachineConfig {
        system: SystemConfig {
            sockets: 1,
            cores_per_socket: 8,
            frequency: Frequency(3_000_000_000),
        },
        core: CoreConfig {
            dispatch_width: 4,
            rob_size: 224,
            frontend_depth: 15,
            outstanding_loads: 12,
            outstanding_stores: 12,
            long_latency_cutoff: 30,
            latency: OpLatencies {
                int_alu: 1,
                int_mul: 3,
                int_div: 26,
                fp_add: 4,
                fp_mul: 4,
                fp_div: 14,
                load: 1,
                store: 1,
                branch: 1,
                other: 1,
            },
        },
        branch_predictor: predictor(DEFAULT_PREDICTOR).unwrap_or(BranchPredictorConfig::Static),
        cache: CacheHierarchyConfig {
            l1i: CacheConfig {
                size: Size(32 << 10),
                associativity: 8,
                line_size: LINE,
                data_latency: 4,
                tag_latency: 1,
                shared_by: SharedBy::Cores(1),
                replacement: ReplacementKind::Lru,
                prefetcher: PrefetchKind::None,
                prefetch_degree: 1,
            },
            l1d: CacheConfig {
                size: Size(48 << 10),
                associativity: 12,
                line_size: LINE,
                data_latency: 5,
                tag_latency: 1,
                shared_by: SharedBy::Cores(1),
                replacement: ReplacementKind::Lru,
                // An IP-stride prefetcher at the L1D, as Intel's cores have (optimization
                // manual, "Data Prefetching"); degree isim's choice.
                prefetcher: PrefetchKind::Stride,
                prefetch_degree: 2,
            },
            l2: CacheConfig {
                size: Size(1 << 20),
                associativity: 16,
                line_size: LINE,
                data_latency: 14,
                tag_latency: 3,
                shared_by: SharedBy::Cores(1),
                replacement: ReplacementKind::TreePlru,
                // A streamer at the L2 (Intel's L2 streamer); degree isim's choice.
                prefetcher: PrefetchKind::Stride,
                prefetch_degree: 16,
            },
            l3: Some(l3()),
        },
        coherence: CoherenceConfig {
            // A modern part keeps an exclusive state (Intel's MESIF, AMD's MOESI).
            protocol: Protocol::Mesi,
        },
        bus: BusConfig {
            bandwidth: Bandwidth(64_000_000_000),
            arbitration: Arbitration::Fifo,
        },
        dram: DramConfig {
            latency: Time(80_000),
            bandwidth: Bandwidth(25_600_000_000),
            controllers: 2,
            interleave: Size(4 << 10),
        },
        off_socket: OffSocketConfig {
            latency: Time(40_000),
        },
        tlb: None,
    }
}

/// The defaults of a present `[tlb]` table: Skylake's data TLBs (Intel optimization
/// manual: 64-entry 4-way first level, 1536-entry 12-way second level, 2 page walkers); the
/// second level's 7 cycles and the walk's 30 (page-table entries found in the caches) are
/// isim's choice within published measurements.
pub(super) fn tlb() -> TlbConfig {
    TlbConfig {
        page_size: Size(4 << 10),
        l1_entries: 64,
        l1_associativity: 4,
        l2_entries: 1536,
        l2_associativity: 12,
        l2_latency: 7,
        walk_latency: 30,
        walkers: 2,
    }
}

/// The defaults of a present `[cache.l3]` table.
pub(super) fn l3() -> CacheConfig {
    CacheConfig {
        size: Size(16 << 20),
        associativity: 16,
        line_size: LINE,
        data_latency: 40,
        tag_latency: 10,
        shared_by: SharedBy::Socket,
        replacement: ReplacementKind::Srrip,
        prefetcher: PrefetchKind::None,
        prefetch_degree: 1,
    }
}

/// The predictor type of the default machine.
/// A modern core predicts loops and long correlations: TAGE-class (Seznec, JILP 2006).
pub(super) const DEFAULT_PREDICTOR: &str = "tage";

/// Each predictor type and the parameters it takes, in the order the docs list them.
pub(super) const PREDICTOR_PARAMS: &[(&str, &[&str])] = &[
    ("static", &[]),
    ("bimodal", &["entries"]),
    ("gshare", &["entries", "history_bits"]),
    (
        "tournament",
        &[
            "local_history_entries",
            "local_history_bits",
            "local_entries",
            "global_entries",
            "history_bits",
            "chooser_entries",
        ],
    ),
    (
        "pentium-m",
        &[
            "global_entries",
            "bimodal_entries",
            "loop_entries",
            "btb_entries",
            "history_bits",
        ],
    ),
    (
        "tage",
        &[
            "tables",
            "table_entries",
            "tag_bits",
            "min_history",
            "max_history",
            "base_entries",
            "loop_entries",
        ],
    ),
];

/// The predictor of type `name` with that type's default parameters, or `None` for an
/// unknown type.
pub(super) fn predictor(name: &str) -> Option<BranchPredictorConfig> {
    Some(match name {
        "static" => BranchPredictorConfig::Static,
        "bimodal" => BranchPredictorConfig::Bimodal { entries: 4096 },
        // 16 K counters indexed by 14 bits of PC XOR 14 bits of history (McFarling's gshare).
        "gshare" => BranchPredictorConfig::Gshare {
            entries: 16384,
            history_bits: 14,
        },
        // The Alpha 21264 tournament predictor (Kessler, IEEE Micro 1999).
        "tournament" => BranchPredictorConfig::Tournament {
            local_history_entries: 1024,
            local_history_bits: 10,
            local_entries: 1024,
            global_entries: 4096,
            history_bits: 12,
            chooser_entries: 4096,
        },
        // isim's own sizes for a Pentium M-like hybrid (the public descriptions give its
        // structure, not all sizes): 2048-entry global predictor, 4096-entry bimodal table,
        // 128-entry loop predictor, 2048-entry BTB, 15 bits of hashed path history.
        "pentium-m" => BranchPredictorConfig::PentiumM {
            global_entries: 2048,
            bimodal_entries: 4096,
            loop_entries: 128,
            btb_entries: 2048,
            history_bits: 15,
        },
        "tage" => BranchPredictorConfig::Tage {
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
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parameter lists used for validation and messages are exactly the fields each
    /// variant serializes, so a new parameter cannot be forgotten in one of them.
    #[test]
    fn predictor_param_lists_match_the_variants() {
        for (name, params) in PREDICTOR_PARAMS {
            let variant = predictor(name).expect("listed types exist");
            assert_eq!(variant.type_name(), *name);
            let table = toml::Table::try_from(&variant).expect("serializes");
            let mut keys: Vec<&str> = table
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "type")
                .collect();
            let mut expected = params.to_vec();
            keys.sort_unstable();
            expected.sort_unstable();
            assert_eq!(keys, expected, "{name}");
        }
        assert!(predictor("perceptron").is_none());
    }
}
