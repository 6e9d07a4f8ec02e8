//! Property test of replay: random well-formed pthread programs always replay to completion.
//!
//! A generator (SplitMix64, seeded per case: no host randomness) writes C programs in which
//! main creates T workers (2..=5, some late, after work of its own) and joins them in a random
//! order; the workers run the same number of segments, each ending with a `pthread_barrier_wait`
//! or with the mutex + condition-variable barrier idiom, and in between a random mix of: work
//! on a private array, lock/unlock of one of three mutexes around a shared counter (nested
//! locks always in index order), `pthread_mutex_trylock` retry loops, a `pthread_cond_timedwait`
//! that times out in a predicate loop, and token passing round the workers on a condition
//! variable (predicate loops; signal with two workers, broadcast otherwise). Every program
//! terminates natively by construction. Each is compiled, run natively, traced and simulated;
//! the replay must end (no deadlock) and the trace's barrier/create/join counts must equal
//! what the generator emitted.
//!
//! The converse: a trace that truly deadlocks (two threads taking two mutexes in opposite
//! orders, written with the built-in semantics, which carry no recorded order) gets the
//! watchdog's report naming each blocked thread and what it waits for.
//!
//! Cases: `ISIM_PROPERTY_CASES` (default 12).

mod common;

use std::fmt::Write;
use std::process::{Command, Output};

use serde_json::Value;
use sim_frontend::TraceWriter;
use sim_frontend::model::{Marker, Order, Spin, TraceMeta};

use common::{compile, root, tools_present, tracer_libs};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What a generated program does, for the count oracle.
struct Program {
    source: String,
    workers: u32,
    /// Barrier participations per worker (pthread barriers, and condition-variable barriers
    /// when used at least twice).
    barriers: u64,
    /// Sync calls by kind, for the summary line.
    calls: [u64; 5],
}

fn generate(seed: u64) -> Program {
    let mut r = Rng(seed);
    let t = 2 + r.below(4) as u32;
    let segments = 2 + r.below(4);
    let mut calls = [0u64; 5]; // barrier, lock, trylock, timedwait, token
    let mut body = String::new();
    let mut barriers = 0;
    let mut cond_barriers = 0;
    for s in 0..segments {
        // The same segment kinds for every worker (token passing and barriers need all);
        // the per-worker random choices are made at run time from the seed below.
        let ops = 1 + r.below(4);
        for _ in 0..ops {
            match r.below(5) {
                0 => {
                    let _ = writeln!(body, "    work(me, {});", 200 + r.below(3000));
                }
                1 => {
                    let (a, b) = (r.below(3), r.below(3));
                    let (a, b) = (a.min(b), a.max(b));
                    calls[1] += 1;
                    if a == b {
                        let _ = writeln!(
                            body,
                            "    pthread_mutex_lock(&mx[{a}]); counter[{a}] += me; pthread_mutex_unlock(&mx[{a}]);"
                        );
                    } else {
                        let _ = writeln!(
                            body,
                            "    pthread_mutex_lock(&mx[{a}]); pthread_mutex_lock(&mx[{b}]); counter[{a}]++; counter[{b}] += counter[{a}] & 1; pthread_mutex_unlock(&mx[{b}]); pthread_mutex_unlock(&mx[{a}]);"
                        );
                    }
                }
                2 => {
                    let a = r.below(3);
                    calls[2] += 1;
                    let _ = writeln!(
                        body,
                        "    while (pthread_mutex_trylock(&mx[{a}]) != 0) work(me, 20); counter[{a}] += 2; pthread_mutex_unlock(&mx[{a}]);"
                    );
                }
                3 => {
                    calls[3] += 1;
                    let _ = writeln!(body, "    timed_wait(me);");
                }
                _ => {
                    calls[4] += 1;
                    let _ = writeln!(body, "    pass_token(me, {});", 1 + r.below(3));
                }
            }
        }
        barriers += 1;
        calls[0] += 1;
        if r.below(2) == 0 {
            let _ = writeln!(body, "    pthread_barrier_wait(&pb); /* segment {s} */");
        } else {
            cond_barriers += 1;
            let _ = writeln!(body, "    cond_barrier(); /* segment {s} */");
        }
    }
    // A condition broadcast only once cannot be told from a hand-off, so a condition-variable
    // barrier used once is replayed as condition waits, not as a barrier.
    if cond_barriers == 1 {
        barriers -= 1;
    }
    // Main: creates (some after work), then joins in a random order.
    let mut main = String::new();
    for w in 0..t {
        if r.below(3) == 0 {
            let _ = writeln!(main, "    work(99, {});", 500 + r.below(5000));
        }
        let _ = writeln!(
            main,
            "    pthread_create(&th[{w}], NULL, worker, (void *)(long){w});"
        );
    }
    let mut order: Vec<u32> = (0..t).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, r.below(i as u64 + 1) as usize);
    }
    for w in order {
        let _ = writeln!(main, "    pthread_join(th[{w}], NULL);");
    }
    let source = format!(
        r#"/* generated by tests/sync_property.rs, seed {seed} */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#define T {t}
static pthread_mutex_t mx[3] = {{PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER}};
static long counter[3];
static pthread_barrier_t pb;
static pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tc = PTHREAD_COND_INITIALIZER;
static int token;
static pthread_mutex_t bm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bc = PTHREAD_COND_INITIALIZER;
static int bcount, bgen;
static pthread_mutex_t wm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wc = PTHREAD_COND_INITIALIZER;
static double priv[T + 100][64];

__attribute__((noinline)) static void work(int me, int n) {{
    for (int i = 0; i < n; i++) priv[me % (T + 100)][i & 63] += i * 0.5;
}}
/* Every worker passes the token `rounds` times: wait while it is not ours, pass it on. */
static void pass_token(int me, int rounds) {{
    for (int k = 0; k < rounds; k++) {{
        pthread_mutex_lock(&tm);
        while (token != me) pthread_cond_wait(&tc, &tm);
        token = (me + 1) % T;
        if (T == 2) pthread_cond_signal(&tc); else pthread_cond_broadcast(&tc);
        pthread_mutex_unlock(&tm);
    }}
}}
/* A wait that times out: nobody signals `wc`. */
static void timed_wait(int me) {{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200000;
    if (ts.tv_nsec >= 1000000000) {{ ts.tv_sec++; ts.tv_nsec -= 1000000000; }}
    pthread_mutex_lock(&wm);
    int r = 0;
    while (r == 0) r = pthread_cond_timedwait(&wc, &wm, &ts);
    pthread_mutex_unlock(&wm);
    work(me, 10);
}}
static void cond_barrier(void) {{
    pthread_mutex_lock(&bm);
    if (++bcount == T) {{ bcount = 0; bgen++; pthread_cond_broadcast(&bc); }}
    else {{ int my = bgen; while (my == bgen) pthread_cond_wait(&bc, &bm); }}
    pthread_mutex_unlock(&bm);
}}
static void *worker(void *arg) {{
    int me = (int)(long)arg;
{body}    return NULL;
}}
int main(void) {{
    pthread_t th[T];
    pthread_barrier_init(&pb, NULL, T);
{main}    printf("checksum %ld %ld %ld\n", counter[0], counter[1], counter[2]);
    return 0;
}}
"#
    );
    Program {
        source,
        workers: t,
        barriers,
        calls,
    }
}

fn isim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isim"))
        .current_dir(root())
        .env("ISIM_TRACER_DIR", tracer_libs())
        .args(args)
        .output()
        .expect("run isim")
}

fn counts(s: &Value, kind: &str) -> Vec<u64> {
    s["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["markers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m[0] == kind)
                .map_or(0, |m| m[1].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn random_well_formed_pthread_programs_replay_to_completion() {
    if !tools_present(&["qemu-x86_64", "gcc"]) {
        return;
    }
    let cases: u64 = std::env::var("ISIM_PROPERTY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let keep = tempfile::tempdir().unwrap().keep();
    let mut totals = [0u64; 5];
    let mut threads = 0;
    for case in 0..cases {
        let seed = 0x5eed_0000 + case;
        let p = generate(seed);
        let src = keep.join(format!("prop{case}.c"));
        std::fs::write(&src, &p.source).unwrap();
        let exe = compile(&keep, &format!("prop{case}"), &src, &["-O1"]);
        let native = Command::new("timeout")
            .arg("20")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(
            native.status.success(),
            "{}: native run failed",
            src.display()
        );
        let trace = keep.join(format!("prop{case}.itrace"));
        let o = isim(&[
            "trace",
            "--json",
            "-o",
            trace.to_str().unwrap(),
            "--",
            exe.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{}: isim trace: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let json = out.find("\n{\n").map_or(out.as_str(), |i| &out[i + 1..]);
        let s: Value = serde_json::from_str(json).unwrap();
        let run = keep.join(format!("prop{case}.run"));
        let o = isim(&[
            "run",
            "--trace",
            trace.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{}: replay did not complete: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        // Thread 0 is main; workers are 1..=T in creation order.
        let t = p.workers as usize;
        let mut want = vec![p.barriers; t + 1];
        want[0] = 0;
        assert_eq!(counts(&s, "barrier"), want, "{}", src.display());
        let mut cj = vec![0; t + 1];
        cj[0] = t as u64;
        assert_eq!(counts(&s, "create"), cj, "{}", src.display());
        assert_eq!(counts(&s, "join"), cj, "{}", src.display());
        threads += t as u64;
        for (a, b) in totals.iter_mut().zip(p.calls) {
            *a += b * t as u64;
        }
    }
    eprintln!(
        "property: {cases} programs, {threads} worker threads, per-worker calls summed: \
         {} barriers, {} lock sections, {} trylock loops, {} timed waits, {} token rounds; \
         all replayed to completion",
        totals[0], totals[1], totals[2], totals[3], totals[4]
    );
    let _ = std::fs::remove_dir_all(&keep);
}

/// A trace that truly deadlocks (lock-order inversion, built-in semantics) gets the watchdog's
/// report, naming both threads and the mutex each waits for.
#[test]
fn a_truly_deadlocking_trace_gets_the_watchdogs_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deadlock.itrace");
    let meta = TraceMeta {
        isa: "x86-64".into(),
        workload: "lock-order inversion".into(),
        params: vec![],
        producer: "tests/sync_property.rs".into(),
    };
    let mut w = TraceWriter::create(&path, meta).unwrap();
    let alu = common::alu_inst(&mut w);
    let (a, b) = (0xa000u64, 0xb000u64);
    let lock = |addr| Marker::MutexLock {
        addr,
        order: Order::SIM,
        spin: Spin::NONE,
        call: false,
    };
    w.marker(0, Marker::ThreadStart).unwrap();
    w.marker(0, Marker::RoiBegin).unwrap();
    w.marker(0, Marker::ThreadCreate { child: 1 }).unwrap();
    w.marker(1, Marker::ThreadStart).unwrap();
    for (t, first, second) in [(0u32, a, b), (1, b, a)] {
        w.marker(t, lock(first)).unwrap();
        for _ in 0..200 {
            w.inst(t, alu, false, &[]).unwrap();
        }
        w.marker(t, lock(second)).unwrap();
        w.marker(
            t,
            Marker::MutexUnlock {
                addr: second,
                plain: false,
            },
        )
        .unwrap();
        w.marker(
            t,
            Marker::MutexUnlock {
                addr: first,
                plain: false,
            },
        )
        .unwrap();
    }
    w.marker(1, Marker::ThreadEnd).unwrap();
    w.marker(0, Marker::ThreadJoin { child: 1 }).unwrap();
    w.marker(0, Marker::RoiEnd).unwrap();
    w.marker(0, Marker::ThreadEnd).unwrap();
    w.finish().unwrap();
    let run = dir.path().join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_isim"))
        .args(["run", "--trace"])
        .arg(&path)
        .arg("--out")
        .arg(&run)
        .output()
        .unwrap();
    assert!(!o.status.success(), "a deadlocking trace ran to the end");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("deadlock"), "{err}");
    assert!(
        err.contains("thread 0") && err.contains("mutex 0xb000 held by thread 1"),
        "{err}"
    );
    assert!(err.contains("thread 1") && err.contains("mutex 0xa000 held by thread 0"));
    assert!(
        !run.join("summary.json").exists(),
        "no results are left for a failed run"
    );
}
