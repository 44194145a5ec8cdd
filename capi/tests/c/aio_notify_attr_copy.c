/* A SIGEV_THREAD notification's attributes (sigev_notify_attributes) are
 * read when the request is submitted: the program may destroy the attribute
 * object, or reuse it, once aio_read or lio_listio returned. glibc reads
 * them when the notification fires, which it does before aio_suspend sees
 * the request done, so a glibc program may destroy them once aio_suspend
 * returned; the library created the thread after waking the waiters, and
 * read an object the program may have destroyed by then.
 *
 * Each read here waits on a pipe; the attribute object (a stack size, a
 * guard size and an affinity of CPU 0, on the heap) is destroyed, filled
 * with garbage and freed before the byte is written. The function checks
 * that its thread got the stack size, the guard size and the CPU set asked
 * for.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include "check.h"
#include "waits.h"

#define STACK ((size_t)3 << 20)
#define GUARD ((size_t)64 << 10)

static sem_t notified;
static size_t seen_stack, seen_guard;
static int seen_cpu0_only;

static void on_done(union sigval v) {
    (void)v;
    pthread_attr_t a;
    CHECK(pthread_getattr_np(pthread_self(), &a) == 0);
    CHECK(pthread_attr_getstacksize(&a, &seen_stack) == 0);
    CHECK(pthread_attr_getguardsize(&a, &seen_guard) == 0);
    pthread_attr_destroy(&a);
    cpu_set_t c;
    CHECK(sched_getaffinity(0, sizeof c, &c) == 0);
    seen_cpu0_only = CPU_COUNT(&c) == 1 && CPU_ISSET(0, &c);
    sem_post(&notified);
}

/* One read of a pipe with SIGEV_THREAD and a fresh heap attribute object
 * (with CPU 0 as its CPU set if `affinity`), destroyed and freed before the
 * byte comes, by aio_read or by lio_listio (`lio`). */
static void one(int affinity, int lio, const char *what) {
    int p[2];
    CHECK(pipe(p) == 0);
    pthread_attr_t *attr = malloc(sizeof *attr);
    CHECK(attr != NULL);
    CHECK(pthread_attr_init(attr) == 0);
    CHECK(pthread_attr_setstacksize(attr, STACK) == 0);
    CHECK(pthread_attr_setguardsize(attr, GUARD) == 0);
    if (affinity) {
        cpu_set_t c;
        CPU_ZERO(&c);
        CPU_SET(0, &c);
        CHECK(pthread_attr_setaffinity_np(attr, sizeof c, &c) == 0);
    }
    static struct aiocb cb;
    static char buf[1];
    aiocb_on(&cb, p[0], buf, 1, 0);
    sigev_thread_on(&cb, on_done, attr);
    seen_stack = seen_guard = 0;
    seen_cpu0_only = -1;
    CHECK(submit_read(&cb, lio) == 0);
    CHECK(pthread_attr_destroy(attr) == 0);
    memset(attr, 0xa5, sizeof *attr);
    free(attr);
    CHECK(write(p[1], "x", 1) == 1);
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "%s: no notification\n", what);
        failures++;
    } else if (seen_stack != STACK || seen_guard != GUARD || seen_cpu0_only != 1) {
        fprintf(stderr, "%s: stack %zu guard %zu CPU 0 alone %d, not %zu %zu 1\n", what,
                seen_stack, seen_guard, seen_cpu0_only, STACK, GUARD);
        failures++;
    }
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 1);
    close(p[0]);
    close(p[1]);
}

int main(void) {
    CHECK(sem_init(&notified, 0, 0) == 0);
    one(1, 0, "aio_read, CPU 0 in the attributes");
    one(1, 1, "lio_listio, CPU 0 in the attributes");
    return finish();
}
