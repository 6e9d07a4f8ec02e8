//! `isim sweep --slurm` against a real Slurm: each test starts its own single-node cluster
//! from Debian's packages (munged, slurmctld and slurmd on localhost with a generated
//! `slurm.conf`, ports and state in a temporary directory, stopped at the end by their process
//! ids), submits sweeps to it, and checks that the files equal a local sweep's, that a rerun
//! resubmits exactly the runs that did not finish (one cancelled, one failed), and that a
//! rejected submission, a missing `sbatch` and a task that cannot see the sweep directory are
//! clear errors. `.ci/run` installs slurm-wlm and munge; under `CI=true` a missing one fails.

mod common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::tools_present;

/// A single-node Slurm cluster of this host, for one test.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn capture(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

impl Cluster {
    /// Starts munged, slurmctld and slurmd, and waits until the node takes jobs.
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        // munge: a key of our own, the daemon on a socket of our own.
        let key = d.join("munge.key");
        let mut random = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut random)
            .unwrap();
        std::fs::write(&key, &random).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let socket = d.join("munge.socket");
        let o = capture(
            Command::new("munged")
                .arg("--force")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--pid-file={}", d.join("munged.pid").display()))
                .arg(format!("--log-file={}", d.join("log/munged.log").display()))
                .arg(format!("--seed-file={}", d.join("munged.seed").display())),
        );
        assert!(
            o.status.success(),
            "munged: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // The node as slurmd sees it; the controller on this host's short name.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let host = host.trim().split('.').next().unwrap().to_string();
        let probe = capture(Command::new("slurmd").arg("-C"));
        let probe = String::from_utf8_lossy(&probe.stdout);
        let cpus = probe
            .split_whitespace()
            .find_map(|w| w.strip_prefix("CPUs="))
            .map(str::to_string)
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .unwrap()
                    .get()
                    .to_string()
            });
        let user = String::from_utf8(capture(Command::new("id").arg("-un")).stdout).unwrap();
        let user = user.trim();
        let p = |n: &str| d.join(n).display().to_string();
        let conf_text = format!(
            "ClusterName=isimtest\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctld}\n\
             SlurmdPort={slurmd}\n\
             SlurmUser={user}\n\
             SlurmdUser={user}\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={state}\n\
             SlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\n\
             SlurmdPidFile={slurmd_pid}\n\
             SlurmctldLogFile={ctld_log}\n\
             SlurmdLogFile={slurmd_log}\n\
             ProctrackType=proctrack/pgid\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SchedulerType=sched/backfill\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             MinJobAge=300\n\
             NodeName=isimnode NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
             PartitionName=debug Nodes=isimnode Default=YES MaxTime=INFINITE State=UP\n",
            ctld = free_port(),
            slurmd = free_port(),
            socket = socket.display(),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            slurmd_pid = p("slurmd.pid"),
            ctld_log = p("log/slurmctld.log"),
            slurmd_log = p("log/slurmd.log"),
        );
        let conf = d.join("slurm.conf");
        std::fs::write(&conf, conf_text).unwrap();
        let c = Cluster { dir, conf };
        let o = capture(c.cmd("slurmctld").arg("-i"));
        assert!(o.status.success(), "slurmctld: {}", c.logs(&o));
        let o = capture(c.cmd("slurmd").args(["-N", "isimnode"]));
        assert!(o.status.success(), "slurmd: {}", c.logs(&o));
        let t = Instant::now();
        loop {
            let o = capture(c.cmd("sinfo").args(["--noheader", "--format=%T"]));
            let state = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if state == "idle" {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the node did not come up (state `{state}`): {}",
                c.logs(&o)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        c
    }

    /// A command with this cluster's configuration.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `isim ARGS` as a user of this cluster.
    fn isim(&self, args: &[&str]) -> Output {
        capture(self.cmd(env!("CARGO_BIN_EXE_isim")).args(args))
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.isim(args);
        assert!(
            o.status.success(),
            "isim {args:?} failed: {}",
            self.logs(&o)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// A command's output and the daemons' logs, for a failure message.
    fn logs(&self, o: &Output) -> String {
        let mut s = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        for l in ["munged", "slurmctld", "slurmd"] {
            let text = std::fs::read_to_string(self.dir.path().join(format!("log/{l}.log")))
                .unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s.push_str(&format!(
                "\n--- {l}.log (last lines, newest first)\n{}",
                tail.join("\n")
            ));
        }
        s
    }

    /// Waits until Slurm lists no pending or running task of `job`.
    fn wait_idle(&self, job: &str) {
        let t = Instant::now();
        loop {
            let o = capture(
                self.cmd("squeue")
                    .args(["--noheader", "--array", "--jobs", job]),
            );
            if String::from_utf8_lossy(&o.stdout).trim().is_empty() {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "job {job} did not end"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for pid in ["slurmd.pid", "slurmctld.pid", "munged.pid"] {
            if let Ok(p) = std::fs::read_to_string(self.dir.path().join(pid)) {
                let _ = Command::new("kill").arg(p.trim()).status();
            }
        }
        // Give them a moment to leave before the directory goes.
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn have_slurm() -> bool {
    tools_present(&[
        "munged",
        "slurmctld",
        "slurmd",
        "sbatch",
        "squeue",
        "scontrol",
    ])
}

/// Every file under `a` equals the same file under `b`, both holding the same names, but for
/// the `slurm/` bookkeeping of a Slurm sweep.
fn assert_same_files(a: &Path, b: &Path) {
    fn walk(root: &Path, d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if rel == Path::new("slurm") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(rel);
            }
        }
    }
    let files = |r: &Path| {
        let mut v = Vec::new();
        walk(r, r, &mut v);
        v.sort();
        v
    };
    let fa = files(a);
    assert_eq!(fa, files(b), "{} vs {}", a.display(), b.display());
    assert!(fa.iter().any(|f| f.ends_with("sweep.json")), "{fa:?}");
    for f in fa {
        assert!(
            std::fs::read(a.join(&f)).unwrap() == std::fs::read(b.join(&f)).unwrap(),
            "{} differs",
            f.display()
        );
    }
}

const SWEEP: [&str; 6] = ["sweep", "-w", "lu-owner", "--cores", "1,2,4,8", "-s"];

/// A local sweep at `path`, moved to `path-local` (so the Slurm one can use the same path:
/// a sweep records its directory in the commands of `sweep.json`).
fn local_sweep(path: &Path) -> PathBuf {
    let mut a: Vec<&str> = SWEEP.to_vec();
    a.extend(["4", "-o", path.to_str().unwrap()]);
    common::ok(&a);
    let moved = path.with_extension("local");
    std::fs::rename(path, &moved).unwrap();
    moved
}

fn sweep_args<'a>(path: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&str> = SWEEP.to_vec();
    a.extend(["4", "-o", path.to_str().unwrap(), "--slurm"]);
    a.extend(extra);
    a
}

fn submission(path: &Path, k: u32) -> serde_json::Value {
    let p = path.join(format!("slurm/s{k}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

#[test]
fn a_sweep_on_slurm_writes_the_files_of_the_local_sweep() {
    if !have_slurm() {
        return;
    }
    let cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let sw = tmp.path().join("sweep");
    let local = local_sweep(&sw);
    let out = cluster.ok(&sweep_args(&sw, &["--wait"]));
    assert!(out.contains(": 4 simulations"), "{out}");
    assert!(
        out.contains("4 runs finished since the last collection, 0 before"),
        "{out}"
    );
    assert!(out.contains("speedup"), "{out}");
    let s1 = submission(&sw, 1);
    assert_eq!(s1["tasks"].as_array().unwrap().len(), 4, "{s1}");
    let script = std::fs::read_to_string(sw.join("slurm/s1.sh")).unwrap();
    assert!(script.contains("#SBATCH --array=0-3"), "{script}");
    // Each task ran on the node and left its status and log.
    for i in 0..4 {
        let st: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(sw.join(format!("slurm/status/s1_{i}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(st["ok"], true, "{st}");
        assert!(sw.join(format!("slurm/logs/s1_{i}.log")).is_file());
    }
    assert_same_files(&sw, &local);
    // Collecting again submits nothing and rewrites the same table.
    let again = cluster.ok(&sweep_args(&sw, &[]));
    assert!(
        again.contains("0 runs finished since the last collection, 4 before"),
        "{again}"
    );
    assert!(!sw.join("slurm/s2.json").exists());
    assert_same_files(&sw, &local);
}

#[test]
fn a_rerun_resubmits_only_the_runs_that_did_not_finish() {
    if !have_slurm() {
        return;
    }
    let cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let sw = tmp.path().join("sweep");
    let local = local_sweep(&sw);
    // Submitted held: three tasks are released, the fourth cancelled before it starts; and
    // the run of task 1 fails, its directory's place taken by a file.
    let out = cluster.ok(&sweep_args(&sw, &["--sbatch-arg=--hold"]));
    assert!(out.contains("0 of 4 runs done"), "{out}");
    assert!(out.contains("run this same command again"), "{out}");
    let s1 = submission(&sw, 1);
    let job = s1["job"].as_str().unwrap().to_string();
    let ids: Vec<String> = s1["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let blocker = sw.join("runs").join(&ids[1]);
    std::fs::write(&blocker, "not a run").unwrap();
    // (Released first: a task cancelled while its whole array is one pending record leaves
    // Slurm no record of it; the rerun then says so instead of naming the state.)
    let o = capture(cluster.cmd("scontrol").args([
        "release",
        &format!("{job}_0"),
        &format!("{job}_1"),
        &format!("{job}_2"),
    ]));
    assert!(o.status.success(), "{}", cluster.logs(&o));
    let o = capture(cluster.cmd("scancel").arg(format!("{job}_3")));
    assert!(o.status.success(), "{}", cluster.logs(&o));
    cluster.wait_idle(&job);

    // The rerun says why each did not finish and resubmits those two, nothing else.
    let out = cluster.ok(&sweep_args(&sw, &[]));
    assert!(
        out.contains(&format!("resubmitting {}: ended CANCELLED", ids[3])),
        "{out}"
    );
    let failed_line = out
        .lines()
        .find(|l| l.starts_with(&format!("resubmitting {}:", ids[1])))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        failed_line.contains("failed on")
            && failed_line.contains("(exit status 1)")
            && failed_line.contains("is not an isim run directory")
            && failed_line.contains("slurm/logs/s1_1.log"),
        "{failed_line}"
    );
    assert!(out.contains("2 of 4 runs done"), "{out}");
    let s2 = submission(&sw, 2);
    assert_eq!(s2["tasks"], serde_json::json!([ids[1], ids[3]]), "{s2}");

    // Waiting for it: the cancelled run completes, the blocked one fails again, and the
    // command fails naming it, its exit status and its log.
    let o = cluster.isim(&sweep_args(&sw, &["--wait"]));
    assert!(!o.status.success(), "{}", cluster.logs(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("1 of 4 runs did not finish on Slurm")
            && err.contains(&format!("{}: failed on", ids[1]))
            && err.contains("(exit status 1)")
            && err.contains("slurm/logs/s2_0.log"),
        "{err}"
    );
    assert!(sw.join("runs").join(&ids[3]).join("summary.json").is_file());
    assert!(!sw.join("sweep.json").exists());

    // With the blocker gone, the next rerun resubmits that run alone and completes the sweep,
    // with the local sweep's files.
    std::fs::remove_file(&blocker).unwrap();
    let out = cluster.ok(&sweep_args(&sw, &["--wait"]));
    assert!(
        out.contains("1 runs finished since the last collection, 3 before"),
        "{out}"
    );
    assert_eq!(submission(&sw, 3)["tasks"], serde_json::json!([ids[1]]));
    assert!(!sw.join("slurm/s4.json").exists());
    assert_same_files(&sw, &local);
}

#[test]
fn slurm_failures_are_clear() {
    // A missing sbatch: what to install, or to drop --slurm.
    let tmp = tempfile::tempdir().unwrap();
    let sw = tmp.path().join("sweep");
    let o = capture(
        Command::new(env!("CARGO_BIN_EXE_isim"))
            .args(sweep_args(&sw, &[]))
            .env("PATH", tmp.path()),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`sbatch` not found on PATH")
            && err.contains("slurm-client")
            && err.contains("drop --slurm"),
        "{err}"
    );
    assert!(
        !sw.join("slurm/s1.json").exists(),
        "a record of a submission that never happened"
    );
    // A task on a node that does not see the sweep directory.
    let o = common::isim(&[
        "sweep-task",
        tmp.path().join("elsewhere").to_str().unwrap(),
        "--submission",
        "1",
        "--index",
        "0",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no sweep plan") && err.contains("same path") && err.contains("elsewhere"),
        "{err}"
    );
    // --jobs is for local sweeps.
    let mut a = sweep_args(&sw, &[]);
    a.extend(["--jobs", "2"]);
    let err = common::fails(&a);
    assert!(
        err.contains("--jobs applies to sweeps on this host"),
        "{err}"
    );

    // Slurm's own refusal, with its message; nothing recorded as submitted.
    if !have_slurm() {
        return;
    }
    let cluster = Cluster::start();
    let o = cluster.isim(&sweep_args(&sw, &["--partition", "no-such-partition"]));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sbatch rejected the job array of 4 tasks")
            && err.to_lowercase().contains("partition"),
        "{err}"
    );
    assert!(!sw.join("slurm/s1.json").exists());
    assert!(!sw.join("slurm/s1.sh").exists());
}

#[test]
fn a_program_sweep_on_slurm_traces_in_one_array_and_simulates_in_another_after_it() {
    if !have_slurm() || !tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let libs = common::tracer_libs();
    let exe = common::example(tmp.path(), "owner_barrier");
    let sw = tmp.path().join("sweep");
    let args = [
        "sweep",
        "--cores",
        "1,2",
        "--roi",
        "markers",
        "--out",
        sw.to_str().unwrap(),
        "--slurm",
        "--wait",
        "--",
        exe.to_str().unwrap(),
        "-t",
        "{threads}",
        "-n",
        "32",
    ];
    // The tracer libraries reach the tasks through the environment sbatch passes on.
    let o = capture(
        cluster
            .cmd(env!("CARGO_BIN_EXE_isim"))
            .env("ISIM_TRACER_DIR", libs)
            .args(args),
    );
    assert!(o.status.success(), "{}", cluster.logs(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(": 2 traces of the program"), "{out}");
    let s1 = submission(&sw, 1);
    assert_eq!(s1["tasks"], serde_json::json!(["trace c1", "trace c2"]));
    let script = std::fs::read_to_string(sw.join("slurm/s2.sh")).unwrap();
    assert!(
        script.contains(&format!(
            "#SBATCH --dependency=afterok:{}\n",
            s1["job"].as_str().unwrap()
        )),
        "{script}"
    );
    assert!(
        out.contains("2 runs finished since the last collection, 0 before"),
        "{out}"
    );
    // Each run is its trace simulated: the same as `isim run --trace` alone.
    for c in [1u32, 2] {
        let trace = sw.join("traces").join(format!("c{c}.itrace"));
        let alone = tmp.path().join(format!("alone{c}"));
        common::ok(&[
            "run",
            "--trace",
            trace.to_str().unwrap(),
            "--cores",
            &c.to_string(),
            "--out",
            alone.to_str().unwrap(),
        ]);
        let in_sweep = sw.join("runs").join(format!("default_c{c}"));
        for f in ["summary.json", "attribution.json", "sections.json"] {
            assert!(
                std::fs::read(alone.join(f)).unwrap() == std::fs::read(in_sweep.join(f)).unwrap(),
                "{f} at {c} cores"
            );
        }
    }
    assert!(sw.join("sweep.json").is_file());
}
