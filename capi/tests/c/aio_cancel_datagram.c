/* aio_cancel of writes to a datagram socket whose buffer is full.
 *
 * Eight writes of half the socket's send buffer each go to one end of a
 * SOCK_DGRAM socket pair that nobody reads: the first two fill the buffer,
 * the third is issued and waits for room, and the rest wait behind it (the
 * library keeps a socket's writes in order). aio_cancel(fd, NULL) must leave
 * the waiting one in progress and say AIO_NOTCANCELED (as glibc; the Open
 * POSIX Test Suite's aio_cancel tests expect it), cancel the five behind it,
 * and return without waiting for it. Once the other end reads, the write in
 * progress completes whole. On io_uring the cancel used to stop that write
 * too (AIO_CANCELED); on the thread engine it waited 5 s for it.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define NREQ 8
#define WAITING 2

static void wait_done(struct aiocb *cb) {
    const struct aiocb *list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS) {
        aio_suspend(list, 1, NULL);
    }
}

int main(void) {
    int sv[2];
    int sndbuf = 0;
    socklen_t optlen = sizeof sndbuf;
    struct aiocb cbs[NREQ];

    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0 ||
        getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, &optlen) != 0) {
        perror("socketpair");
        return 1;
    }
    size_t len = (size_t)sndbuf / 2;
    char *buf = malloc(len);
    char *in = malloc(len);
    CHECK(buf != NULL && in != NULL);
    if (buf == NULL || in == NULL) {
        return finish();
    }
    memset(buf, 0x5a, len);
    memset(cbs, 0, sizeof cbs);
    for (int i = 0; i < NREQ; i++) {
        cbs[i].aio_fildes = sv[0];
        cbs[i].aio_buf = buf;
        cbs[i].aio_nbytes = len;
        cbs[i].aio_sigevent.sigev_notify = SIGEV_NONE;
        CHECK(aio_write(&cbs[i]) == 0);
    }
    /* The two that fit complete; then the third is the one in progress. */
    wait_done(&cbs[0]);
    wait_done(&cbs[1]);
    CHECK(aio_error(&cbs[0]) == 0 && aio_error(&cbs[1]) == 0);
    {
        struct timespec ten_ms = {0, 10000000};
        nanosleep(&ten_ms, NULL);
    }
    CHECK(aio_error(&cbs[WAITING]) == EINPROGRESS);

    CHECK(aio_cancel(sv[0], NULL) == AIO_NOTCANCELED);
    /* Returned without waiting for it: still in progress. */
    CHECK(aio_error(&cbs[WAITING]) == EINPROGRESS);
    for (int i = WAITING + 1; i < NREQ; i++) {
        CHECK(aio_error(&cbs[i]) == ECANCELED);
        CHECK(aio_return(&cbs[i]) == -1 && errno == ECANCELED);
    }
    /* Cancelling it alone says the same, and leaves it. */
    CHECK(aio_cancel(sv[0], &cbs[WAITING]) == AIO_NOTCANCELED);
    CHECK(aio_error(&cbs[WAITING]) == EINPROGRESS);

    /* Reading makes room: it completes whole, and nothing else was sent. */
    for (int i = 0; i < WAITING; i++) {
        CHECK(read(sv[1], in, len) == (ssize_t)len);
    }
    wait_done(&cbs[WAITING]);
    for (int i = 0; i <= WAITING; i++) {
        CHECK(aio_return(&cbs[i]) == (ssize_t)len);
    }
    CHECK(recv(sv[1], in, len, MSG_DONTWAIT) == (ssize_t)len);
    CHECK(recv(sv[1], in, len, MSG_DONTWAIT) == -1 && errno == EAGAIN);
    close(sv[0]);
    close(sv[1]);
    free(buf);
    free(in);
    return finish();
}
