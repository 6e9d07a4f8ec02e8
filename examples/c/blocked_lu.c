/* blocked_lu.c: a right-looking blocked LU factorisation (no pivoting) of an N x N matrix in
 * B x B blocks, parallel over the blocks of each step with a barrier between phases.
 *
 * In step k the thread that owns block (k, k) factorises it; after a barrier, the blocks of
 * row k and column k are updated by their owners; after another barrier every trailing block
 * (i, j), i, j > k, gets A[i][j] -= A[i][k] * A[k][j] from its owner (block-cyclic: owner =
 * (i * nb + j) % P). Every inner loop runs B iterations (16 by default), so a branch
 * predictor that cannot learn a 16-iteration loop mispredicts every loop exit — the case a
 * TAGE-class predictor fixes.
 *
 * usage: blocked_lu [-t THREADS] [-n N] [-b B]   (defaults 4 threads, N = 128, B = 16)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, N = 128, B = 16, NB;
static double *A;
static pthread_barrier_t bar;

#define AT(i, j) A[(long)(i) * N + (j)]

static int owner(int bi, int bj) { return (bi * NB + bj) % P; }

/* Unblocked LU of the diagonal block starting at (k0, k0). */
__attribute__((noinline)) static void factor_diag(int k0)
{
    for (int k = k0; k < k0 + B; k++)
        for (int i = k + 1; i < k0 + B; i++) {
            AT(i, k) /= AT(k, k);
            for (int j = k + 1; j < k0 + B; j++)
                AT(i, j) -= AT(i, k) * AT(k, j);
        }
}

/* Row-panel block (k0, j0): solve with the unit lower triangle of the diagonal block. */
__attribute__((noinline)) static void update_row_block(int k0, int j0)
{
    for (int k = k0; k < k0 + B; k++)
        for (int i = k + 1; i < k0 + B; i++)
            for (int j = j0; j < j0 + B; j++)
                AT(i, j) -= AT(i, k) * AT(k, j);
}

/* Column-panel block (i0, k0): solve with the upper triangle of the diagonal block. */
__attribute__((noinline)) static void update_col_block(int i0, int k0)
{
    for (int k = k0; k < k0 + B; k++)
        for (int i = i0; i < i0 + B; i++) {
            AT(i, k) /= AT(k, k);
            for (int j = k + 1; j < k0 + B; j++)
                AT(i, j) -= AT(i, k) * AT(k, j);
        }
}

/* Trailing block (i0, j0) -= (i0, k0) x (k0, j0): three loops of B iterations. */
__attribute__((noinline)) static void update_trailing(int i0, int j0, int k0)
{
    for (int i = i0; i < i0 + B; i++)
        for (int k = k0; k < k0 + B; k++) {
            double a = AT(i, k);
            for (int j = j0; j < j0 + B; j++)
                AT(i, j) -= a * AT(k, j);
        }
}

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    for (int kb = 0; kb < NB; kb++) {
        int k0 = kb * B;
        if (owner(kb, kb) == me)
            factor_diag(k0);
        pthread_barrier_wait(&bar);
        for (int b = kb + 1; b < NB; b++) {
            if (owner(kb, b) == me)
                update_row_block(k0, b * B);
            if (owner(b, kb) == me)
                update_col_block(b * B, k0);
        }
        pthread_barrier_wait(&bar);
        for (int bi = kb + 1; bi < NB; bi++)
            for (int bj = kb + 1; bj < NB; bj++)
                if (owner(bi, bj) == me)
                    update_trailing(bi * B, bj * B, k0);
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:n:b:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') N = atoi(optarg);
        else if (c == 'b') B = atoi(optarg);
        else { fprintf(stderr, "usage: blocked_lu [-t THREADS] [-n N] [-b B]\n"); return 2; }
    }
    if (P < 1 || B < 1 || N < B || N % B != 0) {
        fprintf(stderr, "blocked_lu: need THREADS >= 1 and N a multiple of B\n");
        return 2;
    }
    NB = N / B;
    A = malloc(sizeof(double) * (long)N * N);
    if (!A) { perror("malloc"); return 1; }
    /* Diagonally dominant, so no pivoting is needed. */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            AT(i, j) = (i == j) ? 2.0 * N : 1.0 / (1 + i + j);
    pthread_barrier_init(&bar, NULL, P);
    pthread_t *th = malloc(sizeof(pthread_t) * P);
    for (int t = 1; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)(long)t);
    worker((void *)0);
    for (int t = 1; t < P; t++)
        pthread_join(th[t], NULL);
    double tr = 0;
    for (int i = 0; i < N; i++)
        tr += AT(i, i);
    printf("trace of LU: %.6f\n", tr);
    return 0;
}
