/* channels.c: a producer hands N items to a consumer through a kernel channel, each item
 * after WORK steps of private work; the consumer does a quarter of that with each item. The
 * consumer waits in `read` for most of its time, the run takes about the producer's work, and
 * neither depends on how the host scheduled the traced run. MODE picks the channel:
 *   pipe      a pipe, one `long` per item (write / read);
 *   eventfd   an eventfd in semaphore mode (eventfd_write / eventfd_read: glibc's own calls);
 *   socket    a socket pair both ways: each item a request the other thread answers (send /
 *             recv), so each side waits for the other in turn;
 *   stdio     a pipe wrapped in FILE streams (fprintf + fflush / fscanf);
 *   dup       a pipe whose ends are used through copies (the consumer reads a `dup` of the
 *             read end, the producer writes a `dup2` of the write end at descriptor 100, the
 *             originals closed).
 *
 * usage: channels MODE [N] [WORK]   (defaults 200 items, 2000 steps)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

static long N = 200, WORK = 2000;
static int fds[2], efd;
static const char *mode;
static long total; /* the consumer's result, printed by main */

/* A dependent integer chain, no memory traffic. */
__attribute__((noinline)) static long work(long x, long n)
{
    for (long j = 0; j < n; j++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x & 0xff;
}

static void *producer(void *arg)
{
    (void)arg;
    FILE *f = strcmp(mode, "stdio") == 0 ? fdopen(fds[1], "w") : NULL;
    for (long i = 0; i < N; i++) {
        long v = work(i, WORK);
        if (strcmp(mode, "pipe") == 0 || strcmp(mode, "dup") == 0) {
            if (write(fds[1], &v, sizeof v) != sizeof v)
                abort();
        } else if (strcmp(mode, "eventfd") == 0) {
            if (eventfd_write(efd, 1))
                abort();
        } else if (f) {
            fprintf(f, "%ld\n", v);
            fflush(f);
        } else {
            /* socket: a request, then wait for the answer */
            long r;
            if (send(fds[0], &v, sizeof v, 0) != sizeof v || recv(fds[0], &r, sizeof r, 0) != sizeof r)
                abort();
        }
    }
    if (f)
        fclose(f);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    long sum = 0;
    FILE *f = strcmp(mode, "stdio") == 0 ? fdopen(fds[0], "r") : NULL;
    for (long i = 0; i < N; i++) {
        long v = 0;
        if (strcmp(mode, "pipe") == 0 || strcmp(mode, "dup") == 0) {
            if (read(fds[0], &v, sizeof v) != sizeof v)
                abort();
        } else if (strcmp(mode, "eventfd") == 0) {
            eventfd_t u;
            if (eventfd_read(efd, &u))
                abort();
            v = (long)u;
        } else if (f) {
            if (fscanf(f, "%ld", &v) != 1)
                abort();
        } else {
            if (recv(fds[1], &v, sizeof v, 0) != sizeof v)
                abort();
        }
        sum += work(v, WORK / 4);
        if (strcmp(mode, "socket") == 0 && send(fds[1], &sum, sizeof sum, 0) != sizeof sum)
            abort();
    }
    total = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s pipe|eventfd|socket|stdio|dup [N] [WORK]\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    if (argc > 2)
        N = atol(argv[2]);
    if (argc > 3)
        WORK = atol(argv[3]);
    int r;
    if (strcmp(mode, "pipe") == 0 || strcmp(mode, "stdio") == 0)
        r = pipe(fds);
    else if (strcmp(mode, "dup") == 0) {
        r = pipe(fds);
        if (!r) {
            int rd = dup(fds[0]), wr = dup2(fds[1], 100);
            r = rd < 0 || wr != 100 || close(fds[0]) || close(fds[1]);
            fds[0] = rd;
            fds[1] = wr;
        }
    }
    else if (strcmp(mode, "eventfd") == 0)
        r = (efd = eventfd(0, EFD_SEMAPHORE)) < 0;
    else if (strcmp(mode, "socket") == 0)
        r = socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
    else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    if (r) {
        perror("channel");
        return 1;
    }
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("sum %ld\n", total);
    return 0;
}
