// cpp_thread_join.cpp: std::thread workers with uneven work (thread t's loop runs longer the
// larger t is), joined by the main thread: one join-delimited section.
// lime-corpus: cause=control-flow section=the join
// usage: cpp_thread_join [-t THREADS]
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <vector>

int main(int argc, char **argv)
{
    int P = 4, c;
    while ((c = getopt(argc, argv, "t:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else return 2;
    }
    std::vector<double> out(P);
    std::vector<std::thread> th;
    for (int t = 0; t < P; t++)
        th.emplace_back([&out, t] {
            double x = 0;
            for (int i = 0; i < 20000; i++)
                x += i * 0.25;
            for (long j = 0; j < 40000L * t; j++) // PLANTED
                x = x * 0.5 + j;
            out[t] = x;
        });
    for (auto &x : th)
        x.join();
    std::printf("%g\n", out[P - 1]);
    return 0;
}
