/* omp_serial_fork.c: the master thread runs a serial loop before each parallel region (a
 * balanced parallel for); the serial part is the planted cause of the time the other
 * threads spend idle, and it is not the parallel loop's imbalance.
 * lime-corpus: cause=serial section=the serial part before the fork
 * usage: omp_serial_fork [-t THREADS] [-r REPS]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 4096
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
    double s = 0;
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < 200000; i++) /* PLANTED */
            s += i * 1e-9;
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++)
            a[i] = a[i] * 0.5 + s + i;
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
