/* A SIGEV_THREAD notification whose thread cannot be created for the moment
 * (pthread_create fails with EAGAIN: RLIMIT_NPROC, the system's thread
 * limit, a pids cgroup, or no memory for the stack) is not lost: the library
 * tries again, pausing between tries, until the thread is created, and the
 * function runs once. glibc gives such a notification up at the first
 * failure, and so did the library.
 *
 * This program defines pthread_create over the next definition (looked up
 * with dlsym(RTLD_NEXT) before the first request), hence `-rdynamic`: the
 * library's calls come here too. While `refuse` is set, a creation whose
 * attributes ask for MARKER bytes of stack (the notification's, and no other)
 * fails with EAGAIN. The program sees a creation refused, checks that the
 * function has not run, lets creations through again, and waits (10 s at
 * most) for the function to run.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include "check.h"

/* The stack size that marks the notification's thread. */
#define MARKER ((size_t)3 << 20)

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn next_create;
/* Set: a marked creation fails. */
static int refuse;
/* Marked creations refused so far. */
static int refused;

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
    size_t size = 0;
    if (a && pthread_attr_getstacksize(a, &size) == 0 && size == MARKER &&
        __atomic_load_n(&refuse, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&refused, 1, __ATOMIC_SEQ_CST);
        return EAGAIN;
    }
    return next_create(t, a, f, arg);
}

static sem_t notified;
static int runs;

static void on_done(union sigval v) {
    CHECK(v.sival_int == 42);
    __atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
    sem_post(&notified);
}

/* Takes `s`, waiting 10 s at most: 0 once taken, else -1. */
static int wait_10s(sem_t *s) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (sem_timedwait(s, &until) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

int main(void) {
    next_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    CHECK(next_create != NULL);
    if (!next_create)
        return finish();
    CHECK(sem_init(&notified, 0, 0) == 0);
    int fd = temp_file("notify-retry");
    CHECK(write(fd, "abcd", 4) == 4);
    pthread_attr_t attr;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, MARKER) == 0);

    static struct aiocb cb;
    static char buf[4];
    aiocb_on(&cb, fd, buf, 4, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb.aio_sigevent.sigev_notify_function = on_done;
    cb.aio_sigevent.sigev_notify_attributes = &attr;
    cb.aio_sigevent.sigev_value.sival_int = 42;
    __atomic_store_n(&refuse, 1, __ATOMIC_SEQ_CST);
    CHECK(aio_read(&cb) == 0);
    /* The notification's thread is refused at least once (10 s at most). */
    for (int i = 0; i < 10000 && __atomic_load_n(&refused, __ATOMIC_SEQ_CST) == 0; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    CHECK(__atomic_load_n(&refused, __ATOMIC_SEQ_CST) >= 1);
    CHECK(__atomic_load_n(&runs, __ATOMIC_SEQ_CST) == 0);
    __atomic_store_n(&refuse, 0, __ATOMIC_SEQ_CST);
    /* Lost, it never comes. */
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "the notification did not come after %d refused creation(s)\n",
                __atomic_load_n(&refused, __ATOMIC_SEQ_CST));
        failures++;
    }
    CHECK(__atomic_load_n(&runs, __ATOMIC_SEQ_CST) == 1);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 4);
    CHECK(memcmp(buf, "abcd", 4) == 0);
    CHECK(pthread_attr_destroy(&attr) == 0);
    return finish();
}
