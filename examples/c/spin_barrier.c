/* spin_barrier.c: a sense-reversing barrier built on C11 atomics, its waiters spinning with
 * `pause` (as hand-written barriers and spin-wait loops of real codes do; -p 0: without), in
 * a phased loop where thread 0 does four times the others' work every phase (the line marked
 * PLANTED).
 *
 * barrier(): flip the thread's own sense; the last to arrive (its fetch_add saw P - 1) resets
 * the count and stores the new sense (a plain release store); the others spin until they
 * read it. No pthread synchronization call is made between the threads' creation and their
 * joins, so the only record of who waited for whom is the spinning itself.
 *
 * Per phase the others wait for thread 0 about 3/4 of the phase; how many times each of them
 * looked at the flag meanwhile is the host's doing (pinned to one CPU, a spinner burns its
 * whole time slice).
 *
 * With -p 0 the waiters spin without `pause` (a bare `while (flag != sense);`, as some
 * hand-written barriers do).
 *
 * usage: spin_barrier [-t THREADS] [-s STEPS] [-w WORK] [-p PAUSE]   (defaults 4 threads,
 * 20 steps, 20000 units of work, pause 1)
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int P = 4, STEPS = 20;
static long WORK = 20000;
static int PAUSE = 1;
static atomic_int count;
static atomic_int sense;
static double result[256];

static void barrier(int *local)
{
    *local = !*local;
    if (atomic_fetch_add_explicit(&count, 1, memory_order_acq_rel) == P - 1) {
        atomic_store_explicit(&count, 0, memory_order_relaxed);
        atomic_store_explicit(&sense, *local, memory_order_release);
    } else {
        while (atomic_load_explicit(&sense, memory_order_acquire) != *local)
            if (PAUSE)
                _mm_pause();
    }
}

__attribute__((noinline)) static double unit(long n, double seed)
{
    double x = seed;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
    return x;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    int local = 0;
    double acc = 0;
    for (int k = 0; k < STEPS; k++) {
        acc += unit(WORK, k);
        if (me == 0)
            acc += unit(3 * WORK, k); /* PLANTED: thread 0's extra work in every phase */
        barrier(&local);
    }
    result[me] = acc;
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t")) P = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-s")) STEPS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-w")) WORK = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) PAUSE = atoi(argv[i + 1]);
    }
    if (P < 1 || P > 256 || STEPS < 1 || WORK < 1) {
        fprintf(stderr, "bad -t, -s or -w\n");
        return 2;
    }
    pthread_t th[256];
    for (long t = 1; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    worker((void *)0);
    double total = 0;
    for (long t = 1; t < P; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < P; t++)
        total += result[t];
    printf("checksum %.6e\n", total);
    return 0;
}
