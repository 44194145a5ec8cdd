/* The check the C AIO tests share: a failed condition is printed with errno
 * and counted in `failures`, and the test goes on (it exits 1 at the end if
 * any failed, see `finish`). The errno printed is the one at the check: a call
 * that returned a wrong value without failing left an older one there. */
#ifndef POSIXRT_TEST_CHECK_H
#define POSIXRT_TEST_CHECK_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s (errno now %d: %s)\n",         \
                    __FILE__, __LINE__, #cond, errno, strerror(errno));              \
            failures++;                                                              \
        }                                                                            \
    } while (0)

/* A new file in the temp dir ($TMPDIR, else /tmp), its name already removed;
 * -1 (a failed check) if it cannot be made. */
static inline int temp_file(const char *name) {
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/posixrt-c-%s-XXXXXX", dir ? dir : "/tmp", name);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* True if the test runs on an engine other than io_uring
 * (POSIXRT_AIO_BACKEND), which lacks `what`: says so, to skip the test. */
static inline int not_on_uring(const char *what) {
    const char *backend = getenv("POSIXRT_AIO_BACKEND");
    if (backend && strcmp(backend, "uring") != 0) {
        fprintf(stderr, "the %s engine has no %s: nothing to check\n", backend, what);
        return 1;
    }
    return 0;
}

#ifdef LIO_READ
/* Zeroes `cb` and points it at `n` bytes of `buf` at `offset` of `fd` (no
 * notification): the set-up of a plain aio_read or aio_write. (For a test
 * that includes <aio.h> before this header.) */
static inline void aiocb_on(struct aiocb *cb, int fd, volatile void *buf, size_t n, off_t offset) {
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = fd;
    cb->aio_buf = buf;
    cb->aio_nbytes = n;
    cb->aio_offset = offset;
}

/* Submits `cb` as a read by aio_read, or (if `lio`) by lio_listio with
 * LIO_NOWAIT and a list of one: the call's result. */
static inline int submit_read(struct aiocb *cb, int lio) {
    if (lio) {
        struct aiocb *list[1] = {cb};
        cb->aio_lio_opcode = LIO_READ;
        return lio_listio(LIO_NOWAIT, list, 1, NULL);
    }
    return aio_read(cb);
}

/* Has `cb` notify by SIGEV_THREAD: `fn` on a thread made with `attr`. */
static inline void sigev_thread_on(struct aiocb *cb, void (*fn)(union sigval), pthread_attr_t *attr) {
    cb->aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb->aio_sigevent.sigev_notify_function = fn;
    cb->aio_sigevent.sigev_notify_attributes = attr;
}

/* What a SIGEV_THREAD check read, for its messages: a pipe or the file, by
 * aio_read or (`lio`) lio_listio. */
static inline const char *read_how(int lio, int pipe) {
    return pipe ? (lio ? "pipe, lio_listio" : "pipe") : (lio ? "file, lio_listio" : "file");
}
#endif

#ifdef SA_SIGINFO
/* Installs `handler` for `signo` with its siginfo (SA_RESTART: the library
 * goes on waiting after it). (For a test that includes <signal.h> before
 * this header.) */
static inline void install_siginfo(int signo, void (*handler)(int, siginfo_t *, void *)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(signo, &sa, NULL) == 0);
}
#endif

/* Runs `work` in a forked child that gets `seconds` (alarm) and exits with
 * its result. Returns 0 if the child exited 0; otherwise prints a line naming
 * `what` (the exit code or the signal) and returns 1; -1 if fork or waitpid
 * failed. */
static inline int fork_run(int (*work)(void), unsigned seconds, const char *what) {
    pid_t p = fork();
    if (p == 0) {
        alarm(seconds);
        _exit(work());
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p)
        return -1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "%s: died of signal %d\n", what, WTERMSIG(st));
    else
        fprintf(stderr, "%s: exited with %d\n", what, WEXITSTATUS(st));
    return 1;
}

/* Up to `n` children one after the other, while `*done` stays 0, each running
 * `work` as `fork_run` does: 0 if every one exited 0, 1 at the first that did
 * not (after its line), -1 if fork or waitpid failed. */
static inline int fork_while(int (*work)(void), volatile int *done, int n, const char *what) {
    for (int i = 0; i < n && !*done; i++) {
        int r = fork_run(work, 2, what);
        if (r != 0)
            return r;
    }
    return 0;
}

/* Runs `trial` `n` times, each in a fresh child with 30 s (fork_run); stops
 * at the first that fails (a failed check). */
static inline void run_trials(int (*trial)(void), int n) {
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "trial %d", i);
        int r = fork_run(trial, 30, what);
        CHECK(r == 0);
        if (r != 0)
            return;
    }
}

#ifdef POSIXRT_TRACE_H
/* A stream of this process, started, given event `name` with the int 42,
 * stopped, read back and shut down: 0 if every call did what it should, else
 * a small code (3-9) naming the step that failed. (For a test that includes
 * <trace.h> before this header.) */
static inline int trace_round_trip(const char *name) {
    trace_id_t trid;
    if (posix_trace_create(0, NULL, &trid) != 0)
        return 3;
    trace_event_id_t ev;
    if (posix_trace_eventid_open(name, &ev) != 0)
        return 4;
    if (posix_trace_start(trid) != 0)
        return 5;
    int v = 42;
    posix_trace_event(ev, &v, sizeof v);
    if (posix_trace_stop(trid) != 0)
        return 6;
    struct posix_trace_event_info info;
    int data = 0, unavailable = 1;
    size_t len = 0;
    for (;;) {
        if (posix_trace_trygetnext_event(trid, &info, &data, sizeof data, &len, &unavailable) != 0)
            return 7;
        if (unavailable || info.posix_event_id == ev)
            break;
    }
    if (unavailable || len != sizeof data || data != 42)
        return 8;
    if (posix_trace_shutdown(trid) != 0)
        return 9;
    return 0;
}
#endif

#if defined(PTHREAD_CANCELED) && defined(_GNU_SOURCE)
/* Joins `t`, waiting 10 s at most (the thread's result in `*res` if `res`):
 * 0 once joined, else pthread_timedjoin_np's error. (For a test that
 * includes <pthread.h> with _GNU_SOURCE before this header.) */
static inline int join_within_10s(pthread_t t, void **res) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    return pthread_timedjoin_np(t, res, &until);
}
#endif

/* The end of a test's main: exit 1 if any check failed, else print "ok". */
static int finish(void) {
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}

#endif
