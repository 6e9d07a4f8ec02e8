/* stack_reuse.c: two detached threads, the second created after the first has ended (main
 * sleeps between them), each running a loop whose variables live on its stack. The C library
 * hands the first thread's stack to the second, so in the traced run both used the same stack
 * addresses; in replay the sleep costs nothing and they run at once. They share no data: the
 * replay must not make them share cache lines (docs/tracing.md, "Thread stacks").
 *
 * Prints the address of a local variable of each thread (the same when the stack was reused).
 *
 * usage: stack_reuse [-n STEPS]   (default 200000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long STEPS = 200000;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int finished;
static long sink[2];

static void *worker(void *arg)
{
    long me = (long)arg;
    volatile long acc = me; /* on the stack: a load and a store per step */
    printf("thread %ld local at %p\n", me, (void *)&acc);
    for (long i = 0; i < STEPS; i++)
        acc = acc * 3 + i;
    sink[me] = acc;
    pthread_mutex_lock(&lock);
    finished++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "n:")) != -1) {
        if (c == 'n') STEPS = atol(optarg);
        else { fprintf(stderr, "usage: %s [-n STEPS]\n", argv[0]); return 2; }
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    pthread_create(&t, &attr, worker, (void *)0);
    /* Long enough for the first thread to end (and free its stack) under QEMU. */
    usleep(STEPS / 200000 * 1000000 + 1500000);
    pthread_create(&t, &attr, worker, (void *)1);
    pthread_mutex_lock(&lock);
    while (finished < 2)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    printf("%ld %ld\n", sink[0], sink[1]);
    return 0;
}
