/* spin_counter.c: P threads each do W steps of private work, then C steps on a shared counter
 * under a spin lock, ITERS times: glibc's pthread_spin_lock, or with -x a hand-written
 * test-and-set lock (an atomic exchange to take it, a plain load to spin, a plain store of 0
 * to free it), the two spin locks of C code, or with -b a one-byte lock freed by a
 * sequentially consistent store (C++'s std::atomic<bool> lock with a plain store(false),
 * which gcc compiles to an exchange). Each thread's work is fixed by its arguments,
 * so the replay must give the same timing however the host interleaved the traced run.
 *
 * usage: spin_counter [-t THREADS] [-w WORK] [-c CRITICAL] [-i ITERATIONS] [-x | -b]
 *        (defaults 4 threads, 300 work steps, 4 critical steps, 2000 iterations)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, WORK = 300, CRIT = 4, ITERS = 2000, TAS = 0, BYTE = 0;
static pthread_spinlock_t spin;
static volatile int word;
static volatile char byte;
static long counter;

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) long private_work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void take(void)
{
    if (BYTE) {
        while (__atomic_exchange_n(&byte, 1, __ATOMIC_SEQ_CST))
            while (byte)
                __builtin_ia32_pause();
        return;
    }
    if (!TAS) {
        pthread_spin_lock(&spin);
        return;
    }
    while (__atomic_exchange_n(&word, 1, __ATOMIC_ACQUIRE))
        while (word)
            __builtin_ia32_pause();
}

static void give(void)
{
    if (BYTE)
        __atomic_store_n(&byte, 0, __ATOMIC_SEQ_CST);
    else if (TAS)
        __atomic_store_n(&word, 0, __ATOMIC_RELEASE);
    else
        pthread_spin_unlock(&spin);
}

static void *worker(void *arg)
{
    long me = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        long v = private_work(me * 1000 + i, WORK);
        take();
        for (int k = 0; k < CRIT; k++)
            counter = counter * 3 + v;
        give();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:w:c:i:xb")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'w') WORK = atoi(optarg);
        else if (c == 'c') CRIT = atoi(optarg);
        else if (c == 'i') ITERS = atoi(optarg);
        else if (c == 'x') TAS = 1;
        else if (c == 'b') BYTE = 1;
        else {
            fprintf(stderr, "usage: %s [-t THREADS] [-w WORK] [-c CRITICAL] [-i ITERATIONS] [-x | -b]\n", argv[0]);
            return 2;
        }
    }
    if (P < 1 || P > 256) { fprintf(stderr, "bad -t\n"); return 2; }
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    pthread_t th[256];
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
