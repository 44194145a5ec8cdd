/* A SIGEV_THREAD notification whose attributes give the program's own stack
 * runs its function on that stack: set with pthread_attr_setstack, or with
 * the older pthread_attr_setstackaddr (the stack's top; POSIX.1-2001, still
 * in glibc), with or without a size (pthread_attr_setstacksize; without one,
 * the default size below that top, as pthread_create takes it).
 *
 * The library copies the attributes at submission; an object given its
 * stack's top alone was read as a stack of size 0, which could not be
 * copied: aio_read and lio_listio failed with EINVAL, where glibc's start the
 * function on that stack.
 *
 * Each case reads a pipe (its byte written after the call returned) into its
 * own region of memory, by aio_read and by lio_listio; the function records
 * the bounds of its thread's stack.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"
#include "waits.h"

/* Each region: larger than any default stack size here (checked). */
#define REGION ((size_t)64 << 20)
#define SIZE ((size_t)1 << 20)

static sem_t notified;
static char *seen_lo;
static size_t seen_size;

static void on_done(union sigval v) {
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    (void)v;
    CHECK(pthread_getattr_np(pthread_self(), &a) == 0);
    CHECK(pthread_attr_getstack(&a, &lo, &size) == 0);
    pthread_attr_destroy(&a);
    seen_lo = lo;
    seen_size = size;
    sem_post(&notified);
}

/* `pthread_attr_setstackaddr`, looked up at run time: the linker warns of
 * any call to it (deprecated), which the test's build takes for a failure.
 * ENOSYS if it is not there. */
static int set_stack_top(pthread_attr_t *a, void *top) {
    int (*set)(pthread_attr_t *, void *);
    void *sym = dlsym(RTLD_DEFAULT, "pthread_attr_setstackaddr");
    if (sym == NULL)
        return ENOSYS;
    memcpy(&set, &sym, sizeof set);
    return set(a, top);
}

enum how { SETSTACK, TOP_ALONE, TOP_AND_SIZE };

/* One read with SIGEV_THREAD and a stack of the program's own, set `how`, in
 * a fresh region (never used again: a thread still on it may be ending),
 * by aio_read or by lio_listio (`lio`). */
static void one(enum how how, int lio, size_t default_size, const char *what) {
    static struct aiocb cb;
    static char buf[1];
    pthread_attr_t attr;
    int p[2];
    char *region = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    char *top = region + REGION;
    /* The stack the function must run on. */
    char *want_lo = how == TOP_ALONE ? top - default_size : top - SIZE;
    size_t want_size = how == TOP_ALONE ? default_size : SIZE;
    CHECK(region != MAP_FAILED);
    if (region == MAP_FAILED)
        return;
    CHECK(pipe(p) == 0);
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0);
    if (how == SETSTACK) {
        CHECK(pthread_attr_setstack(&attr, top - SIZE, SIZE) == 0);
    } else {
        CHECK(set_stack_top(&attr, top) == 0);
        if (how == TOP_AND_SIZE)
            CHECK(pthread_attr_setstacksize(&attr, SIZE) == 0);
    }
    aiocb_on(&cb, p[0], buf, 1, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb.aio_sigevent.sigev_notify_function = on_done;
    cb.aio_sigevent.sigev_notify_attributes = &attr;
    seen_lo = NULL;
    seen_size = 0;
    if (submit_read(&cb, lio) != 0) {
        fprintf(stderr, "%s: %s failed: %s\n", what, lio ? "lio_listio" : "aio_read",
                strerror(errno));
        failures++;
        CHECK(pthread_attr_destroy(&attr) == 0);
        close(p[0]);
        close(p[1]);
        return;
    }
    CHECK(pthread_attr_destroy(&attr) == 0);
    CHECK(write(p[1], "x", 1) == 1);
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "%s: no notification\n", what);
        failures++;
    } else if (seen_lo != want_lo || seen_size != want_size) {
        fprintf(stderr, "%s: the function's stack is %p + %zu, not %p + %zu\n", what,
                (void *)seen_lo, seen_size, (void *)want_lo, want_size);
        failures++;
    }
    wait_done(&cb);
    CHECK(aio_return(&cb) == 1);
    close(p[0]);
    close(p[1]);
    /* The region stays mapped: the thread may still be returning on it. */
}

int main(void) {
    pthread_attr_t d;
    size_t default_size = 0;
    CHECK(sem_init(&notified, 0, 0) == 0);
    /* The size pthread_create gives a stack of unset size. */
    CHECK(pthread_getattr_default_np(&d) == 0);
    CHECK(pthread_attr_getstacksize(&d, &default_size) == 0);
    pthread_attr_destroy(&d);
    if (default_size == 0 || default_size > REGION) {
        fprintf(stderr, "default stack size %zu: not in a %zu-byte region, nothing to check\n",
                default_size, REGION);
        return finish();
    }
    for (int lio = 0; lio < 2; lio++) {
        one(SETSTACK, lio, default_size, lio ? "lio_listio, pthread_attr_setstack"
                                              : "aio_read, pthread_attr_setstack");
        one(TOP_ALONE, lio, default_size, lio ? "lio_listio, pthread_attr_setstackaddr alone"
                                               : "aio_read, pthread_attr_setstackaddr alone");
        one(TOP_AND_SIZE, lio, default_size,
            lio ? "lio_listio, pthread_attr_setstackaddr and a size"
                : "aio_read, pthread_attr_setstackaddr and a size");
    }
    return finish();
}
