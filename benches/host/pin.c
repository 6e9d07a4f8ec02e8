/* pin.c: an LD_PRELOAD library for native runs of benches/host/locks.py. Each thread the
 * program creates is bound to its own CPU in creation order (the first to CPU 0, the second
 * to CPU 1, ..., wrapping), as isim gives each live thread its own core. Unbound, Linux on
 * this 2-vCPU guest sometimes starts a contended program's second worker on the first one's
 * CPU and leaves it there: the two then run one after the other, uncontended, and the run
 * is 3x faster than with both running at once (a 2-thread lock_counter at W = 10: 21 ms
 * against 52-74 ms in one batch of alternating runs); which of the two a batch's median
 * lands on was the largest part of the day-to-day spread of the native speedups. The main
 * thread stays unbound (it waits in its join).
 *
 *   gcc -O2 -shared -fPIC -o pin.so benches/host/pin.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

struct start {
    void *(*routine)(void *);
    void *arg;
    int cpu;
};

static int created;

static void *bound(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s.cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    return s.routine(s.arg);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *),
                   void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
            dlsym(RTLD_NEXT, "pthread_create");
    struct start *s = malloc(sizeof *s);
    if (!s)
        return real(thread, attr, routine, arg);
    s->routine = routine;
    s->arg = arg;
    s->cpu = (int)(__atomic_fetch_add(&created, 1, __ATOMIC_RELAXED) % sysconf(_SC_NPROCESSORS_ONLN));
    int err = real(thread, attr, bound, s);
    if (err)
        free(s);
    return err;
}
