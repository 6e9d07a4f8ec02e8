/* omp_tasks_uneven.c: explicit tasks created by a `single`; the last task is far heavier than the rest, and the team waits for it at the region's end.
 * lime-corpus: cause=control-flow section=the parallel loop
 * usage: omp_tasks_uneven [-t THREADS] [-r REPS]
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
#pragma omp parallel
#pragma omp single
        for (int k = 0; k < 16; k++) {
#pragma omp task firstprivate(k)
            {
                double x = 0;
                long n = k == 15 ? 600000 : 2000;
                for (long j = 0; j < n; j++) /* PLANTED */
                    x += j * 0.5;
                a[k] = x;
            }
        }
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
