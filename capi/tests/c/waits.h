/* The waits the C AIO tests share, each bounded: a pause, a wait for one
 * request. (For a test that defines _GNU_SOURCE.) */
#ifndef POSIXRT_TEST_WAITS_H
#define POSIXRT_TEST_WAITS_H
#include <aio.h>
#include <errno.h>
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

#endif
