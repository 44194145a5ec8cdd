/* aio_suspend and lio_listio(LIO_WAIT) fail with EINTR when a signal handler
 * runs while they wait, also while another thread's requests complete all the
 * time. Each of those completions used to wake every waiter, and a handler
 * that ran while the waiter was awake, between two sleeps, went unseen: the
 * wait went on (6 to 38 of 50 signals gave EINTR; glibc: 50).
 *
 * A busy thread reads a cached file through AIO without pause. The main
 * thread waits for a read on an empty pipe, in ROUNDS rounds of aio_suspend
 * and then ROUNDS rounds of lio_listio(LIO_WAIT); in each round a third
 * thread, once it sees the main thread asleep (in the wait), sends it one
 * SIGUSR1 (no SA_RESTART). Every round must end with EINTR, at the first
 * signal: one that the wait missed shows as a round still waiting 2 s after
 * the handler ran (the signal is then sent again).
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 50
#define FILE_SIZE (64 * 4096)

static int pipefd[2];
static int file;
static pid_t waiter_tid;
static pthread_t waiter;
static volatile int started; /* the round the waiter entered */
static volatile int ended;   /* the round the waiter left */
static volatile int stop;
static volatile sig_atomic_t handled;
static int lost; /* signals handled in a wait that went on (the signaler's) */

static void on_usr1(int signo) {
    (void)signo;
    handled++;
}

static void pause_us(long us) {
    struct timespec t = {0, us * 1000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* The waiter's /proc file `name` (stat, wchan) into buf; its length, or 0. */
static ssize_t waiter_file(const char *name, char *buf, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)waiter_tid, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return n;
}

/* The system call the waiter is in (-1: running, or unknown). */
static long waiter_syscall(void) {
    char buf[256];
    if (waiter_file("syscall", buf, sizeof buf) == 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    return strtol(buf, NULL, 10);
}

/* True if the waiter sleeps in the wait's own sleep (ppoll, io_uring_enter),
 * seen before and after its state: not for a lock, nor anywhere else before
 * the call's first sleep (a handler that runs there, while the call waits
 * for the allocator's lock, say, is not seen: nor is it by glibc, whose wait
 * is a futex, so there the signal goes after 1 s). */
static int waiter_asleep_in_wait(void) {
    char buf[512];
    long nr = waiter_syscall();
    if (nr != SYS_ppoll && nr != SYS_io_uring_enter)
        return 0;
    if (waiter_file("stat", buf, sizeof buf) == 0)
        return 0;
    char *close_paren = strrchr(buf, ')');
    if (!close_paren || close_paren[1] != ' ' || close_paren[2] != 'S')
        return 0;
    return waiter_syscall() == nr;
}

static void *busy(void *arg) {
    (void)arg;
    static char buf[4096];
    unsigned long i = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        struct aiocb cb;
        aiocb_on(&cb, file, buf, sizeof buf, (off_t)((i++ % (FILE_SIZE / 4096)) * 4096));
        if (aio_read(&cb) != 0) {
            CHECK(0);
            break;
        }
        const struct aiocb *list[1] = {&cb};
        while (aio_error(&cb) == EINPROGRESS)
            aio_suspend(list, 1, NULL);
        CHECK(aio_return(&cb) == 4096);
    }
    return NULL;
}

/* Sends SIGUSR1 to the waiter, and waits until its handler ran (the waiter
 * may be slow to get the CPU) or round r ended. */
static void kick(int r) {
    sig_atomic_t h = handled;
    pthread_kill(waiter, SIGUSR1);
    while (handled == h && __atomic_load_n(&ended, __ATOMIC_ACQUIRE) < r)
        pause_us(50);
}

static void *signaler(void *arg) {
    (void)arg;
    for (int r = 1; r <= 2 * ROUNDS; r++) {
        while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < r)
            pause_us(50);
        /* Asleep in the wait (see waiter_asleep_in_wait). */
        for (int i = 0; i < 20000 && !waiter_asleep_in_wait(); i++)
            pause_us(50);
        kick(r);
        /* A handler unseen by the wait: counted, and the signal sent again. */
        for (int i = 1; __atomic_load_n(&ended, __ATOMIC_ACQUIRE) < r; i++) {
            pause_us(50);
            if (i % 40000 == 0) {
                lost++;
                kick(r);
            }
        }
    }
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pipe(pipefd) == 0);
    file = temp_file("eintr-beside-io");
    static char data[FILE_SIZE];
    memset(data, 'x', sizeof data);
    CHECK(write(file, data, sizeof data) == (ssize_t)sizeof data);
    waiter = pthread_self();
    waiter_tid = (pid_t)syscall(SYS_gettid);

    /* The other threads take no SIGUSR1. */
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, &old);
    pthread_t b, s;
    CHECK(pthread_create(&b, NULL, busy, NULL) == 0);
    CHECK(pthread_create(&s, NULL, signaler, NULL) == 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    char byte = 0;
    struct aiocb rd;
    aiocb_on(&rd, pipefd[0], &byte, 1, 0);
    CHECK(aio_read(&rd) == 0);
    const struct aiocb *list[1] = {&rd};
    struct timespec ten_s = {10, 0};
    int suspend_eintr = 0, list_eintr = 0;
    for (int r = 1; r <= ROUNDS; r++) {
        __atomic_store_n(&started, r, __ATOMIC_RELEASE);
        int rc = aio_suspend(list, 1, &ten_s);
        if (rc == -1 && errno == EINTR)
            suspend_eintr++;
        __atomic_store_n(&ended, r, __ATOMIC_RELEASE);
    }
    /* lio_listio(LIO_WAIT): each round's read stays in flight after EINTR. */
    static struct aiocb reads[ROUNDS];
    static char bytes[ROUNDS];
    for (int r = 1; r <= ROUNDS; r++) {
        struct aiocb *cb = &reads[r - 1];
        memset(cb, 0, sizeof *cb);
        cb->aio_fildes = pipefd[0];
        cb->aio_buf = &bytes[r - 1];
        cb->aio_nbytes = 1;
        cb->aio_lio_opcode = LIO_READ;
        struct aiocb *one[1] = {cb};
        __atomic_store_n(&started, ROUNDS + r, __ATOMIC_RELEASE);
        int rc = lio_listio(LIO_WAIT, one, 1, NULL);
        if (rc == -1 && errno == EINTR)
            list_eintr++;
        __atomic_store_n(&ended, ROUNDS + r, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    CHECK(pthread_join(s, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    if (suspend_eintr != ROUNDS || list_eintr != ROUNDS || lost != 0)
        fprintf(stderr, "EINTR: aio_suspend %d of %d, lio_listio %d of %d; %d signals missed\n",
                suspend_eintr, ROUNDS, list_eintr, ROUNDS, lost);
    CHECK(suspend_eintr == ROUNDS);
    CHECK(list_eintr == ROUNDS);
    CHECK(lost == 0);

    /* Every read in flight gets its byte. */
    static char ones[ROUNDS + 1];
    memset(ones, '!', sizeof ones);
    CHECK(write(pipefd[1], ones, sizeof ones) == (ssize_t)sizeof ones);
    while (aio_error(&rd) == EINPROGRESS)
        aio_suspend(list, 1, NULL);
    CHECK(aio_return(&rd) == 1);
    for (int i = 0; i < ROUNDS; i++) {
        const struct aiocb *l[1] = {&reads[i]};
        while (aio_error(&reads[i]) == EINPROGRESS)
            aio_suspend(l, 1, NULL);
        CHECK(aio_return(&reads[i]) == 1);
    }
    return finish();
}
