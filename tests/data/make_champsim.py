#!/usr/bin/env python3
"""Writes a small ChampSim `input_instr` trace and prints, as JSON, the counts a correct
importer must reproduce: records (instructions), non-empty source_memory slots (loads),
non-empty destination_memory slots (stores), branch records and taken branches.

The program is a loop with loads, an ALU op, a store (with a second load every 7th
iteration), a direct call to a function that returns, a compare and a conditional back-edge,
plus an indirect jump every 10th iteration. Register numbers follow ChampSim: SP = 6,
FLAGS = 25, IP = 26.

usage: make_champsim.py OUT [raw|gz|xz] [iterations]
"""
import gzip
import json
import lzma
import struct
import sys

SP, FLAGS, IP = 6, 25, 26


def record(ip, is_branch=0, taken=0, dst_regs=(), src_regs=(), dst_mem=(), src_mem=()):
    def pad(v, n):
        v = list(v)
        assert len(v) <= n
        return v + [0] * (n - len(v))
    return struct.pack("<QBB2B4B2Q4Q", ip, is_branch, taken, *pad(dst_regs, 2), *pad(src_regs, 4),
                       *pad(dst_mem, 2), *pad(src_mem, 4))


def program(n):
    loop, func, exit_ = 0x401000, 0x402000, 0x401100
    a, b, stack = 0x10000000, 0x20000000, 0x7ffff000
    out = []
    for i in range(n):
        srcs = [a + 8 * i] + ([a + 4096 + 8 * i] if i % 7 == 0 else [])
        out.append(record(loop + 0, src_regs=(1,), dst_regs=(2,), src_mem=srcs))
        out.append(record(loop + 4, src_regs=(2, 3), dst_regs=(2,)))
        out.append(record(loop + 7, src_regs=(2, 1), dst_mem=(b + 8 * (i * 13 % 97),)))
        out.append(record(loop + 11, 1, 1, dst_regs=(IP, SP), src_regs=(IP, SP), dst_mem=(stack,)))
        out.append(record(func + 0, src_regs=(4,), dst_regs=(4,)))
        out.append(record(func + 3, 1, 1, dst_regs=(IP, SP), src_regs=(SP,), src_mem=(stack,)))
        out.append(record(loop + 16, src_regs=(1,), dst_regs=(FLAGS,)))
        if i % 10 == 9:
            # indirect jump through register 5 to the conditional branch
            out.append(record(loop + 19, 1, 1, dst_regs=(IP,), src_regs=(5,)))
        out.append(record(loop + 21, 1, int(i + 1 < n), dst_regs=(IP,), src_regs=(IP, FLAGS)))
    out.append(record(exit_, src_regs=(0,), dst_regs=(0,)))
    return out


def main():
    path = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "raw"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    recs = program(n)
    data = b"".join(recs)
    opener = {"raw": open, "gz": gzip.open, "xz": lzma.open}[kind]
    with opener(path, "wb") as f:
        f.write(data)
    counts = {"instructions": 0, "loads": 0, "stores": 0, "branches": 0, "taken_branches": 0}
    for r in recs:
        f = struct.unpack("<QBB2B4B2Q4Q", r)
        counts["instructions"] += 1
        counts["branches"] += f[1]
        counts["taken_branches"] += f[1] and f[2]
        counts["stores"] += sum(1 for x in f[9:11] if x)
        counts["loads"] += sum(1 for x in f[11:15] if x)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
