/* A SIGEV_THREAD notification whose thread cannot be created for the moment
 * (pthread_create fails with EAGAIN: RLIMIT_NPROC, the system's thread
 * limit, a pids cgroup, or no memory for the stack) is not lost: the library
 * tries again, pausing between tries, until the thread is created, and the
 * function runs once. glibc gives such a notification up at the first
 * failure, and so did the library.
 *
 * This program defines pthread_create over the next definition (looked up
 * with dlsym(RTLD_NEXT) before the first request), hence `-rdynamic`: the
 * library's calls come here too. While `refuse` is set, a creation whose
 * attributes ask for MARKER bytes of stack (the notification's, and no other)
 * fails with EAGAIN. The program sees a creation refused, checks that the
 * function has not run, lets creations through again, and waits (10 s at
 * most) for the function to run.
 *
 * With the argument "fork": the library's retry thread is held inside its
 * try (in this pthread_create) while the program forks; the child's own
 * SIGEV_THREAD notification must come (within 5 s; the child has 10 s). The
 * child used to wait forever for the retry queue's lock, which the
 * parent's retry thread held at the fork and which nothing frees there.
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
#include <time.h>

#include "check.h"
#include "waits.h"

/* The stack size that marks the notification's thread. */
#define MARKER ((size_t)3 << 20)

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn next_create;
/* Set: a marked creation fails. */
static int refuse;
/* Marked creations refused so far. */
static int refused;
/* Set: the next marked creation after the first refused one (the retry
 * thread's) posts `inside` and waits for `go` before it fails. */
static int hold;
static sem_t inside, go;

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
    size_t size = 0;
    if (a && pthread_attr_getstacksize(a, &size) == 0 && size == MARKER &&
        __atomic_load_n(&refuse, __ATOMIC_SEQ_CST)) {
        int n = __atomic_add_fetch(&refused, 1, __ATOMIC_SEQ_CST);
        if (n > 1 && __atomic_exchange_n(&hold, 0, __ATOMIC_SEQ_CST)) {
            sem_post(&inside);
            while (sem_wait(&go) != 0 && errno == EINTR) {
            }
        }
        return EAGAIN;
    }
    return next_create(t, a, f, arg);
}

static sem_t notified;
static int runs;

static void on_done(union sigval v) {
    CHECK(v.sival_int == 42);
    __atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
    sem_post(&notified);
}

static sem_t child_notified;

static void on_child_done(union sigval v) {
    (void)v;
    sem_post(&child_notified);
}

/* In the forked child: one SIGEV_THREAD read of `fd` whose thread is
 * created at once; 0 if its function runs within 5 s. */
static int child_notification(int fd) {
    alarm(10);
    static struct aiocb ccb;
    static char cbuf[4];
    if (sem_init(&child_notified, 0, 0) != 0)
        return 2;
    aiocb_on(&ccb, fd, cbuf, 4, 0);
    ccb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    ccb.aio_sigevent.sigev_notify_function = on_child_done;
    if (aio_read(&ccb) != 0)
        return 3;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (sem_timedwait(&child_notified, &until) != 0)
        if (errno != EINTR)
            return 4;
    return 0;
}

int main(int argc, char **argv) {
    int fork_case = argc > 1 && strcmp(argv[1], "fork") == 0;
    next_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    CHECK(next_create != NULL);
    if (!next_create)
        return finish();
    CHECK(sem_init(&notified, 0, 0) == 0);
    CHECK(sem_init(&inside, 0, 0) == 0);
    CHECK(sem_init(&go, 0, 0) == 0);
    __atomic_store_n(&hold, fork_case, __ATOMIC_SEQ_CST);
    int fd = temp_file("notify-retry");
    CHECK(write(fd, "abcd", 4) == 4);
    pthread_attr_t attr;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, MARKER) == 0);

    static struct aiocb cb;
    static char buf[4];
    aiocb_on(&cb, fd, buf, 4, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb.aio_sigevent.sigev_notify_function = on_done;
    cb.aio_sigevent.sigev_notify_attributes = &attr;
    cb.aio_sigevent.sigev_value.sival_int = 42;
    __atomic_store_n(&refuse, 1, __ATOMIC_SEQ_CST);
    CHECK(aio_read(&cb) == 0);
    /* The notification's thread is refused at least once (10 s at most). */
    for (int i = 0; i < 10000 && __atomic_load_n(&refused, __ATOMIC_SEQ_CST) == 0; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    CHECK(__atomic_load_n(&refused, __ATOMIC_SEQ_CST) >= 1);
    CHECK(__atomic_load_n(&runs, __ATOMIC_SEQ_CST) == 0);
    if (fork_case) {
        /* The retry thread is inside its try. */
        CHECK(wait_10s(&inside) == 0);
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0)
            _exit(child_notification(fd));
        __atomic_store_n(&refuse, 0, __ATOMIC_SEQ_CST);
        sem_post(&go);
        int st = 0;
        CHECK(waitpid(child, &st, 0) == child);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "the forked child's notification: %s %d\n",
                    WIFSIGNALED(st) ? "died of signal" : "exit code",
                    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            failures++;
        }
    }
    __atomic_store_n(&refuse, 0, __ATOMIC_SEQ_CST);
    /* Lost, it never comes. */
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "the notification did not come after %d refused creation(s)\n",
                __atomic_load_n(&refused, __ATOMIC_SEQ_CST));
        failures++;
    }
    CHECK(__atomic_load_n(&runs, __ATOMIC_SEQ_CST) == 1);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 4);
    CHECK(memcmp(buf, "abcd", 4) == 0);
    CHECK(pthread_attr_destroy(&attr) == 0);
    return finish();
}
