#!/usr/bin/env python3
"""strip_stores.py IN.xz OUT.xz: a ChampSim `input_instr` trace with every store's memory
operands removed, all else unchanged.

The experiment of docs/validation.md ("Where they differ"): run the stripped trace through
both simulators (as champsim.sh runs any trace) to see how much of a difference comes from
writing (stores, and the write-backs they cause). Records are 64 bytes: u64 ip, u8 is_branch,
u8 branch_taken, u8 dst_regs[2], u8 src_regs[4], u64 dst_mem[2], u64 src_mem[4]; the two
dst_mem words (bytes 16-31) are the store addresses and are zeroed. Prints the record and
store counts.
"""
import lzma
import sys

REC = 64
DST_MEM = slice(16, 32)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n")[0])
    src, dst = sys.argv[1], sys.argv[2]
    raw = lzma.open(src).read()
    if len(raw) % REC:
        sys.exit(f"{src}: {len(raw)} bytes is not a whole number of {REC}-byte records")
    out = bytearray(raw)
    stores = 0
    for i in range(0, len(out), REC):
        rec = out[i:i + REC]
        if any(rec[DST_MEM]):
            stores += 1
            out[i + DST_MEM.start:i + DST_MEM.stop] = bytes(DST_MEM.stop - DST_MEM.start)
    with lzma.open(dst, "wb", preset=1) as f:
        f.write(bytes(out))
    print(f"{len(raw) // REC} records, {stores} stores stripped -> {dst}")


if __name__ == "__main__":
    main()
