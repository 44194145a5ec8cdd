/* A deferred pthread_cancel and the trace functions.
 *
 * The library's work reaches glibc's cancellation points: a shutdown joins
 * the stream's flusher and writes, syncs and closes the log, a flush writes
 * it, posix_trace_open reads a log and posix_trace_close closes it, a read
 * that waits sleeps. A cancel acted on there would unwind out of the middle
 * of that work, through functions that cannot unwind: the process aborts.
 * So (each scenario is its own run, named by the argument):
 *
 *   flush_shutdown  a thread with a cancel pending flushes and shuts down a
 *                   stream with a log: both return 0, the log holds every
 *                   event, and the cancel is acted on at the thread's next
 *                   cancellation point (pthread_testcancel);
 *   open_close      the same for posix_trace_open, _rewind, _get_status and
 *                   _close of a log (the library's copy of the fd is closed);
 *   getnext_entry   posix_trace_trygetnext_event is no cancellation point;
 *                   posix_trace_getnext_event is one: a pending cancel is
 *                   acted on as it is called, before it takes an event;
 *   getnext_wait    a thread waiting in posix_trace_getnext_event on a
 *                   running, empty stream is cancelled while it waits, and
 *                   the stream works on;
 *   timedgetnext_wait  the same in posix_trace_timedgetnext_event;
 *   sigwait         a thread waiting in sigwait (interposed by the library)
 *                   is cancelled there, as in glibc's;
 *   exit_pending    a thread with a cancel pending calls exit while a stream
 *                   with a log runs: the library's exit handler, which waits
 *                   for the log's last flush, acts on no cancel (it cannot
 *                   unwind), and the process exits with the status given;
 *   async           threads whose cancellation type is asynchronous (POSIX
 *                   lets them call none of these functions; programs do)
 *                   flush a stream and ask aio_error in a loop and are
 *                   cancelled: each ends, at the end of a call at the latest
 *                   (where the process used to abort), and the stream and the
 *                   AIO engine work on, no lock of theirs left held.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1 (or dies of SIGABRT, as the library did before).
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
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

#define EVENTS 100

static trace_event_id_t ev;

/* What a victim thread reports: each call's result, and how far it got. */
static volatile int r_flush = -1, r_shutdown = -1, r_open = -1, r_rewind = -1, r_status = -1,
                    r_close = -1, r_try = -1, returned, after_testcancel;
static int log_fd = -1;
static trace_id_t trid;

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Joins `t` (10 s at most) and checks that it was cancelled. */
static void join_cancelled(pthread_t t) {
    void *res = NULL;
    int joined = join_within_10s(t, &res);
    CHECK(joined == 0);
    if (joined != 0) {
        fprintf(stderr, "the thread was not cancelled within 10 s\n");
        exit(1);
    }
    CHECK(res == PTHREAD_CANCELED);
}

/* Runs `victim` on a thread of its own, which is cancelled once its calls
 * returned (at its pthread_testcancel, not before). */
static void run_victim(void *(*victim)(void *)) {
    pthread_t v;
    CHECK(pthread_create(&v, NULL, victim, NULL) == 0);
    join_cancelled(v);
    CHECK(returned == 1);
    CHECK(after_testcancel == 0);
}

/* The next event of the stream `trid` is the user event with `want` for
 * data; then the stream is shut down. */
static void expect_next_then_shutdown(int want) {
    struct posix_trace_event_info info;
    int data = 0, un = 1;
    size_t len = 0;
    CHECK(posix_trace_trygetnext_event(trid, &info, &data, sizeof data, &len, &un) == 0);
    CHECK(un == 0 && info.posix_event_id == ev && data == want);
    CHECK(posix_trace_shutdown(trid) == 0);
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    CHECK(d != NULL);
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* The log on `log_fd` holds the EVENTS user events, in order, and the end of
 * the shutdown's flush. */
static void check_log(void) {
    trace_id_t l;
    CHECK(posix_trace_open(log_fd, &l) == 0);
    int users = 0, in_order = 1, flush_stop = 0;
    for (;;) {
        struct posix_trace_event_info info;
        int data = -1, un = 1;
        size_t len = 0;
        int r = posix_trace_getnext_event(l, &info, &data, sizeof data, &len, &un);
        CHECK(r == 0);
        if (r != 0 || un)
            break;
        if (info.posix_event_id == ev) {
            if (len != sizeof data || data != users)
                in_order = 0;
            users++;
        }
        if (info.posix_event_id == POSIX_TRACE_FLUSH_STOP)
            flush_stop++;
    }
    CHECK(users == EVENTS);
    CHECK(in_order);
    CHECK(flush_stop >= 1);
    CHECK(posix_trace_close(l) == 0);
}

static void record_events(void) {
    for (int i = 0; i < EVENTS; i++)
        posix_trace_event(ev, &i, sizeof i);
}

/* --- flush_shutdown ----------------------------------------------------- */

static void *flush_shutdown_victim(void *arg) {
    (void)arg;
    CHECK(posix_trace_create_withlog(0, NULL, log_fd, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    record_events();
    CHECK(pthread_cancel(pthread_self()) == 0);
    /* Pending from here on. */
    r_flush = posix_trace_flush(trid);
    r_shutdown = posix_trace_shutdown(trid);
    returned = 1;
    pthread_testcancel();
    after_testcancel = 1;
    return NULL;
}

static void flush_shutdown(void) {
    run_victim(flush_shutdown_victim);
    CHECK(r_flush == 0);
    CHECK(r_shutdown == 0);
    CHECK(posix_trace_shutdown(trid) == EINVAL); /* it is gone */
    check_log();
}

/* --- open_close ---------------------------------------------------------- */

static void *open_close_victim(void *arg) {
    (void)arg;
    trace_id_t l = 0;
    struct posix_trace_status_info st;
    CHECK(pthread_cancel(pthread_self()) == 0);
    r_open = posix_trace_open(log_fd, &l);
    r_rewind = posix_trace_rewind(l);
    r_status = posix_trace_get_status(l, &st);
    r_close = posix_trace_close(l);
    returned = 1;
    trid = l;
    pthread_testcancel();
    after_testcancel = 1;
    return NULL;
}

static void open_close(void) {
    CHECK(posix_trace_create_withlog(0, NULL, log_fd, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    record_events();
    CHECK(posix_trace_shutdown(trid) == 0);
    int fds = open_fds();
    run_victim(open_close_victim);
    CHECK(r_open == 0);
    CHECK(r_rewind == 0);
    CHECK(r_status == 0);
    CHECK(r_close == 0);
    CHECK(posix_trace_close(trid) == EINVAL); /* it is gone */
    CHECK(open_fds() == fds);                 /* and so is its fd */
    check_log();
}

/* --- getnext_entry ------------------------------------------------------- */

static void *getnext_entry_victim(void *arg) {
    (void)arg;
    struct posix_trace_event_info info;
    char buf[16];
    size_t len;
    int un;
    CHECK(pthread_cancel(pthread_self()) == 0);
    /* No cancellation point: takes the first event (POSIX_TRACE_START). */
    r_try = posix_trace_trygetnext_event(trid, &info, buf, sizeof buf, &len, &un);
    CHECK(r_try == 0 && un == 0 && info.posix_event_id == POSIX_TRACE_START);
    returned = 1;
    /* A cancellation point: acted on here, with the next event left. */
    posix_trace_getnext_event(trid, &info, buf, sizeof buf, &len, &un);
    after_testcancel = 1;
    return NULL;
}

static void getnext_entry(void) {
    CHECK(posix_trace_create(0, NULL, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    int one = 1;
    posix_trace_event(ev, &one, sizeof one);
    run_victim(getnext_entry_victim);
    expect_next_then_shutdown(1);
}

/* --- getnext_wait, timedgetnext_wait -------------------------------------- */

static volatile int waiting;

/* Cancels the thread `v` once it waits (`waiting` set, and 100 ms more, so
 * that it sleeps in the call), and checks that it was cancelled there. */
static void cancel_when_waiting(pthread_t v) {
    while (!waiting)
        nap_ms(1);
    nap_ms(100);
    CHECK(pthread_cancel(v) == 0);
    join_cancelled(v);
    CHECK(after_testcancel == 0);
}


static void *wait_victim(void *arg) {
    int timed = arg != NULL;
    struct posix_trace_event_info info;
    char buf[16];
    size_t len;
    int un;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    /* Takes POSIX_TRACE_START, then waits: nothing else comes. */
    for (;;) {
        waiting = 1;
        int r = timed ? posix_trace_timedgetnext_event(trid, &info, buf, sizeof buf, &len,
                                                       &un, &until)
                      : posix_trace_getnext_event(trid, &info, buf, sizeof buf, &len, &un);
        if (r != 0 || un != 0 || info.posix_event_id != POSIX_TRACE_START)
            break;
    }
    after_testcancel = 1; /* an event other than START, or an error */
    return NULL;
}

static void getnext_wait(int timed) {
    CHECK(posix_trace_create(0, NULL, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    pthread_t v;
    CHECK(pthread_create(&v, NULL, wait_victim, timed ? &v : NULL) == 0);
    cancel_when_waiting(v);
    /* The stream works on: an event recorded now is read. */
    int two = 2;
    posix_trace_event(ev, &two, sizeof two);
    expect_next_then_shutdown(2);
}

/* --- sigwait ------------------------------------------------------------- */

static void *sigwait_victim(void *arg) {
    (void)arg;
    sigset_t s;
    int sig = 0;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    waiting = 1;
    sigwait(&s, &sig);
    after_testcancel = 1;
    return NULL;
}

static void sigwait_cancel(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
    /* A running stream: the interposed sigwait records what it takes. */
    CHECK(posix_trace_create(0, NULL, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    pthread_t v;
    CHECK(pthread_create(&v, NULL, sigwait_victim, NULL) == 0);
    cancel_when_waiting(v);
    CHECK(posix_trace_shutdown(trid) == 0);
}

/* --- exit_pending ------------------------------------------------------- */

static int exit_status;

static void *exit_victim(void *arg) {
    (void)arg;
    CHECK(pthread_cancel(pthread_self()) == 0);
    /* Pending: exit's handlers must not act on it. */
    exit(exit_status);
}

static void exit_pending(void) {
    CHECK(posix_trace_create_withlog(0, NULL, log_fd, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    record_events();
    /* Reported now: nothing is left to write at exit (stdout's flush then
     * would be a cancellation point of its own). */
    exit_status = finish();
    fflush(stdout);
    pthread_t v;
    CHECK(pthread_create(&v, NULL, exit_victim, NULL) == 0);
    pthread_join(v, NULL);
    /* Not reached: the victim's exit ends the process. */
    fprintf(stderr, "the victim did not exit\n");
    exit(1);
}

/* --- async --------------------------------------------------------------- */

static struct aiocb async_cb;
static int data_fd = -1;

static void *async_victim(void *arg) {
    (void)arg;
    int old;
    CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old) == 0);
    waiting = 1;
    for (;;) {
        posix_trace_flush(trid);
        aio_error(&async_cb);
    }
    return NULL;
}

/* One AIO read of `data_fd`, waited for: 0 if it read `len` bytes. */
static int read_with_aio(size_t len) {
    static char buf[64];
    aiocb_on(&async_cb, data_fd, buf, len, 0);
    if (aio_read(&async_cb) != 0)
        return -1;
    const struct aiocb *list[1] = {&async_cb};
    while (aio_error(&async_cb) == EINPROGRESS)
        aio_suspend(list, 1, NULL);
    return aio_return(&async_cb) == (ssize_t)len ? 0 : -1;
}

static void async_cancel(void) {
    CHECK(posix_trace_create_withlog(0, NULL, log_fd, &trid) == 0);
    CHECK(posix_trace_start(trid) == 0);
    record_events();
    data_fd = temp_file("trace-cancel-data");
    CHECK(pwrite(data_fd, "01234567", 8, 0) == 8);
    CHECK(read_with_aio(8) == 0);
    for (int i = 0; i < 20; i++) {
        waiting = 0;
        pthread_t v;
        CHECK(pthread_create(&v, NULL, async_victim, NULL) == 0);
        while (!waiting)
            nap_ms(1);
        nap_ms(5);
        CHECK(pthread_cancel(v) == 0);
        /* (glibc 2.36 leaves the result NULL, not PTHREAD_CANCELED, when
         * pthread_setcancelstate acts on the cancel: not looked at.) */
        int joined = join_within_10s(v, NULL);
        CHECK(joined == 0);
        if (joined != 0) {
            fprintf(stderr, "an asynchronous victim was not cancelled within 10 s\n");
            exit(1);
        }
    }
    /* Nothing of the library is left held: the stream flushes and shuts down
     * with its whole log, and the engine reads. */
    CHECK(posix_trace_flush(trid) == 0);
    CHECK(posix_trace_shutdown(trid) == 0);
    check_log();
    CHECK(read_with_aio(8) == 0);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s flush_shutdown|open_close|getnext_entry|getnext_wait|"
                        "timedgetnext_wait|sigwait|exit_pending|async\n",
                argv[0]);
        return 2;
    }
    CHECK(posix_trace_eventid_open("cancel test", &ev) == 0);
    log_fd = temp_file("trace-cancel");
    const char *what = argv[1];
    if (strcmp(what, "flush_shutdown") == 0)
        flush_shutdown();
    else if (strcmp(what, "open_close") == 0)
        open_close();
    else if (strcmp(what, "getnext_entry") == 0)
        getnext_entry();
    else if (strcmp(what, "getnext_wait") == 0)
        getnext_wait(0);
    else if (strcmp(what, "timedgetnext_wait") == 0)
        getnext_wait(1);
    else if (strcmp(what, "sigwait") == 0)
        sigwait_cancel();
    else if (strcmp(what, "exit_pending") == 0)
        exit_pending();
    else if (strcmp(what, "async") == 0)
        async_cancel();
    else {
        fprintf(stderr, "unknown scenario %s\n", what);
        return 2;
    }
    return finish();
}
