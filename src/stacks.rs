//! Reading a run directory's cycle stacks for the scaling analyses: the per-thread stacks and
//! totals from `summary.json`, each thread's group from `attribution.json`, and the aggregates
//! of `accounting::scaling` (threads doing real work, per thread group).
//!
//! A thread's group is the function it executed most instructions in. The cycle-stacks paper
//! groups threads by the top-level function they run (§2.3, footnote 1) so that minor control
//! flow differences do not split groups; a trace has no call tree, and the function holding most
//! of a thread's instructions is the closest stable stand-in: a main thread that only creates and
//! joins workers but also runs a share of the work lands with the workers, while a pipeline
//! stage spending its time in its own function forms its own group.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use accounting::scaling::{RunAggregate, ThreadStack};
use anyhow::Result;
use sim_core::CycleStack;

use crate::dirs::run::{Summary, read_attribution};

/// Group name of a thread that executed no instruction with a known function.
pub const UNKNOWN_GROUP: &str = "(unknown)";

/// One thread of a run.
#[derive(Debug, Clone)]
pub struct ThreadData {
    /// Thread id.
    pub thread: u32,
    /// Instructions in the ROI.
    pub instructions: u64,
    /// Cycles (the run's length).
    pub cycles: f64,
    /// Its cycle stack.
    pub stack: CycleStack,
    /// Its group (see the module docs).
    pub group: String,
}

/// A run directory's stacks and totals.
#[derive(Debug, Clone)]
pub struct RunStacks {
    /// The run directory.
    pub dir: PathBuf,
    /// Workload name.
    pub workload: String,
    /// Workload parameters (`threads`, `size`, `seed`, …).
    pub params: Vec<(String, String)>,
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
    pub threads: Vec<ThreadData>,
    /// Aggregated stacks: threads doing real work, overall and per group.
    pub aggregate: RunAggregate,
}

impl RunStacks {
    /// A workload parameter, if the trace recorded it.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The workload size, if recorded.
    pub fn size(&self) -> Option<u64> {
        self.param("size").and_then(|s| s.parse().ok())
    }
}

/// Reads the stacks of the run directory `dir`.
pub fn load(dir: &Path) -> Result<RunStacks> {
    let s = Summary::read(dir)?;
    let groups = thread_groups(dir)?;
    let threads: Vec<ThreadData> = s
        .threads
        .into_iter()
        .map(|t| ThreadData {
            thread: t.thread,
            instructions: t.instructions,
            cycles: t.cycles,
            stack: t.stack,
            group: groups
                .get(&t.thread)
                .cloned()
                .unwrap_or_else(|| UNKNOWN_GROUP.to_string()),
        })
        .collect();
    let inputs: Vec<ThreadStack> = threads
        .iter()
        .map(|t| ThreadStack {
            thread: t.thread,
            group: t.group.clone(),
            stack: t.stack,
        })
        .collect();
    Ok(RunStacks {
        dir: dir.to_path_buf(),
        workload: s.workload,
        params: s.params,
        cores: s.cores,
        sockets: s.sockets,
        frequency_hz: s.frequency_hz,
        cycles: s.cycles,
        instructions: s.instructions,
        aggregate: RunAggregate::of(&inputs),
        threads,
    })
}

/// Each thread's group: the function with most executions (ties to the smaller name). A missing
/// `attribution.json` in `dir` puts every thread in [`UNKNOWN_GROUP`].
fn thread_groups(dir: &Path) -> Result<BTreeMap<u32, String>> {
    let Some(rows) = read_attribution(dir)? else {
        return Ok(BTreeMap::new());
    };
    let mut per: BTreeMap<u32, BTreeMap<String, u64>> = BTreeMap::new();
    for r in rows {
        if let Some(f) = r.function {
            *per.entry(r.thread).or_default().entry(f).or_default() += r.counters.execs;
        }
    }
    Ok(per
        .into_iter()
        .filter_map(|(t, funcs)| {
            // BTreeMap order makes the first maximum the smallest name.
            let best =
                funcs
                    .into_iter()
                    .fold(None::<(String, u64)>, |best, (f, n)| match best {
                        Some((_, bn)) if bn >= n => best,
                        _ => Some((f, n)),
                    })?;
            Some((t, best.0))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dirs::run::{ATTRIBUTION, PcRow};
    use accounting::attribution::PcCounters;

    #[test]
    fn groups_are_the_function_with_most_executions() {
        let dir = tempfile::tempdir().unwrap();
        let row = |thread, pc: &str, function: Option<&str>, execs| PcRow {
            thread,
            pc: pc.to_string(),
            function: function.map(str::to_string),
            location: None,
            counters: PcCounters {
                execs,
                ..PcCounters::default()
            },
        };
        let rows = [
            row(0, "0x1", Some("main"), 5),
            row(0, "0x2", Some("work"), 4),
            row(0, "0x3", Some("work"), 3),
            row(1, "0x2", Some("b"), 4),
            row(1, "0x5", Some("a"), 4),
            row(2, "0x9", None, 40),
        ];
        std::fs::write(
            dir.path().join(ATTRIBUTION),
            serde_json::to_string(&rows).unwrap(),
        )
        .unwrap();
        let g = thread_groups(dir.path()).unwrap();
        assert_eq!(g.get(&0).map(String::as_str), Some("work"));
        assert_eq!(g.get(&1).map(String::as_str), Some("a"));
        assert_eq!(g.get(&2), None);
        let empty = tempfile::tempdir().unwrap();
        assert!(thread_groups(empty.path()).unwrap().is_empty());
    }
}
