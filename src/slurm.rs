//! `isim sweep --slurm`: a sweep's simulations run as the tasks of Slurm job arrays instead of
//! on this host, with the same plan, the same run directories and the same `sweep.json`.
//!
//! The submitting command plans the sweep exactly as a local one (`sweep-args.json`, run ids,
//! `runs/<id>`), then hands every unfinished run to Slurm: it writes a job script per
//! submission (`slurm/s<K>.sh`, a job array of at most [`MAX_ARRAY`] tasks) and the list of
//! what each task does (`slurm/s<K>.json`) *before* calling `sbatch`, so a task that starts at
//! once finds its work. Task `i` runs `isim sweep-task DIR --submission K`, which reads the plan
//! from the sweep directory, runs the `i`-th entry through the very code a local sweep uses
//! (`isim run`'s, or `isim trace`'s for a program), and writes a status file
//! (`slurm/status/s<K>_<i>.json`: host, seconds, the error if any); its output goes to
//! `slurm/logs/s<K>_<i>.log`. A program sweep's traces are a first array; the simulations wait
//! for it (`--dependency=afterok`).
//!
//! **Collecting and resuming.** Whether a run is finished is decided as locally: its directory
//! is complete. Every later invocation of the same command asks `squeue` which tasks are
//! still pending or running, reports each earlier task that ended without its result (its
//! status file's error, or Slurm's final state, and its log), resubmits exactly those and the
//! never-submitted ones, and writes the scaling table once every run is complete. `--wait`
//! polls `squeue` until the submitted arrays end, then collects.
//!
//! The sweep directory and the `isim` binary must be visible at the same paths on the
//! submitting host and on the nodes (a shared filesystem); a task that cannot find its plan
//! says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;
use crate::sweep::{self, ARGS_FILE, SweepSpec};

/// Schema of a submission file `slurm/s<K>.json`.
pub const SUBMISSION_SCHEMA: &str = "isim-sweep-slurm/1";
/// Schema of a task status file `slurm/status/s<K>_<i>.json`.
pub const STATUS_SCHEMA: &str = "isim-sweep-task/1";
/// The subdirectory of a sweep directory holding the Slurm submissions.
pub const SLURM_DIR: &str = "slurm";
/// Most tasks in one job array (Slurm's default `MaxArraySize` is 1001: indices 0–1000).
pub const MAX_ARRAY: usize = 1000;
/// Prefix of a task that traces the program (`trace c<N>`), as in a local sweep's messages.
const TRACE_PREFIX: &str = "trace c";

/// `isim sweep`'s options for running on a Slurm cluster.
#[derive(Args, Debug, Clone, Default)]
pub struct SlurmArgs {
    /// Run each simulation as a task of a Slurm job array (submitted with `sbatch`) instead of
    /// on this host; run the same command again to collect the results and resubmit what did
    /// not finish. The sweep directory and isim must be on a filesystem the nodes share.
    #[arg(long)]
    pub slurm: bool,
    /// Slurm partition of the tasks (`sbatch --partition`).
    #[arg(long, requires = "slurm", value_name = "P")]
    pub partition: Option<String>,
    /// Time limit of each task (`sbatch --time`, e.g. `30` minutes or `2:00:00`).
    #[arg(long, requires = "slurm", value_name = "T")]
    pub time: Option<String>,
    /// Memory of each task (`sbatch --mem`, e.g. `2G`).
    #[arg(long, requires = "slurm", value_name = "M")]
    pub mem: Option<String>,
    /// Account charged (`sbatch --account`).
    #[arg(long, requires = "slurm", value_name = "A")]
    pub account: Option<String>,
    /// At most this many tasks of an array running at a time (the array's `%N`).
    #[arg(long, requires = "slurm", value_name = "N")]
    pub max_running: Option<u32>,
    /// Any other `sbatch` option, written into the job script (repeatable), e.g.
    /// `--sbatch-arg=--qos=short`.
    #[arg(
        long = "sbatch-arg",
        requires = "slurm",
        allow_hyphen_values = true,
        value_name = "X"
    )]
    pub sbatch_arg: Vec<String>,
    /// Wait until the submitted tasks have ended (polling `squeue`), then collect and write
    /// the scaling table.
    #[arg(long, requires = "slurm")]
    pub wait: bool,
}

/// One submission: a job array and what each of its tasks does (`slurm/s<K>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    /// Always [`SUBMISSION_SCHEMA`].
    pub schema: String,
    /// Number of the submission in its sweep directory, from 1.
    pub number: u32,
    /// Slurm's job id of the array (none until `sbatch` has answered).
    pub job: Option<String>,
    /// What task `i` does: a run id, or `trace c<N>` for a program's trace.
    pub tasks: Vec<String>,
}

/// What a task left behind when it ended by itself (`slurm/status/s<K>_<i>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskStatus {
    /// Always [`STATUS_SCHEMA`].
    pub schema: String,
    /// The task's work: a run id or `trace c<N>`.
    pub task: String,
    /// The node it ran on.
    pub host: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// The status the task exits with (0 when it succeeded, 1 when it failed).
    pub exit_status: i32,
    /// Its error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time, in seconds.
    pub seconds: f64,
}

fn slurm_dir(dir: &Path) -> PathBuf {
    dir.join(SLURM_DIR)
}

fn submission_path(dir: &Path, k: u32) -> PathBuf {
    slurm_dir(dir).join(format!("s{k}.json"))
}

fn script_path(dir: &Path, k: u32) -> PathBuf {
    slurm_dir(dir).join(format!("s{k}.sh"))
}

/// The log of task `i` of submission `k` (what `sbatch --output` names).
pub fn log_path(dir: &Path, k: u32, i: usize) -> PathBuf {
    slurm_dir(dir).join("logs").join(format!("s{k}_{i}.log"))
}

fn status_path(dir: &Path, k: u32, i: usize) -> PathBuf {
    slurm_dir(dir).join("status").join(format!("s{k}_{i}.json"))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not {what}", path.display()))
}

/// The submissions recorded in a sweep directory, by number.
pub fn submissions(dir: &Path) -> Result<Vec<Submission>> {
    let sd = slurm_dir(dir);
    let entries = match std::fs::read_dir(&sd) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", sd.display())),
    };
    let mut subs = Vec::new();
    for e in entries {
        let e = e.with_context(|| format!("cannot read {}", sd.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(k) = name
            .strip_prefix('s')
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let s: Submission = read_json(&e.path(), "a submission file of isim sweep --slurm")?;
        if s.schema != SUBMISSION_SCHEMA || s.number != k {
            bail!(
                "{}: schema `{}`, number {}; expected `{SUBMISSION_SCHEMA}`, number {k}",
                e.path().display(),
                s.schema,
                s.number
            );
        }
        subs.push(s);
    }
    subs.sort_by_key(|s| s.number);
    Ok(subs)
}

/// This host's name (for task statuses and messages).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "this host".into())
}

/// `isim sweep-task DIR --submission K [--index I]`: what task `I` (default: Slurm's
/// `SLURM_ARRAY_TASK_ID`) of submission `K` does, run on this node; leaves its status file.
pub fn task(dir: &Path, number: u32, index: Option<usize>) -> Result<()> {
    let host = hostname();
    let index = match index {
        Some(i) => i,
        None => {
            let v = std::env::var("SLURM_ARRAY_TASK_ID").map_err(|_| {
                anyhow::anyhow!(
                    "no --index and no SLURM_ARRAY_TASK_ID: `isim sweep-task` is what the job \
                     script of `isim sweep --slurm` runs in each task of a job array"
                )
            })?;
            v.parse()
                .with_context(|| format!("SLURM_ARRAY_TASK_ID `{v}` is not a task index"))?
        }
    };
    let args_path = dir.join(ARGS_FILE);
    if !args_path.is_file() {
        bail!(
            "{}: no sweep plan on {host}: the nodes must see the sweep directory at the same \
             path as the host that submitted it (a filesystem both share, such as a home or \
             project directory on NFS or Lustre; not a node-local /tmp)",
            args_path.display()
        );
    }
    let spec: SweepSpec = read_json(&args_path, "a sweep arguments file")?;
    let sub: Submission = read_json(
        &submission_path(dir, number),
        "a submission file of isim sweep --slurm",
    )?;
    let Some(id) = sub.tasks.get(index) else {
        bail!(
            "{}: submission {number} has {} tasks, no task {index}",
            submission_path(dir, number).display(),
            sub.tasks.len()
        );
    };
    let start = Instant::now();
    let result = run_task(&spec, dir, id);
    let status = TaskStatus {
        schema: STATUS_SCHEMA.into(),
        task: id.clone(),
        host,
        ok: result.is_ok(),
        exit_status: if result.is_ok() { 0 } else { 1 },
        error: result.as_ref().err().map(|e| format!("{e:#}")),
        seconds: start.elapsed().as_secs_f64(),
    };
    let sp = status_path(dir, number, index);
    if let Some(p) = sp.parent() {
        std::fs::create_dir_all(p).with_context(|| format!("cannot create {}", p.display()))?;
    }
    write_atomic(&sp, serde_json::to_string_pretty(&status)?.as_bytes())?;
    result
}

/// Runs one task's work: a program's trace for a core count, or one planned run.
fn run_task(spec: &SweepSpec, dir: &Path, id: &str) -> Result<()> {
    if let Some(c) = id.strip_prefix(TRACE_PREFIX) {
        let cores: u32 = c
            .parse()
            .with_context(|| format!("task `{id}`: not a core count"))?;
        return sweep::trace_one(spec, dir, cores);
    }
    let Some(run) = spec.plan().into_iter().find(|r| r.id == id) else {
        bail!("task `{id}`: no such run in the sweep's plan");
    };
    let cfg = &spec.configs[run.config];
    if let Some(p) = &cfg.path {
        let now =
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        if now != cfg.text {
            bail!(
                "config {}: the file changed since the sweep started; a sweep never mixes machines",
                p.display()
            );
        }
    }
    crate::run::run(&spec.request(&run, dir), |_| {}).map(|_| ())
}

/// The state of one unfinished task of the sweep.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Never submitted.
    Fresh,
    /// Pending or running in Slurm: job id, task id and state.
    Active { job: String, state: String },
    /// Submitted and ended without its result: why, and its log.
    Ended { reason: String, log: PathBuf },
}

/// A sweep's unfinished work, in plan order (a program's traces first).
struct Collected {
    /// Runs in the plan.
    total: usize,
    /// Runs complete.
    done: Vec<String>,
    /// Each unfinished task and its state.
    open: Vec<(String, State)>,
}

/// Tasks of one job array that Slurm lists, with their states (`squeue -r -j JOB`; with
/// `all`, also those that ended within `MinJobAge`). A job Slurm no longer knows has none.
fn squeue(job: &str, all: bool) -> Result<Vec<(usize, String)>> {
    let mut cmd = Command::new("squeue");
    cmd.args(["--noheader", "--array", "--jobs", job, "--format=%i|%T"]);
    if all {
        cmd.arg("--states=all");
    }
    let out = spawn(&mut cmd, "squeue")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stderr.contains("Invalid job id") {
            return Ok(Vec::new());
        }
        bail!(
            "squeue --jobs {job} failed ({}): {}",
            out.status,
            stderr.trim()
        );
    }
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((id, state)) = line.trim().split_once('|') else {
            continue;
        };
        // An array task is `JOB_INDEX`; a pending remainder not yet split may show as
        // `JOB_[2-5%2]` even with --array on some versions: expand it.
        let Some(idx) = id.strip_prefix(job).and_then(|r| r.strip_prefix('_')) else {
            continue;
        };
        for i in expand_indices(idx) {
            v.push((i, state.to_string()));
        }
    }
    Ok(v)
}

/// `3` → [3]; `[2-4,7%2]` → [2, 3, 4, 7].
fn expand_indices(s: &str) -> Vec<usize> {
    let s = s.trim_start_matches('[').trim_end_matches(']');
    let s = s.split('%').next().unwrap_or("");
    let mut v = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    v.extend(a..=b);
                }
            }
            None => {
                if let Ok(a) = part.parse() {
                    v.push(a);
                }
            }
        }
    }
    v
}

/// Runs a Slurm client command; its absence is an error saying what to install.
fn spawn(cmd: &mut Command, name: &str) -> Result<std::process::Output> {
    cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!(
                "`{name}` not found on PATH: `isim sweep --slurm` hands the runs to Slurm through \
                 its client commands (sbatch, squeue). Run it where they are (a cluster's login \
                 node), install them (Debian/Ubuntu: apt-get install slurm-client, configured \
                 for your cluster), or drop --slurm to run the sweep on this host"
            )
        } else {
            anyhow::anyhow!("cannot run {name}: {e}")
        }
    })
}

/// What the sweep still needs: the program's missing traces (for runs still to do), then
/// every incomplete run, each with its state from the submissions and Slurm.
fn collect(spec: &SweepSpec, dir: &Path, subs: &[Submission]) -> Result<Collected> {
    let plan = spec.plan();
    let done: Vec<String> = plan
        .iter()
        .filter(|r| r.is_done(dir))
        .map(|r| r.id.clone())
        .collect();
    let mut todo: Vec<String> = Vec::new();
    if !spec.program.is_empty() {
        let mut cores: Vec<u32> = plan
            .iter()
            .filter(|r| !r.is_done(dir) && !spec.trace_path(r.cores, dir).is_file())
            .map(|r| r.cores)
            .collect();
        cores.sort_unstable();
        cores.dedup();
        todo.extend(cores.iter().map(|c| format!("{TRACE_PREFIX}{c}")));
    }
    todo.extend(
        plan.iter()
            .filter(|r| !r.is_done(dir))
            .map(|r| r.id.clone()),
    );
    // The latest submission of each task.
    let mut latest: HashMap<&str, (&Submission, usize)> = HashMap::new();
    for s in subs {
        for (i, t) in s.tasks.iter().enumerate() {
            latest.insert(t.as_str(), (s, i));
        }
    }
    let mut active: HashMap<String, Vec<(usize, String)>> = HashMap::new();
    let mut ended: HashMap<String, Vec<(usize, String)>> = HashMap::new();
    let mut open = Vec::new();
    for id in todo {
        let state = match latest.get(id.as_str()) {
            None => State::Fresh,
            Some(&(s, i)) => match &s.job {
                None => State::Fresh,
                Some(job) => {
                    if !active.contains_key(job) {
                        active.insert(job.clone(), squeue(job, false)?);
                    }
                    match active[job].iter().find(|(x, _)| *x == i) {
                        Some((_, st)) => State::Active {
                            job: job.clone(),
                            state: st.clone(),
                        },
                        None => State::Ended {
                            reason: why_ended(dir, s.number, i, job, &mut ended)?,
                            log: log_path(dir, s.number, i),
                        },
                    }
                }
            },
        };
        open.push((id, state));
    }
    Ok(Collected {
        total: plan.len(),
        done,
        open,
    })
}

/// Why task `i` of submission `k` (job `job`) ended without its result: its own status, or
/// else Slurm's final state (or what is left to say) and the last line of its log.
fn why_ended(
    dir: &Path,
    k: u32,
    i: usize,
    job: &str,
    ended: &mut HashMap<String, Vec<(usize, String)>>,
) -> Result<String> {
    let sp = status_path(dir, k, i);
    if sp.is_file() {
        let st: TaskStatus = read_json(&sp, "a task status file")?;
        return Ok(match (st.ok, st.error) {
            (false, Some(e)) => format!(
                "failed on {} (exit status {}) after {:.1} s: {e}",
                st.host, st.exit_status, st.seconds
            ),
            (false, None) => format!("failed on {} (exit status {})", st.host, st.exit_status),
            (true, _) => format!(
                "finished on {} but its result is not in the sweep directory (removed since?)",
                st.host
            ),
        });
    }
    // Killed from outside: Slurm's final state while it remembers it, and the log's last
    // line (where slurmstepd says "CANCELLED AT … DUE TO TIME LIMIT").
    if !ended.contains_key(job) {
        ended.insert(job.to_string(), squeue(job, true)?);
    }
    let mut reason = match ended[job].iter().find(|(x, _)| *x == i) {
        Some((_, st)) => format!("ended {st} without finishing"),
        None => "ended without finishing, and Slurm no longer says why (killed at its time \
                 limit, cancelled, out of memory, or its node failed)"
            .to_string(),
    };
    if let Ok(text) = std::fs::read_to_string(log_path(dir, k, i))
        && let Some(last) = text.lines().rev().find(|l| !l.trim().is_empty())
    {
        reason.push_str(&format!("; its log ends: {}", last.trim()));
    }
    Ok(reason)
}

/// `s` quoted for a POSIX shell.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The job script of submission `k` with `n` tasks.
fn job_script(
    dir: &Path,
    exe: &Path,
    k: u32,
    n: usize,
    args: &SlurmArgs,
    after: &[String],
    label: &str,
) -> String {
    let mut s = String::new();
    s.push_str("#!/bin/sh\n");
    s.push_str(&format!(
        "# Written by `isim sweep --slurm`: submission {k} of the sweep in {}.\n\
         # Task i of this job array does the i-th entry of \"tasks\" in {} ({label}).\n",
        dir.display(),
        submission_path(dir, k).display()
    ));
    s.push_str("#SBATCH --job-name=isim-sweep\n");
    match args.max_running {
        Some(m) => s.push_str(&format!("#SBATCH --array=0-{}%{m}\n", n - 1)),
        None => s.push_str(&format!("#SBATCH --array=0-{}\n", n - 1)),
    }
    s.push_str(&format!(
        "#SBATCH --output={}/s{k}_%a.log\n",
        slurm_dir(dir).join("logs").display()
    ));
    s.push_str("#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n");
    for (opt, v) in [
        ("partition", &args.partition),
        ("time", &args.time),
        ("mem", &args.mem),
        ("account", &args.account),
    ] {
        if let Some(v) = v {
            s.push_str(&format!("#SBATCH --{opt}={v}\n"));
        }
    }
    if !after.is_empty() {
        s.push_str(&format!(
            "#SBATCH --dependency=afterok:{}\n#SBATCH --kill-on-invalid-dep=yes\n",
            after.join(":")
        ));
    }
    for x in &args.sbatch_arg {
        s.push_str(&format!("#SBATCH {x}\n"));
    }
    s.push_str(&format!(
        "exec {} sweep-task {} --submission {k}\n",
        sh_quote(&exe.display().to_string()),
        sh_quote(&dir.display().to_string())
    ));
    s
}

/// Submits `tasks` as job arrays of at most [`MAX_ARRAY`] tasks (waiting for the jobs in
/// `after`, if any); returns the new submissions.
fn submit(
    dir: &Path,
    exe: &Path,
    args: &SlurmArgs,
    tasks: &[String],
    after: &[String],
    label: &str,
) -> Result<Vec<Submission>> {
    let sd = slurm_dir(dir);
    for d in [sd.join("logs"), sd.join("status")] {
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let mut made = Vec::new();
    for chunk in tasks.chunks(MAX_ARRAY) {
        let k = submissions(dir)?.last().map_or(1, |s| s.number + 1);
        let mut sub = Submission {
            schema: SUBMISSION_SCHEMA.into(),
            number: k,
            job: None,
            tasks: chunk.to_vec(),
        };
        let sp = submission_path(dir, k);
        let script = script_path(dir, k);
        write_atomic(&sp, serde_json::to_string_pretty(&sub)?.as_bytes())?;
        write_atomic(
            &script,
            job_script(dir, exe, k, chunk.len(), args, after, label).as_bytes(),
        )?;
        let out = spawn(
            Command::new("sbatch").arg("--parsable").arg(&script),
            "sbatch",
        );
        let out = match out {
            Ok(o) if o.status.success() => o,
            other => {
                // Nothing was submitted: leave no record claiming otherwise.
                let _ = std::fs::remove_file(&sp);
                let _ = std::fs::remove_file(&script);
                let o = other?;
                bail!(
                    "sbatch rejected the job array of {} tasks ({}): {}",
                    chunk.len(),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                );
            }
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let job = text.trim().split(';').next().unwrap_or("").to_string();
        if job.is_empty() || !job.chars().all(|c| c.is_ascii_digit()) {
            bail!(
                "sbatch answered `{}`, not a job id; the tasks may have been submitted: check \
                 squeue before running this command again",
                text.trim()
            );
        }
        sub.job = Some(job);
        write_atomic(&sp, serde_json::to_string_pretty(&sub)?.as_bytes())?;
        made.push(sub);
    }
    Ok(made)
}

/// Jobs with tasks still pending or running, and how many tasks in all.
fn active_tasks(jobs: &[String]) -> Result<(usize, usize, usize)> {
    let (mut running, mut pending) = (0, 0);
    for j in jobs {
        let mut tries = 0;
        let tasks = loop {
            match squeue(j, false) {
                Ok(t) => break t,
                // A busy controller does not answer at times; give it a minute.
                Err(e) if tries < 6 && !e.to_string().contains("not found on PATH") => {
                    tries += 1;
                    std::thread::sleep(Duration::from_secs(10));
                    let _ = e;
                }
                Err(e) => {
                    return Err(e.context(
                        "the submitted tasks keep running; run the same command again later to collect them",
                    ));
                }
            }
        };
        for (_, st) in tasks {
            if st == "RUNNING" || st == "COMPLETING" {
                running += 1;
            } else {
                pending += 1;
            }
        }
    }
    Ok((running + pending, running, pending))
}

/// `isim sweep --slurm …`: collects what finished, submits what did not, and with `--wait`
/// waits for it; writes the scaling table once every run is complete (printing it as CSV with
/// `csv`).
pub fn cli(spec: &SweepSpec, out: &Path, args: &SlurmArgs, csv: bool) -> Result<()> {
    if args.max_running == Some(0) {
        bail!("--max-running 0: at least one task must run at a time");
    }
    for x in &args.sbatch_arg {
        if !x.starts_with('-') {
            bail!(
                "--sbatch-arg `{x}`: give one sbatch option per --sbatch-arg, e.g. --sbatch-arg=--qos=short"
            );
        }
    }
    let dir =
        std::path::absolute(out).with_context(|| format!("cannot resolve {}", out.display()))?;
    let text = dir.display().to_string();
    if text.chars().any(|c| c.is_whitespace() || c == '%') {
        bail!(
            "{text}: with --slurm the sweep directory's path may not hold spaces or `%` (Slurm's \
             job script options cannot carry them); choose another --out"
        );
    }
    sweep::prepare_dir(spec, &dir)?;
    let exe = std::env::current_exe().context("cannot find the isim binary for the job script")?;
    let start = Instant::now();
    let first = collect(spec, &dir, &submissions(&dir)?)?;
    let reused = first.done.clone();
    let mut c = first;
    let mut waited = false;
    loop {
        if c.open.is_empty() {
            let o = sweep::finish(spec, &dir, reused)?;
            let how = if waited {
                format!("{:.0} s waiting for Slurm", start.elapsed().as_secs_f64())
            } else {
                "collected from Slurm".to_string()
            };
            sweep::print_outcome(
                &o,
                &format!(
                    "{} runs finished since the last collection, {} before; {how}",
                    o.executed.len(),
                    o.reused.len()
                ),
                csv,
            );
            return Ok(());
        }
        if waited {
            // --wait ended: what did not finish is reported, not resubmitted in a loop.
            let failed: Vec<String> = c
                .open
                .iter()
                .map(|(id, st)| match st {
                    State::Ended { reason, log } => {
                        format!("{id}: {reason} (log: {})", log.display())
                    }
                    State::Fresh => format!("{id}: not run (its trace failed?)"),
                    State::Active { job, state } => format!("{id}: still {state} in job {job}"),
                })
                .collect();
            bail!(
                "{} of {} runs did not finish on Slurm (the others are kept; run the same command \
                 again to resubmit only these):\n  {}",
                c.open
                    .iter()
                    .filter(|(id, _)| !id.starts_with(TRACE_PREFIX))
                    .count(),
                c.total,
                failed.join("\n  ")
            );
        }
        // Report and resubmit what ended without a result; submit what never ran.
        let mut again = Vec::new();
        let mut active_jobs: Vec<String> = Vec::new();
        let mut active_traces: Vec<String> = Vec::new();
        for (id, st) in &c.open {
            match st {
                State::Fresh => again.push(id.clone()),
                State::Ended { reason, log } => {
                    println!("resubmitting {id}: {reason} (log: {})", log.display());
                    again.push(id.clone());
                }
                State::Active { job, .. } => {
                    if !active_jobs.contains(job) {
                        active_jobs.push(job.clone());
                    }
                    if id.starts_with(TRACE_PREFIX) && !active_traces.contains(job) {
                        active_traces.push(job.clone());
                    }
                }
            }
        }
        let (traces, runs): (Vec<String>, Vec<String>) = again
            .into_iter()
            .partition(|id| id.starts_with(TRACE_PREFIX));
        let mut after = active_traces;
        if !traces.is_empty() {
            for s in submit(&dir, &exe, args, &traces, &[], "the program's traces")? {
                let job = s.job.clone().expect("submitted");
                println!(
                    "submitted job {job}: {} trace{} of the program",
                    s.tasks.len(),
                    if s.tasks.len() == 1 { "" } else { "s" }
                );
                after.push(job.clone());
                active_jobs.push(job);
            }
        }
        if !runs.is_empty() {
            let wait_for = if spec.program.is_empty() {
                &[][..]
            } else {
                &after[..]
            };
            for s in submit(&dir, &exe, args, &runs, wait_for, "simulations")? {
                let job = s.job.clone().expect("submitted");
                println!(
                    "submitted job {job}: {} simulation{}{}",
                    s.tasks.len(),
                    if s.tasks.len() == 1 { "" } else { "s" },
                    if wait_for.is_empty() {
                        String::new()
                    } else {
                        format!(", after job {}", wait_for.join(", "))
                    }
                );
                active_jobs.push(job);
            }
        }
        let logs = slurm_dir(&dir).join("logs");
        if !args.wait {
            println!(
                "{} of {} runs done; follow the tasks with `squeue -j {}`, their logs in {}",
                c.done.len(),
                c.total,
                active_jobs.join(","),
                logs.display()
            );
            println!(
                "run this same command again once they have ended to collect the results (it \
                 resubmits only what did not finish), or add --wait"
            );
            return Ok(());
        }
        wait(&active_jobs)?;
        waited = true;
        c = collect(spec, &dir, &submissions(&dir)?)?;
    }
}

/// Polls `squeue` until no task of `jobs` is pending or running, with a progress bar on a
/// terminal.
fn wait(jobs: &[String]) -> Result<()> {
    let (total, _, _) = active_tasks(jobs)?;
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:40!} [{bar:30}] {pos}/{len} tasks, {elapsed_precise}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    let mut interval = Duration::from_millis(500);
    loop {
        let (left, running, pending) = active_tasks(jobs)?;
        bar.set_position(total.saturating_sub(left) as u64);
        bar.set_message(format!(
            "job {}: {running} running, {pending} pending",
            jobs.join(",")
        ));
        if left == 0 {
            break;
        }
        std::thread::sleep(interval);
        interval = (interval * 3 / 2).min(Duration::from_secs(15));
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_indices_expand() {
        assert_eq!(expand_indices("3"), [3]);
        assert_eq!(expand_indices("[2-4,7%2]"), [2, 3, 4, 7]);
        assert_eq!(expand_indices("[0-1]"), [0, 1]);
    }

    #[test]
    fn the_job_script_carries_every_option_and_runs_one_task() {
        let a = SlurmArgs {
            slurm: true,
            partition: Some("short".into()),
            time: Some("10".into()),
            mem: Some("2G".into()),
            account: None,
            max_running: Some(2),
            sbatch_arg: vec!["--qos=low".into()],
            wait: false,
        };
        let s = job_script(
            Path::new("/shared/sw"),
            Path::new("/opt/isim's/isim"),
            3,
            5,
            &a,
            &["17".into()],
            "simulations",
        );
        for want in [
            "#SBATCH --array=0-4%2\n",
            "#SBATCH --output=/shared/sw/slurm/logs/s3_%a.log\n",
            "#SBATCH --partition=short\n",
            "#SBATCH --time=10\n",
            "#SBATCH --mem=2G\n",
            "#SBATCH --dependency=afterok:17\n",
            "#SBATCH --qos=low\n",
            "exec '/opt/isim'\\''s/isim' sweep-task '/shared/sw' --submission 3\n",
        ] {
            assert!(s.contains(want), "{want:?} not in\n{s}");
        }
        assert!(!s.contains("--account"), "{s}");
    }
}
