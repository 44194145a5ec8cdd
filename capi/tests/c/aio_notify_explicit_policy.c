/* A SIGEV_THREAD notification whose attributes say PTHREAD_EXPLICIT_SCHED
 * and a real-time policy but no priority (pthread_attr_setschedpolicy
 * without pthread_attr_setschedparam) runs at that policy and at its
 * submitter's priority: pthread_create takes a priority the object was not
 * given from the thread that creates, and glibc's notification thread is
 * created by its AIO helper thread, which has the submitter's class.
 *
 * The library copies the attributes at submission, and its copy named
 * priority 0 (what the object reports when it was given none), which no
 * real-time policy has: the thread could not be created (EINVAL), and the
 * notification was lost.
 *
 * A SCHED_FIFO priority 7 thread reads a pipe (its byte written after the
 * call returned) and a cached file (often done inside aio_read), by aio_read
 * and by lio_listio, with: SCHED_RR and no priority, SCHED_FIFO and no
 * priority, SCHED_RR priority 3; the function records its policy and
 * priority. Each expectation is checked first against a thread that
 * pthread_create makes with the same object on the submitter. Where
 * SCHED_FIFO is refused, it says so and passes.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include "check.h"
#include "waits.h"

static sem_t notified;
static int seen_policy, seen_priority;

static void record(void) {
    struct sched_param sp;
    seen_policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    CHECK(sched_getparam(0, &sp) == 0);
    seen_priority = sp.sched_priority;
}

static void on_done(union sigval v) {
    (void)v;
    record();
    sem_post(&notified);
}

static void *made(void *arg) {
    (void)arg;
    record();
    return NULL;
}

static int file_fd, pipe_r, pipe_w;

static void one(pthread_attr_t *attr, int lio, int pipe, int policy, int priority,
                const char *what) {
    static struct aiocb cb;
    static char buf[1];
    const char *how = read_how(lio, pipe);
    aiocb_on(&cb, pipe ? pipe_r : file_fd, buf, 1, 0);
    sigev_thread_on(&cb, on_done, attr);
    seen_policy = seen_priority = -1;
    CHECK(submit_read(&cb, lio) == 0);
    if (pipe)
        CHECK(write(pipe_w, "x", 1) == 1);
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "%s (%s): no notification\n", what, how);
        failures++;
    } else if (seen_policy != policy || seen_priority != priority) {
        fprintf(stderr, "%s (%s): the function ran at policy %d priority %d, not %d %d\n", what,
                how, seen_policy, seen_priority, policy, priority);
        failures++;
    }
    wait_done(&cb);
    CHECK(aio_return(&cb) == 1);
}

/* The attributes: explicit `policy`, and `priority` unless it is 0; the
 * function must run at `policy` and `want`, as a thread pthread_create
 * makes with them here. */
static void case_of(int policy, int priority, int want, const char *what) {
    pthread_attr_t a;
    pthread_t t;
    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED) == 0);
    CHECK(pthread_attr_setschedpolicy(&a, policy) == 0);
    if (priority != 0) {
        struct sched_param sp = {.sched_priority = priority};
        CHECK(pthread_attr_setschedparam(&a, &sp) == 0);
    }
    seen_policy = seen_priority = -1;
    CHECK(pthread_create(&t, &a, made, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    if (seen_policy != policy || seen_priority != want) {
        fprintf(stderr, "%s: pthread_create made a thread at policy %d priority %d, not %d %d\n",
                what, seen_policy, seen_priority, policy, want);
        failures++;
    }
    for (int lio = 0; lio < 2; lio++)
        for (int pipe = 0; pipe < 2; pipe++)
            one(&a, lio, pipe, policy, want, what);
    CHECK(pthread_attr_destroy(&a) == 0);
}

static void *submitter(void *arg) {
    (void)arg;
    case_of(SCHED_RR, 0, 7, "explicit SCHED_RR without a priority");
    case_of(SCHED_FIFO, 0, 7, "explicit SCHED_FIFO without a priority");
    case_of(SCHED_RR, 3, 3, "explicit SCHED_RR priority 3");
    return NULL;
}

int main(void) {
    int p[2];
    pthread_attr_t fifo;
    struct sched_param sp = {.sched_priority = 7};
    pthread_t t;
    int e;
    CHECK(sem_init(&notified, 0, 0) == 0);
    file_fd = temp_file("notify-explicit-policy");
    CHECK(write(file_fd, "abc", 3) == 3);
    CHECK(pipe(p) == 0);
    pipe_r = p[0];
    pipe_w = p[1];
    CHECK(pthread_attr_init(&fifo) == 0);
    CHECK(pthread_attr_setinheritsched(&fifo, PTHREAD_EXPLICIT_SCHED) == 0);
    CHECK(pthread_attr_setschedpolicy(&fifo, SCHED_FIFO) == 0);
    CHECK(pthread_attr_setschedparam(&fifo, &sp) == 0);
    e = pthread_create(&t, &fifo, submitter, NULL);
    if (e == EPERM) {
        fprintf(stderr, "SCHED_FIFO is not allowed here: nothing to check\n");
    } else {
        CHECK(e == 0);
        if (e == 0)
            CHECK(pthread_join(t, NULL) == 0);
    }
    CHECK(pthread_attr_destroy(&fifo) == 0);
    close(pipe_r);
    close(pipe_w);
    close(file_fd);
    return finish();
}
