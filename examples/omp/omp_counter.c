/* omp_counter.c: the lock counter with OpenMP's own lock. A team of THREADS, each running
 * ITERATIONS times {WORK steps of private work; `#pragma omp critical` {CRITICAL steps on a
 * shared counter}}: libgomp's futex mutex, which spins before it sleeps (GOMP_SPINCOUNT).
 * Each thread's work is fixed by the arguments, so the replay must not depend on how the
 * host ran the traced program. Each team thread binds itself to a CPU (its number modulo the
 * CPUs the main thread could use before the team started), as isim gives each thread a core
 * of its own: natively the team then runs side by side (benches/host/locks.py), where Linux
 * may stack two threads of a 2-vCPU guest on one CPU.
 *
 * usage: omp_counter [-t THREADS] [-w WORK] [-c CRITICAL] [-i ITERATIONS]
 *        (defaults 4 threads, 200 work steps, 20 critical steps, 1000 iterations)
 */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long counter;

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) long private_work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

/* The CPUs the main thread may use, read before the team starts (a library that binds each
 * created thread, as benches/host/pin.c does, leaves a team thread only its own). */
static cpu_set_t allowed;

/* Binds the calling thread to the k-th CPU of `allowed` (modulo their number). */
static void bind_to(int k)
{
    cpu_set_t one;
    int n = CPU_COUNT(&allowed);
    if (n < 2)
        return;
    int want = k % n;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        if (want-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
    }
}

int main(int argc, char **argv)
{
    int threads = 4, work = 200, crit = 20, iters = 1000, c;
    while ((c = getopt(argc, argv, "t:w:c:i:")) != -1) {
        if (c == 't') threads = atoi(optarg);
        else if (c == 'w') work = atoi(optarg);
        else if (c == 'c') crit = atoi(optarg);
        else if (c == 'i') iters = atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-t THREADS] [-w WORK] [-c CRITICAL] [-i ITERATIONS]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > 256 || work < 0 || crit < 0 || iters < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        CPU_ZERO(&allowed);
#pragma omp parallel num_threads(threads)
    {
        int me = omp_get_thread_num();
        bind_to(me);
        for (int i = 0; i < iters; i++) {
            long v = private_work(me * 1000 + i, work);
#pragma omp critical
            for (int k = 0; k < crit; k++)
                counter = counter * 3 + v;
        }
    }
    printf("counter %ld\n", counter);
    return 0;
}
