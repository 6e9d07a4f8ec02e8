//! `isim trace -- ./program args…`: runs a real x86-64 Linux program under QEMU user mode with
//! isim's plugin and interposition library, and turns the capture into a trace with a
//! source map (`sim_frontend::tracer`).
//!
//! The two shared libraries are found next to the `isim` executable (where `cargo build`
//! puts them) or in `$ISIM_TRACER_DIR`; `qemu-x86_64` on `PATH` or in `$ISIM_QEMU`. The capture
//! goes to `<out>.capture/`, removed once the trace is written (kept with `--keep-capture`).
//! A program that exits non-zero, crashes or is killed still leaves a trace of what ran, with
//! a message saying so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde::Serialize;
use sim_frontend::model::Marker;
use sim_frontend::tracer::convert::{self, Options, RoiMode, Summary};

/// File name of the QEMU plugin.
pub const PLUGIN_SO: &str = "libisim_qemu_plugin.so";
/// File name of the interposition library.
pub const PRELOAD_SO: &str = "libisim_preload.so";
/// CPU model given to QEMU unless `--cpu` says otherwise: fixed, so that glibc picks the same
/// string-function variants on every host.
pub const DEFAULT_CPU: &str = "Nehalem";

/// Which part of the program is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Roi {
    /// Between ISIM_ROI_BEGIN() and ISIM_ROI_END() (include/isim.h); main before it warms caches.
    Markers,
    /// All of main.
    Main,
    /// Everything from the process's first instruction (dynamic loader included).
    All,
}

/// `isim trace` arguments.
#[derive(Args, Debug, Clone)]
pub struct TraceArgs {
    /// Output trace file.
    #[arg(long = "out", short = 'o', default_value = "isim.itrace")]
    pub out: PathBuf,
    /// Region of interest: ISIM_ROI_BEGIN/END markers, all of main, or everything.
    #[arg(long, value_enum, default_value_t = Roi::Main)]
    pub roi: Roi,
    /// QEMU CPU model (decides which instruction-set extensions glibc uses).
    #[arg(long, default_value = DEFAULT_CPU)]
    pub cpu: String,
    /// Keep the raw capture directory (`<out>.capture`).
    #[arg(long)]
    pub keep_capture: bool,
    /// Do not run the program: convert the capture a run with --keep-capture left at
    /// `<out>.capture` again (and keep it). For measuring conversion alone.
    #[arg(long, hide = true)]
    pub reconvert: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Host threads converting the capture, one thread's stream each at a time (default: all
    /// cores). The trace's records are the same whatever the number.
    #[arg(long, value_name = "N")]
    pub host_threads: Option<usize>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
    /// Where the program's standard output and error go (default: isim's own); sweeps keep
    /// them in a log per trace.
    #[arg(skip)]
    pub program_output: Option<PathBuf>,
    /// Variables set in the program's environment besides isim's own (a sweep sizes an
    /// OpenMP team by each core count: `OMP_NUM_THREADS`).
    #[arg(skip)]
    pub program_env: Vec<(String, String)>,
}

/// One thread of the printed summary.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadLine {
    /// Trace thread number.
    pub thread: u32,
    /// Instructions.
    pub instructions: u64,
    /// Read accesses.
    pub loads: u64,
    /// Write accesses.
    pub stores: u64,
    /// Branches.
    pub branches: u64,
    /// Taken branches.
    pub taken_branches: u64,
    /// Markers by kind name (zero counts left out).
    pub markers: Vec<(String, u64)>,
    /// The process ended while this thread ran.
    pub cut: bool,
}

/// What `isim trace` reports.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// The trace written.
    pub trace: String,
    /// The program.
    pub program: String,
    /// How the program ended: `exit 0`, `exit 3`, `signal 11`.
    pub program_status: String,
    /// Per thread.
    pub threads: Vec<ThreadLine>,
    /// Total instructions.
    pub instructions: u64,
    /// Static instructions.
    pub static_instructions: usize,
    /// Instructions of the interposition library and PLT stubs, left out.
    pub dropped_instructions: u64,
    /// Trace size.
    pub bytes: u64,
    /// Bytes per instruction.
    pub bytes_per_instruction: f64,
    /// Wall seconds under QEMU.
    pub capture_seconds: f64,
    /// Wall seconds of the conversion.
    pub convert_seconds: f64,
    /// Instructions per wall second, capture and conversion together.
    pub instructions_per_second: f64,
    /// Critical sections that found their condition true where the same code elsewhere
    /// waited on a condition variable: each waits for the section that made it so.
    pub skipped_waits: u64,
    /// Barrier episodes recognised in condition variables.
    pub hand_barriers: u64,
    /// Condition variables those episodes came from.
    pub hand_barrier_conds: usize,
    /// Reads of pipes, eventfds and socket pairs that got bytes.
    pub channel_reads: u64,
    /// Those of them replayed as waits for the write that gave them.
    pub channel_waits: u64,
    /// Spin-wait loops traced as work.
    pub spin_loops: Vec<SpinLine>,
    /// Locks built on futexes, replayed as mutexes.
    pub futex_locks: FutexLockLine,
    /// Waits for counters counted down to zero.
    pub countdowns: CountdownLine,
    /// Spin-waits replaced by waits for the stores that ended them.
    pub spin_waits: SpinWaitLine,
    /// Warnings.
    pub warnings: Vec<String>,
    /// The program called exec, and the trace ends there (the new program is not in it).
    pub ended_at_exec: bool,
}

/// The spin-waits of the summary (`sim_frontend::tracer::spinwait`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SpinWaitLine {
    /// Replaced by a wait for the store that ended them.
    pub waits: u64,
    /// Their instructions left out.
    pub instructions: u64,
    /// Found but left as traced.
    pub unmatched: u64,
    /// Loads that found another thread's store at their first look, replayed as waits.
    pub reads: u64,
    /// Atomic instructions that added a flag to one another thread had set (a channel's slot
    /// marked read after it was marked written), replayed as waits for it.
    pub published: u64,
    /// A poller's looks across its yields that read another thread's store (a rayon
    /// worker's job pickup), replayed as waits.
    pub polls: u64,
    /// Barriers built on spun-on addresses, replayed as barriers.
    pub barriers: u64,
    /// Their participants' arrivals.
    pub barrier_arrivals: u64,
}

/// The countdown waits of the summary (`sim_frontend::tracer::countdown`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CountdownLine {
    /// Waits for a counter that other threads counted down to zero.
    pub waits: u64,
    /// Their dependences (a wait for each other thread that counted).
    pub dependences: u64,
    /// Of those, counts made as the counting thread ended (a Rust scope's threads): reported
    /// as joins of those threads, so that LIME sees the scope as a join-delimited section.
    pub exits: u64,
    /// Of the waits, those of a waiter that saw the count at zero with a plain load and
    /// consumed no notification (the scope's owner came to its end after every thread had
    /// finished): placed at that load.
    pub at_load: u64,
}

/// The futex locks of the summary (`sim_frontend::tracer::futexlock`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct FutexLockLine {
    /// Lock words recognised.
    pub words: usize,
    /// Their acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that failed at least once first in the traced run.
    pub contended: u64,
    /// Acquisitions of locks whose code spins on a held word, seen in the trace or read from
    /// the lock's slow path (replayed with `[locks] spin`).
    pub spinning: u64,
    /// Instructions of lock attempts (and releases) replaced by mutex markers.
    pub replaced_instructions: u64,
    /// Futex words updated atomically whose history is not a lock's (left alone).
    pub rejected: usize,
    /// Of the lock words, test-and-set locks freed by a plain store.
    pub test_and_set: usize,
    /// Of the lock words, read/write locks.
    pub read_write: usize,
    /// Semaphores built on a futex word in the program's code (C++20's
    /// `std::counting_semaphore`), replayed as semaphores.
    pub semaphores: usize,
    /// Their takes.
    pub semaphore_takes: u64,
    /// Their releases.
    pub semaphore_gives: u64,
}

/// A spin-wait loop of the summary.
#[derive(Debug, Clone, Serialize)]
pub struct SpinLine {
    /// `file:line (function)` of its `pause`.
    pub place: String,
    /// Executions of the `pause`.
    pub pauses: u64,
    /// Instructions spent in the loop.
    pub instructions: u64,
    /// Threads that spun there.
    pub threads: Vec<u32>,
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The directory holding the plugin and the interposition library.
fn tracer_dir() -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("ISIM_TRACER_DIR") {
        Some(d) => vec![PathBuf::from(d)],
        None => {
            let exe = std::env::current_exe().context("cannot locate the isim executable")?;
            let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
            // Test binaries live in target/<profile>/deps, next to the libraries' own dir.
            vec![dir.clone(), dir.join("..")]
        }
    };
    for d in &candidates {
        if d.join(PLUGIN_SO).is_file() && d.join(PRELOAD_SO).is_file() {
            return Ok(d.clone());
        }
    }
    bail!(
        "the tracer libraries {PLUGIN_SO} and {PRELOAD_SO} are not in {}: build them with \
         `cargo build --release --workspace` (they are built next to the isim executable), or \
         point ISIM_TRACER_DIR at the directory that holds them",
        candidates[0].display()
    )
}

fn qemu() -> Result<PathBuf> {
    if let Some(q) = std::env::var_os("ISIM_QEMU") {
        let q = PathBuf::from(q);
        if q.is_file() {
            return Ok(q);
        }
        bail!("ISIM_QEMU={} does not exist", q.display());
    }
    find_on_path("qemu-x86_64").ok_or_else(|| {
        anyhow::anyhow!(
            "qemu-x86_64 was not found on PATH: isim trace runs the program under QEMU user mode. \
             Install it with `apt-get install qemu-user` (Debian/Ubuntu), or set ISIM_QEMU to its path"
        )
    })
}

/// Resolves the program like a shell would and checks that it is a dynamically linked
/// x86-64 ELF executable.
pub fn check_program(name: &str) -> Result<PathBuf> {
    let path = if name.contains('/') {
        PathBuf::from(name)
    } else {
        find_on_path(name).ok_or_else(|| anyhow::anyhow!("{name}: program not found on PATH"))?
    };
    let data = std::fs::read(&path)
        .with_context(|| format!("{}: cannot read the program", path.display()))?;
    use object::{Object, ObjectSection};
    let file = object::File::parse(&*data).map_err(|e| {
        anyhow::anyhow!(
            "{}: not an executable isim can trace (expected an x86-64 ELF program): {e}",
            path.display()
        )
    })?;
    if file.format() != object::BinaryFormat::Elf
        || file.architecture() != object::Architecture::X86_64
    {
        bail!(
            "{}: a {:?} {:?} file; isim trace runs x86-64 Linux (ELF) programs",
            path.display(),
            file.architecture(),
            file.format()
        );
    }
    let dynamic = file
        .sections()
        .any(|s| s.name().is_ok_and(|n| n == ".interp"));
    if !dynamic {
        bail!(
            "{}: a statically linked program; isim trace needs a dynamically linked one (it \
             interposes the pthread functions with LD_PRELOAD): relink without -static",
            path.display()
        );
    }
    Ok(std::fs::canonicalize(&path).unwrap_or(path))
}

fn status_text(st: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    }
}

/// Width of the environment values isim gives the traced program (see `pad_env`).
const ENV_WIDTH: usize = 1024;

/// `value` padded with `pad` to [`ENV_WIDTH`] bytes (a longer value is left as it is).
fn pad_env(mut value: String, pad: char) -> String {
    while value.len() < ENV_WIDTH {
        value.push(pad);
    }
    value
}

/// Why the capture in `cap` cannot be converted, if it has holes: the tracer plugin failed to
/// write part of it (its `error` lines in `threads.tsv`, e.g. a full disk), or it could not
/// write `threads.tsv` at all although QEMU exited normally (a process killed by a signal
/// never writes it, and its trace holds what ran).
fn capture_failed(cap: &Path, status: &std::process::ExitStatus) -> Option<String> {
    match std::fs::read_to_string(cap.join("threads.tsv")) {
        Ok(tsv) => {
            let errors: Vec<&str> = tsv
                .lines()
                .filter_map(|l| l.strip_prefix("error\t"))
                .collect();
            (!errors.is_empty()).then(|| {
                format!(
                    "the tracer plugin could not write all of it ({})",
                    errors.join("; ")
                )
            })
        }
        Err(_) if status.code().is_some() => Some(format!(
            "QEMU ended ({}) with no {} from its tracer plugin (written at the program's exit \
             call, and again at QEMU's exit), so how each thread ended is unknown (the message \
             above says why: a failure inside QEMU, or the plugin's failed write)",
            status_text(status),
            cap.join("threads.tsv").display()
        )),
        Err(_) => None,
    }
}

/// When QEMU failed after the program's exit call (`threads.tsv` is still the one the plugin
/// wrote at `exit_group`, once every thread's stream was written, and QEMU's at-exit
/// callback never rewrote it): the program's own status, and the warning that says so.
/// QEMU 7.2 has failed an assertion of its own there, with threads still leaving.
fn qemu_failed_at_exit(cap: &Path, qemu_status: &str) -> Option<(String, String)> {
    let tsv = std::fs::read_to_string(cap.join("threads.tsv")).ok()?;
    let field = |key: &str| {
        tsv.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
    };
    if field("end") != Some("exit_group") {
        return None;
    }
    let program_status = format!("exit {}", field("exit_code")?);
    if program_status == qemu_status {
        // QEMU exited as the program asked; only the callback's rewrite failed (its
        // message is above), and the file written at the exit call holds every thread.
        return None;
    }
    let warning = format!(
        "QEMU ended with {qemu_status} after the program's exit call ({program_status}), before \
         its own exit was done (its message is above: a failure inside QEMU, not the \
         program's); every thread's events written by then are in the trace, and a thread \
         still running at the exit call is named in its own warning"
    );
    Some((program_status, warning))
}

/// `n` bytes in decimal units, to one decimal: `0.8 MB`, `77.2 GB`.
fn decimal_size(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e12 => format!("{:.1} TB", n / 1e12),
        n if n >= 1e9 => format!("{:.1} GB", n / 1e9),
        n if n >= 1e6 => format!("{:.1} MB", n / 1e6),
        n => format!("{:.1} kB", n / 1e3),
    }
}

/// Bytes of the files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// Whether this process (and so QEMU, its child) may write files of any size.
#[allow(unsafe_code)]
fn file_size_unlimited() -> bool {
    // SAFETY: `r` is a plain C struct getrlimit fills in.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut r) == 0 && r.rlim_cur == libc::RLIM_INFINITY }
}

/// Bytes an unprivileged process may still write on the filesystem holding `path`.
#[allow(unsafe_code)]
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a plain C struct statvfs fills in.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Runs the tracer; returns the report (also when the program failed).
pub fn trace(a: &TraceArgs) -> Result<TraceReport> {
    let program = check_program(&a.program[0])?;
    let mut cap = a.out.as_os_str().to_owned();
    cap.push(".capture");
    let cap = PathBuf::from(cap);
    if a.reconvert {
        return reconvert(a, &program, &cap);
    }
    let qemu = qemu()?;
    let libs = tracer_dir()?;
    if cap.exists() {
        std::fs::remove_dir_all(&cap)
            .with_context(|| format!("cannot remove the old capture {}", cap.display()))?;
    }
    std::fs::create_dir_all(&cap).with_context(|| format!("cannot create {}", cap.display()))?;
    let cap = std::fs::canonicalize(&cap)?;
    let preload = std::fs::canonicalize(libs.join(PRELOAD_SO))?;
    let plugin = std::fs::canonicalize(libs.join(PLUGIN_SO))?;
    let mut ld_preload = preload.display().to_string();
    if let Ok(user) = std::env::var("LD_PRELOAD")
        && !user.is_empty()
    {
        ld_preload = format!("{ld_preload}:{user}");
    }
    // The guest's environment strings sit on its initial stack, above `main`'s frame: their
    // length moves every stack variable of the main thread (a lock, an array shared with the
    // workers) across cache lines. The two isim adds are padded to a fixed width (a path with
    // trailing slashes, a preload list with empty entries, both meaning the same), so that
    // where the trace is written or where isim is installed does not change the program's
    // layout, and with it its simulated timing.
    let ld_preload = pad_env(ld_preload, ':');
    let capture_dir = pad_env(cap.display().to_string(), '/');
    let plugin_roi = if a.roi == Roi::All { "all" } else { "main" };
    let mut cmd = Command::new(&qemu);
    for (k, v) in &a.program_env {
        cmd.arg("-E").arg(format!("{k}={v}"));
    }
    if let Some(log) = &a.program_output {
        let f = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        cmd.stdout(f.try_clone()?).stderr(f);
    }
    let t0 = Instant::now();
    let status = cmd
        .arg("-cpu")
        .arg(&a.cpu)
        .arg("-plugin")
        .arg(format!(
            "{},dir={},roi={plugin_roi}",
            plugin.display(),
            cap.display()
        ))
        .arg("-E")
        .arg(format!("LD_PRELOAD={ld_preload}"))
        .arg("-E")
        .arg(format!("ISIM_CAPTURE_DIR={capture_dir}"))
        .arg("-E")
        .arg("LD_BIND_NOW=1")
        .arg(&program)
        .args(&a.program[1..])
        .status()
        .with_context(|| format!("cannot run {}", qemu.display()))?;
    let capture_seconds = t0.elapsed().as_secs_f64();
    let status_s = status_text(&status);
    if !cap.join("static.bin").exists() {
        bail!(
            "QEMU did not load the tracer plugin ({status_s}); run `{} -cpu {} -plugin {},dir={} {}` \
             to see why",
            qemu.display(),
            a.cpu,
            plugin.display(),
            cap.display(),
            program.display()
        );
    }
    if let Some(why) = capture_failed(&cap, &status) {
        let bytes = dir_bytes(&cap);
        let free = free_bytes(&cap);
        let kept = if a.keep_capture {
            "kept"
        } else {
            let _ = std::fs::remove_dir_all(&cap);
            "removed"
        };
        // A full disk or a file size limit is the likely cause unless there is room and no
        // limit (then QEMU failed by itself: its message is above).
        let roomy = free.is_some_and(|f| f > bytes.max(1 << 30)) && file_size_unlimited();
        let advice = if roomy && !why.starts_with("the tracer plugin") {
            "trace again (QEMU's own failures have been rare and not repeated)"
        } else {
            "free space there, raise the file size limit, or write the trace elsewhere with -o \
             (its capture is written beside it)"
        };
        bail!(
            "the capture of {} is incomplete, so no trace was written: {why}. The capture had \
             reached {bytes} bytes ({}) in {} ({kept}){}; {advice}",
            program.display(),
            decimal_size(bytes),
            cap.display(),
            free.map_or(String::new(), |f| format!(
                ", and that filesystem has {} free now",
                decimal_size(f)
            )),
        );
    }
    let qemu_failed = qemu_failed_at_exit(&cap, &status_s);
    let openmp = std::fs::read_to_string(cap.join("modules.tsv"))
        .is_ok_and(|t| t.lines().any(|l| l.contains("/libgomp.so")));
    let t1 = Instant::now();
    let summary = convert::convert(&cap, &a.out, &options(a, &program))
        .with_context(|| format!("cannot convert the capture of {}", program.display()))?;
    let convert_seconds = t1.elapsed().as_secs_f64();
    if !a.keep_capture {
        let _ = std::fs::remove_dir_all(&cap);
    }
    let mut warnings = summary.warnings.clone();
    if openmp
        && std::env::var_os("OMP_NUM_THREADS").is_none()
        && !a.program_env.iter().any(|(k, _)| k == "OMP_NUM_THREADS")
    {
        warnings.extend(host_sized_team(summary.threads.len(), usable_cpus()));
    }
    let status_s = match qemu_failed {
        Some((program_status, warning)) => {
            warnings.insert(0, warning);
            program_status
        }
        None => {
            if status_s != "exit 0" {
                warnings.insert(
                    0,
                    format!(
                        "the program ended with {status_s}: the trace holds what ran until then"
                    ),
                );
            }
            status_s
        }
    };
    report(
        a,
        &program,
        status_s,
        summary,
        capture_seconds,
        convert_seconds,
        warnings,
    )
}

/// The CPUs this process may run on (on Linux its affinity mask, which the traced program
/// inherits and libgomp counts to size a team; less if a cgroup quota says so), if the system
/// says.
fn usable_cpus() -> Option<usize> {
    std::thread::available_parallelism().ok().map(|n| n.get())
}

/// The warning for an OpenMP program traced without `OMP_NUM_THREADS` whose trace has as many
/// threads as the host let it use (`cpus`): libgomp then sized its teams from the host (one
/// thread under `taskset -c 0`), and the simulated machine can only run the team the trace
/// holds.
fn host_sized_team(threads: usize, cpus: Option<usize>) -> Option<String> {
    let cpus = cpus?;
    (threads == cpus).then(|| {
        format!(
            "OpenMP teams sized by the host: OMP_NUM_THREADS was unset, and the trace has {threads} \
             thread(s), as many as the CPUs this process could use ({cpus}), which is how libgomp \
             sizes a team by default; the replay runs the team the host chose. Set \
             OMP_NUM_THREADS to trace the team you mean to simulate"
        )
    })
}

/// `--reconvert`: converts the kept capture `cap` of `program` again, without running it.
fn reconvert(a: &TraceArgs, program: &Path, cap: &Path) -> Result<TraceReport> {
    if !cap.join("static.bin").exists() {
        bail!(
            "{} holds no capture: trace with --keep-capture first",
            cap.display()
        );
    }
    let t1 = Instant::now();
    let summary = convert::convert(cap, &a.out, &options(a, program))
        .with_context(|| format!("cannot convert the capture of {}", program.display()))?;
    let convert_seconds = t1.elapsed().as_secs_f64();
    let warnings = summary.warnings.clone();
    report(
        a,
        program,
        "not run (converted from a kept capture)".into(),
        summary,
        0.0,
        convert_seconds,
        warnings,
    )
}

/// The converter's options for `a` tracing `program`.
fn options(a: &TraceArgs, program: &Path) -> Options {
    Options {
        program: program.to_path_buf(),
        args: a.program[1..].to_vec(),
        roi: match a.roi {
            Roi::Markers => RoiMode::Markers,
            Roi::Main => RoiMode::Main,
            Roi::All => RoiMode::All,
        },
        preload_name: PRELOAD_SO.to_string(),
        base_dir: std::env::current_dir().ok(),
        host_threads: a.host_threads.unwrap_or(0),
    }
}

fn report(
    a: &TraceArgs,
    program: &Path,
    program_status: String,
    s: Summary,
    capture_seconds: f64,
    convert_seconds: f64,
    warnings: Vec<String>,
) -> Result<TraceReport> {
    let bytes = std::fs::metadata(&a.out)
        .with_context(|| format!("cannot stat {}", a.out.display()))?
        .len();
    let threads: Vec<ThreadLine> = s
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ThreadLine {
            thread: i as u32,
            instructions: t.instructions,
            loads: t.loads,
            stores: t.stores,
            branches: t.branches,
            taken_branches: t.taken_branches,
            markers: Marker::KIND_NAMES
                .iter()
                .zip(t.markers)
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            cut: t.cut,
        })
        .collect();
    let instructions: u64 = threads.iter().map(|t| t.instructions).sum();
    Ok(TraceReport {
        trace: a.out.display().to_string(),
        program: program.display().to_string(),
        program_status,
        threads,
        instructions,
        static_instructions: s.static_instructions,
        dropped_instructions: s.dropped_instructions,
        bytes,
        bytes_per_instruction: bytes as f64 / instructions.max(1) as f64,
        capture_seconds,
        convert_seconds,
        instructions_per_second: instructions as f64
            / (capture_seconds + convert_seconds).max(1e-9),
        skipped_waits: s.skipped_waits,
        hand_barriers: s.hand_barriers,
        hand_barrier_conds: s.hand_barrier_conds,
        channel_reads: s.channel_reads,
        channel_waits: s.channel_waits,
        futex_locks: FutexLockLine {
            words: s.futex_locks.words,
            acquisitions: s.futex_locks.acquisitions,
            contended: s.futex_locks.contended,
            spinning: s.futex_locks.spinning,
            replaced_instructions: s.futex_locks.replaced_instructions,
            rejected: s.futex_locks.rejected,
            test_and_set: s.futex_locks.test_and_set,
            read_write: s.futex_locks.read_write,
            semaphores: s.futex_locks.semaphores,
            semaphore_takes: s.futex_locks.semaphore_takes,
            semaphore_gives: s.futex_locks.semaphore_gives,
        },
        spin_waits: SpinWaitLine {
            waits: s.spin_waits.waits,
            instructions: s.spin_waits.instructions,
            unmatched: s.spin_waits.unmatched,
            reads: s.spin_waits.reads,
            published: s.spin_waits.published,
            polls: s.spin_waits.polls,
            barriers: s.spin_waits.barriers,
            barrier_arrivals: s.spin_waits.barrier_arrivals,
        },
        countdowns: CountdownLine {
            waits: s.futex_locks.countdown_waits,
            dependences: s.futex_locks.countdown_edges,
            exits: s.futex_locks.countdown_exits,
            at_load: s.futex_locks.countdown_loads,
        },
        spin_loops: s
            .spin_loops
            .iter()
            .map(|l| SpinLine {
                place: l.place.clone(),
                pauses: l.pauses,
                instructions: l.instructions,
                threads: l.threads.clone(),
            })
            .collect(),
        warnings,
        ended_at_exec: s.ended_at_exec,
    })
}

impl TraceReport {
    /// The terminal summary.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "traced {} ({}): {} threads, {} instructions, {} static",
            self.program,
            self.program_status,
            self.threads.len(),
            self.instructions,
            self.static_instructions
        );
        let kinds = crate::info::TABLE_MARKERS;
        let _ = write!(
            s,
            "{:>6} {:>13} {:>11} {:>11} {:>11}",
            "thread", "instructions", "loads", "stores", "branches"
        );
        for k in kinds {
            let _ = write!(s, " {:>7}", crate::info::marker_heading(k));
        }
        s.push('\n');
        for t in &self.threads {
            let _ = write!(
                s,
                "{:>6} {:>13} {:>11} {:>11} {:>11}",
                t.thread, t.instructions, t.loads, t.stores, t.branches
            );
            for k in kinds {
                let n = t.markers.iter().find(|m| m.0 == k).map_or(0, |m| m.1);
                let _ = write!(s, " {n:>7}");
            }
            if t.cut {
                s.push_str("  (cut)");
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "wrote {}: {} bytes ({} bytes/instruction)",
            self.trace,
            self.bytes,
            crate::info::per_instruction(self.bytes, self.instructions)
        );
        let _ = writeln!(
            s,
            "host: {:.2} s under QEMU + {:.2} s converting = {:.1} M instructions/s",
            self.capture_seconds,
            self.convert_seconds,
            self.instructions_per_second / 1e6
        );
        if self.skipped_waits > 0 {
            let _ = writeln!(
                s,
                "condition waits skipped: {} critical sections found their condition true \
                 (each waits for the section that made it so)",
                self.skipped_waits
            );
        }
        if self.hand_barriers > 0 {
            let _ = writeln!(
                s,
                "barriers built from {} condition variable(s): {} episodes (counted under barrier)",
                self.hand_barrier_conds, self.hand_barriers
            );
        }
        if self.channel_reads > 0 {
            let _ = writeln!(
                s,
                "reads of pipes, eventfds and socket pairs: {} ({} wait for the write that gave \
                 their bytes)",
                self.channel_reads, self.channel_waits
            );
        }
        let f = &self.futex_locks;
        if f.words > 0 {
            let _ = writeln!(
                s,
                "locks built on futexes and atomics: {} word(s) ({} test-and-set, {} \
                 read/write), {} acquisitions ({} contended in the traced run, {} of locks \
                 that spin), replayed as mutexes; {} instructions of attempts and releases \
                 replaced",
                f.words,
                f.test_and_set,
                f.read_write,
                f.acquisitions,
                f.contended,
                f.spinning,
                f.replaced_instructions
            );
        }
        if f.semaphores > 0 {
            let _ = writeln!(
                s,
                "semaphores built on futexes (C++20 std::counting_semaphore): {} word(s), {} \
                 takes and {} releases, replayed as semaphores",
                f.semaphores, f.semaphore_takes, f.semaphore_gives
            );
        }
        let w = &self.spin_waits;
        if w.waits + w.unmatched > 0 {
            let _ = writeln!(
                s,
                "spin-waits on memory: {} replaced by waits ({} instructions of spinning left \
                 out), {} left as traced (their store was not seen, or they overlap a lock's \
                 attempt); {} first looks that found the store waited for it",
                w.waits, w.instructions, w.unmatched, w.reads
            );
        }
        if w.published > 0 {
            let _ = writeln!(
                s,
                "publications through atomic words: {} flags added to one another thread had \
                 set (a channel's message marked read after it was marked written) wait for it",
                w.published
            );
        }
        if w.polls > 0 {
            let _ = writeln!(
                s,
                "polling across sched_yield: {} looks that found another thread's store (a \
                 job made available) waited for it",
                w.polls
            );
        }
        if w.barriers > 0 {
            let _ = writeln!(
                s,
                "barriers built on spun-on memory: {} address(es), {} arrivals (counted under \
                 barrier)",
                w.barriers, w.barrier_arrivals
            );
        }
        let c = &self.countdowns;
        if c.waits > 0 {
            let _ = writeln!(
                s,
                "waits for counters counted down to zero: {} ({} seen by a plain load), replayed \
                 as a wait for each of the {} counts of other threads ({} made as their thread \
                 ended: joins)",
                c.waits, c.at_load, c.dependences, c.exits
            );
        }
        if f.rejected > 0 {
            let _ = writeln!(
                s,
                "note: {} futex word(s) updated atomically are not locks (their history is not \
                 0 = free, taken and freed by one thread) and replay as traced",
                f.rejected
            );
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }
}
