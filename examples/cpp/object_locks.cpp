// object_locks.cpp: per-object locking with std::mutex and std::lock_guard. Each of T
// std::threads updates objects of a shared array of accounts, each with its own mutex, in a
// fixed pattern (thread t touches objects t, t + T, t + 2T, ... and one shared "bank" object
// every 16th step), with private work between. The work per thread is fixed, so the simulated
// time must not depend on how the host scheduled the traced run.
//
// usage: object_locks [THREADS] [STEPS] [WORK]   (defaults 4 threads, 400 steps, 300 steps)
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

struct Account {
    std::mutex m;
    long balance = 0;
};

static long work(long seed, int n)
{
    long x = seed;
    for (int j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

int main(int argc, char **argv)
{
    int T = argc > 1 ? std::atoi(argv[1]) : 4;
    int steps = argc > 2 ? std::atoi(argv[2]) : 400;
    int w = argc > 3 ? std::atoi(argv[3]) : 300;
    if (T < 1 || T > 256) return 2;
    std::vector<Account> accounts(64);
    Account bank;
    std::vector<std::thread> threads;
    for (int t = 0; t < T; t++)
        threads.emplace_back([&, t] {
            for (int s = 0; s < steps; s++) {
                long v = work(t * 1000 + s, w);
                Account &a = accounts[(t + s * T) % accounts.size()];
                {
                    std::lock_guard<std::mutex> g(a.m);
                    a.balance += v;
                }
                if (s % 16 == 0) {
                    std::lock_guard<std::mutex> g(bank.m);
                    bank.balance += v;
                }
            }
        });
    for (auto &th : threads) th.join();
    std::printf("bank %ld\n", bank.balance);
    return 0;
}
