//! `isim run`: one simulation, from a config and a trace (or a built-in workload) to a run
//! directory. The directory is assembled under `<out>.partial` and renamed into place only
//! when every file is written, so a run that fails or is killed leaves nothing that looks
//! complete. `docs/output.md` documents the files.

use std::path::{Path, PathBuf};

use accounting::attribution::Attribution;
use accounting::render::{self, stacked_bars_svg, text_bars};
use anyhow::{Context, Result, bail};
use sim_core::{Component, Engine, EngineConfig, Model, RunResult};
use sim_frontend::Trace;
use sim_frontend::workloads::{self, Params};

use crate::config::{self, MachineConfig};
use crate::dirs::run::{self as files, CacheRow, PcRow, Summary, ThreadSummary};
use crate::fsutil::write_atomic;

/// The workload `isim run` simulates when given neither a workload nor a trace.
pub const DEFAULT_WORKLOAD: &str = "lu-owner";

/// What to simulate and where to put the results.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Machine config file (default: the built-in `configs/default.toml`).
    pub config: Option<PathBuf>,
    /// `key=value` overrides.
    pub sets: Vec<String>,
    /// Built-in workload to generate (default: [`DEFAULT_WORKLOAD`] unless `trace` is given).
    pub workload: Option<String>,
    /// Threads of the generated workload (default: the machine's core count).
    pub threads: Option<u32>,
    /// Size of the generated workload (default: the workload's own).
    pub size: Option<u64>,
    /// Seed of the generated workload.
    pub seed: u64,
    /// An existing trace to simulate instead of a workload.
    pub trace: Option<PathBuf>,
    /// Resize the machine to this many cores.
    pub cores: Option<u32>,
    /// PCs whose data misses are erased.
    pub erase: Vec<u64>,
    /// Run directory.
    pub out: PathBuf,
    /// Host threads the simulation may use (0: all cores). The results are the same for
    /// every number.
    pub host_threads: usize,
    /// How the engine orders the cores' work.
    pub model: Model,
    /// The engine's quantum in cycles (`None`: [`sim_core::engine::QUANTUM`]).
    pub quantum: Option<u32>,
    /// The engine's quantum for threads that share written data, in cycles (`None`:
    /// [`sim_core::engine::SHARING_QUANTUM`]; 0: none).
    pub sharing_quantum: Option<u32>,
}

/// The engine's quantum: the one asked for, or the default.
fn quantum(q: Option<u32>) -> f64 {
    q.map_or(sim_core::engine::QUANTUM, f64::from)
}

/// The engine's quantum for threads that share written data: the one asked for, or the
/// default.
fn sharing_quantum(q: Option<u32>) -> f64 {
    q.map_or(sim_core::engine::SHARING_QUANTUM, f64::from)
}

/// `n` host threads, or all cores for 0.
pub fn host_threads(n: usize) -> usize {
    if n == 0 {
        std::thread::available_parallelism().map_or(1, |c| c.get())
    } else {
        n
    }
}

/// A finished run.
pub struct RunOutcome {
    /// Engine results.
    pub result: RunResult,
    /// Per-PC attribution and sections.
    pub attribution: Attribution,
    /// One-line notes for the user (e.g. the machine was resized).
    pub notes: Vec<String>,
    /// The machine simulated (after resizing).
    pub machine: MachineConfig,
    /// Workload name.
    pub workload: String,
    /// The run directory.
    pub dir: PathBuf,
}

fn load_machine(req: &RunRequest) -> Result<MachineConfig> {
    config::load_or_default(req.config.as_deref(), &req.sets).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Removes a directory when dropped, unless disarmed (`.0 = None`).
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Runs one simulation and writes its run directory.
pub fn run(req: &RunRequest, progress: impl FnMut(u64)) -> Result<RunOutcome> {
    let mut machine = load_machine(req)?;
    let out = &req.out;
    if out.exists() && !out.join(files::SUMMARY).exists() {
        bail!(
            "{} exists and is not an isim run directory; choose another --out",
            out.display()
        );
    }
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    if partial.exists() {
        std::fs::remove_dir_all(&partial)
            .with_context(|| format!("cannot remove {}", partial.display()))?;
    }
    std::fs::create_dir_all(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    // A run that fails (a damaged trace, a full disk) leaves nothing behind.
    let mut cleanup = RemoveOnDrop(Some(partial.clone()));
    let mut notes = Vec::new();
    let trace_path = match &req.trace {
        Some(t) => {
            if req.workload.is_some() {
                bail!("give either --workload or --trace, not both");
            }
            t.clone()
        }
        None => {
            let name = req.workload.as_deref().unwrap_or(DEFAULT_WORKLOAD);
            let Some(w) = workloads::find(name) else {
                let names: Vec<&str> = workloads::WORKLOADS.iter().map(|w| w.name).collect();
                bail!(
                    "unknown workload `{name}`: expected one of {}",
                    names.join(", ")
                );
            };
            let threads = req.threads.or(req.cores).unwrap_or(machine.total_cores());
            let p = Params {
                threads,
                size: req.size.unwrap_or(w.default_size),
                seed: req.seed,
            };
            let path = partial.join("trace.itrace");
            w.generate(&p, &path)?;
            path
        }
    };
    let trace = Trace::open(&trace_path)?;
    // Threads take a core when created and give it back when they end: the machine needs as
    // many cores as threads can be alive at once (`Trace::max_alive`, which reads the whole
    // trace: asked only when the trace has more threads than the cores in question).
    let n = trace.thread_count();
    match req.cores {
        Some(c) => {
            if c < n {
                let a = trace.max_alive()?;
                if c < a {
                    bail!(
                        "--cores {c} is smaller than the {a} threads of the trace that can be \
                         alive at once (one running thread per core)"
                    );
                }
            }
            machine = machine.with_cores(c)?;
        }
        None if n > machine.total_cores() => {
            let before = machine.total_cores();
            let a = trace.max_alive()?;
            if a > before {
                machine = machine.grown_to(a);
                notes.push(format!(
                    "note: the trace has {n} threads, up to {a} alive at once, and the machine \
                     {before} cores: grown to {} sockets x {} cores (its sockets kept, each \
                     larger)",
                    machine.system.sockets, machine.system.cores_per_socket
                ));
            } else {
                notes.push(format!(
                    "note: the trace has {n} threads but at most {a} alive at once: they share \
                     the machine's {before} cores, a created thread taking the lowest free one"
                ));
            }
        }
        None => {}
    }
    let cfg = EngineConfig {
        core: machine.core_params(),
        bpred: machine.bpred(),
        memory: machine.memory()?,
        erase: req.erase.clone(),
        erasure: sim_memory::Erasure::Fill,
        locks: machine.lock_model(),
        lock_call: machine.lock_call(),
    };
    let has_tlb = cfg.core.tlb.is_some();
    let program = &trace.program;
    let obs = Attribution::new(n as usize, program.insts.len()).with_own_code(program.own_code());
    let engine = Engine::new(&trace, &cfg, obs)?
        .host_threads(host_threads(req.host_threads))
        .model(req.model)
        .quantum(quantum(req.quantum))
        .sharing_quantum(sharing_quantum(req.sharing_quantum));
    let (result, attribution) = engine.run(progress)?;
    let late: Vec<String> = result
        .threads
        .iter()
        .filter(|t| t.after_roi > 0)
        .map(|t| format!("thread {} ({} instructions)", t.thread, t.after_roi))
        .collect();
    if !late.is_empty() {
        notes.push(format!(
            "warning: {} ran after the region of interest ended and were not timed",
            late.join(", ")
        ));
    }

    // Outputs.
    let starts: Vec<(Option<String>, Option<String>)> = attribution
        .starts()
        .into_iter()
        .map(|first| {
            (
                first.and_then(|i| trace.program.function_name(i).map(str::to_string)),
                first.and_then(|i| trace.program.file_line(i)),
            )
        })
        .collect();
    let threads = result
        .threads
        .iter()
        .map(|t| ThreadSummary {
            thread: t.thread,
            core: Some(t.core),
            start_function: starts.get(t.thread as usize).and_then(|s| s.0.clone()),
            start_location: starts.get(t.thread as usize).and_then(|s| s.1.clone()),
            instructions: t.instructions,
            cycles: t.cycles,
            ipc: if t.cycles > 0.0 {
                t.instructions as f64 / t.cycles
            } else {
                0.0
            },
            branches: t.branches,
            mispredictions: t.mispredictions,
            tlb_misses: has_tlb.then_some(t.tlb_misses),
            page_walks: has_tlb.then_some(t.page_walks),
            end: t.end,
            stack: t.stack,
        })
        .collect();
    let summary = Summary {
        schema: files::SCHEMA.to_string(),
        workload: trace.meta.workload.clone(),
        params: trace.meta.params.clone(),
        trace: Some(match &req.trace {
            Some(t) => std::path::absolute(t)
                .unwrap_or_else(|_| t.clone())
                .display()
                .to_string(),
            None => "trace.itrace".to_string(),
        }),
        erase: req.erase.iter().map(|pc| format!("{pc:#x}")).collect(),
        model: req.model,
        quantum: req.quantum,
        sharing_quantum: req.sharing_quantum,
        cores: machine.total_cores(),
        sockets: machine.system.sockets,
        frequency_hz: machine.system.frequency.hz(),
        cycles: result.cycles,
        instructions: result.threads.iter().map(|t| t.instructions).sum(),
        threads,
        memory_cores: result.memory_cores.clone(),
        caches: result
            .caches
            .iter()
            .map(|(name, stats)| CacheRow {
                name: name.clone(),
                stats: *stats,
            })
            .collect(),
        dram: result.dram.clone(),
        sync: result.sync,
    };
    write_atomic(
        &partial.join(files::SUMMARY),
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    write_atomic(&partial.join(files::CONFIG), machine.to_toml().as_bytes())?;
    let mut rows = Vec::new();
    for (t, per) in attribution.per_thread.iter().enumerate() {
        for (sidx, c) in per.iter().enumerate() {
            if c.execs > 0 {
                rows.push(PcRow {
                    thread: t as u32,
                    pc: format!("{:#x}", program.insts[sidx].pc),
                    function: program.function_name(sidx as u32).map(str::to_string),
                    location: program.file_line(sidx as u32),
                    counters: *c,
                });
            }
        }
    }
    write_atomic(
        &partial.join(files::ATTRIBUTION),
        serde_json::to_string(&rows)?.as_bytes(),
    )?;
    write_atomic(
        &partial.join(files::SECTIONS),
        serde_json::to_string(&attribution.sections)?.as_bytes(),
    )?;
    let bars = stack_bars(&result);
    let svg = stacked_bars_svg(
        &format!("Cycle stacks: {}", trace.meta.workload),
        &Component::NAMES,
        &render::bars(&bars),
        false,
    );
    write_atomic(&partial.join(files::STACKS_SVG), svg.as_bytes())?;
    if out.exists() {
        std::fs::remove_dir_all(out)
            .with_context(|| format!("cannot replace {}", out.display()))?;
    }
    std::fs::rename(&partial, out)
        .with_context(|| format!("cannot move the run into {}", out.display()))?;
    cleanup.0 = None;
    Ok(RunOutcome {
        result,
        attribution,
        notes,
        machine,
        workload: trace.meta.workload.clone(),
        dir: out.clone(),
    })
}

fn stack_bars(r: &RunResult) -> Vec<(String, Vec<f64>)> {
    r.threads
        .iter()
        .map(|t| (format!("thread {}", t.thread), t.stack.0.to_vec()))
        .collect()
}

/// The terminal summary: per thread instructions, cycles, IPC and the cycle stack as a text
/// bar; then totals.
pub fn render_summary(o: &RunOutcome) -> String {
    use std::fmt::Write;
    let r = &o.result;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} on {} cores ({} sockets x {}), {} cycles",
        o.workload,
        o.machine.total_cores(),
        o.machine.system.sockets,
        o.machine.system.cores_per_socket,
        r.cycles.round()
    );
    let _ = writeln!(
        s,
        "{:>6} {:>12} {:>12} {:>6} {:>8} {:>11}",
        "thread", "instructions", "cycles", "IPC", "sync %", "not alive %"
    );
    for t in &r.threads {
        let ipc = if t.cycles > 0.0 {
            t.instructions as f64 / t.cycles
        } else {
            0.0
        };
        let share = |x: f64| {
            if t.cycles > 0.0 {
                100.0 * x / t.cycles
            } else {
                0.0
            }
        };
        // Before its start and after its end a thread is not waiting for anyone: that time
        // (`imbalance-start`, `imbalance-end`) is apart from its synchronization waits.
        let absent = t.stack.get(Component::ImbalanceStart) + t.stack.get(Component::ImbalanceEnd);
        let _ = writeln!(
            s,
            "{:>6} {:>12} {:>12.0} {:>6.2} {:>7.1}% {:>10.1}%",
            t.thread,
            t.instructions,
            t.cycles,
            ipc,
            share(t.stack.sync() - absent),
            share(absent)
        );
    }
    let bars = stack_bars(r);
    s.push('\n');
    s.push_str(&text_bars(&Component::NAMES, &render::bars(&bars), 60));
    let insts: u64 = r.threads.iter().map(|t| t.instructions).sum();
    let _ = writeln!(
        s,
        "\ntotal: {insts} instructions, {:.0} cycles, aggregate IPC {:.2}",
        r.cycles,
        if r.cycles > 0.0 {
            insts as f64 / r.cycles
        } else {
            0.0
        }
    );
    let _ = writeln!(s, "run directory: {}", o.dir.display());
    s
}

/// A run directory opened for re-simulation: its trace and the exact machine it ran on.
pub struct RunDir {
    /// The directory.
    pub dir: PathBuf,
    /// Its trace.
    pub trace: Trace,
    /// The machine (from its `config.toml`, already resized).
    pub machine: MachineConfig,
    /// PCs whose misses were erased in the run.
    pub erase: Vec<u64>,
    /// Workload name.
    pub workload: String,
    /// The model the run used (replays use it too).
    pub model: Model,
    /// The quantum the run used, if not the default (replays use it too).
    pub quantum: Option<u32>,
    /// The sharing quantum the run used, if not the default (replays use it too).
    pub sharing_quantum: Option<u32>,
}

impl RunDir {
    /// Opens a run directory written by [`run`].
    pub fn open(dir: &Path) -> Result<RunDir> {
        let head = Summary::read(dir)?;
        let trace = Trace::open(&head.trace_path(dir))?;
        let machine =
            config::load(&dir.join(files::CONFIG), &[]).map_err(|e| anyhow::anyhow!("{e}"))?;
        let erase = head.erased_pcs(dir)?;
        Ok(RunDir {
            dir: dir.to_path_buf(),
            trace,
            machine,
            erase,
            workload: head.workload,
            model: head.model,
            quantum: head.quantum,
            sharing_quantum: head.sharing_quantum,
        })
    }

    /// The engine configuration of the run, with `erase` added to its own erased PCs, whose
    /// accesses behave as `erasure` says.
    pub fn engine_config(
        &self,
        machine: &MachineConfig,
        erase: &[u64],
        erasure: sim_memory::Erasure,
    ) -> Result<EngineConfig> {
        let mut all = self.erase.clone();
        all.extend_from_slice(erase);
        all.sort_unstable();
        all.dedup();
        Ok(EngineConfig {
            core: machine.core_params(),
            bpred: machine.bpred(),
            memory: machine.memory()?,
            erase: all,
            erasure,
            locks: machine.lock_model(),
            lock_call: machine.lock_call(),
        })
    }

    /// Re-simulates the run with the observer `obs` (deterministic: the same cycles as the
    /// original run), optionally with `sets` applied to its machine and extra PCs erased
    /// (isim's erasure, [`sim_memory::Erasure::Fill`]).
    pub fn replay<O: sim_core::Observer>(
        &self,
        sets: &[String],
        erase: &[u64],
        obs: O,
        progress: impl FnMut(u64),
    ) -> Result<(RunResult, O)> {
        self.replay_erasing(sets, erase, sim_memory::Erasure::Fill, obs, progress)
    }

    /// [`RunDir::replay`] with the erased PCs' accesses behaving as `erasure` says.
    pub fn replay_erasing<O: sim_core::Observer>(
        &self,
        sets: &[String],
        erase: &[u64],
        erasure: sim_memory::Erasure,
        obs: O,
        progress: impl FnMut(u64),
    ) -> Result<(RunResult, O)> {
        let machine = if sets.is_empty() {
            self.machine.clone()
        } else {
            config::load_str(
                &self.machine.to_toml(),
                &format!("{}/config.toml", self.dir.display()),
                sets,
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?
        };
        let cfg = self.engine_config(&machine, erase, erasure)?;
        let engine = Engine::new(&self.trace, &cfg, obs)?
            .host_threads(host_threads(0))
            .model(self.model)
            .quantum(quantum(self.quantum))
            .sharing_quantum(sharing_quantum(self.sharing_quantum));
        Ok(engine.run(progress)?)
    }
}
