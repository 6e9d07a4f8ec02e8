#!/usr/bin/env bash
# This machine as the hardware oracle (benches/host/README.md): runs each kernel of
# kernels.c natively (the fastest of several rounds) and simulated on CONFIG, and compares what does
# not depend on the unknown clock: CPI ratios between kernels, load latency against footprint,
# the 2-thread speedups of the parallel kernels.
#
#   benches/host/run.sh [--reps R] [--only a,b,...] [--native-only]
#
# --native-only times the kernels again and keeps the simulated results of the last run in
# WORK (the host's disturbance comes and goes: more rounds later give a kernel more chances
# of an undisturbed run without simulating again).
#
# Environment (defaults in brackets):
#   ISIM        the isim binary; the tracer libraries are looked up beside it   [target/release/isim]
#   CONFIG      the machine config                                            [configs/host-xeon.toml]
#   WORK        work directory: binary, traces, run directories, results     [/tmp/isim-host]
#   BENCH_LOCK  a lock file held (flock) by every native timing run, so that other benchmarks
#               on a shared machine wait rather than run alongside            [none]
#
# Writes $WORK/results.md (printed) and $WORK/results.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
ISIM="${ISIM:-$root/target/release/isim}"
CONFIG="${CONFIG:-$root/configs/host-xeon.toml}"
WORK="${WORK:-/tmp/isim-host}"
reps=9
only=""
native_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps="$2"; shift ;;
        --only) only="$2"; shift ;;
        --native-only) native_only=1 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "run.sh: $*" >&2; exit 1; }
[ -x "$ISIM" ] || die "no isim binary at $ISIM (cargo build --release -p isim -p isim-qemu-plugin -p isim-preload)"
[ -f "$CONFIG" ] || die "no config at $CONFIG"
command -v gcc >/dev/null || die "gcc not found"
command -v qemu-x86_64 >/dev/null || die "qemu-x86_64 not found (apt-get install qemu-user)"
locked=()
[ -n "${BENCH_LOCK:-}" ] && locked=(flock "$BENCH_LOCK")
mkdir -p "$WORK"
"$ISIM" config check "$CONFIG" >/dev/null || die "isim rejects $CONFIG"
# kernels.c at -O2 in both binaries; realcode.c's plain-C kernels at -O2 and at -O0
gcc -O2 -g -pthread -I"$root/include" -c -o "$WORK/kernels.o" "$here/kernels.c"
gcc -O2 -g -c -o "$WORK/realcode-O2.o" "$here/realcode.c"
gcc -O0 -g -c -o "$WORK/realcode-O0.o" "$here/realcode.c"
gcc -pthread -o "$WORK/kernels" "$WORK/kernels.o" "$WORK/realcode-O2.o"
gcc -pthread -o "$WORK/kernels-O0" "$WORK/kernels.o" "$WORK/realcode-O0.o"

# name | kernel arguments (N [FOOTPRINT] [THREADS]) | group [| O0: the -O0 build]
KERNELS=(
    "add-chain|add-chain 1000000|cpi"
    "add-indep|add-indep 1000000|cpi"
    "mul-chain|mul-chain 250000|cpi"
    "div-chain|div-chain 100000|cpi"
    "fp-chain|fp-chain 250000|cpi"
    "fp-madd|fp-madd 1000000|cpi"
    "fp-slot|fp-slot 1000000|cpi"
    "int-slot|int-slot 1000000|cpi"
    "slot-partial|slot-partial 500000|cpi"
    "locked-chain|locked-chain 250000|cpi"
    "locked-work-10|locked-work 1000000 10|cpi"
    "locked-work-40|locked-work 250000 40|cpi"
    "locked-feed-10|locked-feed 1000000 10|cpi"
    "chains-50|chains 400000 50|cpi"
    "chains-200|chains 400000 200|cpi"
    "chains-1000|chains 400000 1000|cpi"
    "branch-rand|branch-rand 2000000|cpi"
    "branch-loop|branch-loop 200000|cpi"
    "chase-16k|chase 400000 16384|cpi"
    "chase-256k|chase 400000 262144|cpi"
    "chase-1m|chase 400000 1048576|cpi"
    "chase-4m|chase 200000 4194304|cpi"
    "chase-64m|chase 100000 67108864|cpi"
    "rand-load-64m|rand-load 500000 67108864|cpi"
    "locked-mlp-64m|locked-mlp 250000 67108864|cpi"
    "locked-chase-64m|locked-chase 100000 67108864|cpi"
    "stream-sum-64m|stream-sum 1 67108864|cpi"
    "triad-16m|triad 1 16777216|cpi"
    "hist|hist 16 65536|cpi"
    "hist-O0|hist 16 65536|cpi|O0"
    "alias-sum|alias-sum 256 32768|cpi"
    "alias-sum-O0|alias-sum 128 32768|cpi|O0"
    "alias-fp|alias-fp 256 32768|cpi"
    "reduce|reduce 256 16384|cpi"
    "reduce-O0|reduce 128 16384|cpi|O0"
    "matmul|matmul 4 64|cpi"
    "matmul-O0|matmul 1 64|cpi|O0"
    "qsort|qsort 30000|cpi"
    "qsort-O0|qsort 30000|cpi|O0"
    "hash-8m|hash 200000 8388608|cpi"
    "hash-8m-O0|hash 100000 8388608|cpi|O0"
    "list-4m|list 4 4194304|cpi"
    "list-256k|list 32 262144|cpi"
    "list-256k-O0|list 32 262144|cpi|O0"
    "words|words 4 262144|cpi"
    "colsum|colsum 1 1024|cpi"
    "transpose|transpose 1 1024|cpi"
    "stencil|stencil 8 256|cpi"
    "stencil-O0|stencil 2 256|cpi|O0"
    "lu|lu 1 160|cpi"
    "fft|fft 4 16384|cpi"
    "radix|radix 2 524288|cpi"
    "par-compute-1|par-compute 16000000 0 1|par"
    "par-compute-2|par-compute 16000000 0 2|par"
    "par-sum-1|par-sum 4 67108864 1|par"
    "par-sum-2|par-sum 4 67108864 2|par"
    "false-share-1|false-share 2000000 0 1|par"
    "false-share-2|false-share 2000000 0 2|par"
    "prodcons-1|prodcons 100000 0 1|par"
    "prodcons-2|prodcons 100000 0 2|par"
    "pingpong|pingpong 200000|native"
)

# Simulate first (deterministic), then time natively in rounds: every round runs every kernel
# once, so that interference from other guests on the host, which comes and goes over
# seconds, falls on all kernels alike rather than on the few that ran during it.
selected=()
for spec in "${KERNELS[@]}"; do
    IFS='|' read -r name args group build <<<"$spec"
    if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
    selected+=("$spec")
done
declare -A sim times
for spec in "${selected[@]}"; do
    IFS='|' read -r name args group build <<<"$spec"
    sim[$name]="0 0"
    [ "$group" = native ] && continue
    if [ "$native_only" = 1 ]; then
        [ -f "$WORK/$name.run/summary.json" ] || die "--native-only: no simulated run of $name in $WORK"
    else
        echo "== $name: trace and simulate" >&2
        # shellcheck disable=SC2086
        ISIM_TRACER_DIR="${ISIM_TRACER_DIR:-$(dirname "$ISIM")}" "$ISIM" trace --roi markers \
            -o "$WORK/$name.itrace" -- "$WORK/kernels${build:+-$build}" $args >"$WORK/$name.trace.log" 2>&1 \
            || die "isim trace failed on $name: see $WORK/$name.trace.log"
        "$ISIM" run -c "$CONFIG" --trace "$WORK/$name.itrace" -o "$WORK/$name.run" \
            >"$WORK/$name.run.log" 2>&1 || die "isim run failed on $name: see $WORK/$name.run.log"
    fi
    sim[$name]=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(s["cycles"], sum(t["instructions"] for t in s["threads"]))' "$WORK/$name.run/summary.json")
done
for r in $(seq "$reps"); do
    echo "== native round $r of $reps" >&2
    for spec in "${selected[@]}"; do
        IFS='|' read -r name args group build <<<"$spec"
        # shellcheck disable=SC2086
        out=$("${locked[@]}" "$WORK/kernels${build:+-$build}" $args) || die "$name failed natively"
        times[$name]="${times[$name]:-} ${out#ns }"
    done
done
: >"$WORK/measurements.tsv"
for spec in "${selected[@]}"; do
    IFS='|' read -r name args group build <<<"$spec"
    read -r sim_cycles sim_instr <<<"${sim[$name]}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$group" "$args" "$sim_cycles" "$sim_instr" "${times[$name]# }" \
        >>"$WORK/measurements.tsv"
done

python3 "$here/compare.py" "$WORK" "$CONFIG"
