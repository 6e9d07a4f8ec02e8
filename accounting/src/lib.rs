//! Analyses over simulation results: cycle stacks, LIME, ParaShares, thread-profile
//! aggregation, PCA and clustering, and report rendering.
//!
//! Empty until the analysis issues land; it consumes events and records and never drives the
//! simulation.
