#!/usr/bin/env python3
"""Lock programs against this machine (issue 42's host oracle): the 2-thread speedup of each
program natively (median of REPS runs of the whole process) and in isim on CONFIG (run cycles),
for the same total work split over 1 and 2 threads.

    benches/host/locks.py [--reps N] [--only NAME,...] [--config-transfer] [--config-clock] [--unbound] [--whole-runs]

Environment: ISIM (the isim binary; the tracer libraries beside it), CONFIG (the machine,
default configs/host-xeon.toml), SETS (`--set KEY=VALUE` overrides of CONFIG, separated by
spaces: the day's own calibration where this shared guest differs from the config, e.g.
`cache.l3.size=2MiB` when other guests hold the L3; printed with the results), WORK (default
/tmp/isim-host-locks), BENCH_LOCK (a file held with flock around each native run, as run.sh
does).

Native runs are sized to take 10-200 ms with one thread. The counters' native speedup is
their steady state's: each also runs with 4 times its iterations, and the time of the
3 times the iterations between is compared (`native()`: a run's fixed costs, the process's
start, the threads' creation and a second vCPU's first milliseconds, are no part of what
isim simulates; `--whole-runs` compares whole runs, as before 2026-12-06). The 1- and 2-thread runs alternate,
so that the host's slow and fast phases fall on both; the native speedup is the ratio of their
medians, and its spread (the speedups of the quartile pairs) is printed beside it, with what
the 2-thread runs got of the machine: the CPUs the process used (its CPU time over its wall
time; a lock program's sleeping threads use less than 2) and the share of the machine's CPU
time the hypervisor took meanwhile (/proc/stat's steal). Each
thread the program creates is bound to its own CPU (`pin.c`, preloaded), as isim gives each
live thread its own core: unbound, Linux sometimes leaves a contended program's two workers on
one vCPU, where they run one after the other, uncontended, 3x faster than side by side, and
a batch's median landed on one mode or the other from pass to pass (`--unbound` runs them as
Linux places them). isim's runs are 10 times smaller where the
program's behaviour per iteration does not depend on the input size (the counters; larger
than 1 M cycles, so that `[locks] model = "futex"`'s rare sleeps of 140,000 cycles do not
decide a run), and the same size where it does (tree_locks: the tree's depth and cache misses grow with it; at a
50x smaller input isim's speedup was 0.50 against the native 0.68). The native figure is the host's own behaviour, lock implementation included (glibc's
mutex does not spin, Rust's spins before it sleeps); isim's is the simulated machine's,
with the lock model CONFIG says (`[locks]`, docs/tracing.md).

The hand-over of a contended lock is a move of its word's cache line between the cores, and
on this VM that move's latency changes from day to day (a round trip of 66 ns one day, 110-135 ns
on others, 111 and 122 ns in two passes an hour apart), enough to move a lock program from one
regime to another. The guest's clock changes too (2.5 to 4.0 GHz from day to day, and the
guest is sometimes another processor: `lscpu`'s model is printed first), so the script first
measures the day's clock with kernels.c's `add-chain` and simulates CONFIG at that clock
(`system.frequency`; `--config-clock` keeps CONFIG's): its latencies in nanoseconds (DRAM)
become the day's cycles. Then it measures the day's transfer with kernels.c's `pingpong`
(median of REPS runs; one-way time = half a round trip), printed, and again before each
round of each program's native runs (a short pingpong): each program is simulated with the
`coherence.snoop_latency` that gives CONFIG the median transfer of its own runs (the config's
other terms of a transfer from another core's L1, as its comment lists them: L1 tag, L2 tag,
bus slot, L3 tag, L1 data), and its row shows that transfer and its range over the rounds,
since the guest's transfer moves within a pass (66 to 442 ns a round trip on one day);
`--config-transfer` keeps CONFIG's own value, and a `coherence.snoop_latency` in SETS wins.

Before the programs, the guest's own 2-thread capacity: `par-compute` (two threads sharing
nothing, timed from their start barrier) at 1 and 2 threads, whose speedup a 2-core machine
and isim put at 2.00; on this VM it has been seen well below (two threads of a high-IPC loop
took 0.89-1.85 times one thread's time for the same work each, 2026-11-29), and every native
2-thread figure of that pass is capped with it.

Beside the speedups, the futex system calls per lock acquisition of the 2-thread runs: natively
counted by `perf stat -e syscalls:sys_enter_futex` (one extra run; where perf or its
tracepoints are missing, by `strace -f -c`; "-" without either), in isim the futex waits and wakes of `summary.json` (0 under
`model = "fifo"`, which makes none).
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ISIM = os.environ.get("ISIM", os.path.join(ROOT, "target/release/isim"))
CONFIG = os.environ.get("CONFIG", os.path.join(ROOT, "configs/host-xeon.toml"))
SETS = os.environ.get("SETS", "").split()
WORK = os.environ.get("WORK", "/tmp/isim-host-locks")
LOCK = os.environ.get("BENCH_LOCK")
# The long native runs of the steady-state measurement have this many times the iterations.
STEADY = 4

# name, source, compiler, [(1-thread args, 2-thread args) natively], same for isim.
# Each pair splits the same total work over 1 and 2 threads.
PROGRAMS = [
    ("lock_counter-w1000", "examples/c/lock_counter.c", "c",
     (["-t", "1", "-w", "1000", "-i", "20000"], ["-t", "2", "-w", "1000", "-i", "10000"]),
     (["-t", "1", "-w", "1000", "-i", "4000"], ["-t", "2", "-w", "1000", "-i", "2000"])),
    ("lock_counter-w200", "examples/c/lock_counter.c", "c",
     (["-t", "1", "-w", "200", "-i", "100000"], ["-t", "2", "-w", "200", "-i", "50000"]),
     (["-t", "1", "-w", "200", "-i", "10000"], ["-t", "2", "-w", "200", "-i", "5000"])),
    ("lock_counter-w50", "examples/c/lock_counter.c", "c",
     (["-t", "1", "-w", "50", "-i", "320000"], ["-t", "2", "-w", "50", "-i", "160000"]),
     (["-t", "1", "-w", "50", "-i", "32000"], ["-t", "2", "-w", "50", "-i", "16000"])),
    ("lock_counter-w10", "examples/c/lock_counter.c", "c",
     (["-t", "1", "-w", "10", "-i", "900000"], ["-t", "2", "-w", "10", "-i", "450000"]),
     (["-t", "1", "-w", "10", "-i", "90000"], ["-t", "2", "-w", "10", "-i", "45000"])),
    ("rust-mutex-w200-c20", "examples/rust/mutex_counter.rs", "rust",
     (["-t", "1", "-w", "200", "-c", "20", "-i", "400000"], ["-t", "2", "-w", "200", "-c", "20", "-i", "200000"]),
     (["-t", "1", "-w", "200", "-c", "20", "-i", "40000"], ["-t", "2", "-w", "200", "-c", "20", "-i", "20000"])),
    ("rust-mutex-w40-c20", "examples/rust/mutex_counter.rs", "rust",
     (["-t", "1", "-w", "40", "-c", "20", "-i", "400000"], ["-t", "2", "-w", "40", "-c", "20", "-i", "200000"]),
     (["-t", "1", "-w", "40", "-c", "20", "-i", "40000"], ["-t", "2", "-w", "40", "-c", "20", "-i", "20000"])),
    ("object_locks", "examples/cpp/object_locks.cpp", "c++",
     (["1", "40000", "300"], ["2", "20000", "300"]),
     (["1", "8000", "300"], ["2", "4000", "300"])),
    ("spin_counter-w300-c4", "examples/c/spin_counter.c", "c",
     (["-t", "1", "-w", "300", "-c", "4", "-i", "400000"], ["-t", "2", "-w", "300", "-c", "4", "-i", "200000"]),
     (["-t", "1", "-w", "300", "-c", "4", "-i", "10000"], ["-t", "2", "-w", "300", "-c", "4", "-i", "5000"])),
    ("spin_counter-tas-w300-c4", "examples/c/spin_counter.c", "c",
     (["-t", "1", "-w", "300", "-c", "4", "-i", "400000", "-x"], ["-t", "2", "-w", "300", "-c", "4", "-i", "200000", "-x"]),
     (["-t", "1", "-w", "300", "-c", "4", "-i", "10000", "-x"], ["-t", "2", "-w", "300", "-c", "4", "-i", "5000", "-x"])),
    ("spin_counter-w30-c20", "examples/c/spin_counter.c", "c",
     (["-t", "1", "-w", "30", "-c", "20", "-i", "2000000"], ["-t", "2", "-w", "30", "-c", "20", "-i", "1000000"]),
     (["-t", "1", "-w", "30", "-c", "20", "-i", "50000"], ["-t", "2", "-w", "30", "-c", "20", "-i", "25000"])),
    ("spin_counter-tas-w30-c20", "examples/c/spin_counter.c", "c",
     (["-t", "1", "-w", "30", "-c", "20", "-i", "2000000", "-x"], ["-t", "2", "-w", "30", "-c", "20", "-i", "1000000", "-x"]),
     (["-t", "1", "-w", "30", "-c", "20", "-i", "50000", "-x"], ["-t", "2", "-w", "30", "-c", "20", "-i", "25000", "-x"])),
    ("cpp-semaphore-w300-c4", "examples/cpp/semaphores.cpp", "c++",
     (["lock", "1", "400000", "300", "4"], ["lock", "2", "200000", "300", "4"]),
     (["lock", "1", "10000", "300", "4"], ["lock", "2", "5000", "300", "4"])),
    ("cpp-semaphore-w30-c20", "examples/cpp/semaphores.cpp", "c++",
     (["lock", "1", "2000000", "30", "20"], ["lock", "2", "1000000", "30", "20"]),
     (["lock", "1", "50000", "30", "20"], ["lock", "2", "25000", "30", "20"])),
    ("omp-critical-w200-c20", "examples/omp/omp_counter.c", "omp",
     (["-t", "1", "-w", "200", "-c", "20", "-i", "400000"], ["-t", "2", "-w", "200", "-c", "20", "-i", "200000"]),
     (["-t", "1", "-w", "200", "-c", "20", "-i", "20000"], ["-t", "2", "-w", "200", "-c", "20", "-i", "10000"])),
    ("omp-critical-w30-c20", "examples/omp/omp_counter.c", "omp",
     (["-t", "1", "-w", "30", "-c", "20", "-i", "2000000"], ["-t", "2", "-w", "30", "-c", "20", "-i", "1000000"]),
     (["-t", "1", "-w", "30", "-c", "20", "-i", "50000"], ["-t", "2", "-w", "30", "-c", "20", "-i", "25000"])),
    ("tree_locks", "examples/c/tree_locks.c", "c",
     (["-t", "1", "-n", "200000"], ["-t", "2", "-n", "100000"]),
     (["-t", "1", "-n", "200000"], ["-t", "2", "-n", "100000"])),
]


def build(name, src, lang):
    out = os.path.join(WORK, os.path.basename(src).rsplit(".", 1)[0])
    if os.path.exists(out):
        return out
    path = os.path.join(ROOT, src)
    if lang == "c":
        cmd = ["gcc", "-O2", "-g", "-pthread", "-o", out, path]
    elif lang == "omp":
        cmd = ["gcc", "-O2", "-g", "-fopenmp", "-o", out, path]
    elif lang == "c++":
        cmd = ["g++", "-O2", "-g", "-std=c++20", "-pthread", "-o", out, path]
    else:
        cmd = ["rustc", "-O", "-g", "-o", out, path]
    subprocess.run(cmd, check=True)
    return out


def pin_library():
    """pin.c built into WORK: the LD_PRELOAD that binds each created thread to its own CPU."""
    out = os.path.join(WORK, "pin.so")
    if not os.path.exists(out):
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", out, os.path.join(HERE, "pin.c"),
                        "-ldl"], check=True)
    return out


def native_env(bound):
    env = dict(os.environ)
    if bound:
        env["LD_PRELOAD"] = pin_library()
    return env


def cpu_ticks():
    """The machine's CPU time so far from /proc/stat: (stolen by the hypervisor, all)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[7], sum(v)


def iteration_arg(name, args):
    """Where the iteration count is in a program's native arguments, for the programs whose
    work per iteration does not depend on how many there are (the counters); None for
    tree_locks, whose insertions cost more as its tree grows."""
    if "-i" in args:
        return args.index("-i") + 1
    if name == "object_locks":
        return 1
    if name.startswith("cpp-semaphore"):
        return 2
    return None


def scaled(args, at, factor):
    """`args` with the count at `at` multiplied by `factor`."""
    out = list(args)
    out[at] = str(int(out[at]) * factor)
    return out


def native(binary, args1, args2, reps, bound, at=None, probe=False):
    """Alternating runs of the 1- and 2-thread commands: their median times, the speedups
    of the lower and upper quartile pairs (slow 1-thread over slow 2-thread), and for the
    2-thread runs the median CPUs the process used (its user and system time over its wall
    time) and the median share of the machine's CPU time the hypervisor took meanwhile
    (steal): a run whose threads did not get their CPUs measured the guest, not the program.

    With `at` (the iteration count's place in the arguments), each command also runs with
    STEADY times its iterations, and the times are the differences of the medians (and of
    the quartiles): the steady state of STEADY - 1 times the iterations, without what a
    run costs whatever its length — the process's start and end, the threads' creation, and
    a 2-thread run's first milliseconds on a second vCPU that was idle (a 2-thread
    `lock_counter -w 1000` took 4.7 ms more than its iterations' share on 2026-12-06, a
    1-thread one 1.5 ms), none of which isim simulates. The CPUs used are the long runs'.

    With `probe`, each round of runs starts with a short `pingpong` (`transfer_probe`), and
    the round trips it measured during the program's runs are returned too (else [])."""
    commands = [args1, args2]
    if at is not None:
        commands += [scaled(args1, at, STEADY), scaled(args2, at, STEADY)]
    times = [[] for _ in commands]
    cpus, steal = [], []
    env = native_env(bound)
    trips = []
    for _ in range(reps):
        if probe:
            trips.append(transfer_probe())
        for k, args in enumerate(commands):
            cmd = [binary] + args
            if LOCK:
                cmd = ["flock", LOCK] + cmd
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            stolen, total = cpu_ticks()
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env)
            wall = time.perf_counter() - start
            times[k].append(wall)
            if k == len(commands) - 1:
                now = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
                cpus.append(cpu / wall)
                stolen2, total2 = cpu_ticks()
                steal.append((stolen2 - stolen) / max(1, total2 - total))
    med = [statistics.median(t) for t in times]
    q = [statistics.quantiles(t, n=4) for t in times]
    if at is not None:
        med = [med[2] - med[0], med[3] - med[1]]
        q = [[q[2][i] - q[0][i] for i in range(3)], [q[3][i] - q[1][i] for i in range(3)]]
    return (med[0], med[1], (q[0][0] / q[1][0], q[0][2] / q[1][2]),
            (statistics.median(cpus), statistics.median(steal)), trips)


def native_futex(binary, args, bound):
    """Futex system calls of one native run: perf's syscall tracepoint, else strace's count
    (`strace -f -c`, which slows the run but not its count by much), else None."""
    cmd = ["perf", "stat", "-x,", "-e", "syscalls:sys_enter_futex", binary] + args
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=native_env(bound))
        for line in p.stderr.splitlines():
            field = line.split(",")
            if len(field) > 2 and field[2].endswith("sys_enter_futex") and field[0].isdigit():
                return int(field[0])
    except FileNotFoundError:
        pass
    cmd = ["strace", "-f", "-c", "-e", "trace=futex", "-o", os.path.join(WORK, "strace.txt"),
           binary] + args
    try:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=native_env(bound), check=True)
    except (FileNotFoundError, subprocess.CalledProcessError):
        return None
    with open(os.path.join(WORK, "strace.txt")) as f:
        for line in f:
            field = line.split()
            # "% time  seconds  usecs/call  calls  [errors]  syscall": the futex row.
            if field and field[-1] == "futex" and len(field) >= 5 and field[3].isdigit():
                return int(field[3])
    return 0


def simulated(binary, args, tag, extra=()):
    env = dict(os.environ)
    env.pop("_", None)
    trace = os.path.join(WORK, tag + ".itrace")
    run = os.path.join(WORK, tag)
    subprocess.run([ISIM, "trace", "-o", trace, "--", binary] + args, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Each live thread holds a simulated core, the main thread waiting in its join too; the
    # host's 2 vCPUs run the 2 workers while it sleeps. isim grows the 2-core socket to 3
    # (docs/output.md), the workers on one socket as on the host.
    sets = [a for kv in SETS + list(extra) for a in ("--set", kv)]
    subprocess.run([ISIM, "run", "-c", CONFIG] + sets
                   + ["--trace", trace, "-o", run], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(run, "summary.json")) as f:
        s = json.load(f)
    sync = s.get("sync", {})
    calls = sync.get("futex_waits", 0) + sync.get("futex_wakes", 0)
    # Per mutex acquisition; None for a program without any (a semaphore's takes are not
    # counted as acquisitions, and its releases' wakes would read as thousands per one).
    acquisitions = sync.get("lock_acquisitions", 0)
    return s["cycles"], (calls / acquisitions if acquisitions else None)


def kernels():
    """kernels.c built in WORK (once): the pingpong and par-compute probes of the machine.
    It calls realcode.c's kernels too, linked in as run.sh does."""
    binary = os.path.join(WORK, "kernels")
    if not os.path.exists(binary):
        subprocess.run(["gcc", "-O2", "-g", "-pthread", "-I", os.path.join(ROOT, "include"), "-o",
                        binary, os.path.join(HERE, "kernels.c"), os.path.join(HERE, "realcode.c")],
                       check=True)
    return binary


def kernel_times(args, reps):
    """kernels.c run `reps` times with `args`: the nanoseconds each run printed."""
    binary = kernels()
    times = []
    for _ in range(reps):
        cmd = [binary] + args
        if LOCK:
            cmd = ["flock", LOCK] + cmd
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        times.append(float(out.split()[1]))
    return times


def config_ghz():
    """CONFIG's clock in GHz."""
    import tomllib
    with open(CONFIG, "rb") as f:
        cfg = tomllib.load(f)
    freq = cfg["system"]["frequency"].lower()
    return float(freq.removesuffix("ghz")) if freq.endswith("ghz") else float(freq.removesuffix("mhz")) / 1e3


def day_clock(reps):
    """The day's clock in GHz: kernels.c's `add-chain` (8 dependent adds an iteration, one a
    cycle on every x86 core these guests have had), median of `reps` runs. The guests'
    clocks have been 2.5 to 4.0 GHz from day to day (boost, another host); CONFIG's is the
    day its latencies were measured, and a transfer or a DRAM access in nanoseconds is a
    different number of cycles of work at another clock."""
    n = 50_000_000
    return statistics.median(8 * n / ns for ns in kernel_times(["add-chain", str(n)], reps))


def host_model():
    """lscpu's model name, printed beside the results: the config should describe it."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "unknown (no lscpu)"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def snoop_latency(round_trip, ghz):
    """A pingpong round trip of `round_trip` ns at `ghz`: the one-way time in cycles and the
    `coherence.snoop_latency` that gives CONFIG that transfer."""
    import tomllib
    with open(CONFIG, "rb") as f:
        cfg = tomllib.load(f)
    c = cfg["cache"]
    base = (c["l1d"]["tag_latency"] + c["l2"]["tag_latency"] + 1 + c["l3"]["tag_latency"]
            + c["l1d"]["data_latency"])
    one_way = round_trip / 2 * ghz
    return one_way, max(0, round(one_way - base))


def day_snoop_latency(reps, ghz):
    """The day's core-to-core transfer (pingpong, median of `reps` runs): the round trip in
    ns, the one-way time in cycles at `ghz` and the `coherence.snoop_latency` that gives it."""
    n = 200000
    round_trip = statistics.median(ns / n for ns in kernel_times(["pingpong", str(n)], reps))
    return (round_trip,) + snoop_latency(round_trip, ghz)


def transfer_probe():
    """One short `pingpong` (20,000 round trips, a few milliseconds): ns per round trip. Run
    before each round of a program's native runs, since the guest's transfer does not stay
    put for a pass: on 2026-12-06 the AMD guest's round trip was 93 ns at one pass's start,
    66 ns half an hour later and 442 ns at the next pass's start, and a contended lock's
    speedup follows it."""
    n = 20000
    return kernel_times(["pingpong", str(n)], 1)[0] / n


def guest_capacity(reps):
    """How much of two cores the guest gives two threads that share nothing: kernels.c's
    `par-compute` (independent adds, each thread its half of the steps, timed from its start
    barrier to the slowest thread's end) at 1 and 2 threads, alternating, `reps` times each;
    the speedup of the medians and of the quartile pairs. A 2-core machine gives 2.00 (isim
    does: nothing is shared); less is the guest — vCPUs whose physical cores are busy with
    someone else's threads — and caps every native 2-thread figure of the pass."""
    binary = kernels()
    n, times = 30_000_000, ([], [])
    for _ in range(reps):
        for k, threads in enumerate(("1", "2")):
            cmd = [binary, "par-compute", str(n), "0", threads]
            if LOCK:
                cmd = ["flock", LOCK] + cmd
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            times[k].append(float(out.split()[1]))
    q = [statistics.quantiles(t, n=4) for t in times]
    return (statistics.median(times[0]) / statistics.median(times[1]),
            (q[0][0] / q[1][0], q[0][2] / q[1][2]))


def native_acquisitions(name, args):
    """Lock acquisitions of a native run of the counters (threads x iterations), None for
    the programs whose count the arguments do not give."""
    if not name.startswith(("lock_counter", "rust-mutex")):
        return None
    t, i = int(args[args.index("-t") + 1]), int(args[args.index("-i") + 1])
    return t * i


def per_iteration(name, nat, sim, n1, n2, s1, s2, ghz, at):
    """The programs' time per iteration of the whole work, in the day's cycles (native: its
    steady-state time at `ghz`; isim: run cycles), alone (1 thread: an iteration's own cost)
    and shared by 2 threads (then each iteration's share, the hand-overs included); None where
    the arguments do not give the iteration count (tree_locks) or the runs were not steady.
    The speedup's error is the product of the two ratios: isim/native alone over isim/native
    shared."""
    k = iteration_arg(name, nat[0])
    if k is None or at is None:
        return None
    native_iters = int(nat[0][k]) * (STEADY - 1)
    isim_iters = int(sim[0][k])
    return {"native_1": n1 * ghz * 1e9 / native_iters, "isim_1": s1 / isim_iters,
            "native_2": n2 * ghz * 1e9 / native_iters, "isim_2": s2 / isim_iters}


def print_per_iteration(rows):
    """Where each speedup's error comes from: each program's cycles per iteration alone and
    shared by 2 threads, natively and in isim (see `per_iteration`)."""
    print("\n| program | cycles per iteration, 1 thread: native, isim (isim/native) | "
          "2 threads: native, isim (isim/native) |")
    print("|---|---|---|")
    for r in rows:
        c = r.get("cycles_per_iteration")
        if c is None:
            print(f"| {r['program']} | - | - |")
            continue
        print(f"| {r['program']} | {c['native_1']:.0f}, {c['isim_1']:.0f} "
              f"({c['isim_1'] / c['native_1']:.2f}) | {c['native_2']:.0f}, {c['isim_2']:.0f} "
              f"({c['isim_2'] / c['native_2']:.2f}) |")


def main():
    reps, only, transfer, bound, clock, steady = 9, None, True, True, True, True
    argv = sys.argv[1:]
    while argv:
        a = argv.pop(0)
        if a == "--reps":
            reps = int(argv.pop(0))
        elif a == "--only":
            only = set(argv.pop(0).split(","))
        elif a == "--config-transfer":
            transfer = False
        elif a == "--unbound":
            bound = False
        elif a == "--config-clock":
            clock = False
        elif a == "--whole-runs":
            steady = False
        else:
            sys.exit(__doc__)
    os.makedirs(WORK, exist_ok=True)
    print(f"host: {host_model()}")
    if clock and not any(kv.startswith("system.frequency=") for kv in SETS):
        ghz = day_clock(reps)
        print(f"clock: {ghz:.2f} GHz (add-chain), CONFIG's {config_ghz():.2f}: system.frequency={ghz:.2f}GHz")
        SETS.append(f"system.frequency={ghz:.2f}GHz")
    else:
        ghz = next((float(kv.split("=", 1)[1].lower().removesuffix("ghz")) for kv in SETS
                    if kv.startswith("system.frequency=")), None) or config_ghz()
    # Each program is simulated with the transfer measured during its own native runs (the
    # median of a short pingpong before each round), unless CONFIG's or SETS' is asked for.
    probe = transfer and not any(kv.startswith("coherence.snoop_latency=") for kv in SETS)
    if probe:
        round_trip, one_way, snoop = day_snoop_latency(reps, ghz)
        print(f"pingpong: {round_trip:.0f} ns per round trip, {one_way:.0f} cycles one way "
              f"(coherence.snoop_latency={snoop}) at the pass's start; each program is "
              f"simulated with the transfer measured during its own native runs")
    capacity, capacity_spread = guest_capacity(reps)
    print(f"guest: par-compute (two threads sharing nothing) 2-thread speedup {capacity:.2f} "
          f"({capacity_spread[0]:.2f}-{capacity_spread[1]:.2f}); a 2-core machine: 2.00")
    rows = []
    print(f"config {os.path.relpath(CONFIG, ROOT)} {' '.join(SETS)}, native median of {reps}, "
          f"threads {'bound to a CPU each' if bound else 'unbound'}\n")
    if steady:
        print(f"native times: the counters' steady state ({STEADY - 1}x the listed iterations: the "
              f"runs with {STEADY}x less the listed runs); tree_locks' whole runs\n")
    print("| program | native 1 thread | native 2 threads | native speedup (quartiles) | native 2 threads: CPUs used, steal % | transfer during the native runs: one-way cycles, median (range) | isim 1 thread | isim 2 threads | isim speedup | error % | futex calls per acquisition: native, isim |")
    print("|---|---:|---:|---|---|---|---:|---:|---:|---:|---|")
    for name, src, lang, nat, sim in PROGRAMS:
        if only and name not in only:
            continue
        binary = build(name, src, lang)
        at = iteration_arg(name, nat[0]) if steady else None
        n1, n2, spread, (cpus, steal), trips = native(binary, nat[0], nat[1], reps, bound, at,
                                                      probe)
        extra, shown_transfer = [], "-"
        if trips:
            one_way, snoop = snoop_latency(statistics.median(trips), ghz)
            low, high = (snoop_latency(t, ghz)[0] for t in (min(trips), max(trips)))
            extra = [f"coherence.snoop_latency={snoop}"]
            shown_transfer = f"{one_way:.0f} ({low:.0f}-{high:.0f})"
        calls = native_futex(binary, nat[1], bound)
        acquisitions = native_acquisitions(name, nat[1])
        nf = calls / acquisitions if calls is not None and acquisitions else None
        (s1, _), (s2, sf) = (simulated(binary, sim[0], name + "-1", extra),
                             simulated(binary, sim[1], name + "-2", extra))
        ns, ss = n1 / n2, s1 / s2
        err = 100 * (ss / ns - 1)
        rows.append({"program": name, "native_s": [n1, n2], "native_steady": at is not None,
                     "isim_cycles": [s1, s2],
                     "native_speedup": ns, "native_quartile_speedups": spread,
                     "native_2_threads_cpus": cpus, "native_2_threads_steal": steal,
                     "native_round_trips_ns": trips, "isim_sets": extra,
                     "isim_speedup": ss, "error_pct": err,
                     "native_futex_per_acquisition": nf, "isim_futex_per_acquisition": sf})
        rows[-1]["cycles_per_iteration"] = per_iteration(name, nat, sim, n1, n2, s1, s2, ghz, at)
        shown = "-" if nf is None else f"{nf:.3f}"
        shown_isim = "-" if sf is None else f"{sf:.3f}"
        print(f"| {name} | {n1 * 1e3:.1f} ms | {n2 * 1e3:.1f} ms | {ns:.2f} ({spread[0]:.2f}-{spread[1]:.2f}) | {cpus:.2f}, {100 * steal:.1f} | {shown_transfer} | {s1:,.0f} | {s2:,.0f} | {ss:.2f} | {err:+.1f} | {shown}, {shown_isim} |",
              flush=True)
    print_per_iteration(rows)
    with open(os.path.join(WORK, "locks.json"), "w") as f:
        json.dump({"config": CONFIG, "sets": SETS, "reps": reps, "bound": bound, "steady": steady,
                   "guest_par_compute_speedup": capacity, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
