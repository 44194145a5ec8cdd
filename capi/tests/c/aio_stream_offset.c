/* A read or write on an fd that cannot seek (a pipe, a socket) ignores
 * aio_offset, as POSIX says and as glibc does (its pread/pwrite fails with
 * ESPIPE and it calls read/write): an offset whose sum with aio_nbytes is
 * past OFF_MAX does not refuse the request there. On a regular file it still
 * does (EINVAL), and a negative offset is refused everywhere, as glibc's
 * requests fail with EINVAL then.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define FAR ((off_t)(INT64_MAX - 5))

/* One request of 10 bytes of `buf` at `off` of `fd`, waited for: its
 * aio_return, or -2 if the call refused it (errno in `*err`), with its
 * aio_error in `*err` otherwise. */
static ssize_t one(int fd, int write, char *buf, off_t off, int *err) {
    struct aiocb cb;
    aiocb_on(&cb, fd, buf, 10, off);
    errno = 0;
    int r = write ? aio_write(&cb) : aio_read(&cb);
    if (r != 0) {
        *err = errno;
        return -2;
    }
    const struct aiocb *list[1] = {&cb};
    struct timespec limit = {10, 0};
    for (int i = 0; i < 3 && aio_error(&cb) == EINPROGRESS; i++)
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    *err = aio_error(&cb);
    return aio_return(&cb);
}

/* A write then a read at FAR through the two ends of a stream. */
static void stream(int wr, int rd) {
    char out[16] = "0123456789", in[16] = {0};
    int err = -1;
    CHECK(one(wr, 1, out, FAR, &err) == 10 && err == 0);
    CHECK(one(rd, 0, in, FAR, &err) == 10 && err == 0);
    CHECK(memcmp(in, out, 10) == 0);
    ssize_t r = one(wr, 1, out, -1, &err);
    CHECK((r == -2 || r == -1) && err == EINVAL);
}

int main(void) {
    int p[2];
    CHECK(pipe(p) == 0);
    stream(p[1], p[0]);
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    stream(s[0], s[1]);
    int fd = temp_file("stream-offset");
    char buf[16] = "0123456789";
    int err = 0;
    ssize_t r = one(fd, 1, buf, FAR, &err);
    CHECK(err == EINVAL && (r == -2 || r == -1));
    return finish();
}
