/* lock_counter.c: P threads each do private work, then add to one shared counter under a
 * pthread mutex, ITERS times. With the default (one critical section per thread after
 * ~28,000 instructions of private work) the lock is almost always free and the program
 * scales perfectly on any machine: the replay must say so whatever the host did while the
 * program was traced (issue 42's counter program).
 *
 * usage: lock_counter [-t THREADS] [-w WORK] [-i ITERATIONS]
 *        (defaults 4 threads, 7000 work steps of ~4 instructions, 1 iteration)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, WORK = 7000, ITERS = 1;
static long counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) long private_work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        long v = private_work(me * 1000 + i, WORK);
        pthread_mutex_lock(&lock);
        counter += v;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:w:i:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'w') WORK = atoi(optarg);
        else if (c == 'i') ITERS = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-w WORK] [-i ITERATIONS]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256) { fprintf(stderr, "bad -t\n"); return 2; }
    pthread_t th[256];
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
