//! The value every omitted key takes: the default machine, a modest modern 1-socket 8-core
//! part (Skylake-like core, 3 GHz), spelled out in `configs/default.toml` and documented in
//! `docs/config.md`. A test checks that the file and this code describe the same machine,
//! so neither can drift from the other.
//!
//! Two tables are special. `[branch_predictor]` parameters default per `type` (a gshare
//! config gets gshare's defaults, not the default TAGE's): each predictor's defaults are
//! its settings' `Default` in `sim_core::bpred`, next to its fields. `[cache.l3]` has no
//! default instance: an omitted `[cache.l3]` means a machine without an L3, while a present
//! one fills its omitted keys from [`l3`]. `[tlb]` likewise: omitted, no translation is
//! modelled (the default machine has none); present, its omitted keys come from [`tlb`].

use sim_core::LockKind;
use sim_core::bpred::{BpredConfig, TageConfig};
use sim_memory::{Arbitration, PrefetchKind, Protocol, ReplacementKind};

use super::machine::{
    BusConfig, CacheConfig, CacheHierarchyConfig, CoherenceConfig, CoreConfig, DramConfig,
    LocksConfig, MachineConfig, OffSocketConfig, OpLatencies, SharedBy, StoreForward, SystemConfig,
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
            scheduler_size: 0,
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
                locked: 12,
            },
            store_forward: StoreForward {
                enabled: true,
                int: 5,
                fp: 5,
                partial: 16,
            },
        },
        // A modern core predicts loops and long correlations: TAGE-class (Seznec, JILP
        // 2006), with the sizes `TageConfig::default` documents.
        branch_predictor: BpredConfig::Tage(TageConfig::default()),
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
            // isim's choice for now: none (see configs/default.toml).
            snoop_latency: 0,
        },
        locks: LocksConfig {
            // The idealized lock of issue 42: first come, first served in simulated time.
            model: LockKind::Fifo,
            futex_wait: None,
            futex_wake: None,
            wake_latency: None,
            spin: None,
            // isim's choice: a library lock call costs nothing beyond its atomic unless the
            // machine's file says what it costs (configs/host-zen3.toml measures it).
            call: 0,
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
            banks: None,
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

/// The futex costs a `[locks] model = "futex"` table takes for the keys it omits, in core
/// cycles at 3 GHz: measured by `benches/host/futex.c` on the 2026-11-28 host (a 2-vCPU KVM
/// guest: a futex wait that returns at once 200-234 ns, a wake with nobody asleep 134-165
/// ns, a wake to the woken thread running 46-53 us, the guest's idle vCPU being woken).
pub(super) const FUTEX_WAIT: u32 = 660;
pub(super) const FUTEX_WAKE: u32 = 450;
pub(super) const WAKE_LATENCY: u32 = 140_000;
/// How long a spinning lock implementation watches a held word before its futex wait
/// (`[locks] spin`), in core cycles at 3 GHz: Rust's std `Mutex` spins 100 times, each a load
/// and a `pause`, which took 2.7-3.1 µs in all on the AMD guest of 2026-11-29
/// (`benches/host/futex.c`).
pub(super) const SPIN: u32 = 9_000;

#[cfg(test)]
mod tests {
    use sim_core::bpred::BpredConfig;

    /// The parameter names validation and messages use (each predictor's `check`) are
    /// exactly the fields each type serializes, so a new field cannot be left unchecked.
    #[test]
    fn predictor_param_lists_match_the_variants() {
        for variant in BpredConfig::all() {
            let name = variant.type_name();
            assert_eq!(BpredConfig::default_of(name).as_ref(), Some(&variant));
            let table = toml::Table::try_from(&variant).expect("serializes");
            assert_eq!(table.get("type"), Some(&toml::Value::from(name)));
            let mut keys: Vec<&str> = table
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "type")
                .collect();
            let mut expected = variant.param_names();
            keys.sort_unstable();
            expected.sort_unstable();
            assert_eq!(keys, expected, "{name}");
        }
        assert!(BpredConfig::default_of("perceptron").is_none());
    }
}
