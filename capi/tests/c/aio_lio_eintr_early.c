/* lio_listio(LIO_WAIT) fails with EINTR when a signal handler runs at any
 * moment of the call once it has begun, not only while it sleeps: a handler
 * that ran while the call submitted its list, or before its first sleep,
 * went unseen, and the call waited for every request (for good, for a read
 * of an empty pipe).
 *
 * This program defines malloc (over glibc's __libc_malloc), so the library's
 * allocations come here: the first one a call of lio_listio makes, as it
 * builds its list of requests, raises SIGUSR1 (a handler without
 * SA_RESTART) in the calling thread. The list is one read of an empty pipe;
 * each round must end with -1/EINTR, the read still in progress, and the
 * read then completes once data comes. A round that misses its signal is
 * ended by a write to the pipe 2 s later (the call then returns 0).
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

#define ROUNDS 10

void *__libc_malloc(size_t);

/* The calling thread's next allocation raises SIGUSR1 in it. */
static __thread volatile int armed;
static volatile sig_atomic_t handled;
static volatile int returned;
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

/* Ends a round's call that missed its signal: data for its read after 2 s. */
static void *rescuer(void *arg) {
    (void)arg;
    for (int i = 0; i < 200 && !__atomic_load_n(&returned, __ATOMIC_ACQUIRE); i++)
        pause_ms(10);
    if (!__atomic_load_n(&returned, __ATOMIC_ACQUIRE))
        CHECK(write(pipefd[1], "late", 4) == 4);
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
        returned = 0;
        CHECK(pthread_create(&t, NULL, rescuer, NULL) == 0);
        armed = 1;
        int rc = lio_listio(LIO_WAIT, list, 1, NULL);
        int e = errno;
        armed = 0;
        __atomic_store_n(&returned, 1, __ATOMIC_RELEASE);
        CHECK(pthread_join(t, NULL) == 0);
        CHECK(handled == before + 1);
        if (rc != -1 || e != EINTR) {
            fprintf(stderr, "round %d: lio_listio gave %d, errno %d (%s)\n", r, rc, e,
                    strerror(e));
            CHECK(!"a signal raised as lio_listio built its list gave EINTR");
            break;
        }
        /* The read goes on, and completes once data comes. */
        CHECK(aio_error(&cb) == EINPROGRESS);
        CHECK(write(pipefd[1], "data", 4) == 4);
        const struct aiocb *wait[1] = {&cb};
        for (int i = 0; i < 100 && aio_error(&cb) == EINPROGRESS; i++) {
            struct timespec to = {0, 50000000};
            aio_suspend(wait, 1, &to);
        }
        CHECK(aio_error(&cb) == 0);
        CHECK(aio_return(&cb) == 4);
        CHECK(memcmp(buf, "data", 4) == 0);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    return finish();
}
