/* pthread_init_serial.c: in each phase thread 0 first fills a table alone (a serial part)
 * while the others wait at a barrier; then every thread does the same work on it.
 * lime-corpus: cause=serial section=the barrier after the initialisation
 * usage: pthread_init_serial [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 4096
static int P = 4, R = 4;
/* The barrier on a line of its own: its writes do not take the line of P and R away. */
static pthread_barrier_t bar __attribute__((aligned(64)));
static double table[N], out[256];

static void *worker(void *arg)
{
    long me = (long)arg;
    double x = 0;
    for (int r = 0; r < R; r++) {
        if (me == 0)
            for (int i = 0; i < N * 16; i++) /* PLANTED */
                table[i % N] = table[(i * 7) % N] * 0.5 + i;
        pthread_barrier_wait(&bar);
        for (int i = 0; i < N; i++)
            x += table[i];
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
