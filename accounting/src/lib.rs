//! Analyses over simulation results: cycle stacks, LIME, ParaShares, thread-profile
//! aggregation, PCA and clustering, and report rendering.
//!
//! The crate consumes events and records and never drives the simulation.
//!
//! * [`render`] — charts of cycle stacks: self-contained stacked-bar SVG and terminal text bars,
//!   from plain data (labels and one value per component), with a stable colour and character per
//!   component name.

pub mod attribution;
pub mod render;
