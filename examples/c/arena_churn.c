/* arena_churn.c: worker threads, created and joined in rounds, each allocating and freeing
 * small blocks (a request's temporary objects) in one malloc arena that main shares and
 * allocates from between its creations. glibc's malloc takes the arena's lock, a futex lock
 * inside the C library, in the workers' calls, in pthread_create and pthread_join, and in each
 * worker's exit path as it frees its cache into the arena. `mallopt(M_ARENA_MAX, 1)` shares
 * the one arena as glibc does on its own once threads outnumber its 8 arenas per core (or as
 * MALLOC_ARENA_MAX=1 does). Each thread's work is fixed by the arguments; which thread waits
 * for the arena's lock when is the machine's business.
 *
 * usage: arena_churn [-t THREADS_PER_ROUND] [-r ROUNDS] [-n BLOCKS] [-i ITERATIONS]
 *        (defaults 3 threads, 4 rounds, 40 blocks, 200 iterations)
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int T = 3, ROUNDS = 4, BLOCKS = 40, ITERS = 200;

/* Allocates BLOCKS blocks of 24 to 72 bytes, writes each, frees them: the sum written. */
static long churn(long seed)
{
    long *p[256], sum = 0;
    for (int k = 0; k < BLOCKS; k++) {
        p[k] = malloc(24 + (size_t)(k % 4) * 16);
        p[k][0] = seed + k;
    }
    for (int k = BLOCKS - 1; k >= 0; k--) {
        sum += p[k][0];
        free(p[k]);
    }
    return sum;
}

static void *worker(void *arg)
{
    long me = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += churn(me * 1000003 + i);
    return (void *)(sum & 1);
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:r:n:i:")) != -1) {
        if (c == 't') T = atoi(optarg);
        else if (c == 'r') ROUNDS = atoi(optarg);
        else if (c == 'n') BLOCKS = atoi(optarg);
        else if (c == 'i') ITERS = atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-t THREADS_PER_ROUND] [-r ROUNDS] [-n BLOCKS] [-i ITERATIONS]\n", argv[0]);
            return 2;
        }
    }
    if (T < 1 || T > 64 || ROUNDS < 1 || BLOCKS < 1 || BLOCKS > 256 || ITERS < 0) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    mallopt(M_ARENA_MAX, 1);
    long odd = 0;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t th[64];
        for (long k = 0; k < T; k++)
            pthread_create(&th[k], NULL, worker, (void *)(r * 64 + k));
        odd += churn(r) & 1;
        for (int k = 0; k < T; k++) {
            void *v;
            pthread_join(th[k], &v);
            odd += (long)v;
        }
    }
    printf("odd %ld\n", odd);
    return 0;
}
