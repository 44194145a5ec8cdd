/* A program built against a glibc before 2.34 calls pthread_kill@GLIBC_2.2.5
 * (x86_64; @GLIBC_2.17 on aarch64), which glibc keeps with its old behaviour:
 * ESRCH for a thread that has exited (the default pthread_kill@@GLIBC_2.34
 * returns 0). Under LD_PRELOAD=libposixrt.so the program must get what
 * glibc gives it. Prints "ok" and exits 0, or says what differed. Built
 * against glibc alone (no -lposixrt): run plain and preloaded. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
__asm__(".symver pthread_kill,pthread_kill@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver pthread_kill,pthread_kill@GLIBC_2.17");
#endif

static void *quit(void *p)
{
    return p;
}

int main(void)
{
    pthread_t th;
    int r, e;
    /* A thread that has exited and been joined, as in the Open POSIX Test
     * Suite's pthread_kill/6-1 (glibc keeps its descriptor cached). */
    if (pthread_create(&th, NULL, quit, NULL) != 0 || pthread_join(th, NULL) != 0)
        return 2;
    errno = 0;
    r = pthread_kill(th, 0);
    e = errno;
#if defined(__x86_64__) || defined(__aarch64__)
    if (r != ESRCH) {
        printf("pthread_kill of an exited thread: %d (%s), want ESRCH\n", r, strerror(r));
        return 1;
    }
#endif
    if (e != 0) {
        printf("errno %d\n", e);
        return 1;
    }
    /* Live threads and bad numbers as ever. */
    if (pthread_kill(pthread_self(), 0) != 0 || pthread_kill(pthread_self(), -1) != EINVAL) {
        printf("pthread_kill of this thread\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
