// pipeline.c: a three-stage pipeline over bounded queues, each a mutex and two condition
// variables (the textbook bounded buffer), with fixed work per item and stage.
//
// Stage 0 makes ITEMS items (W0 steps of private work each) and puts them on queue 0; stage 1
// takes each, works W1 steps and puts it on queue 1; stage 2 takes each and works W2 steps.
// Every thread's work is fixed by the arguments, so the replay must not depend on how the
// host ran the traced program: in particular, a consumer that found an item already queued
// (it took the mutex and did not wait) still cannot have consumed it before its producer
// put it there. With a slow stage 0 (the defaults), stages 1 and 2 wait for about
// 1 - W1/W0 and 1 - W2/W0 of their time, whoever happened to be ahead in the traced run.
//
// usage: pipeline [ITEMS [W0 W1 W2 [CAPACITY]]]   (defaults 300, 3000 1000 1000, 64)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_CAPACITY 1024

struct queue {
    long item[MAX_CAPACITY];
    int head, count;
    pthread_mutex_t lock;
    pthread_cond_t nonempty, nonfull;
};

static struct queue queues[2];
static int items = 300, capacity = 64, steps[3] = {3000, 1000, 1000};

static void put(struct queue *q, long v)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == capacity)
        pthread_cond_wait(&q->nonfull, &q->lock);
    q->item[(q->head + q->count) % capacity] = v;
    q->count++;
    pthread_cond_signal(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}

static long take(struct queue *q)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == 0)
        pthread_cond_wait(&q->nonempty, &q->lock);
    long v = q->item[q->head];
    q->head = (q->head + 1) % capacity;
    q->count--;
    pthread_cond_signal(&q->nonfull);
    pthread_mutex_unlock(&q->lock);
    return v;
}

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) static long work(long x, int n)
{
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
}

static void *first(void *arg)
{
    (void)arg;
    for (long i = 0; i < items; i++)
        put(&queues[0], work(i, steps[0]) & 0xffff);
    put(&queues[0], -1);
    return NULL;
}

static void *middle(void *arg)
{
    (void)arg;
    for (;;) {
        long v = take(&queues[0]);
        if (v < 0)
            break;
        put(&queues[1], work(v, steps[1]) & 0xffff);
    }
    put(&queues[1], -1);
    return NULL;
}

static void *last(void *arg)
{
    long sum = 0;
    (void)arg;
    for (;;) {
        long v = take(&queues[1]);
        if (v < 0)
            break;
        sum += work(v, steps[2]) & 0xff;
    }
    return (void *)sum;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        items = atoi(argv[1]);
    if (argc > 4)
        for (int i = 0; i < 3; i++)
            steps[i] = atoi(argv[2 + i]);
    if (argc > 5)
        capacity = atoi(argv[5]);
    if (items < 0 || capacity < 1 || capacity > MAX_CAPACITY) {
        fprintf(stderr, "usage: %s [ITEMS [W0 W1 W2 [CAPACITY]]] (capacity 1-%d)\n", argv[0],
                MAX_CAPACITY);
        return 2;
    }
    for (int i = 0; i < 2; i++) {
        pthread_mutex_init(&queues[i].lock, NULL);
        pthread_cond_init(&queues[i].nonempty, NULL);
        pthread_cond_init(&queues[i].nonfull, NULL);
    }
    void *(*stage[3])(void *) = {first, middle, last};
    pthread_t t[3];
    void *sum = NULL;
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, stage[i], NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], i == 2 ? &sum : NULL);
    printf("%ld\n", (long)sum);
    return 0;
}
