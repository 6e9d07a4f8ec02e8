//! `isim sweep`: one run per (config × size × core count) of a built-in workload, each
//! generating the workload with as many threads as cores and simulating it on a machine resized
//! to that many cores, executed in parallel on the host; then the scaling analysis of the cycle-
//! stacks paper (§2.3, §4.3): a scaling table per series and `scaling.svg`.
//!
//! Each run is exactly `isim run --workload W --threads N --cores N --size S --seed K
//! [--config F] [--set k=v]... --out DIR/runs/<id>` (the command is recorded in `sweep.json`), so
//! its directory is byte-identical to that command's, whatever the number of host jobs.
//! Runs are scheduled longest-expected-first on a rayon pool of `--jobs` threads, each worker
//! taking the next run from a shared queue.
//!
//! **Resuming.** The sweep's arguments are written to `DIR/sweep-args.json` before any run
//! starts. A rerun with the same arguments skips every run whose directory is complete (has
//! `summary.json`; `isim run` assembles a run under `<id>.partial` and renames it only when
//! complete) and redoes the rest; a rerun with different arguments is refused, naming what
//! differs. A config file whose contents changed since the sweep started counts as a
//! difference, so a resumed sweep never mixes machines.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use accounting::render::{self, stacked_bars_svg};
use accounting::scaling::{self, ScalingPoint, present_components};
use accounting::table::ReportTable;
use anyhow::{Context, Result, bail};
use clap::Args;
use sim_core::{Component, CycleStack};
use sim_frontend::workloads::{self, Params};

pub use crate::dirs::sweep::{
    ARGS_FILE, ARGS_SCHEMA, ConfigSpec, RESULTS_FILE, SCHEMA, SweepSpec, is_sweep_dir,
};
use crate::dirs::sweep::{
    SweepConfig, SweepFile, SweepGroup, SweepRun, SweepSeries, SweepSeriesRow, by_component,
};
use crate::fsutil::write_atomic;
use crate::run::{DEFAULT_WORKLOAD, RunRequest};
use crate::stacks::{self, RunStacks};

/// Label of the built-in default machine.
pub const DEFAULT_CONFIG_LABEL: &str = "default";

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
    /// Running the simulations on a cluster through Slurm instead of on this host.
    #[command(flatten)]
    pub slurm: crate::slurm::SlurmArgs,
}

/// Placeholder for `{threads}` in a swept program's arguments.
pub const THREADS_PLACEHOLDER: &str = "{threads}";

/// One planned run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    /// Id, also the directory name under `runs/`.
    pub id: String,
    /// Index into [`SweepSpec::configs`].
    pub config: usize,
    /// Workload size.
    pub size: u64,
    /// Cores and threads.
    pub cores: u32,
}

impl PlannedRun {
    /// The run's directory inside the sweep directory `dir`.
    pub fn dir(&self, dir: &Path) -> PathBuf {
        dir.join("runs").join(&self.id)
    }

    /// Whether the run is complete in the sweep directory `dir` (`isim run` renames a run's
    /// directory into place only once it holds everything, `summary.json` included).
    pub fn is_done(&self, dir: &Path) -> bool {
        self.dir(dir).join("summary.json").is_file()
    }
}

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

/// A finished sweep.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// The sweep directory.
    pub dir: PathBuf,
    /// Ids of the runs executed now, in plan order.
    pub executed: Vec<String>,
    /// Ids of the runs found complete and reused, in plan order.
    pub reused: Vec<String>,
    /// The scaling tables (one per series).
    pub tables: Vec<ReportTable>,
}

impl SweepSpec {
    /// Resolves and checks `args` into a spec: the workload exists, sizes are in range, configs
    /// load, and the machine can be resized to every core count.
    pub fn from_args(args: &SweepArgs) -> Result<SweepSpec> {
        if !args.program.is_empty() {
            return Self::program_from_args(args);
        }
        let name = args.workload.as_deref().unwrap_or(DEFAULT_WORKLOAD);
        let Some(w) = workloads::find(name) else {
            let names: Vec<&str> = workloads::WORKLOADS.iter().map(|w| w.name).collect();
            bail!(
                "unknown workload `{name}`: expected one of {}",
                names.join(", ")
            );
        };
        let cores = Self::core_counts(args)?;
        let mut sizes = if args.size.is_empty() {
            vec![w.default_size]
        } else {
            args.size.clone()
        };
        sizes.sort_unstable();
        sizes.dedup();
        let mut errors = Vec::new();
        for &size in &sizes {
            for &c in &cores {
                let p = Params {
                    threads: c,
                    size,
                    seed: args.seed,
                };
                if let Err(e) = w.check(&p) {
                    errors.push(e.to_string());
                }
            }
        }
        let configs = Self::configs_from_args(args, &cores, &mut errors)?;
        if !errors.is_empty() {
            bail!("the sweep cannot run:\n  {}", errors.join("\n  "));
        }
        Ok(SweepSpec {
            schema: ARGS_SCHEMA.to_string(),
            workload: w.name.to_string(),
            seed: args.seed,
            sizes,
            cores,
            configs,
            sets: args.set.clone(),
            program: Vec::new(),
            program_crc: None,
            roi: None,
        })
    }

    /// The spec of a sweep of a real program: traced once per core count.
    fn program_from_args(args: &SweepArgs) -> Result<SweepSpec> {
        if args.workload.is_some() {
            bail!("give either --workload or a program after `--`, not both");
        }
        if !args.size.is_empty() {
            bail!(
                "--size applies to built-in workloads; a program's input is in its own arguments \
                 (sweep inputs as separate sweeps)"
            );
        }
        if !args.program.iter().any(|a| a.contains(THREADS_PLACEHOLDER)) {
            bail!(
                "the program's arguments must say where the thread count goes with \
                 {THREADS_PLACEHOLDER}, e.g. `isim sweep --cores 1,2,4 -- {} -t {THREADS_PLACEHOLDER}`",
                args.program[0]
            );
        }
        let cores = Self::core_counts(args)?;
        let exe = crate::trace::check_program(&args.program[0])?;
        let bytes =
            std::fs::read(&exe).with_context(|| format!("cannot read {}", exe.display()))?;
        let mut program = args.program.clone();
        program[0] = exe.display().to_string();
        let mut errors = Vec::new();
        let configs = Self::configs_from_args(args, &cores, &mut errors)?;
        if !errors.is_empty() {
            bail!("the sweep cannot run:\n  {}", errors.join("\n  "));
        }
        let roi = match args.roi {
            crate::trace::Roi::Markers => "markers",
            crate::trace::Roi::Main => "main",
            crate::trace::Roi::All => "all",
        };
        Ok(SweepSpec {
            schema: ARGS_SCHEMA.to_string(),
            workload: exe
                .file_name()
                .map_or_else(|| program[0].clone(), |n| n.to_string_lossy().into_owned()),
            seed: args.seed,
            sizes: vec![0],
            cores,
            configs,
            sets: args.set.clone(),
            program,
            program_crc: Some(crc32fast::hash(&bytes)),
            roi: Some(roi.to_string()),
        })
    }

    /// `--cores`, sorted and deduplicated, at least one, none zero.
    fn core_counts(args: &SweepArgs) -> Result<Vec<u32>> {
        let mut cores = args.cores.clone();
        cores.sort_unstable();
        cores.dedup();
        if cores.is_empty() {
            bail!("--cores: give at least one core count, e.g. --cores 1,2,4,8");
        }
        if cores[0] == 0 {
            bail!("--cores 0: a run needs at least one core");
        }
        Ok(cores)
    }

    /// The machine configs of a sweep, each checked at every core count (errors collected).
    fn configs_from_args(
        args: &SweepArgs,
        cores: &[u32],
        errors: &mut Vec<String>,
    ) -> Result<Vec<ConfigSpec>> {
        let mut configs: Vec<ConfigSpec> = Vec::new();
        let sources: Vec<Option<&PathBuf>> = if args.config.is_empty() {
            vec![None]
        } else {
            args.config.iter().map(Some).collect()
        };
        for src in sources {
            let (base, path, text) = match src {
                None => (
                    DEFAULT_CONFIG_LABEL.to_string(),
                    None,
                    crate::config::DEFAULT_TOML.to_string(),
                ),
                Some(p) => {
                    let abs = std::fs::canonicalize(p)
                        .with_context(|| format!("config {}: cannot open", p.display()))?;
                    let text = std::fs::read_to_string(&abs)
                        .with_context(|| format!("cannot read config {}", p.display()))?;
                    let stem = p
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "config".into());
                    (safe_label(&stem), Some(abs), text)
                }
            };
            let mut label = base.clone();
            let mut k = 2;
            while configs.iter().any(|c| c.label == label) {
                label = format!("{base}-{k}");
                k += 1;
            }
            let machine = match &path {
                None => {
                    crate::config::load_str(&text, "configs/default.toml (built in)", &args.set)
                }
                Some(p) => crate::config::load(p, &args.set),
            };
            match machine {
                Err(e) => errors.push(e.to_string()),
                Ok(m) => {
                    // The machine at every core count, down to the memory model a run builds
                    // (a cache shared by more cores than a socket has fails only there).
                    for &c in cores {
                        if let Err(e) = m.with_cores(c).and_then(|m| m.memory().map(|_| ())) {
                            errors.push(format!("config {label} at {c} cores: {e}"));
                        }
                    }
                }
            }
            configs.push(ConfigSpec { label, path, text });
        }
        Ok(configs)
    }

    /// Every run, in plan order: config, then size, then core count.
    pub fn plan(&self) -> Vec<PlannedRun> {
        let mut v = Vec::new();
        for (ci, c) in self.configs.iter().enumerate() {
            for &size in &self.sizes {
                for &cores in &self.cores {
                    let id = if self.program.is_empty() {
                        format!("{}_s{size}_c{cores}", c.label)
                    } else {
                        format!("{}_c{cores}", c.label)
                    };
                    v.push(PlannedRun {
                        id,
                        config: ci,
                        size,
                        cores,
                    });
                }
            }
        }
        v
    }

    /// The `isim run` request equivalent to `run`.
    pub fn request(&self, run: &PlannedRun, dir: &Path) -> RunRequest {
        if !self.program.is_empty() {
            return RunRequest {
                config: self.configs[run.config].path.clone(),
                sets: self.sets.clone(),
                workload: None,
                threads: None,
                size: None,
                seed: self.seed,
                trace: Some(self.trace_path(run.cores, dir)),
                cores: Some(run.cores),
                erase: Vec::new(),
                out: run.dir(dir),
                // A sweep's parallelism is its runs, one host thread each.
                host_threads: 1,
            };
        }
        RunRequest {
            config: self.configs[run.config].path.clone(),
            sets: self.sets.clone(),
            workload: Some(self.workload.clone()),
            threads: Some(run.cores),
            size: Some(run.size),
            seed: self.seed,
            trace: None,
            cores: Some(run.cores),
            erase: Vec::new(),
            out: run.dir(dir),
            host_threads: 1,
        }
    }

    /// Where a program sweep keeps the trace for `cores` threads.
    pub fn trace_path(&self, cores: u32, dir: &Path) -> PathBuf {
        dir.join("traces").join(format!("c{cores}.itrace"))
    }

    /// The program's arguments for `cores` threads.
    pub fn program_for(&self, cores: u32) -> Vec<String> {
        self.program
            .iter()
            .map(|a| a.replace(THREADS_PLACEHOLDER, &cores.to_string()))
            .collect()
    }

    /// The `isim run` command line equivalent to `run` (for the record, and for handing runs
    /// to a cluster scheduler); for a program, preceded by the `isim trace` that makes its
    /// trace.
    pub fn command(&self, run: &PlannedRun, dir: &Path) -> String {
        let q = |v: &[String]| {
            v.iter()
                .map(|s| shell_quote(s))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if !self.program.is_empty() {
            let t = self.trace_path(run.cores, dir).display().to_string();
            let mut tr: Vec<String> = vec![
                "isim".into(),
                "trace".into(),
                "--roi".into(),
                self.roi.clone().unwrap_or_else(|| "main".into()),
                "-o".into(),
                t.clone(),
                "--".into(),
            ];
            tr.extend(self.program_for(run.cores));
            let mut a: Vec<String> = vec![
                "isim".into(),
                "run".into(),
                "--trace".into(),
                t,
                "--cores".into(),
                run.cores.to_string(),
            ];
            self.push_machine_and_out(&mut a, run, dir);
            return format!("{} && {}", q(&tr), q(&a));
        }
        let mut a: Vec<String> = vec![
            "isim".into(),
            "run".into(),
            "--workload".into(),
            self.workload.clone(),
            "--threads".into(),
            run.cores.to_string(),
            "--cores".into(),
            run.cores.to_string(),
            "--size".into(),
            run.size.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        self.push_machine_and_out(&mut a, run, dir);
        q(&a)
    }

    /// The arguments every run command ends with: its config, the `--set`s, its directory.
    fn push_machine_and_out(&self, a: &mut Vec<String>, run: &PlannedRun, dir: &Path) {
        if let Some(p) = &self.configs[run.config].path {
            a.push("--config".into());
            a.push(p.display().to_string());
        }
        for s in &self.sets {
            a.push("--set".into());
            a.push(s.clone());
        }
        a.push("--out".into());
        a.push(run.dir(dir).display().to_string());
    }

    /// What differs between a recorded spec (`self`) and a new one, one line per field.
    fn differences(&self, new: &SweepSpec) -> Vec<String> {
        let mut d = Vec::new();
        if self.workload != new.workload {
            d.push(format!("workload: {} now {}", self.workload, new.workload));
        }
        if self.seed != new.seed {
            d.push(format!("seed: {} now {}", self.seed, new.seed));
        }
        if self.sizes != new.sizes {
            d.push(format!("sizes: {:?} now {:?}", self.sizes, new.sizes));
        }
        if self.cores != new.cores {
            d.push(format!("cores: {:?} now {:?}", self.cores, new.cores));
        }
        if self.sets != new.sets {
            d.push(format!("--set: {:?} now {:?}", self.sets, new.sets));
        }
        if self.program != new.program {
            d.push(format!("program: {:?} now {:?}", self.program, new.program));
        } else if self.program_crc != new.program_crc {
            d.push("program: the file changed since the sweep started".into());
        }
        if self.roi != new.roi {
            d.push(format!("--roi: {:?} now {:?}", self.roi, new.roi));
        }
        let labels = |v: &[ConfigSpec]| v.iter().map(|c| c.label.clone()).collect::<Vec<_>>();
        let paths = |v: &[ConfigSpec]| v.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
        if labels(&self.configs) != labels(&new.configs)
            || paths(&self.configs) != paths(&new.configs)
        {
            d.push(format!(
                "configs: {:?} now {:?}",
                paths(&self.configs),
                paths(&new.configs)
            ));
        } else {
            for (a, b) in self.configs.iter().zip(&new.configs) {
                if a.text != b.text {
                    d.push(format!(
                        "config {}: the file changed since the sweep started",
                        a.label
                    ));
                }
            }
        }
        if d.is_empty() && self != new {
            d.push("the recorded arguments differ".into());
        }
        d
    }
}

/// `s` with every character other than ASCII letters, digits, `.`, `_` and `-` replaced by `_`.
fn safe_label(s: &str) -> String {
    let l: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if l.is_empty() || l.starts_with('.') {
        format!("c{l}")
    } else {
        l
    }
}

/// `s` quoted for a POSIX shell if it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Creates the sweep directory or checks that it holds this very sweep.
pub(crate) fn prepare_dir(spec: &SweepSpec, dir: &Path) -> Result<()> {
    let args_path = dir.join(ARGS_FILE);
    if args_path.exists() {
        let text = std::fs::read_to_string(&args_path)
            .with_context(|| format!("cannot read {}", args_path.display()))?;
        let old: SweepSpec = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a sweep arguments file; choose another --out",
                args_path.display()
            )
        })?;
        let diff = old.differences(spec);
        if !diff.is_empty() {
            bail!(
                "{} holds a sweep with different arguments ({}); rerun with the same arguments to \
                 resume it, or choose another --out",
                dir.display(),
                diff.join("; ")
            );
        }
        return Ok(());
    }
    if dir.exists() {
        let non_empty = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .next()
            .is_some();
        if non_empty || !dir.is_dir() {
            bail!(
                "{} exists and is not a sweep directory (no {ARGS_FILE}); choose another --out",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(dir.join("runs"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    write_atomic(
        &args_path,
        serde_json::to_string_pretty(spec)
            .expect("plain data")
            .as_bytes(),
    )
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
    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    if !failures.is_empty() {
        failures.sort();
        let list: Vec<String> = failures
            .iter()
            .map(|(id, e)| format!("{id}: {e}"))
            .collect();
        bail!(
            "{} of {} runs failed (the others are kept; rerun the same command to redo only the failed ones):\n  {}",
            failures.len(),
            pending.len(),
            list.join("\n  ")
        );
    }
    finish(spec, dir, reused)
}

/// The end of a complete sweep, wherever its runs ran: the scaling analysis, written as
/// `sweep.json` and `scaling.svg`. `reused` are the runs found complete when this command
/// started; the others count as executed by it.
pub(crate) fn finish(spec: &SweepSpec, dir: &Path, reused: Vec<String>) -> Result<SweepOutcome> {
    let plan = spec.plan();
    let executed: Vec<String> = plan
        .iter()
        .filter(|r| !reused.contains(&r.id))
        .map(|r| r.id.clone())
        .collect();
    let results = analyse(spec, dir, &plan)?;
    results.file.write(dir)?;
    write_atomic(&dir.join("scaling.svg"), results.svg.as_bytes())?;
    Ok(SweepOutcome {
        dir: dir.to_path_buf(),
        executed,
        reused,
        tables: results.tables,
    })
}

/// Traces the program once for each core count that a pending run needs and that has no
/// trace yet (a trace file exists only once complete), up to `jobs` at a time. The program's
/// output goes to `traces/c<N>.log`. A failed trace is recorded in `failures` as `trace c<N>`.
fn trace_program(
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
    };
    crate::trace::trace(&a).map(|_| ())
}

/// One series of a sweep: a config and size (and a thread group, for heterogeneous workloads)
/// across the core counts.
struct Series<'a> {
    config: &'a str,
    size: u64,
    group: Option<String>,
    /// (run, its aggregated stack for this series).
    points: Vec<(&'a PlannedRun, &'a RunStacks, CycleStack, Vec<u32>)>,
}

struct Analysis {
    file: SweepFile,
    svg: String,
    tables: Vec<ReportTable>,
}

/// The scaling analysis of a complete sweep: `sweep.json`'s contents, `scaling.svg` and the
/// tables.
fn analyse(spec: &SweepSpec, dir: &Path, plan: &[PlannedRun]) -> Result<Analysis> {
    let loaded: Vec<RunStacks> = plan
        .iter()
        .map(|r| stacks::load(&r.dir(dir)))
        .collect::<Result<_>>()?;
    let mut series: Vec<Series> = Vec::new();
    for (ci, c) in spec.configs.iter().enumerate() {
        for &size in &spec.sizes {
            let members: Vec<(&PlannedRun, &RunStacks)> = plan
                .iter()
                .zip(&loaded)
                .filter(|(r, _)| r.config == ci && r.size == size)
                .collect();
            series.push(Series {
                config: &c.label,
                size,
                group: None,
                points: members
                    .iter()
                    .map(|&(r, s)| {
                        (
                            r,
                            s,
                            s.aggregate.overall.stack,
                            s.aggregate.overall.threads.clone(),
                        )
                    })
                    .collect(),
            });
            // Heterogeneous: a series per working group (as a workload of its own, §2.3).
            if members.iter().any(|(_, s)| s.aggregate.heterogeneous()) {
                let mut names: Vec<&str> = members
                    .iter()
                    .flat_map(|(_, s)| s.aggregate.working_groups().map(|g| g.name.as_str()))
                    .collect();
                names.sort_unstable();
                names.dedup();
                for g in names {
                    series.push(Series {
                        config: &c.label,
                        size,
                        group: Some(g.to_string()),
                        points: members
                            .iter()
                            .filter_map(|&(r, s)| {
                                let ga = s.aggregate.groups.iter().find(|x| x.name == g)?;
                                Some((r, s, ga.aggregate.stack, ga.aggregate.threads.clone()))
                            })
                            .collect(),
                    });
                }
            }
        }
    }
    let present = present_components(series.iter().flat_map(|s| s.points.iter().map(|p| &p.2)));
    let multi_cfg = spec.configs.len() > 1;
    let multi_size = spec.sizes.len() > 1;
    let series_name = |s: &Series| {
        let mut parts = vec![spec.workload.clone()];
        if multi_cfg {
            parts.push(s.config.to_string());
        }
        if multi_size {
            parts.push(format!("size {}", s.size));
        }
        if let Some(g) = &s.group {
            parts.push(format!("group {g}"));
        }
        parts.join(", ")
    };

    let mut tables = Vec::new();
    let mut series_json = Vec::new();
    let mut bars: Vec<(String, Vec<f64>)> = Vec::new();
    for s in &series {
        let points: Vec<ScalingPoint> = s
            .points
            .iter()
            .map(|(_, st, stack, _)| ScalingPoint {
                cores: st.cores,
                cycles: st.cycles,
                stack: *stack,
            })
            .collect();
        let rows = scaling::scaling_rows(&points);
        let base = rows.first().map_or(1, |r| r.cores);
        let mut cols: Vec<String> = vec![
            "cores".into(),
            "cycles".into(),
            if base == 1 {
                "speedup".into()
            } else {
                format!("speedup vs {base}")
            },
            "efficiency".into(),
            "working threads".into(),
        ];
        cols.extend(
            present
                .iter()
                .map(|&j| format!("{} %", Component::NAMES[j])),
        );
        let mut t = ReportTable {
            title: format!(
                "Scaling: {} (shares of the aggregated stack of threads doing real work)",
                series_name(s)
            ),
            columns: cols,
            rows: Vec::new(),
        };
        let mut rows_json = Vec::new();
        for row in &rows {
            let threads = s
                .points
                .iter()
                .find(|p| p.1.cores == row.cores)
                .map_or(0, |p| p.3.len());
            let mut r = vec![
                row.cores.to_string(),
                format!("{:.0}", row.cycles),
                format!("{:.2}", row.speedup),
                format!("{:.2}", row.efficiency),
                format!("{threads}/{}", row.cores),
            ];
            r.extend(
                present
                    .iter()
                    .map(|&j| format!("{:.1}", 100.0 * row.shares[j])),
            );
            t.rows.push(r);
            rows_json.push(SweepSeriesRow {
                cores: row.cores,
                cycles: row.cycles,
                efficiency: row.efficiency,
                shares: by_component(&row.shares),
                speedup: row.speedup,
                working_threads: threads,
            });
        }
        series_json.push(SweepSeries {
            config: s.config.to_string(),
            group: s.group.clone(),
            rows: rows_json,
            size: s.size,
        });
        // scaling.svg: per-group series replace the overall one for heterogeneous workloads.
        let heterogeneous = series
            .iter()
            .any(|o| o.group.is_some() && o.config == s.config && o.size == s.size);
        if s.group.is_some() || !heterogeneous {
            if !bars.is_empty() {
                bars.push((String::new(), Vec::new())); // a gap between series
            }
            let prefix = if series.len() > 1 {
                let mut p = Vec::new();
                if multi_cfg {
                    p.push(s.config.to_string());
                }
                if multi_size {
                    p.push(format!("s{}", s.size));
                }
                if let Some(g) = &s.group {
                    p.push(g.clone());
                }
                if p.is_empty() {
                    String::new()
                } else {
                    format!("{} ", p.join(" "))
                }
            } else {
                String::new()
            };
            let mut pts: Vec<_> = s.points.iter().collect();
            pts.sort_by_key(|p| p.1.cores);
            for p in pts {
                bars.push((
                    format!(
                        "{prefix}{} core{}",
                        p.1.cores,
                        if p.1.cores == 1 { "" } else { "s" }
                    ),
                    p.2.0.to_vec(),
                ));
            }
        }
        tables.push(t);
    }
    let chart_bars = render::bars(&bars);
    let svg = stacked_bars_svg(
        &format!(
            "Scaling of {}: normalised cycle stacks of threads doing real work",
            spec.workload
        ),
        &Component::NAMES,
        &chart_bars,
        true,
    );

    let runs = plan
        .iter()
        .zip(&loaded)
        .map(|(r, s)| {
            let a = &s.aggregate;
            SweepRun {
                aggregate: by_component(&a.overall.stack.0),
                command: spec.command(r, dir),
                config: spec.configs[r.config].label.clone(),
                cores: r.cores,
                cycles: s.cycles,
                dir: PathBuf::from(format!("runs/{}", r.id)),
                groups: a
                    .groups
                    .iter()
                    .map(|g| SweepGroup {
                        aggregate: by_component(&g.aggregate.stack.0),
                        members: g.members.clone(),
                        name: g.name.clone(),
                        shares: by_component(&g.aggregate.shares()),
                        working_threads: if g.aggregate.no_real_work {
                            Vec::new()
                        } else {
                            g.aggregate.threads.clone()
                        },
                    })
                    .collect(),
                heterogeneous: a.heterogeneous(),
                id: r.id.clone(),
                instructions: s.instructions,
                no_real_work: a.overall.no_real_work,
                shares: by_component(&a.overall.shares()),
                size: r.size,
                working_threads: a.overall.threads.clone(),
            }
        })
        .collect();
    let file = SweepFile {
        configs: spec
            .configs
            .iter()
            .map(|c| SweepConfig {
                label: c.label.clone(),
                path: c.path.clone(),
            })
            .collect(),
        cores: spec.cores.clone(),
        report_tables: tables.clone(),
        runs,
        schema: SCHEMA.to_string(),
        seed: spec.seed,
        series: series_json,
        sets: spec.sets.clone(),
        sizes: spec.sizes.clone(),
        workload: spec.workload.clone(),
    };
    Ok(Analysis { file, svg, tables })
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
        return crate::slurm::cli(&spec, &args.out, &args.slurm);
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
    );
    Ok(())
}

/// Prints a finished sweep's scaling tables, `line` (what ran, where and how long) and where
/// its files are.
pub(crate) fn print_outcome(o: &SweepOutcome, line: &str) {
    for t in &o.tables {
        // Components as rows, core counts as columns: narrow enough for a terminal.
        println!("{}", t.transposed().render_text());
    }
    println!("{line}");
    println!(
        "sweep directory: {} ({RESULTS_FILE}, scaling.svg, runs/)",
        o.dir.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cores: &[u32]) -> SweepArgs {
        SweepArgs {
            workload: Some("lu-owner".into()),
            cores: cores.to_vec(),
            size: vec![],
            seed: 1,
            config: vec![],
            set: vec![],
            jobs: None,
            out: PathBuf::from("x"),
            roi: crate::trace::Roi::Main,
            program: vec![],
            slurm: Default::default(),
        }
    }

    #[test]
    fn specs_are_canonical_and_plans_cover_every_combination() {
        let a = SweepSpec::from_args(&args(&[4, 1, 2, 4])).unwrap();
        assert_eq!(a.cores, [1, 2, 4]);
        assert_eq!(a.sizes, [16]);
        assert_eq!(a.configs[0].label, "default");
        let ids: Vec<String> = a.plan().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["default_s16_c1", "default_s16_c2", "default_s16_c4"]);
        let mut b_args = args(&[1, 2, 4]);
        b_args.size = vec![16];
        assert_eq!(SweepSpec::from_args(&b_args).unwrap(), a);
        b_args.size = vec![8, 16];
        let b = SweepSpec::from_args(&b_args).unwrap();
        assert_eq!(b.plan().len(), 6);
        let d = a.differences(&b);
        assert_eq!(d, ["sizes: [16] now [8, 16]"]);
        let cmd = a.command(&a.plan()[1], Path::new("out dir"));
        assert_eq!(
            cmd,
            "isim run --workload lu-owner --threads 2 --cores 2 --size 16 --seed 1 --out 'out dir/runs/default_s16_c2'"
        );
    }

    #[test]
    fn bad_sweeps_are_refused_before_anything_runs() {
        let e = SweepSpec::from_args(&args(&[0, 2]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--cores 0"), "{e}");
        let mut a = args(&[2]);
        a.workload = Some("nope".into());
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(e.contains("unknown workload `nope`"), "{e}");
        let mut a = args(&[2]);
        a.size = vec![100_000];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(e.contains("--size 100000 is out of range"), "{e}");
        let mut a = args(&[2]);
        a.workload = None;
        a.program = vec!["./no-such-prog".into(), "-t".into(), "{threads}".into()];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(
            e.contains("no-such-prog") && e.contains("cannot read"),
            "{e}"
        );
        a.program = vec!["/bin/true".into(), "-t".into(), "4".into()];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(e.contains("{threads}"), "{e}");
        a.program = vec!["/bin/true".into(), "{threads}".into()];
        a.size = vec![10];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(e.contains("--size applies to built-in workloads"), "{e}");
        // gainestown's L3 is shared by its 4 cores: at 2 cores the memory model cannot be
        // built, which the plan must find before any run (or Slurm task) starts.
        let mut a = args(&[2, 4]);
        a.config = vec![PathBuf::from("configs/gainestown.toml")];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(
            e.contains("config gainestown at 2 cores") && e.contains("shared_by"),
            "{e}"
        );
        assert!(!e.contains("at 4 cores"), "{e}");
        let mut a = args(&[2]);
        a.set = vec!["core.rob_sise=3".into()];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(e.contains("rob_sise"), "{e}");
    }

    #[test]
    fn labels_and_quoting() {
        assert_eq!(safe_label("my config"), "my_config");
        assert_eq!(safe_label(".hidden"), "c.hidden");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("core.rob_size=256"), "core.rob_size=256");
    }
}
