//! The memory hierarchy of the simulated machine: caches, MSI coherence, bus, DRAM and
//! sockets, with per-access attribution of where each access was served and miss erasure.
//!
//! Empty until the memory-hierarchy issue lands; the crate exists now so that the workspace
//! has its final shape and the dependency direction (memory knows nothing of the core or the
//! trace) is fixed from the start.
