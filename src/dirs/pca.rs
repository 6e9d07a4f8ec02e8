//! A PCA directory (`isim pca`): `pca.json`, `pca.svg` and `dendrogram.svg`. The struct here
//! is `pca.json`; its fields are declared in alphabetical order at every level, the order in
//! which the file has always listed its keys.

use std::collections::BTreeMap;

use accounting::cluster::Merge;
use accounting::table::ReportTable;
use serde::{Deserialize, Serialize};

/// Schema identifier of `pca.json`.
pub const SCHEMA: &str = "isim-pca/1";
/// The analysis.
pub const PCA: &str = "pca.json";
/// PC 1 against PC 2.
pub const SCATTER_SVG: &str = "pca.svg";
/// The average-linkage dendrogram.
pub const DENDROGRAM_SVG: &str = "dendrogram.svg";

/// `pca.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PcaFile {
    /// Leading components the clustering used.
    pub clustered_on_components: usize,
    /// The columns analysed (cycle-stack components with some variance).
    pub columns: Vec<String>,
    /// Per principal component.
    pub components: Vec<PcaComponent>,
    /// Average-linkage merges over the rows.
    pub dendrogram: Vec<Merge>,
    /// Columns dropped for zero variance.
    pub dropped_columns: Vec<String>,
    /// Rows in the dendrogram's leaf order.
    pub leaf_order: Vec<usize>,
    /// Per column, its mean.
    pub means: Vec<f64>,
    /// The terminal tables, for the report.
    #[serde(serialize_with = "accounting::table::serialize_sorted")]
    pub report_tables: Vec<ReportTable>,
    /// The rows: one per run (or per thread group of a heterogeneous run).
    pub rows: Vec<PcaRow>,
    /// Per column, the scale it was divided by (1 unless standardized).
    pub scales: Vec<f64>,
    /// [`SCHEMA`].
    pub schema: String,
    /// Correlation PCA (every column scaled to unit variance).
    pub standardized: bool,
}

/// One principal component of `pca.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PcaComponent {
    /// Cumulative share of the variance explained, up to this component.
    pub cumulative: f64,
    /// Share of the variance it explains.
    pub explained: f64,
    /// Loading per column.
    pub loadings: BTreeMap<String, f64>,
    /// The column with the largest absolute loading.
    pub main_contributor: String,
    /// Its number, from 1.
    pub pc: usize,
    /// Its variance.
    pub variance: f64,
}

/// One row of `pca.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PcaRow {
    /// Config label, for runs of a sweep.
    pub config: Option<String>,
    /// Core count.
    pub cores: u32,
    /// The run directory.
    pub dir: String,
    /// Thread group, for a heterogeneous run.
    pub group: Option<String>,
    /// Label in tables and charts.
    pub label: String,
    /// Scores on every component.
    pub scores: Vec<f64>,
    /// The series the row belongs to (its label without the core count).
    pub series: String,
    /// Each cycle-stack component's share of the aggregated stack.
    pub shares: BTreeMap<String, f64>,
    /// Workload size, if recorded.
    pub size: Option<u64>,
    /// Workload name.
    pub workload: String,
}
