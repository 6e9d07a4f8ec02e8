/* omp_single_extra.c: a parallel region whose `single` block does extra work; the team waits
 * for it at the single's implicit barrier.
 * lime-corpus: cause=control-flow section=the single's barrier
 * usage: omp_single_extra [-t THREADS] [-r REPS]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 4096
static double a[N];
static double t;

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
#pragma omp parallel
        {
#pragma omp single
            {
                for (int i = 0; i < 100000; i++) /* PLANTED */
                    t += i * 1e-9;
            }
#pragma omp for schedule(static)
            for (int i = 0; i < N; i++)
                a[i] = a[i] * 0.5 + t;
        }
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
