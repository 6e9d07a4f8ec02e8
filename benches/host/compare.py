"""compare.py WORK CONFIG: the host-oracle comparison table from run.sh's measurements.

Reads WORK/measurements.tsv (name, group, kernel arguments, simulated cycles, simulated
instructions, native nanoseconds of each run) and prints a Markdown table, also written to
WORK/results.md, with the raw numbers in WORK/results.json.

Each native kernel's time is the fastest of its runs: the host is shared with other guests,
whose load on the same physical cores (SMT siblings, the L3, DRAM) comes and goes and slows
throughput-bound kernels by up to 2x in some runs (README.md); the fastest run is the one
least disturbed. The spread (median over fastest) is printed beside each kernel.

The host's clock is not known (a VM, boost), so nothing is compared in seconds. The clock is
measured with `add-chain` (one dependent add per cycle), and then:
* CPI ratios: each kernel's cycles per instruction over add-chain's, native against simulated
  (the measured clock cancels out of the native ratio); mean absolute error over the kernels;
* load latency against footprint: cycles per step of the pointer chases;
* 2-thread speedups of the parallel kernels, native against simulated;
* the core-to-core round trip of `pingpong`, native only (see README.md).
"""
import json
import os
import statistics
import sys

work, config = sys.argv[1], sys.argv[2]
rows = {}
for line in open(os.path.join(work, "measurements.tsv")):
    name, group, args, cyc, ins, times = line.rstrip("\n").split("\t")
    ns = [float(x) for x in times.split()]
    a = args.split()
    rows[name] = {
        "group": group, "args": args, "n": int(a[1]),
        "sim_cycles": float(cyc), "sim_instructions": int(ins),
        "native_ns_runs": ns, "native_ns": min(ns), "native_ns_median": statistics.median(ns),
    }

if "add-chain" not in rows:
    sys.exit("compare.py: add-chain is needed (it measures the clock)")
ref = rows["add-chain"]
ghz = 8 * ref["n"] / ref["native_ns"]  # one dependent add per cycle
for r in rows.values():
    r["native_cycles"] = r["native_ns"] * ghz
    if r["sim_instructions"]:
        r["native_cpi"] = r["native_cycles"] / r["sim_instructions"]
        r["sim_cpi"] = r["sim_cycles"] / r["sim_instructions"]

out = [f"Host clock measured by add-chain: {ghz:.3f} GHz (fastest of {len(ref['native_ns_runs'])} runs).", ""]
out += ["| kernel | instructions | native CPI | spread | isim CPI | native ratio | isim ratio | error % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"]
errs = []
for name, r in rows.items():
    if r["group"] != "cpi":
        continue
    nr = r["native_cpi"] / ref["native_cpi"]
    sr = r["sim_cpi"] / ref["sim_cpi"]
    e = 100.0 * (sr - nr) / nr
    r["ratio_error_pct"] = e
    if name != "add-chain":
        errs.append(abs(e))
    spread = r["native_ns_median"] / r["native_ns"]
    out.append(f"| {name} | {r['sim_instructions']:,} | {r['native_cpi']:.3f} | {spread:.2f} | {r['sim_cpi']:.3f} | "
               f"{nr:.2f} | {sr:.2f} | {e:+.1f} |")
mae = statistics.mean(errs) if errs else float("nan")
far = [n for n, r in rows.items() if r["group"] == "cpi" and n != "add-chain" and abs(r["ratio_error_pct"]) > 30]
out += ["", f"Mean absolute error of the CPI ratios ({len(errs)} kernels against add-chain): **{mae:.1f} %**; "
        f"off by more than 30 %: {len(far)}" + (f" ({', '.join(far)})" if far else "") + ".", ""]

chases = [(n, r) for n, r in rows.items() if n.startswith("chase-")]
if chases:
    out += ["| pointer chase | native cycles per load | isim cycles per load | error % |", "|---|---:|---:|---:|"]
    for n, r in chases:
        nat = r["native_cycles"] / r["n"]
        sim = r["sim_cycles"] / r["n"]
        r["native_load_cycles"], r["sim_load_cycles"] = nat, sim
        out.append(f"| {n} | {nat:.1f} | {sim:.1f} | {100 * (sim - nat) / nat:+.1f} |")
    out.append("")

pairs = sorted({n[:-2] for n in rows if n.endswith("-1") and n[:-2] + "-2" in rows})
if pairs:
    out += ["| parallel kernel | native 2-thread speedup | isim 2-thread speedup | error % |", "|---|---:|---:|---:|"]
    for p in pairs:
        a, b = rows[p + "-1"], rows[p + "-2"]
        ns_ = a["native_ns"] / b["native_ns"]
        ss = a["sim_cycles"] / b["sim_cycles"]
        rows[p + "-2"]["native_speedup"], rows[p + "-2"]["sim_speedup"] = ns_, ss
        out.append(f"| {p} | {ns_:.2f} | {ss:.2f} | {100 * (ss - ns_) / ns_:+.1f} |")
    out.append("")

if "pingpong" in rows:
    r = rows["pingpong"]
    one_way = r["native_cycles"] / r["n"] / 2
    r["native_one_way_cycles"] = one_way
    out.append(f"pingpong: {r['native_ns'] / r['n']:.0f} ns per round trip natively, "
               f"{one_way:.0f} cycles per one-way transfer of the line at the measured clock.")

text = "\n".join(out) + "\n"
print(text)
with open(os.path.join(work, "results.md"), "w") as f:
    f.write(text)
with open(os.path.join(work, "results.json"), "w") as f:
    json.dump({"config": config, "clock_ghz": ghz, "cpi_ratio_mae_pct": mae, "kernels": rows}, f, indent=1)
