/* realcode.c: host-oracle kernels written as real code is written (benches/host/README.md).
 *
 * kernels.c's kernels are inline assembly, each one behaviour; these are plain C, left to the
 * compiler, so that the oracle also sees what real programs hand a core: values kept in memory
 * because of aliasing, library calls, data-dependent branches, strided and transposed access,
 * the inner loops of classic parallel kernels. run.sh builds this file twice, at -O2 into
 * `kernels` and at -O0 into `kernels-O0` (every local in memory: the code a debug build runs),
 * beside kernels.c at -O2 in both. `kernels KERNEL N [FOOTPRINT]` reaches them through
 * real_kernel(); each sets its data up outside the timed region, as kernels.c's do.
 *
 *   hist       byte histogram h[b]++ over FOOTPRINT bytes of text-like data, N passes
 *   alias-sum  s->sum += a[i]; s->sq += a[i] * a[i] through a pointer that may alias the
 *              array (the compiler keeps both in memory): integer, FOOTPRINT bytes, N passes
 *   alias-fp   the same in double precision
 *   reduce     t += a[i] over FOOTPRINT bytes of doubles, N passes: a floating-point sum whose
 *              adds take their operand from memory (addsd with a memory source, at -O2)
 *   matmul     naive c[i][j] += a[i][k] * b[k][j], n = FOOTPRINT, N times
 *   qsort      libc qsort of N random ints (a comparison function per call)
 *   hash       open-addressing hash table (linear probing) of FOOTPRINT bytes: N inserts, then
 *              2N lookups, half of them absent
 *   list       sum over a linked list of 64-byte nodes in shuffled order, FOOTPRINT bytes,
 *              a branch on each key, N passes
 *   words      word count and per-word hash over FOOTPRINT bytes of text, N passes
 *   colsum     column sums of an n x n row-major double matrix (stride n * 8 bytes),
 *              FOOTPRINT = n, N passes
 *   transpose  b[j][i] = a[i][j], n = FOOTPRINT, N passes
 *   stencil    5-point Jacobi sweeps over an n x n grid, n = FOOTPRINT, N sweeps
 *   lu         LU factorisation without pivoting of an n x n matrix, n = FOOTPRINT, N times
 *   fft        iterative radix-2 complex FFT of FOOTPRINT points (a power of two), N times
 *   radix      LSD radix sort (8-bit digits, 4 passes) of FOOTPRINT / 4 keys, N times
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* from kernels.c */
void *big_alloc(size_t bytes);
uint64_t next_rand(void);
extern volatile uint64_t sink;

struct acc {
    long sum, sq;
};
struct accf {
    double sum, sq;
};

static void hist(const uint8_t *buf, size_t len, uint32_t *h, long passes)
{
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < len; i++)
            h[buf[i]]++;
}

static void alias_sum(struct acc *s, const long *a, size_t n, long passes)
{
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < n; i++) {
            s->sum += a[i];
            s->sq += a[i] * a[i];
        }
}

static void alias_fp(struct accf *s, const double *a, size_t n, long passes)
{
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < n; i++) {
            s->sum += a[i];
            s->sq += a[i] * a[i];
        }
}

static double reduce(const double *a, size_t n, long passes)
{
    double t = 0;
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < n; i++)
            t += a[i];
    return t;
}

static void matmul(double *c, const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t k = 0; k < n; k++)
                c[i * n + j] += a[i * n + k] * b[k * n + j];
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

static uint64_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

/* keys are never 0 (0 marks an empty slot) */
static void hash_insert(uint64_t *t, size_t mask, uint64_t k)
{
    size_t i = hash64(k) & mask;
    while (t[i] != 0 && t[i] != k)
        i = (i + 1) & mask;
    t[i] = k;
}

static int hash_find(const uint64_t *t, size_t mask, uint64_t k)
{
    size_t i = hash64(k) & mask;
    while (t[i] != 0) {
        if (t[i] == k)
            return 1;
        i = (i + 1) & mask;
    }
    return 0;
}

struct node {
    struct node *next;
    long key;
    long pad[6];
};

static long list_sum(const struct node *head, long passes)
{
    long s = 0;
    for (long p = 0; p < passes; p++)
        for (const struct node *q = head; q; q = q->next)
            if (q->key % 3 == 0)
                s += q->key;
            else
                s -= 1;
    return s;
}

static uint64_t words(const char *text, size_t len, long passes, long *count)
{
    uint64_t h = 0;
    long n = 0;
    for (long p = 0; p < passes; p++) {
        int in_word = 0;
        uint64_t wh = 0;
        for (size_t i = 0; i < len; i++) {
            char c = text[i];
            if (c == ' ' || c == '\n') {
                if (in_word) {
                    n++;
                    h ^= wh;
                    in_word = 0;
                }
            } else {
                if (!in_word) {
                    wh = 5381;
                    in_word = 1;
                }
                wh = wh * 33 + (unsigned char)c;
            }
        }
    }
    *count = n;
    return h;
}

static void colsum(const double *a, double *s, size_t n, long passes)
{
    for (long p = 0; p < passes; p++)
        for (size_t j = 0; j < n; j++) {
            double t = 0;
            for (size_t i = 0; i < n; i++)
                t += a[i * n + j];
            s[j] = t;
        }
}

static void transpose(double *b, const double *a, size_t n, long passes)
{
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                b[j * n + i] = a[i * n + j];
}

static void stencil(double *u, double *v, size_t n, long sweeps)
{
    for (long s = 0; s < sweeps; s++) {
        for (size_t i = 1; i + 1 < n; i++)
            for (size_t j = 1; j + 1 < n; j++)
                v[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                       u[i * n + j + 1]);
        double *t = u;
        u = v;
        v = t;
    }
}

static void lu(double *a, size_t n)
{
    for (size_t k = 0; k < n; k++)
        for (size_t i = k + 1; i < n; i++) {
            double l = a[i * n + k] / a[k * n + k];
            a[i * n + k] = l;
            for (size_t j = k + 1; j < n; j++)
                a[i * n + j] -= l * a[k * n + j];
        }
}

static void fft(double *re, double *im, size_t n, const double *wr, const double *wi)
{
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double t = re[i];
            re[i] = re[j];
            re[j] = t;
            t = im[i];
            im[i] = im[j];
            im[j] = t;
        }
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        size_t half = len / 2, step = n / len;
        for (size_t i = 0; i < n; i += len)
            for (size_t k = 0; k < half; k++) {
                double xr = wr[k * step], xi = wi[k * step];
                size_t a = i + k, b = i + k + half;
                double tr = re[b] * xr - im[b] * xi, ti = re[b] * xi + im[b] * xr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
    }
}

static void radix_sort(uint32_t *keys, uint32_t *tmp, size_t n)
{
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++)
            count[(keys[i] >> shift) & 255]++;
        size_t sum = 0;
        for (int d = 0; d < 256; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(keys[i] >> shift) & 255]++] = keys[i];
        uint32_t *t = keys;
        keys = tmp;
        tmp = t;
    }
}

/* Text-like bytes: letters drawn with English-like skew (a few letters most of the time),
 * words of 1-9 letters, spaces and newlines between. */
static void fill_text(char *t, size_t len)
{
    static const char common[] = "etaoinshrdlu";
    size_t i = 0;
    while (i < len) {
        int w = 1 + (int)(next_rand() % 9);
        for (int k = 0; k < w && i < len; k++) {
            uint64_t r = next_rand();
            t[i++] = (r & 3) ? common[(r >> 2) % 12] : (char)('a' + (r >> 8) % 26);
        }
        if (i < len)
            t[i++] = (next_rand() % 12) ? ' ' : '\n';
    }
}

static double *rand_doubles(size_t n)
{
    double *a = big_alloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = (double)(next_rand() % 1000) / 997.0 + 0.5;
    return a;
}

/* Runs kernel k between the caller's timing marks (timed(run, arg) calls run(arg) once in the
 * timed region). Returns 0 if k is not one of this file's kernels, -1 on bad arguments. */
int real_kernel(const char *k, long n, size_t foot, void (*timed)(void (*)(void *), void *));

struct job {
    const char *k;
    long n;
    size_t foot;
    void *p[6];
    size_t m;
};

static void run_job(void *arg)
{
    struct job *j = arg;
    const char *k = j->k;
    long n = j->n;
    if (!strcmp(k, "hist")) {
        hist(j->p[0], j->foot, j->p[1], n);
    } else if (!strcmp(k, "alias-sum")) {
        alias_sum(j->p[1], j->p[0], j->m, n);
    } else if (!strcmp(k, "alias-fp")) {
        alias_fp(j->p[1], j->p[0], j->m, n);
    } else if (!strcmp(k, "reduce")) {
        sink += (uint64_t)reduce(j->p[0], j->m, n);
    } else if (!strcmp(k, "matmul")) {
        for (long r = 0; r < n; r++)
            matmul(j->p[2], j->p[0], j->p[1], j->m);
    } else if (!strcmp(k, "qsort")) {
        qsort(j->p[0], (size_t)n, sizeof(int), cmp_int);
    } else if (!strcmp(k, "hash")) {
        uint64_t *t = j->p[0];
        const uint64_t *keys = j->p[1];
        size_t mask = j->m - 1;
        long found = 0;
        for (long i = 0; i < n; i++)
            hash_insert(t, mask, keys[i]);
        for (long i = 0; i < 2 * n; i++)
            found += hash_find(t, mask, keys[i]);
        sink += (uint64_t)found;
    } else if (!strcmp(k, "list")) {
        sink += (uint64_t)list_sum(j->p[0], n);
    } else if (!strcmp(k, "words")) {
        long c;
        sink += words(j->p[0], j->foot, n, &c) + (uint64_t)c;
    } else if (!strcmp(k, "colsum")) {
        colsum(j->p[0], j->p[1], j->m, n);
    } else if (!strcmp(k, "transpose")) {
        transpose(j->p[1], j->p[0], j->m, n);
    } else if (!strcmp(k, "stencil")) {
        stencil(j->p[0], j->p[1], j->m, n);
    } else if (!strcmp(k, "lu")) {
        for (long r = 0; r < n; r++) {
            memcpy(j->p[1], j->p[0], j->m * j->m * sizeof(double));
            lu(j->p[1], j->m);
        }
    } else if (!strcmp(k, "fft")) {
        for (long r = 0; r < n; r++)
            fft(j->p[0], j->p[1], j->m, j->p[2], j->p[3]);
    } else if (!strcmp(k, "radix")) {
        for (long r = 0; r < n; r++) {
            memcpy(j->p[1], j->p[0], j->m * sizeof(uint32_t));
            radix_sort(j->p[1], j->p[2], j->m);
        }
    }
}

static const char *const names[] = {"hist", "alias-sum", "alias-fp", "reduce", "matmul", "qsort", "hash", "list",
                                    "words", "colsum", "transpose", "stencil", "lu", "fft", "radix"};

int real_kernel(const char *k, long n, size_t foot, void (*timed)(void (*)(void *), void *))
{
    int known = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        known |= !strcmp(k, names[i]);
    if (!known)
        return 0;
    struct job j = {.k = k, .n = n, .foot = foot};
    if (!strcmp(k, "hist") || !strcmp(k, "words")) {
        if (foot < 64) {
            fprintf(stderr, "%s needs FOOTPRINT >= 64\n", k);
            return -1;
        }
        char *t = big_alloc(foot);
        fill_text(t, foot);
        j.p[0] = t;
        j.p[1] = big_alloc(256 * sizeof(uint32_t));
        if (!strcmp(k, "hist"))
            hist(j.p[0], foot, j.p[1], 1);
    } else if (!strcmp(k, "reduce")) {
        j.m = foot / 8;
        if (j.m == 0) {
            fprintf(stderr, "reduce needs FOOTPRINT >= 8\n");
            return -1;
        }
        j.p[0] = rand_doubles(j.m);
    } else if (!strcmp(k, "alias-sum") || !strcmp(k, "alias-fp")) {
        j.m = foot / 8;
        if (j.m == 0) {
            fprintf(stderr, "%s needs FOOTPRINT >= 8\n", k);
            return -1;
        }
        if (!strcmp(k, "alias-sum")) {
            long *a = big_alloc(foot);
            for (size_t i = 0; i < j.m; i++)
                a[i] = (long)(next_rand() % 1000);
            j.p[0] = a;
        } else {
            j.p[0] = rand_doubles(j.m);
        }
        j.p[1] = big_alloc(sizeof(struct acc));
    } else if (!strcmp(k, "matmul")) {
        j.m = foot;
        if (j.m < 2) {
            fprintf(stderr, "matmul needs FOOTPRINT (n) >= 2\n");
            return -1;
        }
        j.p[0] = rand_doubles(j.m * j.m);
        j.p[1] = rand_doubles(j.m * j.m);
        j.p[2] = big_alloc(j.m * j.m * sizeof(double));
    } else if (!strcmp(k, "qsort")) {
        int *a = big_alloc((size_t)n * sizeof(int));
        for (long i = 0; i < n; i++)
            a[i] = (int)(next_rand() & 0x7fffffff);
        j.p[0] = a;
    } else if (!strcmp(k, "hash")) {
        j.m = foot / 8;
        if (j.m < 16 || (j.m & (j.m - 1)) || (size_t)n > j.m / 2) {
            fprintf(stderr, "hash needs a power-of-two FOOTPRINT >= 128 holding 2N keys\n");
            return -1;
        }
        j.p[0] = big_alloc(foot);
        uint64_t *keys = big_alloc(2 * (size_t)n * sizeof(uint64_t));
        for (long i = 0; i < 2 * n; i++)
            keys[i] = next_rand() | 1;
        j.p[1] = keys;
    } else if (!strcmp(k, "list")) {
        size_t m = foot / sizeof(struct node);
        if (m < 2) {
            fprintf(stderr, "list needs FOOTPRINT >= 128\n");
            return -1;
        }
        struct node *nodes = big_alloc(m * sizeof *nodes);
        size_t *order = malloc(m * sizeof *order);
        for (size_t i = 0; i < m; i++)
            order[i] = i;
        for (size_t i = m - 1; i > 0; i--) {
            size_t r = next_rand() % (i + 1), t = order[i];
            order[i] = order[r];
            order[r] = t;
        }
        for (size_t i = 0; i < m; i++) {
            nodes[order[i]].key = (long)(next_rand() % 1000);
            nodes[order[i]].next = i + 1 < m ? &nodes[order[i + 1]] : NULL;
        }
        j.p[0] = &nodes[order[0]];
        free(order);
        sink += (uint64_t)list_sum(j.p[0], 1);
    } else if (!strcmp(k, "colsum") || !strcmp(k, "transpose") || !strcmp(k, "stencil") ||
               !strcmp(k, "lu")) {
        j.m = foot;
        if (j.m < 3) {
            fprintf(stderr, "%s needs FOOTPRINT (n) >= 3\n", k);
            return -1;
        }
        if (!strcmp(k, "lu")) {
            double *a = rand_doubles(j.m * j.m);
            for (size_t i = 0; i < j.m; i++)
                a[i * j.m + i] += (double)j.m; /* diagonally dominant: no pivoting needed */
            j.p[0] = a;
        } else {
            j.p[0] = rand_doubles(j.m * j.m);
        }
        j.p[1] = big_alloc(j.m * j.m * sizeof(double));
        if (!strcmp(k, "stencil"))
            memcpy(j.p[1], j.p[0], j.m * j.m * sizeof(double));
    } else if (!strcmp(k, "fft")) {
        j.m = foot;
        if (j.m < 2 || (j.m & (j.m - 1))) {
            fprintf(stderr, "fft needs a power-of-two FOOTPRINT (points) >= 2\n");
            return -1;
        }
        j.p[0] = rand_doubles(j.m);
        j.p[1] = rand_doubles(j.m);
        double *wr = big_alloc(j.m / 2 * sizeof(double)), *wi = big_alloc(j.m / 2 * sizeof(double));
        for (size_t i = 0; i < j.m / 2; i++) {
            /* cos and sin of x = -2 pi i / m by their Taylor series (no libm; |x| <= pi,
             * 30 terms are plenty) */
            double x = -6.283185307179586 * (double)i / (double)j.m, c = 0, s = 0, term = 1;
            for (int t = 0; t < 30; t++) {
                if (t > 0)
                    term *= x / t;
                if (t % 4 == 0)
                    c += term;
                else if (t % 4 == 1)
                    s += term;
                else if (t % 4 == 2)
                    c -= term;
                else
                    s -= term;
            }
            wr[i] = c;
            wi[i] = s;
        }
        j.p[2] = wr;
        j.p[3] = wi;
    } else if (!strcmp(k, "radix")) {
        j.m = foot / 4;
        if (j.m < 1) {
            fprintf(stderr, "radix needs FOOTPRINT >= 4\n");
            return -1;
        }
        uint32_t *keys = big_alloc(j.m * 4);
        for (size_t i = 0; i < j.m; i++)
            keys[i] = (uint32_t)next_rand();
        j.p[0] = keys;
        j.p[1] = big_alloc(j.m * 4);
        j.p[2] = big_alloc(j.m * 4);
    }
    timed(run_job, &j);
    /* The work was done: what can be checked cheaply is (a kernel the compiler had folded
     * away, or one broken by an edit, would time nothing). */
    int bad = 0;
    if (!strcmp(k, "qsort")) {
        const int *a = j.p[0];
        for (long i = 1; i < n; i++)
            bad |= a[i - 1] > a[i];
    } else if (!strcmp(k, "radix")) {
        const uint32_t *a = j.p[1]; /* four passes end in the copy they started from */
        for (size_t i = 1; i < j.m; i++)
            bad |= a[i - 1] > a[i];
    } else if (!strcmp(k, "hash")) {
        const uint64_t *t = j.p[0], *keys = j.p[1];
        long found = 0;
        for (long i = 0; i < 2 * n; i++)
            found += hash_find(t, j.m - 1, keys[i]);
        bad = found != n; /* the inserted keys, and none of the others (random 64-bit keys) */
    } else if (!strcmp(k, "lu")) {
        /* (L U)[n-1][n-1] is the matrix's element again */
        const double *a = j.p[0], *f = j.p[1];
        size_t m = j.m, r = m - 1;
        double v = f[r * m + r];
        for (size_t q = 0; q < r; q++)
            v += f[r * m + q] * f[q * m + r];
        double want = a[r * m + r], d = v - want;
        bad = (d < 0 ? -d : d) > 1e-9 * (want < 0 ? -want : want);
    }
    if (bad) {
        fprintf(stderr, "%s: the result is wrong\n", k);
        return -1;
    }
    return 1;
}
