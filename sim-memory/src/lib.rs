//! The memory hierarchy of the simulated machine: set-associative caches with pluggable
//! replacement, MSI or MESI coherence across private and shared caches and sockets, misses in
//! flight that later accesses wait for, L1D and L2 prefetchers, a bus per socket with
//! bandwidth and arbitration, DRAM controllers with bandwidth queues, and miss erasure.
//! Every access returns its latency and where it was served, so the core model can attribute
//! cycles and misses to the instruction that caused them.
//!
//! The crate knows nothing of the core model or the trace format. `docs/memory.md` documents
//! the model; [`hierarchy`] holds the coherence protocol, [`slots`] the bandwidth model, and
//! [`callgrind`] a model with callgrind's semantics used as a peer oracle for the cache arrays.
//!
//! The crate owns the settings of its components: the replacement policy, prefetcher,
//! coherence protocol and bus arbitration enums are spelled here once, with the names config
//! files use ([`named_enum!`]); the `isim` config layer validates names against them.

/// Generates a settings enum of fixed names: `ALL` and `NAMES` in the order the docs list
/// them, `name()`/`from_name()`, and serde as that name (an unknown name is an error listing
/// the allowed ones). Adding a value is one line here in its enum; every list of names
/// (config validation, error messages) is read from `ALL`/`NAMES`.
macro_rules! named_enum {
    ($(#[$meta:meta])* $ty:ident { $($(#[$vmeta:meta])* $variant:ident = $name:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $ty {
            $($(#[$vmeta])* $variant),+
        }

        impl $ty {
            /// Every value, in the order the docs list them.
            pub const ALL: &[$ty] = &[$($ty::$variant),+];

            /// Every value's name, in the order of [`Self::ALL`].
            pub const NAMES: &[&str] = &[$($name),+];

            /// The name used in config files.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }

            /// The value with this config-file name.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::from_name(&name)
                    .ok_or_else(|| serde::de::Error::unknown_variant(&name, Self::NAMES))
            }
        }
    };
}

pub mod cache;
pub mod callgrind;
pub mod config;
pub mod hierarchy;
pub mod prefetch;
pub mod replacement;
pub mod slots;
pub mod stats;

pub use config::{Arbitration, CacheParams, MemoryConfig, Protocol, ReplacementKind};
pub use hierarchy::{Kind, MachineError, Memory, Outcome, Served};
pub use prefetch::{PrefetchKind, PrefetchParams};
pub use stats::{CacheStats, CoreStats};
