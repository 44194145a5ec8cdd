/* A write to a pipe or stream socket whose reader is gone fails with EPIPE
 * as its status, and the process, whose SIGPIPE has its default action, goes
 * on, as with glibc (whose helper thread, every signal blocked, takes the
 * SIGPIPE write(2) sends it). On io_uring the submitting thread ran the
 * write and took the signal: the process died of SIGPIPE.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static int wr;

/* One write of 100 bytes on `wr`, waited for: it fails with EPIPE. */
static int write_to_nobody(void) {
    static char buf[100];
    struct aiocb cb;
    aiocb_on(&cb, wr, buf, sizeof buf, 0);
    CHECK(aio_write(&cb) == 0);
    const struct aiocb *list[1] = {&cb};
    struct timespec limit = {10, 0};
    for (int i = 0; i < 3 && aio_error(&cb) == EINPROGRESS; i++)
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    CHECK(aio_error(&cb) == EPIPE);
    CHECK(aio_return(&cb) == -1);
    return failures != 0;
}

int main(void) {
    signal(SIGPIPE, SIG_DFL);
    int p[2];
    CHECK(pipe(p) == 0);
    close(p[0]);
    wr = p[1];
    CHECK(fork_run(write_to_nobody, 30, "pipe") == 0);
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    close(s[1]);
    wr = s[0];
    CHECK(fork_run(write_to_nobody, 30, "socket") == 0);
    CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
    wr = p[1];
    CHECK(fork_run(write_to_nobody, 30, "O_NONBLOCK pipe") == 0);
    return finish();
}
