/* Reading a trace log from a pipe while its writer is silent:
 * `trace_log_wait NAME`.
 * - log_wait_signals: posix_trace_getnext_event waiting for the next record
 *   of a log read from a pipe lets signals through. A handler sent to the
 *   waiting thread runs while it waits (it used to run only once the writer
 *   wrote again: the read waited with every signal blocked, so a signal whose
 *   default action ends the process did not end it either), and the read
 *   goes on and gives the log's remaining events. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <sys/wait.h>

static volatile sig_atomic_t hits;
static void on_usr1(int s)
{
    (void)s;
    hits++;
}

struct reader {
    trace_id_t log;
    trace_event_id_t marker, last;
    volatile int drained; /* the marker was read: the next read waits */
    int result, markers, lasts;
};

static void *read_log(void *arg)
{
    struct reader *r = arg;
    struct posix_trace_event_info info;
    char data[256];
    size_t len;
    int un;
    for (;;) {
        r->result = posix_trace_getnext_event(r->log, &info, data, sizeof data, &len, &un);
        if (r->result != 0 || un)
            return NULL;
        if (info.posix_event_id == r->marker) {
            r->markers++;
            __atomic_store_n(&r->drained, 1, __ATOMIC_RELEASE);
        }
        if (info.posix_event_id == r->last)
            r->lasts++;
    }
}

/* Waits (at most 20 s) until `hits` reaches `n`. */
static int wait_hits(int n)
{
    int i;
    for (i = 0; i < 20000 && hits < n; i++) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    return hits >= n;
}

static void t_log_wait_signals(void)
{
    int data[2], go[2], status;
    char c = 0;
    pid_t w;
    pthread_t th;
    struct reader r;
    struct sigaction sa;
    trace_event_id_t marker, last;
    OK(posix_trace_eventid_open("log_wait_marker", &marker));
    OK(posix_trace_eventid_open("log_wait_last", &last));
    OK(pipe(data));
    OK(pipe(go));
    w = fork();
    TRUE(w >= 0);
    if (w == 0) {
        /* The writer: the marker flushed, then silence until told to end. */
        trace_attr_t a;
        trace_id_t t;
        close(data[0]);
        close(go[1]);
        OK(posix_trace_attr_init(&a));
        OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
        OK(posix_trace_create_withlog(0, &a, data[1], &t));
        OK(posix_trace_start(t));
        posix_trace_event(marker, NULL, 0);
        OK(posix_trace_flush(t));
        TRUE(read(go[0], &c, 1) >= 0);
        posix_trace_event(last, NULL, 0);
        OK(posix_trace_shutdown(t));
        _exit(0);
    }
    close(data[1]);
    close(go[0]);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART: the pipe read is interrupted */
    OK(sigaction(SIGUSR1, &sa, NULL));
    memset(&r, 0, sizeof r);
    r.marker = marker;
    r.last = last;
    OK(posix_trace_open(data[0], &r.log));
    OK(pthread_create(&th, NULL, read_log, &r));
    while (!__atomic_load_n(&r.drained, __ATOMIC_ACQUIRE)) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    /* Twice, the second after the first handler ran: one of them at least
     * reaches the reader while it waits for the silent writer. */
    OK(pthread_kill(th, SIGUSR1));
    TRUE(wait_hits(1));
    OK(pthread_kill(th, SIGUSR1));
    TRUE(wait_hits(2));
    /* Let the writer end: the reader gets the rest of the log. */
    EQ(write(go[1], &c, 1), 1);
    OK(pthread_join(th, NULL));
    EQ(waitpid(w, &status, 0), w);
    TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(r.result);
    EQ(r.markers, 1);
    EQ(r.lasts, 1);
    OK(posix_trace_close(r.log));
    close(data[0]);
    close(go[1]);
}

static const struct test TESTS[] = {
    {"log_wait_signals", t_log_wait_signals},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
