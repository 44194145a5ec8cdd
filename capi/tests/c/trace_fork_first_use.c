/* fork() while another thread makes the process's first trace calls: the
 * child can trace.
 *
 * The core sets the process up for tracing (clock calibration, membarrier,
 * its fork reset) in a one-time initialisation run by the first stream's
 * creation, and the first stream with a log installs the flushers' exit and
 * signal hooks in another. A fork while another thread was inside one left
 * it running for good in the child, by a thread the child does not have:
 * the child's first posix_trace_create waited for it forever.
 *
 * Each trial is a fresh process that has made no trace call: one thread
 * creates a stream, then a stream with a log, while the main thread forks
 * children until it is done; each child, within 2 s (alarm), creates, starts,
 * records into, reads and shuts down a stream, and creates and shuts down a
 * stream with a log. The trials stop at the first child that fails.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <trace.h>
#include <unistd.h>

#include "check.h"

#define TRIALS 40
#define FORKS_PER_TRIAL 50

static volatile int first_done;

/* A stream with a log into a new temp file: 0 if made and shut down. */
static int with_log(void) {
    int fd = temp_file("trace-fork-first");
    if (fd < 0)
        return 20;
    trace_id_t trid;
    int r = posix_trace_create_withlog(0, NULL, fd, &trid);
    if (r == 0 && posix_trace_shutdown(trid) != 0)
        r = 21;
    close(fd);
    return r == 0 ? 0 : 22;
}

/* A child's work: 0 if every call did what it should, else a small code. */
static int child_work(void) {
    int r = trace_round_trip("trace_fork_first_use child");
    return r != 0 ? r : with_log();
}

static void *first_user(void *arg) {
    (void)arg;
    long r = 0;
    trace_id_t trid;
    if (posix_trace_create(0, NULL, &trid) != 0 || posix_trace_shutdown(trid) != 0)
        r = 30;
    else
        r = with_log();
    first_done = 1;
    return (void *)r;
}

/* One trial, in its own process: 0 if every child traced. */
static int trial(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, first_user, NULL) != 0)
        return 10;
    int bad = fork_while(child_work, &first_done, FORKS_PER_TRIAL, "a child forked during the first trace calls");
    if (bad < 0)
        return 11;
    void *res = NULL;
    if (join_within_10s(t, &res) != 0)
        return 12;
    return bad ? 1 : (int)(long)res;
}

int main(void) {
    run_trials(trial, TRIALS);
    /* And this process, which made no trace call before, traces too. */
    CHECK(child_work() == 0);
    return finish();
}
