/* The waits the C AIO tests share, each bounded: a pause, a wait for one
 * request, a semaphore's. (For a test that defines _GNU_SOURCE.) */
#ifndef POSIXRT_TEST_WAITS_H
#define POSIXRT_TEST_WAITS_H
#include <aio.h>
#include <errno.h>
#include <semaphore.h>
#include <time.h>

/* Sleeps `ms` milliseconds (a signal does not cut it short). */
static inline void pause_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Waits (up to 10 s) until `cb` is done. */
static inline void wait_done(struct aiocb *cb) {
    const struct aiocb *l[1] = {cb};
    struct timespec slice = {0, 10000000L};
    for (int i = 0; i < 1000 && aio_error(cb) == EINPROGRESS; i++)
        aio_suspend(l, 1, &slice);
}

/* Takes `s`, waiting 10 s at most: 0 once taken, else -1. */
static inline int wait_10s(sem_t *s) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (sem_timedwait(s, &until) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

#endif
