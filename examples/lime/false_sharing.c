/* false_sharing.c: every thread makes the same number of atomic increments of its own counter,
 * but the counters of threads 0-2 sit in one 64-byte line (false sharing: no datum is shared,
 * the line is), while every other thread's counter has a line of its own. Each increment of
 * threads 0-2 takes the line from another core's cache, so they run longer (same instructions,
 * coherence misses) and the others wait at the barrier.
 * lime-corpus: cause=miss section=the barrier
 * usage: false_sharing [-t THREADS] [-r PHASES] [-n INCREMENTS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, R = 3;
static long N = 20000;
/* Threads 0-2 at words 0-2 of the first line; thread t >= 3 at the start of line t + 1. */
static long counters[8 * 260] __attribute__((aligned(64)));
/* The barrier on a line of its own: its writes do not take the counters' lines away. */
static pthread_barrier_t bar __attribute__((aligned(64)));

static void *worker(void *arg)
{
    long me = (long)arg;
    long *c = me < 3 ? &counters[me] : &counters[8 * (me + 1)];
    const long n = N; /* in a register */
    for (int r = 0; r < R; r++) {
        for (long i = 0; i < n; i++)
            __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); /* PLANTED */
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:r:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'r') R = atoi(optarg);
        else if (c == 'n') N = atol(optarg);
        else return 2;
    }
    if (P < 1 || P > 256) return 2;
    pthread_t th[256];
    pthread_barrier_init(&bar, NULL, P);
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("%ld\n", counters[0] + counters[8 * (P + 1)]);
    return 0;
}
