/* hot_lock_pthread.c: every thread takes two mutexes per step, a cold one around a short update
 * and a hot one around a long one; the threads wait for the hot one.
 * lime-corpus: cause=hot-lock section=none (lock waiting: isim locks)
 * usage: hot_lock_pthread [-t THREADS] [-n STEPS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t cold = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static double table[64], total;
static long steps = 300;

static double work(long seed, int n)
{
    double x = seed;
    for (int i = 0; i < n; i++)
        x = x * 0.999 + i;
    return x;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long s = 0; s < steps; s++) {
        double v = work(id + s, 200);
        pthread_mutex_lock(&cold);
        table[(id + s) & 63] += v;
        pthread_mutex_unlock(&cold);
        v = work(v, 100);
        pthread_mutex_lock(&hot); /* PLANTED */
        for (int k = 0; k < 64; k++)
            total += table[k] * 1e-9 + v * 1e-12;
        pthread_mutex_unlock(&hot);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int P = 4, c;
    while ((c = getopt(argc, argv, "t:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') steps = atol(optarg);
        else return 2;
    }
    pthread_t th[64];
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("%g\n", total);
    return 0;
}
