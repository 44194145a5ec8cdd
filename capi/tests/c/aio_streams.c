/* Reads of pipes and sockets behave as glibc's, whose helper threads call
 * pread(2) and, when it fails with ESPIPE, read(2):
 * - a socket read at a non-zero offset ignores the offset (data there, and
 *   data written after the read was submitted);
 * - a read of an empty O_NONBLOCK pipe or socket ends with EAGAIN instead of
 *   waiting for data, and so does a write to a full O_NONBLOCK pipe;
 * - a socket write at an offset ignores it;
 * - a write to an O_NONBLOCK terminal goes through;
 * - the same holds while another thread waits in aio_suspend (the library's
 *   io_uring engine then has a thread asleep in the ring);
 * - a socket read at an offset ignores it also on an fd number that named a
 *   regular file before (closed, then reused);
 * - with the argument "queued", for reads that wait in the library's queue
 *   (aio_init lets one request in the kernel at a time) and are issued later.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void wait_done(struct aiocb *cb) {
    const struct aiocb *list[1] = {cb};
    struct timespec limit = {5, 0};
    int rounds = 0;
    while (aio_error(cb) == EINPROGRESS && rounds++ < 4) {
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR || errno == EAGAIN);
    }
    CHECK(aio_error(cb) != EINPROGRESS);
}

static void prepare(struct aiocb *cb, int fd, off_t offset, const char *buf, size_t len) {
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = fd;
    cb->aio_offset = offset;
    cb->aio_buf = (void *)buf;
    cb->aio_nbytes = len;
    cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

/* Waits for `cb`, submitted, and checks its error and return values. */
static void ends_with(struct aiocb *cb, int error, ssize_t ret) {
    wait_done(cb);
    CHECK(aio_error(cb) == error);
    CHECK(aio_return(cb) == ret);
}

static void set_nonblocking(int fd) {
    CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

static void streams(void) {
    struct aiocb cb;
    char buf[16];
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);

    /* A socket read at an offset, data there. */
    CHECK(write(s[1], "hello", 5) == 5);
    prepare(&cb, s[0], 4096, buf, 5);
    CHECK(aio_read(&cb) == 0);
    ends_with(&cb, 0, 5);
    CHECK(memcmp(buf, "hello", 5) == 0);

    /* A socket read at an offset, data written after it was submitted. */
    prepare(&cb, s[0], 123, buf, 3);
    CHECK(aio_read(&cb) == 0);
    CHECK(write(s[1], "abc", 3) == 3);
    ends_with(&cb, 0, 3);
    CHECK(memcmp(buf, "abc", 3) == 0);

    /* An empty O_NONBLOCK socket, read at an offset: EAGAIN. */
    set_nonblocking(s[0]);
    prepare(&cb, s[0], 7, buf, 8);
    CHECK(aio_read(&cb) == 0);
    ends_with(&cb, EAGAIN, -1);

    /* An empty O_NONBLOCK pipe: EAGAIN. */
    int p[2];
    CHECK(pipe(p) == 0);
    set_nonblocking(p[0]);
    prepare(&cb, p[0], 0, buf, 8);
    CHECK(aio_read(&cb) == 0);
    ends_with(&cb, EAGAIN, -1);

    /* With data there, the O_NONBLOCK read just reads. */
    CHECK(write(p[1], "ready", 5) == 5);
    prepare(&cb, p[0], 0, buf, 8);
    CHECK(aio_read(&cb) == 0);
    ends_with(&cb, 0, 5);

    /* A socket write at an offset: written. */
    prepare(&cb, s[1], 99, "xyz", 3);
    CHECK(aio_write(&cb) == 0);
    ends_with(&cb, 0, 3);
    CHECK(read(s[0], buf, 3) == 3 && memcmp(buf, "xyz", 3) == 0);

    /* A full O_NONBLOCK pipe: a write that would block gives EAGAIN. */
    static char junk[4096];
    set_nonblocking(p[1]);
    while (write(p[1], junk, sizeof junk) > 0) {
    }
    prepare(&cb, p[1], 0, junk, sizeof junk);
    CHECK(aio_write(&cb) == 0);
    ends_with(&cb, EAGAIN, -1);

    /* An O_NONBLOCK terminal (io_uring refuses RWF_NOWAIT there): written. */
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    CHECK(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
    int t = open(ptsname(m), O_RDWR | O_NOCTTY | O_NONBLOCK);
    CHECK(t >= 0);
    prepare(&cb, t, 0, "x", 1);
    CHECK(aio_write(&cb) == 0);
    ends_with(&cb, 0, 1);
    CHECK(read(m, buf, 1) == 1 && buf[0] == 'x');

    close(t);
    close(m);
    close(s[0]);
    close(s[1]);
    close(p[0]);
    close(p[1]);
}

static int wake[2];
static struct aiocb waiter_cb;
static char waiter_buf[4];

static void *waiter(void *arg) {
    (void)arg;
    prepare(&waiter_cb, wake[0], 0, waiter_buf, 4);
    CHECK(aio_read(&waiter_cb) == 0);
    const struct aiocb *list[1] = {&waiter_cb};
    struct timespec limit = {20, 0};
    while (aio_error(&waiter_cb) == EINPROGRESS) {
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    }
    CHECK(aio_return(&waiter_cb) == 4);
    return NULL;
}

/* Requests that wait in the library's queue (one request in the kernel at a
 * time, taken by a pipe read until data comes) and are issued later. */
static void queued(void) {
    struct aioinit init;
    memset(&init, 0, sizeof init);
    init.aio_num = 1;
    init.aio_threads = 4;
    aio_init(&init);

    int blocker[2], s[2], p[2];
    CHECK(pipe(blocker) == 0 && pipe(p) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    set_nonblocking(p[0]);
    CHECK(write(s[1], "hello", 5) == 5);
    char blocker_buf[4], sock_buf[8], pipe_buf[8];
    struct aiocb b, sock, pipe_cb;
    prepare(&b, blocker[0], 0, blocker_buf, 4);
    prepare(&sock, s[0], 100, sock_buf, 8);
    prepare(&pipe_cb, p[0], 0, pipe_buf, 8);
    CHECK(aio_read(&b) == 0);
    CHECK(aio_read(&sock) == 0);
    CHECK(aio_read(&pipe_cb) == 0);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(write(blocker[1], "free", 4) == 4);
    ends_with(&b, 0, 4);
    /* A socket read at an offset: the offset is ignored. */
    ends_with(&sock, 0, 5);
    CHECK(memcmp(sock_buf, "hello", 5) == 0);
    /* An empty O_NONBLOCK pipe: EAGAIN. */
    ends_with(&pipe_cb, EAGAIN, -1);
    close(blocker[0]);
    close(blocker[1]);
    close(s[0]);
    close(s[1]);
    close(p[0]);
    close(p[1]);
}

/* A temp file of 8 KiB of 'f', read twice through its number, so that the
 * library knows the number as a regular file's; returns the number. */
static int known_file(void) {
    int f = temp_file("streams");
    if (f < 0)
        return -1;
    static char block[8192];
    memset(block, 'f', sizeof block);
    CHECK(write(f, block, sizeof block) == (ssize_t)sizeof block);
    struct aiocb cb;
    char buf[16];
    for (int i = 0; i < 2; i++) {
        prepare(&cb, f, 4096, buf, 5);
        CHECK(aio_read(&cb) == 0);
        ends_with(&cb, 0, 5);
        CHECK(memcmp(buf, "fffff", 5) == 0);
    }
    return f;
}

/* Waits 1 ms. A thread the library has just started may hold a number for a
 * moment (glibc's malloc reads /sys/devices/system/cpu/online when a new
 * thread first allocates), so a number just closed is not always the lowest
 * free one at once: the calls below try again after such a pause. */
static void pause_1ms(void) {
    struct timespec ms = {0, 1000 * 1000};
    nanosleep(&ms, NULL);
}

/* A socket pair whose end `s[0]` or `s[1]` gets fd number n (the lowest
 * free one); that end in `*sock`, the other in `*peer`. */
static void socket_at(int n, int s[2], int *sock, int *peer) {
    for (int tries = 0; tries < 100; tries++) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
        if (s[0] == n || s[1] == n)
            break;
        close(s[0]);
        close(s[1]);
        pause_1ms();
    }
    *sock = s[0] == n ? s[0] : s[1];
    *peer = s[0] == n ? s[1] : s[0];
    CHECK(*sock == n);
}

/* A pipe whose read end gets fd number n (see `socket_at`). */
static void pipe_at(int n, int p[2]) {
    for (int tries = 0; tries < 100; tries++) {
        CHECK(pipe(p) == 0);
        if (p[0] == n)
            break;
        close(p[0]);
        close(p[1]);
        pause_1ms();
    }
    CHECK(p[0] == n);
}

/* A read of an empty O_NONBLOCK socket at fd number n: EAGAIN. */
static void empty_nonblocking_socket_at(int n) {
    int s[2], sock, peer;
    socket_at(n, s, &sock, &peer);
    set_nonblocking(sock);
    struct aiocb cb;
    char buf[16];
    prepare(&cb, sock, 4096, buf, 5);
    CHECK(aio_read(&cb) == 0);
    ends_with(&cb, EAGAIN, -1);
    close(s[0]);
    close(s[1]);
}

/* A regular file read through fd number n, closed; a socket then gets n: its
 * read at an offset ignores the offset, and one of an empty O_NONBLOCK socket
 * ends with EAGAIN, as on a number never used before. The same for a pipe
 * holding less than a read asks, and after a procfs file at n. */
static void reused_number(void) {
    struct aiocb cb;
    char buf[16];
    int f = known_file();
    if (f < 0)
        return;
    close(f);
    int s[2], sock, peer;
    socket_at(f, s, &sock, &peer);
    for (int i = 0; i < 2; i++) {
        CHECK(write(peer, "hello", 5) == 5);
        memset(buf, 0, sizeof buf);
        prepare(&cb, sock, 4096, buf, 5);
        CHECK(aio_read(&cb) == 0);
        ends_with(&cb, 0, 5);
        CHECK(memcmp(buf, "hello", 5) == 0);
    }
    close(s[0]);
    close(s[1]);

    /* Once more, with no data on an O_NONBLOCK socket: EAGAIN, not a wait. */
    f = known_file();
    if (f < 0)
        return;
    close(f);
    empty_nonblocking_socket_at(f);

    /* A pipe at a number that named a file: a read of more than the pipe
     * holds returns what it holds, at once. */
    f = known_file();
    if (f < 0)
        return;
    close(f);
    int p[2];
    pipe_at(f, p);
    CHECK(write(p[1], "ten bytes!", 10) == 10);
    static char page[4096];
    prepare(&cb, p[0], 0, page, sizeof page);
    CHECK(aio_read(&cb) == 0);
    ends_with(&cb, 0, 10);
    CHECK(memcmp(page, "ten bytes!", 10) == 0);
    close(p[0]);
    close(p[1]);

    /* An empty O_NONBLOCK socket at a number that named a procfs file (which
     * refuses non-blocking reads): EAGAIN. */
    f = open("/proc/self/status", O_RDONLY);
    CHECK(f >= 0);
    if (f < 0)
        return;
    for (int i = 0; i < 2; i++) {
        prepare(&cb, f, 0, page, sizeof page);
        CHECK(aio_read(&cb) == 0);
        wait_done(&cb);
        CHECK(aio_error(&cb) == 0 && aio_return(&cb) > 0);
    }
    close(f);
    empty_nonblocking_socket_at(f);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "queued") == 0) {
        queued();
        return finish();
    }
    reused_number();
    streams();

    /* Again while another thread waits. */
    pthread_t t;
    CHECK(pipe(wake) == 0);
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    streams();
    CHECK(write(wake[1], "wake", 4) == 4);
    CHECK(pthread_join(t, NULL) == 0);

    return finish();
}
