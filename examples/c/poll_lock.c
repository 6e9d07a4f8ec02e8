/* poll_lock.c: a worker that polls for work under a mutex, the way thread pools' idle
 * workers do (OpenBLAS's: lock, read the queue slot, unlock, sched_yield, again), with no
 * condition variable: the main thread works PRODUCE units, then, under the same mutex, posts
 * item i; the worker, once it reads it, works CONSUME units and posts it back done, which
 * the main thread polls for the same way before its next item.
 *
 * The main thread first waits until the worker says it has started (a store made before any
 * thread polled its line would not be seen, as in spin_flag.c).
 *
 * The two never work at once: the run is ITEMS × (PRODUCE + CONSUME) units, the main thread
 * waits CONSUME / (PRODUCE + CONSUME) of it and the worker PRODUCE / (PRODUCE + CONSUME). How
 * many times each polled, taking and releasing the mutex each time, is the host's doing.
 *
 * usage: poll_lock [-n ITEMS] [-p PRODUCE] [-c CONSUME]   (defaults 20 items, 30000 and
 * 10000 units)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ITEMS = 20;
static long PRODUCE = 30000, CONSUME = 10000;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile int started, posted, done;
static double sink[2];

__attribute__((noinline)) static double unit(long n, double seed)
{
    double x = seed;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
    return x;
}

/* Polls `*slot` under the mutex until it holds `value`. */
static void poll_for(volatile int *slot, int value)
{
    for (;;) {
        pthread_mutex_lock(&m);
        int seen = *slot;
        pthread_mutex_unlock(&m);
        if (seen == value)
            return;
        sched_yield();
    }
}

static void post(volatile int *slot, int value)
{
    pthread_mutex_lock(&m);
    *slot = value;
    pthread_mutex_unlock(&m);
}

static void *worker(void *arg)
{
    (void)arg;
    double acc = 0;
    post(&started, 1);
    for (int i = 1; i <= ITEMS; i++) {
        poll_for(&posted, i);
        acc += unit(CONSUME, i);
        post(&done, i);
    }
    sink[1] = acc;
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) ITEMS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) PRODUCE = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-c")) CONSUME = atol(argv[i + 1]);
    }
    if (ITEMS < 1 || PRODUCE < 1 || CONSUME < 1) {
        fprintf(stderr, "bad -n, -p or -c\n");
        return 2;
    }
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    poll_for(&started, 1);
    double acc = 0;
    for (int i = 1; i <= ITEMS; i++) {
        acc += unit(PRODUCE, i);
        post(&posted, i);
        poll_for(&done, i);
    }
    pthread_join(th, NULL);
    sink[0] = acc;
    printf("checksum %.6e\n", sink[0] + sink[1]);
    return 0;
}
