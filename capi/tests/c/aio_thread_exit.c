/* A request outlives the thread that submitted it.
 *
 * A thread submits aio_read on an empty pipe and exits; the main thread then
 * writes to the pipe and waits: the read completes with the data, as with
 * glibc (whose helper threads do the I/O). io_uring cancels a task's pending
 * requests when the task exits: the library must issue such a request again
 * instead of reporting ECANCELED. A second round does the same with two
 * reads submitted by one lio_listio(LIO_NOWAIT) call.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int fds[2][2];
static struct aiocb cbs[2];
static char bufs[2][8];

static void *submit_one(void *arg) {
    (void)arg;
    CHECK(aio_read(&cbs[0]) == 0);
    return NULL;
}

static void *submit_list(void *arg) {
    (void)arg;
    struct aiocb *list[2] = {&cbs[0], &cbs[1]};
    CHECK(lio_listio(LIO_NOWAIT, list, 2, NULL) == 0);
    return NULL;
}

static void prepare(int i) {
    memset(&cbs[i], 0, sizeof cbs[i]);
    cbs[i].aio_fildes = fds[i][0];
    cbs[i].aio_buf = bufs[i];
    cbs[i].aio_nbytes = 5;
    cbs[i].aio_lio_opcode = LIO_READ;
    cbs[i].aio_sigevent.sigev_notify = SIGEV_NONE;
}

static void complete_read(int i, const char *data) {
    const struct aiocb *list[1] = {&cbs[i]};
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(aio_error(&cbs[i]) == EINPROGRESS);
    CHECK(write(fds[i][1], data, 5) == 5);
    struct timespec limit = {10, 0};
    while (aio_error(&cbs[i]) == EINPROGRESS) {
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    }
    CHECK(aio_error(&cbs[i]) == 0);
    CHECK(aio_return(&cbs[i]) == 5);
    CHECK(memcmp(bufs[i], data, 5) == 0);
}

int main(void) {
    pthread_t t;
    CHECK(pipe(fds[0]) == 0 && pipe(fds[1]) == 0);

    prepare(0);
    CHECK(pthread_create(&t, NULL, submit_one, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    complete_read(0, "later");

    prepare(0);
    prepare(1);
    CHECK(pthread_create(&t, NULL, submit_list, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    complete_read(1, "after");
    complete_read(0, "again");

    return finish();
}
