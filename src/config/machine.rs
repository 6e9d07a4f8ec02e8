//! The validated machine description, [`MachineConfig`]: what the simulator is built from.
//! Every value here has passed the checks of `validate.rs` (powers of two, cache geometry,
//! sharing that divides the socket, ...) and carries its unit as a type, so the models never
//! re-check or re-parse. `Serialize` writes the same shape as the TOML files, which is how
//! [`MachineConfig::to_toml`] produces a resolved config that loads back identically.

use serde::{Serialize, Serializer};

use sim_core::bpred::BpredConfig;
pub use sim_core::core::{CoreConfig, OpLatencies, StoreForward};
use sim_core::{LockKind, LockModel};
use sim_memory::{Arbitration, PrefetchKind, Protocol, ReplacementKind};

use super::units::{Bandwidth, Frequency, Size, Time};

/// A whole simulated machine: sockets of cores with their caches, the bus, DRAM and the
/// links between sockets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MachineConfig {
    /// Sockets, cores and clock.
    pub system: SystemConfig,
    /// The interval core model, identical for every core.
    pub core: CoreConfig,
    /// The branch predictor of each core: the predictor crate's own settings type, which
    /// serializes as the `[branch_predictor]` table (`type` and that type's parameters).
    pub branch_predictor: BpredConfig,
    /// The cache hierarchy.
    pub cache: CacheHierarchyConfig,
    /// Coherence among private caches.
    pub coherence: CoherenceConfig,
    /// How contended mutexes pass between threads.
    pub locks: LocksConfig,
    /// The shared bus between caches and memory.
    pub bus: BusConfig,
    /// Main memory.
    pub dram: DramConfig,
    /// The link between sockets.
    pub off_socket: OffSocketConfig,
    /// Each core's data TLB; `None` when the config has no `[tlb]` table (no address
    /// translation is modelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<TlbConfig>,
}

impl MachineConfig {
    /// The engine's lock model.
    pub fn lock_model(&self) -> LockModel {
        let l = &self.locks;
        match l.model {
            LockKind::Fifo => LockModel::Fifo,
            LockKind::Futex => LockModel::Futex {
                wait: f64::from(l.futex_wait.unwrap_or(0)),
                wake: f64::from(l.futex_wake.unwrap_or(0)),
                latency: f64::from(l.wake_latency.unwrap_or(0)),
                spin: f64::from(l.spin.unwrap_or(0)),
            },
        }
    }

    /// What a lock or unlock call into untraced library code costs besides its atomic, in
    /// core cycles (`[locks] call`).
    pub fn lock_call(&self) -> f64 {
        f64::from(self.locks.call)
    }

    /// Sockets × cores per socket. Validation guarantees this fits in a `u32`.
    pub fn total_cores(&self) -> u32 {
        self.system.sockets * self.system.cores_per_socket
    }

    /// The resolved config as TOML: every default filled in, units written as people write
    /// them (`"32KiB"`, `"2.67GHz"`). Loading the result gives back an equal config; it is
    /// what a run directory records.
    pub fn to_toml(&self) -> String {
        // Serializing plain structs of integers, strings and tables cannot fail; the
        // fallback keeps this infallible without a panic path.
        let body = toml::to_string(self)
            .unwrap_or_else(|e| format!("# could not render the config: {e}\n"));
        format!(
            "# isim machine configuration, resolved: every default filled in.\n\
             # Keys and units are documented in docs/config.md.\n\n{body}"
        )
    }
}

/// `[system]`: how many cores, arranged how, at what clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SystemConfig {
    /// Number of sockets (≥ 1).
    pub sockets: u32,
    /// Cores in each socket (≥ 1).
    pub cores_per_socket: u32,
    /// Core clock frequency, the same for every core and cache.
    pub frequency: Frequency,
}

/// `[cache.*]`: the levels of the hierarchy. L1s are private; L2 is private or shared by a
/// group of cores; L3, if present, is shared by a group of L2 groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheHierarchyConfig {
    /// Private instruction cache.
    pub l1i: CacheConfig,
    /// Private data cache.
    pub l1d: CacheConfig,
    /// Second level (unified).
    pub l2: CacheConfig,
    /// Third level (unified); `None` when the config has no `[cache.l3]` table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l3: Option<CacheConfig>,
}

impl CacheHierarchyConfig {
    /// The cache line size, the same at every level.
    pub fn line_size(&self) -> Size {
        self.l1d.line_size
    }

    /// The levels present, outermost last, with their names (`"l1i"`, `"l1d"`, `"l2"`,
    /// `"l3"`).
    pub fn levels(&self) -> impl Iterator<Item = (&'static str, &CacheConfig)> {
        [
            ("l1i", Some(&self.l1i)),
            ("l1d", Some(&self.l1d)),
            ("l2", Some(&self.l2)),
            ("l3", self.l3.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, cache)| cache.map(|c| (name, c)))
    }
}

/// One cache level. Validated: `size` = sets × `associativity` × `line_size` with sets a
/// power of two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheConfig {
    /// Capacity of one instance.
    pub size: Size,
    /// Ways per set.
    pub associativity: u32,
    /// Line size, a power of two, equal at all levels.
    pub line_size: Size,
    /// Cycles to read the data array.
    pub data_latency: u32,
    /// Cycles to read the tag array.
    pub tag_latency: u32,
    /// How many cores share one instance.
    pub shared_by: SharedBy,
    /// The replacement policy.
    pub replacement: ReplacementKind,
    /// The hardware prefetcher (L1D and L2 only; `none` elsewhere).
    pub prefetcher: PrefetchKind,
    /// Lines (or strides) a prefetcher fetches ahead per trigger, 1 to 32.
    pub prefetch_degree: u32,
}

impl CacheConfig {
    /// Lines in one instance.
    pub fn lines(&self) -> u64 {
        self.size.0 / self.line_size.0
    }

    /// Sets in one instance (a power of two).
    pub fn sets(&self) -> u64 {
        self.lines() / u64::from(self.associativity)
    }

    /// Cores sharing one instance in a socket of `cores_per_socket` cores.
    pub fn cores_sharing(&self, cores_per_socket: u32) -> u32 {
        self.shared_by.cores(cores_per_socket)
    }
}

/// How many cores share one instance of a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedBy {
    /// A fixed number of cores (written as an integer).
    Cores(u32),
    /// All cores of a socket, however many there are (written `"socket"`): a core-count
    /// sweep then needs only `--set system.cores_per_socket=N`.
    Socket,
}

impl SharedBy {
    /// The number of cores sharing one instance in a socket of `cores_per_socket` cores.
    pub fn cores(self, cores_per_socket: u32) -> u32 {
        match self {
            Self::Cores(n) => n,
            Self::Socket => cores_per_socket,
        }
    }
}

impl Serialize for SharedBy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Cores(n) => serializer.serialize_u32(*n),
            Self::Socket => serializer.serialize_str("socket"),
        }
    }
}

/// `[coherence]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoherenceConfig {
    /// The protocol.
    pub protocol: Protocol,
    /// Cycles an access adds when it reaches into another core's private caches (to take a
    /// modified line or invalidate copies): the snoop's round trip from the shared level.
    pub snoop_latency: u32,
}

/// `[locks]`: how a contended mutex passes between threads (`sim_core::LockModel`); the
/// futex costs, in core cycles, belong to `model = "futex"` only (present exactly then).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocksConfig {
    /// `fifo` (first come, first served in simulated time) or `futex` (the C library's
    /// lock word and the kernel's futex).
    pub model: LockKind,
    /// A futex wait that returns at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub futex_wait: Option<u32>,
    /// A futex wake, for the releasing thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub futex_wake: Option<u32>,
    /// From a futex wake to the woken thread running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_latency: Option<u32>,
    /// How long a lock whose implementation spins watches a held word before its futex wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spin: Option<u32>,
    /// The code of a lock or unlock call into a library the trace does not hold (the
    /// interposed pthread and OpenMP lock calls), besides its atomic instruction: cycles
    /// each call costs its thread before its atomic (`sim_core::EngineConfig::lock_call`).
    pub call: u32,
}

/// `[bus]`: the shared interconnect of a socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BusConfig {
    /// Bytes per second the bus carries.
    pub bandwidth: Bandwidth,
    /// The arbitration policy.
    pub arbitration: Arbitration,
}

/// `[dram]`: main memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DramConfig {
    /// Access time of an unloaded controller.
    pub latency: Time,
    /// Bandwidth of one controller.
    pub bandwidth: Bandwidth,
    /// Controllers per socket.
    pub controllers: u32,
    /// Bytes of consecutive addresses mapped to one controller before the next
    /// (a power of two, at least a line).
    pub interleave: Size,
    /// Banks and rows of each controller (none: every access costs `latency`).
    #[serde(flatten)]
    pub banks: Option<DramBanks>,
}

/// `[dram]`'s bank keys, all given or none (`sim-memory/src/dram.rs` is the model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DramBanks {
    /// Banks per controller (a power of two); consecutive lines go to consecutive banks.
    pub banks: u32,
    /// Bytes of one bank's row (a power-of-two number of lines).
    pub row_size: Size,
    /// Precharge time (closing a row).
    pub t_rp: Time,
    /// Activate time (opening a row).
    pub t_rcd: Time,
    /// Column access time.
    pub t_cas: Time,
    /// Refresh interval and refresh time (both or neither: without them, no refresh).
    #[serde(flatten)]
    pub refresh: Option<DramRefresh>,
}

/// `[dram]`'s refresh keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DramRefresh {
    /// Time from one refresh to the next.
    pub t_refi: Time,
    /// Time a refresh holds every bank.
    pub t_rfc: Time,
}

/// `[off_socket]`: the link between sockets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffSocketConfig {
    /// Extra latency of an access served by another socket.
    pub latency: Time,
}

/// `[tlb]`: each core's data TLB (two levels) and page walkers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlbConfig {
    /// Page size (a power of two, at least 4 KiB).
    pub page_size: Size,
    /// First-level entries.
    pub l1_entries: u32,
    /// First-level ways (divides the entries; the number of sets is a power of two).
    pub l1_associativity: u32,
    /// Second-level entries.
    pub l2_entries: u32,
    /// Second-level ways.
    pub l2_associativity: u32,
    /// Cycles a first-level miss that hits the second level adds.
    pub l2_latency: u32,
    /// Cycles of a page walk.
    pub walk_latency: u32,
    /// Page walks in flight at once.
    pub walkers: u32,
}
