/* A request outlives the thread that submitted it.
 *
 * A thread submits aio_read on an empty pipe and exits; the main thread then
 * writes to the pipe and waits: the read completes with the data, as with
 * glibc (whose helper threads do the I/O). io_uring cancels a task's pending
 * requests when the task exits: the library must issue such a request again
 * instead of reporting ECANCELED. A second round does the same with two
 * reads submitted by one lio_listio(LIO_NOWAIT) call. Three more have a
 * thread read a file whose pages were dropped from the page cache, and exit:
 * the kernel finishes such a read without the process's memory (EFAULT)
 * unless the library waits for it or issues it again. In three more, this
 * thread submits the reads and a thread that exits enters the ring for them;
 * in three more, a second thread that exits enters them again.
 * (Skipped on a file system that keeps the pages, such as tmpfs.)
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

#define MIB (1 << 20)
#define FILE_MIB 16
#define READS 8

static int file_fd;
static struct aiocb file_cbs[READS];
static char file_bufs[READS][4096];

static int only = -1; /* submit_file_reads: all reads, or only this one */

static void *submit_file_reads(void *arg) {
    (void)arg;
    for (int i = 0; i < READS; i++) {
        if (only >= 0 && i != only)
            continue;
        memset(&file_cbs[i], 0, sizeof file_cbs[i]);
        file_cbs[i].aio_fildes = file_fd;
        file_cbs[i].aio_buf = file_bufs[i];
        file_cbs[i].aio_nbytes = sizeof file_bufs[i];
        file_cbs[i].aio_offset = (off_t)(i * 2) * MIB + 4096;
        CHECK(aio_read(&file_cbs[i]) == 0);
    }
    return NULL;
}

/* Drops the file's pages; 0 if they stay cached (nothing to test). */
static int evict(void) {
    size_t len = (size_t)FILE_MIB * MIB;
    CHECK(posix_fadvise(file_fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, file_fd, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED)
        return 0;
    unsigned char *in = malloc(len / 4096);
    int evicted = in != NULL && mincore(p, len, in) == 0;
    for (size_t k = 0; evicted && k < len / 4096; k++)
        evicted = !(in[k] & 1);
    free(in);
    munmap(p, len);
    return evicted;
}

/* Looks at one request's status, which enters the ring for the requests
 * whose submission was deferred, and exits. */
static void *look_and_exit(void *arg) {
    (void)arg;
    (void)aio_error(&file_cbs[0]);
    return NULL;
}

/* Waits for the reads of the round (all, or `only`) and checks their data. */
static void wait_file_reads(void) {
    struct timespec limit = {10, 0};
    for (int i = 0; i < READS; i++) {
        if (only >= 0 && i != only)
            continue;
        const struct aiocb *list[1] = {&file_cbs[i]};
        while (aio_error(&file_cbs[i]) == EINPROGRESS) {
            CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
        }
        CHECK(aio_error(&file_cbs[i]) == 0);
        CHECK(aio_return(&file_cbs[i]) == 4096);
        CHECK(file_bufs[i][0] == 'a' + i * 2 && file_bufs[i][4095] == 'a' + i * 2);
    }
}

static void uncached_reads_outlive_their_thread(void) {
    file_fd = temp_file("exit");
    if (file_fd < 0)
        return;
    static char block[MIB];
    for (int i = 0; i < FILE_MIB; i++) {
        memset(block, 'a' + i, MIB);
        CHECK(write(file_fd, block, MIB) == MIB);
    }
    CHECK(fsync(file_fd) == 0);
    /* Three rounds of eight reads: from the second on, the library knows the
     * fd names a regular file, and its first read goes to the kernel at once.
     * Then eight rounds of one read each: a read still in the kernel after
     * its call gets an fd copy, and the library issues it again when the
     * kernel ends it with EFAULT at the thread's exit. */
    for (int round = 0; round < 3 + READS; round++) {
        only = round < 3 ? -1 : round - 3;
        if (!evict()) {
            fprintf(stderr, "the temp dir keeps file pages cached: uncached rounds skipped\n");
            break;
        }
        pthread_t t;
        CHECK(pthread_create(&t, NULL, submit_file_reads, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        wait_file_reads();
    }
    /* Three rounds where this thread submits and another enters the ring:
     * eight reads in one go leave all but the first in the submission queue
     * (other requests are in flight), and the next library call enters it for
     * them, here from a thread that exits at once. The requests belong to the
     * process, not to that thread. Then three rounds of a chain: a second
     * thread reaps how they ended, enters them again, and exits too. */
    for (int round = 0; round < 6; round++) {
        only = -1;
        if (!evict())
            break;
        submit_file_reads(NULL);
        for (int k = 0; k < (round < 3 ? 1 : 2); k++) {
            if (k > 0) {
                struct timespec pause = {0, 100 * 1000 * 1000};
                nanosleep(&pause, NULL);
                evict();
            }
            pthread_t t;
            CHECK(pthread_create(&t, NULL, look_and_exit, NULL) == 0);
            CHECK(pthread_join(t, NULL) == 0);
        }
        wait_file_reads();
    }
    close(file_fd);
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

    uncached_reads_outlive_their_thread();
    return finish();
}
