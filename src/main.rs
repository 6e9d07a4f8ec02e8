//! The `isim` command line: one binary, one verb per job. Each verb parses its arguments with
//! clap, calls the library, prints a result or a clear error, and exits non-zero on failure.
//! Long work shows an indicatif progress bar on a terminal and stays silent otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};
use isim::info::TraceInfo;
use isim::progress::{bar, spinner};
use sim_frontend::Trace;
use sim_frontend::workloads::{self, Params, WORKLOADS};

#[derive(Parser)]
#[command(
    name = "isim",
    version,
    about = "Trace-driven multicore interval simulator with built-in accounting",
    long_about = "isim simulates multithreaded programs from traces on a machine described in TOML, and explains \
                  where the cycles go. Traces come from built-in workload generators (`isim gen`), from other \
                  simulators (`isim import`), or from real programs."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a workload or a trace on a machine and write a run directory
    /// (with no arguments: `lu-owner` on the built-in default machine).
    Run(RunArgs),
    /// List the built-in workloads, with what each is built to show.
    Workloads,
    /// Generate a built-in workload's trace.
    Gen(GenArgs),
    /// Import another simulator's trace.
    #[command(subcommand)]
    Import(ImportCmd),
    /// Export a thread of an isim trace for another simulator.
    #[command(subcommand)]
    Export(ExportCmd),
    /// Show what a trace holds: header, static table, per-thread instruction and marker counts
    /// (stored in a v2 trace's tables; `--verify` decodes and checks every record).
    TraceInfo {
        /// The trace file.
        file: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Decode every record and check it (and, from format v2 on, that the counts equal
        /// those stored in its tables); v1 traces are always decoded.
        #[arg(long)]
        verify: bool,
        /// Instead, count per thread the instructions and accesses executed inside this
        /// function and its callees (what `callgrind --toggle-collect=FUNCTION` counts).
        #[arg(long, value_name = "FUNCTION")]
        inside: Option<String>,
    },
    /// Check or show a machine config.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// Trace a real multithreaded x86-64 program under QEMU user mode: every instruction of
    /// every thread with its memory accesses, pthread synchronization and a DWARF source map.
    Trace(isim::trace::TraceArgs),
    /// Sweep a built-in workload over core counts (and sizes and configs), runs in parallel
    /// and resumable; writes a scaling table (sweep.json) and scaling.svg.
    Sweep(isim::sweep::SweepArgs),
    /// One task of a Slurm job array of `isim sweep --slurm` (what its job script runs).
    #[command(hide = true)]
    SweepTask {
        /// The sweep directory.
        dir: PathBuf,
        /// The submission the task belongs to (`slurm/s<K>.json`).
        #[arg(long)]
        submission: u32,
        /// The task's index in the array (default: Slurm's SLURM_ARRAY_TASK_ID).
        #[arg(long)]
        index: Option<usize>,
    },
    /// PCA and average-linkage clustering over the normalised cycle stacks of sweeps and runs;
    /// writes pca.json, pca.svg and dendrogram.svg.
    Pca(isim::pca::PcaArgs),
    /// Write a self-contained HTML report of a run, sweep or PCA directory.
    Report(isim::report::ReportArgs),
    /// LIME: which code causes the load imbalance of each barrier/join/pool-delimited section,
    /// ranked (control-flow leaders, cache misses, mispredictions); writes lime.json.
    Lime(isim::lime::LimeArgs),
    /// Lock analysis: per mutex, the source lines that take it, the cycles threads waited for
    /// it, its hold time and the critical sections waited behind; writes locks.json.
    Locks(isim::locks::LocksArgs),
    /// What-if re-runs of a run directory, compared section by section: erase the misses LIME
    /// reports (`erase`), or change machine settings (`set`).
    #[command(subcommand)]
    Whatif(isim::lime::WhatifCmd),
    /// Rank a run's basic blocks by their share of parallel execution (ParaShares): executions
    /// divided by the threads running when each started, times a weight.
    Parashare(isim::parashare::ParashareArgs),
    /// Per-thread call-path profiles (cycles per component, instructions, visits, misses, sync
    /// time), aggregated over threads (none, sum, set, key, calltree) as in Score-P; writes
    /// profile-<strategy>.json and optionally a CUBE4 archive (--cube).
    Profile(isim::profile::ProfileArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Machine config (default: the built-in configs/default.toml).
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Override a config key, e.g. `--set core.rob_size=256` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Built-in workload to generate and simulate (default: lu-owner).
    #[arg(long, short = 'w', conflicts_with = "trace")]
    workload: Option<String>,
    /// Threads of the workload (default: the machine's core count).
    #[arg(long, short = 't')]
    threads: Option<u32>,
    /// Size of the workload (default: the workload's own; see `isim workloads`).
    #[arg(long, short = 's')]
    size: Option<u64>,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulate this trace instead of a built-in workload.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Resize the machine to this many cores (per-socket structure kept, sockets added or
    /// removed).
    #[arg(long)]
    cores: Option<u32>,
    /// Run directory to write.
    #[arg(long = "out", short = 'o', default_value = "isim-run")]
    out: PathBuf,
    /// Host threads the simulation uses (default: all cores): in the exact model, the
    /// simulated threads' traces are decoded and their branches predicted ahead on all but
    /// one; in the parallel model, the cores themselves are simulated on them.
    /// The results are the same, byte for byte, whatever the number.
    #[arg(long, value_name = "N")]
    host_threads: Option<usize>,
    /// How the engine orders the cores' work: `exact`, one core at a time (the reference), or
    /// `parallel`, rounds in which the cores run at once on the host threads up to their
    /// next access beyond their L1s and private L2s (docs/parallel.md: speed and
    /// differences). Each gives the same results for any number of host threads.
    #[arg(long, default_value = "exact", value_parser = model_name)]
    model: sim_core::Model,
    /// Cycles a core may run ahead of the slower ones before the engine interleaves them
    /// again (default 200): the exact model's quantum, the parallel model's round (a core
    /// that shares written data runs by `--sharing-quantum`, if smaller). Smaller interleaves
    /// accesses to shared data more finely, at more scheduling work.
    #[arg(long, value_name = "CYCLES", value_parser = clap::value_parser!(u32).range(1..))]
    quantum: Option<u32>,
    /// Cycles a core whose data came from another core's cache in its last 1,000 cycles may
    /// run ahead of the slower ones (default 2, at most the quantum); 0 runs such cores by
    /// the quantum like the others, as isim did before 2026-11-29 (cores writing one line
    /// then take it from each other once per quantum).
    #[arg(long, value_name = "CYCLES")]
    sharing_quantum: Option<u32>,
}

/// Parses a model name (`isim run --model`).
fn model_name(s: &str) -> Result<sim_core::Model, String> {
    sim_core::Model::from_name(s)
        .ok_or_else(|| format!("expected one of {}", sim_core::Model::NAMES.join(", ")))
}

#[derive(Args)]
struct GenArgs {
    /// Workload name (see `isim workloads`).
    workload: String,
    /// Number of threads.
    #[arg(long, short = 't')]
    threads: u32,
    /// Problem size (meaning per workload; see `isim workloads`); default per workload.
    #[arg(long, short = 's')]
    size: Option<u64>,
    /// Seed for the workload's random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output trace file.
    #[arg(long = "out", short = 'o')]
    out: PathBuf,
}

#[derive(Subcommand)]
enum ImportCmd {
    /// Import ChampSim `input_instr` traces (raw, .gz or .xz); each file becomes one thread.
    Champsim {
        /// Input files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output trace file.
        #[arg(long = "out", short = 'o')]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum ExportCmd {
    /// Write one thread as ChampSim `input_instr` records (.xz or .gz compressed by the
    /// output's extension, raw otherwise): a Pin-free way to run a traced program through
    /// ChampSim. Synchronization markers have no place in the format and are left out.
    Champsim {
        /// The isim trace.
        trace: PathBuf,
        /// The thread to export.
        #[arg(long, default_value_t = 0)]
        thread: u32,
        /// Only the instructions between the thread's region-of-interest markers.
        #[arg(long)]
        roi: bool,
        /// Output file (e.g. `thread0.champsimtrace.xz`).
        #[arg(long = "out", short = 'o')]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Validate a config; every error is reported, each naming key, value and what is allowed.
    Check {
        /// Config file.
        file: PathBuf,
        /// Override a key, e.g. `--set core.rob_size=256` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Print the resolved config with every default filled in.
    Show {
        /// Config file (default: the built-in default machine).
        file: Option<PathBuf>,
        /// Override a key, e.g. `--set core.rob_size=256` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

/// This process's peak resident set so far, in KiB (Linux's `VmHWM`; `None` elsewhere).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn summary_line(path: &Path) -> Result<String> {
    let t = Trace::open(path)?;
    let n: u64 = t.threads.iter().map(|d| d.instructions).sum();
    let bytes = std::fs::metadata(path)?.len();
    Ok(format!(
        "wrote {}: {}, {} threads, {n} instructions, {bytes} bytes ({} bytes/instruction)",
        path.display(),
        t.meta.workload,
        t.thread_count(),
        isim::info::per_instruction(bytes, n)
    ))
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Run(a) => {
            let req = isim::run::RunRequest {
                config: a.config,
                sets: a.set,
                workload: a.workload,
                threads: a.threads,
                size: a.size,
                seed: a.seed,
                trace: a.trace,
                cores: a.cores,
                erase: Vec::new(),
                out: a.out,
                host_threads: a.host_threads.unwrap_or(0),
                model: a.model,
                quantum: a.quantum,
                sharing_quantum: a.sharing_quantum,
            };
            let pb = spinner("simulating".into());
            let start = std::time::Instant::now();
            let r = isim::run::run(&req, |n| {
                pb.set_message(format!("simulating: {n} instructions"))
            });
            pb.finish_and_clear();
            let o = r?;
            let secs = start.elapsed().as_secs_f64();
            for n in &o.notes {
                eprintln!("{n}");
            }
            print!("{}", isim::run::render_summary(&o));
            let insts: u64 = o.result.threads.iter().map(|t| t.instructions).sum();
            println!(
                "host: {secs:.2} s, {:.1} simulated MIPS{}",
                insts as f64 / secs / 1e6,
                peak_rss().map_or(String::new(), |kb| format!(
                    ", peak memory {:.0} MB",
                    kb as f64 / 1024.0
                ))
            );
        }
        Cmd::Workloads => {
            for w in WORKLOADS {
                println!("{:<16} {}", w.name, w.summary);
                println!("{:<16}   shows: {}", "", w.shows);
                println!(
                    "{:<16}   --size: {} (default {}; {})",
                    "",
                    w.size_meaning,
                    w.default_size,
                    if w.work_per_thread {
                        "work grows with --threads: sweeps show weak scaling"
                    } else {
                        "fixed-size problem: sweeps show strong scaling"
                    }
                );
            }
        }
        Cmd::Gen(a) => {
            let Some(w) = workloads::find(&a.workload) else {
                let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
                bail!(
                    "unknown workload `{}`: expected one of {}",
                    a.workload,
                    names.join(", ")
                );
            };
            let p = Params {
                threads: a.threads,
                size: a.size.unwrap_or(w.default_size),
                seed: a.seed,
            };
            let pb = spinner(format!(
                "generating {} ({} threads, size {})",
                w.name, p.threads, p.size
            ));
            let r = w.generate(&p, &a.out);
            pb.finish_and_clear();
            r?;
            println!("{}", summary_line(&a.out)?);
        }
        Cmd::Import(ImportCmd::Champsim { files, out }) => {
            let pb = spinner("importing ChampSim records".into());
            let r = sim_frontend::champsim::import(&files, &out, |n| {
                pb.set_message(format!("importing ChampSim records: {n}"))
            });
            pb.finish_and_clear();
            r?;
            println!("{}", summary_line(&out)?);
        }
        Cmd::Export(ExportCmd::Champsim {
            trace,
            thread,
            roi,
            out,
        }) => {
            let t = Trace::open(&trace)?;
            let pb = spinner("exporting ChampSim records".into());
            let r = sim_frontend::champsim::export(&t, thread, roi, &out, |n| {
                pb.set_message(format!("exporting ChampSim records: {n}"))
            });
            pb.finish_and_clear();
            let c = r?;
            println!(
                "wrote {}: thread {thread}, {} instructions ({} loads, {} stores, {} branches, {} taken)",
                out.display(),
                c.instructions,
                c.loads,
                c.stores,
                c.branches,
                c.taken
            );
            if c.mem_dropped + c.regs_dropped > 0 {
                println!(
                    "left out (the format holds 4 loads, 2 stores, 4 sources, 2 destinations per instruction, no address 0): {} memory operands, {} register operands",
                    c.mem_dropped, c.regs_dropped
                );
            }
            println!(
                "left out (no place in the format): {} markers",
                c.markers_dropped
            );
        }
        Cmd::TraceInfo {
            file,
            json,
            inside: Some(f),
            ..
        } => {
            let t = Trace::open(&file)?;
            let counts = sim_frontend::tracer::inside::inside_counts(&t, &f)?;
            if json {
                let rows: Vec<_> = counts
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        serde_json::json!({"thread": i, "instructions": c.instructions,
                            "loads": c.loads, "stores": c.stores, "activations": c.calls,
                            "read_modify_writes": c.rmw})
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"function": f, "threads": rows})
                    )?
                );
            } else {
                println!("inside {f} (and its callees):");
                println!(
                    "{:>6} {:>13} {:>11} {:>11} {:>11} {:>11}",
                    "thread", "instructions", "loads", "stores", "rmw", "activations"
                );
                for (i, c) in counts.iter().enumerate() {
                    println!(
                        "{i:>6} {:>13} {:>11} {:>11} {:>11} {:>11}",
                        c.instructions, c.loads, c.stores, c.rmw, c.calls
                    );
                }
                println!(
                    "(callgrind counts a read-modify-write as one write: its Dr = loads - rmw)"
                );
            }
        }
        Cmd::TraceInfo {
            file,
            json,
            verify,
            inside: None,
        } => {
            let t = Trace::open(&file)?;
            let stored = if verify { None } else { TraceInfo::stored(&t)? };
            let info = match stored {
                Some(i) => i,
                None => {
                    let total: u64 = t.threads.iter().map(|d| d.records).sum();
                    let pb = bar(total, "decoding");
                    let info = TraceInfo::collect(&t, |n| pb.set_position(n));
                    pb.finish_and_clear();
                    info?
                }
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                print!("{}", info.render());
            }
        }
        Cmd::Trace(a) => {
            let r = isim::trace::trace(&a)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", r.render());
            }
        }
        Cmd::Parashare(a) => isim::parashare::main(a)?,
        Cmd::Profile(a) => isim::profile::main(a)?,
        Cmd::Lime(a) => isim::lime::main(&a)?,
        Cmd::Locks(a) => isim::locks::main(&a)?,
        Cmd::Whatif(c) => isim::lime::whatif(&c)?,
        Cmd::Sweep(a) => isim::sweep::cli(&a)?,
        Cmd::SweepTask {
            dir,
            submission,
            index,
        } => isim::slurm::task(&dir, submission, index)?,
        Cmd::Pca(a) => isim::pca::cli(&a)?,
        Cmd::Report(a) => isim::report::cli(&a)?,
        Cmd::Config(ConfigCmd::Check { file, set }) => match isim::config::load(&file, &set) {
            Ok(c) => println!("{}: ok ({} cores)", file.display(), c.total_cores()),
            Err(errs) => {
                eprintln!("{errs}");
                eprintln!("{}: {} error(s)", file.display(), errs.errors.len());
                return Ok(ExitCode::FAILURE);
            }
        },
        Cmd::Config(ConfigCmd::Show { file, set }) => {
            let cfg = isim::config::load_or_default(file.as_deref(), &set);
            match cfg {
                Ok(c) => print!("{}", c.to_toml()),
                Err(errs) => {
                    eprintln!("{errs}");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Restores the default action of SIGPIPE, which the Rust runtime ignores: then `isim ... |
/// head` ends quietly when `head` stops reading, like any Unix filter, instead of panicking in
/// `println!` with "failed printing to stdout". A run killed this way leaves only its
/// `.partial` directory, never one that looks complete.
#[allow(unsafe_code)]
fn default_sigpipe() {
    // SAFETY: called first thing in `main`, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE and no handler code is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigpipe();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
