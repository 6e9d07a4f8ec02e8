// cpp_std_barrier.cpp: C++20 std::thread workers in phases separated by a std::barrier; in
// each phase thread t's inner loop runs longer the larger t is.
// lime-corpus: cause=control-flow section=the barrier
// usage: cpp_std_barrier [-t THREADS] [-r PHASES]
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <vector>

int main(int argc, char **argv)
{
    int P = 4, R = 4, c;
    while ((c = getopt(argc, argv, "t:r:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'r') R = atoi(optarg);
        else return 2;
    }
    std::barrier bar(P);
    std::vector<double> out(P);
    std::vector<std::thread> th;
    for (int t = 0; t < P; t++)
        th.emplace_back([&, t] {
            double x = 0;
            for (int r = 0; r < R; r++) {
                for (int i = 0; i < 20000; i++)
                    x += i * 0.25;
                for (long j = 0; j < 10000L * t; j++) // PLANTED
                    x = x * 0.5 + j;
                bar.arrive_and_wait();
            }
            out[t] = x;
        });
    for (auto &x : th)
        x.join();
    std::printf("%g\n", out[P - 1]);
    return 0;
}
