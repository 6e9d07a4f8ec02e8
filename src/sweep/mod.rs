//! `isim sweep`: one run per (config × size × core count) of a built-in workload, each
//! generating the workload with as many threads as cores and simulating it on a machine resized
//! to that many cores, executed in parallel on the host; then the scaling analysis of the cycle-
//! stacks paper (§2.3, §4.3): a scaling table per series and `scaling.svg`.
//!
//! Each run is exactly `isim run --workload W --threads N --cores N --size S --seed K
//! [--config F] [--set k=v]... --out DIR/runs/<id>` (the command is recorded in `sweep.json`), so
//! its directory is byte-identical to that command's, whatever the number of host jobs.
//!
//! One concern per file: this one has the arguments and the command line; `plan.rs` turns the
//! arguments into the recorded spec and its runs, and resumes a sweep directory; `exec.rs` runs
//! the pending runs on a pool of host threads; `programs.rs` traces a real program once per core
//! count; `results.rs` reads the finished runs back, has `accounting::sweep` analyse them and
//! writes `sweep.json` and `scaling.svg`. The sweep directory's files themselves are typed in
//! `crate::dirs::sweep`.

use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Result, bail};
use clap::Args;

mod exec;
mod plan;
mod programs;
mod results;

pub use crate::dirs::sweep::{
    ARGS_FILE, ARGS_SCHEMA, ConfigSpec, RESULTS_FILE, SCALING_SVG, SCHEMA, SweepSpec, is_sweep_dir,
};
pub use exec::{Progress, sweep};
pub(crate) use plan::prepare_dir;
pub use plan::{DEFAULT_CONFIG_LABEL, PlannedRun, THREADS_PLACEHOLDER};
pub(crate) use programs::trace_one;
pub use results::SweepOutcome;
pub(crate) use results::finish;

/// `isim sweep` arguments.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Built-in workload to sweep (default: lu-owner; see `isim workloads`).
    #[arg(long, short = 'w')]
    pub workload: Option<String>,
    /// Core counts, comma-separated (e.g. `1,2,4,8,16`): each run generates the workload with
    /// that many threads and simulates it on a machine resized to that many cores.
    #[arg(long, value_delimiter = ',', required = true, value_name = "N,N,...")]
    pub cores: Vec<u32>,
    /// Workload sizes, comma-separated (default: the workload's own).
    #[arg(long, short = 's', value_delimiter = ',', value_name = "S,S,...")]
    pub size: Vec<u64>,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Machine configs, comma-separated (default: the built-in configs/default.toml).
    #[arg(long, short = 'c', value_delimiter = ',', value_name = "FILE,FILE,...")]
    pub config: Vec<PathBuf>,
    /// Override a config key in every run, e.g. `--set core.rob_size=256` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Runs at a time (default: the host's available cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Sweep directory (created; a rerun with the same arguments resumes it).
    #[arg(long = "out", short = 'o', default_value = "isim-sweep")]
    pub out: PathBuf,
    /// Region of interest when sweeping a real program (see `isim trace --roi`).
    #[arg(long, value_enum, default_value_t = crate::trace::Roi::Main)]
    pub roi: crate::trace::Roi,
    /// A real program to trace once per core count, `{threads}` standing for the count
    /// (`isim sweep --cores 1,2,4 -- ./prog -t {threads}`); each trace is simulated on every
    /// config.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
    /// The program's work grows with `{threads}` (each thread has a fixed share): its scaling
    /// tables show weak scaling (efficiency = time at the fewest cores / time, scaled speedup)
    /// instead of a fixed-size speedup. Built-in workloads know which they are.
    #[arg(long)]
    pub weak_scaling: bool,
    /// Print the scaling tables as CSV (RFC 4180, one record per core count, lines ended by
    /// CRLF) instead of aligned text: each table led by a `# title` line, tables separated by
    /// an empty line; what ran and where the files are goes to standard error.
    #[arg(long)]
    pub csv: bool,
    /// Running the simulations on a cluster through Slurm instead of on this host.
    #[command(flatten)]
    pub slurm: crate::slurm::SlurmArgs,
}

/// `isim sweep` on the command line: plans, shows one progress bar over the runs, and prints
/// the scaling tables.
pub fn cli(args: &SweepArgs) -> Result<()> {
    let spec = SweepSpec::from_args(args)?;
    if args.slurm.slurm {
        if args.jobs.is_some() {
            bail!(
                "--jobs applies to sweeps on this host; with --slurm, Slurm decides how many tasks run at a time"
            );
        }
        return crate::slurm::cli(&spec, &args.out, &args.slurm, args.csv);
    }
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    if jobs == 0 {
        bail!("--jobs 0: at least one run must run at a time");
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:40!} [{bar:30}] {pos}/{len} runs, {elapsed_precise}, eta {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    let running: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let start = std::time::Instant::now();
    let outcome = sweep(&spec, &args.out, jobs, &|p| match p {
        Progress::Plan { total, pending } => {
            bar.set_length(pending as u64);
            if total > pending {
                bar.println(format!(
                    "resuming {}: {} of {total} runs already done",
                    args.out.display(),
                    total - pending
                ));
            }
        }
        Progress::Started(id) => {
            let mut r = running.lock().unwrap_or_else(|p| p.into_inner());
            r.push(id.to_string());
            bar.set_message(format!("running {}", r.join(" ")));
        }
        Progress::Finished(id) => {
            let mut r = running.lock().unwrap_or_else(|p| p.into_inner());
            r.retain(|x| x != id);
            bar.set_message(format!("running {}", r.join(" ")));
            bar.inc(1);
        }
    });
    bar.finish_and_clear();
    let o = outcome?;
    print_outcome(
        &o,
        &format!(
            "{} runs executed, {} reused, {:.2} s on {jobs} job{}",
            o.executed.len(),
            o.reused.len(),
            start.elapsed().as_secs_f64(),
            if jobs == 1 { "" } else { "s" }
        ),
        args.csv,
    );
    Ok(())
}

/// Prints a finished sweep's scaling tables (as text, or as CSV with `csv`), `line` (what
/// ran, where and how long) and where its files are (on standard error with `csv`, so that
/// standard output is only CSV).
pub(crate) fn print_outcome(o: &SweepOutcome, line: &str, csv: bool) {
    let place = format!(
        "sweep directory: {} ({RESULTS_FILE}, {SCALING_SVG}, runs/)",
        o.dir.display()
    );
    if csv {
        for (i, t) in o.tables.iter().enumerate() {
            // One core count per record, as data tools want it.
            let gap = if i > 0 { "\r\n" } else { "" };
            print!("{gap}# {}\r\n{}", t.title, t.render_csv());
        }
        eprintln!("{line}");
        eprintln!("{place}");
        return;
    }
    for t in &o.tables {
        // Components as rows, core counts as columns: narrow enough for a terminal.
        println!("{}", t.transposed().render_text());
    }
    println!("{line}");
    println!("{place}");
}
