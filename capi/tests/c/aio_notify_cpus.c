/* A SIGEV_THREAD notification runs on the CPU set of the thread that
 * submitted the request (its affinity when it submitted), unless
 * sigev_notify_attributes names one (pthread_attr_setaffinity_np).
 *
 * glibc creates the notification thread from its AIO helper thread, which
 * takes the CPU set of the program's thread that started it (the submitter,
 * where no idle helper was there). The library's threads, which create it
 * here, have other CPU sets (the library's notification pool's is that of
 * the first thread that asked for SIGEV_THREAD); a thread created from them
 * took theirs, so a function whose submitter was pinned ran elsewhere.
 *
 * The main thread (every CPU) makes the first SIGEV_THREAD request. Then a
 * thread pinned to CPU 1 reads a pipe (whose byte is written after aio_read
 * returned) and a cached file (often done inside aio_read), with NULL
 * attributes, attributes without a CPU set, and attributes naming CPU 0, and
 * by lio_listio; then it moves to CPU 0 and reads again (the set is the one
 * at submission, not an older one). The function records its CPU set.
 *
 * Needs CPUs 0 and 1: elsewhere it says so and passes. Exits 0 and prints
 * "ok" when every check passes; otherwise prints the failed checks and exits 1.
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
static cpu_set_t seen;

static void on_done(union sigval v) {
    (void)v;
    CPU_ZERO(&seen);
    CHECK(sched_getaffinity(0, sizeof seen, &seen) == 0);
    sem_post(&notified);
}

static cpu_set_t only(int cpu) {
    cpu_set_t c;
    CPU_ZERO(&c);
    CPU_SET(cpu, &c);
    return c;
}

/* CPUs 0 to 63 of `s`, one bit each, for the messages. */
static unsigned long low_cpus(const cpu_set_t *s) {
    unsigned long m = 0;
    for (int i = 0; i < 64; i++)
        if (CPU_ISSET(i, s))
            m |= 1UL << i;
    return m;
}

static int file_fd, pipe_r, pipe_w;

/* One SIGEV_THREAD read with `attr` (NULL or an object), by aio_read or by
 * lio_listio (`lio`), of the pipe (`pipe`: its byte written after the call
 * returned) or of the file; the function must run on exactly `want`. */
static void one(pthread_attr_t *attr, int lio, int pipe, const cpu_set_t *want, const char *what) {
    static struct aiocb cb;
    static char buf[1];
    aiocb_on(&cb, pipe ? pipe_r : file_fd, buf, 1, 0);
    sigev_thread_on(&cb, on_done, attr);
    CHECK(submit_read(&cb, lio) == 0);
    if (pipe)
        CHECK(write(pipe_w, "x", 1) == 1);
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "%s (%s): no notification\n", what, pipe ? "pipe" : "file");
        failures++;
    } else if (!CPU_EQUAL(&seen, want)) {
        fprintf(stderr, "%s (%s): the function ran on CPUs %#lx, not %#lx (CPUs 0-63)\n", what,
                pipe ? "pipe" : "file", low_cpus(&seen), low_cpus(want));
        failures++;
    }
    while (aio_error(&cb) == EINPROGRESS) {
        const struct aiocb *l[1] = {&cb};
        aio_suspend(l, 1, NULL);
    }
    CHECK(aio_return(&cb) == 1);
}

/* Both reads (pipe, file) of `one`. */
static void two(pthread_attr_t *attr, int lio, const cpu_set_t *want, const char *what) {
    one(attr, lio, 1, want, what);
    one(attr, lio, 0, want, what);
}

static void *pinned_submitter(void *arg) {
    (void)arg;
    cpu_set_t cpu0 = only(0), cpu1 = only(1);
    pthread_attr_t plain, on0;
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof cpu1, &cpu1) == 0);
    CHECK(pthread_attr_init(&plain) == 0);
    CHECK(pthread_attr_setstacksize(&plain, (size_t)1 << 20) == 0);
    CHECK(pthread_attr_init(&on0) == 0);
    CHECK(pthread_attr_setaffinity_np(&on0, sizeof cpu0, &cpu0) == 0);
    two(NULL, 0, &cpu1, "submitter on CPU 1, NULL attributes");
    two(&plain, 0, &cpu1, "submitter on CPU 1, attributes without a CPU set");
    two(NULL, 1, &cpu1, "submitter on CPU 1, lio_listio");
    two(&on0, 0, &cpu0, "submitter on CPU 1, attributes naming CPU 0");
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof cpu0, &cpu0) == 0);
    two(NULL, 0, &cpu0, "submitter moved to CPU 0, NULL attributes");
    two(NULL, 1, &cpu0, "submitter moved to CPU 0, lio_listio");
    CHECK(pthread_attr_destroy(&plain) == 0);
    CHECK(pthread_attr_destroy(&on0) == 0);
    return NULL;
}

int main(void) {
    cpu_set_t all;
    int p[2];
    pthread_t t;
    CHECK(sem_init(&notified, 0, 0) == 0);
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    if (!CPU_ISSET(0, &all) || !CPU_ISSET(1, &all)) {
        fprintf(stderr, "the program may not run on both CPU 0 and CPU 1: nothing to check\n");
        return finish();
    }
    file_fd = temp_file("notify-cpus");
    CHECK(write(file_fd, "abc", 3) == 3);
    CHECK(pipe(p) == 0);
    pipe_r = p[0];
    pipe_w = p[1];
    /* The first SIGEV_THREAD request, from a thread on every CPU. */
    two(NULL, 0, &all, "main thread on every CPU");
    CHECK(pthread_create(&t, NULL, pinned_submitter, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    close(pipe_r);
    close(pipe_w);
    close(file_fd);
    return finish();
}
