/* omp_sections_uneven.c: `parallel sections`, one of which is far heavier than the others.
 * lime-corpus: cause=control-flow section=the parallel loop
 * usage: omp_sections_uneven [-t THREADS] [-r REPS]
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
#pragma omp parallel sections
        {
#pragma omp section
            { double x = 0; for (int j = 0; j < 1000; j++) x += j; a[0] = x; }
#pragma omp section
            { double x = 0; for (int j = 0; j < 1000; j++) x += j; a[1] = x; }
#pragma omp section
            {
                double x = 0;
                for (int j = 0; j < 400000; j++) /* PLANTED */
                    x += j * 0.5;
                a[2] = x;
            }
#pragma omp section
            { double x = 0; for (int j = 0; j < 1000; j++) x += j; a[3] = x; }
        }
    }
    printf("%g\n", a[N - 1]);
    return 0;
}
