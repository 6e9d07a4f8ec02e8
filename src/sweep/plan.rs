//! A sweep's plan: its arguments resolved and checked into the spec recorded in
//! `sweep-args.json` ([`SweepSpec`]), the runs it consists of ([`PlannedRun`]), each run's
//! `isim run` request and command line, and the sweep directory prepared or resumed.
//!
//! **Resuming.** The sweep's arguments are written to `DIR/sweep-args.json` before any run
//! starts. A rerun with the same arguments skips every run whose directory is complete (has
//! `summary.json`; `isim run` assembles a run under `<id>.partial` and renames it only when
//! complete) and redoes the rest; a rerun with different arguments is refused, naming what
//! differs. A config file whose contents changed since the sweep started counts as a
//! difference, so a resumed sweep never mixes machines.

use std::path::{Path, PathBuf};

use accounting::scaling::Scaling;
use anyhow::{Context, Result, bail};
use sim_frontend::workloads::{self, Params};

use super::SweepArgs;
use crate::dirs::sweep::{ARGS_FILE, ARGS_SCHEMA, ConfigSpec, SweepSpec};
use crate::fsutil::write_atomic;
use crate::run::{DEFAULT_WORKLOAD, RunRequest};

/// Label of the built-in default machine.
pub const DEFAULT_CONFIG_LABEL: &str = "default";

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
        self.dir(dir).join(crate::dirs::run::SUMMARY).is_file()
    }
}

impl SweepSpec {
    /// Whether the sweep's problem keeps its size or grows with the threads: a built-in
    /// workload's `--size` says (work per thread or not), a program's `--weak-scaling`.
    pub fn scaling(&self) -> Scaling {
        let weak = if self.program.is_empty() {
            workloads::find(&self.workload).is_some_and(|w| w.work_per_thread)
        } else {
            self.weak_scaling
        };
        if weak { Scaling::Weak } else { Scaling::Strong }
    }

    /// Resolves and checks `args` into a spec: the workload exists, sizes are in range, configs
    /// load, and the machine can be resized to every core count.
    pub fn from_args(args: &SweepArgs) -> Result<SweepSpec> {
        if !args.program.is_empty() {
            return Self::program_from_args(args);
        }
        if args.weak_scaling {
            bail!(
                "--weak-scaling is for a program after `--`: a built-in workload knows whether its \
                 work grows with the threads (`isim workloads`)"
            );
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
            weak_scaling: false,
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
        let exe = crate::trace::check_program(&args.program[0])?;
        let bytes =
            std::fs::read(&exe).with_context(|| format!("cannot read {}", exe.display()))?;
        // An OpenMP program's team is sized by `OMP_NUM_THREADS`, which each trace sets to its
        // core count (`programs::team_size`): it needs no placeholder.
        if !args.program.iter().any(|a| a.contains(THREADS_PLACEHOLDER)) && !calls_openmp(&bytes) {
            bail!(
                "the program's arguments must say where the thread count goes with \
                 {THREADS_PLACEHOLDER}, e.g. `isim sweep --cores 1,2,4 -- {} -t {THREADS_PLACEHOLDER}` \
                 (an OpenMP program needs none: its team is sized by OMP_NUM_THREADS, which \
                 each trace sets to its core count)",
                args.program[0]
            );
        }
        let cores = Self::core_counts(args)?;
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
            weak_scaling: args.weak_scaling,
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
            let machine = crate::config::load_or_default(path.as_deref(), &args.set);
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
                model: sim_core::Model::Exact,
                quantum: None,
                sharing_quantum: None,
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
            model: sim_core::Model::Exact,
            quantum: None,
            sharing_quantum: None,
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

/// Whether the executable `bytes` call into an OpenMP runtime (GCC's libgomp entry points,
/// `GOMP_*`, or LLVM's, `__kmpc_*`, among its imported symbols): its team takes its size from
/// `OMP_NUM_THREADS`.
fn calls_openmp(bytes: &[u8]) -> bool {
    use object::Object;
    object::File::parse(bytes)
        .and_then(|f| f.imports())
        .is_ok_and(|imports| {
            imports
                .iter()
                .any(|i| i.name().starts_with(b"GOMP_") || i.name().starts_with(b"__kmpc_"))
        })
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
            weak_scaling: false,
            csv: false,
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
        // penryn-4x4's L3 is shared by its 4 cores: at 2 cores the memory model cannot be
        // built, which the plan must find before any run (or Slurm task) starts.
        let mut a = args(&[2, 4]);
        a.config = vec![PathBuf::from("configs/penryn-4x4.toml")];
        let e = SweepSpec::from_args(&a).unwrap_err().to_string();
        assert!(
            e.contains("config penryn-4x4 at 2 cores") && e.contains("shared_by"),
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
