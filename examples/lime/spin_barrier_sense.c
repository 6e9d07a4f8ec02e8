/* spin_barrier_sense.c: a hand-built sense-reversing barrier on C11 atomics (a counter and a
 * flag the threads spin on, without pause), with phases in which thread t's inner loop runs
 * longer the larger t is.
 * lime-corpus: cause=control-flow section=the barrier
 * usage: spin_barrier_sense [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, R = 4;
static atomic_int count, sense;
static double out[256];

static void barrier(int *local)
{
    *local = !*local;
    if (atomic_fetch_add(&count, 1) == P - 1) {
        atomic_store(&count, 0);
        atomic_store(&sense, *local);
    } else {
        while (atomic_load(&sense) != *local)
            ;
    }
}

static void *worker(void *arg)
{
    long me = (long)arg;
    int local = 0;
    double x = 0;
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < 20000; i++)
            x += i * 0.25;
        for (long j = 0; j < 10000 * me; j++) /* PLANTED */
            x = x * 0.5 + j;
        barrier(&local);
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
