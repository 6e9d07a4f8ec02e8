//! Reading a run directory's cycle stacks for the scaling analyses: the per-thread stacks and
//! totals from `summary.json`, each thread's group from `attribution.json`, and the aggregates
//! of `accounting::scaling` (threads doing real work, per thread group).
//!
//! A thread's group is the top-level function it runs, as the cycle-stacks paper groups threads
//! (§2.3, footnote 1: minor differences in control flow do not split a group): its *start
//! function*, the function of its first traced instruction (`summary.json`'s
//! `start_function`: a created thread's start routine, `main` for a program's main thread).
//! One rule serves the common idiom of a main thread that creates workers and then runs their
//! function itself (SPLASH-2's `SlaveStart`, an OpenMP region's encountering thread, the
//! examples' `worker((void *)0)`): a thread whose start function starts no other thread, but
//! which executed instructions of other threads' start functions, joins the group of the one it
//! executed most. A main thread that only produces, or a pipeline stage, keeps its own group.
//! Two different starts of one name (two C++ lambdas' `operator()`) are told apart by their
//! location, `operator() (app.cc:12)`. A run directory written before start functions were
//! recorded groups by the function with most executions instead.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use accounting::scaling::{RunAggregate, ThreadStack};
use anyhow::Result;
use sim_core::CycleStack;

use crate::dirs::run::{PcRow, Summary, read_attribution};

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
    let starts: BTreeMap<u32, Start> = s
        .threads
        .iter()
        .filter_map(|t| {
            Some((
                t.thread,
                Start {
                    function: t.start_function.clone()?,
                    location: t.start_location.clone(),
                },
            ))
        })
        .collect();
    let rows = read_attribution(dir)?.unwrap_or_default();
    let groups = thread_groups(&starts, &rows);
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

/// The name with the largest count among `(name, count)` pairs given in name order; ties go to
/// the first, i.e. the smallest name.
fn largest<'a, N: PartialOrd + Copy + 'a>(
    counts: impl Iterator<Item = (&'a &'a str, &'a N)>,
) -> Option<&'a str> {
    counts
        .fold(None::<(&str, N)>, |best, (name, &n)| match best {
            Some((_, b)) if b >= n => best,
            _ => Some((name, n)),
        })
        .map(|(name, _)| name)
}

/// Where a thread's own code starts, from `summary.json`.
#[derive(Debug, Clone, PartialEq)]
struct Start {
    function: String,
    location: Option<String>,
}

/// Each thread's group (see the module docs) from the recorded starts and the per-PC
/// executions of `attribution.json`. A group is named by its start function, with the start's
/// location when two different starts share a name (two C++ lambdas' `operator()`). A thread
/// with neither a start nor an instruction of a known function gets no entry
/// ([`UNKNOWN_GROUP`]).
fn thread_groups(starts: &BTreeMap<u32, Start>, rows: &[PcRow]) -> BTreeMap<u32, String> {
    // Executions per thread and function.
    let mut per: BTreeMap<u32, BTreeMap<&str, u64>> = BTreeMap::new();
    for r in rows {
        if let Some(f) = &r.function {
            *per.entry(r.thread).or_default().entry(f).or_default() += r.counters.execs;
        }
    }
    // The function with most executions among `funcs` passing `keep`.
    let most = |funcs: &BTreeMap<&str, u64>, keep: &dyn Fn(&str) -> bool| {
        largest(funcs.iter().filter(|(f, n)| **n > 0 && keep(f))).map(str::to_string)
    };
    if starts.is_empty() {
        return per
            .iter()
            .filter_map(|(t, funcs)| Some((*t, most(funcs, &|_| true)?)))
            .collect();
    }
    // Each start function's distinct locations, and each thread's group name.
    let mut locations: BTreeMap<&str, Vec<Option<&str>>> = BTreeMap::new();
    for s in starts.values() {
        let l = locations.entry(&s.function).or_default();
        if !l.contains(&s.location.as_deref()) {
            l.push(s.location.as_deref());
        }
    }
    let name = |s: &Start| match (&s.location, locations[s.function.as_str()].len()) {
        (Some(l), n) if n > 1 => format!("{} ({l})", s.function),
        _ => s.function.clone(),
    };
    let named: BTreeMap<u32, String> = starts.iter().map(|(t, s)| (*t, name(s))).collect();
    let mut members: BTreeMap<&str, usize> = BTreeMap::new();
    for g in named.values() {
        *members.entry(g).or_default() += 1;
    }
    // The group a start function leads to: the one most threads starting there are in.
    let mut by_function: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for (t, s) in starts {
        *by_function
            .entry(&s.function)
            .or_default()
            .entry(&named[t])
            .or_default() += 1;
    }
    let group_of = |f: &str| largest(by_function[f].iter()).map(str::to_string);
    let empty = BTreeMap::new();
    named
        .iter()
        .map(|(t, g)| {
            let own = starts[t].function.as_str();
            let funcs = per.get(t).unwrap_or(&empty);
            let joined = (members[g.as_str()] == 1)
                .then(|| most(funcs, &|f| f != own && by_function.contains_key(f)))
                .flatten()
                .and_then(|f| group_of(&f));
            (*t, joined.unwrap_or_else(|| g.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use accounting::attribution::PcCounters;

    fn row(thread: u32, function: Option<&str>, execs: u64) -> PcRow {
        PcRow {
            thread,
            pc: format!("{:#x}", execs),
            function: function.map(str::to_string),
            location: None,
            counters: PcCounters {
                execs,
                ..PcCounters::default()
            },
        }
    }

    /// Without recorded start functions (an older run directory), a thread's group is the
    /// function it executed most.
    #[test]
    fn without_start_functions_groups_are_the_function_with_most_executions() {
        let rows = [
            row(0, Some("main"), 5),
            row(0, Some("work"), 4),
            row(0, Some("work"), 3),
            row(1, Some("b"), 4),
            row(1, Some("a"), 4),
            row(2, None, 40),
        ];
        let g = thread_groups(&BTreeMap::new(), &rows);
        assert_eq!(g.get(&0).map(String::as_str), Some("work"));
        assert_eq!(g.get(&1).map(String::as_str), Some("a"));
        assert_eq!(g.get(&2), None);
        assert!(thread_groups(&BTreeMap::new(), &[]).is_empty());
    }

    /// The paper's rule: threads group by start function, however their hot functions differ;
    /// a main thread that runs the workers' start function joins them; one that does not (a
    /// producer) and the stages of a pipeline keep their own groups.
    #[test]
    fn groups_are_start_functions_and_a_main_running_the_workers_joins_them() {
        let starts = |v: &[(u32, &str)]| -> BTreeMap<u32, Start> {
            v.iter()
                .map(|(t, f)| {
                    let (function, location) = match f.split_once('@') {
                        Some((f, l)) => (f.to_string(), Some(l.to_string())),
                        None => (f.to_string(), None),
                    };
                    (*t, Start { function, location })
                })
                .collect()
        };
        // SPLASH-2 style: main creates workers, then calls `worker` itself; each thread's
        // hottest function differs (daxpy, bmod), the groups do not.
        let rows = [
            row(0, Some("main"), 900),
            row(0, Some("worker"), 10),
            row(0, Some("daxpy"), 5000),
            row(1, Some("worker"), 10),
            row(1, Some("bmod"), 6000),
            row(2, Some("worker"), 10),
            row(2, Some("daxpy"), 4000),
        ];
        let g = thread_groups(&starts(&[(0, "main"), (1, "worker"), (2, "worker")]), &rows);
        assert!(g.values().all(|f| f == "worker"), "{g:?}");
        // A producer main thread never runs `consumer`: it stays `main`.
        let rows = [row(0, Some("main"), 900), row(1, Some("consumer"), 800)];
        let g = thread_groups(
            &starts(&[(0, "main"), (1, "consumer"), (2, "consumer")]),
            &rows,
        );
        assert_eq!(g[&0], "main");
        assert_eq!(g[&1], "consumer");
        assert_eq!(g[&2], "consumer");
        // A pipeline: each stage is one thread starting in its own function, and a stage that
        // calls a helper named like no start function keeps its own group.
        let rows = [
            row(1, Some("compress"), 500),
            row(1, Some("memcpy"), 900),
            row(2, Some("write_out"), 300),
        ];
        let g = thread_groups(&starts(&[(1, "compress"), (2, "write_out")]), &rows);
        assert_eq!(g[&1], "compress");
        assert_eq!(g[&2], "write_out");
        // Two C++ lambdas both named `operator()`: told apart by where they start; threads of
        // one lambda stay together.
        let g = thread_groups(
            &starts(&[
                (0, "main@a.cc:30"),
                (1, "operator()@a.cc:10"),
                (2, "operator()@a.cc:20"),
                (3, "operator()@a.cc:10"),
            ]),
            &[row(0, Some("main"), 50)],
        );
        assert_eq!(g[&0], "main");
        assert_eq!(g[&1], "operator() (a.cc:10)");
        assert_eq!(g[&2], "operator() (a.cc:20)");
        assert_eq!(g[&3], "operator() (a.cc:10)");
        // One start location for a name keeps the bare name.
        let g = thread_groups(&starts(&[(1, "f@a.c:1"), (2, "f@a.c:1")]), &[]);
        assert_eq!(g[&1], "f");
    }
}
