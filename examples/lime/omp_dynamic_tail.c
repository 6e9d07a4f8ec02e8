/* omp_dynamic_tail.c: a `parallel for schedule(dynamic, 16)` whose last chunk of iterations is far heavier than the rest: whoever takes it finishes last.
 * lime-corpus: cause=control-flow section=the parallel loop
 * usage: omp_dynamic_tail [-t THREADS] [-r REPS]
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
#pragma omp parallel for schedule(dynamic, 16)
        for (int i = 0; i < N; i++) {
            double x = 0;
            long n = i >= N - 16 ? 400000 : 100; /* the last chunk is the heavy one */
            for (long j = 0; j < n; j++) /* PLANTED */
                x += j * 0.5 + r;
            a[i] = x;
        }
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
