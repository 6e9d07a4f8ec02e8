/* prodcons.c: one producer (thread 0) and THREADS - 1 consumers over a bounded ring buffer
 * guarded by one mutex, with "not full" / "not empty" condition variables waited on in
 * predicate loops and signalled, then a "done" broadcast.
 *
 * Per run: thread 0 locks the mutex ITEMS + 1 times and signals "not empty" ITEMS times, then
 * broadcasts "not empty" once (done). Consumers together take ITEMS items; how many each takes
 * depends on timing, so only totals are fixed: every consumer thread locks at least once.
 * Thread 0 creates and joins THREADS - 1 threads.
 *
 * usage: prodcons [-t THREADS] [-n ITEMS]   (defaults 4 threads, 2000 items)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CAP 16
static int P = 4, ITEMS = 2000;
static long ring[CAP];
static int head, tail, len, done;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static long sums[256];

__attribute__((noinline)) long work(long x)
{
    long s = 0;
    for (int i = 0; i < 200; i++)
        s += (x * 31 + i) % 7;
    return s;
}

static void *consumer(void *arg)
{
    int me = (int)(long)arg;
    for (;;) {
        pthread_mutex_lock(&m);
        while (len == 0 && !done)
            pthread_cond_wait(&not_empty, &m);
        if (len == 0 && done) {
            pthread_mutex_unlock(&m);
            break;
        }
        long x = ring[head];
        head = (head + 1) % CAP;
        len--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
        sums[me] += work(x);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') ITEMS = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-n ITEMS]\n", argv[0]); return 2; }
    }
    if (P < 2 || P > 256 || ITEMS < 1) { fprintf(stderr, "bad -t or -n\n"); return 2; }
    pthread_t th[256];
    for (long t = 1; t < P; t++)
        pthread_create(&th[t], NULL, consumer, (void *)t);
    for (long i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&m);
        while (len == CAP)
            pthread_cond_wait(&not_full, &m);
        ring[tail] = i;
        tail = (tail + 1) % CAP;
        len++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    done = 1;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&m);
    long s = 0;
    for (int t = 1; t < P; t++) {
        pthread_join(th[t], NULL);
        s += sums[t];
    }
    printf("checksum %ld\n", s);
    return 0;
}
