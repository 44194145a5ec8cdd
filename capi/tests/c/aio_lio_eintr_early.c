/* lio_listio(LIO_WAIT) fails with EINTR when a signal handler runs while it
 * waits (other tests), not for one that ran while it built and submitted its
 * list, before it had to wait: POSIX gives EINTR for a signal "delivered
 * while waiting", and glibc behaves so. Such calls make no signal-mask
 * system calls (blocking signals from the call's start cost every call two).
 *
 * This program defines malloc (over glibc's __libc_malloc), so the library's
 * allocations come here: the first one a call of lio_listio makes, as it
 * builds its list of requests, raises SIGUSR1 (a handler without
 * SA_RESTART) in the calling thread. The list is one read of a pipe that
 * gets its data 200 ms later; each round must return 0 with the data read.
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

#define ROUNDS 3

void *__libc_malloc(size_t);

/* The calling thread's next allocation raises SIGUSR1 in it. */
static __thread volatile int armed;
static volatile sig_atomic_t handled;
static int pipefd[2];

void *malloc(size_t n) {
    if (armed) {
        armed = 0;
        pthread_kill(pthread_self(), SIGUSR1);
    }
    return __libc_malloc(n);
}

static void on_usr1(int signo) {
    (void)signo;
    handled++;
}

static void pause_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Data for the round's read, a while after the call began (if it comes
 * before the call waits, the call returns all the same). */
static void *writer(void *arg) {
    (void)arg;
    pause_ms(200);
    CHECK(write(pipefd[1], "data", 4) == 4);
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pipe(pipefd) == 0);

    for (int r = 0; r < ROUNDS; r++) {
        static char buf[16];
        struct aiocb cb;
        memset(&cb, 0, sizeof cb);
        cb.aio_fildes = pipefd[0];
        cb.aio_buf = buf;
        cb.aio_nbytes = 4;
        cb.aio_lio_opcode = LIO_READ;
        struct aiocb *list[1] = {&cb};
        pthread_t t;
        sig_atomic_t before = handled;
        CHECK(pthread_create(&t, NULL, writer, NULL) == 0);
        armed = 1;
        int rc = lio_listio(LIO_WAIT, list, 1, NULL);
        int e = errno;
        armed = 0;
        CHECK(pthread_join(t, NULL) == 0);
        CHECK(handled == before + 1);
        if (rc != 0) {
            fprintf(stderr, "round %d: lio_listio gave %d, errno %d (%s)\n", r, rc, e,
                    strerror(e));
            CHECK(!"a signal raised as lio_listio built its list did not interrupt it");
            break;
        }
        /* The call waited for the read, which has its data. */
        CHECK(aio_error(&cb) == 0);
        CHECK(aio_return(&cb) == 4);
        CHECK(memcmp(buf, "data", 4) == 0);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    return finish();
}
