//! The memory hierarchy's own configuration, in the units the model works in (cycles, bytes,
//! bytes per cycle). The `isim` package converts a validated machine config into this; this
//! crate knows nothing of TOML or of units as people write them.

isim_names::indexed_enum! {
    /// Replacement policy of one cache (`replacement` in a `[cache.*]` table); one file per
    /// policy in [`crate::replacement`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ReplacementKind {
        /// True least-recently-used.
        Lru = "lru",
        /// Tree pseudo-LRU (one bit per internal node of a binary tree over the ways;
        /// associativity must be a power of two).
        TreePlru = "tree-plru",
        /// Static re-reference interval prediction (2-bit RRPV, insert at distant − 1).
        Srrip = "srrip",
    }
}
isim_names::serde_by_name!(ReplacementKind);

/// Geometry and timing of one cache level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheParams {
    /// Capacity in bytes.
    pub size: u64,
    /// Ways per set.
    pub associativity: u32,
    /// Line size in bytes (a power of two, equal at every level).
    pub line_size: u32,
    /// Cycles to read data on a hit.
    pub data_latency: u32,
    /// Cycles to find out whether the line is present (paid by a miss before going on).
    pub tag_latency: u32,
    /// Replacement policy.
    pub replacement: ReplacementKind,
}

impl CacheParams {
    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.size / (self.associativity as u64 * self.line_size as u64)
    }
}

isim_names::indexed_enum! {
    /// How the bus chooses among cores that want it at the same time (`[bus] arbitration`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Arbitration {
        /// First come, first served in simulated time.
        Fifo = "fifo",
        /// Cores that compete share the bus equally (cycling over the cores).
        RoundRobin = "round-robin",
        /// Lower core index wins; a low-priority core gets only what higher ones leave.
        FixedPriority = "fixed-priority",
    }
}
isim_names::serde_by_name!(Arbitration);

isim_names::indexed_enum! {
    /// The coherence protocol among private caches (`[coherence] protocol`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Protocol {
        /// Modified / Shared / Invalid: a load always fills in `S`, so a store to a line the
        /// core loaded first is an upgrade on the bus.
        Msi = "msi",
        /// MSI plus Exclusive: a load that finds no other copy anywhere fills with ownership
        /// (clean `E`), so a later store by the same core is an L1 hit with no bus
        /// transaction.
        Mesi = "mesi",
    }
}
isim_names::serde_by_name!(Protocol);

/// The whole memory system.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket (at most 64).
    pub cores_per_socket: u32,
    /// Private instruction cache.
    pub l1i: CacheParams,
    /// Private data cache.
    pub l1d: CacheParams,
    /// Second level.
    pub l2: CacheParams,
    /// Cores sharing one L2 (divides `cores_per_socket`).
    pub l2_shared_by: u32,
    /// Optional third level, shared by all cores of a socket.
    pub l3: Option<CacheParams>,
    /// Bus bandwidth between the L2s and the L3 (or memory), bytes per core cycle.
    pub bus_bytes_per_cycle: f64,
    /// Bus arbitration policy.
    pub arbitration: Arbitration,
    /// DRAM access latency in cycles (without queueing).
    pub dram_latency: u32,
    /// Bandwidth of one DRAM controller, bytes per core cycle.
    pub dram_bytes_per_cycle: f64,
    /// DRAM controllers per socket.
    pub dram_controllers: u32,
    /// Address interleaving granule across controllers, bytes (a power of two).
    pub dram_interleave: u64,
    /// Banks and rows of each controller (off by default: every access then costs
    /// `dram_latency`).
    pub dram_banks: crate::dram::BankParams,
    /// Extra cycles for an access served by another socket.
    pub off_socket_latency: u32,
    /// Coherence protocol.
    pub protocol: Protocol,
    /// Cycles added when an access has to reach into another core's private caches of the
    /// same socket: to take a line modified there, or to invalidate copies there for a store
    /// (the directory's snoop to that core and its answer).
    pub snoop_latency: u32,
    /// The L1D's prefetcher (per core).
    pub l1d_prefetch: crate::prefetch::PrefetchParams,
    /// The L2's prefetcher (per core, filling the core's L2).
    pub l2_prefetch: crate::prefetch::PrefetchParams,
}

impl MemoryConfig {
    /// Cycles a store takes on an idle machine to take a line modified in the L1 of a core of
    /// the same socket with another L2 (docs/memory.md's latency table: the path's tags, the
    /// bus slot above the L2, the tag of the level that finds it, the neighbour's L1 data,
    /// the snoop): what moving a lock word between two cores costs.
    pub fn neighbour_latency(&self) -> u64 {
        let found = self.l3.map_or(self.l2.tag_latency, |l3| l3.tag_latency);
        let bus = (self.l1d.line_size as f64 / self.bus_bytes_per_cycle).ceil() as u64;
        (self.l1d.tag_latency + self.l2.tag_latency + found + self.l1d.data_latency) as u64
            + bus
            + self.snoop_latency as u64
    }

    /// Total cores.
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// A small machine for tests and examples: `sockets` × `cores_per_socket` cores, 32 KiB
    /// 8-way L1s (3 cycles), 256 KiB 8-way private L2s (12), a 2 MiB-per-core 16-way L3 (40),
    /// 64-byte lines, a 32 B/cycle FIFO bus, 200-cycle DRAM at 16 B/cycle per controller, MSI, no prefetchers.
    pub fn small(sockets: u32, cores_per_socket: u32) -> MemoryConfig {
        let c = |size, associativity, data_latency, tag_latency| CacheParams {
            size,
            associativity,
            line_size: 64,
            data_latency,
            tag_latency,
            replacement: ReplacementKind::Lru,
        };
        MemoryConfig {
            sockets,
            cores_per_socket,
            l1i: c(32 << 10, 8, 3, 1),
            l1d: c(32 << 10, 8, 3, 1),
            l2: c(256 << 10, 8, 12, 3),
            l2_shared_by: 1,
            l3: Some(c((2 << 20) * cores_per_socket as u64, 16, 40, 10)),
            bus_bytes_per_cycle: 32.0,
            arbitration: Arbitration::Fifo,
            dram_latency: 200,
            dram_bytes_per_cycle: 16.0,
            dram_controllers: 1,
            dram_interleave: 4096,
            dram_banks: Default::default(),
            off_socket_latency: 100,
            protocol: Protocol::Msi,
            snoop_latency: 0,
            l1d_prefetch: Default::default(),
            l2_prefetch: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PrefetchKind;
    use serde::Deserialize;
    use serde::de::value::{Error, StrDeserializer};

    fn parse<'de, T: Deserialize<'de>>(name: &'de str) -> Result<T, Error> {
        T::deserialize(StrDeserializer::<Error>::new(name))
    }

    /// Serde reads exactly the names `NAMES` lists (the config files' spelling), each to the
    /// value of the same position in `ALL`, and refuses anything else by listing them.
    #[test]
    fn settings_enums_read_their_config_names() {
        for (name, value) in ReplacementKind::NAMES.iter().zip(ReplacementKind::ALL) {
            assert_eq!(parse::<ReplacementKind>(name).ok(), Some(value));
            assert_eq!(value.name(), *name);
        }
        assert_eq!(
            parse::<Arbitration>("round-robin").ok(),
            Some(Arbitration::RoundRobin)
        );
        assert_eq!(parse::<Protocol>("msi").ok(), Some(Protocol::Msi));
        assert_eq!(
            parse::<PrefetchKind>("next-line").ok(),
            Some(PrefetchKind::NextLine)
        );
        let e = parse::<ReplacementKind>("plru").expect_err("not a policy");
        assert!(e.to_string().contains("`lru`, `tree-plru`, `srrip`"), "{e}");
        assert_eq!(
            (Arbitration::NAMES, Protocol::NAMES, PrefetchKind::NAMES),
            (
                ["fifo", "round-robin", "fixed-priority"],
                ["msi", "mesi"],
                ["none", "next-line", "stride"]
            )
        );
    }
}
