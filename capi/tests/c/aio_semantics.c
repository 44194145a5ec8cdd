/* Every function and every error of the C AIO interface, run against
 * libposixrt (linked with -lposixrt or preloaded). Exits 0 when every check
 * passes; otherwise prints the failed check and exits 1.
 *
 * Usage: aio_semantics [all | idle | eagain]
 *   all     every check (the default)
 *   idle    a program that never calls aio_* has no ring and no extra thread
 *   eagain  run with POSIXRT_AIO_MAX=4: lio_listio of 8 entries gives EAGAIN
 *   noring  io_uring_setup refused (EPERM, by a seccomp filter installed
 *           before the first request): the library falls back to its threads
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpl[64];

#include "check.h"

/* Pointers the compiler cannot prove null (the prototypes say nonnull). */
static struct aiocb *volatile null_cb;
static const struct aiocb *const *volatile null_list;

static int make_file(const char *content) {
    strcpy(tmpl, "/tmp/posixrt-capi-XXXXXX");
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    unlink(tmpl);
    if (content != NULL && write(fd, content, strlen(content)) != (ssize_t)strlen(content)) {
        perror("write");
        exit(1);
    }
    return fd;
}

static void init_cb(struct aiocb *cb, int fd, void *buf, size_t n, off_t off) {
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = fd;
    cb->aio_buf = buf;
    cb->aio_nbytes = n;
    cb->aio_offset = off;
    cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

static void wait_one(struct aiocb *cb) {
    const struct aiocb *list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS) {
        if (aio_suspend(list, 1, NULL) != 0 && errno != EINTR) {
            CHECK(!"aio_suspend failed");
            return;
        }
    }
}

static void test_read_write_return(void) {
    int fd = make_file(NULL);
    char out[] = "hello, posix aio\n";
    char in[64];
    struct aiocb cb;

    init_cb(&cb, fd, out, strlen(out), 0);
    cb.aio_lio_opcode = 12345; /* ignored by aio_write */
    CHECK(aio_write(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == (ssize_t)strlen(out));
    /* aio_error after aio_return: the same status again, as glibc (programs
       written for it call aio_error after aio_return to learn why a request
       failed). A second aio_return: the request's result is taken. */
    errno = 0;
    CHECK(aio_error(&cb) == 0 && errno == 0);
    CHECK(aio_return(&cb) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_error(&cb) == 0 && errno == 0);
    /* A copy of a returned aiocb is not that request. */
    {
        struct aiocb copy;
        memcpy(&copy, &cb, sizeof cb);
        errno = 0;
        CHECK(aio_error(&copy) == -1 && errno == EINVAL);
    }

    /* Reuse of the same aiocb after aio_return. */
    memset(in, 0, sizeof in);
    init_cb(&cb, fd, in, sizeof in, 7);
    cb.aio_lio_opcode = LIO_WRITE; /* ignored by aio_read */
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == (ssize_t)strlen(out) - 7);
    CHECK(memcmp(in, "posix aio\n", 10) == 0);

    /* Reading at end of file: 0 bytes. */
    init_cb(&cb, fd, in, sizeof in, 1000);
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 0);

    /* Zero bytes. */
    init_cb(&cb, fd, in, 0, 0);
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 0);
    close(fd);
}

/* A zeroed aiocb, filled without touching aio_sigevent (as many programs and
 * test suites do): sigev_notify 0 is SIGEV_SIGNAL and signal 0 the null
 * signal. Accepted, as glibc does, and nothing is sent. */
static void test_zeroed_sigevent(void) {
    int fd = make_file("zeroed sigevent");
    char b[16];
    struct aiocb cb;
    struct aiocb *list[1] = {&cb};
    struct sigevent ev;

    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = b;
    cb.aio_nbytes = 6;
    CHECK(cb.aio_sigevent.sigev_notify == SIGEV_SIGNAL);
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 6 && memcmp(b, "zeroed", 6) == 0);
    CHECK(aio_write(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 6);
    CHECK(aio_fsync(O_SYNC, &cb) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 0);
    /* The same for lio_listio's sigevent. */
    memset(&ev, 0, sizeof ev);
    cb.aio_lio_opcode = LIO_READ;
    CHECK(lio_listio(LIO_NOWAIT, list, 1, &ev) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 6);
    close(fd);
}

static void test_null_and_unknown(void) {
    struct aiocb never;
    memset(&never, 0, sizeof never);
    errno = 0;
    CHECK(aio_read(null_cb) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_write(null_cb) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_fsync(O_SYNC, null_cb) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_error(null_cb) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_return(null_cb) == -1 && errno == EINVAL);
    /* Never submitted: not a request. */
    errno = 0;
    CHECK(aio_error(&never) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_return(&never) == -1 && errno == EINVAL);
    /* Garbage in the private fields does not make it one. */
    memset(&never, 0xa5, sizeof never);
    errno = 0;
    CHECK(aio_error(&never) == -1 && errno == EINVAL);
    /* A copy of a submitted aiocb is not that request. */
    {
        int fd = make_file("abc");
        char b[4];
        struct aiocb cb, copy;
        init_cb(&cb, fd, b, 3, 0);
        CHECK(aio_read(&cb) == 0);
        memcpy(&copy, &cb, sizeof cb);
        errno = 0;
        CHECK(aio_error(&copy) == -1 && errno == EINVAL);
        wait_one(&cb);
        CHECK(aio_return(&cb) == 3);
        close(fd);
    }
}

static void test_invalid_fields(void) {
    int fd = make_file("data");
    char b[8];
    struct aiocb cb;

    init_cb(&cb, fd, b, 4, 0);
    cb.aio_reqprio = -1;
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);
    cb.aio_reqprio = 21; /* AIO_PRIO_DELTA_MAX is 20 */
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);
    cb.aio_reqprio = 20;
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 4);

    init_cb(&cb, fd, b, 4, -1);
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);

    init_cb(&cb, fd, b, 4, 0);
    cb.aio_sigevent.sigev_notify = 99;
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);
    cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
    cb.aio_sigevent.sigev_signo = 65; /* above SIGRTMAX */
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb.aio_sigevent.sigev_notify_function = NULL;
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);

    /* A bad fd: queued, and EBADF is the request's status (as glibc). */
    init_cb(&cb, 987, b, 4, 0);
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_error(&cb) == EBADF);
    CHECK(aio_return(&cb) == -1 && errno == EBADF);
    init_cb(&cb, -1, b, 4, 0);
    CHECK(aio_write(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_error(&cb) == EBADF);
    CHECK(aio_return(&cb) == -1 && errno == EBADF);
    /* Writing to a read-only fd. */
    {
        int ro = open("/dev/null", O_RDONLY);
        init_cb(&cb, ro, b, 4, 0);
        CHECK(aio_write(&cb) == 0);
        wait_one(&cb);
        CHECK(aio_error(&cb) == EBADF);
        CHECK(aio_return(&cb) == -1);
        close(ro);
    }
    close(fd);
}

static void test_fsync(void) {
    int fd = make_file("x");
    char b[] = "more";
    struct aiocb w, s;

    init_cb(&w, fd, b, 4, 1);
    CHECK(aio_write(&w) == 0);
    init_cb(&s, fd, NULL, 0, 0);
    CHECK(aio_fsync(O_SYNC, &s) == 0);
    wait_one(&s);
    /* The fsync covers the write queued before it: that one is done too. */
    CHECK(aio_error(&w) != EINPROGRESS);
    CHECK(aio_return(&s) == 0);
    wait_one(&w);
    CHECK(aio_return(&w) == 4);

    init_cb(&s, fd, NULL, 0, 0);
    CHECK(aio_fsync(O_DSYNC, &s) == 0);
    wait_one(&s);
    CHECK(aio_return(&s) == 0);

    init_cb(&s, fd, NULL, 0, 0);
    errno = 0;
    CHECK(aio_fsync(0x7, &s) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(aio_fsync(O_APPEND, &s) == -1 && errno == EINVAL);

    {
        int ro = open("/dev/null", O_RDONLY);
        init_cb(&s, ro, NULL, 0, 0);
        errno = 0;
        CHECK(aio_fsync(O_SYNC, &s) == -1 && errno == EBADF);
        close(ro);
    }
    init_cb(&s, 987, NULL, 0, 0);
    errno = 0;
    CHECK(aio_fsync(O_SYNC, &s) == -1 && errno == EBADF);

    /* A pipe, a socket and a character device, open for writing, cannot be
       synchronised: EINVAL from the call itself (POSIX's "shall fail"), with
       nothing submitted. */
    {
        int p[2], sv[2];
        CHECK(pipe(p) == 0);
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        int nul = open("/dev/null", O_WRONLY);
        CHECK(nul >= 0);
        int cannot[3] = {p[1], sv[0], nul};
        for (int i = 0; i < 3; i++) {
            init_cb(&s, cannot[i], NULL, 0, 0);
            errno = 0;
            CHECK(aio_fsync(O_DSYNC, &s) == -1 && errno == EINVAL);
            errno = 0;
            CHECK(aio_error(&s) == -1 && errno == EINVAL);
        }
        close(p[0]);
        close(p[1]);
        close(sv[0]);
        close(sv[1]);
        close(nul);
    }
    close(fd);
}

static volatile sig_atomic_t sig_count;
static volatile sig_atomic_t sig_code;
static volatile sig_atomic_t sig_value;
static volatile sig_atomic_t sig_tid;

static void on_signal(int signo, siginfo_t *info, void *ctx) {
    (void)signo;
    (void)ctx;
    sig_count++;
    sig_code = info->si_code;
    sig_value = info->si_value.sival_int;
    sig_tid = (sig_atomic_t)syscall(SYS_gettid);
}

static void install(int signo) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waits see EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(signo, &sa, NULL);
}

static void wait_signals(int n) {
    for (int i = 0; i < 2000 && sig_count < n; i++) {
        usleep(1000);
    }
}

static char w_bufs[3][4] = {"aaaa", "bbbb", "cccc"};

static void test_lio_listio(void) {
    int fd = make_file("0123456789abcdef");
    char b1[4], b2[4], w[] = "WXYZ";
    struct aiocb r1, r2, wr, nop, bad;
    struct aiocb *list[6];

    errno = 0;
    CHECK(lio_listio(7, list, 0, NULL) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(lio_listio(LIO_WAIT, list, -1, NULL) == -1 && errno == EINVAL);
    CHECK(lio_listio(LIO_WAIT, list, 0, NULL) == 0);

    init_cb(&r1, fd, b1, 4, 0);
    r1.aio_lio_opcode = LIO_READ;
    init_cb(&r2, fd, b2, 4, 10);
    r2.aio_lio_opcode = LIO_READ;
    init_cb(&wr, fd, w, 4, 16);
    wr.aio_lio_opcode = LIO_WRITE;
    init_cb(&nop, fd, NULL, 0, 0);
    nop.aio_lio_opcode = LIO_NOP;
    list[0] = &r1;
    list[1] = NULL;
    list[2] = &nop;
    list[3] = &r2;
    list[4] = &wr;
    CHECK(lio_listio(LIO_WAIT, list, 5, NULL) == 0);
    CHECK(aio_error(&r1) == 0 && aio_return(&r1) == 4 && memcmp(b1, "0123", 4) == 0);
    CHECK(aio_error(&r2) == 0 && aio_return(&r2) == 4 && memcmp(b2, "abcd", 4) == 0);
    CHECK(aio_error(&wr) == 0 && aio_return(&wr) == 4);
    errno = 0;
    CHECK(aio_error(&nop) == -1 && errno == EINVAL); /* LIO_NOP is not a request */

    /* A bad opcode: that entry reports EINVAL, the others run, the call says EIO. */
    init_cb(&r1, fd, b1, 4, 0);
    r1.aio_lio_opcode = LIO_READ;
    init_cb(&bad, fd, b2, 4, 0);
    bad.aio_lio_opcode = 42;
    list[0] = &r1;
    list[1] = &bad;
    errno = 0;
    CHECK(lio_listio(LIO_WAIT, list, 2, NULL) == -1 && errno == EIO);
    CHECK(aio_error(&bad) == EINVAL && aio_return(&bad) == -1);
    CHECK(aio_error(&r1) == 0 && aio_return(&r1) == 4);

    /* An entry that fails in the kernel: EIO, its own status EBADF. */
    init_cb(&r1, fd, b1, 4, 0);
    r1.aio_lio_opcode = LIO_READ;
    init_cb(&bad, 987, b2, 4, 0);
    bad.aio_lio_opcode = LIO_READ;
    list[0] = &r1;
    list[1] = &bad;
    errno = 0;
    CHECK(lio_listio(LIO_WAIT, list, 2, NULL) == -1 && errno == EIO);
    CHECK(aio_error(&bad) == EBADF && aio_return(&bad) == -1);
    CHECK(aio_error(&r1) == 0 && aio_return(&r1) == 4);

    /* LIO_NOWAIT with an entry writing to a closed fd: the list is queued
     * (0), that entry fails with EBADF as its status, and every entry,
     * that one too, sends its own notification before the list's. */
    {
        struct sigevent ev;
        int each = SIGRTMIN + 4, whole = SIGRTMIN + 2;
        struct aiocb w[3];
        struct aiocb *wl[3] = {&w[0], &w[1], &w[2]};
        install(each);
        install(whole);
        for (int i = 0; i < 3; i++) {
            init_cb(&w[i], i == 1 ? -1 : fd, w_bufs[i], 4, 20 + 4 * i);
            w[i].aio_lio_opcode = LIO_WRITE;
            w[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
            w[i].aio_sigevent.sigev_signo = each;
            w[i].aio_sigevent.sigev_value.sival_int = i;
        }
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = whole;
        ev.sigev_value.sival_int = 1000;
        sig_count = 0;
        CHECK(lio_listio(LIO_NOWAIT, wl, 3, &ev) == 0);
        wait_signals(4);
        usleep(20000);
        CHECK(sig_count == 4);
        for (int i = 0; i < 3; i++) wait_one(&w[i]);
        CHECK(aio_error(&w[0]) == 0 && aio_return(&w[0]) == 4);
        CHECK(aio_error(&w[1]) == EBADF && aio_return(&w[1]) == -1);
        CHECK(aio_error(&w[2]) == 0 && aio_return(&w[2]) == 4);
    }

    /* LIO_NOWAIT with a signal when all are done, once. */
    {
        struct sigevent ev;
        int signo = SIGRTMIN + 2;
        install(signo);
        sig_count = 0;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = signo;
        ev.sigev_value.sival_int = 77;
        init_cb(&r1, fd, b1, 4, 0);
        r1.aio_lio_opcode = LIO_READ;
        init_cb(&r2, fd, b2, 4, 4);
        r2.aio_lio_opcode = LIO_READ;
        list[0] = &r1;
        list[1] = &r2;
        CHECK(lio_listio(LIO_NOWAIT, list, 2, &ev) == 0);
        wait_signals(1);
        usleep(20000);
        CHECK(sig_count == 1);
        CHECK(sig_value == 77);
        CHECK(sig_code == SI_ASYNCIO);
        wait_one(&r1);
        wait_one(&r2);
        CHECK(aio_return(&r1) == 4 && aio_return(&r2) == 4);
        /* An invalid list sigevent. */
        ev.sigev_notify = 1234;
        errno = 0;
        CHECK(lio_listio(LIO_NOWAIT, list, 2, &ev) == -1 && errno == EINVAL);
        /* An empty LIO_NOWAIT list notifies at once. */
        ev.sigev_notify = SIGEV_SIGNAL;
        sig_count = 0;
        CHECK(lio_listio(LIO_NOWAIT, list, 0, &ev) == 0);
        wait_signals(1);
        CHECK(sig_count == 1);
    }
    close(fd);
}

static void test_suspend(void) {
    int p[2];
    char b[8];
    struct aiocb cb;
    const struct aiocb *list[3];
    struct timespec ts = {0, 50 * 1000 * 1000};

    CHECK(pipe(p) == 0);
    /* Only NULL entries, or none: nothing to wait for. */
    list[0] = NULL;
    list[1] = NULL;
    CHECK(aio_suspend(list, 2, NULL) == 0);
    CHECK(aio_suspend(list, 0, NULL) == 0);
    errno = 0;
    CHECK(aio_suspend(null_list, 1, NULL) == -1 && errno == EINVAL);

    init_cb(&cb, p[0], b, sizeof b, 0);
    CHECK(aio_read(&cb) == 0);
    CHECK(aio_error(&cb) == EINPROGRESS);
    /* aio_return too early: 0 with errno untouched, as glibc; nothing taken. */
    errno = 0;
    CHECK(aio_return(&cb) == 0 && errno == 0);
    CHECK(aio_error(&cb) == EINPROGRESS);
    list[0] = NULL;
    list[1] = &cb;
    list[2] = NULL;
    errno = 0;
    CHECK(aio_suspend(list, 3, &ts) == -1 && errno == EAGAIN);
    ts.tv_nsec = 2000000000L;
    errno = 0;
    CHECK(aio_suspend(list, 3, &ts) == -1 && errno == EINVAL);
    ts.tv_nsec = 0;
    errno = 0;
    CHECK(aio_suspend(list, 3, &ts) == -1 && errno == EAGAIN);

    /* A signal handler run during the wait: EINTR. */
    {
        struct itimerval it;
        install(SIGALRM);
        memset(&it, 0, sizeof it);
        it.it_value.tv_usec = 30000;
        it.it_interval.tv_usec = 30000; /* again, if one lands before the wait */
        setitimer(ITIMER_REAL, &it, NULL);
        errno = 0;
        CHECK(aio_suspend(list, 3, NULL) == -1 && errno == EINTR);
        memset(&it, 0, sizeof it);
        setitimer(ITIMER_REAL, &it, NULL);
        signal(SIGALRM, SIG_IGN);
    }
    /* lio_listio(LIO_WAIT) interrupted by a signal handler: -1/EINTR, and the
     * request goes on; it completes and reports normally afterwards. */
    {
        struct itimerval it;
        struct aiocb lw;
        struct aiocb *ll[1] = {&lw};
        char lb[8];
        int q[2];
        CHECK(pipe(q) == 0);
        init_cb(&lw, q[0], lb, sizeof lb, 0);
        lw.aio_lio_opcode = LIO_READ;
        install(SIGALRM);
        memset(&it, 0, sizeof it);
        it.it_value.tv_usec = 30000;
        it.it_interval.tv_usec = 30000; /* again, if one lands before the wait */
        setitimer(ITIMER_REAL, &it, NULL);
        errno = 0;
        CHECK(lio_listio(LIO_WAIT, ll, 1, NULL) == -1 && errno == EINTR);
        memset(&it, 0, sizeof it);
        setitimer(ITIMER_REAL, &it, NULL);
        signal(SIGALRM, SIG_IGN);
        CHECK(aio_error(&lw) == EINPROGRESS);
        CHECK(write(q[1], "lio!", 4) == 4);
        wait_one(&lw);
        CHECK(aio_error(&lw) == 0);
        CHECK(aio_return(&lw) == 4 && memcmp(lb, "lio!", 4) == 0);
        close(q[0]);
        close(q[1]);
    }
    CHECK(write(p[1], "ping", 4) == 4);
    CHECK(aio_suspend(list, 3, NULL) == 0);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 4);
    /* A done entry: at once. */
    init_cb(&cb, p[0], b, sizeof b, 0);
    CHECK(write(p[1], "pong", 4) == 4);
    CHECK(aio_read(&cb) == 0);
    wait_one(&cb);
    CHECK(aio_suspend(list, 3, NULL) == 0);
    CHECK(aio_return(&cb) == 4);
    close(p[0]);
    close(p[1]);
}

static void test_cancel(void) {
    int p[2];
    char b1[8], b2[8];
    struct aiocb c1, c2, never;

    CHECK(pipe(p) == 0);
    errno = 0;
    CHECK(aio_cancel(987, NULL) == -1 && errno == EBADF);
    /* Nothing in flight on the fd. */
    CHECK(aio_cancel(p[0], NULL) == AIO_ALLDONE);
    memset(&never, 0, sizeof never);
    never.aio_fildes = p[0];
    CHECK(aio_cancel(p[0], &never) == AIO_ALLDONE);

    init_cb(&c1, p[0], b1, sizeof b1, 0);
    CHECK(aio_read(&c1) == 0);
    errno = 0;
    CHECK(aio_cancel(p[1], &c1) == -1 && errno == EINVAL); /* not its fd */
    CHECK(aio_cancel(p[0], &c1) == AIO_CANCELED);
    CHECK(aio_error(&c1) == ECANCELED);
    CHECK(aio_return(&c1) == -1);
    /* Cancelling it again: done. */
    CHECK(aio_cancel(p[0], &c1) == AIO_ALLDONE);

    /* aio_cancel(fd, NULL): every request on the fd. */
    init_cb(&c1, p[0], b1, sizeof b1, 0);
    init_cb(&c2, p[0], b2, sizeof b2, 0);
    CHECK(aio_read(&c1) == 0);
    CHECK(aio_read(&c2) == 0);
    CHECK(aio_cancel(p[0], NULL) == AIO_CANCELED);
    CHECK(aio_error(&c1) == ECANCELED && aio_error(&c2) == ECANCELED);
    CHECK(aio_return(&c1) == -1 && aio_return(&c2) == -1);

    /* A finished request: AIO_ALLDONE. */
    CHECK(write(p[1], "x", 1) == 1);
    init_cb(&c1, p[0], b1, sizeof b1, 0);
    CHECK(aio_read(&c1) == 0);
    wait_one(&c1);
    CHECK(aio_cancel(p[0], &c1) == AIO_ALLDONE);
    CHECK(aio_return(&c1) == 1);
    close(p[0]);
    close(p[1]);
}

static void test_sigev_signal(void) {
    int fd = make_file("signal");
    char b[8];
    struct aiocb cb;
    int signo = SIGRTMIN + 1;

    install(signo);
    sig_count = 0;
    init_cb(&cb, fd, b, 6, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
    cb.aio_sigevent.sigev_signo = signo;
    cb.aio_sigevent.sigev_value.sival_int = 4242;
    CHECK(aio_read(&cb) == 0);
    wait_signals(1);
    CHECK(sig_count == 1);
    CHECK(sig_code == SI_ASYNCIO);
    CHECK(sig_value == 4242);
    /* The status is stored before the signal is sent. */
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == 6);
    close(fd);
}

struct tid_target {
    sem_t ready;
    pid_t tid;
    int got;
    int value;
};

static void *tid_thread(void *arg) {
    struct tid_target *t = arg;
    sigset_t set;
    siginfo_t info;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 3);
    t->tid = (pid_t)syscall(SYS_gettid);
    sem_post(&t->ready);
    if (sigwaitinfo(&set, &info) > 0) {
        t->got = info.si_code == SI_ASYNCIO;
        t->value = info.si_value.sival_int;
    }
    return NULL;
}

static void test_sigev_thread_id(void) {
    int fd = make_file("tid");
    char b[4];
    struct aiocb cb;
    struct tid_target t;
    pthread_t th;
    sigset_t set, old;

    /* Blocked everywhere, taken by sigwaitinfo in the target thread only. */
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 3);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    memset(&t, 0, sizeof t);
    sem_init(&t.ready, 0, 0);
    pthread_create(&th, NULL, tid_thread, &t);
    sem_wait(&t.ready);

    init_cb(&cb, fd, b, 3, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD_ID;
    cb.aio_sigevent.sigev_signo = SIGRTMIN + 3;
    cb.aio_sigevent.sigev_value.sival_int = 99;
    cb.aio_sigevent._sigev_un._tid = t.tid;
    CHECK(aio_read(&cb) == 0);
    pthread_join(th, NULL);
    CHECK(t.got == 1);
    CHECK(t.value == 99);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 3);

    /* A thread id that is not ours. */
    init_cb(&cb, fd, b, 3, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD_ID;
    cb.aio_sigevent.sigev_signo = SIGRTMIN + 3;
    cb.aio_sigevent._sigev_un._tid = 0x7ffffff0;
    errno = 0;
    CHECK(aio_read(&cb) == -1 && errno == EINVAL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fd);
}

static sem_t thread_done;
static volatile int thread_value;
static volatile size_t thread_stack;
static volatile ssize_t thread_ret;
static volatile int thread_blocked;
static struct aiocb thread_cb;

static void on_thread(union sigval v) {
    pthread_attr_t a;
    size_t sz = 0;
    sigset_t cur;
    /* The callback starts with no signal blocked (as glibc's), whichever
     * thread noticed the completion. */
    sigemptyset(&cur);
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    thread_blocked = sigismember(&cur, SIGUSR2) + sigismember(&cur, SIGRTMIN + 5);
    thread_value = v.sival_int;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstacksize(&a, &sz);
        pthread_attr_destroy(&a);
    }
    thread_stack = sz;
    /* The status is final in the callback: aio_return works here. */
    thread_ret = aio_return(&thread_cb);
    sem_post(&thread_done);
}

static void test_sigev_thread(void) {
    int fd = make_file("thread!");
    char b[8];
    pthread_attr_t attr;
    size_t want = 4 * 1024 * 1024;

    sem_init(&thread_done, 0, 0);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, want);
    init_cb(&thread_cb, fd, b, 7, 0);
    thread_cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    thread_cb.aio_sigevent.sigev_notify_function = on_thread;
    thread_cb.aio_sigevent.sigev_notify_attributes = &attr;
    thread_cb.aio_sigevent.sigev_value.sival_int = 31337;
    CHECK(aio_read(&thread_cb) == 0);
    CHECK(sem_wait(&thread_done) == 0);
    CHECK(thread_value == 31337);
    CHECK(thread_stack >= want); /* sigev_notify_attributes honoured */
    CHECK(thread_ret == 7);
    CHECK(thread_blocked == 0);
    pthread_attr_destroy(&attr);

    /* Without attributes. */
    init_cb(&thread_cb, fd, b, 5, 0);
    thread_cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    thread_cb.aio_sigevent.sigev_notify_function = on_thread;
    thread_cb.aio_sigevent.sigev_notify_attributes = NULL;
    thread_cb.aio_sigevent.sigev_value.sival_int = 5;
    CHECK(aio_read(&thread_cb) == 0);
    CHECK(sem_wait(&thread_done) == 0);
    CHECK(thread_value == 5 && thread_ret == 5);
    CHECK(thread_blocked == 0);
    close(fd);
}

static void test_fork(void) {
    int fd = make_file("parent and child");
    char b[8];
    struct aiocb cb;
    pid_t pid;
    int st;

    init_cb(&cb, fd, b, 6, 0);
    CHECK(aio_read(&cb) == 0);
    pid = fork();
    if (pid == 0) {
        /* The child: no requests of the parent, a fresh engine that works. */
        char c[8];
        struct aiocb k;
        int bad = 0;
        errno = 0;
        if (!(aio_error(&cb) == -1 && errno == EINVAL)) bad |= 1;
        init_cb(&k, fd, c, 5, 11);
        if (aio_read(&k) != 0) bad |= 2;
        wait_one(&k);
        if (aio_return(&k) != 5 || memcmp(c, "child", 5) != 0) bad |= 4;
        _exit(bad);
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    wait_one(&cb);
    CHECK(aio_return(&cb) == 6);
    close(fd);
}

/* Two threads wait in aio_suspend at once (one reaps the ring, the other
 * sleeps until told): a signal handler run in each gives each -1/EINTR. */
struct intr_waiter {
    struct aiocb cb;
    char buf[4];
    sem_t in;
    volatile int result, err;
};

static void *intr_wait(void *arg) {
    struct intr_waiter *w = arg;
    const struct aiocb *list[1] = {&w->cb};
    sem_post(&w->in);
    errno = 0;
    w->result = aio_suspend(list, 1, NULL);
    w->err = errno;
    return NULL;
}

static void test_suspend_eintr_two_waiters(void) {
    int p[2];
    pthread_t th[2];
    static struct intr_waiter w[2];
    struct timespec nap = {0, 20 * 1000 * 1000};
    CHECK(pipe(p) == 0);
    install(SIGUSR1);
    for (int i = 0; i < 2; i++) {
        init_cb(&w[i].cb, p[0], w[i].buf, sizeof w[i].buf, 0);
        w[i].result = 7;
        sem_init(&w[i].in, 0, 0);
        CHECK(aio_read(&w[i].cb) == 0);
    }
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_create(&th[i], NULL, intr_wait, &w[i]) == 0);
        sem_wait(&w[i].in);
    }
    for (int i = 0; i < 2; i++) {
        /* Again and again: a signal that lands before the wait starts is
         * handled without interrupting anything. */
        for (int k = 0; k < 200 && w[i].result == 7; k++) {
            CHECK(pthread_kill(th[i], SIGUSR1) == 0);
            nanosleep(&nap, NULL);
        }
        pthread_join(th[i], NULL);
        CHECK(w[i].result == -1 && w[i].err == EINTR);
    }
    CHECK(aio_cancel(p[0], NULL) == AIO_CANCELED);
    for (int i = 0; i < 2; i++) CHECK(aio_return(&w[i].cb) == -1);
    signal(SIGUSR1, SIG_DFL);
    close(p[0]);
    close(p[1]);
}

/* aio_suspend is a cancellation point: a thread with a cancel pending (it
 * arrived while cancellation was disabled) is cancelled when it calls
 * aio_suspend on a request that never completes; its cleanup handlers run. */
static struct aiocb cancel_cb;
static volatile int cancel_cleaned;
static sem_t cancel_go;

static void cancel_cleanup(void *arg) {
    (void)arg;
    cancel_cleaned = 1;
}

static void *cancel_waiter(void *arg) {
    const struct aiocb *list[1] = {&cancel_cb};
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_cleanup_push(cancel_cleanup, NULL);
    while (sem_wait(&cancel_go) != 0) {
    }
    /* Not a cancellation point: the cancel stays pending. */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    for (;;) aio_suspend(list, 1, NULL);
    pthread_cleanup_pop(0);
    return NULL;
}

static void test_suspend_cancellation_point(void) {
    int p[2];
    char b[8];
    pthread_t th;
    void *res = NULL;
    struct timespec until;

    CHECK(pipe(p) == 0);
    init_cb(&cancel_cb, p[0], b, sizeof b, 0);
    CHECK(aio_read(&cancel_cb) == 0);
    cancel_cleaned = 0;
    sem_init(&cancel_go, 0, 0);
    CHECK(pthread_create(&th, NULL, cancel_waiter, NULL) == 0);
    CHECK(pthread_cancel(th) == 0);
    sem_post(&cancel_go);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    if (pthread_timedjoin_np(th, &res, &until) != 0) {
        CHECK(!"aio_suspend did not act on the pending cancel within 5 s");
        /* Let it go: unblock it and leave the process to exit. */
        CHECK(write(p[1], "x", 1) == 1);
        pthread_detach(th);
        return;
    }
    CHECK(res == PTHREAD_CANCELED);
    CHECK(cancel_cleaned == 1);
    CHECK(aio_cancel(p[0], &cancel_cb) == AIO_CANCELED);
    CHECK(aio_return(&cancel_cb) == -1);
    close(p[0]);
    close(p[1]);
}

/* Requests submitted back to back while others are in flight, then left
 * alone (no aio_* call at all): the library still performs them, soon. */
static void test_fire_and_forget(void) {
    int fd = make_file(NULL);
    char a[] = "first ", b[] = "second ", c[] = "third\n";
    char got[32];
    struct aiocb w[3];
    struct timespec nap = {0, 20 * 1000 * 1000};
    init_cb(&w[0], fd, a, 6, 0);
    init_cb(&w[1], fd, b, 7, 6);
    init_cb(&w[2], fd, c, 6, 13);
    for (int i = 0; i < 3; i++) CHECK(aio_write(&w[i]) == 0);
    /* Look at the file only, for at most 2 s. */
    for (int i = 0; i < 100; i++) {
        memset(got, 0, sizeof got);
        if (pread(fd, got, sizeof got, 0) == 19 && memcmp(got, "first second third\n", 19) == 0)
            break;
        nanosleep(&nap, NULL);
    }
    CHECK(memcmp(got, "first second third\n", 19) == 0);
    for (int i = 0; i < 3; i++) {
        wait_one(&w[i]);
        CHECK(aio_return(&w[i]) == (ssize_t)w[i].aio_nbytes);
    }
    close(fd);
}

#define NTHREADS 8
#define NLOOPS 200

static int shared_fd;

static void *hammer(void *arg) {
    long id = (long)arg;
    char b[16];
    struct aiocb cb;
    long bad = 0;
    for (int i = 0; i < NLOOPS; i++) {
        const struct aiocb *list[1] = {&cb};
        off_t off = (id * NLOOPS + i) % 64;
        init_cb(&cb, shared_fd, b, 4, off * 4);
        if (aio_read(&cb) != 0) {
            bad++;
            continue;
        }
        while (aio_error(&cb) == EINPROGRESS) {
            aio_suspend(list, 1, NULL);
        }
        if (aio_return(&cb) != 4 || b[0] != (char)('A' + off % 26)) bad++;
    }
    return (void *)bad;
}

static void test_threads(void) {
    char data[256];
    pthread_t th[NTHREADS];
    for (int i = 0; i < 64; i++) memset(data + i * 4, 'A' + i % 26, 4);
    shared_fd = make_file(NULL);
    CHECK(write(shared_fd, data, sizeof data) == (ssize_t)sizeof data);
    for (long i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, hammer, (void *)i);
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        CHECK(r == NULL);
    }
    close(shared_fd);
}

static int count_dir(const char *path, const char *match) {
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    char p[512], link[256];
    if (d == NULL) return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (match == NULL) {
            n++;
            continue;
        }
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        ssize_t l = readlink(p, link, sizeof link - 1);
        if (l > 0) {
            link[l] = 0;
            if (strstr(link, match) != NULL) n++;
        }
    }
    closedir(d);
    return n;
}

static void test_idle(void) {
    /* Loaded (linked or preloaded) but unused: no thread, no ring. */
    CHECK(count_dir("/proc/self/task", NULL) == 1);
    CHECK(count_dir("/proc/self/fd", "io_uring") == 0);
}

static void test_eagain(void) {
    /* Run with POSIXRT_AIO_MAX=4. */
    int p[2];
    char b[8][4];
    struct aiocb cbs[8];
    struct aiocb *list[8];
    CHECK(pipe(p) == 0);
    for (int i = 0; i < 8; i++) {
        init_cb(&cbs[i], p[0], b[i], 4, 0);
        cbs[i].aio_lio_opcode = LIO_READ;
        list[i] = &cbs[i];
    }
    errno = 0;
    CHECK(lio_listio(LIO_NOWAIT, list, 8, NULL) == -1 && errno == EAGAIN);
    for (int i = 0; i < 8; i++) {
        CHECK(aio_error(&cbs[i]) == EAGAIN);
        CHECK(aio_return(&cbs[i]) == -1);
    }
    /* Four fit; the fifth single request does not. */
    CHECK(lio_listio(LIO_NOWAIT, list, 4, NULL) == 0);
    errno = 0;
    CHECK(aio_read(&cbs[4]) == -1 && errno == EAGAIN);
    CHECK(aio_cancel(p[0], NULL) == AIO_CANCELED);
    for (int i = 0; i < 4; i++) CHECK(aio_return(&cbs[i]) == -1);
    close(p[0]);
    close(p[1]);
}

/* A seccomp filter that refuses io_uring_setup with EPERM, as container
 * runtimes' default profiles do. */
static void refuse_io_uring(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("seccomp");
        exit(1);
    }
    errno = 0;
    CHECK(syscall(__NR_io_uring_setup, 4, NULL) == -1 && errno == EPERM);
}

static void test_noring(void) {
    refuse_io_uring();
    test_read_write_return();
    test_lio_listio();
    test_suspend();
    test_cancel();
    CHECK(count_dir("/proc/self/fd", "io_uring") == 0);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    if (strcmp(mode, "idle") == 0) {
        test_idle();
    } else if (strcmp(mode, "eagain") == 0) {
        test_eagain();
    } else if (strcmp(mode, "noring") == 0) {
        test_noring();
    } else if (strcmp(mode, "all") == 0) {
        struct aioinit init;
        memset(&init, 0, sizeof init);
        init.aio_threads = 4;
        init.aio_num = 64;
        aio_init(&init);
        test_read_write_return();
        test_zeroed_sigevent();
        test_null_and_unknown();
        test_invalid_fields();
        test_fsync();
        test_lio_listio();
        test_suspend();
        test_cancel();
        test_sigev_signal();
        test_sigev_thread_id();
        test_sigev_thread();
        test_fork();
        test_threads();
        test_fire_and_forget();
        test_suspend_cancellation_point();
        test_suspend_eintr_two_waiters();
    } else {
        fprintf(stderr, "usage: aio_semantics [all | idle | eagain | noring]\n");
        return 2;
    }
    return finish();
}
