//! Tracing the real program of a program sweep (`isim sweep --cores … -- PROG ARGS`): once per
//! core count, `{threads}` in its arguments standing for the count, each trace simulated on
//! every config.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};

use super::exec::Progress;
use super::plan::PlannedRun;
use crate::dirs::sweep::SweepSpec;

/// Traces the program once for each core count that a pending run needs and that has no
/// trace yet (a trace file exists only once complete), up to `jobs` at a time. The program's
/// output goes to `traces/c<N>.log`. A failed trace is recorded in `failures` as `trace c<N>`.
pub(super) fn trace_program(
    spec: &SweepSpec,
    dir: &Path,
    pending: &[&PlannedRun],
    jobs: usize,
    progress: &(dyn Fn(Progress) + Sync),
    failures: &Mutex<Vec<(String, String)>>,
) -> Result<()> {
    let mut need: Vec<u32> = pending
        .iter()
        .map(|r| r.cores)
        .filter(|&c| !spec.trace_path(c, dir).is_file())
        .collect();
    need.sort_unstable_by(|a, b| b.cmp(a));
    need.dedup();
    if need.is_empty() {
        return Ok(());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.clamp(1, need.len()))
        .thread_name(|i| format!("isim-trace-{i}"))
        .build()
        .context("cannot start the sweep's thread pool")?;
    pool.install(|| {
        use rayon::prelude::*;
        need.par_iter().for_each(|&c| {
            let id = format!("trace c{c}");
            progress(Progress::Started(&id));
            if let Err(e) = trace_one(spec, dir, c) {
                failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((id.clone(), format!("{e:#}")));
            }
            progress(Progress::Finished(&id));
        });
    });
    Ok(())
}

/// Traces the program of a program sweep for `cores` threads into its place in `dir`
/// (`traces/c<N>.itrace`, the program's output in `traces/c<N>.log`).
pub(crate) fn trace_one(spec: &SweepSpec, dir: &Path, cores: u32) -> Result<()> {
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces)
        .with_context(|| format!("cannot create {}", traces.display()))?;
    let roi = match spec.roi.as_deref() {
        Some("markers") => crate::trace::Roi::Markers,
        Some("all") => crate::trace::Roi::All,
        _ => crate::trace::Roi::Main,
    };
    let a = crate::trace::TraceArgs {
        out: spec.trace_path(cores, dir),
        roi,
        cpu: crate::trace::DEFAULT_CPU.to_string(),
        keep_capture: false,
        reconvert: false,
        json: false,
        host_threads: None,
        program: spec.program_for(cores),
        program_output: Some(traces.join(format!("c{cores}.log"))),
        program_env: team_size(cores, std::env::var_os("OMP_NUM_THREADS").is_some()),
    };
    let report = crate::trace::trace(&a)?;
    if report.ended_at_exec {
        // The trace is of a wrapper, not of the program: a sweep of it measures nothing.
        let _ = std::fs::remove_file(&a.out);
        anyhow::bail!(
            "{} called exec, so the trace holds the first program only, not the one it ran \
             (a wrapper such as `env VAR=… PROGRAM` or a shell script): sweep the program \
             itself, setting its environment in isim's (an OpenMP team is sized by the core \
             count already: OMP_NUM_THREADS={cores})",
            a.program[0]
        );
    }
    for w in &report.warnings {
        eprintln!("warning: trace c{cores}: {w}");
    }
    Ok(())
}

/// The environment a sweep's trace for `cores` gives the program: an OpenMP team of as many
/// threads as cores (`OMP_NUM_THREADS`), unless the user set it (`user_set`: then it is
/// theirs, the same at every count). A program that is not OpenMP ignores it.
fn team_size(cores: u32, user_set: bool) -> Vec<(String, String)> {
    if user_set {
        Vec::new()
    } else {
        vec![("OMP_NUM_THREADS".to_string(), cores.to_string())]
    }
}

#[cfg(test)]
mod tests {
    use super::team_size;

    #[test]
    fn an_openmp_team_is_sized_by_the_core_count_unless_the_user_sized_it() {
        assert_eq!(
            team_size(4, false),
            [("OMP_NUM_THREADS".to_string(), "4".to_string())]
        );
        assert!(team_size(4, true).is_empty());
    }
}
