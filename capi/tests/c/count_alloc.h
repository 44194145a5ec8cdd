/* Counts the allocations, frees and thread creations made by a thread while
 * it runs a signal handler (`in_handler` set), for the tests that check that
 * the library's async-signal-safe calls (aio_error, aio_return, aio_suspend)
 * make none there.
 *
 * Defines malloc, calloc, realloc, free and the aligned allocators (over
 * glibc's __libc_* functions: a dlsym(RTLD_NEXT) of the allocator would
 * allocate as it is looked up) and pthread_create (over the next definition,
 * which `count_alloc_start` looks up with dlsym(RTLD_NEXT) before the first
 * request), hence `-rdynamic`: the library's calls come here too. With
 * <trace.h> included first, also starts a trace stream for such a test
 * (`start_trace`, `end_trace`). (For a test that defines _GNU_SOURCE.) */
#ifndef POSIXRT_TEST_COUNT_ALLOC_H
#define POSIXRT_TEST_COUNT_ALLOC_H
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *__libc_memalign(size_t, size_t);

/* The calling thread runs the handler. */
static __thread int in_handler;
static unsigned long allocs, frees, creates;

static void counted(unsigned long *what) {
    if (in_handler)
        __atomic_fetch_add(what, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n) {
    counted(&allocs);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    counted(&allocs);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    counted(&allocs);
    return __libc_realloc(p, n);
}

void free(void *p) {
    if (p)
        counted(&frees);
    __libc_free(p);
}

void *memalign(size_t align, size_t n) {
    counted(&allocs);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n) {
    counted(&allocs);
    return __libc_memalign(align, n);
}

int posix_memalign(void **p, size_t align, size_t n) {
    counted(&allocs);
    void *r = __libc_memalign(align, n);
    if (!r)
        return ENOMEM;
    *p = r;
    return 0;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn next_create;

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
    counted(&creates);
    return next_create(t, a, f, arg);
}

/* Looks up the next pthread_create: 0 if it is not found. */
static int count_alloc_start(void) {
    next_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    return next_create != NULL;
}

/* Looks up the next pthread_create (`count_alloc_start`, a failed check if it
 * is not found: then 0) and installs `handler` for `signo`
 * (`install_siginfo`); 1 then. */
static inline int count_alloc_setup(int signo, void (*handler)(int, siginfo_t *, void *)) {
    CHECK(count_alloc_start());
    if (!next_create)
        return 0;
    install_siginfo(signo, handler);
    return 1;
}

/* Checks that the `handled` handler runs allocated nothing, freed nothing and
 * created no thread, and prints the counts if they did. */
static inline void count_alloc_check(unsigned long handled) {
    /* Read before the checks: printing allocates (outside any handler). */
    unsigned long a = __atomic_load_n(&allocs, __ATOMIC_RELAXED);
    unsigned long f = __atomic_load_n(&frees, __ATOMIC_RELAXED);
    unsigned long c = __atomic_load_n(&creates, __ATOMIC_RELAXED);
    if (a || f || c)
        fprintf(stderr, "inside %lu handler runs: %lu allocations, %lu frees, %lu thread creations\n",
                handled, a, f, c);
    CHECK(a == 0);
    CHECK(f == 0);
    CHECK(c == 0);
}

#ifdef POSIXRT_TRACE_H
typedef int (*count_trace_create_fn)(pid_t, const trace_attr_t *, trace_id_t *);
typedef int (*count_trid_fn)(trace_id_t);
typedef int (*count_status_fn)(trace_id_t, struct posix_trace_status_info *);

/* A trace stream of this process, made and started by `start_trace` through
 * the library's functions looked up with dlsym (found when it is linked or
 * preloaded: the trace functions are not glibc's). (For a test that includes
 * <trace.h> before this header.) */
struct count_trace {
    trace_id_t trid;
    count_trid_fn shutdown;
    count_status_fn status;
};

/* Makes and starts a trace stream (default attributes) in `*t`: 1, or 0 (a
 * failed check) if a function is missing or a call fails. */
static inline int start_trace(struct count_trace *t) {
    count_trace_create_fn create =
        (count_trace_create_fn)dlsym(RTLD_DEFAULT, "posix_trace_create");
    count_trid_fn start = (count_trid_fn)dlsym(RTLD_DEFAULT, "posix_trace_start");
    t->shutdown = (count_trid_fn)dlsym(RTLD_DEFAULT, "posix_trace_shutdown");
    t->status = (count_status_fn)dlsym(RTLD_DEFAULT, "posix_trace_get_status");
    CHECK(create && start && t->shutdown && t->status);
    if (!create || !start || !t->shutdown || !t->status)
        return 0;
    int made = create(0, NULL, &t->trid) == 0;
    CHECK(made);
    if (!made)
        return 0;
    int started = start(t->trid) == 0;
    CHECK(started);
    return started;
}

/* Checks that the stream `start_trace` started still runs (the handler runs
 * did not stop or break it), and shuts it down. */
static inline void end_trace(struct count_trace *t) {
    struct posix_trace_status_info st;
    CHECK(t->status(t->trid, &st) == 0);
    CHECK(st.posix_stream_status == POSIX_TRACE_RUNNING);
    CHECK(t->shutdown(t->trid) == 0);
}
#endif

#endif
