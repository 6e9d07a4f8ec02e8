/* c11_threads.c: a program written with C11's <threads.h> only: thrd_create/thrd_join/
 * thrd_exit, mtx_t (plain and timed: mtx_lock, mtx_trylock, mtx_timedlock, mtx_unlock) and
 * cnd_t (cnd_wait, cnd_timedwait, cnd_signal).
 *
 * P threads, ROUNDS rounds each. In every round a token goes once around the threads, each
 * waiting on its own condition for its turn (cnd_wait, or cnd_timedwait with a 10 s timeout
 * that never expires, on alternate rounds), doing WORK steps of private work and signalling
 * the next thread's condition; then each adds to a counter under a mutex taken by
 * mtx_timedlock or mtx_lock on alternate rounds, and to its own total under a mutex of its
 * own, taken by mtx_trylock (which always succeeds: a retry loop of failed tries would be
 * the traced run's, as a failed try is in replay). The last worker
 * ends with thrd_exit, the others return; each returns its thread number plus one, which main
 * checks through thrd_join. Every thread's work is fixed by the arguments.
 *
 * glibc builds these calls on its internal pthread functions, so the interposition library
 * wraps them by their C11 names (issue 42: before, such a program traced as its main thread
 * alone, its workers' instructions lost).
 *
 * usage: c11_threads [THREADS [ROUNDS [WORK]]]   (defaults 4 threads, 200 rounds, 300 steps)
 */
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>

static int P = 4, ROUNDS = 200, WORK = 300;
static mtx_t turn_lock, counter_lock, own_lock[64];
static long own_total[64];
static cnd_t turn_changed[64];
static int turn;
static long counter;

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) long private_work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void deadline(struct timespec *t)
{
    timespec_get(t, TIME_UTC);
    t->tv_sec += 10;
}

static int worker(void *arg)
{
    int me = (int)(long)arg;
    long v = me;
    for (int r = 0; r < ROUNDS; r++) {
        struct timespec t;
        deadline(&t);
        mtx_lock(&turn_lock);
        while (turn != me) {
            if (r % 2) {
                if (cnd_timedwait(&turn_changed[me], &turn_lock, &t) == thrd_timedout) {
                    fprintf(stderr, "c11_threads: cnd_timedwait timed out\n");
                    exit(1);
                }
            } else {
                cnd_wait(&turn_changed[me], &turn_lock);
            }
        }
        v = private_work(v + r, WORK);
        turn = (me + 1) % P;
        cnd_signal(&turn_changed[turn]);
        mtx_unlock(&turn_lock);
        if (r % 2) {
            if (mtx_timedlock(&counter_lock, &t) != thrd_success) {
                fprintf(stderr, "c11_threads: mtx_timedlock failed\n");
                exit(1);
            }
        } else {
            mtx_lock(&counter_lock);
        }
        counter += v;
        mtx_unlock(&counter_lock);
        if (mtx_trylock(&own_lock[me]) != thrd_success) {
            fprintf(stderr, "c11_threads: mtx_trylock of a free mutex failed\n");
            exit(1);
        }
        own_total[me] += v;
        mtx_unlock(&own_lock[me]);
    }
    if (me == P - 1)
        thrd_exit(me + 1);
    return me + 1;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        P = atoi(argv[1]);
    if (argc > 2)
        ROUNDS = atoi(argv[2]);
    if (argc > 3)
        WORK = atoi(argv[3]);
    if (P < 1 || P > 64 || ROUNDS < 1 || WORK < 0) {
        fprintf(stderr, "usage: %s [THREADS [ROUNDS [WORK]]]\n", argv[0]);
        return 2;
    }
    mtx_init(&turn_lock, mtx_plain);
    mtx_init(&counter_lock, mtx_timed);
    for (int i = 0; i < P; i++) {
        cnd_init(&turn_changed[i]);
        mtx_init(&own_lock[i], mtx_plain);
    }
    thrd_t t[64];
    for (long i = 0; i < P; i++)
        if (thrd_create(&t[i], worker, (void *)i) != thrd_success) {
            fprintf(stderr, "c11_threads: thrd_create failed\n");
            return 1;
        }
    for (int i = 0; i < P; i++) {
        int res = 0;
        if (thrd_join(t[i], &res) != thrd_success || res != i + 1) {
            fprintf(stderr, "c11_threads: thread %d returned %d\n", i, res);
            return 1;
        }
    }
    printf("counter %ld\n", counter);
    return 0;
}
