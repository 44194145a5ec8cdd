/* aio_cancel of a pipe write that moved bytes and waits in the queue again
 * (thread engine, one worker).
 *
 * A write of twice the pipe's capacity fills the pipe and parks; the one
 * worker is then held by a write to a file from pages missing under
 * userfaultfd (stall.h), longer than the engine tries without waiting
 * (RWF_NOWAIT, up to 256 KiB): the worker hands the queue on, then sleeps in
 * pwrite(2), in the kernel's copy, until the test supplies the pages. Once a
 * reader drains the pipe, the pipe write goes back to the queue, behind the
 * busy worker. It is in progress (its first bytes were read): aio_cancel, of
 * the aiocb or of the fd, must say AIO_NOTCANCELED and leave it ended with
 * the bytes it moved, not ECANCELED. The library said AIO_CANCELED for it.
 *
 * Needs userfaultfd (CAP_SYS_PTRACE): without it (EPERM) says so and prints
 * "ok" with nothing checked.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1. Argument "fd": cancel with aio_cancel(fd, NULL).
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stall.h"

/* The held write's length: more than the engine tries with RWF_NOWAIT. */
#define HOLD_LEN (256 * 1024 + 4096)

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
    int by_fd = argc > 1 && strcmp(argv[1], "fd") == 0;
    struct aioinit init;
    memset(&init, 0, sizeof init);
    init.aio_threads = 1;
    aio_init(&init);

    struct stall stall;
    int e = stall_open(&stall, HOLD_LEN);
    if (e == EPERM) {
        fprintf(stderr, "skipped: userfaultfd is refused here (EPERM: it needs "
                        "CAP_SYS_PTRACE), and the test holds the worker with it\n");
        return finish();
    }
    errno = e;
    CHECK(e == 0);
    int p[2];
    CHECK(pipe(p) == 0);
    int held = temp_file("requeued-hold");
    int cap = fcntl(p[1], F_GETPIPE_SZ);
    CHECK(cap > 0);
    if (failures) {
        return finish();
    }
    size_t len = 2 * (size_t)cap;
    char *data = malloc(len);
    char *got = malloc(len);
    CHECK(data != NULL && got != NULL);
    if (failures) {
        return finish();
    }
    for (size_t i = 0; i < len; i++) {
        data[i] = (char)(i % 251);
    }

    struct aiocb w;
    memset(&w, 0, sizeof w);
    w.aio_fildes = p[1];
    w.aio_buf = data;
    w.aio_nbytes = len;
    w.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_write(&w) == 0);

    /* A write from the missing pages holds the one worker (once the pipe
     * write parked: the worker takes it after). */
    struct aiocb hold;
    memset(&hold, 0, sizeof hold);
    hold.aio_fildes = held;
    hold.aio_buf = stall.addr;
    hold.aio_nbytes = HOLD_LEN;
    hold.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_write(&hold) == 0);
    long waiter = stall_fault(&stall, 20000);
    CHECK(waiter > 0 && is_pool_worker(waiter));
    CHECK(aio_error(&hold) == EINPROGRESS);

    /* The reader drains the pipe: the write is ready again, and waits for
     * the worker. */
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    size_t n = 0;
    ssize_t r;
    while ((r = read(p[0], got + n, len - n)) > 0) {
        n += (size_t)r;
    }
    CHECK(n > 0 && n < len);
    /* (The poller puts it back in the queue within microseconds: without this
     * wait, a cancel of the write still parked says AIO_NOTCANCELED too.) */
    nap_ms(100);
    CHECK(aio_error(&w) == EINPROGRESS);

    int outcome = by_fd ? aio_cancel(p[1], NULL) : aio_cancel(p[1], &w);
    CHECK(outcome == AIO_NOTCANCELED);
    const struct aiocb *list[1] = {&w};
    while (aio_error(&w) == EINPROGRESS) {
        aio_suspend(list, 1, NULL);
    }
    /* Ended with the bytes the reader got, not ECANCELED. */
    CHECK(aio_error(&w) == 0);
    CHECK(aio_return(&w) == (ssize_t)n);
    CHECK(memcmp(got, data, n) == 0);

    /* The held write completes once the pages are supplied. */
    CHECK(stall_release(&stall) == 0);
    list[0] = &hold;
    while (aio_error(&hold) == EINPROGRESS) {
        aio_suspend(list, 1, NULL);
    }
    CHECK(aio_return(&hold) == HOLD_LEN);
    stall_close(&stall);
    free(data);
    free(got);
    return finish();
}
