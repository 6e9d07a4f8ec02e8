/* omp_nested_inner.c: nested parallel regions: an outer team of two, each running an inner triangular `parallel for` on half the threads (at least 3, so that LIME has threads to compare).
 * lime-corpus: cause=control-flow section=the parallel loop
 * usage: omp_nested_inner [-t THREADS] [-r REPS]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 1200
static double a[N];

int main(int argc, char **argv)
{
    int P = 4, R = 4, c;
    while ((c = getopt(argc, argv, "t:r:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'r') R = atoi(optarg);
        else return 2;
    }
    omp_set_num_threads(P);
    omp_set_max_active_levels(2);
    for (int r = 0; r < R; r++) {
#pragma omp parallel num_threads(2)
        {
            int o = omp_get_thread_num();
#pragma omp parallel for schedule(static) num_threads(P / 2 > 3 ? P / 2 : 3)
            for (int i = 0; i < N; i++) {
                double x = 0;
                for (int j = 0; j < i; j++) /* PLANTED */
                    x += j * 0.25 + o;
                a[i] = x;
            }
        }
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
