/* cond_barrier.c: the barrier of classic benchmark suites, built from one mutex, one
 * condition variable, a counter and a generation number, in an owner-computes sweep.
 *
 * BARRIER(b) (one source line, as the suites' macro) : lock; if (++count == P) { count = 0;
 * gen++; broadcast; } else { my = gen; while (my == gen) wait; } unlock.
 * In each of STEPS steps every thread sums its share of a vector, then meets the others at
 * BARRIER. Thread 0 also runs extra_work() on the line marked PLANTED, so it arrives last.
 *
 * Per thread, every run: STEPS barrier episodes; STEPS mutex locks and STEPS unlocks (the
 * BARRIER's own; a condition wait's re-lock is not a lock call); cond waits and broadcasts
 * depend on who arrives last (their sum over threads is STEPS * (P - 1) waits, at least, and
 * STEPS broadcasts). Thread 0 creates and joins P - 1 threads.
 *
 * usage: cond_barrier [-t THREADS] [-s STEPS]   (defaults 4 threads, 12 steps)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, STEPS = 12;
#define N 4096
static double v[N];
static double part[256];

static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    int count, gen;
} bar = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

#define BARRIER(b) { pthread_mutex_lock(&(b).m); if (++(b).count == P) { (b).count = 0; (b).gen++; pthread_cond_broadcast(&(b).c); } else { int my = (b).gen; while (my == (b).gen) pthread_cond_wait(&(b).c, &(b).m); } pthread_mutex_unlock(&(b).m); }

__attribute__((noinline)) double extra_work(int k)
{
    double s = 0;
    for (int i = 0; i < 3 * N; i++)
        s += v[(i * 7 + k) % N] * 0.5;
    return s;
}

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    double s = 0;
    for (int k = 0; k < STEPS; k++) {
        for (int i = me; i < N; i += P)
            s += v[i] * (k + 1);
        if (me == 0) s += extra_work(k); /* PLANTED: thread 0's extra work before every barrier */
        BARRIER(bar); /* BARRIER_SITE: the barrier episodes close the sections here */
    }
    part[me] = s;
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:s:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 's') STEPS = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-s STEPS]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256 || STEPS < 1) { fprintf(stderr, "bad -t or -s\n"); return 2; }
    for (int i = 0; i < N; i++)
        v[i] = (double)(i % 17);
    pthread_t th[256];
    for (long t = 1; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    worker((void *)0);
    for (int t = 1; t < P; t++)
        pthread_join(th[t], NULL);
    double s = 0;
    for (int t = 0; t < P; t++)
        s += part[t];
    printf("checksum %.6e\n", s);
    return 0;
}
