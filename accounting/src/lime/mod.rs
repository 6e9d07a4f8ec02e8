//! LIME (Oh et al., "LIME: a framework for debugging load imbalance in multi-threaded
//! execution", ICSE 2011): what causes load imbalance in barrier-, join- and pool-delimited
//! sections, and where in the code. [`collect`] gathers per-thread, per-instance event counts
//! during simulation; [`analyze`] runs the paper's analysis (Gram–Schmidt, UPGMA clustering,
//! leaders, forward-selection regression) and combines instances per static section;
//! [`stats`], [`cluster`] and [`cfg`] hold the pieces, each tested against hand-computed or
//! independently computed values.

pub mod analyze;
pub mod cfg;
pub mod cluster;
pub mod collect;
pub mod stats;

pub use analyze::{
    Cause, CauseKind, EventSet, MIN_THREADS, Options, SectionResult, analyze, analyze_instance,
    count_idle_after_end,
};
pub use collect::{
    Collector, Event, Instance, LibraryCalls, LibraryEvents, SectionKind, ThreadSection,
};
