// hot_lock_cpp_mutex.cpp: std::thread workers that update a shared map under one std::mutex
// (std::lock_guard) and their own counters under per-thread mutexes; the shared one is hot.
// lime-corpus: cause=hot-lock section=none (lock waiting: isim locks)
// usage: hot_lock_cpp_mutex [-t THREADS] [-n STEPS]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct alignas(64) Own {
    std::mutex m;
    long count = 0;
};

static std::mutex shared;
static std::map<long, double> seen;

int main(int argc, char **argv)
{
    int P = 4;
    long steps = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "-t") P = std::atoi(argv[i + 1]);
        else if (a == "-n") steps = std::atol(argv[i + 1]);
        else return 2;
    }
    std::vector<Own> own(P);
    std::vector<std::thread> th;
    for (int t = 0; t < P; t++)
        th.emplace_back([&, t] {
            for (long s = 0; s < steps; s++) {
                double x = t + s;
                for (int j = 0; j < 300; j++)
                    x = x * 0.999 + j;
                {
                    std::lock_guard<std::mutex> g(own[t].m);
                    own[t].count++;
                }
                std::lock_guard<std::mutex> g(shared); // PLANTED
                for (long k = 0; k < 40; k++)
                    seen[(s * 40 + k) % 512] += x * 1e-9;
            }
        });
    for (auto &x : th)
        x.join();
    long n = 0;
    for (auto &o : own)
        n += o.count;
    std::printf("%ld %zu\n", n, seen.size());
    return 0;
}
