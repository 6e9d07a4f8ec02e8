//! The memory hierarchy of the simulated machine: set-associative caches with pluggable
//! replacement, MSI or MESI coherence across private and shared caches and sockets, misses in
//! flight that later accesses wait for, L1D and L2 prefetchers, a bus per socket with
//! bandwidth and arbitration, DRAM controllers with bandwidth queues and optional banks with
//! row buffers ([`dram`]), and miss erasure.
//! Every access returns its latency and where it was served, so the core model can attribute
//! cycles and misses to the instruction that caused them.
//!
//! The crate knows nothing of the core model or the trace format. `docs/memory.md` documents
//! the model; [`hierarchy`] holds the coherence protocol, [`slots`] the bandwidth model, and
//! [`callgrind`] a model with callgrind's semantics used as a peer oracle for the cache arrays.
//!
//! The crate owns the settings of its components: the replacement policy, prefetcher,
//! coherence protocol and bus arbitration enums are spelled here once, with the names config
//! files use (`isim_names::indexed_enum!` and `serde_by_name!`); the `isim` config layer validates names against them.

pub mod cache;
pub mod callgrind;
pub mod config;
pub mod cycles;
pub mod dram;
pub mod hierarchy;
mod host;
pub mod prefetch;
pub mod private;
pub mod replacement;
pub mod slots;
pub mod stats;

/// A xorshift64 generator from `seed` (nonzero), for the tests' random inputs (this crate's
/// and sim-core's): each call returns the next state.
#[doc(hidden)]
pub fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

pub use config::{Arbitration, CacheParams, MemoryConfig, Protocol, ReplacementKind};
pub use hierarchy::{Erasure, Kind, MachineError, Memory, Outcome, Served};
pub use prefetch::{PrefetchKind, PrefetchParams};
pub use private::{Port, Private, Reach};
pub use stats::{CacheStats, CoreStats};
