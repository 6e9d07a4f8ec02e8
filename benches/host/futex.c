/* futex.c: what a futex call costs on this machine, for `[locks] model = "futex"`
 * (configs/host-xeon.toml, docs/config.md): a futex wait that returns at once because the
 * word is not the expected value, a futex wake with nobody asleep, and a ping-pong of two
 * threads that sleep in futex wait and wake each other (one way: a wake and the woken thread
 * running); and `[locks] spin`: Rust's std Mutex spinning on a held word, 100 times a load
 * of the word and a `pause` (`std::hint::spin_loop`); and `[locks] call`: an uncontended
 * pthread_mutex_lock+unlock pair, over an empty loop of the same shape.
 *
 *   gcc -O2 -g -pthread -o futex benches/host/futex.c && ./futex
 *
 * `./futex pair N` and `./futex empty N` run only those loops, N times, to be traced: isim's
 * own cost of the pair without `call` is the difference of their simulated cycles over N
 * (`isim run --set locks.call=0`), and `call` is half of what the host's pair costs beyond it.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdatomic.h>
#include <pthread.h>
#include <time.h>
#include <immintrin.h>
static long fx(atomic_int *a, int op, int v){return syscall(SYS_futex,a,op,v,0,0,0);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
atomic_int w0, turn;
void *pong(void*x){ for(int i=0;i<2000;i++){ while(atomic_load(&turn)!=1) fx(&turn,FUTEX_WAIT_PRIVATE,0); atomic_store(&turn,0); fx(&turn,FUTEX_WAKE_PRIVATE,1);} return 0;}
static pthread_mutex_t m=PTHREAD_MUTEX_INITIALIZER;
volatile long counter;
static void *idle(void*x){return x;}
/* The pair loop (or the empty one): a thread was created first, so glibc takes its
 * multithreaded paths. */
static double pair(long n,int lock){
  pthread_t p; pthread_create(&p,0,idle,0); pthread_join(p,0);
  double t=now();
  if(lock) for(long i=0;i<n;i++){ pthread_mutex_lock(&m); counter++; pthread_mutex_unlock(&m); }
  else for(long i=0;i<n;i++) counter++;
  return (now()-t)/n;
}
int main(int argc,char**argv){
  if(argc==3){ int lock=argv[1][0]=='p'; printf("%s %.2f ns\n",argv[1],pair(atol(argv[2]),lock)); return 0; }
  int n=200000; double t=now();
  for(int i=0;i<n;i++) fx(&w0,FUTEX_WAIT_PRIVATE,1);
  printf("futex_wait EAGAIN %.0f ns\n",(now()-t)/n);
  t=now(); for(int i=0;i<n;i++) fx(&w0,FUTEX_WAKE_PRIVATE,1);
  printf("futex_wake none %.0f ns\n",(now()-t)/n);
  pthread_t p; pthread_create(&p,0,pong,0);
  t=now();
  for(int i=0;i<2000;i++){ atomic_store(&turn,1); fx(&turn,FUTEX_WAKE_PRIVATE,1); while(atomic_load(&turn)!=0) fx(&turn,FUTEX_WAIT_PRIVATE,1);}
  printf("sleep/wake one-way %.0f ns\n",(now()-t)/4000);
  pthread_join(p,0);
  atomic_store(&w0,1);
  t=now();
  for(int i=0;i<n;i++){ int k=100; while(atomic_load_explicit(&w0,memory_order_relaxed)==1 && --k) _mm_pause(); }
  printf("Rust's spin (100 loads and pauses) %.0f ns\n",(now()-t)/n);
  double empty=pair(20000000,0), locked=pair(20000000,1);
  printf("pthread_mutex_lock+unlock pair, uncontended %.2f ns (empty loop %.2f ns)\n",locked,empty);
}
