// cpp_latch.cpp: std::thread workers with uneven work count down a std::latch, which the
// main thread waits on before it reads their results (and joins them at the end).
// lime-corpus: cause=control-flow section=the latch
// usage: cpp_latch [-t THREADS]
#include <cstdio>
#include <cstdlib>
#include <latch>
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
    std::latch done(P);
    std::vector<std::thread> th;
    for (int t = 0; t < P; t++)
        th.emplace_back([&, t] {
            double x = 0;
            for (int i = 0; i < 20000; i++)
                x += i * 0.25;
            for (long j = 0; j < 40000L * t; j++) // PLANTED
                x = x * 0.5 + j;
            out[t] = x;
            done.count_down();
            for (int i = 0; i < 1000; i++)
                x += i;
        });
    done.wait();
    double s = 0;
    for (double v : out)
        s += v;
    for (auto &x : th)
        x.join();
    std::printf("%g\n", s);
    return 0;
}
