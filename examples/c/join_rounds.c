/* join_rounds.c: main creates threads in rounds of R and joins each round before the next,
 * so the C library reuses thread handles (and stacks) across rounds: every round's threads
 * are new threads, each of which must replay all its work. No more than R threads are alive
 * at once.
 *
 * usage: join_rounds [-r ROUNDS] [-t THREADS_PER_ROUND] [-w WORK]
 *        (defaults 3 rounds of 2 threads, 20000 work steps each)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int ROUNDS = 3, R = 2, WORK = 20000;
static volatile long sink[4096];

__attribute__((noinline)) long work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    sink[me % 4096] = work(me, WORK);
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "r:t:w:")) != -1) {
        if (c == 'r') ROUNDS = atoi(optarg);
        else if (c == 't') R = atoi(optarg);
        else if (c == 'w') WORK = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-r ROUNDS] [-t THREADS] [-w WORK]\n", argv[0]); return 2; }
    }
    if (R < 1 || R > 256 || ROUNDS < 1) { fprintf(stderr, "bad -r/-t\n"); return 2; }
    pthread_t th[256];
    long id = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int t = 0; t < R; t++)
            pthread_create(&th[t], NULL, worker, (void *)id++);
        for (int t = 0; t < R; t++)
            pthread_join(th[t], NULL);
    }
    printf("threads %ld\n", id);
    return 0;
}
