/* omp_guided_tail.c: a `parallel for schedule(guided)` whose first iterations (all in the first, largest chunk) are far heavier than the rest.
 * lime-corpus: cause=control-flow section=the parallel loop
 * usage: omp_guided_tail [-t THREADS] [-r REPS]
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
    for (int r = 0; r < R; r++) {
#pragma omp parallel for schedule(guided)
        for (int i = 0; i < N; i++) {
            double x = 0;
            long n = i < 8 ? 300000 : 100; /* the first iterations are heavy */
            for (long j = 0; j < n; j++) /* PLANTED */
                x += j * 0.5 + r;
            a[i] = x;
        }
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
