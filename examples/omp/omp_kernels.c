/* omp_kernels.c: OpenMP constructs as compiled by gcc -fopenmp (libgomp), one kernel per run,
 * each repeated REPS times (-r), so that there are several parallel regions.
 *
 *   static    parallel for schedule(static) with a triangular cost: iteration i costs ~i
 *             units (line marked PLANTED), so the last thread has the most work.
 *   dynamic   parallel for schedule(dynamic, 4) over the same triangle.
 *   reduction parallel for reduction(+:sum).
 *   critical  a parallel region: unnamed critical, named critical(acc), explicit barrier.
 *   barrier   a parallel region where thread 0 works longer (PLANTED_B) before an explicit
 *             omp barrier, then all work again.
 *   nowait    a parallel region: two omp for nowait loops, then one omp for (with barrier).
 *   single    a parallel region: single (with its barrier), then omp for.
 *   locks     a parallel region: omp_set_lock / omp_unset_lock around a shared update.
 *   tasks     a parallel region: single creates TASKS explicit tasks of unit(TASK_UNITS) each;
 *             the team runs them (most inside the single's barrier).
 *
 * Per team thread (THREADS threads, every kernel REPS times), the synchronization isim counts:
 *   every kernel: 2 barriers per parallel region (the fork and the implicit end barrier);
 *   critical: + 1 barrier, 2 locks and 2 unlocks per region;
 *   barrier:  + 1 barrier per region;  nowait: + 1 barrier (the last omp for) per region;
 *   single:   + 2 barriers (single's, the omp for's) per region;  locks: 1 lock, 1 unlock;
 *   tasks:    + 1 barrier (single's) per region;
 *   dynamic:  + 0 (the parallel loop's end is the region's end barrier).
 * Thread 0 creates THREADS - 1 threads (libgomp's pool, in the first region) and joins none.
 *
 * usage: omp_kernels [-t THREADS] [-k KERNEL] [-r REPS]   (defaults 4, static, 5)
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 2000
#define TASKS 64
#define TASK_UNITS 2000
static double a[N];
static omp_lock_t lock;

__attribute__((noinline)) double cost(int i)
{
    double x = 0;
    for (int j = 0; j < i / 2; j++) /* PLANTED: iteration i costs ~i units */
        x += j * 0.5;
    return x;
}

__attribute__((noinline)) double unit(int n)
{
    double x = 0;
    for (int j = 0; j < n; j++)
        x += j * 0.25;
    return x;
}

int main(int argc, char **argv)
{
    int P = 4, R = 5, c;
    const char *k = "static";
    while ((c = getopt(argc, argv, "t:k:r:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'k') k = optarg;
        else if (c == 'r') R = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-k KERNEL] [-r REPS]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256 || R < 1) { fprintf(stderr, "bad -t or -r\n"); return 2; }
    omp_set_num_threads(P);
    omp_init_lock(&lock);
    double sum = 0, acc = 0;
    for (int r = 0; r < R; r++) {
        if (!strcmp(k, "static")) {
#pragma omp parallel for schedule(static)
            for (int i = 0; i < N; i++)
                a[i] = cost(i);
        } else if (!strcmp(k, "dynamic")) {
#pragma omp parallel for schedule(dynamic, 4)
            for (int i = 0; i < N; i++)
                a[i] = cost(i);
        } else if (!strcmp(k, "reduction")) {
#pragma omp parallel for reduction(+ : sum)
            for (int i = 0; i < N; i++)
                sum += unit(100) + i;
        } else if (!strcmp(k, "critical")) {
#pragma omp parallel
            {
                double x = unit(2000 + 500 * omp_get_thread_num());
#pragma omp critical
                sum += x;
#pragma omp critical(acc)
                acc += 1;
#pragma omp barrier
                x = unit(1000);
            }
        } else if (!strcmp(k, "barrier")) {
#pragma omp parallel
            {
                double x = unit(omp_get_thread_num() == 0 ? 40000 : 10000); /* PLANTED_B */
#pragma omp barrier
                x += unit(5000);
                a[omp_get_thread_num()] = x;
            }
        } else if (!strcmp(k, "nowait")) {
#pragma omp parallel
            {
#pragma omp for nowait
                for (int i = 0; i < N; i++)
                    a[i] = unit(20);
#pragma omp for nowait
                for (int i = 0; i < N; i++)
                    a[i] += unit(10);
#pragma omp for
                for (int i = 0; i < N; i++)
                    a[i] *= 0.5;
            }
        } else if (!strcmp(k, "single")) {
#pragma omp parallel
            {
#pragma omp single
                acc += unit(5000);
#pragma omp for
                for (int i = 0; i < N; i++)
                    a[i] = unit(20) + acc;
            }
        } else if (!strcmp(k, "tasks")) {
#pragma omp parallel
            {
#pragma omp single
                for (int t = 0; t < TASKS; t++) {
#pragma omp task firstprivate(t)
                    a[t] = unit(TASK_UNITS);
                }
            }
        } else if (!strcmp(k, "locks")) {
#pragma omp parallel
            {
                double x = unit(3000);
                omp_set_lock(&lock);
                sum += x;
                omp_unset_lock(&lock);
            }
        } else {
            fprintf(stderr, "unknown kernel %s\n", k);
            return 2;
        }
    }
    double s = sum + acc;
    for (int i = 0; i < N; i++)
        s += a[i];
    printf("checksum %.6e\n", s);
    return 0;
}
