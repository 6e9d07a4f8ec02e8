/* l1_miss_stride.c: every thread sums the same number of elements of its own array, but
 * thread t reads every (t + 1)-th double (at most every 8th: one per 64-byte line) of a
 * 512 KiB array, larger than the L1 and within the L2, so the higher threads touch more lines
 * and miss the L1 more (same instruction counts, different misses).
 * lime-corpus: cause=miss section=the barrier
 * usage: l1_miss_stride [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMS (1 << 14)
#define SIZE (1 << 16) /* doubles: 512 KiB */
static int P = 4, R = 3;
/* The barrier on a line of its own: its writes do not take the line of P and R away. */
static pthread_barrier_t bar __attribute__((aligned(64)));
static double out[256];
static double *data[256];

static void *worker(void *arg)
{
    long me = (long)arg;
    long stride = me < 8 ? me + 1 : 8;
    double *d = data[me];
    double x = 0;
    const int reps = R; /* in a register: the sweeps evict R's line from the caches */
    for (int r = 0; r < reps; r++) {
        for (long i = 0; i < ELEMS; i++)
            x += d[(i * stride) & (SIZE - 1)]; /* PLANTED */
        pthread_barrier_wait(&bar);
    }
    out[me] = x;
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:r:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'r') R = atoi(optarg);
        else return 2;
    }
    for (int t = 0; t < P; t++)
        data[t] = calloc(SIZE, sizeof(double));
    pthread_t th[256];
    pthread_barrier_init(&bar, NULL, P);
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("%g\n", out[P - 1]);
    return 0;
}
