/* omp_critical_uneven.c: a triangular `parallel for` that adds each iteration's result inside `omp critical`.
 * lime-corpus: cause=control-flow section=the parallel loop
 * usage: omp_critical_uneven [-t THREADS] [-r REPS]
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
    double sum = 0;
    for (int r = 0; r < R; r++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            double x = 0;
            for (int j = 0; j < i; j++) /* PLANTED */
                x += j * 0.25;
#pragma omp critical
            sum += x;
        }
    }
    a[N - 1] = sum;
    printf("%g\n", a[N - 1]);
    return 0;
}
