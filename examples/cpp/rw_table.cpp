// rw_table.cpp: P threads each do W steps of private work, then read one entry of a shared
// table under a std::shared_mutex (glibc's pthread_rwlock) — or, one round in 16, write it —
// N times: a read-mostly lock of the kind caches and registries use. Each thread's work is
// fixed by its arguments; readers may hold the lock together.
//
// usage: rw_table [THREADS] [ROUNDS] [WORK]   (defaults 4, 2000, 300)
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

static std::shared_mutex lock;
static long table[64];

int main(int argc, char** argv)
{
    int p = argc > 1 ? std::atoi(argv[1]) : 4;
    int n = argc > 2 ? std::atoi(argv[2]) : 2000;
    int w = argc > 3 ? std::atoi(argv[3]) : 300;
    if (p < 1 || p > 256 || n < 0 || w < 0) {
        std::fprintf(stderr, "usage: %s [THREADS] [ROUNDS] [WORK]\n", argv[0]);
        return 2;
    }
    std::vector<long> out(p);
    std::vector<std::thread> threads;
    for (int t = 0; t < p; t++)
        threads.emplace_back([&, t] {
            unsigned long x = 12345 + t;
            long acc = 0;
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < w; k++) {
                    x = x * 6364136223846793005UL + 1442695040888963407UL;
                    acc += x >> 60;
                }
                if (i % 16 == t % 16) {
                    std::unique_lock writer(lock);
                    table[x % 64] += acc;
                } else {
                    std::shared_lock reader(lock);
                    acc += table[x % 64];
                }
            }
            out[t] = acc;
        });
    for (auto& t : threads)
        t.join();
    long sum = 0;
    for (long v : out)
        sum += v;
    std::printf("sum %ld\n", sum);
    return 0;
}
