/* A SIGEV_THREAD notification whose attributes name every CPU the set can
 * hold (pthread_attr_setaffinity_np with CPU_SET for each of 0..1023 in a
 * cpu_set_t, or a larger CPU_ALLOC set all set) runs on every CPU its cpuset
 * allows, not on its submitter's CPU set: a full set is a set given. Only
 * attributes that name no set (never given one, or cleared with a NULL set)
 * leave the function on its submitter's set.
 *
 * glibc's pthread_attr_getaffinity_np reports an object without a set as a
 * full one, and the library used to copy a full set as "no set": the function
 * then ran on the CPUs of the thread that submitted the request.
 *
 * A thread pinned to CPU 1 reads a pipe (its byte written after aio_read
 * returned) and a cached file (often done inside aio_read), by aio_read and
 * by lio_listio, with each attribute object; the function records its CPU set.
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

/* CPUs 0 to 63 of `s`, one bit each, for the messages. */
static unsigned long low_cpus(const cpu_set_t *s) {
    unsigned long m = 0;
    for (int i = 0; i < 64; i++)
        if (CPU_ISSET(i, s))
            m |= 1UL << i;
    return m;
}

static int file_fd, pipe_r, pipe_w;
static cpu_set_t *volatile no_set;

static void *record(void *arg) {
    CPU_ZERO((cpu_set_t *)arg);
    CHECK(sched_getaffinity(0, sizeof(cpu_set_t), arg) == 0);
    return NULL;
}

/* The CPU set of a thread pthread_create makes with `attr` (what the kernel
 * gives a full set here: every CPU that is online and in the cpuset). */
static cpu_set_t made_with(pthread_attr_t *attr) {
    cpu_set_t s;
    pthread_t t;
    CPU_ZERO(&s);
    CHECK(pthread_create(&t, attr, record, &s) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    return s;
}

/* One SIGEV_THREAD read with `attr`, by aio_read or by lio_listio (`lio`),
 * of the pipe (`pipe`) or of the file; the function must run on `want`. */
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
        fprintf(stderr, "%s (%s%s): the function ran on CPUs %#lx, not %#lx (CPUs 0-63)\n", what,
                pipe ? "pipe" : "file", lio ? ", lio_listio" : "", low_cpus(&seen),
                low_cpus(want));
        failures++;
    }
    wait_done(&cb);
    CHECK(aio_return(&cb) == 1);
}

/* Every way of `one`. */
static void all_ways(pthread_attr_t *attr, const cpu_set_t *want, const char *what) {
    for (int lio = 0; lio < 2; lio++)
        for (int pipe = 0; pipe < 2; pipe++)
            one(attr, lio, pipe, want, what);
}

static void *pinned_submitter(void *arg) {
    (void)arg;
    cpu_set_t cpu0, cpu1, full, all_but_1, every;
    pthread_attr_t a;
    size_t big = CPU_ALLOC_SIZE(2048);
    cpu_set_t *wide = CPU_ALLOC(2048);
    CHECK(wide != NULL);
    if (wide == NULL)
        return NULL;
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    CPU_ZERO(&cpu1);
    CPU_SET(1, &cpu1);
    CPU_ZERO(&full);
    for (int i = 0; i < CPU_SETSIZE; i++)
        CPU_SET(i, &full);
    all_but_1 = full;
    CPU_CLR(1, &all_but_1);
    CHECK(CPU_COUNT(&full) == 1024);
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof cpu1, &cpu1) == 0);

    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_setaffinity_np(&a, sizeof full, &full) == 0);
    every = made_with(&a);
    CHECK(CPU_ISSET(0, &every) && CPU_ISSET(1, &every));
    all_ways(&a, &every, "attributes naming all 1024 CPUs of a cpu_set_t");
    CHECK(pthread_attr_destroy(&a) == 0);

    CHECK(pthread_attr_init(&a) == 0);
    CPU_ZERO_S(big, wide);
    for (int i = 0; i < 2048; i++)
        CPU_SET_S(i, big, wide);
    CHECK(pthread_attr_setaffinity_np(&a, big, wide) == 0);
    all_ways(&a, &every, "attributes naming all 2048 CPUs of a CPU_ALLOC set");
    CHECK(pthread_attr_destroy(&a) == 0);

    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_setaffinity_np(&a, sizeof all_but_1, &all_but_1) == 0);
    all_ways(&a, &cpu0, "attributes naming every CPU but CPU 1");
    /* Cleared with a NULL set (which the header says may not be: through a
     * volatile pointer): no set again, the submitter's. */
    CHECK(pthread_attr_setaffinity_np(&a, 0, no_set) == 0);
    all_ways(&a, &cpu1, "attributes whose set was cleared");
    CHECK(pthread_attr_destroy(&a) == 0);

    CHECK(pthread_attr_init(&a) == 0);
    CPU_ZERO_S(big, wide);
    CPU_SET_S(0, big, wide);
    CHECK(pthread_attr_setaffinity_np(&a, big, wide) == 0);
    all_ways(&a, &cpu0, "attributes naming CPU 0 in a CPU_ALLOC set");
    CHECK(pthread_attr_destroy(&a) == 0);

    CHECK(pthread_attr_init(&a) == 0);
    all_ways(&a, &cpu1, "attributes without a CPU set");
    CHECK(pthread_attr_destroy(&a) == 0);
    all_ways(NULL, &cpu1, "NULL attributes");
    CPU_FREE(wide);
    return NULL;
}

int main(void) {
    int p[2];
    pthread_t t;
    cpu_set_t allowed;
    CHECK(sem_init(&notified, 0, 0) == 0);
    CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    if (!CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed)) {
        fprintf(stderr, "the program may not run on both CPU 0 and CPU 1: nothing to check\n");
        return finish();
    }
    file_fd = temp_file("notify-cpus-full");
    CHECK(write(file_fd, "abc", 3) == 3);
    CHECK(pipe(p) == 0);
    pipe_r = p[0];
    pipe_w = p[1];
    CHECK(pthread_create(&t, NULL, pinned_submitter, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    close(pipe_r);
    close(pipe_w);
    close(file_fd);
    return finish();
}
