/* pthread_barrier_cf.c: P threads in phases separated by a pthread barrier; in each phase
 * thread t runs an inner loop whose trip count grows with t.
 * lime-corpus: cause=control-flow section=the barrier
 * usage: pthread_barrier_cf [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, R = 4;
/* The barrier on a line of its own: its writes do not take the line of P and R away. */
static pthread_barrier_t bar __attribute__((aligned(64)));
static double out[256];

static void *worker(void *arg)
{
    long me = (long)arg;
    double x = 0;
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < 20000; i++)
            x += i * 0.25;
        for (long j = 0; j < 10000 * me; j++) /* PLANTED */
            x = x * 0.5 + j;
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
    pthread_t th[256];
    pthread_barrier_init(&bar, NULL, P);
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("%g\n", out[P - 1]);
    return 0;
}
