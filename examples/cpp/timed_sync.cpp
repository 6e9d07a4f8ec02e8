// timed_sync.cpp: the timed forms of C++'s and POSIX's waits, beside their untimed twins.
//
// P threads, ROUNDS rounds each. In every round a token goes once around the threads through
// condition variables, one per thread (thread i waits on its own for turn == i, does WORK
// steps of private work, passes the turn on and wakes the next thread's); then each thread adds to a counter under a std::timed_mutex, reads a
// table under a std::shared_timed_mutex, and runs WORK steps inside a section that a POSIX
// semaphore of 2 units lets at most two threads into. Every thread's work is fixed by the
// arguments, so the replay must not depend on how the host ran the traced program.
//
// With `timed`, every wait has a timeout that never expires (10 s): `wait_for`,
// `try_lock_for`, `try_lock_shared_for` and `sem_clockwait`, which libstdc++ and glibc run as
// pthread_cond_clockwait, pthread_mutex_clocklock, pthread_rwlock_clockrdlock and
// sem_clockwait; with `plain`, the untimed calls. Both must replay alike (tests/sync.rs).
//
// usage: timed_sync plain|timed [THREADS [ROUNDS [WORK]]]   (defaults 4 threads, 200, 300)
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <semaphore.h>
#include <shared_mutex>
#include <thread>
#include <vector>

static std::mutex turn_lock;
static std::condition_variable turn_changed[64];
static int turn;
static std::timed_mutex counter_lock;
static long counter;
static std::shared_timed_mutex table_lock;
static long table[64];
static sem_t pair;
static bool timed;
static const auto patience = std::chrono::seconds(10);

/* Private work: a dependent integer chain, no memory traffic. */
__attribute__((noinline)) static long work(long x, int n)
{
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void fail(const char *what)
{
    fprintf(stderr, "timed_sync: %s timed out\n", what);
    exit(1);
}

static void worker(int me, int threads, int rounds, int steps)
{
    long v = me;
    for (int r = 0; r < rounds; r++) {
        {
            std::unique_lock<std::mutex> l(turn_lock);
            if (timed) {
                while (turn != me)
                    if (turn_changed[me].wait_for(l, patience) == std::cv_status::timeout)
                        fail("wait_for");
            } else {
                turn_changed[me].wait(l, [&] { return turn == me; });
            }
            v = work(v + r, steps);
            turn = (me + 1) % threads;
        }
        turn_changed[(me + 1) % threads].notify_one();
        if (timed) {
            if (!counter_lock.try_lock_for(patience))
                fail("try_lock_for");
        } else {
            counter_lock.lock();
        }
        counter += v;
        counter_lock.unlock();
        if (timed) {
            if (!table_lock.try_lock_shared_for(patience))
                fail("try_lock_shared_for");
        } else {
            table_lock.lock_shared();
        }
        v += table[(v + r) & 63];
        table_lock.unlock_shared();
        if (timed) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            t.tv_sec += 10;
            if (sem_clockwait(&pair, CLOCK_MONOTONIC, &t) != 0)
                fail("sem_clockwait");
        } else {
            sem_wait(&pair);
        }
        v = work(v, steps);
        sem_post(&pair);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "plain") && strcmp(argv[1], "timed"))) {
        fprintf(stderr, "usage: %s plain|timed [THREADS [ROUNDS [WORK]]]\n", argv[0]);
        return 2;
    }
    timed = !strcmp(argv[1], "timed");
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    int rounds = argc > 3 ? atoi(argv[3]) : 200;
    int steps = argc > 4 ? atoi(argv[4]) : 300;
    if (threads < 1 || threads > 64 || rounds < 1 || steps < 0) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    for (int i = 0; i < 64; i++)
        table[i] = i * 7;
    sem_init(&pair, 0, 2);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back(worker, t, threads, rounds, steps);
    for (auto &t : ts)
        t.join();
    printf("counter %ld\n", counter);
    return 0;
}
