#!/usr/bin/env python3
"""Host independence of replay (issue 42): a corpus of lock-, condition-, futex- and spin-heavy
programs in C, OpenMP, C++ and Rust, each traced three ways — normally, pinned to one host CPU
(`taskset -c 0`: QEMU runs every thread on one CPU, so a lock is almost never contended and
spin loops run as long as the host's time slice) and beside a CPU hog (a shell loop competing
for the two vCPUs) — and simulated on CONFIG. Prints, per program, the run cycles of the three,
their spread ((max - min) / min), the largest difference of one thread's sync share (points of
its cycles) and of one thread's replayed instructions.

    benches/host/independence.py [--only NAME,...]

Environment: ISIM (the isim binary; the tracer libraries beside it), CONFIG (default
configs/default.toml), WORK (default /tmp/isim-host-independence). Writes WORK/independence.json.

Two kinds of program. *Static*: each thread's work does not depend on the interleaving (static
partitioning, with locks, conditions and barriers between); the three runs should agree within
1 % in cycles and 1 point in every thread's sync share. *Dynamic*: the traced run decided who
took which item (work queues, producer/consumer, a tree whose shape follows the insertion
order); the spread is reported with how much of it the threads' instruction counts show.

For a static program outside those bounds, its own sensitivity: the normal trace simulated
again with the DRAM latency 1, 2 and 4 ns shorter and longer (`--set dram.latency=...`) and
with the snoop latency (the cost of a line's move between cores, so of every lock's hand-over)
1 and 2 cycles shorter and longer (`--set coherence.snoop_latency=...`; since 2026-12-07:
`timed_sync` on the futex model moved 3.66-3.93 M cycles for ±1 cycle of it, and 0.11 % for
the DRAM latencies), the spread of those eleven runs and their largest sync difference. A program whose replay
amplifies a small change (a FIFO lock whose waiters' rotation, fixed by their first arrivals,
decides how many hand-overs cross sockets) moves that much from a machine parameter, on one
trace; a spread between traces no larger than that is not the host's doing, and the summary
line counts such programs apart.
"""
import json
import os
import shutil
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ISIM = os.environ.get("ISIM", os.path.join(ROOT, "target/release/isim"))
CONFIG = os.environ.get("CONFIG", os.path.join(ROOT, "configs/default.toml"))
WORK = os.environ.get("WORK", "/tmp/isim-host-independence")

# name, source, language (and flags), arguments, kind.
CORPUS = [
    ("lock_counter", "examples/c/lock_counter.c", "c", ["-t", "4", "-w", "1000", "-i", "200"], "static"),
    ("mutex_counter.c", "examples/c/mutex_counter.c", "c", ["-t", "4", "-i", "200"], "static"),
    ("cond_barrier", "examples/c/cond_barrier.c", "c", ["-t", "4"], "static"),
    ("owner_barrier", "examples/c/owner_barrier.c", "c", ["-t", "4"], "static"),
    ("spin_barrier", "examples/c/spin_barrier.c", "c", ["-t", "4"], "static"),
    ("spin_flag", "examples/c/spin_flag.c", "c", [], "static"),
    ("poll_lock", "examples/c/poll_lock.c", "c", [], "static"),
    ("omp_critical", "examples/omp/omp_critical.c", "omp", ["-n", "1000"], "static"),
    ("omp_kernels", "examples/omp/omp_kernels.c", "omp", ["-t", "4"], "static"),
    ("object_locks", "examples/cpp/object_locks.cpp", "c++", ["4", "200"], "static"),
    ("sync20", "examples/cpp/sync20.cpp", "c++", [], "static"),
    ("latch_late", "examples/cpp/latch_late.cpp", "c++", ["-t", "4"], "static"),
    ("rust-mutex", "examples/rust/mutex_counter.rs", "rust", ["-t", "4", "-w", "40", "-c", "20", "-i", "2000"], "static"),
    ("rust-mutex-16", "examples/rust/mutex_counter.rs", "rust", ["-t", "16", "-w", "40", "-c", "20", "-i", "500"], "static"),
    ("rust-sync", "examples/rust/sync.rs", "rust", [], "static"),
    ("scope_join", "examples/rust/scope_join.rs", "rust", ["10", "400000", "200000", "0"], "static"),
    ("scope_owner", "examples/rust/scope_join.rs", "rust", ["10", "400000", "200000", "2000"], "static"),
    ("spin_counter", "examples/c/spin_counter.c", "c", ["-t", "4", "-w", "30", "-c", "20", "-i", "1000"], "static"),
    ("rw_table", "examples/cpp/rw_table.cpp", "c++", ["4", "2000", "300"], "static"),
    ("sem_pipeline", "examples/c/sem_pipeline.c", "c", ["2", "200", "2000"], "static"),
    ("cpp-semaphore-lock", "examples/cpp/semaphores.cpp", "c++", ["lock", "4", "1000", "30", "20"], "static"),
    ("cpp-semaphore-pipe", "examples/cpp/semaphores.cpp", "c++", ["pipe", "4", "2000", "200"], "static"),
    ("spin_counter-tas", "examples/c/spin_counter.c", "c", ["-t", "4", "-w", "30", "-c", "20", "-i", "1000", "-x"], "static"),
    ("spin_counter-byte", "examples/c/spin_counter.c", "c", ["-t", "4", "-w", "30", "-c", "20", "-i", "1000", "-b"], "static"),
    ("rust-rw_table", "examples/rust/rw_table.rs", "rust", ["4", "2000", "40"], "static"),
    ("timed_sync", "examples/cpp/timed_sync.cpp", "c++", ["timed", "4", "200", "300"], "static"),
    ("pipeline", "examples/c/pipeline.c", "c", ["300", "3000", "1000", "1000"], "static"),
    ("channel_pipeline", "examples/rust/channel_pipeline.rs", "rust", ["300", "3000", "1000"], "static"),
    ("park_flag", "examples/rust/park_flag.rs", "rust", [], "static"),
    ("channels-pipe", "examples/c/channels.c", "c", ["pipe"], "static"),
    ("channels-socket", "examples/c/channels.c", "c", ["socket"], "static"),
    ("channels-stdio", "examples/c/channels.c", "c", ["stdio"], "static"),
    ("prodcons", "examples/c/prodcons.c", "c", ["-t", "4", "-n", "1000"], "dynamic"),
    ("taskqueue", "examples/c/taskqueue.c", "c", ["-t", "4"], "dynamic"),
    ("tree_locks", "examples/c/tree_locks.c", "c", ["-t", "4", "-n", "2000"], "dynamic"),
    ("rayon_loop-16", "examples/lime/rayon_loop.rs", "rayon", ["-t", "16", "-r", "4"], "dynamic"),
]
WAYS = ["normal", "pinned", "hog"]


def build(src, lang):
    out = os.path.join(WORK, os.path.basename(src).replace(".", "_"))
    if os.path.exists(out):
        return out
    path = os.path.join(ROOT, src)
    if lang == "rayon":
        # A package of its own beside the build, offline: the workspace's Cargo.lock pins the
        # crate's version, which building isim has already fetched.
        pkg = out + "-cargo"
        os.makedirs(pkg, exist_ok=True)
        name = os.path.basename(out)
        with open(os.path.join(pkg, "Cargo.toml"), "w") as f:
            f.write(f'[package]\nname = "{name}"\nversion = "0.0.0"\nedition = "2021"\n\n'
                    f'[[bin]]\nname = "{name}"\npath = "{path}"\n\n'
                    '[dependencies]\nrayon = "1"\n\n'
                    '[profile.release]\ndebug = 1\nopt-level = 2\n\n[workspace]\n')
        shutil.copy(os.path.join(ROOT, "Cargo.lock"), pkg)
        subprocess.run(["cargo", "build", "--release", "--offline", "--quiet"], cwd=pkg,
                       check=True)
        shutil.copy(os.path.join(pkg, "target/release", name), out)
        return out
    cmd = {
        "c": ["gcc", "-O2", "-g", "-pthread"],
        "omp": ["gcc", "-O2", "-g", "-fopenmp"],
        "c++": ["g++", "-O2", "-g", "-std=c++20", "-pthread"],
        "rust": ["rustc", "-O", "-g", "--edition", "2021"],
    }[lang]
    if lang != "rust":
        cmd.append("-I" + os.path.join(ROOT, "include"))
    subprocess.run(cmd + ["-o", out, path], check=True)
    return out


def traced_run(binary, args, tag, way):
    env = dict(os.environ)
    env.pop("_", None)
    env["OMP_NUM_THREADS"] = "4"
    trace = os.path.join(WORK, f"{tag}-{way}.itrace")
    run = os.path.join(WORK, f"{tag}-{way}")
    cmd = [ISIM, "trace", "--json", "-o", trace, "--", binary] + args
    if way == "pinned":
        cmd = ["taskset", "-c", "0"] + cmd
    hog = None
    if way == "hog":
        hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        t = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    finally:
        if hog:
            hog.kill()
            hog.wait()
    p = subprocess.run([ISIM, "run", "-c", CONFIG, "--trace", trace, "-o", run],
                       check=True, capture_output=True, text=True)
    s = json.load(open(os.path.join(run, "summary.json")))
    s["_warnings"] = [l for l in (p.stdout + p.stderr).splitlines() if "warning" in l]
    out = t.stdout
    info = json.loads(out[out.find("\n{\n") + 1:])
    # Spinning the traced run did: instructions of spin-waits replaced by waits, of futex
    # locks' attempts (their spinning) replaced by mutex markers, and of spin loops left as
    # traced work (the only ones the replay still times as the host ran them).
    left = sum(l["instructions"] for l in info["spin_loops"])
    s["_spin"] = (info["spin_waits"]["instructions"]
                  + info["futex_locks"]["replaced_instructions"] + left, left)
    return s


def dram_latencies():
    """CONFIG's DRAM latency 1, 2 and 4 ns shorter and longer, as `--set` values."""
    with open(CONFIG, "rb") as f:
        lat = tomllib.load(f)["dram"]["latency"]
    if not lat.endswith("ns"):
        sys.exit(f"{CONFIG}: dram.latency {lat!r}: expected nanoseconds (\"80ns\")")
    ns = float(lat[:-2])
    return [f"dram.latency={ns + d:g}ns" for d in (-4, -2, -1, 1, 2, 4)]


def snoop_latencies():
    """CONFIG's snoop latency 1 and 2 cycles shorter and longer, as `--set` values."""
    with open(CONFIG, "rb") as f:
        lat = tomllib.load(f)["coherence"]["snoop_latency"]
    return [f"coherence.snoop_latency={lat + d}" for d in (-2, -1, 1, 2) if lat + d >= 0]


def resimulated(tag, way, setting, k):
    """The run of an existing trace with one `--set` override."""
    trace = os.path.join(WORK, f"{tag}-{way}.itrace")
    run = os.path.join(WORK, f"{tag}-{way}-sens{k}")
    subprocess.run([ISIM, "run", "-c", CONFIG, "--trace", trace, "-o", run, "--set", setting],
                   check=True, capture_output=True, text=True)
    return json.load(open(os.path.join(run, "summary.json")))


def spreads(runs):
    """Run cycles' spread (%) and the largest difference of one thread's sync share (points)."""
    cyc = [round(r["cycles"]) for r in runs]
    n = min(len(r["threads"]) for r in runs)
    sync_d = max(
        max(sync_share(r["threads"][t]) for r in runs)
        - min(sync_share(r["threads"][t]) for r in runs)
        for t in range(n)
    ) * 100
    return (max(cyc) - min(cyc)) / min(cyc) * 100, sync_d


def sync_share(t):
    return sum(v for k, v in t["stack"].items() if k.startswith("sync-")) / max(1, t["cycles"])


def main():
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
        return
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    os.makedirs(WORK, exist_ok=True)
    rows = []
    print(f"config {os.path.relpath(CONFIG, ROOT)}\n")
    sens_sets = dram_latencies() + snoop_latencies()
    print("| program | kind | cycles normal | pinned | hog | spread % | max sync Δ (points) "
          "| max instructions Δ % | sensitivity: spread %, sync Δ | spin instructions traced, "
          "left as work (normal / pinned / hog) | warnings |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
    for name, src, lang, args, kind in CORPUS:
        if only and name not in only:
            continue
        binary = build(src, lang)
        runs = [traced_run(binary, args, name, way) for way in WAYS]
        cyc = [round(r["cycles"]) for r in runs]
        spread, sync_d = spreads(runs)
        n = min(len(r["threads"]) for r in runs)
        sens = None
        if kind == "static" and (spread > 1 or sync_d > 1):
            sens = spreads([runs[0]] + [resimulated(name, "normal", s, k)
                                        for k, s in enumerate(sens_sets)])
        inst_d = max(
            (max(r["threads"][t]["instructions"] for r in runs)
             / max(1, min(r["threads"][t]["instructions"] for r in runs)) - 1) * 100
            for t in range(n)
        )
        warns = sum(len(r["_warnings"]) for r in runs)
        spin = [r["_spin"] for r in runs]
        rows.append({"program": name, "kind": kind, "args": args, "cycles": cyc,
                     "spread_pct": spread, "sync_points": sync_d,
                     "instructions_pct": inst_d, "spin": spin, "warnings": warns,
                     "sensitivity": sens})
        spins = " / ".join(f"{a:,}, {b:,}" for a, b in spin)
        print(f"| {name} {' '.join(args)} | {kind} | {cyc[0]:,} | {cyc[1]:,} | {cyc[2]:,} "
              f"| {spread:.2f} | {sync_d:.2f} | {inst_d:.2f} "
              f"| {'-' if sens is None else f'{sens[0]:.2f}, {sens[1]:.2f}'} "
              f"| {spins} | {warns} |", flush=True)
    static = [r for r in rows if r["kind"] == "static"]
    ok = [r for r in static if r["spread_pct"] <= 1 and r["sync_points"] <= 1]
    own = [r for r in static if r not in ok
           and r["spread_pct"] <= max(1, r["sensitivity"][0])
           and r["sync_points"] <= max(1, r["sensitivity"][1])]
    print(f"\nstatic: {len(ok)} of {len(static)} within 1 % and 1 point; of the others, "
          f"{len(own)} within their own sensitivity ({', '.join(r['program'] for r in own)})")
    with open(os.path.join(WORK, "independence.json"), "w") as f:
        json.dump({"config": CONFIG, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
