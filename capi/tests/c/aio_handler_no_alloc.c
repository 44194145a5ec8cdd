/* aio_error, aio_return and aio_suspend are async-signal-safe (POSIX lists
 * them so): a SIGEV_SIGNAL handler may poll every outstanding request with
 * aio_error to find the finished ones. Called on a request still in
 * progress, from a thread that is not inside the library, they reap the
 * completions that are there; that reap must then allocate nothing, free
 * nothing and start no thread (the handler may have interrupted malloc or
 * free, whose locks and lists it would find half-changed).
 *
 * The program counts the allocations, frees and thread creations made by a
 * thread while it runs the handler (`in_handler`, see count_alloc.h).
 *
 * Reads of pipes stay in progress until the end (half of them notify by
 * SIGEV_SIGNAL when they complete); a feeder thread meanwhile submits batches
 * of file reads that notify by SIGEV_SIGNAL, SIGEV_THREAD or not at all, and
 * completes them. The SIGEV_SIGNAL handler (on the main thread, which sleeps,
 * or on a SIGEV_THREAD function's thread, which starts with no signal
 * blocked; the feeder blocks it) polls: aio_error on every pipe read,
 * aio_error and aio_return on one that stays in progress until every handler
 * has run, aio_suspend on the pipe reads with a zero timeout, a few rounds.
 * Its reaps find the feeder's completions, with their signals and SIGEV_THREAD
 * functions to hand on. Then the pipes get their data, and the handler polls
 * the finished SIGEV_SIGNAL reads too (aio_error on a done request that
 * notifies by signal takes the engine's lock once).
 *
 * With "used", the main thread submits the pipe reads; with "fresh", another
 * thread does, and the main thread never submits a request (its own calls
 * are the polls and waits that reap).
 *
 * With "trace" after the mode, a POSIX trace stream runs from the start (made
 * and started through posix_trace_create and posix_trace_start, looked up
 * with dlsym, so the program also runs preloaded): the handler's reaps then
 * emit `aio_complete`, which on a thread that never recorded an event (a
 * SIGEV_THREAD function's, or a "fresh" main thread) must neither set the
 * thread up in the trace facility (an allocation and a lock) nor fail the
 * other checks.
 *
 * Checked: no allocation, free or thread creation inside the handler; every
 * read done with its data, every notification delivered once; with "trace",
 * the stream's calls succeed.
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
#include <trace.h>
#include <unistd.h>

#include "check.h"
#include "count_alloc.h"
#include "waits.h"

#define PIPES 8
#define BATCH 9
#define ROUNDS 150
#define POLLS 20
#define BLOCK 512

static int sig;
static int pipes[PIPES][2];
static struct aiocb pipe_cbs[PIPES];
static char pipe_bufs[PIPES][8];
/* A read that stays in progress while any handler runs: aio_return's. */
static int idle_pipe[2];
static struct aiocb idle_cb;
static char idle_buf[8];
/* Threads running the handler now. */
static unsigned long active;
static int file;
static unsigned long handled, signals_seen, thread_calls;
/* Answers the handler found wrong, for each call (counted, and the last
 * wrong value kept, for main to check). */
struct wrong {
    unsigned long n;
    int last;
};
static struct wrong wrong_error, wrong_return, wrong_suspend;
/* The pipes have no data yet: their reads must be in progress. */
static volatile int pipes_empty = 1;

static void wrong_answer(struct wrong *w, int v) {
    __atomic_fetch_add(&w->n, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&w->last, v, __ATOMIC_RELAXED);
}

static void on_signal(int signo, siginfo_t *si, void *ctx) {
    (void)signo;
    (void)ctx;
    int saved = errno;
    __atomic_fetch_add(&active, 1, __ATOMIC_SEQ_CST);
    in_handler = 1;
    if (si->si_code == SI_ASYNCIO)
        __atomic_fetch_add(&signals_seen, 1, __ATOMIC_RELAXED);
    const struct aiocb *list[PIPES];
    for (int i = 0; i < PIPES; i++)
        list[i] = &pipe_cbs[i];
    struct timespec zero = {0, 0};
    for (int p = 0; p < POLLS; p++) {
        /* (`pipes_empty` read after each call: still set, the pipes had no
         * data while it ran. The handler may run on a SIGEV_THREAD
         * function's thread while the main thread fills them.) */
        for (int i = 0; i < PIPES; i++) {
            int e = aio_error(&pipe_cbs[i]);
            if (e != EINPROGRESS && pipes_empty)
                wrong_answer(&wrong_error, e);
        }
        /* Too early for a result: 0, and the request goes on. */
        if (aio_error(&idle_cb) != EINPROGRESS)
            wrong_answer(&wrong_error, -1);
        ssize_t r = aio_return(&idle_cb);
        if (r != 0)
            wrong_answer(&wrong_return, (int)r);
        int s = aio_suspend(list, PIPES, &zero);
        int e = errno;
        if ((s != -1 || e != EAGAIN) && pipes_empty)
            wrong_answer(&wrong_suspend, s == 0 ? 0 : e);
    }
    __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
    in_handler = 0;
    __atomic_fetch_sub(&active, 1, __ATOMIC_SEQ_CST);
    errno = saved;
}

static void on_thread(union sigval v) {
    (void)v;
    __atomic_fetch_add(&thread_calls, 1, __ATOMIC_RELAXED);
}

/* Submits batches of file reads that notify each way, and completes them,
 * while the handler polls on the main thread. */
static void *feeder(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    static struct aiocb cbs[BATCH];
    static char bufs[BATCH][BLOCK];
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < BATCH; k++) {
            aiocb_on(&cbs[k], file, bufs[k], BLOCK, (off_t)k * BLOCK);
            switch (k % 3) {
            case 0:
                cbs[k].aio_sigevent.sigev_notify = SIGEV_NONE;
                break;
            case 1:
                cbs[k].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
                cbs[k].aio_sigevent.sigev_signo = sig;
                cbs[k].aio_sigevent.sigev_value.sival_int = k;
                break;
            default:
                cbs[k].aio_sigevent.sigev_notify = SIGEV_THREAD;
                cbs[k].aio_sigevent.sigev_notify_function = on_thread;
                break;
            }
            CHECK(aio_read(&cbs[k]) == 0);
        }
        for (int k = 0; k < BATCH; k++) {
            wait_done(&cbs[k]);
            CHECK(aio_error(&cbs[k]) == 0);
            CHECK(aio_return(&cbs[k]) == BLOCK);
            CHECK(bufs[k][0] == (char)('a' + k));
        }
    }
    return NULL;
}

/* Submits the pipe reads and the idle read. */
static void *submit_pipe_reads(void *arg) {
    (void)arg;
    for (int i = 0; i < PIPES; i++) {
        CHECK(pipe(pipes[i]) == 0);
        aiocb_on(&pipe_cbs[i], pipes[i][0], pipe_bufs[i], 4, 0);
        if (i % 2) {
            pipe_cbs[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
            pipe_cbs[i].aio_sigevent.sigev_signo = sig;
            pipe_cbs[i].aio_sigevent.sigev_value.sival_int = 100 + i;
        } else {
            pipe_cbs[i].aio_sigevent.sigev_notify = SIGEV_NONE;
        }
        CHECK(aio_read(&pipe_cbs[i]) == 0);
    }
    CHECK(pipe(idle_pipe) == 0);
    aiocb_on(&idle_cb, idle_pipe[0], idle_buf, 4, 0);
    idle_cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_read(&idle_cb) == 0);
    return NULL;
}

int main(int argc, char **argv) {
    int fresh = argc > 1 && strcmp(argv[1], "fresh") == 0;
    int traced = argc > 2 && strcmp(argv[2], "trace") == 0;
    sig = SIGRTMIN + 3;
    if (!count_alloc_setup(sig, on_signal))
        return finish();
    struct count_trace trace;
    if (traced && !start_trace(&trace))
        return finish();

    file = temp_file("handler-no-alloc");
    static char block[BLOCK];
    for (int k = 0; k < BATCH; k++) {
        memset(block, 'a' + k, BLOCK);
        CHECK(write(file, block, BLOCK) == BLOCK);
    }
    pthread_t t;
    if (fresh) {
        CHECK(pthread_create(&t, NULL, submit_pipe_reads, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
    } else {
        submit_pipe_reads(NULL);
    }

    CHECK(pthread_create(&t, NULL, feeder, NULL) == 0);
    /* The main thread sleeps (outside the library): the handler runs here. */
    CHECK(pthread_join(t, NULL) == 0);
    pipes_empty = 0;
    for (int i = 0; i < PIPES; i++)
        CHECK(write(pipes[i][1], "data", 4) == 4);
    for (int i = 0; i < PIPES; i++) {
        wait_done(&pipe_cbs[i]);
        CHECK(aio_error(&pipe_cbs[i]) == 0);
        CHECK(aio_return(&pipe_cbs[i]) == 4);
        CHECK(memcmp(pipe_bufs[i], "data", 4) == 0);
    }
    /* Every notification comes (the SIGEV_THREAD functions run on threads
     * of their own, maybe still starting). */
    unsigned long want_signals = ROUNDS * (BATCH / 3) + PIPES / 2;
    unsigned long want_calls = ROUNDS * (BATCH / 3);
    for (int i = 0; i < 1000; i++) {
        if (__atomic_load_n(&signals_seen, __ATOMIC_RELAXED) >= want_signals &&
            __atomic_load_n(&thread_calls, __ATOMIC_RELAXED) >= want_calls &&
            __atomic_load_n(&active, __ATOMIC_SEQ_CST) == 0)
            break;
        pause_ms(10);
    }
    CHECK(signals_seen == want_signals);
    CHECK(thread_calls == want_calls);
    CHECK(handled > 0);
    /* Every signal came and its handler returned: the idle read's turn. */
    CHECK(write(idle_pipe[1], "idle", 4) == 4);
    wait_done(&idle_cb);
    CHECK(aio_error(&idle_cb) == 0);
    CHECK(aio_return(&idle_cb) == 4);
    if (wrong_error.n || wrong_return.n || wrong_suspend.n)
        fprintf(stderr,
                "wrong answers on reads still in progress: aio_error %lu (last %d), "
                "aio_return %lu (last %d), aio_suspend %lu (last errno %d)\n",
                wrong_error.n, wrong_error.last, wrong_return.n, wrong_return.last,
                wrong_suspend.n, wrong_suspend.last);
    CHECK(wrong_error.n == 0);
    CHECK(wrong_return.n == 0);
    CHECK(wrong_suspend.n == 0);

    count_alloc_check(handled);
    if (traced)
        end_trace(&trace);
    for (int i = 0; i < PIPES; i++) {
        close(pipes[i][0]);
        close(pipes[i][1]);
    }
    close(idle_pipe[0]);
    close(idle_pipe[1]);
    close(file);
    return finish();
}
