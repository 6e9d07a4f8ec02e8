/* tree_locks.c: P threads insert keys into one binary search tree with a mutex per node
 * (hand-over-hand locking down the path), the idiom of tree builds in n-body codes. Each thread
 * inserts its own keys (static partition), but the shape of the tree, and so the path each
 * insertion walks and the locks it meets, depends on the order the threads' insertions
 * happened in: the traced run decided it, and the replay keeps each thread's recorded work.
 *
 * usage: tree_locks [-t THREADS] [-n KEYS_PER_THREAD]   (defaults 4 threads, 2000 keys)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct node {
    long key;
    struct node *left, *right;
    pthread_mutex_t m;
};

static int P = 4, N = 2000;
static struct node root = { .key = 1L << 40, .m = PTHREAD_MUTEX_INITIALIZER };

static struct node *new_node(long key)
{
    struct node *n = calloc(1, sizeof *n);
    n->key = key;
    pthread_mutex_init(&n->m, NULL);
    return n;
}

static void insert(long key)
{
    struct node *cur = &root;
    pthread_mutex_lock(&cur->m);
    for (;;) {
        struct node **next = key < cur->key ? &cur->left : &cur->right;
        if (!*next) {
            *next = new_node(key);
            pthread_mutex_unlock(&cur->m);
            return;
        }
        pthread_mutex_lock(&(*next)->m);
        pthread_mutex_unlock(&cur->m);
        cur = *next;
    }
}

static void *worker(void *arg)
{
    long me = (long)arg;
    unsigned long x = 0x9e3779b97f4a7c15UL * (me + 1);
    for (int i = 0; i < N; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        insert((long)(x % (1UL << 41)));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "t:n:")) != -1) {
        if (c == 't') P = atoi(optarg);
        else if (c == 'n') N = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-t THREADS] [-n KEYS]\n", argv[0]); return 2; }
    }
    if (P < 1 || P > 256) { fprintf(stderr, "bad -t\n"); return 2; }
    pthread_t th[256];
    for (long t = 0; t < P; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < P; t++)
        pthread_join(th[t], NULL);
    printf("done\n");
    return 0;
}
