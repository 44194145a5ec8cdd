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
#include "signal_order.h"

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

enum mode { SUSPEND, ERROR, LIO };

static volatile sig_atomic_t wrong_code, wrong_thread;
static volatile pid_t waiter_tid;
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
        round_read(&byte, SIGEV_THREAD_ID, signo, round);
        cb.aio_sigevent._sigev_un._tid = waiter_tid;
        submit_and_wait();
        /* The signal was generated before the request was seen done, and it
         * was sent to this thread: its handler has run. */
        early += round_early(round);
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
    pthread_t w, t;

    if (argc < 2 || strcmp(argv[1], "suspend") == 0) {
        mode = SUSPEND;
    } else if (strcmp(argv[1], "error") == 0) {
        mode = ERROR;
    } else {
        mode = LIO;
    }
    signo = SIGRTMIN + 1;
    order_setup(signo, on_signal);
    CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    if (failures != 0) {
        return 1;
    }
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(wrong_code == 0);
    CHECK(wrong_thread == 0);
    writer_stop(w);
    return finish();
}
