#!/usr/bin/env bash
# Peer comparison of isim against ChampSim on synthetic traces (benches/peer/README.md).
#
#   benches/peer/champsim.sh [--quick] [--scale F] [--only a,b,...] [--force-champsim] [--no-programs]
#
# Environment (defaults in brackets):
#   CHAMPSIM_DIR   ChampSim checkout, built by hand as in the README      [/work/peers/ChampSim]
#   CHAMPSIM_BIN   the ChampSim executable                                 [$CHAMPSIM_DIR/bin/champsim]
#   ISIM           the isim binary (copied once into the work dir)         [/work/main/target/release/isim]
#   WORK           work directory: traces, logs, run directories, results [/tmp/isim-peer]
#   CONFIG         isim config matched to the ChampSim build               [benches/peer/champsim-peer.toml]
#   ISIM_SETS      extra `key=value` overrides for isim, space-separated (e.g. the TLB of a
#                  4 KiB-page ChampSim build, README.md section 1)          [none]
#   PYTHON         python3                                                 [python3]
#   BENCH_LOCK     a lock file: each timed run holds it (flock), so that benchmarks started by
#                  others on a shared machine wait rather than run alongside  [none]
#
# Steps, per trace: generate it (champsim_traces.py, xz), run ChampSim on it with no warmup
# and exactly as many instructions as the trace holds, import it with `isim import champsim`,
# run `isim run` with CONFIG, then print one Markdown table (also written to
# $WORK/results.md, with the raw numbers in $WORK/results.json).
#
# ChampSim results are reused while the trace, the ChampSim binary and the command are
# unchanged ($WORK/NAME.champsim.json + .meta): ChampSim is the slow side, and re-running the
# comparison after an isim change should not redo it. --force-champsim re-runs it. isim is
# always re-run. Runs are one at a time (the numbers include wall time).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CHAMPSIM_DIR="${CHAMPSIM_DIR:-/work/peers/ChampSim}"
CHAMPSIM_BIN="${CHAMPSIM_BIN:-$CHAMPSIM_DIR/bin/champsim}"
ISIM="${ISIM:-/work/main/target/release/isim}"
WORK="${WORK:-/tmp/isim-peer}"
CONFIG="${CONFIG:-$here/champsim-peer.toml}"
PYTHON="${PYTHON:-python3}"
locked=()
[ -n "${BENCH_LOCK:-}" ] && locked=(flock "$BENCH_LOCK")
isim_sets=()
for kv in ${ISIM_SETS:-}; do isim_sets+=(--set "$kv"); done
scale=1
only=""
force=0
programs=1

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) scale=0.05 ;;
        --scale) scale="$2"; shift ;;
        --only) only="$2"; shift ;;
        --force-champsim) force=1 ;;
        --no-programs) programs=0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

die() { echo "champsim.sh: $*" >&2; exit 1; }
[ -x "$CHAMPSIM_BIN" ] || die "no ChampSim executable at $CHAMPSIM_BIN (build it: benches/peer/README.md)"
[ -f "$CONFIG" ] || die "no isim config at $CONFIG"
command -v "$PYTHON" >/dev/null || die "$PYTHON not found"
mkdir -p "$WORK"

# The isim binary may be rebuilt while this runs: wait for it (up to 5 minutes) and use one
# copy throughout.
for _ in $(seq 60); do [ -x "$ISIM" ] && break; echo "waiting for $ISIM ..." >&2; sleep 5; done
[ -x "$ISIM" ] || die "no isim binary at $ISIM"
cp "$ISIM" "$WORK/isim.tmp" && mv "$WORK/isim.tmp" "$WORK/isim"
isim="$WORK/isim"
"$isim" config check "$CONFIG" >/dev/null || die "isim rejects $CONFIG"

champsim_commit="unknown"
if git -C "$CHAMPSIM_DIR" rev-parse HEAD >/dev/null 2>&1; then
    champsim_commit="$(git -C "$CHAMPSIM_DIR" rev-parse HEAD)"
fi
isim_sum="$(sha256sum "$isim" | cut -c1-16)"
champsim_sum="$(sha256sum "$CHAMPSIM_BIN" | cut -c1-16)"

now() { date +%s.%N; }
elapsed() { "$PYTHON" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }

echo "== traces (scale $scale) in $WORK" >&2
gen_args=("$WORK" --scale "$scale")
# --only may name programs (prog-*, real-*) too; the generator is given only its own names.
gen_only="$(tr ',' '\n' <<<"$only" | grep -vE '^(prog|real)-' | paste -sd, - || true)"
if [ -n "$only" ] && [ -z "$gen_only" ]; then
    [ -f "$WORK/manifest.json" ] || echo "[]" >"$WORK/manifest.json"
else
    [ -n "$gen_only" ] && gen_args+=(--only "$gen_only")
    "$PYTHON" "$here/champsim_traces.py" "${gen_args[@]}"
fi

# Real programs: examples traced under QEMU with `isim trace` (one thread, all of main),
# exported with `isim export champsim`, then run through both simulators like the synthetic
# traces (isim re-imports the exported file, so both read the same records).
# name|source|arguments; sizes are fixed (--scale does not change them): 1-7 M instructions,
# ChampSim's minutes. A source `host-O2` or `host-O0` is the host oracle's kernels program
# (benches/host/kernels.c, with realcode.c built at that level; the arguments name the
# kernel), traced with `--roi markers`: its markers bound the kernel, and only the kernel is
# exported (its data set up before, in neither simulator).
PROGRAMS=(
    "prog-loop|loop.c|300000"
    "prog-lu|blocked_lu.c|-t 1 -n 128 -b 16"
    "prog-owner|owner_barrier.c|-t 1 -n 100"
    "real-slot|host-O2|fp-slot 400000"
    "real-hist|host-O2|hist 16 65536"
    "real-matmul-O0|host-O0|matmul 1 64"
    "real-qsort|host-O2|qsort 30000"
    "real-hash|host-O2|hash 100000 8388608"
    "real-list|host-O2|list 4 4194304"
)
: >"$WORK/programs.tsv"
if [ "$programs" = 1 ]; then
    command -v gcc >/dev/null || die "gcc not found (needed to build the example programs)"
    export ISIM_TRACER_DIR="${ISIM_TRACER_DIR:-$(dirname "$ISIM")}"
    for p in "${PROGRAMS[@]}"; do
        IFS='|' read -r name src args <<<"$p"
        if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
        exe="$WORK/$name.bin"
        out="$WORK/$name.champsim.xz"
        case "$src" in
            host-O2|host-O0) srcs=("$here/../host/kernels.c" "$here/../host/realcode.c"); what="benches/host/kernels ($src) $args" ;;
            *) srcs=("$here/../../examples/c/$src"); what="examples/c/$src $args" ;;
        esac
        key="$(cat "${srcs[@]}" "$isim" | sha256sum | cut -c1-16) $src $args"
        if [ ! -f "$out" ] || [ ! -f "$WORK/$name.key" ] || [ "$(cat "$WORK/$name.key")" != "$key" ]; then
            echo "== $name: trace $what" >&2
            case "$src" in
                host-O2|host-O0)
                    gcc -O2 -g -pthread -I"$here/../../include" -c -o "$exe.kernels.o" "$here/../host/kernels.c"
                    gcc "-${src#host-}" -g -c -o "$exe.realcode.o" "$here/../host/realcode.c"
                    gcc -pthread -o "$exe" "$exe.kernels.o" "$exe.realcode.o" ;;
                *) gcc -O2 -g -pthread -I"$here/../../include" -o "$exe" "$here/../../examples/c/$src" -lm ;;
            esac
            # shellcheck disable=SC2086
            # the kernels program marks its kernel (--roi markers); the examples are all of main
            roi=(); case "$src" in host-*) roi=(--roi markers) ;; esac
            "$isim" trace "${roi[@]}" -o "$WORK/$name.orig.itrace" -- "$exe" $args >"$WORK/$name.trace.log" 2>&1 \
                || die "isim trace failed on $name: see $WORK/$name.trace.log"
            "$isim" export champsim "$WORK/$name.orig.itrace" --thread 0 --roi -o "$out.tmp.xz" \
                >"$WORK/$name.export.log" 2>&1 || die "isim export failed on $name: see $WORK/$name.export.log"
            mv "$out.tmp.xz" "$out"
            echo "$key" >"$WORK/$name.key"
        fi
        # the export's own count: "wrote FILE: thread 0, N instructions (...)"
        n=$(sed -n 's/^wrote .*: thread 0, \([0-9]*\) instructions.*/\1/p' "$WORK/$name.export.log")
        [ -n "$n" ] || die "no instruction count in $WORK/$name.export.log"
        printf '%s\t%s\t%s\t%s\n' "$name" "$n" "$(basename "$out")" "$what (thread 0, its region of interest or all of main)" >>"$WORK/programs.tsv"
    done
fi

names=$("$PYTHON" - "$WORK/manifest.json" "$only" "$WORK/programs.tsv" <<'EOF'
import json, sys
only = [s for s in sys.argv[2].split(",") if s]
for e in json.load(open(sys.argv[1])):
    if not only or e["name"] in only:
        print(e["name"], e["instructions"], e["file"])
for line in open(sys.argv[3]):
    name, n, f, _ = line.rstrip("\n").split("\t")
    print(name, n, f)
EOF
)

while read -r name n file; do
    [ -n "$name" ] || continue
    trace="$WORK/$file"
    # --- ChampSim: no warmup, exactly n instructions (-i makes the reader repeat the trace
    # rather than stop early; n is the trace's length, so nothing is repeated but the few
    # records fetched past the end while the last ones retire).
    cs_json="$WORK/$name.champsim.json"
    cs_meta="$WORK/$name.champsim.meta"
    cs_cmd=("$CHAMPSIM_BIN" --warmup-instructions 0 --simulation-instructions "$n" --hide-heartbeat --json "$cs_json" "$trace")
    key="$champsim_sum $(stat -c %Y "$trace") ${cs_cmd[*]}"
    if [ "$force" = 1 ] || [ ! -f "$cs_meta" ] || [ "$(head -1 "$cs_meta")" != "$key" ]; then
        echo "== $name: ChampSim ($n instructions)" >&2
        rm -f "$cs_json" "$cs_meta"
        t0=$(now)
        if "${locked[@]}" "${cs_cmd[@]}" >"$WORK/$name.champsim.log" 2>&1; then
            t1=$(now)
            printf '%s\n%s\n' "$key" "$(elapsed "$t0" "$t1")" >"$cs_meta"
        else
            # e.g. ChampSim's livelock check (IPC <= 0.01 over 10M cycles) aborts the run;
            # the table shows the row without ChampSim's numbers.
            echo "champsim.sh: ChampSim failed on $name (see $WORK/$name.champsim.log); going on" >&2
            rm -f "$cs_json"
        fi
    else
        echo "== $name: ChampSim result reused ($cs_json)" >&2
    fi
    # --- isim: import, then run.
    echo "== $name: isim" >&2
    t0=$(now)
    "$isim" import champsim -o "$WORK/$name.itrace" "$trace" >"$WORK/$name.import.log" 2>&1 \
        || die "isim import failed on $name: see $WORK/$name.import.log"
    t1=$(now)
    "${locked[@]}" "$isim" run -c "$CONFIG" "${isim_sets[@]}" --trace "$WORK/$name.itrace" -o "$WORK/$name.isim-run" >"$WORK/$name.isim.log" 2>&1 \
        || die "isim run failed on $name: see $WORK/$name.isim.log"
    t2=$(now)
    printf '%s\n%s\n' "$(elapsed "$t0" "$t1")" "$(elapsed "$t1" "$t2")" >"$WORK/$name.isim.time"
done <<<"$names"

"$PYTHON" - "$WORK" "$only" "$champsim_commit" "$isim_sum" "$CONFIG" <<'EOF'
import json, os, sys
work, only, commit, isim_sum, config = sys.argv[1:6]
only = [s for s in only.split(",") if s]
manifest = [e for e in json.load(open(os.path.join(work, "manifest.json"))) if not only or e["name"] in only]
for line in open(os.path.join(work, "programs.tsv")):
    name, n, f, desc = line.rstrip("\n").split("\t")
    manifest.append({"name": name, "instructions": int(n), "file": f, "description": desc})

def mpki(x, n):
    return 1000.0 * x / n if n else float("nan")

rows, raw = [], []
for e in manifest:
    name = e["name"]
    # ChampSim: the region of interest of the one phase (warmup 0). "miss" counts requests
    # that merged into an MSHR already in flight ("mshr_merge"); isim counts those as hits
    # (its `merged`), so unique misses = miss - mshr_merge are compared. Demand accesses
    # only: LOAD (data loads, and at the LLC instruction fetches), the core's stores (WRITE at
    # the L1D, RFO below it); not write-backs (WRITE below the L1D), TRANSLATION (page-walk
    # reads) or PREFETCH (none here).
    cs_path = os.path.join(work, f"{name}.champsim.json")
    if not os.path.exists(cs_path):
        rows.append([name, f"{e['instructions']:,}", "", "ChampSim failed"] + [""] * 10)
        raw.append({"trace": name, "champsim": None})
        continue
    cs = json.load(open(cs_path))[0]["roi"]
    core = cs["cores"][0]
    cs_instr, cs_cycles = core["instructions"], core["cycles"]
    def cs_miss(cache, types):
        c = cs[cache]
        return sum(c[t]["miss"][0] - c[t]["mshr_merge"][0] for t in types)
    # The core's stores reach the L1D as WRITE; below it WRITE is a write-back and a store
    # miss is an RFO.
    cs_l1d = cs_miss("cpu0_L1D", ("LOAD", "RFO", "WRITE"))
    cs_llc = cs_miss("LLC", ("LOAD", "RFO"))
    cs_br = sum(core["mispredict"].values())
    cs_tlb = cs["cpu0_STLB"]["LOAD"]["miss"][0] + cs["cpu0_STLB"]["RFO"]["miss"][0]
    with open(os.path.join(work, f"{name}.champsim.meta")) as f:
        cs_wall = float(f.read().split("\n")[1])
    # isim: summary.json of the run directory (docs/output.md).
    s = json.load(open(os.path.join(work, f"{name}.isim-run", "summary.json")))
    th = s["threads"][0]
    caches = {c["name"]: c for c in s["caches"]}
    l1d = caches["core0.l1d"]
    l3 = next(c for n, c in caches.items() if n.endswith(".l3"))
    is_instr, is_cycles = th["instructions"], th["cycles"]
    is_l1d = l1d["misses_load"] + l1d["misses_store"]
    is_llc = l3["misses_ifetch"] + l3["misses_load"] + l3["misses_store"]
    with open(os.path.join(work, f"{name}.isim.time")) as f:
        imp_wall, is_wall = (float(x) for x in f.read().split())
    ipc_i, ipc_c = is_instr / is_cycles, cs_instr / cs_cycles
    r = {
        "trace": name, "description": e["description"], "trace_instructions": e["instructions"],
        "isim": {"instructions": is_instr, "cycles": is_cycles, "ipc": ipc_i,
                 "l1d_misses": is_l1d, "l1d_merged": l1d["merged"], "llc_misses": is_llc,
                 "mispredictions": th["mispredictions"], "wall_s": is_wall, "import_wall_s": imp_wall,
                 "stack": th["stack"]},
        "champsim": {"instructions": cs_instr, "cycles": cs_cycles, "ipc": ipc_c,
                     "l1d_misses": cs_l1d, "l1d_mshr_merge": sum(cs["cpu0_L1D"][t]["mshr_merge"][0] for t in ("LOAD", "RFO", "WRITE")),
                     "llc_misses": cs_llc, "mispredictions": cs_br, "stlb_misses": cs_tlb, "wall_s": cs_wall},
    }
    raw.append(r)
    rows.append([
        name, f"{e['instructions']:,}",
        f"{ipc_i:.3f}", f"{ipc_c:.3f}", f"{100.0 * (ipc_i - ipc_c) / ipc_c:+.1f}",
        f"{mpki(is_l1d, is_instr):.2f}", f"{mpki(cs_l1d, cs_instr):.2f}",
        f"{mpki(is_llc, is_instr):.2f}", f"{mpki(cs_llc, cs_instr):.2f}",
        f"{mpki(th['mispredictions'], is_instr):.2f}", f"{mpki(cs_br, cs_instr):.2f}",
        f"{is_wall:.2f}", f"{cs_wall:.1f}", f"{mpki(cs_tlb, cs_instr):.2f}",
    ])

head = ["trace", "instructions", "IPC isim", "IPC ChampSim", "diff %",
        "L1D MPKI isim", "L1D MPKI CS", "LLC MPKI isim", "LLC MPKI CS",
        "br MPKI isim", "br MPKI CS", "wall s isim", "wall s CS", "STLB MPKI CS"]
lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
lines += ["| " + " | ".join(r) + " |" for r in rows]
note = (f"ChampSim {commit[:12]}; isim binary sha256 {isim_sum}…; config {os.path.basename(config)}. "
        "diff % = (isim - ChampSim) / ChampSim. MPKI: demand misses per 1000 instructions, merges into "
        "in-flight misses not counted (ChampSim miss - mshr_merge). wall s isim: `isim run` only "
        "(import not included). STLB MPKI CS: ChampSim's second-level TLB misses (page walks), "
        "which isim does not model.")
text = "\n".join(lines) + "\n\n" + note + "\n"
print(text)
with open(os.path.join(work, "results.md"), "w") as f:
    f.write(text)
with open(os.path.join(work, "results.json"), "w") as f:
    json.dump({"champsim_commit": commit, "isim_sha256_prefix": isim_sum, "config": config, "rows": raw}, f, indent=1)
EOF
