//! LIME's precision corpus (issue 43): every program in `examples/lime/` plants one cause of
//! load imbalance at the line marked `PLANTED` (its header says which kind: control flow, cache
//! misses (false sharing among them), a serial part, time inside a library call), in the idioms real code uses — pthread
//! and mutex+condition barriers, a hand-built spin barrier, OpenMP loops (static, cyclic,
//! dynamic, guided; with `reduction`, `critical`, `atomic`, `nowait`), `sections`, `single`,
//! tasks, nested regions, C++ `std::thread` with `std::barrier` and `std::latch`, Rust `Barrier`
//! and scoped threads, a rayon `par_iter` (a pool section; built with cargo, offline, from the
//! crates the workspace's `Cargo.lock` pins), some built at `-O0`; and hot locks (pthread
//! mutexes, OpenMP named `critical`, C++ `std::mutex`), judged by `isim locks`: the lock most
//! waited for must be taken at the planted line. Each is traced at 4, 8 and 16 threads, simulated,
//! and analysed with `isim lime`. The oracle is the source itself:
//! * the top cause of the most idle section is at the planted line — a control-flow leader's
//!   own line or the line its edge leads to, a miss's instruction, a serial section's code;
//!   a miss inside a library call at the call's line with the library named — in at least
//!   95 % of the (program, threads) pairs;
//! * no top cause, in any pair, is code of a runtime or a synchronization primitive, or a line
//!   outside the program's own source;
//! * no section, in any pair, is named by a bare address (code without a source line).
//!
//! The table of every pair is printed (`cargo test --test lime_corpus -- --nocapture`);
//! `docs/lime.md` shows one. The analyses run on a release build of isim, made once into
//! `target/tracer-test` beside the tracer's libraries (a debug build takes a minute per
//! 16-thread analysis). Needs `qemu-x86_64`, gcc (with libgomp), g++ and rustc; `.ci/run`
//! installs them, and under `CI=true` a missing one fails the test.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use common::{root, tools_present, tracer_libs};

const THREADS: [u32; 3] = [4, 8, 16];

/// One corpus program.
struct Program {
    /// The source file's name.
    file: String,
    source: PathBuf,
    /// The line marked `PLANTED`.
    planted: u32,
    /// The kind of cause its header states (`lime-corpus: cause=KIND`).
    cause: String,
    /// Crates it needs (`crates=NAME,...` on the header's line): built with cargo.
    crates: Vec<String>,
}

fn programs() -> Vec<Program> {
    let dir = root().join("examples/lime");
    let mut v: Vec<Program> = std::fs::read_dir(&dir)
        .expect("examples/lime")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "c" || e == "cpp" || e == "rs")
        })
        .map(|source| {
            let text = std::fs::read_to_string(&source).expect("read");
            let file = source.file_name().unwrap().to_string_lossy().into_owned();
            let planted: Vec<u32> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| l.contains("PLANTED"))
                .map(|(i, _)| i as u32 + 1)
                .collect();
            assert_eq!(planted.len(), 1, "{file}: one line marked PLANTED");
            let header = text
                .lines()
                .find_map(|l| l.split("lime-corpus: cause=").nth(1))
                .unwrap_or_else(|| panic!("{file}: no 'lime-corpus: cause=' in its header"));
            let cause = header.split_whitespace().next().unwrap().to_string();
            let crates = header
                .split_whitespace()
                .find_map(|w| w.strip_prefix("crates="))
                .map_or(Vec::new(), |c| c.split(',').map(str::to_string).collect());
            Program {
                file,
                source,
                planted: planted[0],
                cause,
                crates,
            }
        })
        .collect();
    v.sort_by(|a, b| a.file.cmp(&b.file));
    v
}

/// A release build of isim in `target/tracer-test` (after the tracer's libraries, which the
/// same nested cargo wrote there).
fn release_isim() -> PathBuf {
    let target = tracer_libs().parent().unwrap().to_path_buf();
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["build", "--release", "--quiet", "-p", "isim"])
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "building isim: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("release/isim")
}

/// Fails with the compiler's (or cargo's) errors if building `p` failed.
fn built(p: &Program, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}: {}",
        p.file,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles a corpus program into `dir`: `-O0` for files named `*_O0`, else optimised.
fn build(p: &Program, dir: &Path) -> PathBuf {
    let stem = p.file.rsplit_once('.').unwrap().0;
    let exe = dir.join(stem);
    let o0 = stem.ends_with("_O0");
    if !p.crates.is_empty() {
        return common::cargo_build(dir, stem, &p.source, &p.crates, o0);
    }
    let mut cmd = match p.file.rsplit_once('.').unwrap().1 {
        "c" => {
            let mut c = Command::new("gcc");
            c.args([if o0 { "-O0" } else { "-O2" }, "-g", "-fopenmp", "-pthread"]);
            c
        }
        "cpp" => {
            let mut c = Command::new("g++");
            c.args([
                if o0 { "-O0" } else { "-O2" },
                "-g",
                "-std=c++20",
                "-pthread",
            ]);
            c
        }
        _ => {
            let mut c = Command::new("rustc");
            c.args(["-g", "-C", if o0 { "opt-level=0" } else { "opt-level=2" }]);
            c
        }
    };
    let out = cmd
        .arg("-o")
        .arg(&exe)
        .arg(&p.source)
        .output()
        .expect("run the compiler");
    built(p, &out);
    exe
}

/// Runs `isim ARGS`: its standard error, as an error if it failed.
fn run(isim: &Path, args: &[&str], what: &str) -> Result<String, String> {
    let out = Command::new(isim)
        .env("ISIM_TRACER_DIR", tracer_libs())
        .env_remove("_")
        .args(args)
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    } else {
        Err(format!("{what}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// Traces, simulates and analyses one pair: its `lime.json`, or for a hot-lock program its
/// `locks.json` (`isim locks`).
fn analyse(isim: &Path, exe: &Path, p: &Program, t: u32, dir: &Path) -> Result<Value, String> {
    let tag = dir.join(format!("{}-{t}", p.file));
    let trace = dir.join(format!("{}-{t}.itrace", p.file));
    let (trace_s, tag_s) = (trace.to_str().unwrap(), tag.to_str().unwrap());
    let threads = t.to_string();
    let exe = exe.to_str().unwrap();
    let what = |cmd: &str| format!("isim {cmd} {} -t {t}", p.file);
    run(
        isim,
        &["trace", "-o", trace_s, "--", exe, "-t", &threads],
        &what("trace"),
    )?;
    run(
        isim,
        &["run", "--trace", trace_s, "-o", tag_s],
        &what("run"),
    )?;
    let (verb, file) = if p.cause == "hot-lock" {
        ("locks", "locks.json")
    } else {
        ("lime", "lime.json")
    };
    let said = run(isim, &[verb, tag_s], &what(verb))?;
    // A pool worker's job that replay ran outside the call that handed it to the pool is
    // in no section: the replay's ordering failed, not LIME.
    if said.contains("outside every call into the pool") {
        return Err(format!("{}: {said}", what(verb)));
    }
    let text = std::fs::read_to_string(tag.join(file)).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("{file}: {e}"))
}

/// What LIME said about one (program, threads) pair.
struct Verdict {
    right: bool,
    /// A top cause in a runtime or synchronization primitive, or outside the program's source.
    foreign: bool,
    section: String,
    cause: String,
}

/// The file name and line of each `file:line` in a cause's location (`a.c:3 -> a.c:5`).
fn lines(location: &str) -> Vec<(String, u32)> {
    location
        .split(" -> ")
        .filter_map(|l| {
            let (f, n) = l.rsplit_once(':')?;
            let name = Path::new(f).file_name()?.to_string_lossy().into_owned();
            Some((name, n.parse().ok()?))
        })
        .collect()
}

/// The locations of a `lime.json`'s sections that are bare addresses (`0x…`: code without a
/// source line), where every section should be named by a line of the program.
fn bare_sections(lime: &Value) -> Vec<String> {
    lime["sections"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["location"].as_str())
        .filter(|l| l.starts_with("0x"))
        .map(str::to_string)
        .collect()
}

/// A hot-lock program: the lock most waited for must be taken at the planted line (its
/// site with the most waiting).
fn judge_lock(p: &Program, locks: &Value) -> Verdict {
    let Some(top) = locks["locks"].as_array().and_then(|l| l.first()) else {
        return Verdict {
            right: false,
            foreign: false,
            section: "no lock".into(),
            cause: String::new(),
        };
    };
    let site = &top["sites"][0];
    let at = lines(site["location"].as_str().unwrap_or(""));
    Verdict {
        right: at.iter().any(|(f, l)| *f == p.file && *l == p.planted),
        foreign: at.first().is_none_or(|(f, _)| *f != p.file),
        section: format!(
            "locks: {:.0} % of sync-crit-sect",
            100.0 * top["share_of_sync_crit_sect"].as_f64().unwrap_or(0.0)
        ),
        cause: format!(
            "lock {} {}",
            top["addr"].as_str().unwrap_or("?"),
            at.first().map_or("?".into(), |(f, l)| format!("{f}:{l}"))
        ),
    }
}

fn judge(p: &Program, lime: &Value) -> Verdict {
    if p.cause == "hot-lock" {
        return judge_lock(p, lime);
    }
    let sections = lime["sections"].as_array().expect("sections");
    let Some(s) = sections.iter().max_by(|a, b| {
        let idle = |s: &Value| s["idle_cycles"].as_f64().unwrap_or(0.0);
        idle(a).total_cmp(&idle(b))
    }) else {
        return Verdict {
            right: false,
            foreign: false,
            section: "no section".into(),
            cause: String::new(),
        };
    };
    let loc = s["location"].as_str().unwrap_or("?");
    let section = format!(
        "{} {} ({:.0} % of the idle time)",
        lines(loc)
            .first()
            .map_or(loc.to_string(), |(f, l)| format!("{f}:{l}")),
        s["kind"].as_str().unwrap_or("?"),
        s["idle_share_pct"].as_f64().unwrap_or(0.0)
    );
    let Some(c) = s["causes"].as_array().and_then(|c| c.first()) else {
        return Verdict {
            right: false,
            foreign: false,
            section,
            cause: "no cause".into(),
        };
    };
    let location = c["location"].as_str().unwrap_or("");
    let at = lines(location);
    // A miss or misprediction planted inside a library call must also name the library.
    let kind = c["kind"].as_str().unwrap_or("?");
    let named = c["library"]["name"]
        .as_str()
        .map_or(String::new(), |n| format!(" in {n}"));
    let unnamed = p.cause == "library" && kind != "control-flow leader" && named.is_empty();
    let right = at.iter().any(|(f, l)| *f == p.file && *l == p.planted) && !unnamed;
    let function = c["function"].as_str().unwrap_or("");
    let foreign = sim_frontend::model::is_sync_function(function)
        || at.first().is_none_or(|(f, _)| *f != p.file);
    let short: Vec<String> = at.iter().map(|(f, l)| format!("{f}:{l}")).collect();
    Verdict {
        right,
        foreign,
        section,
        cause: format!(
            "{kind} {:.3} {function} {}{named}",
            c["score"].as_f64().unwrap_or(0.0),
            short.join(" -> ")
        ),
    }
}

#[test]
fn lime_names_the_planted_cause_of_the_corpus_programs() {
    if !tools_present(&["qemu-x86_64", "gcc", "g++", "rustc"]) {
        return;
    }
    let mut progs = programs();
    assert!(progs.len() >= 30, "{} corpus programs", progs.len());
    // LIME_CORPUS_ONLY=NAME,... (file names without extension) runs only those programs, for
    // a developer's look at one; CI runs them all.
    if let Ok(only) = std::env::var("LIME_CORPUS_ONLY") {
        let only: Vec<&str> = only.split(',').collect();
        progs.retain(|p| only.contains(&p.file.rsplit_once('.').unwrap().0));
    }
    let isim = release_isim();
    let dir = tempfile::tempdir().unwrap();
    let exes: Vec<PathBuf> = progs.iter().map(|p| build(p, dir.path())).collect();
    let pairs: Vec<(usize, u32)> = (0..progs.len())
        .flat_map(|i| THREADS.map(|t| (i, t)))
        .collect();
    let next = AtomicUsize::new(0);
    let verdicts: Mutex<Vec<Option<Verdict>>> =
        Mutex::new((0..pairs.len()).map(|_| None).collect());
    // Sections named by a bare address instead of a source line, any pair, any section.
    let bare: Mutex<Vec<String>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(i, t)) = pairs.get(k) else { break };
                    let p = &progs[i];
                    // A failure (a replay that deadlocks is a bug) is recorded and reported
                    // with the others at the end; the other pairs still run.
                    let v = match analyse(&isim, &exes[i], p, t, dir.path()) {
                        Ok(lime) => {
                            bare.lock().unwrap().extend(
                                bare_sections(&lime)
                                    .into_iter()
                                    .map(|l| format!("{} -t {t}: a section named {l}", p.file)),
                            );
                            judge(p, &lime)
                        }
                        Err(e) => Verdict {
                            right: false,
                            foreign: false,
                            section: "failed".into(),
                            cause: e,
                        },
                    };
                    verdicts.lock().unwrap()[k] = Some(v);
                }
            });
        }
    });
    let verdicts: Vec<Verdict> = verdicts
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|v| v.expect("every pair judged"))
        .collect();
    println!("| program | planted | threads | most idle section | top cause | right |");
    println!("|---|---|---:|---|---|---|");
    for (&(i, t), v) in pairs.iter().zip(&verdicts) {
        let p = &progs[i];
        println!(
            "| {} | {} line {} | {t} | {} | {} | {} |",
            p.file,
            p.cause,
            p.planted,
            v.section,
            v.cause,
            if v.right { "yes" } else { "**no**" }
        );
    }
    let failed: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.section == "failed")
        .map(|v| v.cause.as_str())
        .collect();
    assert!(failed.is_empty(), "isim failed: {failed:#?}");
    let bare = bare.into_inner().unwrap();
    assert!(bare.is_empty(), "sections with no source line: {bare:#?}");
    let right = verdicts.iter().filter(|v| v.right).count();
    println!(
        "\n{right} of {} pairs right ({:.1} %)",
        verdicts.len(),
        100.0 * right as f64 / verdicts.len() as f64
    );
    let foreign: Vec<String> = pairs
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v.foreign)
        .map(|(&(i, t), v)| format!("{} -t {t}: {}", progs[i].file, v.cause))
        .collect();
    assert!(
        foreign.is_empty(),
        "top causes in a runtime, a primitive or outside the program: {foreign:#?}"
    );
    assert!(
        right * 100 >= 95 * verdicts.len(),
        "LIME named the planted line in {right} of {} pairs (at least 95 % needed)",
        verdicts.len()
    );
}
