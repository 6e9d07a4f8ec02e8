// latch_late.cpp: std::thread workers with uneven work count down a C++20 std::latch; the
// main thread waits on it, then runs work of its own. With SLEEP_MS > 0 main sleeps that
// long (host time, no simulated time) before it waits: every worker has counted down by
// then, so nobody is notified and main reads the latch at zero with a plain load. Replayed,
// main must still go on only after the slowest worker's count-down in simulated time (issue
// 42: a late look at a latch is a wait for every count, whenever the host let main look).
// usage: latch_late [-t THREADS] [-s SLEEP_MS]   (defaults 4 threads, 0 ms)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <thread>
#include <unistd.h>
#include <vector>

static unsigned long work(unsigned long x, long n)
{
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

int main(int argc, char **argv)
{
    int P = 4, sleep_ms = 0, c;
    while ((c = getopt(argc, argv, "t:s:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 's') sleep_ms = atoi(optarg);
        else return 2;
    }
    std::vector<unsigned long> out(P);
    std::latch done(P);
    std::vector<std::thread> th;
    for (int t = 0; t < P; t++)
        th.emplace_back([&, t] {
            out[t] = work(t, 50000L * (t + 1)); // thread t: t + 1 units
            done.count_down();
        });
    if (sleep_ms > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    done.wait();
    unsigned long s = 0;
    for (unsigned long v : out)
        s ^= v;
    s = work(s, 50000L); // one unit after the latch
    for (auto &x : th)
        x.join();
    std::printf("%lu\n", s & 0xff);
    return 0;
}
