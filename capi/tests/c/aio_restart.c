/* aio_suspend and lio_listio(LIO_WAIT) interrupted by signal handlers.
 *
 * POSIX (sigaction, SA_RESTART): an interruptible function interrupted by a
 * handler installed with SA_RESTART "shall restart and shall not fail with
 * [EINTR]"; glibc's waits restart (without a timeout). Each case waits for a
 * read on an empty pipe while another thread sends SIGUSR1 to the waiting
 * thread every few milliseconds; the handler writes the byte that completes
 * the read on its fifth run, so the wait is interrupted four times first.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define RUNS_BEFORE_DATA 5

static int pipefd[2];
static volatile sig_atomic_t runs;
static volatile sig_atomic_t waiting;
static volatile sig_atomic_t stop;
static pthread_t waiter;

static void on_usr1(int signo) {
    int saved = errno;
    (void)signo;
    if (++runs == RUNS_BEFORE_DATA && write(pipefd[1], "!", 1) != 1) {
        abort();
    }
    errno = saved;
}

static void on_usr2(int signo) {
    (void)signo;
}

static void install(int signo, void (*fn)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(signo, &sa, NULL) == 0);
}

static void pause_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Once the waiter is about to wait, SIGUSR1 to it every 5 ms until stopped. */
static void *poker(void *arg) {
    (void)arg;
    while (!waiting) {
        pause_ms(1);
    }
    pause_ms(10);
    while (!stop) {
        pthread_kill(waiter, SIGUSR1);
        pause_ms(5);
    }
    return NULL;
}

enum how { SUSPEND, SUSPEND_TIMED, LIO_WAIT_LIST };

/* Waits for a one-byte pipe read with `how` while SIGUSR1 interrupts the wait;
 * returns the wait's result and leaves its errno in *err. */
static int interrupted_wait(enum how how, struct aiocb *cb, char *byte, int *err) {
    pthread_t th;
    int r;
    runs = 0;
    waiting = 0;
    stop = 0;
    waiter = pthread_self();
    CHECK(pipe(pipefd) == 0);
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = pipefd[0];
    cb->aio_buf = byte;
    cb->aio_nbytes = 1;
    cb->aio_lio_opcode = LIO_READ;
    cb->aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(pthread_create(&th, NULL, poker, NULL) == 0);
    if (how == LIO_WAIT_LIST) {
        struct aiocb *list[1] = {cb};
        waiting = 1;
        r = lio_listio(LIO_WAIT, list, 1, NULL);
    } else {
        const struct aiocb *list[1] = {cb};
        struct timespec ts = {60, 0};
        CHECK(aio_read(cb) == 0);
        waiting = 1;
        r = aio_suspend(list, 1, how == SUSPEND_TIMED ? &ts : NULL);
    }
    *err = errno;
    stop = 1;
    CHECK(pthread_join(th, NULL) == 0);
    /* Whatever the wait said, the read is collected before its pipe goes. */
    if (runs < RUNS_BEFORE_DATA && write(pipefd[1], "!", 1) != 1) {
        CHECK(!"write to the pipe");
    }
    {
        const struct aiocb *list[1] = {cb};
        while (aio_error(cb) == EINPROGRESS) {
            aio_suspend(list, 1, NULL);
        }
    }
    return r;
}

static void restarted(enum how how, const char *what) {
    struct aiocb cb;
    char byte = 0;
    int err = 0;
    int r = interrupted_wait(how, &cb, &byte, &err);
    if (r != 0) {
        fprintf(stderr, "%s with SA_RESTART: -1, errno %d (%s)\n", what, err, strerror(err));
    }
    CHECK(r == 0);
    CHECK(runs >= RUNS_BEFORE_DATA);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 1);
    CHECK(byte == '!');
    close(pipefd[0]);
    close(pipefd[1]);
}

static void not_restarted(enum how how, const char *what) {
    struct aiocb cb;
    char byte = 0;
    int err = 0;
    int r = interrupted_wait(how, &cb, &byte, &err);
    if (r != -1 || err != EINTR) {
        fprintf(stderr, "%s: %d, errno %d (%s); wanted -1/EINTR\n", what, r, err,
                strerror(err));
    }
    CHECK(r == -1 && err == EINTR);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 1);
    close(pipefd[0]);
    close(pipefd[1]);
}

int main(void) {
    /* Every handler with SA_RESTART: the waits go on. */
    install(SIGUSR1, on_usr1, SA_RESTART);
    restarted(SUSPEND, "aio_suspend(NULL timeout)");
    restarted(SUSPEND_TIMED, "aio_suspend(60 s timeout)");
    restarted(LIO_WAIT_LIST, "lio_listio(LIO_WAIT)");

    /* The interrupting handler without SA_RESTART: -1/EINTR. */
    install(SIGUSR1, on_usr1, 0);
    not_restarted(SUSPEND, "aio_suspend, no SA_RESTART");
    not_restarted(LIO_WAIT_LIST, "lio_listio(LIO_WAIT), no SA_RESTART");

    /* SA_RESTART on the interrupting handler, and another handler without it
     * on a signal blocked in the waiting thread (which cannot interrupt it):
     * the waits go on. (With that signal unblocked the io_uring engine cannot
     * tell which handler ran and returns -1/EINTR; see capi/README.md.) */
    install(SIGUSR1, on_usr1, SA_RESTART);
    install(SIGUSR2, on_usr2, 0);
    {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR2);
        CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
        restarted(SUSPEND, "aio_suspend, the handler without SA_RESTART blocked");
        restarted(LIO_WAIT_LIST, "lio_listio(LIO_WAIT), the handler without SA_RESTART blocked");
        CHECK(pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0);
    }

    return finish();
}
