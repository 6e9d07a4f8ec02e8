/* sem_pipeline.c: P producer/consumer pairs through POSIX semaphores. In each pair the
 * producer makes N items (W steps of work each) into a ring of 8 slots, the consumer takes
 * them (W steps each): `full` counts items in the ring, `empty` free slots (sem_init 8). Each
 * consumer takes exactly its producer's items, so every thread's work is fixed; with equal
 * work on both sides the pipeline keeps both busy, and the replay must say so whatever the
 * host did while the program was traced.
 *
 * usage: sem_pipeline [PAIRS] [WORK] [ITEMS]   (defaults 2, 200, 2000)
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 8

struct pair {
    sem_t full, empty;
    long ring[RING];
    long sum;
};

static struct pair pairs[64];
static int P = 2, W = 200, N = 2000;

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) static long work(long x, int n)
{
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1;
    return x;
}

static void *producer(void *arg)
{
    struct pair *p = arg;
    long x = p - pairs + 1;
    for (int i = 0; i < N; i++) {
        x = work(x, W);
        sem_wait(&p->empty);
        p->ring[i % RING] = x;
        sem_post(&p->full);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct pair *p = arg;
    long s = 0;
    for (int i = 0; i < N; i++) {
        sem_wait(&p->full);
        long v = p->ring[i % RING];
        sem_post(&p->empty);
        s += work(v, W);
    }
    p->sum = s;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) P = atoi(argv[1]);
    if (argc > 2) W = atoi(argv[2]);
    if (argc > 3) N = atoi(argv[3]);
    if (P < 1 || P > 64 || W < 0 || N < 0) {
        fprintf(stderr, "usage: %s [PAIRS] [WORK] [ITEMS]\n", argv[0]);
        return 2;
    }
    pthread_t th[128];
    for (int k = 0; k < P; k++) {
        sem_init(&pairs[k].full, 0, 0);
        sem_init(&pairs[k].empty, 0, RING);
        pthread_create(&th[2 * k], NULL, producer, &pairs[k]);
        pthread_create(&th[2 * k + 1], NULL, consumer, &pairs[k]);
    }
    for (int k = 0; k < 2 * P; k++)
        pthread_join(th[k], NULL);
    long s = 0;
    for (int k = 0; k < P; k++)
        s += pairs[k].sum;
    printf("sum %ld\n", s);
    return 0;
}
