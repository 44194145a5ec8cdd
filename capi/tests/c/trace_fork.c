/* fork() while other threads are inside trace calls: the child can use the
 * trace functions.
 *
 * Every call that names a stream or a log looks its trace_id_t up in the
 * library's table, under a lock. A fork while another thread held that lock
 * left it taken in the child by a thread the child does not have: the
 * child's first trace call (here posix_trace_create) waited for it forever.
 *
 * Two threads ask the status of a running stream in a loop; the main thread
 * forks FORKS children, one after the other. Each child, within 2 s
 * (alarm), asks a made-up id (EINVAL), creates, starts, records into, reads
 * and shuts down a stream of its own. The forks stop at the first child that
 * fails.
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

#define FORKS 300

static trace_id_t parent_trid;
static volatile int stop;

static void *ask_status(void *arg) {
    (void)arg;
    struct posix_trace_status_info st;
    while (!stop)
        posix_trace_get_status(parent_trid, &st);
    return NULL;
}

/* A child's work: 0 if every call did what it should, else a small code. */
static int child_work(void) {
    struct posix_trace_status_info st;
    if (posix_trace_get_status((trace_id_t)12345, &st) != EINVAL)
        return 2;
    return trace_round_trip("trace_fork child");
}

int main(void) {
    CHECK(posix_trace_create(0, NULL, &parent_trid) == 0);
    CHECK(posix_trace_start(parent_trid) == 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, ask_status, NULL) == 0);
    for (int i = 0; i < FORKS; i++) {
        char what[48];
        snprintf(what, sizeof what, "child %d", i);
        int r = fork_run(child_work, 2, what);
        CHECK(r >= 0);
        if (r != 0) {
            CHECK(!"a forked child could use the trace functions");
            break;
        }
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(posix_trace_shutdown(parent_trid) == 0);
    return finish();
}
