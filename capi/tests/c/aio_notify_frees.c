/* A SIGEV_THREAD callback may free its aiocb as soon as it runs, even while
 * the aio_read that submitted it has not returned yet: aio_read must not look
 * at the aiocb once the request can complete.
 *
 * Each aiocb here lives alone in a page of its own, which the callback
 * unmaps; a later read of it by aio_read faults. To let the callback run
 * inside the aio_read, everything runs on one CPU, and the library's threads
 * are started while the main thread runs SCHED_FIFO (they inherit it), which
 * it then leaves: a read of a cached file, completed while aio_read enters the
 * ring, wakes the completion thread, which preempts the caller at once, and
 * the callback's thread does too.
 *
 * Without the privilege to use SCHED_FIFO it prints why and "ok" (nothing to
 * check). On the thread engine, and where a read is not done inline, the
 * callback runs later, and the test passes without showing anything.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1 (or dies of SIGSEGV).
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

#define BLOCK 4096
#define READS 100

static sem_t notified;
static long page;
static unsigned char buf[BLOCK];

/* Checks the request's result, then frees its aiocb's page. */
static void on_done(union sigval v) {
    struct aiocb *cb = v.sival_ptr;
    CHECK(aio_error(cb) == 0);
    CHECK(aio_return(cb) == BLOCK);
    CHECK(munmap(cb, (size_t)page) == 0);
    sem_post(&notified);
}

/* One SIGEV_THREAD read of the file's first block through an aiocb in a page
 * of its own, which the callback unmaps; waits for the callback. */
static void read_freed(int fd) {
    struct aiocb *cb = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(cb != MAP_FAILED);
    if (cb == MAP_FAILED)
        return;
    cb->aio_fildes = fd;
    cb->aio_offset = 0;
    cb->aio_buf = buf;
    cb->aio_nbytes = BLOCK;
    cb->aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb->aio_sigevent.sigev_notify_function = on_done;
    cb->aio_sigevent.sigev_value.sival_ptr = cb;
    if (aio_read(cb) != 0) {
        CHECK(0);
        CHECK(munmap(cb, (size_t)page) == 0);
        return;
    }
    CHECK(sem_wait(&notified) == 0);
}

int main(void) {
    page = sysconf(_SC_PAGESIZE);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    struct sched_param fifo = {.sched_priority = 10};
    int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo);
    if (e == EPERM) {
        fprintf(stderr, "SCHED_FIFO is not allowed here: nothing to check\n");
        return finish();
    }
    CHECK(e == 0);

    int fd = temp_file("notify-frees");
    if (fd < 0)
        return finish();
    memset(buf, 7, sizeof buf);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    CHECK(pread(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf); /* cached */
    CHECK(sem_init(&notified, 0, 0) == 0);

    /* The library's threads start here, at SCHED_FIFO 10 on this CPU. */
    read_freed(fd);
    struct sched_param other = {.sched_priority = 0};
    CHECK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &other) == 0);

    for (int i = 0; i < READS; i++) {
        memset(buf, 0, sizeof buf);
        read_freed(fd);
        CHECK(buf[0] == 7 && buf[BLOCK - 1] == 7);
    }
    close(fd);
    return finish();
}
