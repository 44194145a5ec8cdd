/* A completion's SIGEV_THREAD_ID signal is generated before a waiter sees the
 * request done, as a SIGEV_SIGNAL one is (aio_signal_order.c).
 *
 * The signal goes to one thread, named by sigev_notify_thread_id. When that
 * thread itself waits for the request (aio_suspend, aio_error, lio_listio
 * with LIO_WAIT) and sees it done, the signal is pending on it, and its
 * handler has run before the call returns. The signal used to be sent by a
 * notification thread after the request showed done (and after the waiters
 * were woken), so the wait often returned first, on the thread engine above
 * all.
 *
 * Each round reads one byte from a pipe, with SIGEV_THREAD_ID to the waiting
 * thread (value: the round number); a writer thread writes the byte 2 ms
 * later. The waiting thread is not the main thread, and the main thread and
 * the writer leave the signal unblocked: a signal sent to the process instead
 * of the thread could run its handler on them, and the handler records the
 * thread it ran on.
 *
 * Argument "suspend": the waiter waits in aio_suspend. "error": it polls
 * aio_error (whose lock-free read waits for the completion that stored the
 * status). "lio": it submits the read with lio_listio(LIO_WAIT).
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

#define ROUNDS 200

enum mode { SUSPEND, ERROR, LIO };

static int pipefd[2];
static struct aiocb cb;
static volatile sig_atomic_t last_value;
static volatile sig_atomic_t wrong_code, wrong_thread;
static volatile pid_t waiter_tid;
static sem_t go_writer;
static volatile int quit;
static enum mode mode;
static int signo;

static void on_signal(int s, siginfo_t *si, void *uc) {
    (void)s;
    (void)uc;
    if (si->si_code != SI_ASYNCIO) {
        wrong_code++;
        return;
    }
    if ((pid_t)syscall(SYS_gettid) != waiter_tid) {
        wrong_thread++;
    }
    last_value = si->si_value.sival_int;
}

static void pause_us(long us) {
    struct timespec t = {0, us * 1000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static void sem_wait_all(sem_t *s) {
    while (sem_wait(s) != 0 && errno == EINTR) {
    }
}

static void *writer(void *arg) {
    (void)arg;
    for (;;) {
        sem_wait_all(&go_writer);
        if (quit) {
            return NULL;
        }
        pause_us(2000);
        if (write(pipefd[1], "x", 1) != 1) {
            abort();
        }
    }
}

/* Submits the round's read and waits until it is done (by `mode`). */
static void submit_and_wait(void) {
    const struct aiocb *list[1] = {&cb};
    switch (mode) {
    case SUSPEND:
        CHECK(aio_read(&cb) == 0);
        sem_post(&go_writer);
        while (aio_error(&cb) == EINPROGRESS) {
            int r = aio_suspend(list, 1, NULL);
            CHECK(r == 0 || errno == EINTR);
        }
        break;
    case ERROR:
        CHECK(aio_read(&cb) == 0);
        sem_post(&go_writer);
        while (aio_error(&cb) == EINPROGRESS) {
            pause_us(20);
        }
        break;
    case LIO: {
        struct aiocb *l[1] = {&cb};
        cb.aio_lio_opcode = LIO_READ;
        sem_post(&go_writer);
        /* EINTR: the handler ran while the call waited; the request goes on. */
        int r = lio_listio(LIO_WAIT, l, 1, NULL);
        CHECK(r == 0 || errno == EINTR);
        if (r != 0) {
            while (aio_error(&cb) == EINPROGRESS) {
                CHECK(aio_suspend(list, 1, NULL) == 0 || errno == EINTR);
            }
        }
        break;
    }
    }
}

static void *waiter(void *arg) {
    char byte;
    int early = 0;
    (void)arg;
    waiter_tid = (pid_t)syscall(SYS_gettid);
    for (int round = 1; round <= ROUNDS; round++) {
        memset(&cb, 0, sizeof cb);
        cb.aio_fildes = pipefd[0];
        cb.aio_buf = &byte;
        cb.aio_nbytes = 1;
        cb.aio_sigevent.sigev_notify = SIGEV_THREAD_ID;
        cb.aio_sigevent.sigev_signo = signo;
        cb.aio_sigevent.sigev_value.sival_int = round;
        cb.aio_sigevent._sigev_un._tid = waiter_tid;
        submit_and_wait();
        /* The signal was generated before the request was seen done, and it
         * was sent to this thread: its handler has run. */
        if (last_value != round) {
            early++;
        }
        /* Whatever happened, let the handler run before the next round. */
        for (int i = 0; i < 2000 && last_value != round; i++) {
            pause_us(1000);
        }
        CHECK(last_value == round);
        CHECK(aio_error(&cb) == 0);
        CHECK(aio_return(&cb) == 1);
        if (failures > 10) {
            break;
        }
    }
    if (early != 0) {
        fprintf(stderr, "the wait returned before the handler ran in %d of %d rounds\n", early,
                ROUNDS);
    }
    CHECK(early == 0);
    return NULL;
}

int main(int argc, char **argv) {
    struct sigaction sa;
    pthread_t w, t;

    if (argc < 2 || strcmp(argv[1], "suspend") == 0) {
        mode = SUSPEND;
    } else if (strcmp(argv[1], "error") == 0) {
        mode = ERROR;
    } else {
        mode = LIO;
    }
    signo = SIGRTMIN + 1;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(signo, &sa, NULL) == 0);
    CHECK(pipe(pipefd) == 0);
    CHECK(sem_init(&go_writer, 0, 0) == 0);
    CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    if (failures != 0) {
        return 1;
    }
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(wrong_code == 0);
    CHECK(wrong_thread == 0);
    quit = 1;
    sem_post(&go_writer);
    pthread_join(w, NULL);
    return finish();
}
