/* aio_cancel(fd, NULL) cancels the requests still queued in the library.
 *
 * Run with POSIXRT_AIO_BACKEND=threads: aio_init gives the pool four workers,
 * and 32 writes of 4 MiB each to a regular file wait in the library behind the
 * ones they run. aio_cancel(fd, NULL) must cancel the waiting ones (a request
 * queued in the library is always cancelled), not wait for each running one
 * while the workers start the rest (which cancelled none of them). A
 * regular-file write already running cannot be stopped, so the call returns
 * AIO_NOTCANCELED (one is running) or AIO_CANCELED.
 *
 * The cancel comes once the first write is done. Which writes ran: those done
 * before the call (counted just before it), those
 * running when it came (one per worker), and those a worker took between the
 * count and the call (one per worker: a write of 4 MiB outlasts the gap).
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

#define NREQ 32
#define LEN (4u << 20)
#define WORKERS 4

int main(void) {
    static struct aiocb cbs[NREQ];
    struct aioinit init;
    char path[] = "/tmp/posixrt-capi-cancel-XXXXXX";
    char *buf = malloc(LEN);
    int fd = mkstemp(path);
    int canceled = 0, done = 0, done_before = 0, r;

    CHECK(buf != NULL && fd >= 0);
    if (buf == NULL || fd < 0) {
        return 1;
    }
    unlink(path);
    memset(buf, 'x', LEN);
    memset(&init, 0, sizeof init);
    init.aio_threads = WORKERS;
    init.aio_num = 64;
    aio_init(&init);

    for (int i = 0; i < NREQ; i++) {
        memset(&cbs[i], 0, sizeof cbs[i]);
        cbs[i].aio_fildes = fd;
        cbs[i].aio_buf = buf;
        cbs[i].aio_nbytes = LEN;
        cbs[i].aio_offset = (off_t)i * LEN;
        cbs[i].aio_sigevent.sigev_notify = SIGEV_NONE;
        CHECK(aio_write(&cbs[i]) == 0);
    }
    /* Once the first write is done the workers run others. */
    {
        const struct aiocb *first[1] = {&cbs[0]};
        while (aio_error(&cbs[0]) == EINPROGRESS) {
            aio_suspend(first, 1, NULL);
        }
    }
    for (int i = 0; i < NREQ; i++) {
        done_before += aio_error(&cbs[i]) == 0;
    }
    r = aio_cancel(fd, NULL);
    CHECK(r == AIO_CANCELED || r == AIO_NOTCANCELED);

    for (int i = 0; i < NREQ; i++) {
        const struct aiocb *list[1] = {&cbs[i]};
        while (aio_error(&cbs[i]) == EINPROGRESS) {
            aio_suspend(list, 1, NULL);
        }
        int e = aio_error(&cbs[i]);
        ssize_t ret = aio_return(&cbs[i]);
        if (e == ECANCELED) {
            CHECK(ret == -1 && errno == ECANCELED);
            /* As glibc (whose rt/tst-aio checks it this way): the status
               stays readable after aio_return. */
            CHECK(aio_error(&cbs[i]) == ECANCELED);
            canceled++;
        } else {
            CHECK(e == 0 && ret == (ssize_t)LEN);
            done++;
        }
    }
    if (done > done_before + 2 * WORKERS) {
        fprintf(stderr, "aio_cancel returned %d; %d writes done before it, %d ran, %d of %d "
                "cancelled\n", r, done_before, done, canceled, NREQ);
    }
    CHECK(done <= done_before + 2 * WORKERS);
    CHECK(canceled + done == NREQ);
    close(fd);
    free(buf);
    return finish();
}
