//! Analyses over simulation results: cycle stacks, LIME, ParaShares, thread-profile
//! aggregation, PCA and clustering, and report rendering.
//!
//! The crate consumes events and records and never drives the simulation.
//!
//! * [`render`] — charts of cycle stacks: self-contained stacked-bar SVG and terminal text bars,
//!   from plain data (labels and one value per component), with a stable colour and character per
//!   component name.
//! * [`parashare`] — ParaShares: the parallel block vector collector and parallelism-weighted
//!   block rankings.
//! * [`scaling`] — aggregated cycle stacks over threads doing real work and per thread group,
//!   and scaling tables (speedup, efficiency, component shares) of core-count sweeps;
//!   [`sweep`] — the scaling analysis of a whole sweep (series, their tables, the chart's bars).
//! * [`locks`] — lock analysis: per mutex, its acquiring sites, waiting, holding, and the
//!   critical sections waited behind.
//! * [`pca`] — principal component analysis of normalised cycle stacks.
//! * [`cluster`] — average-linkage clustering.
//! * [`chart`] — the charts of those analyses as SVG: the PCA scatter plot and the dendrogram.
//! * [`table`] — the `report_tables` shape every analysis's JSON carries for `isim report`.
//! * [`profile`] — per-thread call-path profiles (a collector following calls, returns and tail
//!   calls); [`aggregate`] — thread aggregation (none, SUM, SET, KEY, CALLTREE) after Score-P;
//!   [`cube`] — CUBE4 (`.cubex`) export of aggregated profiles.

pub mod aggregate;
pub mod attribution;
pub mod chart;
pub mod cluster;
pub mod cube;
pub mod lime;
pub mod locks;
pub mod parashare;
pub mod pca;
pub mod profile;
pub mod render;
pub mod scaling;
pub mod sweep;
pub mod table;
