// sync20.cpp: C++20 threads: std::thread workers, a std::mutex counter (std::lock_guard), a
// std::condition_variable hand-off (main waits until every worker has reported ready), and a
// phased loop on std::barrier, where worker 0 does extra work on the line marked PLANTED.
//
// Per worker (trace threads 1..THREADS; main is thread 0): STEPS std::barrier phases (futex
// waits and wakes, not pthread calls: libstdc++'s barrier spins, then sleeps on a futex);
// 2 mutex locks and 2 unlocks (ready, result); 1 condition notify (notify_one). Main: 1 lock,
// at least 1 condition wait, THREADS creates and THREADS joins.
//
// usage: sync20 [-t THREADS] [-s STEPS]   (defaults 4 workers, 20 steps)
#include <barrier>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

__attribute__((noinline)) double unit(long n, double seed)
{
    double x = seed;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
    return x;
}

int main(int argc, char **argv)
{
    int n = 4, steps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-s")) steps = atoi(argv[i + 1]);
    }
    if (n < 1 || n > 256 || steps < 1) { fprintf(stderr, "bad -t or -s\n"); return 2; }
    std::barrier bar(n);
    std::mutex m;
    std::condition_variable cv;
    int ready = 0;
    double total = 0;
    std::vector<std::thread> ts;
    for (int me = 0; me < n; me++)
        ts.emplace_back([&, me] {
            {
                std::lock_guard<std::mutex> g(m);
                ready++;
            }
            cv.notify_one();
            double acc = 0;
            for (int k = 0; k < steps; k++) {
                acc += unit(10000, k);
                if (me == 0)
                    acc += unit(30000, k); // PLANTED: worker 0's extra work in every phase
                bar.arrive_and_wait();
            }
            std::lock_guard<std::mutex> g(m);
            total += acc;
        });
    {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return ready == n; });
    }
    for (auto &t : ts)
        t.join();
    printf("checksum %.6e\n", total);
    return 0;
}
