/* aio_cancel of a pipe write that moved bytes and waits in the queue again
 * (thread engine, one worker).
 *
 * A write of twice the pipe's capacity fills the pipe and parks; the one
 * worker is then held by a write larger than a pseudo-terminal holds to its
 * slave (a terminal refuses RWF_NOWAIT: once it polls writable, the worker
 * writes with a blocking call). Once a reader
 * drains the pipe, the pipe write goes back to the queue, behind the busy
 * worker. It is in progress (its first bytes were read): aio_cancel, of the
 * aiocb or of the fd, must say AIO_NOTCANCELED and leave it ended with the
 * bytes it moved, not ECANCELED. The library said AIO_CANCELED for it.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1. Argument "fd": cancel with aio_cancel(fd, NULL).
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* True if a thread of this process other than the caller sleeps in a write
 * (the worker held by the terminal). */
static int a_thread_sleeps_in_write(void) {
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int found = 0;
    long me = syscall(SYS_gettid);
    if (d == NULL) {
        return 0;
    }
    while (!found && (e = readdir(d)) != NULL) {
        char path[300];
        long nr = -1;
        if (e->d_name[0] == '.' || atol(e->d_name) == me) {
            continue;
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/syscall", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        if (fscanf(f, "%ld", &nr) == 1 &&
            (nr == SYS_write || nr == SYS_sendto || nr == SYS_sendmsg)) {
            found = 1;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

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

    int p[2];
    CHECK(pipe(p) == 0);
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
    int slave = master >= 0 ? open(ptsname(master), O_RDWR | O_NOCTTY) : -1;
    CHECK(slave >= 0);
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

    /* A write to the terminal holds the one worker (once the pipe write
     * parked: the worker takes it after). */
    static char tty_out[256 * 1024];
    memset(tty_out, 'x', sizeof tty_out);
    struct aiocb hold;
    memset(&hold, 0, sizeof hold);
    hold.aio_fildes = slave;
    hold.aio_buf = tty_out;
    hold.aio_nbytes = sizeof tty_out;
    hold.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_write(&hold) == 0);
    for (int i = 0; i < 10000 && !a_thread_sleeps_in_write(); i++) {
        nap_ms(1);
    }
    CHECK(a_thread_sleeps_in_write());

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

    /* The held terminal write completes once the master reads. */
    static char sink[4096];
    fcntl(master, F_SETFL, O_NONBLOCK);
    while (aio_error(&hold) == EINPROGRESS) {
        if (read(master, sink, sizeof sink) <= 0) {
            nap_ms(1);
        }
    }
    CHECK(aio_return(&hold) == (ssize_t)sizeof tty_out);
    free(data);
    free(got);
    return finish();
}
