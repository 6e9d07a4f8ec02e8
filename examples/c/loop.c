/* loop.c: a single-threaded strided loop over an array, for the callgrind comparison.
 *
 * usage: loop [N]   (default N = 100000)
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long kernel(long *a, long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        a[(i * 17) % n] += i;
        s += a[i];
    }
    return s;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (n < 1) { fprintf(stderr, "bad N\n"); return 2; }
    long *a = calloc(n, sizeof(long));
    printf("%ld\n", kernel(a, n));
    free(a);
    return 0;
}
