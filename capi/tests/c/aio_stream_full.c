/* Writes to a blocking pipe or stream socket that fills up are written whole,
 * as write(2) on a blocking fd and glibc's aio_write do: six 48 KiB writes
 * submitted with nobody reading, read back once the pipe is full (the
 * socket: once two of them wait there): each aio_return is 48 KiB
 * and the bytes come in submission order. On io_uring the kernel cuts such a
 * write short when the pipe is full; the library reported the short count
 * and the rest was never written.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define N 6
#define SZ (48 * 1024)

static struct aiocb cb[N];
static char out[N][SZ];
static char in[N * SZ];

/* The N writes on `wr`, read back from `rd` once `full` bytes wait there. */
static void fill_and_drain(int wr, int rd, int full) {
    for (int i = 0; i < N; i++) {
        memset(out[i], 'A' + i, SZ);
        aiocb_on(&cb[i], wr, out[i], SZ, 0);
        CHECK(aio_write(&cb[i]) == 0);
    }
    int queued = 0;
    while (queued < full && ioctl(rd, FIONREAD, &queued) == 0)
        usleep(1000);
    size_t got = 0;
    while (got < sizeof in) {
        ssize_t n = read(rd, in + got, sizeof in - got);
        CHECK(n > 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    for (int i = 0; i < N; i++) {
        const struct aiocb *list[1] = {&cb[i]};
        struct timespec limit = {10, 0};
        for (int k = 0; k < 3 && aio_error(&cb[i]) == EINPROGRESS; k++)
            CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
        CHECK(aio_error(&cb[i]) == 0);
        CHECK(aio_return(&cb[i]) == SZ);
    }
    CHECK(got == sizeof in);
    for (int i = 0; i < N; i++)
        CHECK(memcmp(in + (size_t)i * SZ, out[i], SZ) == 0);
}

int main(void) {
    alarm(30);
    int p[2];
    CHECK(pipe(p) == 0);
    int cap = fcntl(p[1], F_SETPIPE_SZ, 64 * 1024);
    CHECK(cap > 0 && cap < N * SZ);
    fill_and_drain(p[1], p[0], cap);
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    fill_and_drain(s[0], s[1], 2 * SZ);
    return finish();
}
