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
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use sim_core::{Component, CycleStack};

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

#[derive(Deserialize)]
struct Summary {
    schema: String,
    workload: String,
    #[serde(default)]
    params: Vec<(String, String)>,
    cores: u32,
    sockets: u32,
    frequency_hz: u64,
    cycles: f64,
    instructions: u64,
    threads: Vec<SummaryThread>,
}

#[derive(Deserialize)]
struct SummaryThread {
    thread: u32,
    instructions: u64,
    cycles: f64,
    stack: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct AttributionRow {
    thread: u32,
    function: Option<String>,
    execs: u64,
}

/// Reads the stacks of the run directory `dir`.
pub fn load(dir: &Path) -> Result<RunStacks> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        if dir.is_dir() {
            format!(
                "{} is not an isim run directory (no readable summary.json)",
                dir.display()
            )
        } else {
            format!("{}: no such run directory", dir.display())
        }
    })?;
    let s: Summary = serde_json::from_str(&text)
        .with_context(|| format!("{}: not an isim run summary", path.display()))?;
    if s.schema != crate::run::SCHEMA {
        bail!(
            "{}: schema `{}`, expected `{}`: re-run it with this version of isim",
            path.display(),
            s.schema,
            crate::run::SCHEMA
        );
    }
    let groups = thread_groups(&dir.join("attribution.json"))?;
    let mut threads = Vec::with_capacity(s.threads.len());
    for t in s.threads {
        let mut stack = CycleStack::default();
        for (name, v) in &t.stack {
            let Some(c) = Component::ALL.iter().find(|c| c.name() == name) else {
                bail!(
                    "{}: thread {} has an unknown cycle-stack component `{name}`",
                    path.display(),
                    t.thread
                );
            };
            stack.add(*c, *v);
        }
        threads.push(ThreadData {
            thread: t.thread,
            instructions: t.instructions,
            cycles: t.cycles,
            stack,
            group: groups
                .get(&t.thread)
                .cloned()
                .unwrap_or_else(|| UNKNOWN_GROUP.to_string()),
        });
    }
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
/// `attribution.json` puts every thread in [`UNKNOWN_GROUP`].
fn thread_groups(path: &Path) -> Result<BTreeMap<u32, String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let rows: Vec<AttributionRow> = serde_json::from_str(&text)
        .with_context(|| format!("{}: not an attribution file", path.display()))?;
    let mut per: BTreeMap<u32, BTreeMap<String, u64>> = BTreeMap::new();
    for r in rows {
        if let Some(f) = r.function {
            *per.entry(r.thread).or_default().entry(f).or_default() += r.execs;
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

    #[test]
    fn groups_are_the_function_with_most_executions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("attribution.json");
        std::fs::write(
            &p,
            r#"[{"thread":0,"pc":"0x1","function":"main","execs":5},
                {"thread":0,"pc":"0x2","function":"work","execs":4},
                {"thread":0,"pc":"0x3","function":"work","execs":3},
                {"thread":1,"pc":"0x2","function":"b","execs":4},
                {"thread":1,"pc":"0x5","function":"a","execs":4},
                {"thread":2,"pc":"0x9","function":null,"execs":40}]"#,
        )
        .unwrap();
        let g = thread_groups(&p).unwrap();
        assert_eq!(g.get(&0).map(String::as_str), Some("work"));
        assert_eq!(g.get(&1).map(String::as_str), Some("a"));
        assert_eq!(g.get(&2), None);
        assert!(
            thread_groups(&dir.path().join("missing.json"))
                .unwrap()
                .is_empty()
        );
    }
}
