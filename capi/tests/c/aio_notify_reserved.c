/* A completion signal must be one a program can handle: the numbers between
 * the standard signals and SIGRTMIN (32 and 33 with glibc) are the C
 * library's own (thread cancellation, set*id), refused by sigaction, and their
 * default action ends the process. A sigevent naming one is EINVAL at
 * submission, as signal 0 past SIGRTMAX is; accepting it meant the request's
 * completion killed the program.
 *
 * Each request reads an empty pipe, so it cannot complete: a submission
 * wrongly accepted is reported and the program leaves at once with _exit,
 * before anything could send the signal (aio_fsync, which may complete at
 * once, may instead end the program with the signal: a failure too).
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
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

static int p[2];
static char buf[4];

/* Leaves at once if `r` says the request went in. */
static void refused(int r, int signo, const char *call) {
    if (r == 0) {
        fprintf(stderr, "%s with signal %d was accepted, not EINVAL\n", call, signo);
        _exit(1);
    }
    CHECK(r == -1 && errno == EINVAL);
}

static void init_cb(struct aiocb *cb, int notify, int signo) {
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = p[0];
    cb->aio_buf = buf;
    cb->aio_nbytes = 1;
    cb->aio_lio_opcode = LIO_READ;
    cb->aio_sigevent.sigev_notify = notify;
    cb->aio_sigevent.sigev_signo = signo;
    cb->aio_sigevent.sigev_value.sival_int = 1;
}

int main(void) {
    struct aiocb cb, ok_cb;
    struct aiocb *list[1] = {&ok_cb};
    struct sigevent ev;
    CHECK(pipe(p) == 0);
    for (int signo = SIGSYS + 1; signo < SIGRTMIN; signo++) {
        init_cb(&cb, SIGEV_SIGNAL, signo);
        errno = 0;
        refused(aio_read(&cb), signo, "aio_read");
        init_cb(&cb, SIGEV_SIGNAL, signo);
        cb.aio_fildes = p[1]; /* open for writing, as aio_fsync wants */
        errno = 0;
        refused(aio_fsync(O_SYNC, &cb), signo, "aio_fsync");
        init_cb(&cb, SIGEV_THREAD_ID, signo);
        cb.aio_sigevent._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        errno = 0;
        refused(aio_read(&cb), signo, "aio_read (SIGEV_THREAD_ID)");
        /* The list's sigevent: refused whole, nothing submitted. */
        init_cb(&ok_cb, SIGEV_NONE, 0);
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = signo;
        errno = 0;
        refused(lio_listio(LIO_NOWAIT, list, 1, &ev), signo, "lio_listio");
        CHECK(aio_error(&ok_cb) == -1 && errno == EINVAL);
    }
    /* The first real-time signal is fine. */
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        CHECK(sigaction(SIGRTMIN, &sa, NULL) == 0);
        init_cb(&cb, SIGEV_SIGNAL, SIGRTMIN);
        CHECK(aio_read(&cb) == 0);
        CHECK(write(p[1], "x", 1) == 1);
        while (aio_error(&cb) == EINPROGRESS) {
            const struct aiocb *l[1] = {&cb};
            aio_suspend(l, 1, NULL);
        }
        CHECK(aio_return(&cb) == 1);
    }
    close(p[0]);
    close(p[1]);
    return finish();
}
