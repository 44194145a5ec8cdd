/* aio_suspend is async-signal-safe (POSIX lists it so), also when it has to
 * sleep: a SIGEV_SIGNAL handler may wait there for another request, one that
 * completes later. That wait must allocate nothing, free nothing and start
 * no thread (the handler may have interrupted malloc or free, whose locks and
 * lists it would find half-changed).
 *
 * One thread runs the handler (the others block the signal): with "fresh",
 * a thread that never called the library before; with "used", one that
 * submitted a read and waited for it first. Each round, the main thread
 * submits a read of a pipe (no data yet), then a file read that notifies by
 * SIGEV_SIGNAL. The handler waits for the pipe read with aio_suspend (a NULL
 * timeout, or 10 s, every other round), and the main thread writes the pipe
 * once the handler is about to wait (after a pause, so that it mostly sleeps
 * by then). Every other pair of rounds, another thread waits meanwhile in
 * aio_suspend for a request of its own (on io_uring, that thread reaps the
 * ring and the handler sleeps beside it; otherwise the handler reaps).
 *
 * With "trace" after the mode, a POSIX trace stream runs from the start (made
 * and started through posix_trace_create and posix_trace_start, looked up
 * with dlsym, so the program also runs preloaded): the handler's reaps then
 * emit `aio_complete`, which on a "fresh" thread, one that never recorded an
 * event, must neither set the thread up in the trace facility (an
 * allocation and a lock) nor fail the other checks.
 *
 * Checked: no allocation, free or thread creation inside the handler; each
 * handler's aio_suspend returned 0 with the pipe read done; every read done
 * with its data; with "trace", the stream's calls succeed.
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

#define ROUNDS 8
#define BLOCK 512

static int sig;
static int file;
/* The round's pipe read, which the handler waits for. */
static struct aiocb sleep_cb;
static char sleep_buf[8];
/* The handler's aio_suspend timeout: NULL (0) or 10 s (1). */
static volatile int ten_seconds;
/* Set by the handler as it starts to wait. */
static int waiting;
static unsigned long handled, wrong;
static volatile int stop;

static void on_signal(int signo, siginfo_t *si, void *ctx) {
    (void)signo;
    (void)ctx;
    if (si->si_code != SI_ASYNCIO)
        return;
    int saved = errno;
    in_handler = 1;
    const struct aiocb *list[1] = {&sleep_cb};
    struct timespec ten = {10, 0};
    __atomic_store_n(&waiting, 1, __ATOMIC_SEQ_CST);
    int r;
    int tries = 0;
    do
        r = aio_suspend(list, 1, ten_seconds ? &ten : NULL);
    while (r != 0 && errno == EINTR && ++tries < 100);
    if (r != 0 || aio_error(&sleep_cb) == EINPROGRESS)
        __atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
    in_handler = 0;
    __atomic_fetch_add(&handled, 1, __ATOMIC_SEQ_CST);
    errno = saved;
}

/* Waits (up to 10 s) until `*word` is at least `want`. */
static void wait_for(unsigned long *word, unsigned long want) {
    for (int i = 0; i < 1000 && __atomic_load_n(word, __ATOMIC_SEQ_CST) < want; i++)
        pause_ms(10);
}

/* The thread that runs the handler: lets the signal through only while it
 * waits for it. With `used`, it called the library first. */
static void *handler_thread(void *arg) {
    if (arg) {
        static struct aiocb cb;
        static char buf[BLOCK];
        aiocb_on(&cb, file, buf, BLOCK, 0);
        CHECK(aio_read(&cb) == 0);
        wait_done(&cb);
        CHECK(aio_return(&cb) == BLOCK);
    }
    sigset_t open;
    CHECK(pthread_sigmask(SIG_BLOCK, NULL, &open) == 0);
    sigdelset(&open, sig);
    while (!stop)
        sigsuspend(&open);
    return NULL;
}

/* Another thread's wait, beside the handler's. */
static void *other_waiter(void *arg) {
    wait_done(arg);
    return NULL;
}

int main(int argc, char **argv) {
    int used = argc > 1 && strcmp(argv[1], "used") == 0;
    int traced = argc > 2 && strcmp(argv[2], "trace") == 0;
    sig = SIGRTMIN + 3;
    if (!count_alloc_setup(sig, on_signal))
        return finish();
    struct count_trace trace;
    if (traced && !start_trace(&trace))
        return finish();
    /* Only the handler's thread lets the signal through. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);

    file = temp_file("handler-sleeps");
    static char block[BLOCK];
    memset(block, 'f', BLOCK);
    CHECK(write(file, block, BLOCK) == BLOCK);

    pthread_t h;
    CHECK(pthread_create(&h, NULL, handler_thread, used ? &h : NULL) == 0);
    for (int r = 0; r < ROUNDS; r++) {
        int p[2];
        CHECK(pipe(p) == 0);
        aiocb_on(&sleep_cb, p[0], sleep_buf, 4, 0);
        CHECK(aio_read(&sleep_cb) == 0);
        ten_seconds = r % 2;
        /* Another thread waits for a read of its own meanwhile. */
        int beside = (r / 2) % 2;
        int q[2] = {-1, -1};
        static struct aiocb other_cb;
        static char other_buf[8];
        pthread_t o;
        if (beside) {
            CHECK(pipe(q) == 0);
            aiocb_on(&other_cb, q[0], other_buf, 4, 0);
            CHECK(aio_read(&other_cb) == 0);
            CHECK(pthread_create(&o, NULL, other_waiter, &other_cb) == 0);
            pause_ms(20);
        }
        __atomic_store_n(&waiting, 0, __ATOMIC_SEQ_CST);
        static struct aiocb trigger;
        static char trigger_buf[BLOCK];
        aiocb_on(&trigger, file, trigger_buf, BLOCK, 0);
        trigger.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
        trigger.aio_sigevent.sigev_signo = sig;
        CHECK(aio_read(&trigger) == 0);
        for (int i = 0; i < 1000 && !__atomic_load_n(&waiting, __ATOMIC_SEQ_CST); i++)
            pause_ms(10);
        CHECK(waiting);
        /* (Mostly asleep by now.) */
        pause_ms(30);
        CHECK(write(p[1], "wake", 4) == 4);
        wait_for(&handled, (unsigned long)r + 1);
        CHECK(handled == (unsigned long)r + 1);
        wait_done(&trigger);
        CHECK(aio_return(&trigger) == BLOCK);
        CHECK(trigger_buf[0] == 'f');
        wait_done(&sleep_cb);
        CHECK(aio_return(&sleep_cb) == 4);
        CHECK(memcmp(sleep_buf, "wake", 4) == 0);
        if (beside) {
            CHECK(write(q[1], "done", 4) == 4);
            CHECK(pthread_join(o, NULL) == 0);
            CHECK(aio_return(&other_cb) == 4);
            close(q[0]);
            close(q[1]);
        }
        close(p[0]);
        close(p[1]);
    }
    stop = 1;
    CHECK(pthread_kill(h, sig) == 0);
    CHECK(pthread_join(h, NULL) == 0);
    if (wrong)
        fprintf(stderr, "%lu handler waits did not end with the read done\n", wrong);
    CHECK(wrong == 0);

    count_alloc_check(handled);
    if (traced)
        end_trace(&trace);
    close(file);
    return finish();
}
