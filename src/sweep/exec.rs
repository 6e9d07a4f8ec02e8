//! Executing a sweep on this host: the pending runs of the plan, longest expected first, on a
//! rayon pool of `--jobs` threads, each worker taking the next run from a shared queue (a
//! program's traces first, `programs.rs`); a failed run does not stop the others.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};

use super::plan::{PlannedRun, prepare_dir};
use super::programs::trace_program;
use super::results::{SweepOutcome, finish};
use crate::dirs::sweep::SweepSpec;

/// Progress of a sweep, reported to the caller.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// The plan: `total` runs, of which `pending` must be run.
    Plan {
        /// Runs in the sweep.
        total: usize,
        /// Runs still to do.
        pending: usize,
    },
    /// A run started.
    Started(&'a str),
    /// A run finished (successfully or not).
    Finished(&'a str),
}

/// Runs (or resumes) the sweep `spec` in `dir` with at most `jobs` runs at a time, then writes
/// `sweep.json` and `scaling.svg`. A failed run does not stop the others; the sweep then fails
/// naming every failed run, and a rerun redoes only those.
pub fn sweep(
    spec: &SweepSpec,
    dir: &Path,
    jobs: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<SweepOutcome> {
    prepare_dir(spec, dir)?;
    let plan = spec.plan();
    let done = |r: &PlannedRun| r.is_done(dir);
    let mut pending: Vec<&PlannedRun> = plan.iter().filter(|r| !done(r)).collect();
    let reused: Vec<String> = plan
        .iter()
        .filter(|r| done(r))
        .map(|r| r.id.clone())
        .collect();
    progress(Progress::Plan {
        total: plan.len(),
        pending: pending.len(),
    });
    // Longest expected first (bigger inputs, then more cores), so that the last runs to finish
    // are short ones and the pool stays busy to the end.
    pending.sort_by_key(|r| (std::cmp::Reverse(r.size), std::cmp::Reverse(r.cores)));
    let failures: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    // Every run to do, including those a failed trace will take down with it.
    let to_do = pending.len();
    if !spec.program.is_empty() && !pending.is_empty() {
        trace_program(spec, dir, &pending, jobs, progress, &failures)?;
        // Runs whose trace could not be made fail with it.
        let failed = failures.lock().unwrap_or_else(|p| p.into_inner()).clone();
        pending.retain(|r| {
            !failed
                .iter()
                .any(|(id, _)| *id == format!("trace c{}", r.cores))
        });
    }
    if !pending.is_empty() {
        let workers = jobs.clamp(1, pending.len());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("isim-sweep-{i}"))
            .build()
            .context("cannot start the sweep's thread pool")?;
        let next = AtomicUsize::new(0);
        pool.scope(|s| {
            for _ in 0..workers {
                s.spawn(|_| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(run) = pending.get(i) else { break };
                        progress(Progress::Started(&run.id));
                        let req = spec.request(run, dir);
                        if let Err(e) = crate::run::run(&req, |_| {}) {
                            failures
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push((run.id.clone(), format!("{e:#}")));
                        }
                        progress(Progress::Finished(&run.id));
                    }
                });
            }
        });
    }
    let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    if !failures.is_empty() {
        let failed_runs = plan.iter().filter(|r| !done(r)).count();
        bail!(failure_message(failures, failed_runs, to_do));
    }
    finish(spec, dir, reused)
}

/// The error of a sweep with failures: how many of the runs it had to do did not finish
/// (`failed_runs` of `to_do`; a run whose program's trace failed counts, and the trace's error
/// stands for it in the list), then each failure, sorted.
fn failure_message(
    mut failures: Vec<(String, String)>,
    failed_runs: usize,
    to_do: usize,
) -> String {
    failures.sort();
    let list: Vec<String> = failures
        .iter()
        .map(|(id, e)| format!("{id}: {e}"))
        .collect();
    format!(
        "{failed_runs} of {to_do} runs failed (the others are kept; rerun the same command to redo only the failed ones):\n  {}",
        list.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::failure_message;

    /// A failed trace takes down every run of its core count: they count as failed runs
    /// (they once made the message read "1 of 0 runs failed").
    #[test]
    fn runs_lost_to_a_failed_trace_count_as_failed() {
        let m = failure_message(
            vec![
                ("trace c4".into(), "qemu failed".into()),
                ("default_c1".into(), "bad".into()),
            ],
            3,
            4,
        );
        assert!(m.starts_with("3 of 4 runs failed"), "{m}");
        assert!(
            m.contains("\n  default_c1: bad\n  trace c4: qemu failed"),
            "{m}"
        );
    }
}
