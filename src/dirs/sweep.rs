//! The sweep directory's files (`docs/output.md`, "Sweep directory"): `sweep-args.json`, the
//! arguments that determine a sweep ([`SweepSpec`], written before any run starts), and
//! `sweep.json`, the results of a finished sweep ([`SweepFile`]), written by `isim sweep` and
//! read by `isim pca`, `isim report` and scripts.
//!
//! `sweep.json`'s fields are declared in alphabetical order at every level (its tables through
//! `accounting::table::serialize_sorted`, per-component maps as sorted maps), the order in
//! which the file has always listed its keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use accounting::scaling::Scaling;
use accounting::table::ReportTable;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sim_core::{COMPONENTS, Component};

use crate::fsutil::write_atomic;

/// Schema of `sweep-args.json`.
pub const ARGS_SCHEMA: &str = "isim-sweep-args/1";
/// Schema of `sweep.json`.
pub const SCHEMA: &str = "isim-sweep/1";
/// The arguments file of a sweep directory.
pub const ARGS_FILE: &str = "sweep-args.json";
/// The results file of a finished sweep.
pub const RESULTS_FILE: &str = "sweep.json";
/// The scaling chart of a finished sweep.
pub const SCALING_SVG: &str = "scaling.svg";

/// One machine config of a sweep, as recorded in `sweep-args.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSpec {
    /// Short name used in run ids and tables (the file stem, or `default`).
    pub label: String,
    /// Absolute path of the file (none for the built-in default).
    pub path: Option<PathBuf>,
    /// The file's contents when the sweep started.
    pub text: String,
}

/// The arguments that determine a sweep's results (`sweep-args.json`). `--jobs` is not among
/// them: it changes how fast, not what. Planning from it is `crate::sweep::plan`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Always [`ARGS_SCHEMA`].
    pub schema: String,
    /// Workload name.
    pub workload: String,
    /// Seed.
    pub seed: u64,
    /// Sizes, ascending, without duplicates.
    pub sizes: Vec<u64>,
    /// Core counts, ascending, without duplicates.
    pub cores: Vec<u32>,
    /// Machine configs, in the order given.
    pub configs: Vec<ConfigSpec>,
    /// `--set` overrides, in the order given.
    pub sets: Vec<String>,
    /// A traced program (absolute path first) and its arguments, `{threads}` standing for the
    /// core count; empty for a built-in workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program: Vec<String>,
    /// CRC-32 of the program file when the sweep started: a rebuilt program is another sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_crc: Option<u32>,
    /// `--roi` of the traces (`markers`, `main`, `all`), for a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roi: Option<String>,
    /// `--weak-scaling`: the program's work grows with its thread count.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub weak_scaling: bool,
}

/// Cycles (or shares) per component, keyed by component name.
pub type ByComponent = BTreeMap<String, f64>;

/// `values` (one per component, in component order) keyed by component name.
pub fn by_component(values: &[f64; COMPONENTS]) -> ByComponent {
    Component::NAMES
        .iter()
        .zip(values)
        .map(|(n, &v)| (n.to_string(), v))
        .collect()
}

/// `sweep.json`: a finished sweep's arguments, runs, scaling series and tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// The machine configs, in the order given.
    pub configs: Vec<SweepConfig>,
    /// Core counts, ascending.
    pub cores: Vec<u32>,
    /// The scaling tables, one per series.
    #[serde(serialize_with = "accounting::table::serialize_sorted")]
    pub report_tables: Vec<ReportTable>,
    /// Runs in plan order.
    pub runs: Vec<SweepRun>,
    /// Whether the problem keeps its size (`strong`) or grows with the threads (`weak`): what
    /// the series' `speedup` and `efficiency` mean; files written before isim said so showed
    /// fixed-size speedups.
    #[serde(default = "strong")]
    pub scaling: Scaling,
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Seed of the workload.
    pub seed: u64,
    /// One scaling series per config × size (× thread group, for heterogeneous workloads).
    pub series: Vec<SweepSeries>,
    /// `--set` overrides.
    pub sets: Vec<String>,
    /// Sizes, ascending.
    pub sizes: Vec<u64>,
    /// Workload name.
    pub workload: String,
}

fn strong() -> Scaling {
    Scaling::Strong
}

/// A config of a sweep as `sweep.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// Short name used in run ids and tables.
    pub label: String,
    /// Absolute path of the file (none for the built-in default).
    pub path: Option<PathBuf>,
}

/// A run listed in `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRun {
    /// The summed stack of the threads doing real work.
    pub aggregate: ByComponent,
    /// The `isim run` command equivalent to the run.
    pub command: String,
    /// Config label.
    pub config: String,
    /// Core count.
    pub cores: u32,
    /// Cycles of the run.
    pub cycles: f64,
    /// Directory, relative to the sweep directory.
    pub dir: PathBuf,
    /// The same aggregate per thread group.
    pub groups: Vec<SweepGroup>,
    /// Whether more than one thread group does real work.
    pub heterogeneous: bool,
    /// Run id.
    pub id: String,
    /// Instructions of all threads.
    pub instructions: u64,
    /// Whether no thread does real work (the aggregate then sums every thread).
    pub no_real_work: bool,
    /// Each component's share of `aggregate`.
    pub shares: ByComponent,
    /// Workload size.
    pub size: u64,
    /// The threads summed into `aggregate`.
    pub working_threads: Vec<u32>,
}

/// A thread group of a run in `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepGroup {
    /// The group's summed stack of threads doing real work.
    pub aggregate: ByComponent,
    /// Every thread of the group.
    pub members: Vec<u32>,
    /// Group name (the function holding most of its threads' instructions).
    pub name: String,
    /// Each component's share of `aggregate`.
    pub shares: ByComponent,
    /// The threads summed into `aggregate` (empty if none does real work).
    pub working_threads: Vec<u32>,
}

/// One scaling series of `sweep.json`: a config and size (and thread group) across core counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSeries {
    /// Config label.
    pub config: String,
    /// Thread group, for a heterogeneous workload's per-group series.
    pub group: Option<String>,
    /// One row per core count, ascending.
    pub rows: Vec<SweepSeriesRow>,
    /// Workload size.
    pub size: u64,
}

/// One core count of a scaling series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSeriesRow {
    /// Core count.
    pub cores: u32,
    /// Cycles of the run.
    pub cycles: f64,
    /// Speedup divided by the growth in cores.
    pub efficiency: f64,
    /// Each component's share of the series' aggregated stack.
    pub shares: ByComponent,
    /// Speedup over the smallest core count.
    pub speedup: f64,
    /// How many threads do real work.
    pub working_threads: usize,
    /// The overall series' speedup stack (absent in a group's series).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_stack: Option<SweepSpeedupStack>,
}

/// A run's speedup stack in `sweep.json` (`accounting::scaling::speedup_stack`): over all
/// threads, where the gap between the ideal speedup and the speedup goes, in cores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpeedupStack {
    /// `P / b`, `b` the series' smallest core count.
    pub ideal: f64,
    /// `ideal` − the speedup: what `components` add up to.
    pub gap: f64,
    /// Each component's part of the gap.
    pub components: ByComponent,
}

impl SweepFile {
    /// Writes `DIR/sweep.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        write_atomic(
            &dir.join(RESULTS_FILE),
            serde_json::to_string_pretty(self)?.as_bytes(),
        )
    }

    /// Reads a finished sweep's `sweep.json`; a sweep directory without it is unfinished.
    pub fn open(dir: &Path) -> Result<SweepFile> {
        let path = dir.join(RESULTS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.join(ARGS_FILE).exists() => {
                bail!(
                    "{}: the sweep has not finished (no {RESULTS_FILE}); rerun the same `isim sweep` command to complete it",
                    dir.display()
                )
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let not_results = || format!("{}: not a sweep results file", path.display());
        // The schema first, so that a file of another version says so rather than naming
        // whichever field changed.
        #[derive(Deserialize)]
        struct Head {
            schema: String,
        }
        let head: Head = serde_json::from_str(&text).with_context(not_results)?;
        if head.schema != SCHEMA {
            bail!(
                "{}: schema `{}`, expected `{SCHEMA}`: rerun the sweep with this version of isim",
                path.display(),
                head.schema
            );
        }
        serde_json::from_str(&text).with_context(not_results)
    }
}

/// Whether `dir` is a sweep directory (finished or not).
pub fn is_sweep_dir(dir: &Path) -> bool {
    dir.join(ARGS_FILE).is_file() || dir.join(RESULTS_FILE).is_file()
}
