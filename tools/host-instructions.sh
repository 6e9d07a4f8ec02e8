#!/bin/bash
# Host instructions per simulated instruction: a measure of simulation speed that does not
# depend on what else the host is doing. Timings on the 2-vCPU VMs this project runs on vary
# by 10-20 % from run to run; callgrind's count of the instructions the host executes varies by
# less than 0.1 %, so a change of 1 % is seen in one run. It is not time (a host cache miss
# costs a hundred instructions' time and counts as one), so confirm a gain with alternating
# timed runs. Exact model, one host thread (callgrind runs one thread at a time anyway).
#
#   tools/host-instructions.sh ISIM TRACE...            one line per trace
#   TOP=12 tools/host-instructions.sh ISIM TRACE...     and the 12 host functions (with what
#                                                       is inlined into them) that executed
#                                                       the most
#
# Needs valgrind (callgrind and callgrind_annotate) and python3. About 50 times slower than
# the run itself: a trace of 10^7 instructions takes 20-30 s.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: [TOP=N] $0 ISIM TRACE..." >&2; exit 2; }
B=$(realpath "$1"); shift
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
for t in "$@"; do
  [ -r "$t" ] || { echo "$0: cannot read trace $t" >&2; exit 1; }
  valgrind --tool=callgrind --callgrind-out-file="$W/cg" "$B" run --trace "$t" \
    --host-threads 1 -o "$W/run" > "$W/log" 2>&1 || { cat "$W/log" >&2; exit 1; }
  python3 - "$t" "$W" "${TOP:-0}" <<'EOF'
import json, re, subprocess, sys, collections
trace, w, top = sys.argv[1], sys.argv[2], int(sys.argv[3])
ir = int(re.search(r'^summary: (\d+)', open(f'{w}/cg').read(), re.M).group(1))
n = json.load(open(f'{w}/run/summary.json'))['instructions']
print(f'{trace}: {ir / n:.1f} host instructions per simulated instruction ({ir} / {n})')
if top:
    out = subprocess.run(['callgrind_annotate', '--inclusive=no', f'{w}/cg'],
                         capture_output=True, text=True, check=True).stdout
    # Per compiled function, with what was inlined into it (the core's timing, the memory's
    # L1 hits and the observer all run inside the engine's loop).
    by_fn = collections.Counter()
    for m in re.finditer(r'^\s*([0-9,]+) \(\s*[0-9.]+%\)\s+\S+?:(.+?)(?: \[.*\])?$', out, re.M):
        by_fn[m.group(2)] += int(m.group(1).replace(',', ''))
    for f, v in by_fn.most_common(top):
        print(f'  {v / n:8.1f}  {f}')
EOF
done
