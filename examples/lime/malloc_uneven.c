/* malloc_uneven.c: in each phase thread t allocates and frees (t + 1) * 2000 small blocks:
 * the time goes inside malloc and free, and the cause is the user's loop that calls them.
 * lime-corpus: cause=library section=the barrier
 * usage: malloc_uneven [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, R = 4;
/* The barrier on a line of its own: its writes do not take the line of P and R away. */
static pthread_barrier_t bar __attribute__((aligned(64)));
static long sink[256];
/* Where each block's address goes, so that the compiler keeps the malloc and free pairs. */
static char *volatile last[256];

static void *worker(void *arg)
{
    long me = (long)arg;
    long n = (me + 1) * 2000, s = 0;
    for (int r = 0; r < R; r++) {
        for (long i = 0; i < n; i++) { char *p = malloc(32 + i % 64); last[me] = p; s += i; free(last[me]); } /* PLANTED */
        pthread_barrier_wait(&bar);
    }
    sink[me] = s;
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
    printf("%ld\n", sink[P - 1]);
    return 0;
}
