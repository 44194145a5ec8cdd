/* fork() while another thread makes the process's first AIO request: the
 * child can use AIO.
 *
 * The library starts its engine on the first request, under a spin lock of
 * its own, and registered the pthread_atfork handler that resets that lock
 * (and forgets the parent's engine) in a forked child only there, under the
 * lock. A fork that came after the lock was taken and before the handler was
 * registered left the child with the lock taken by a thread it does not
 * have: the child's first aio_read spun for good.
 *
 * Each trial is a fresh process that has made no request: one thread makes
 * the first one while the main thread forks children until it is done; each
 * child reads a file through AIO within 2 s (alarm). The trials stop at the
 * first child that fails.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define TRIALS 100
#define FORKS_PER_TRIAL 20

static int fd = -1;
static volatile int first_done;

/* Reads the file's 4 bytes through AIO: 0 if they came, else a small code. */
static int read_once(void) {
    struct aiocb cb;
    char buf[4];
    aiocb_on(&cb, fd, buf, sizeof buf, 0);
    if (aio_read(&cb) != 0)
        return 2;
    const struct aiocb *list[1] = {&cb};
    struct timespec one_s = {1, 0};
    while (aio_error(&cb) == EINPROGRESS)
        if (aio_suspend(list, 1, &one_s) != 0 && errno == EAGAIN)
            return 3;
    if (aio_return(&cb) != 4 || memcmp(buf, "abcd", 4) != 0)
        return 4;
    return 0;
}

static void *first_user(void *arg) {
    (void)arg;
    int r = read_once();
    first_done = 1;
    return (void *)(long)r;
}

/* One trial, in its own process: 0 if every child read its file. */
static int trial(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, first_user, NULL) != 0)
        return 10;
    int bad = fork_while(read_once, &first_done, FORKS_PER_TRIAL, "a child forked during the first request");
    if (bad < 0)
        return 11;
    void *res = NULL;
    pthread_join(t, &res);
    return bad ? 1 : (int)(long)res;
}

int main(void) {
    fd = temp_file("fork-first");
    CHECK(write(fd, "abcd", 4) == 4);
    run_trials(trial, TRIALS);
    /* And this process, which made no request before, reads too. */
    CHECK(read_once() == 0);
    return finish();
}
