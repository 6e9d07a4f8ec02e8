/* omp_reduction_uneven.c: a `parallel for reduction(+:sum)` where every 8th iteration takes a
 * slow path; the iterations that take it are not spread evenly over the static blocks (the
 * slow path is taken only in the upper half of the index range).
 * lime-corpus: cause=control-flow section=the parallel for
 * usage: omp_reduction_uneven [-t THREADS] [-r REPS]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 8192

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
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (int i = 0; i < N; i++) {
            double x = i * 0.5;
            if (i > N / 2 && i % 8 == 0) { /* PLANTED */
                for (int j = 0; j < 400; j++)
                    x = x * 0.999 + j;
            }
            sum += x;
        }
    }
    printf("%g\n", sum);
    return 0;
}
