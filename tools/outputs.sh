#!/bin/bash
# Every output file isim writes, for comparing two builds before and after a refactor (a
# refactor keeps them byte-identical):
#
#   tools/outputs.sh OLD_ISIM /tmp/out-old; tools/outputs.sh NEW_ISIM /tmp/out-new
#   diff -r /tmp/out-old /tmp/out-new      # must print nothing
#
# About 150 commands in a minute: runs on every shipped config and with every predictor,
# replacement and arbitration policy, simulated traces, config show/check (errors too), lime,
# parashare, profile (every aggregation, CUBE4), whatif, sweeps, PCA and reports of each kind.
# Host-dependent lines (host time, MIPS, memory) are filtered from captured stdout. Copy each
# binary somewhere first: its name appears in some messages.
set -u
[ $# -eq 2 ] || { echo "usage: $0 ISIM OUT_DIR" >&2; exit 2; }
B=$(realpath "$1"); O=$2; rm -rf "$O"; mkdir -p "$O"
C=$(realpath "$(dirname "$0")/../configs")
cd "$O"
f() { grep -v -E "host:|simulated MIPS|peak memory|elapsed|[0-9.]+ ?s\b" ; }
$B workloads > workloads.txt 2>&1
for c in default penryn-4x4 host-zen3 lime-1ghz; do
  $B config show $C/$c.toml > config-$c.txt 2>&1
  $B config check $C/$c.toml > check-$c.txt 2>&1 || true
done
$B config check /nonexistent.toml > check-missing.txt 2>&1; echo "rc $?" >> check-missing.txt
printf '[core]\nrob_sise = 3\n[branch_predictor]\ntype = "nope"\n' > bad.toml
$B config check bad.toml > check-bad.txt 2>&1; echo "rc $?" >> check-bad.txt
# runs on built-in workloads and configs
$B run -w lu-owner -t 8 -o run-lu > run-lu.txt 2>&1
$B run -w radix-miss -t 4 -o run-radix > run-radix.txt 2>&1
$B run -w serial-phases -t 4 -c $C/penryn-4x4.toml -o run-serial-g > run-serial-g.txt 2>&1
$B run -w false-sharing -t 4 -c $C/host-zen3.toml -o run-fs-zen > run-fs-zen.txt 2>&1
$B run -w lock-contention -t 4 -c $C/lime-1ghz.toml -o run-lock-lime > run-lock-lime.txt 2>&1
$B run -w balanced -t 4 --set branch_predictor.type=gshare --set cache.l1d.replacement=srrip -o run-bal-set > run-bal-set.txt 2>&1
$B run -w stream -t 4 --set bus.arbitration=round-robin -o run-stream-rr > run-stream-rr.txt 2>&1
$B run -w stream -t 4 --set branch_predictor.type=tournament --set cache.l2.replacement=lru -o run-stream-t > run-stream-t.txt 2>&1
$B run -w lu-owner -t 4 --set branch_predictor.type=pentium-m -o run-lu-pm > run-lu-pm.txt 2>&1
$B run -w lu-owner -t 4 --set branch_predictor.type=bimodal --set bus.arbitration=fixed-priority -o run-lu-bim > run-lu-bim.txt 2>&1
$B run -w lu-owner -t 4 --set bogus.key=1 -o run-bad > run-bad.txt 2>&1; echo "rc $?" >> run-bad.txt
# traces simulated as traces (generated ones stand in for traced programs); one fixed place,
# since a run's summary names its trace by absolute path
T=${TMPDIR:-/tmp}/isim-outputs-traces; mkdir -p "$T"
$B gen lock-contention --threads 4 -o $T/lock.itrace > gen-lock.txt 2>&1
$B gen lu-owner --threads 4 -o $T/lu.itrace > gen-lu.txt 2>&1
for t in lock lu; do
  $B run --trace $T/$t.itrace -o run-tr-$t > run-tr-$t.txt 2>&1
done
$B trace-info $T/lock.itrace > info.txt 2>&1
for r in run-*/; do r=${r%/}; [ -f $r/summary.json ] || continue
  $B lime $r > $r.lime.txt 2>&1; $B lime --json $r > $r.lime.json 2>&1
  $B parashare $r > $r.ps.txt 2>&1; $B parashare --json $r > $r.ps.json 2>&1
  $B report $r -o $r.html > $r.report.txt 2>&1
done
$B lime --min-imbalance 0 --sections 9 run-radix > lime-radix-0.txt 2>&1
for a in none sum set key calltree; do
  $B profile --aggregate $a run-lu > prof-$a.txt 2>&1
  $B profile --aggregate $a --json run-lu > prof-$a.json 2>&1
  $B profile --aggregate $a --cube prof-$a.cubex run-tr-lu > prof-lu-$a.txt 2>&1
done
$B profile --block-level --aggregate key run-radix > prof-block.txt 2>&1
$B profile --compression-table -t 2,4 > prof-ct.txt 2>&1
$B whatif erase --top 2 run-radix > whatif-erase.txt 2>&1
$B whatif erase --top 2 --json run-radix > whatif-erase.json 2>&1
$B whatif set --set bus.bandwidth=16GB/s run-radix > whatif-set.txt 2>&1
$B whatif set --set bus.bandwidth=16GB/s --json run-radix > whatif-set.json 2>&1
$B sweep -w lu-owner --cores 1,2,4 -s 8 -j 2 -o sweep-lu > sweep-lu.txt 2>&1
$B sweep -w radix-miss --cores 2,4 -s 1,2 -j 2 -o sweep-radix > sweep-radix.txt 2>&1
$B sweep -w serial-phases --cores 2,4 -c $C/default.toml,$C/lime-1ghz.toml -j 2 -o sweep-cfg > sweep-cfg.txt 2>&1
$B pca sweep-lu sweep-radix run-lu -o pca1 > pca1.txt 2>&1
$B pca --standardize --cores 2,4 sweep-lu sweep-radix sweep-cfg -o pca2 > pca2.txt 2>&1
$B pca sweep-lu -o pca3 > pca3.txt 2>&1
for d in sweep-lu sweep-radix sweep-cfg pca1 pca2; do $B report $d -o $d.html > $d.report.txt 2>&1; done
# filter host-dependent lines from captured output
for t in *.txt; do f < $t > $t.f && mv $t.f $t; done
