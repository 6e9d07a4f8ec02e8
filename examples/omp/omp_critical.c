/* omp_critical.c: a static OpenMP loop whose iterations do private work and then add to a
 * shared sum inside `#pragma omp critical`, and to one of 16 bins under OpenMP locks. Each
 * thread's work is fixed by the static schedule, so the simulated time must not depend on how
 * the host scheduled the traced run.
 *
 * usage: omp_critical [-n ITERATIONS] [-w WORK]   (defaults 2000 iterations, 400 steps;
 *        threads from OMP_NUM_THREADS)
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

int main(int argc, char **argv)
{
    int n = 2000, w = 400, c;
    while ((c = getopt(argc, argv, "n:w:")) != -1) {
        if (c == 'n') n = atoi(optarg);
        else if (c == 'w') w = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-n ITERATIONS] [-w WORK]\n", argv[0]); return 2; }
    }
    long sum = 0, bins[16] = {0};
    omp_lock_t locks[16];
    for (int b = 0; b < 16; b++) omp_init_lock(&locks[b]);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        long v = work(i, w);
#pragma omp critical
        sum += v;
        omp_set_lock(&locks[i % 16]);
        bins[i % 16] += v;
        omp_unset_lock(&locks[i % 16]);
    }
    for (int b = 0; b < 16; b++) omp_destroy_lock(&locks[b]);
    printf("sum %ld bin0 %ld\n", sum, bins[0]);
    return 0;
}
