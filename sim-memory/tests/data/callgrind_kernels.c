/*
 * Kernels for the callgrind peer-oracle test (sim-memory/tests/callgrind_oracle.rs).
 *
 * The test compiles this file with `gcc -O2`, runs it under
 * `valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --toggle-collect=<kernel>`
 * and replays the same data address stream through isim's `CallgrindModel`; the D1 and LL
 * data-miss counts must agree. For that the test must know every data access the collected
 * function makes, so the kernels are written to compile to leaf functions without a stack
 * frame (no pushes or pops: the only stack accesses are the caller's `call` and the kernel's
 * `ret`), whose loops touch memory only through `volatile` accesses (one load per element for
 * `isim_strided`; one load and one store of the same 8 bytes per step for `isim_lcg`). The test
 * checks this by comparing callgrind's access count (Dr + Dw) with its own; `objdump -d` on the
 * binary shows the code. Each kernel returns its stack pointer, i.e. the address of its
 * return-address slot, so the test can replay the `call`'s store and the `ret`'s load.
 *
 * Cache state: callgrind clears its simulated caches whenever instrumentation is switched on,
 * so main switches it on (CALLGRIND_START_INSTRUMENTATION, with --instr-atstart=no) right
 * before the kernel call and the kernel starts with cold caches, like the model. Between the
 * client request and the kernel only main's few instructions (which may store and reload the
 * request's result in main's frame) and the `call` run, simulated but not collected.
 *
 * Usage (numbers in C notation, e.g. 0x1000):
 *   callgrind_kernels strided N STRIDE PASSES   PASSES passes of N 8-byte loads at
 *                                               base + i*STRIDE, i = 0..N-1
 *   callgrind_kernels lcg MASK COUNT SEED       COUNT steps of x = x*A + C (64-bit, Knuth's
 *                                               MMIX constants, x starts at SEED), each a load
 *                                               and a store of 8 bytes at base + ((x >> 24) & MASK)
 *                                               (unaligned: some straddle two lines)
 * Output, one line: "base=0x... ret_slot=0x... code=0x..." where base is the buffer start the
 * kernel walks (a calloc buffer rounded up to 4 KiB), ret_slot the kernel's return-address slot
 * and code the kernel's entry address (the test replays its instruction lines, which share LL).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

/* An 8-byte integer that may sit at any address. */
typedef uint64_t __attribute__((aligned(1), may_alias)) u64u;

/* The stack pointer, read from the register (no memory access). */
static inline uintptr_t stack_pointer(void)
{
    uintptr_t sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    return sp;
}

/* PASSES passes of N 8-byte loads at base + i*stride. */
__attribute__((noinline)) uintptr_t isim_strided(const unsigned char *base, uint64_t n,
                                                 uint64_t stride, uint64_t passes)
{
    uint64_t sum = 0;
    for (uint64_t p = 0; p < passes; p++) {
        const unsigned char *q = base;
        for (uint64_t i = 0; i < n; i++) {
            sum += *(const volatile u64u *)q;
            q += stride;
        }
    }
    /* Keep the loads without storing the sum anywhere. */
    __asm__ volatile("" : : "r"(sum));
    return stack_pointer();
}

/* COUNT read-modify-writes of 8 bytes at pseudo-random offsets (x >> 24) & mask. */
__attribute__((noinline)) uintptr_t isim_lcg(unsigned char *base, uint64_t mask, uint64_t count,
                                             uint64_t x)
{
    for (uint64_t k = 0; k < count; k++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        volatile u64u *q = (volatile u64u *)(base + ((x >> 24) & mask));
        *q = *q + 1;
    }
    return stack_pointer();
}

static uint64_t arg(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "not a number: %s\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "strided") != 0 && strcmp(argv[1], "lcg") != 0)) {
        fprintf(stderr, "usage: %s strided N STRIDE PASSES | lcg MASK COUNT SEED\n", argv[0]);
        return 2;
    }
    int strided = strcmp(argv[1], "strided") == 0;
    uint64_t a = arg(argv[2]), b = arg(argv[3]), c = arg(argv[4]);
    /* Bytes the kernel may touch from base. */
    uint64_t span = strided ? a * b + 8 : a + 8;
    unsigned char *buf = calloc(span + 4096, 1);
    if (buf == NULL) {
        perror("calloc");
        return 1;
    }
    unsigned char *base = (unsigned char *)(((uintptr_t)buf + 4095) & ~(uintptr_t)4095);

    CALLGRIND_START_INSTRUMENTATION;
    uintptr_t ret_slot = strided ? isim_strided(base, a, b, c) : isim_lcg(base, a, b, c);
    CALLGRIND_STOP_INSTRUMENTATION;

    uintptr_t code = strided ? (uintptr_t)isim_strided : (uintptr_t)isim_lcg;
    printf("base=%#lx ret_slot=%#lx code=%#lx\n", (unsigned long)(uintptr_t)base,
           (unsigned long)ret_slot, (unsigned long)code);
    free(buf);
    return 0;
}
