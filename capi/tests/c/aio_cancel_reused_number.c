/* A pipe read is cancelled, even when its fd number named a regular file
 * before (a file read through it, then closed; pipe(2) takes the lowest free
 * number, so the same one). aio_semantics.c's cancellation-point test met this
 * after the previous test's file was closed, once in many runs of the whole
 * test binary.
 *
 * The thread engine takes a number seen to name a regular file to name one
 * still, and its worker finds out otherwise from the ESPIPE of the transfer
 * it tries at the offset; it used to count the request as not
 * interruptible from just before that call until it parked it, so an
 * aio_cancel in that moment returned AIO_NOTCANCELED for a read that waits
 * for data that never comes. The cancel comes right after aio_read, after a
 * spin of a different length in each round, so that some land in that
 * moment.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 10000

static void wait_done(struct aiocb *cb) {
    const struct aiocb *l[1] = {cb};
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(l, 1, NULL);
}

static void init_cb(struct aiocb *cb, int fd, void *buf, size_t n) {
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = fd;
    cb->aio_buf = buf;
    cb->aio_nbytes = n;
    cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

int main(void) {
    char b[8];
    struct aiocb cb;
    int reused = 0, not_cancelled = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* A regular file read through its number, which the library notes. */
        int fd = temp_file("reused-number");
        if (fd < 0)
            break;
        CHECK(write(fd, "file", 4) == 4);
        init_cb(&cb, fd, b, 4);
        CHECK(aio_read(&cb) == 0);
        wait_done(&cb);
        CHECK(aio_return(&cb) == 4);
        CHECK(close(fd) == 0);

        int p[2];
        CHECK(pipe(p) == 0);
        reused += p[0] == fd;
        init_cb(&cb, p[0], b, sizeof b);
        CHECK(aio_read(&cb) == 0);
        for (volatile int spin = round % 500; spin > 0; spin--) {
        }
        int r = aio_cancel(p[0], &cb);
        if (r != AIO_CANCELED) {
            if (not_cancelled++ == 0)
                fprintf(stderr, "round %d: aio_cancel returned %d, not AIO_CANCELED\n",
                        round, r);
            /* Ends the read, so that the pipe can be closed. */
            CHECK(write(p[1], "x", 1) == 1);
        }
        wait_done(&cb);
        if (r == AIO_CANCELED)
            CHECK(aio_error(&cb) == ECANCELED);
        aio_return(&cb);
        CHECK(close(p[0]) == 0);
        CHECK(close(p[1]) == 0);
    }
    /* Else the test tests nothing. */
    CHECK(reused == ROUNDS);
    if (not_cancelled > 0)
        fprintf(stderr, "%d of %d pipe reads not cancelled\n", not_cancelled, ROUNDS);
    CHECK(not_cancelled == 0);
    return finish();
}
