/* A completion's SIGEV_SIGNAL is generated before a waiter sees it done.
 *
 * glibc sets a request's status, then sends its signal, then wakes the
 * threads in aio_suspend (all under its request lock), so by the time
 * aio_suspend returns for a request with SIGEV_SIGNAL, the signal is pending
 * and its handler has run in a thread that does not block it.
 *
 * Each round reads one byte from a pipe with SIGEV_SIGNAL (value: the round
 * number) and waits in aio_suspend; a writer thread writes the byte 2 ms later.
 * Only the main thread leaves the signal unblocked (the library's threads
 * block every signal), so the handler runs there, and it must have run when
 * aio_suspend returns. The handler is installed with SA_RESTART, so the
 * library goes on waiting after it (and the round's wait may or may not be
 * interrupted by it, depending on the order of the wake-ups).
 *
 * Argument "alone": the main thread is the only waiter. "helper": a second
 * thread (blocking the signal) waits in aio_suspend on the same request from
 * the start of the round, so that on io_uring it, not the main thread, reaps
 * the completion and sends the signal. "open": as "alone", but the writer
 * thread leaves the signal unblocked: the kernel still gives a process signal
 * to the main thread when it does not block it (so glibc's order holds for
 * it), also when the main thread reaps the completion itself (io_uring).
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
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "signal_order.h"

static sem_t go_helper, helper_done;

static void on_signal(int signo, siginfo_t *si, void *uc) {
    (void)signo;
    (void)uc;
    if (si->si_code == SI_ASYNCIO) {
        last_value = si->si_value.sival_int;
    }
}

/* Waits until the round's request is done. */
static void wait_done(void) {
    const struct aiocb *list[1] = {&cb};
    while (aio_error(&cb) == EINPROGRESS) {
        int r = aio_suspend(list, 1, NULL);
        CHECK(r == 0 || errno == EINTR);
    }
}

static void *helper(void *arg) {
    (void)arg;
    for (;;) {
        sem_wait_all(&go_helper);
        if (quit) {
            return NULL;
        }
        wait_done();
        sem_post(&helper_done);
    }
}

int main(int argc, char **argv) {
    int with_helper = argc > 1 && strcmp(argv[1], "helper") == 0;
    int open = argc > 1 && strcmp(argv[1], "open") == 0;
    int signo = SIGRTMIN + 1;
    int early = 0;
    char byte;
    sigset_t set, old;
    pthread_t w, h;

    order_setup(signo, on_signal);
    CHECK(sem_init(&go_helper, 0, 0) == 0);
    CHECK(sem_init(&helper_done, 0, 0) == 0);
    /* The threads of the test block the signal (but the writer in "open"
     * mode): only the main thread takes it. */
    sigemptyset(&set);
    sigaddset(&set, signo);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, &old) == 0);
    CHECK(pthread_create(&h, NULL, helper, NULL) == 0);
    if (open) {
        CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
    }
    CHECK(pthread_create(&w, NULL, writer, NULL) == 0);
    CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
    if (failures != 0) {
        return 1;
    }

    for (int round = 1; round <= ROUNDS; round++) {
        round_read(&byte, SIGEV_SIGNAL, signo, round);
        CHECK(aio_read(&cb) == 0);
        sem_post(&go_writer);
        if (with_helper) {
            sem_post(&go_helper);
            /* Let the helper wait first (on io_uring it reaps, then). */
            pause_us(500);
        }
        wait_done();
        /* The signal was generated before the request was seen done, and only
         * this thread takes it: its handler has run. */
        early += round_early(round);
        if (with_helper) {
            sem_wait_all(&helper_done);
        }
        if (failures > 10) {
            break;
        }
    }
    if (early != 0) {
        fprintf(stderr, "aio_suspend returned before the handler ran in %d of %d rounds (%s)\n",
                early, ROUNDS, with_helper ? "helper" : open ? "open" : "alone");
    }
    CHECK(early == 0);
    quit = 1;
    sem_post(&go_helper);
    pthread_join(h, NULL);
    writer_stop(w);
    return finish();
}
