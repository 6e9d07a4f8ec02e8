/* futex.c: what a futex call costs on this machine, for `[locks] model = "futex"`
 * (configs/host-xeon.toml, docs/config.md): a futex wait that returns at once because the
 * word is not the expected value, a futex wake with nobody asleep, and a ping-pong of two
 * threads that sleep in futex wait and wake each other (one way: a wake and the woken thread
 * running); and `[locks] spin`: Rust's std Mutex spinning on a held word, 100 times a load
 * of the word and a `pause` (`std::hint::spin_loop`).
 *
 *   gcc -O2 -pthread -o futex benches/host/futex.c && ./futex
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
int main(){
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
}
