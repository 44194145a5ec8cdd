/* What the tests of a notification signal's order share
 * (aio_signal_order.c, aio_thread_id_order.c). Each round reads one byte
 * from a pipe (`pipefd`) with `cb`, notified by a signal whose value is the
 * round's number; the `writer` thread writes the byte 2 ms after the round
 * posts `go_writer`; the test's handler stores the value it got in
 * `last_value`. (For a test that defines _GNU_SOURCE.) */
#ifndef POSIXRT_TEST_SIGNAL_ORDER_H
#define POSIXRT_TEST_SIGNAL_ORDER_H
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 200

static int pipefd[2];
static struct aiocb cb;
static volatile sig_atomic_t last_value;
static sem_t go_writer;
static volatile int quit;

static inline void pause_us(long us) {
    struct timespec t = {0, us * 1000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static inline void sem_wait_all(sem_t *s) {
    while (sem_wait(s) != 0 && errno == EINTR) {
    }
}

static inline void *writer(void *arg) {
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

/* Installs `handler` for `signo` (SA_RESTART: the library goes on waiting
 * after it), and makes the pipe and the writer's semaphore. */
static inline void order_setup(int signo, void (*handler)(int, siginfo_t *, void *)) {
    install_siginfo(signo, handler);
    CHECK(pipe(pipefd) == 0);
    CHECK(sem_init(&go_writer, 0, 0) == 0);
}

/* Sets `cb` up for round `round`: one byte from the pipe into `byte`,
 * notified by `notify` (SIGEV_SIGNAL, SIGEV_THREAD_ID) with `signo` and the
 * round's number. */
static inline void round_read(volatile char *byte, int notify, int signo, int round) {
    aiocb_on(&cb, pipefd[0], byte, 1, 0);
    cb.aio_sigevent.sigev_notify = notify;
    cb.aio_sigevent.sigev_signo = signo;
    cb.aio_sigevent.sigev_value.sival_int = round;
}

/* After the round's wait saw its read done: 1 if the handler had not run by
 * then (the wait returned first), else 0. Then lets the handler run (for at
 * most 2 s) before the next round, and checks its value and the read. */
static inline int round_early(int round) {
    int early = last_value != round;
    for (int i = 0; i < 2000 && last_value != round; i++) {
        pause_us(1000);
    }
    CHECK(last_value == round);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 1);
    return early;
}

/* Ends the writer thread `w`. */
static inline void writer_stop(pthread_t w) {
    quit = 1;
    sem_post(&go_writer);
    pthread_join(w, NULL);
}

#endif
