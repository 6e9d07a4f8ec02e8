/* spin_flag.c: two threads hand work back and forth through two flags, each waiting for the
 * other's store in a `pause` loop (a ping-pong, as pipelines built on flags do): the main
 * thread works PRODUCE units, then stores ready = i; the consumer, spinning until it reads i,
 * works CONSUME units, then stores done = i, which the main thread spins on before its next
 * item. No pthread call is made between the two threads' creation and join, and no atomic
 * read-modify-write: each wait ends at a plain store of the other thread. The main thread
 * first waits until the consumer says it has started: a flag's line is watched once a thread
 * spins on it, so a store made before anybody spun there (the first item, had the consumer
 * started late) would not be seen.
 *
 * The two never work at once: the run is ITEMS × (PRODUCE + CONSUME) units, the main thread
 * waits CONSUME / (PRODUCE + CONSUME) of it and the consumer PRODUCE / (PRODUCE + CONSUME).
 *
 * usage: spin_flag [-n ITEMS] [-p PRODUCE] [-c CONSUME]   (defaults 20 items, 30000 and
 * 10000 units)
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ITEMS = 20;
static long PRODUCE = 30000, CONSUME = 10000;
static atomic_int started, ready, done;
static double sink[2];

__attribute__((noinline)) static double unit(long n, double seed)
{
    double x = seed;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
    return x;
}

static void wait_for(atomic_int *flag, int value)
{
    while (atomic_load_explicit(flag, memory_order_acquire) != value)
        _mm_pause();
}

static void *consumer(void *arg)
{
    (void)arg;
    double acc = 0;
    atomic_store_explicit(&started, 1, memory_order_release);
    for (int i = 1; i <= ITEMS; i++) {
        wait_for(&ready, i);
        acc += unit(CONSUME, i);
        atomic_store_explicit(&done, i, memory_order_release);
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
    pthread_create(&th, NULL, consumer, NULL);
    wait_for(&started, 1);
    double acc = 0;
    for (int i = 1; i <= ITEMS; i++) {
        acc += unit(PRODUCE, i);
        atomic_store_explicit(&ready, i, memory_order_release);
        wait_for(&done, i);
    }
    pthread_join(th, NULL);
    sink[0] = acc;
    printf("checksum %.6e\n", sink[0] + sink[1]);
    return 0;
}
