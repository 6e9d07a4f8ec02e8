/* memcpy_uneven.c: in each phase thread t copies a buffer with memcpy, (t + 1) times 32 KiB:
 * the time goes inside the C library, and the cause is the user's call.
 * lime-corpus: cause=library section=the barrier
 * usage: memcpy_uneven [-t THREADS] [-r PHASES]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int P = 4, R = 4;
/* The barrier on a line of its own: its writes do not take the line of P and R away. */
static pthread_barrier_t bar __attribute__((aligned(64)));
static char *src[256], *dst[256];

static void *worker(void *arg)
{
    long me = (long)arg;
    size_t n = (size_t)(me + 1) * 32768;
    for (int r = 0; r < R; r++) {
        memcpy(dst[me], src[me] + r, n); /* PLANTED */
        pthread_barrier_wait(&bar);
    }
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
    for (int t = 0; t < P; t++) {
        src[t] = calloc((size_t)(t + 1) * 32768 + 64, 1);
        dst[t] = calloc((size_t)(t + 1) * 32768 + 64, 1);
    }
    pthread_t th[256];
    pthread_barrier_init(&bar, NULL, P);
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("%d\n", dst[P - 1][0]);
    return 0;
}
