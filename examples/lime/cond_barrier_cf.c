/* cond_barrier_cf.c: a barrier built from a mutex and a condition variable (the classic
 * benchmark suites' BARRIER macro), with phases in which thread t's inner loop runs longer
 * the larger t is.
 * lime-corpus: cause=control-flow section=the barrier
 * usage: cond_barrier_cf [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, R = 4;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int arrived, phase;
static double out[256];

static void barrier(void)
{
    pthread_mutex_lock(&m);
    int my = phase;
    if (++arrived == P) {
        arrived = 0;
        phase++;
        pthread_cond_broadcast(&cv);
    } else {
        while (phase == my)
            pthread_cond_wait(&cv, &m);
    }
    pthread_mutex_unlock(&m);
}

static void *worker(void *arg)
{
    long me = (long)arg;
    double x = 0;
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < 20000; i++)
            x += i * 0.25;
        for (long j = 0; j < 10000 * me; j++) /* PLANTED */
            x = x * 0.5 + j;
        barrier();
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
    pthread_t th[256];
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("%g\n", out[P - 1]);
    return 0;
}
