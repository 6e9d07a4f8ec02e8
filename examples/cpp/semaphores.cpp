// semaphores.cpp: C++20 semaphores (libstdc++ builds them on a futex word in the program's own
// code: a compare-and-swap takes a unit, a fetch-and-add gives it back and wakes the futex).
//
//   lock: P threads each do W steps of private work, then C steps on a shared total while
//         holding a std::binary_semaphore used as a lock, N times.
//   pipe: P/2 producer/consumer pairs; each producer hands its consumer N items through a
//         ring of 4 slots guarded by two std::counting_semaphore<4> (free slots, full slots);
//         both sides do W steps of work per item.
//
// Each thread's work is fixed by its arguments, whatever the interleaving.
//
// usage: semaphores lock|pipe [THREADS] [ROUNDS] [WORK] [CRITICAL]   (defaults 4 1000 30 20)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <semaphore>
#include <thread>
#include <vector>

// W steps of a dependent chain, not folded away by the compiler.
__attribute__((noinline)) static unsigned long steps(long w, unsigned long x)
{
    for (long k = 0; k < w; k++)
        x = x * 2862933555777941757UL + 3037000493UL;
    return x;
}

static std::binary_semaphore guard(1);
static unsigned long total;

struct Ring {
    std::counting_semaphore<4> free_slots{4};
    std::counting_semaphore<4> full_slots{0};
    unsigned long slot[4];
};

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "lock";
    int p = argc > 2 ? std::atoi(argv[2]) : 4;
    long n = argc > 3 ? std::atol(argv[3]) : 1000;
    long w = argc > 4 ? std::atol(argv[4]) : 30;
    long c = argc > 5 ? std::atol(argv[5]) : 20;
    bool lock = !std::strcmp(mode, "lock");
    if ((!lock && std::strcmp(mode, "pipe")) || p < 1 || p > 256 || n < 0 || w < 0 || c < 0
        || (!lock && p % 2)) {
        std::fprintf(stderr, "usage: %s lock|pipe [THREADS (even for pipe)] [ROUNDS] [WORK] "
                             "[CRITICAL]\n", argv[0]);
        return 2;
    }
    std::vector<unsigned long> out(p);
    std::vector<std::thread> threads;
    std::vector<Ring> rings(lock ? 0 : p / 2);
    for (int t = 0; t < p; t++) {
        if (lock) {
            threads.emplace_back([&, t] {
                unsigned long x = 12345 + t;
                for (long i = 0; i < n; i++) {
                    x = steps(w, x);
                    guard.acquire();
                    total = steps(c, total) + 1;
                    guard.release();
                }
                out[t] = x;
            });
        } else if (t % 2 == 0) {
            threads.emplace_back([&, t] {
                Ring& r = rings[t / 2];
                unsigned long x = 12345 + t;
                for (long i = 0; i < n; i++) {
                    x = steps(w, x);
                    r.free_slots.acquire();
                    r.slot[i % 4] = x;
                    r.full_slots.release();
                }
                out[t] = x;
            });
        } else {
            threads.emplace_back([&, t] {
                Ring& r = rings[t / 2];
                unsigned long x = 0;
                for (long i = 0; i < n; i++) {
                    r.full_slots.acquire();
                    unsigned long v = r.slot[i % 4];
                    r.free_slots.release();
                    x = steps(w, x + v);
                }
                out[t] = x;
            });
        }
    }
    for (auto& t : threads)
        t.join();
    unsigned long sum = total;
    for (unsigned long v : out)
        sum += v;
    std::printf("%s sum %lu\n", mode, sum);
    return 0;
}
