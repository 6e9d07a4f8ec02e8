/* mutex_counter.c: threads add to a shared counter under a mutex, with private work between
 * the critical sections. The workers start together through a barrier.
 *
 * usage: mutex_counter [-t THREADS] [-i ITERATIONS]   (defaults 4 threads, 200 iterations)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, ITERS = 200;
static long counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;

/* The measured kernel: private work, no synchronisation. */
__attribute__((noinline)) long private_work(long seed)
{
    long x = seed;
    for (int j = 0; j < 64; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    pthread_barrier_wait(&start); /* every worker exists before any starts */
    for (int i = 0; i < ITERS; i++) {
        long v = private_work(me * 1000 + i);
        pthread_mutex_lock(&lock);
        counter += v;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:i:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'i') ITERS = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-i ITERATIONS]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256) { fprintf(stderr, "bad -t\n"); return 2; }
    pthread_t th[256];
    pthread_barrier_init(&start, NULL, P);
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
