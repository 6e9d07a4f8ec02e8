/* early_thread.c: a thread started by a constructor, before `main` runs (as a library's
 * thread pool is: OpenBLAS starts its workers when it is loaded). Recording begins at
 * `main`, so no recorded create names the thread; it works, then `main` joins it.
 *
 * usage: early_thread [WORK]   (default 2,000,000 steps)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_t early;
static long work = 2000000;
static volatile double result;

static void *worker(void *arg)
{
    (void)arg;
    double x = 1;
    for (long i = 0; i < work; i++)
        x = x * 1.0000001 + 0.5;
    result = x;
    return NULL;
}

__attribute__((constructor)) static void start_early(void)
{
    const char *w = getenv("EARLY_WORK");
    if (w)
        work = atol(w);
    pthread_create(&early, NULL, worker, NULL);
}

int main(void)
{
    pthread_join(early, NULL);
    printf("%.3e\n", result);
    return 0;
}
