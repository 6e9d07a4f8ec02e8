/* kernels.c: the host-oracle kernels (benches/host/README.md). One program, one kernel per
 * run, chosen by name:
 *
 *     kernels KERNEL N [FOOTPRINT_BYTES] [THREADS]
 *
 * Each kernel sets up its data, then runs N steps between ISIM_ROI_BEGIN() and ISIM_ROI_END()
 * (so that `isim trace --roi markers` times the same instructions a native run times), and
 * prints the nanoseconds the region took on the host's monotonic clock:  "ns <elapsed>".
 * The inner loops are written with inline assembly where the compiler could otherwise change
 * the kind of work (fold a chain, vectorise a loop, turn a branch into a cmov), so that the
 * instructions traced are the instructions timed and each kernel stays what its name says.
 *
 * Kernels (single-threaded unless said):
 *   add-chain    one dependent chain of adds (one add per cycle: the clock)
 *   add-indep    four independent chains of adds (ILP up to the issue width)
 *   mul-chain    a dependent chain of 64-bit multiplies
 *   div-chain    a dependent chain of 64-bit divides
 *   fp-chain     a dependent chain of double-precision adds
 *   fp-madd      x = x * m + a with x in a register (mulsd, addsd): the chain fp-slot adds memory to
 *   fp-slot      the same with x in a stack slot, as at -O0 or after a spill: load, mulsd, addsd,
 *                store, the next load reading what the store wrote (a dependence through memory)
 *   int-slot     x = x * x (imul) with x in a stack slot: mul-chain through memory
 *   slot-partial int-slot storing 4 bytes and loading 8: the load is not within the store
 *   locked-chain four `lock xadd`s to one word per step, back to back: a locked read-modify-
 *                write's own latency (each performs after the one before it)
 *   locked-work  one `lock xadd` per step beside a chain of FOOTPRINT multiply-adds that
 *                depends on nothing the atomic does: whether younger independent work runs
 *                beside a locked instruction (x86 orders memory around it, not execution)
 *   locked-feed  one `lock xadd` per step whose result starts the next step's chain of
 *                FOOTPRINT multiply-adds, which depends on the chain before: whether the
 *                atomic waits for the older chain (a step = chain + atomic) or not (= chain)
 *   chains       independent chains of FOOTPRINT steps x = x * m + a (imul, add) back to back, N
 *                steps in all: how far the window overlaps one chain with the next (the
 *                scheduler's entries, not only the reorder buffer's, bound it)
 *   chase        pointer chase, one node per 64-byte line, random cyclic order over FOOTPRINT
 *   locked-chase chase with a `lock xadd` each step on a line of a second array of FOOTPRINT
 *                chosen by the loaded pointer: whether the next load waits for the atomic (a
 *                step = a miss and the atomic's miss) or runs past it (= chase)
 *   rand-load    independent loads of random lines of FOOTPRINT (memory-level parallelism)
 *   locked-mlp   rand-load's loads, two a step, with a `lock xadd` on a private word between
 *                them: whether a locked instruction holds younger loads back (its cost is its
 *                own and the misses stay parallel, or each step waits for a miss)
 *   stream-sum   sum of an array of FOOTPRINT bytes, N passes
 *   triad        a[i] = b[i] + k * c[i] over three arrays of FOOTPRINT bytes each, N passes
 *   branch-rand  a branch taken at random (50 %), N times
 *   branch-loop  an inner loop of 16 iterations, N outer iterations
 *   par-compute  THREADS threads, each N/THREADS steps of add-indep (time: the slowest thread's
 *                own, from the start barrier to the end of its work)
 *   par-sum      THREADS threads, each summing its slice of FOOTPRINT bytes, N passes (timed
 *                as par-compute)
 *   false-share  THREADS threads, each adding 1 to its own word of one shared line N/THREADS
 *                times (timed as par-compute): the line moves between the cores at each store
 *   prodcons     a single-producer single-consumer ring of 256 items, N items, each costing
 *                both sides a chain of 16 multiply-adds: THREADS 1 does both sides in turn,
 *                THREADS 2 produces on one thread and consumes on the other (timed as
 *                par-compute)
 *   pingpong     two threads hand a counter back and forth on one cache line N times
 *
 * and realcode.c's kernels (plain C, built at -O2 into `kernels` and at -O0 into `kernels-O0`).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "isim.h"

static long N;
static size_t FOOT;
static int THREADS = 1;
volatile uint64_t sink; /* also realcode.c's */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Memory in 2 MiB pages where the kernel gives them (the simulator models no TLB). */
void *big_alloc(size_t bytes)
{
    size_t align = 2u << 20;
    size_t sz = (bytes + align - 1) / align * align;
    void *p = NULL;
    if (posix_memalign(&p, align, sz) != 0) {
        fprintf(stderr, "out of memory (%zu bytes)\n", sz);
        exit(1);
    }
    madvise(p, sz, MADV_HUGEPAGE);
    memset(p, 0, sz);
    return p;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
uint64_t next_rand(void)
{
    /* SplitMix64 */
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- compute kernels: 8 operations per iteration ---- */

static void add_chain(long n)
{
    uint64_t x = 1;
    for (long i = 0; i < n; i++)
        __asm__ volatile("add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                         "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0"
                         : "+r"(x));
    sink = x;
}

static void add_indep_n(long n, uint64_t *out)
{
    uint64_t a = 1, b = 2, c = 3, d = 4;
    for (long i = 0; i < n; i++)
        __asm__ volatile("add %0, %0\n\tadd %1, %1\n\tadd %2, %2\n\tadd %3, %3\n\t"
                         "add %0, %0\n\tadd %1, %1\n\tadd %2, %2\n\tadd %3, %3"
                         : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
    *out = a + b + c + d;
}

static void mul_chain(long n)
{
    uint64_t x = 3;
    for (long i = 0; i < n; i++)
        __asm__ volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
                         "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
                         : "+r"(x));
    sink = x;
}

static void div_chain(long n)
{
    /* rax / 3 with rdx cleared each time: the quotient feeds the next divide. */
    uint64_t x = 0xFFFFFFFFFFFFull, d = 3, big = 1ull << 40;
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < 8; k++) {
            __asm__ volatile("xor %%edx, %%edx\n\tdiv %1\n\tor %2, %%rax"
                             : "+a"(x)
                             : "r"(d), "r"(big)
                             : "rdx", "cc");
        }
    }
    sink = x;
}

static void fp_chain(long n)
{
    double x = 1.0, y = 1e-9;
    for (long i = 0; i < n; i++)
        __asm__ volatile("addsd %1, %0\n\taddsd %1, %0\n\taddsd %1, %0\n\taddsd %1, %0\n\t"
                         "addsd %1, %0\n\taddsd %1, %0\n\taddsd %1, %0\n\taddsd %1, %0"
                         : "+x"(x)
                         : "x"(y));
    sink = (uint64_t)x;
}

/* Dependences through memory: one stack slot read, changed and written back each step. */
static void fp_madd(long n)
{
    double x = 1.0, m = 1.0000001, a = 0.5;
    for (long i = 0; i < n; i++)
        __asm__ volatile("mulsd %1, %0\n\taddsd %2, %0" : "+x"(x) : "x"(m), "x"(a));
    sink = (uint64_t)x;
}

static void fp_slot(long n)
{
    volatile double x = 1.0;
    double m = 1.0000001, a = 0.5;
    for (long i = 0; i < n; i++)
        __asm__ volatile("movsd %0, %%xmm0\n\tmulsd %1, %%xmm0\n\taddsd %2, %%xmm0\n\t"
                         "movsd %%xmm0, %0"
                         : "+m"(x)
                         : "x"(m), "x"(a)
                         : "xmm0");
    sink = (uint64_t)x;
}

static void int_slot(long n)
{
    volatile uint64_t x = 3;
    for (long i = 0; i < n; i++)
        __asm__ volatile("mov %0, %%rax\n\timul %%rax, %%rax\n\tmov %%rax, %0" : "+m"(x) : : "rax");
    sink = x;
}

static void slot_partial(long n)
{
    volatile uint64_t x = 3;
    for (long i = 0; i < n; i++)
        __asm__ volatile("mov %0, %%rax\n\timul %%rax, %%rax\n\tmov %%eax, %0" : "+m"(x) : : "rax");
    sink = x;
}

static void locked_chain(long n)
{
    volatile uint64_t word = 0;
    uint64_t one = 1;
    for (long i = 0; i < n; i++)
        __asm__ volatile("lock xadd %0, %1\n\tlock xadd %0, %1\n\t"
                         "lock xadd %0, %1\n\tlock xadd %0, %1"
                         : "+r"(one), "+m"(word));
    sink = word + one;
}

static void locked_work(long n, long w)
{
    volatile uint64_t word = 0;
    uint64_t acc = 0, m = 6364136223846793005ULL, a = 1442695040888963407ULL;
    for (long i = 0; i < n; i++) {
        uint64_t x = (uint64_t)i, one = 1;
        __asm__ volatile("lock xadd %0, %1" : "+r"(one), "+m"(word));
        for (long j = 0; j < w; j++)
            __asm__ volatile("imul %1, %0\n\tadd %2, %0" : "+r"(x) : "r"(m), "r"(a));
        acc ^= x;
    }
    sink = acc + word;
}

static void locked_feed(long n, long w)
{
    volatile uint64_t word = 0;
    uint64_t x = 1, m = 6364136223846793005ULL, a = 1442695040888963407ULL;
    for (long i = 0; i < n; i++) {
        uint64_t one = 1;
        __asm__ volatile("lock xadd %0, %1" : "+r"(one), "+m"(word));
        x += one;
        for (long j = 0; j < w; j++)
            __asm__ volatile("imul %1, %0\n\tadd %2, %0" : "+r"(x) : "r"(m), "r"(a));
    }
    sink = x + word;
}

static void chains(long n, long w)
{
    uint64_t acc = 0, m = 6364136223846793005ULL, a = 1442695040888963407ULL;
    for (long i = 0; i < n / w; i++) {
        uint64_t x = (uint64_t)i;
        for (long j = 0; j < w; j++)
            __asm__ volatile("imul %1, %0\n\tadd %2, %0" : "+r"(x) : "r"(m), "r"(a));
        acc += x & 0xff;
    }
    sink = acc;
}

/* ---- memory kernels ---- */

static void **chase_setup(size_t foot)
{
    size_t lines = foot / 64;
    char *base = big_alloc(foot);
    size_t *perm = malloc(lines * sizeof *perm);
    for (size_t i = 0; i < lines; i++)
        perm[i] = i;
    /* Sattolo: one cycle through every line. */
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_rand() % i;
        size_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(void **)(base + perm[i] * 64) = base + perm[(i + 1) % lines] * 64;
    free(perm);
    return (void **)base;
}

static void chase(void **p, long n)
{
    for (long i = 0; i < n; i++)
        p = (void **)*p;
    sink = (uint64_t)p;
}

static void rand_load(uint64_t *a, size_t words, long n)
{
    /* Addresses from an LCG, not from loaded data: the loads are independent. */
    uint64_t s = 0, x = 12345, mask = words - 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s += a[(x >> 20) & mask];
    }
    sink = s;
}

static void locked_chase(void **p, uint64_t *b, size_t lines, long n)
{
    uint64_t one = 1;
    for (long i = 0; i < n; i++) {
        p = (void **)*p;
        uint64_t *w = &b[(((uint64_t)p >> 6) & (lines - 1)) * 8];
        __asm__ volatile("lock xadd %0, %1" : "+r"(one), "+m"(*w) : : "memory");
    }
    sink = (uint64_t)p + one;
}

static void locked_mlp(uint64_t *a, size_t words, long n)
{
    volatile uint64_t word = 0;
    uint64_t s = 0, x = 12345, mask = words - 1, one = 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s += a[(x >> 20) & mask];
        __asm__ volatile("lock xadd %0, %1" : "+r"(one), "+m"(word) : : "memory");
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s += a[(x >> 20) & mask];
    }
    sink = s + one + word;
}

static void stream_sum(const uint64_t *a, size_t words, long passes, uint64_t *out)
{
    uint64_t s = 0;
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < words; i++)
            __asm__ volatile("add (%1,%2,8), %0" : "+r"(s) : "r"(a), "r"(i) : "memory");
    *out = s;
}

static void triad(double *a, const double *b, const double *c, size_t n, long passes)
{
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < n; i++) {
            double t;
            __asm__ volatile("movsd (%2,%3,8), %0\n\tmulsd %4, %0\n\taddsd (%1,%3,8), %0"
                             : "=&x"(t)
                             : "r"(b), "r"(c), "r"(i), "x"(3.0)
                             : "memory");
            a[i] = t;
        }
}

/* ---- branches ---- */

static void branch_rand(const uint8_t *bits, size_t len, long n)
{
    uint64_t taken = 0;
    for (long i = 0; i < n; i++) {
        __asm__ volatile("cmpb $0, (%1,%2)\n\tje 1f\n\tinc %0\n1:"
                         : "+r"(taken)
                         : "r"(bits), "r"((size_t)i & (len - 1))
                         : "cc", "memory");
    }
    sink = taken;
}

static void branch_loop(long n)
{
    uint64_t s = 0;
    for (long i = 0; i < n; i++) {
        __asm__ volatile("mov $16, %%ecx\n1:\tadd %%rcx, %0\n\tdec %%ecx\n\tjnz 1b"
                         : "+r"(s)
                         :
                         : "rcx", "cc");
    }
    sink = s;
}

/* ---- threads ---- */

struct part {
    long steps;
    const uint64_t *a;
    size_t words;
    uint64_t out;
    double ns; /* this thread's own time from the start barrier to the end of its work */
    char pad[64];
};

static pthread_barrier_t start;

static void *compute_worker(void *arg)
{
    struct part *p = arg;
    pthread_barrier_wait(&start);
    double t0 = now_ns();
    add_indep_n(p->steps, &p->out);
    p->ns = now_ns() - t0;
    return NULL;
}

static void *sum_worker(void *arg)
{
    struct part *p = arg;
    pthread_barrier_wait(&start);
    double t0 = now_ns();
    stream_sum(p->a, p->words, p->steps, &p->out);
    p->ns = now_ns() - t0;
    return NULL;
}

static _Alignas(64) volatile uint64_t turn;

static void *pong(void *arg)
{
    long n = *(long *)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < n; i++) {
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 2 * (uint64_t)i + 1)
            ;
        __atomic_store_n(&turn, 2 * (uint64_t)i + 2, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* false-share: each thread adds 1 to its own word THREADS times fewer times than one thread
 * alone would; the words share one line, which moves between the cores at every store. */
static struct {
    _Alignas(64) volatile uint64_t word[8];
} shared_line;

static void *false_share_worker(void *arg)
{
    struct part *p = arg;
    volatile uint64_t *w = &shared_line.word[p->words];
    pthread_barrier_wait(&start);
    double t0 = now_ns();
    for (long i = 0; i < p->steps; i++)
        *w += 1;
    p->ns = now_ns() - t0;
    return NULL;
}

/* prodcons: a single-producer single-consumer ring of RING items; each item costs both sides
 * the same chain of work (work_item). Alone, one thread produces and consumes each item in
 * turn; with two, thread 0 produces and thread 1 consumes, each waiting (pause) only when the
 * ring is full or empty. */
#define RING 256
static struct {
    _Alignas(64) volatile uint64_t head; /* items produced */
    _Alignas(64) volatile uint64_t tail; /* items consumed */
    _Alignas(64) uint64_t slot[RING];
} ring;

static uint64_t work_item(uint64_t x)
{
    for (int k = 0; k < 16; k++)
        x = x * 0x9E3779B97F4A7C15ull + 7;
    return x;
}

static void *prodcons_worker(void *arg)
{
    struct part *p = arg;
    long n = p->steps;
    uint64_t acc = 0;
    pthread_barrier_wait(&start);
    double t0 = now_ns();
    if (THREADS == 1) {
        for (long i = 0; i < n; i++) {
            ring.slot[i % RING] = work_item((uint64_t)i);
            acc += work_item(ring.slot[i % RING]);
        }
    } else if (p->words == 0) {
        for (long i = 0; i < n; i++) {
            uint64_t v = work_item((uint64_t)i);
            while ((uint64_t)i - __atomic_load_n(&ring.tail, __ATOMIC_ACQUIRE) >= RING)
                __builtin_ia32_pause();
            ring.slot[i % RING] = v;
            __atomic_store_n(&ring.head, (uint64_t)i + 1, __ATOMIC_RELEASE);
        }
    } else {
        for (long i = 0; i < n; i++) {
            while (__atomic_load_n(&ring.head, __ATOMIC_ACQUIRE) <= (uint64_t)i)
                __builtin_ia32_pause();
            uint64_t v = ring.slot[i % RING];
            __atomic_store_n(&ring.tail, (uint64_t)i + 1, __ATOMIC_RELEASE);
            acc += work_item(v);
        }
    }
    p->out = acc;
    p->ns = now_ns() - t0;
    return NULL;
}

/* Thread i runs on host CPU i (modulo the CPUs there are): left to itself, the kernel often
 * starts the second thread on the first one's CPU and moves it milliseconds later. */
static void pin(pthread_t th, int i)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(i % (ncpu > 0 ? ncpu : 1)), &set);
    pthread_setaffinity_np(th, sizeof set, &set);
}

static double run_threads(void *(*fn)(void *), struct part *parts, int t)
{
    pthread_t tid[64];
    pthread_barrier_init(&start, NULL, (unsigned)t);
    pin(pthread_self(), 0);
    for (int i = 1; i < t; i++) {
        pthread_create(&tid[i], NULL, fn, &parts[i]);
        pin(tid[i], i);
    }
    ISIM_ROI_BEGIN();
    fn(&parts[0]);
    for (int i = 1; i < t; i++)
        pthread_join(tid[i], NULL);
    ISIM_ROI_END();
    /* The parallel phase: the slowest thread's own time from the start barrier to the end of
     * its work. Not the region's wall time, which adds the milliseconds the hypervisor takes
     * to wake a halted vCPU for the barrier and the join (a property of the VM, not of the
     * cores; isim's barrier and join cost what the replayed threads' times say). */
    double worst = 0;
    for (int i = 0; i < t; i++)
        if (parts[i].ns > worst)
            worst = parts[i].ns;
    return worst;
}

static double region_ns;

/* realcode.c's kernels run here, between the same marks as TIMED's. */
static void time_region(void (*run)(void *), void *arg)
{
    ISIM_ROI_BEGIN();
    double t0 = now_ns();
    run(arg);
    double t1 = now_ns();
    ISIM_ROI_END();
    region_ns = t1 - t0;
}

int real_kernel(const char *k, long n, size_t foot, void (*timed)(void (*)(void *), void *));

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s KERNEL N [FOOTPRINT_BYTES] [THREADS]\n", argv[0]);
        return 2;
    }
    const char *k = argv[1];
    N = atol(argv[2]);
    FOOT = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
    THREADS = argc > 4 ? atoi(argv[4]) : 1;
    if (N <= 0 || THREADS < 1 || THREADS > 64) {
        fprintf(stderr, "bad N or THREADS\n");
        return 2;
    }
    double t0, t1, dt;
    uint64_t out = 0;
#define TIMED(stmt)                                                                            \
    do {                                                                                       \
        ISIM_ROI_BEGIN();                                                                      \
        t0 = now_ns();                                                                         \
        stmt;                                                                                  \
        t1 = now_ns();                                                                         \
        ISIM_ROI_END();                                                                        \
        dt = t1 - t0;                                                                          \
    } while (0)
    if (!strcmp(k, "add-chain")) {
        TIMED(add_chain(N));
    } else if (!strcmp(k, "add-indep")) {
        TIMED(add_indep_n(N, &out));
    } else if (!strcmp(k, "mul-chain")) {
        TIMED(mul_chain(N));
    } else if (!strcmp(k, "div-chain")) {
        TIMED(div_chain(N));
    } else if (!strcmp(k, "fp-chain")) {
        TIMED(fp_chain(N));
    } else if (!strcmp(k, "fp-madd")) {
        TIMED(fp_madd(N));
    } else if (!strcmp(k, "fp-slot")) {
        TIMED(fp_slot(N));
    } else if (!strcmp(k, "int-slot")) {
        TIMED(int_slot(N));
    } else if (!strcmp(k, "slot-partial")) {
        TIMED(slot_partial(N));
    } else if (!strcmp(k, "locked-chain")) {
        TIMED(locked_chain(N));
    } else if (!strcmp(k, "locked-work")) {
        TIMED(locked_work(N, (long)FOOT));
    } else if (!strcmp(k, "locked-feed")) {
        TIMED(locked_feed(N, (long)FOOT));
    } else if (!strcmp(k, "chains")) {
        if (FOOT < 1) { fprintf(stderr, "chains needs FOOTPRINT (the chain length) >= 1\n"); return 2; }
        TIMED(chains(N, (long)FOOT));
    } else if (!strcmp(k, "chase")) {
        if (FOOT < 4096) { fprintf(stderr, "chase needs FOOTPRINT >= 4096\n"); return 2; }
        void **p = chase_setup(FOOT);
        chase(p, (long)(FOOT / 64)); /* one lap to warm the caches, outside the region */
        TIMED(chase(p, N));
    } else if (!strcmp(k, "locked-chase")) {
        if (FOOT < 4096 || (FOOT & (FOOT - 1))) { fprintf(stderr, "locked-chase needs a power-of-two FOOTPRINT >= 4096\n"); return 2; }
        void **p = chase_setup(FOOT);
        uint64_t *b = big_alloc(FOOT);
        chase(p, (long)(FOOT / 64));
        TIMED(locked_chase(p, b, FOOT / 64, N));
    } else if (!strcmp(k, "locked-mlp")) {
        size_t words = FOOT / 8;
        if (words == 0 || (words & (words - 1))) { fprintf(stderr, "locked-mlp needs a power-of-two FOOTPRINT\n"); return 2; }
        uint64_t *a = big_alloc(FOOT);
        TIMED(locked_mlp(a, words, N));
    } else if (!strcmp(k, "rand-load")) {
        size_t words = FOOT / 8;
        if (words == 0 || (words & (words - 1))) { fprintf(stderr, "rand-load needs a power-of-two FOOTPRINT\n"); return 2; }
        uint64_t *a = big_alloc(FOOT);
        TIMED(rand_load(a, words, N));
    } else if (!strcmp(k, "stream-sum")) {
        size_t words = FOOT / 8;
        uint64_t *a = big_alloc(FOOT);
        stream_sum(a, words, 1, &out);
        TIMED(stream_sum(a, words, N, &out));
    } else if (!strcmp(k, "triad")) {
        size_t n = FOOT / 8;
        double *a = big_alloc(FOOT), *b = big_alloc(FOOT), *c = big_alloc(FOOT);
        triad(a, b, c, n, 1);
        TIMED(triad(a, b, c, n, N));
    } else if (!strcmp(k, "branch-rand")) {
        size_t len = 1 << 16;
        uint8_t *bits = malloc(len);
        for (size_t i = 0; i < len; i++)
            bits[i] = next_rand() & 1;
        TIMED(branch_rand(bits, len, N));
    } else if (!strcmp(k, "branch-loop")) {
        TIMED(branch_loop(N));
    } else if (!strcmp(k, "par-compute")) {
        struct part parts[64];
        for (int i = 0; i < THREADS; i++)
            parts[i].steps = N / THREADS;
        dt = run_threads(compute_worker, parts, THREADS);
    } else if (!strcmp(k, "par-sum")) {
        struct part parts[64];
        size_t words = FOOT / 8;
        uint64_t *a = big_alloc(FOOT);
        stream_sum(a, words, 1, &out);
        for (int i = 0; i < THREADS; i++) {
            parts[i].steps = N;
            parts[i].a = a + words / THREADS * i;
            parts[i].words = words / THREADS;
        }
        dt = run_threads(sum_worker, parts, THREADS);
    } else if (!strcmp(k, "false-share")) {
        struct part parts[64];
        if (THREADS > 8) { fprintf(stderr, "false-share takes at most 8 threads\n"); return 2; }
        for (int i = 0; i < THREADS; i++) {
            parts[i].steps = N / THREADS;
            parts[i].words = (size_t)i;
        }
        dt = run_threads(false_share_worker, parts, THREADS);
    } else if (!strcmp(k, "prodcons")) {
        struct part parts[64];
        if (THREADS > 2) { fprintf(stderr, "prodcons takes 1 or 2 threads\n"); return 2; }
        for (int i = 0; i < THREADS; i++) {
            parts[i].steps = N;
            parts[i].words = (size_t)i;
        }
        dt = run_threads(prodcons_worker, parts, THREADS);
        out = parts[THREADS - 1].out;
    } else if (!strcmp(k, "pingpong")) {
        pthread_t tid;
        long n = N;
        pthread_barrier_init(&start, NULL, 2);
        pin(pthread_self(), 0);
        pthread_create(&tid, NULL, pong, &n);
        pin(tid, 1);
        pthread_barrier_wait(&start);
        ISIM_ROI_BEGIN();
        t0 = now_ns();
        for (long i = 0; i < n; i++) {
            __atomic_store_n(&turn, 2 * (uint64_t)i + 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 2 * (uint64_t)i + 2)
                ;
        }
        t1 = now_ns();
        ISIM_ROI_END();
        pthread_join(tid, NULL);
        dt = t1 - t0;
    } else {
        int r = real_kernel(k, N, FOOT, time_region);
        if (r == 0) {
            fprintf(stderr, "unknown kernel %s\n", k);
            return 2;
        }
        if (r < 0)
            return 2;
        dt = region_ns;
    }
    sink += out;
    printf("ns %.0f\n", dt);
    return 0;
}
