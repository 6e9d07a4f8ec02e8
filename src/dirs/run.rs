//! A run directory (`isim run`): `summary.json`, `attribution.json`, `sections.json`,
//! `config.toml` and `cycle-stacks.svg`. The structs here are the files: `isim run` writes
//! them, and `RunDir::open`, the stacks of the scaling analyses and the report read them back.

use std::path::{Path, PathBuf};

use accounting::attribution::{PcCounters, SectionVisit};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sim_core::CycleStack;
use sim_memory::{CacheStats, CoreStats};

/// Schema identifier of `summary.json`.
pub const SCHEMA: &str = "isim-run/1";
/// The summary: machine, totals, per-thread stacks, memory statistics.
pub const SUMMARY: &str = "summary.json";
/// Per-thread, per-PC counters.
pub const ATTRIBUTION: &str = "attribution.json";
/// Per-thread barrier sections.
pub const SECTIONS: &str = "sections.json";
/// The machine simulated, every default filled in.
pub const CONFIG: &str = "config.toml";
/// The per-thread cycle stacks as a chart.
pub const STACKS_SVG: &str = "cycle-stacks.svg";

/// `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: String,
    /// Workload name (a built-in workload, or the traced program).
    pub workload: String,
    /// Workload parameters as the trace recorded them.
    #[serde(default)]
    pub params: Vec<(String, String)>,
    /// The trace simulated: `trace.itrace` inside the run directory, or the absolute path of
    /// the user's trace (absent in summaries of early versions: `trace.itrace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// PCs whose misses were erased (hex).
    #[serde(default)]
    pub erase: Vec<String>,
    /// How the engine ordered the cores' work; absent for the default, the exact model.
    #[serde(default, skip_serializing_if = "is_exact")]
    pub model: sim_core::Model,
    /// The engine's quantum in cycles; absent for the default ([`sim_core::engine::QUANTUM`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// The engine's quantum for threads that share written data, in cycles; absent for the
    /// default ([`sim_core::engine::SHARING_QUANTUM`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing_quantum: Option<u32>,
    /// Cores of the machine.
    pub cores: u32,
    /// Sockets of the machine.
    pub sockets: u32,
    /// Core clock.
    pub frequency_hz: u64,
    /// Cycles from the ROI start to the last thread's end.
    pub cycles: f64,
    /// Instructions of all threads.
    pub instructions: u64,
    /// Per thread.
    pub threads: Vec<ThreadSummary>,
    /// Per core: where its accesses were served.
    pub memory_cores: Vec<CoreStats>,
    /// Per cache instance.
    pub caches: Vec<CacheRow>,
    /// Per DRAM controller: its row-buffer counters, `[reads, writes]` each (only with
    /// `[dram] banks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dram: Vec<sim_memory::dram::BankStats>,
    /// Synchronization counts: mutex acquisitions arbitrated in simulated time, how many
    /// waited, lock-order cycles resolved (absent in summaries written before isim counted
    /// them: zeros).
    #[serde(default)]
    pub sync: sim_core::engine::SyncStats,
}

fn is_exact(m: &sim_core::Model) -> bool {
    *m == sim_core::Model::Exact
}

/// One thread of `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// Thread id.
    pub thread: u32,
    /// The core it ran on (absent in summaries written before threads were mapped to cores
    /// over time, when thread `t` ran on core `t`).
    #[serde(default)]
    pub core: Option<u32>,
    /// The function where the thread's own code starts (`Attribution::starts`: its first timed
    /// instruction that is the program's own): a created thread's start routine (past a
    /// runtime's trampolines), `main` for a program's main thread; absent when unknown (no
    /// symbols, no instruction, or a run directory written before isim recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_function: Option<String>,
    /// `file:line` of that start (tells apart two start routines of one name, e.g. two C++
    /// lambdas' `operator()`); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_location: Option<String>,
    /// Instructions in the ROI.
    pub instructions: u64,
    /// Cycles (the run's length).
    pub cycles: f64,
    /// Instructions per cycle (0 for a run of no cycles).
    pub ipc: f64,
    /// Branches executed.
    pub branches: u64,
    /// Of those, mispredicted.
    pub mispredictions: u64,
    /// Data-TLB first-level misses; written only for a machine with a TLB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_misses: Option<u64>,
    /// Page walks; written only for a machine with a TLB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_walks: Option<u64>,
    /// When the thread ended.
    pub end: f64,
    /// Its cycle stack.
    pub stack: CycleStack,
}

/// One cache instance of `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheRow {
    /// Instance name (e.g. `core0.l1d`).
    pub name: String,
    /// Its counters.
    #[serde(flatten)]
    pub stats: CacheStats,
}

/// One row of `attribution.json`: one static instruction in one thread.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PcRow {
    /// Thread id.
    pub thread: u32,
    /// The instruction's PC (hex).
    pub pc: String,
    /// Its function, if the trace knows it.
    pub function: Option<String>,
    /// Its source location (`file:line`), if known.
    pub location: Option<String>,
    /// Its counters.
    #[serde(flatten)]
    pub counters: PcCounters,
}

/// `sections.json`: per thread, its sections in order.
pub type Sections = Vec<Vec<SectionVisit>>;

impl Summary {
    /// Reads `dir/summary.json`, checking the schema. The errors say whether `dir` is missing
    /// or is not a run directory.
    pub fn read(dir: &Path) -> Result<Summary> {
        let path = dir.join(SUMMARY);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if dir.is_dir() {
                    bail!(
                        "{} is not an isim run directory: it has no {SUMMARY} (make one with `isim run --out {}`)",
                        dir.display(),
                        dir.display()
                    );
                }
                bail!("{}: no such run directory", dir.display());
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let s: Summary = serde_json::from_str(&text)
            .with_context(|| format!("{}: not an isim run summary", path.display()))?;
        if s.schema != SCHEMA {
            bail!(
                "{}: schema `{}`, expected `{SCHEMA}`: re-run `isim run` with this version",
                path.display(),
                s.schema
            );
        }
        Ok(s)
    }

    /// The trace the run simulated, resolved against the run directory `dir`.
    pub fn trace_path(&self, dir: &Path) -> PathBuf {
        match &self.trace {
            Some(t) if Path::new(t).is_absolute() => PathBuf::from(t),
            Some(t) => dir.join(t),
            None => dir.join("trace.itrace"),
        }
    }

    /// The erased PCs as numbers.
    pub fn erased_pcs(&self, dir: &Path) -> Result<Vec<u64>> {
        self.erase
            .iter()
            .map(|pc| {
                u64::from_str_radix(pc.trim_start_matches("0x"), 16).with_context(|| {
                    format!(
                        "{}: erase entry `{pc}` is not a hex PC",
                        dir.join(SUMMARY).display()
                    )
                })
            })
            .collect()
    }
}

/// Reads `dir/attribution.json`; `None` if the run has none.
pub fn read_attribution(dir: &Path) -> Result<Option<Vec<PcRow>>> {
    let path = dir.join(ATTRIBUTION);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let rows = serde_json::from_str(&text)
        .with_context(|| format!("{}: not an attribution file", path.display()))?;
    Ok(Some(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::Component;

    /// A thread's stack reads back as written, every component by name; a name the reader
    /// does not know is an error that names it, never a silently dropped cycle count.
    #[test]
    fn stacks_round_trip_by_component_name_and_unknown_names_are_errors() {
        let mut stack = CycleStack::default();
        for (i, c) in Component::ALL.iter().enumerate() {
            stack.add(*c, 0.5 + i as f64);
        }
        let t = ThreadSummary {
            thread: 3,
            core: Some(2),
            start_function: Some("worker".into()),
            start_location: Some("w.c:3".into()),
            instructions: 10,
            cycles: 171.0,
            ipc: 0.1,
            branches: 2,
            mispredictions: 1,
            tlb_misses: None,
            page_walks: Some(4),
            end: 171.0,
            stack,
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(!text.contains("tlb_misses"), "{text}");
        let back: ThreadSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back.stack, stack);
        assert_eq!(back.page_walks, Some(4));
        let bad = text.replace("\"mem-dram\"", "\"mem-drum\"");
        let e = serde_json::from_str::<ThreadSummary>(&bad).unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown cycle-stack component `mem-drum`"),
            "{e}"
        );
    }
}
