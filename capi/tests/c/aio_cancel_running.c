/* aio_cancel of a write running on a regular file returns at once.
 *
 * Run with POSIXRT_AIO_BACKEND=threads. A write of 64 MiB to a regular file
 * runs in a pool worker; once the file has begun to grow (the write is in the
 * kernel, which does not interrupt it), aio_cancel must return
 * AIO_NOTCANCELED without waiting for it: the write is still in progress when
 * the call returns (aio_error gives EINPROGRESS). It used to wait for the write
 * to end (up to 5 s) and then return AIO_NOTCANCELED, as glibc never does.
 *
 * Both aio_cancel(fd, cb) and aio_cancel(fd, NULL). A round whose write ends
 * before the cancel (the test was descheduled) proves nothing and is run
 * again, up to ATTEMPTS times; the old code never passes one.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define LEN (64u << 20)
#define ATTEMPTS 8

static off_t size_of(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : -1;
}

/* One round: 1 if the cancel returned AIO_NOTCANCELED while the write was
 * still running, 0 if the round proves nothing. */
static int round_trip(int fd, char *buf, int whole_fd) {
    struct aiocb cb;
    const struct aiocb *list[1] = {&cb};
    int r, e, ok = 0;

    CHECK(ftruncate(fd, 0) == 0);
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = buf;
    cb.aio_nbytes = LEN;
    cb.aio_offset = 0;
    cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_write(&cb) == 0);
    /* Wait until the write is in the kernel: the file grows. */
    while (size_of(fd) == 0 && aio_error(&cb) == EINPROGRESS) {
        sched_yield();
    }
    if (aio_error(&cb) == EINPROGRESS) {
        r = aio_cancel(fd, whole_fd ? NULL : &cb);
        e = aio_error(&cb);
        /* A write the kernel runs is never reported cancelled. */
        CHECK(r == AIO_NOTCANCELED || r == AIO_ALLDONE);
        ok = r == AIO_NOTCANCELED && e == EINPROGRESS;
        if (!ok) {
            fprintf(stderr, "aio_cancel(%s) returned %d; then aio_error %d, file %lld of %u "
                    "bytes\n", whole_fd ? "NULL" : "cb", r, e, (long long)size_of(fd), LEN);
        }
    }
    while (aio_error(&cb) == EINPROGRESS) {
        aio_suspend(list, 1, NULL);
    }
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == (ssize_t)LEN);
    return ok;
}

int main(void) {
    char path[] = "/tmp/posixrt-capi-cancel-running-XXXXXX";
    /* Never written to: the kernel copies from zero pages. */
    char *buf = malloc(LEN);
    int fd = mkstemp(path);

    CHECK(buf != NULL && fd >= 0);
    if (buf == NULL || fd < 0) {
        return 1;
    }
    unlink(path);
    for (int whole_fd = 0; whole_fd <= 1; whole_fd++) {
        int passed = 0;
        for (int i = 0; i < ATTEMPTS && !passed && failures == 0; i++) {
            passed = round_trip(fd, buf, whole_fd);
        }
        if (!passed) {
            fprintf(stderr, "aio_cancel(%s) never returned while the write ran\n",
                    whole_fd ? "NULL" : "cb");
        }
        CHECK(passed);
    }
    close(fd);
    free(buf);
    return finish();
}
