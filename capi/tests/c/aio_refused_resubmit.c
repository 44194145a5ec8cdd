/* An aiocb submitted again after its request ended, and refused by the call
 * (aio_read, aio_write or aio_fsync returns -1), is no request: aio_error and
 * aio_return give -1/EINVAL, as for an aiocb never submitted (POSIX: EINVAL
 * when the aiocb "does not refer to an asynchronous operation whose return
 * status has not yet been retrieved"). The library reported the old request's
 * status instead, as if the refused call had run and succeeded: aio_error 0,
 * so a program that polls aio_error after a call whose result it ignored (as
 * the seed's listing 7.7 ignores aio_read's) took the refusal for a
 * success. A refusal by the request limit (EAGAIN) already cleared it.
 * glibc stores EINVAL as the status for a bad aio_reqprio only, and keeps
 * the old status for the other refusals.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "check.h"

static void wait_done(struct aiocb *cb) {
    const struct aiocb *list[1] = {cb};
    struct timespec limit = {10, 0};
    for (int i = 0; i < 3 && aio_error(cb) == EINPROGRESS; i++)
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
}

/* `cb` is no request: aio_error and aio_return fail with EINVAL, and
 * aio_suspend has nothing to wait for. */
static void not_a_request(struct aiocb *cb, int line) {
    errno = 0;
    int e = aio_error(cb);
    int e_errno = errno;
    errno = 0;
    ssize_t r = aio_return(cb);
    int r_errno = errno;
    if (e != -1 || e_errno != EINVAL || r != -1 || r_errno != EINVAL) {
        fprintf(stderr,
                "line %d: aio_error %d (errno %d), aio_return %zd (errno %d); "
                "wanted -1/EINVAL for both\n",
                line, e, e_errno, (ssize_t)r, r_errno);
        failures++;
    }
    const struct aiocb *list[1] = {cb};
    struct timespec none = {0, 0};
    CHECK(aio_suspend(list, 1, &none) == 0);
}

/* One write of `buf` through `cb`, done; its result taken if `take`. */
static void one_write(struct aiocb *cb, int fd, char *buf, int take) {
    aiocb_on(cb, fd, buf, 4, 0);
    CHECK(aio_write(cb) == 0);
    wait_done(cb);
    CHECK(aio_error(cb) == 0);
    if (take)
        CHECK(aio_return(cb) == 4);
}

int main(void) {
    int fd = temp_file("refused-resubmit");
    int p[2];
    CHECK(pipe(p) == 0);
    char buf[8] = "abcd";
    struct aiocb cb;

    for (int take = 0; take < 2; take++) {
        /* A bad aio_reqprio. */
        one_write(&cb, fd, buf, take);
        cb.aio_reqprio = AIO_PRIO_DELTA_MAX + 1;
        errno = 0;
        CHECK(aio_write(&cb) == -1 && errno == EINVAL);
        not_a_request(&cb, __LINE__);

        /* A negative offset. */
        one_write(&cb, fd, buf, take);
        cb.aio_offset = -1;
        errno = 0;
        CHECK(aio_read(&cb) == -1 && errno == EINVAL);
        not_a_request(&cb, __LINE__);

        /* An invalid sigevent. */
        one_write(&cb, fd, buf, take);
        cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
        cb.aio_sigevent.sigev_signo = SIGKILL;
        errno = 0;
        CHECK(aio_write(&cb) == -1 && errno == EINVAL);
        not_a_request(&cb, __LINE__);

        /* aio_fsync with a bad op, and on a pipe. */
        one_write(&cb, fd, buf, take);
        errno = 0;
        CHECK(aio_fsync(O_SYNC | O_DSYNC | O_APPEND, &cb) == -1 && errno == EINVAL);
        not_a_request(&cb, __LINE__);
        one_write(&cb, fd, buf, take);
        cb.aio_fildes = p[1];
        errno = 0;
        CHECK(aio_fsync(O_DSYNC, &cb) == -1 && errno == EINVAL);
        not_a_request(&cb, __LINE__);
    }

    /* The aiocb is the program's again: a valid submission runs. */
    aiocb_on(&cb, fd, buf, 4, 0);
    CHECK(aio_read(&cb) == 0);
    wait_done(&cb);
    CHECK(aio_error(&cb) == 0 && aio_return(&cb) == 4);
    return finish();
}
