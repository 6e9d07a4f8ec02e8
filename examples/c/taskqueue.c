/* taskqueue.c: a task queue under a mutex. Worker threads take tasks until the queue is
 * closed, waiting on a condition variable while it is empty; main pushes TASKS tasks in
 * batches and waits on a second condition variable until every task of the batch is done.
 *
 * Per run: TASKS tasks are executed in total (each by one worker); main locks the mutex once
 * per task pushed plus once per batch wait plus once to close, and broadcasts "work" once per
 * batch and once at close. Thread 0 creates and joins THREADS - 1 workers.
 *
 * usage: taskqueue [-t THREADS] [-n TASKS]   (defaults 4 threads, 400 tasks, batches of 50)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int P = 4, TASKS = 400;
#define BATCH 50
static int queue[BATCH], qlen, pending, closed;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static long results[256];

__attribute__((noinline)) long run_task(int t)
{
    long s = 0;
    for (int i = 0; i < 300 + (t % 7) * 100; i++)
        s += (t ^ i) & 15;
    return s;
}

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    pthread_mutex_lock(&m);
    for (;;) {
        while (qlen == 0 && !closed)
            pthread_cond_wait(&work, &m);
        if (qlen == 0)
            break;
        int t = queue[--qlen];
        pthread_mutex_unlock(&m);
        long r = run_task(t);
        pthread_mutex_lock(&m);
        results[me] += r;
        if (--pending == 0)
            pthread_cond_signal(&idle);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') TASKS = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-n TASKS]\n", argv[0]); return 2; }
    }
    if (P < 2 || P > 256 || TASKS < 1) { fprintf(stderr, "bad -t or -n\n"); return 2; }
    pthread_t th[256];
    for (long t = 1; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int done = 0; done < TASKS; done += BATCH) {
        int n = TASKS - done < BATCH ? TASKS - done : BATCH;
        for (int i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            queue[qlen++] = done + i;
            pending++;
            pthread_mutex_unlock(&m);
        }
        pthread_mutex_lock(&m);
        pthread_cond_broadcast(&work);
        while (pending > 0)
            pthread_cond_wait(&idle, &m);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    closed = 1;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&m);
    long s = 0;
    for (int t = 1; t < P; t++) {
        pthread_join(th[t], NULL);
        s += results[t];
    }
    printf("checksum %ld\n", s);
    return 0;
}
