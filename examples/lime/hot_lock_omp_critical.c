/* hot_lock_omp_critical.c: a `parallel for` whose iterations enter two named critical sections,
 * a short one and a long one; the threads wait for the long one.
 * lime-corpus: cause=hot-lock section=none (lock waiting: isim locks)
 * usage: hot_lock_omp_critical [-t THREADS] [-n ITERATIONS]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double hist[64], total;

int main(int argc, char **argv)
{
    int P = 4, n = 1200, c;
    while ((c = getopt(argc, argv, "t:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') n = atoi(optarg);
        else return 2;
    }
    omp_set_num_threads(P);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        double x = i;
        for (int j = 0; j < 150; j++)
            x = x * 0.999 + j;
#pragma omp critical(small)
        hist[i & 63] += x;
#pragma omp critical(big) /* PLANTED */
        {
            for (int k = 0; k < 64; k++)
                total += hist[k] * 1e-9 + x * 1e-12;
        }
    }
    printf("%g\n", total);
    return 0;
}
