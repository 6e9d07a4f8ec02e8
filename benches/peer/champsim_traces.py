#!/usr/bin/env python3
"""Synthetic single-thread ChampSim `input_instr` traces for the isim/ChampSim peer comparison.

Each trace is a small loop program written as 64-byte little-endian records (u64 ip, u8
is_branch, u8 branch_taken, u8 dst_regs[2], u8 src_regs[4], u64 dst_mem[2], u64 src_mem[4];
0 = empty slot), xz-compressed, so that `bin/champsim --warmup-instructions 0 TRACE.xz` and
`isim import champsim` read the very same instructions. Register numbers follow ChampSim:
SP = 6, FLAGS = 25, IP = 26; a conditional branch reads IP and FLAGS and writes IP, a compare
writes FLAGS. General registers used are 1-5 and 7-24 (never SP, FLAGS or IP). Every memory
operand is an 8-byte word; data addresses are never 0.

Traces (default instruction counts; `--scale F` multiplies every count, footprints stay):

  compute      two dependent ALU chains (6 ops each per iteration) + an L1-resident load  15M
  branch       a data-dependent conditional branch taken 50 % (seeded pseudo-random)     15M
  chase-64m    pointer chase, one load per node, 64 MiB, random cyclic permutation         2M
  chase2-64m   pointer chase, TWO loads per node (p->val, then p->next, same line), 64 MiB  2M
               (every chase: 12 instructions per node, the others ALU ops off the chain)
  stream       b[i] = k * a[i]: sequential 8-byte loads and stores, 2 x 24 MiB             18M
  chase-256k   pointer chase, 256 KiB (L2-resident in ChampSim's default config)            2M
  chase-1m     pointer chase, 1 MiB (LLC-resident)                                          2M
  mlp-64m      independent random loads over 64 MiB (addresses from an ALU chain)           3M
  loop         a 16-iteration inner loop inside an outer loop: the exit branch            10M

usage: champsim_traces.py OUTDIR [--scale F] [--only NAME,...] [--seed N] [--preset P]

Writes OUTDIR/NAME.champsim.xz for each trace and OUTDIR/manifest.json: a list of
{name, file, instructions, loads, stores, branches, taken, footprint_bytes, description}.
A trace whose file exists with the same parameters (recorded in OUTDIR/manifest.json) is not
rewritten. Pure Python (no numpy); the full set takes a few minutes on one core.
"""
import argparse
import json
import lzma
import os
import random
import struct
import sys

SP, FLAGS, IP = 6, 25, 26
REC = struct.Struct("<QBB2B4B2Q4Q")
LINE = 64
WORD = 8
MIB = 1 << 20
KIB = 1 << 10

# Data regions: far apart, page aligned, never 0.
DATA = 0x10000000       # arrays and chase nodes
DATA2 = 0x40000000      # second stream array
CHASE_PER_NODE = 12     # instructions per node of the pointer chases


def record(ip, is_branch=0, taken=0, dst_regs=(), src_regs=(), dst_mem=(), src_mem=()):
    d = tuple(dst_regs) + (0,) * (2 - len(dst_regs))
    s = tuple(src_regs) + (0,) * (4 - len(src_regs))
    dm = tuple(dst_mem) + (0,) * (2 - len(dst_mem))
    sm = tuple(src_mem) + (0,) * (4 - len(src_mem))
    return REC.pack(ip, is_branch, taken, *d, *s, *dm, *sm)


class Trace:
    """Buffers records and streams them into an xz file; counts what it wrote."""

    def __init__(self, path, preset):
        self.f = lzma.open(path, "wb", preset=preset)
        self.buf = []
        self.n = self.loads = self.stores = self.branches = self.taken = 0

    def emit(self, rec):
        self.buf.append(rec)
        if len(self.buf) >= 65536:
            self.flush()

    def flush(self):
        if self.buf:
            data = b"".join(self.buf)
            self.f.write(data)
            self.buf = []

    def close(self):
        self.flush()
        self.f.close()


def counted(t, rec, loads=0, stores=0, branch=0, taken=0):
    t.emit(rec)
    t.n += 1
    t.loads += loads
    t.stores += stores
    t.branches += branch
    t.taken += taken


class Loop:
    """A straight-line loop body at `base` whose last two instructions are `cmp` (writes
    FLAGS from the induction register) and the backward conditional branch."""

    def __init__(self, base, ind_reg=9):
        self.base = base
        self.ind = ind_reg
        self.inc = record(0, dst_regs=(ind_reg,), src_regs=(ind_reg,))

    def alu(self, ip, dst, *srcs):
        return record(ip, dst_regs=(dst,), src_regs=srcs)

    def tail(self, t, ip, last):
        """ind += 1; cmp; jcc base (taken unless `last`). Returns the ip after the branch."""
        counted(t, record(ip, dst_regs=(self.ind,), src_regs=(self.ind,)))
        counted(t, record(ip + 4, dst_regs=(FLAGS,), src_regs=(self.ind,)))
        taken = 0 if last else 1
        counted(t, record(ip + 8, 1, taken, dst_regs=(IP,), src_regs=(IP, FLAGS)), branch=1, taken=taken)
        return ip + 12


def finish(t, ip):
    counted(t, record(ip, dst_regs=(1,), src_regs=(1,)))


# --- the traces -----------------------------------------------------------------------------

def gen_compute(t, n, rng):
    """16 instructions per iteration: a load from a 4 KiB array (L1-resident), two
    interleaved dependent chains of 6 ALU ops each (r2 <- r2,r1 and r3 <- r3; both carried
    across iterations: critical path 6 cycles per 16 instructions), ind += 1, cmp, jcc."""
    base = 0x401000
    lp = Loop(base)
    iters = max(1, n // 16)
    array_words = 4 * KIB // WORD
    body_alu = []
    ip = base + 4
    for k in range(6):
        body_alu.append(record(ip, dst_regs=(2,), src_regs=(2, 1)))
        body_alu.append(record(ip + 4, dst_regs=(3,), src_regs=(3,)))
        ip += 8
    body_alu = b"".join(body_alu)
    tail_ip = ip
    tail_taken = record(tail_ip, dst_regs=(9,), src_regs=(9,)) + record(tail_ip + 4, dst_regs=(FLAGS,), src_regs=(9,)) \
        + record(tail_ip + 8, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    loads = [record(base, dst_regs=(1,), src_regs=(9,), src_mem=(DATA + WORD * (i % array_words),)) for i in range(array_words)]
    for i in range(iters):
        last = i == iters - 1
        if not last:
            t.emit(loads[i % array_words] + body_alu + tail_taken)
            t.n += 16
            t.loads += 1
            t.branches += 1
            t.taken += 1
        else:
            counted(t, loads[i % array_words], loads=1)
            t.emit(body_alu)
            t.n += 12
            lp.tail(t, tail_ip, True)
    finish(t, tail_ip + 12)
    return 4 * KIB


def gen_branch(t, n, rng):
    """load x = a[i % 1024] (8 KiB, L1-resident); r2 = x & 1; cmp; jcc skip (taken 50 %,
    pseudo-random, the direction depends on the loaded value); two ALU ops on the fall-through
    path; skip: r3 += x; ind += 1; cmp; jcc loop. 8 or 10 instructions per iteration."""
    base = 0x402000
    lp = Loop(base)
    words = 1024
    iters = max(1, n // 9)
    ld = [record(base, dst_regs=(1,), src_regs=(9,), src_mem=(DATA + WORD * k,)) for k in range(words)]
    and_ = record(base + 4, dst_regs=(2,), src_regs=(1,))
    cmp_ = record(base + 8, dst_regs=(FLAGS,), src_regs=(2,))
    jt = record(base + 12, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    jn = record(base + 12, 1, 0, dst_regs=(IP,), src_regs=(IP, FLAGS))
    ft = record(base + 16, dst_regs=(4,), src_regs=(4,)) + record(base + 20, dst_regs=(5,), src_regs=(5, 4))
    join = record(base + 24, dst_regs=(3,), src_regs=(3, 1))
    tail_ip = base + 28
    tail_taken = record(tail_ip, dst_regs=(9,), src_regs=(9,)) + record(tail_ip + 4, dst_regs=(FLAGS,), src_regs=(9,)) \
        + record(tail_ip + 8, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    # The pattern of directions is fixed by the array's contents: generate 1024 random bits
    # once would repeat every 1024 iterations (a predictor with long history could learn it),
    # so draw a fresh bit per iteration: the trace is what a program reading a large random
    # array would produce, with the loads kept L1-resident.
    bits = rng.getrandbits
    for i in range(iters):
        taken = bits(1)
        last = i == iters - 1
        head = ld[i % words] + and_ + cmp_ + (jt if taken else jn)
        t.n += 4
        t.loads += 1
        t.branches += 1
        t.taken += taken
        if taken:
            t.emit(head + join)
            t.n += 1
        else:
            t.emit(head + ft + join)
            t.n += 3
        if not last:
            t.emit(tail_taken)
            t.n += 3
            t.branches += 1
            t.taken += 1
        else:
            lp.tail(t, tail_ip, True)
    finish(t, tail_ip + 12)
    return words * WORD


def sattolo(k, rng):
    """A random cyclic permutation of range(k): following it from 0 visits every node."""
    p = list(range(k))
    for i in range(k - 1, 0, -1):
        j = rng.randrange(i)
        p[i], p[j] = p[j], p[i]
    return p


def gen_chase(t, n, rng, footprint, loads_per_node, base):
    """Pointer chase over `footprint` bytes of 64-byte nodes linked in a random cyclic order,
    12 instructions per node. One load per node: p = p->next (reg 1 <- [reg 1]), then 8
    independent ALU ops; two loads: v = p->val ([p + 0]) then p = p->next ([p + 8], the same
    line), r3 += v, then 6 ALU ops. Then ind += 1, cmp, jcc.

    The ALU ops do not depend on the loads (they execute in the misses' shadow). They keep
    ChampSim's IPC above its livelock threshold: ChampSim aborts a run whose IPC over any
    10M-cycle window is at most 0.01 (src/champsim.cc), and a cold 64 MiB chase costs it
    ~850 cycles per node at first (minor page faults and page walks on every new page)."""
    nodes = footprint // LINE
    nxt = sattolo(nodes, rng)
    lp = Loop(base)
    per = CHASE_PER_NODE
    iters = max(1, n // per)
    loads_ip = base
    nload = loads_per_node
    extra = 1 if nload == 2 else 0          # r3 += v
    fill_ip = base + 4 * (nload + extra)
    nfill = per - 3 - nload - extra
    fill = b"".join(record(fill_ip + 4 * k, dst_regs=(11 + k % 4,), src_regs=(11 + k % 4,)) for k in range(nfill))
    tail_ip = fill_ip + 4 * nfill
    tail_taken = record(tail_ip, dst_regs=(9,), src_regs=(9,)) + record(tail_ip + 4, dst_regs=(FLAGS,), src_regs=(9,)) \
        + record(tail_ip + 8, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    add = record(base + 8, dst_regs=(3,), src_regs=(3, 2))
    cur = 0
    for i in range(iters):
        a = DATA + LINE * cur
        if nload == 1:
            t.emit(REC.pack(loads_ip, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, a, 0, 0, 0) + fill)
        else:
            t.emit(REC.pack(loads_ip, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, a, 0, 0, 0)
                   + REC.pack(loads_ip + 4, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, a + WORD, 0, 0, 0) + add + fill)
        t.loads += nload
        t.n += per - 3
        cur = nxt[cur]
        if i != iters - 1:
            t.emit(tail_taken)
            t.n += 3
            t.branches += 1
            t.taken += 1
        else:
            lp.tail(t, tail_ip, True)
    finish(t, tail_ip + 12)
    return footprint


def gen_stream(t, n, rng):
    """for i: r1 = a[i]; r1 = r1 * k; b[i] = r1; ind += 1; cmp; jcc — sequential 8-byte loads
    and stores, 6 instructions per element; a and b are each n/6 words (24 MiB at 18M)."""
    base = 0x405000
    lp = Loop(base)
    iters = max(1, n // 6)
    mul = record(base + 4, dst_regs=(1,), src_regs=(1, 7))
    tail_ip = base + 12
    tail_taken = record(tail_ip, dst_regs=(9,), src_regs=(9,)) + record(tail_ip + 4, dst_regs=(FLAGS,), src_regs=(9,)) \
        + record(tail_ip + 8, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    for i in range(iters):
        t.emit(REC.pack(base, 0, 0, 1, 0, 9, 0, 0, 0, 0, 0, DATA + WORD * i, 0, 0, 0) + mul
               + REC.pack(base + 8, 0, 0, 0, 0, 1, 9, 0, 0, DATA2 + WORD * i, 0, 0, 0, 0, 0))
        t.n += 3
        t.loads += 1
        t.stores += 1
        if i != iters - 1:
            t.emit(tail_taken)
            t.n += 3
            t.branches += 1
            t.taken += 1
        else:
            lp.tail(t, tail_ip, True)
    finish(t, tail_ip + 12)
    return 2 * iters * WORD


def gen_mlp(t, n, rng):
    """r8 = hash(r8) (ALU, independent of memory); r1 = [random line of 64 MiB chosen by r8];
    r3 += r1; ind += 1; cmp; jcc. The loads' addresses depend only on the ALU chain, so the
    misses can all be in flight at once (bounded by MSHRs / outstanding loads)."""
    base = 0x406000
    lp = Loop(base)
    footprint = 64 * MIB
    lines = footprint // LINE
    iters = max(1, n // 6)
    hsh = record(base, dst_regs=(8,), src_regs=(8,))
    add = record(base + 8, dst_regs=(3,), src_regs=(3, 1))
    tail_ip = base + 12
    tail_taken = record(tail_ip, dst_regs=(9,), src_regs=(9,)) + record(tail_ip + 4, dst_regs=(FLAGS,), src_regs=(9,)) \
        + record(tail_ip + 8, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    r = rng.randrange
    for i in range(iters):
        a = DATA + LINE * r(lines)
        t.emit(hsh + REC.pack(base + 4, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, a, 0, 0, 0) + add)
        t.n += 3
        t.loads += 1
        if i != iters - 1:
            t.emit(tail_taken)
            t.n += 3
            t.branches += 1
            t.taken += 1
        else:
            lp.tail(t, tail_ip, True)
    finish(t, tail_ip + 12)
    return footprint


def gen_loop(t, n, rng):
    """outer: r4 += 1; inner (16 iterations): r2 += r1; r3 ^= r2; r5 += r3; j += 1; cmp; jcc
    inner (taken 15 times, not taken at the exit); i += 1; cmp; jcc outer. 100 instructions
    per outer iteration, one inner-loop exit each."""
    base = 0x407000
    inner = base + 4
    outer_head = record(base, dst_regs=(4,), src_regs=(4,))
    body = record(inner, dst_regs=(2,), src_regs=(2, 1)) + record(inner + 4, dst_regs=(3,), src_regs=(3, 2)) \
        + record(inner + 8, dst_regs=(5,), src_regs=(5, 3)) + record(inner + 12, dst_regs=(10,), src_regs=(10,)) \
        + record(inner + 16, dst_regs=(FLAGS,), src_regs=(10,))
    jin_t = record(inner + 20, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    jin_n = record(inner + 20, 1, 0, dst_regs=(IP,), src_regs=(IP, FLAGS))
    inner_all = (body + jin_t) * 15 + body + jin_n
    otail = inner + 24
    outer_tail = record(otail, dst_regs=(9,), src_regs=(9,)) + record(otail + 4, dst_regs=(FLAGS,), src_regs=(9,))
    jout_t = record(otail + 8, 1, 1, dst_regs=(IP,), src_regs=(IP, FLAGS))
    jout_n = record(otail + 8, 1, 0, dst_regs=(IP,), src_regs=(IP, FLAGS))
    per = 1 + 16 * 6 + 3
    iters = max(1, n // per)
    for i in range(iters):
        last = i == iters - 1
        t.emit(outer_head + inner_all + outer_tail + (jout_n if last else jout_t))
        t.n += per
        t.branches += 17
        t.taken += 15 + (0 if last else 1)
    finish(t, otail + 12)
    return 0


TRACES = [
    # name, default instructions, generator, description
    ("compute", 15_000_000, gen_compute, "dependent ALU chains, L1-resident load"),
    ("branch", 15_000_000, gen_branch, "data-dependent branch, 50% taken (seeded)"),
    ("chase-64m", 2_000_000, lambda t, n, r: gen_chase(t, n, r, 64 * MIB, 1, 0x403000),
     "pointer chase, 1 load/node, 64 MiB"),
    ("chase2-64m", 2_000_000, lambda t, n, r: gen_chase(t, n, r, 64 * MIB, 2, 0x404000),
     "pointer chase, 2 loads/node (same line), 64 MiB"),
    ("stream", 18_000_000, gen_stream, "sequential loads + stores, 8-byte words, 2x24 MiB"),
    ("chase-256k", 2_000_000, lambda t, n, r: gen_chase(t, n, r, 256 * KIB, 1, 0x408000),
     "pointer chase, 256 KiB (L2-resident)"),
    ("chase-1m", 2_000_000, lambda t, n, r: gen_chase(t, n, r, 1 * MIB, 1, 0x409000),
     "pointer chase, 1 MiB (LLC-resident)"),
    ("mlp-64m", 3_000_000, gen_mlp, "independent random loads, 64 MiB (MLP)"),
    ("loop", 10_000_000, gen_loop, "16-iteration inner loop (exit branch)"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every trace's instruction count (quick mode: 0.05)")
    ap.add_argument("--only", default="", help="comma-separated trace names (default: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--preset", type=int, default=1, help="xz preset (0-9; default 1: fast)")
    ap.add_argument("--list", action="store_true", help="print the trace names and exit")
    a = ap.parse_args()
    if a.list:
        for name, n, _, desc in TRACES:
            print(f"{name}\t{n}\t{desc}")
        return
    only = [s for s in a.only.split(",") if s]
    unknown = set(only) - {t[0] for t in TRACES}
    if unknown:
        sys.exit(f"unknown trace(s): {', '.join(sorted(unknown))}")
    os.makedirs(a.outdir, exist_ok=True)
    mpath = os.path.join(a.outdir, "manifest.json")
    old = {}
    if os.path.exists(mpath):
        with open(mpath) as f:
            old = {e["name"]: e for e in json.load(f)}
    out = []
    for name, n, gen, desc in TRACES:
        if only and name not in only:
            continue
        target = max(1, int(n * a.scale))
        fname = f"{name}.champsim.xz"
        path = os.path.join(a.outdir, fname)
        params = {"target": target, "seed": a.seed, "generator": 2}
        prev = old.get(name)
        if prev and prev.get("params") == params and os.path.exists(path):
            out.append(prev)
            print(f"{name}: up to date ({prev['instructions']} instructions)", file=sys.stderr)
            continue
        # Each trace gets its own stream of pseudo-random numbers, so that --only gives the
        # same file as a full run.
        rng = random.Random(f"{a.seed}:{name}")
        tmp = path + ".tmp"
        t = Trace(tmp, a.preset)
        footprint = gen(t, target, rng)
        t.close()
        os.replace(tmp, path)
        e = {"name": name, "file": fname, "instructions": t.n, "loads": t.loads, "stores": t.stores,
             "branches": t.branches, "taken": t.taken, "footprint_bytes": footprint,
             "description": desc, "params": params}
        out.append(e)
        print(f"{name}: {t.n} instructions, {t.loads} loads, {t.stores} stores, {t.branches} branches "
              f"({t.taken} taken) -> {path}", file=sys.stderr)
    # Keep entries of traces not regenerated this time.
    names = {e["name"] for e in out}
    merged = [e for e in old.values() if e["name"] not in names] + out
    order = {t[0]: i for i, t in enumerate(TRACES)}
    merged.sort(key=lambda e: order.get(e["name"], 99))
    with open(mpath + ".tmp", "w") as f:
        json.dump(merged, f, indent=1)
    os.replace(mpath + ".tmp", mpath)


if __name__ == "__main__":
    main()
