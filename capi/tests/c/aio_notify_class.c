/* A SIGEV_THREAD notification runs at the scheduling class of the thread that
 * submitted the request, unless sigev_notify_attributes says otherwise
 * (PTHREAD_EXPLICIT_SCHED), and at its nice value (which a thread it created
 * would inherit whatever the attributes).
 *
 * glibc creates the notification thread from its AIO helper thread, which
 * inherits the class of the program's thread that started it. The library's
 * own threads run at other classes (the thread engine's workers rest at
 * SCHED_BATCH), and a thread created with PTHREAD_INHERIT_SCHED (a NULL
 * attribute, or one fresh from pthread_attr_init) used to take the class of
 * whichever of them noticed the completion: SCHED_BATCH on the thread engine.
 *
 * Each case reads a pipe whose byte is written after the request is queued
 * (the completion is noticed by the library, not inside aio_read) and a
 * cached file (often done inside aio_read), and the callback records its own
 * policy, priority and nice value. A submitter that raised its nice value
 * (lowered its priority: no privilege needed) by 7, at SCHED_OTHER and at
 * SCHED_BATCH, is checked too: its callbacks used to run at the nice value
 * of the library thread that noticed the completion, with NULL or explicit
 * attributes. With the privilege to use SCHED_FIFO, a SCHED_FIFO
 * submitter is checked too (its callbacks run at SCHED_FIFO, the same
 * priority; SCHED_OTHER and nice 0 with SCHED_RESET_ON_FORK, as a thread it
 * creates),
 * and an explicit SCHED_RR attribute from a SCHED_OTHER submitter; without it, those cases are skipped with a printed reason.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

static sem_t notified;

/* The calling thread's nice value (getpriority with PRIO_PROCESS takes a tid
 * on Linux); 100 if it cannot be read. */
static int own_nice(void) {
    int n;
    errno = 0;
    n = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    return n == -1 && errno != 0 ? 100 : n;
}
static int seen_policy, seen_priority, seen_nice;
/* The nice value of the program's threads (that of the test's process). */
static int base_nice;
static struct aiocb cb;
static char buf[16];

static void on_done(union sigval v) {
    struct sched_param sp;
    (void)v;
    /* The kernel's view of this thread. */
    seen_policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    CHECK(sched_getparam(0, &sp) == 0);
    seen_priority = sp.sched_priority;
    seen_nice = own_nice();
    sem_post(&notified);
}

static void sem_wait_all(sem_t *s) {
    while (sem_wait(s) != 0 && errno == EINTR) {
    }
}

/* One SIGEV_THREAD read with `attr` (NULL or an attribute object); checks the
 * callback's class against `policy` and `priority`, and its nice value
 * against `nice`. `wfd` >= 0: the byte comes through it after aio_read
 * returned. */
static void one(int fd, int wfd, pthread_attr_t *attr, int policy, int priority, int nice,
                const char *what) {
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = buf;
    cb.aio_nbytes = 1;
    sigev_thread_on(&cb, on_done, attr);
    seen_policy = -1;
    seen_priority = -1;
    seen_nice = -100;
    CHECK(aio_read(&cb) == 0);
    if (wfd >= 0)
        CHECK(write(wfd, "x", 1) == 1);
    sem_wait_all(&notified);
    if (seen_policy != policy || seen_priority != priority) {
        fprintf(stderr, "%s (%s): callback at policy %d priority %d, not %d %d\n", what,
                wfd >= 0 ? "pipe" : "file", seen_policy, seen_priority, policy, priority);
        failures++;
    }
    if (seen_nice != nice) {
        fprintf(stderr, "%s (%s): callback at nice %d, not %d\n", what,
                wfd >= 0 ? "pipe" : "file", seen_nice, nice);
        failures++;
    }
    CHECK(aio_return(&cb) == 1);
}

struct args {
    int file, pipe_r, pipe_w, policy, priority, nice;
};

/* Every case from the calling thread, whose class is `policy`/`priority`. */
static void cases(const struct args *a, const char *who) {
    pthread_attr_t inherit;
    char what[128];
    CHECK(pthread_attr_init(&inherit) == 0);
    snprintf(what, sizeof what, "%s, NULL attributes", who);
    one(a->pipe_r, a->pipe_w, NULL, a->policy, a->priority, a->nice, what);
    one(a->file, -1, NULL, a->policy, a->priority, a->nice, what);
    snprintf(what, sizeof what, "%s, default attributes", who);
    one(a->pipe_r, a->pipe_w, &inherit, a->policy, a->priority, a->nice, what);
    one(a->file, -1, &inherit, a->policy, a->priority, a->nice, what);
    CHECK(pthread_attr_destroy(&inherit) == 0);
}

/* A submitter at `policy` (SCHED_OTHER or SCHED_BATCH: no privilege needed)
 * whose nice value is 7 more than the program's (at most 19): its callbacks
 * run at that nice value, with NULL, default and explicit attributes. */
static void *nicer_submitter(void *arg) {
    struct args a = *(const struct args *)arg;
    struct sched_param sp = {.sched_priority = 0};
    pthread_attr_t explicit_other;
    char who[64];
    a.nice = base_nice + 7 > 19 ? 19 : base_nice + 7;
    CHECK(setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), a.nice) == 0);
    CHECK(own_nice() == a.nice);
    if (a.policy != SCHED_OTHER)
        CHECK(sched_setscheduler(0, a.policy, &sp) == 0);
    snprintf(who, sizeof who, "%s submitter at nice %d",
             a.policy == SCHED_BATCH ? "SCHED_BATCH" : "SCHED_OTHER", a.nice);
    cases(&a, who);
    CHECK(pthread_attr_init(&explicit_other) == 0);
    CHECK(pthread_attr_setinheritsched(&explicit_other, PTHREAD_EXPLICIT_SCHED) == 0);
    CHECK(pthread_attr_setschedpolicy(&explicit_other, SCHED_OTHER) == 0);
    CHECK(pthread_attr_setschedparam(&explicit_other, &sp) == 0);
    snprintf(who, sizeof who, "explicit SCHED_OTHER attributes at nice %d", a.nice);
    one(a.pipe_r, a.pipe_w, &explicit_other, SCHED_OTHER, 0, a.nice, who);
    one(a.file, -1, &explicit_other, SCHED_OTHER, 0, a.nice, who);
    CHECK(pthread_attr_destroy(&explicit_other) == 0);
    return NULL;
}

static void *fifo_submitter(void *arg) {
    cases(arg, "SCHED_FIFO submitter");
    return NULL;
}

/* A SCHED_FIFO submitter with SCHED_RESET_ON_FORK: the threads it creates
 * start at SCHED_OTHER and nice 0 whatever its nice value, and so does its
 * notification function (glibc's helper thread, made by it, would be at
 * SCHED_OTHER). Its nice value is raised first (unless at 19 already), to
 * tell the reset from inheritance. */
static void *reset_submitter(void *arg) {
    struct args a = *(const struct args *)arg;
    struct sched_param sp = {.sched_priority = 5};
    if (base_nice < 19)
        CHECK(setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), base_nice + 1) == 0);
    CHECK(sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0);
    a.policy = SCHED_OTHER;
    a.priority = 0;
    a.nice = 0;
    cases(&a, "SCHED_FIFO submitter with SCHED_RESET_ON_FORK");
    return NULL;
}

int main(void) {
    int p[2];
    struct args a;
    int file = temp_file("notify-class");
    CHECK(sem_init(&notified, 0, 0) == 0);
    CHECK(write(file, "abc", 3) == 3);
    CHECK(pipe(p) == 0);
    a.file = file;
    a.pipe_r = p[0];
    a.pipe_w = p[1];
    a.policy = SCHED_OTHER;
    a.priority = 0;
    base_nice = own_nice();
    a.nice = base_nice;
    cases(&a, "SCHED_OTHER submitter");

    /* Submitters with a higher nice value than the library's threads (which
     * started above, at the program's). */
    if (base_nice >= 19) {
        fprintf(stderr, "the program runs at nice 19: the nice cases are skipped\n");
    } else {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, nicer_submitter, &a) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        a.policy = SCHED_BATCH;
        CHECK(pthread_create(&t, NULL, nicer_submitter, &a) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        a.policy = SCHED_OTHER;
    }

    /* A SCHED_FIFO submitter (it only submits and waits: nothing spins). */
    {
        pthread_attr_t fifo;
        struct sched_param sp = {.sched_priority = 5};
        pthread_t t;
        int e;
        CHECK(pthread_attr_init(&fifo) == 0);
        CHECK(pthread_attr_setinheritsched(&fifo, PTHREAD_EXPLICIT_SCHED) == 0);
        CHECK(pthread_attr_setschedpolicy(&fifo, SCHED_FIFO) == 0);
        CHECK(pthread_attr_setschedparam(&fifo, &sp) == 0);
        a.policy = SCHED_FIFO;
        a.priority = 5;
        e = pthread_create(&t, &fifo, fifo_submitter, &a);
        if (e == EPERM) {
            fprintf(stderr, "SCHED_FIFO is not allowed here: its cases are skipped\n");
        } else {
            CHECK(e == 0);
            if (e == 0)
                CHECK(pthread_join(t, NULL) == 0);
            CHECK(pthread_create(&t, NULL, reset_submitter, &a) == 0);
            CHECK(pthread_join(t, NULL) == 0);
            /* An explicit class from a SCHED_OTHER submitter is the attribute's. */
            CHECK(pthread_attr_setschedpolicy(&fifo, SCHED_RR) == 0);
            sp.sched_priority = 3;
            CHECK(pthread_attr_setschedparam(&fifo, &sp) == 0);
            one(p[0], p[1], &fifo, SCHED_RR, 3, base_nice, "explicit SCHED_RR attributes");
            one(file, -1, &fifo, SCHED_RR, 3, base_nice, "explicit SCHED_RR attributes");
        }
        CHECK(pthread_attr_destroy(&fifo) == 0);
    }
    close(p[0]);
    close(p[1]);
    close(file);
    return finish();
}
