/* late_threads.c: the main thread creates workers one by one with serial work in between, so
 * later threads start late; each worker does the same work, then all meet at a barrier (so
 * every thread is alive at once) and main joins them.
 *
 * usage: late_threads [-t THREADS]   (default 4 threads)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4;
static volatile double sink[256];
static pthread_barrier_t done;

/* The measured kernel: a dependent floating-point chain. */
__attribute__((noinline)) double chain(int n, double x)
{
    for (int i = 0; i < n; i++)
        x = x * 1.0000001 + 0.5;
    return x;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    sink[me] = chain(20000, (double)me);
    pthread_barrier_wait(&done); /* stay alive until every thread has been created */
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS]\n", argv[0]); return 2; }
    }
    if (P < 2 || P > 256) { fprintf(stderr, "bad -t (2..256)\n"); return 2; }
    pthread_t th[256];
    pthread_barrier_init(&done, NULL, P);
    for (long t = 1; t < P; t++) {
        sink[0] += chain(5000, (double)t); /* serial work before each late creation */
        pthread_create(&th[t], NULL, worker, (void *)t);
    }
    pthread_barrier_wait(&done);
    for (int t = 1; t < P; t++)
        pthread_join(th[t], NULL);
    printf("done %.3f\n", sink[0] + sink[P - 1]);
    return 0;
}
