/* owner_barrier.c: a barrier-synchronised kernel with a deliberate owner-computes imbalance.
 *
 * An LU-like sweep over an N x N matrix: in step k every thread updates the rows i > k that
 * it owns, owner(i) = i % P, and all threads meet at a barrier. The work of row i in step k
 * is proportional to N - k, but thread 0 also owns the pivot row of every step (line marked
 * PLANTED below) and redoes that row's update four times in a private scratch row, so it
 * arrives last at every barrier.
 *
 * usage: owner_barrier [-t THREADS] [-n N]   (defaults 4 threads, N = 96)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isim.h"

static int P = 4, N = 96;
static double *A;
static pthread_barrier_t bar;

/* The measured kernel: one row update against pivot row k, pure arithmetic and loads/stores. */
__attribute__((noinline)) void update_row(int k, double *row)
{
    const double *pivot = &A[k * N];
    double f = row[k] / (pivot[k] + 1.0);
    for (int j = k + 1; j < N; j++)
        row[j] -= f * pivot[j];
}

/* Thread 0's private scratch row for the planted extra work (no other thread touches it). */
static double *scratch;

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    for (int k = 0; k < N - 1; k++) {
        for (int i = k + 1; i < N; i++)
            if (i % P == me)
                update_row(k, &A[i * N]);
        if (me == 0) /* PLANTED: thread 0 redoes the pivot row's update four times */
            for (int r = 0; r < 4; r++)
                update_row(k, scratch);
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') N = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-n N]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256 || N < 2) { fprintf(stderr, "bad -t or -n\n"); return 2; }
    A = malloc(sizeof(double) * N * N);
    scratch = calloc(N, sizeof(double));
    for (int i = 0; i < N * N; i++)
        A[i] = (double)((i * 7919) % 101) + 1.0;
    pthread_barrier_init(&bar, NULL, P);
    pthread_t th[256];
    ISIM_ROI_BEGIN();
    for (long t = 1; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    worker((void *)0);
    for (int t = 1; t < P; t++)
        pthread_join(th[t], NULL);
    ISIM_ROI_END();
    double s = 0;
    for (int i = 0; i < N * N; i++)
        s += A[i];
    printf("checksum %.6e\n", s);
    free(A);
    free(scratch);
    return 0;
}
