/* timed_join.c: main joins its three workers with glibc's joins that may fail:
 * pthread_timedjoin_np (a 60 s timeout on the realtime clock), pthread_clockjoin_np (on the
 * monotonic clock) and pthread_tryjoin_np in a loop that does a little work between tries.
 * Worker k (k = 1, 2, 3) runs k * STEPS steps of a dependent chain, so the run lasts as long
 * as worker 3 and main waits for each worker in turn.
 *
 * Before these joins were interposed they left no marker: replay let main return at once and
 * the workers' instructions ran after the region of interest, untimed.
 *
 * usage: timed_join [STEPS]   (default 400000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) long chain(long x, long n)
{
    for (long j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void *worker(void *arg)
{
    long n = (long)arg;
    return (void *)chain(n, n);
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 400000;
    if (steps < 1) {
        fprintf(stderr, "usage: %s [STEPS]\n", argv[0]);
        return 2;
    }
    pthread_t t[3];
    for (long k = 0; k < 3; k++)
        if (pthread_create(&t[k], NULL, worker, (void *)((k + 1) * steps))) {
            fprintf(stderr, "timed_join: pthread_create failed\n");
            return 1;
        }
    void *r;
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += 60;
    if (pthread_timedjoin_np(t[0], &r, &at)) {
        fprintf(stderr, "timed_join: pthread_timedjoin_np failed\n");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += 60;
    if (pthread_clockjoin_np(t[1], &r, CLOCK_MONOTONIC, &at)) {
        fprintf(stderr, "timed_join: pthread_clockjoin_np failed\n");
        return 1;
    }
    long tries = 0;
    int e;
    while ((e = pthread_tryjoin_np(t[2], &r)) == EBUSY)
        chain(++tries, 1000);
    if (e) {
        fprintf(stderr, "timed_join: pthread_tryjoin_np failed\n");
        return 1;
    }
    printf("joined 3 threads\n");
    return 0;
}
