/* handover.c: how often a contended pthread mutex changes hands on this machine, natively.
 *
 * P threads each do ITERS iterations of {WORK steps of a dependent multiply-add chain (about 4
 * cycles each, no memory traffic); lock; take the next number of a shared sequence and add to
 * a shared counter; unlock} -- examples/c/lock_counter.c's loop -- and each keeps the sequence
 * numbers it took in a private array. After the join, the numbers say who held the lock for
 * each acquisition, in order: a hand-over is two consecutive acquisitions by different threads.
 * The program prints the acquisitions, the hand-overs and their ratio (acquisitions per
 * hand-over, the length of a run of one thread's acquisitions).
 *
 * This is the native side of a question isim answers in `summary.json` (`sync.lock_waits`,
 * `sync.lock_line_moves`): whether the lock alternates between the threads at every
 * acquisition or one thread keeps it for runs (glibc's mutex is not fair: a releaser that
 * takes the lock again before the other thread's compare-and-swap arrives keeps it, and a
 * thread that finds it held sleeps in the kernel while the other runs on). Run it beside
 * `perf stat -e syscalls:sys_enter_futex` for the futex calls; bind the threads to CPUs as
 * locks.py does (LD_PRELOAD of pin.c's library).
 *
 *   gcc -O2 -pthread -o handover benches/host/handover.c
 *   ./handover [-t THREADS] [-w WORK] [-i ITERATIONS]   (defaults 2 threads, 10, 100000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 2, WORK = 10, ITERS = 100000;
static long counter, seq;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* By sequence number: the thread that took it. */
static unsigned char *who;

__attribute__((noinline)) long private_work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    long *mine = malloc(sizeof(long) * ITERS);
    if (!mine) {
        perror("malloc");
        exit(1);
    }
    for (int i = 0; i < ITERS; i++) {
        /* The counter uses the work's result, so the compiler cannot drop the work. */
        long v = private_work(me * 1000 + i, WORK);
        pthread_mutex_lock(&lock);
        mine[i] = seq++;
        counter += v;
        pthread_mutex_unlock(&lock);
    }
    for (int i = 0; i < ITERS; i++)
        who[mine[i]] = (unsigned char)me;
    free(mine);
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:w:i:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'w') WORK = atoi(optarg);
        else if (c == 'i') ITERS = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-w WORK] [-i ITERATIONS]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256 || ITERS < 1 || WORK < 0) {
        fprintf(stderr, "bad -t, -w or -i\n");
        return 2;
    }
    who = malloc((size_t)P * ITERS);
    if (!who) {
        perror("malloc");
        return 1;
    }
    pthread_t th[256];
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    long handovers = 0;
    for (long k = 1; k < seq; k++)
        handovers += who[k] != who[k - 1];
    printf("acquisitions %ld hand-overs %ld acquisitions per hand-over %.1f (counter %ld)\n", seq,
           handovers, (double)seq / (handovers + 1), counter);
    return 0;
}
