/* POSIX lets a program close a request's fd once the submitting call has
 * returned: what is already in progress goes on with the file it named, and
 * an fd number the program reuses at once does not take its data.
 *
 * Rounds of aio_write of 256 KiB and of 1 MiB (sizes the kernel's io_uring
 * workers run, looking the fd up only when they start) close their fd right
 * after aio_write returns and open a new file, which gets the same number;
 * once the write is done, the new file is still empty and the first one
 * holds the data. A list of 8 such writes, closed and reused the same way,
 * and reads of 256 KiB into a buffer, likewise. (io_uring only: the thread
 * engine, as glibc, looks the number up when a worker takes the request.)
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define LIST 8

static void wait_done(struct aiocb *cb) {
    const struct aiocb *l[1] = {cb};
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(l, 1, NULL);
}

static off_t size_of(int fd) {
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    return st.st_size;
}

/* `n` writes of `len` bytes (each to a file of its own): their fds closed
 * after the submitting call and their numbers reused at once by new files. */
static void round_of_writes(size_t len, int n, int as_list) {
    int keep[LIST], fds[LIST], reused[LIST];
    struct aiocb cbs[LIST];
    struct aiocb *list[LIST];
    char *buf = malloc(len);
    CHECK(buf != NULL);
    if (buf == NULL)
        return;
    memset(buf, 'w', len);
    for (int i = 0; i < n; i++) {
        keep[i] = temp_file("keep");
        /* A second fd of the same file, which the test keeps to look. */
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", keep[i]);
        fds[i] = open(path, O_WRONLY);
        CHECK(fds[i] >= 0);
        memset(&cbs[i], 0, sizeof cbs[i]);
        cbs[i].aio_fildes = fds[i];
        cbs[i].aio_buf = buf;
        cbs[i].aio_nbytes = len;
        cbs[i].aio_lio_opcode = LIO_WRITE;
        cbs[i].aio_sigevent.sigev_notify = SIGEV_NONE;
        list[i] = &cbs[i];
    }
    if (as_list) {
        CHECK(lio_listio(LIO_NOWAIT, list, n, NULL) == 0);
    } else {
        for (int i = 0; i < n; i++)
            CHECK(aio_write(&cbs[i]) == 0);
    }
    /* Closed at once, and the numbers taken by new files, lowest first as
     * the kernel gives them (the closed numbers are the lowest free). */
    for (int i = 0; i < n; i++)
        CHECK(close(fds[i]) == 0);
    for (int i = 0; i < n; i++)
        reused[i] = temp_file("reused");
    for (int i = 0; i < n; i++) {
        wait_done(&cbs[i]);
        CHECK(aio_error(&cbs[i]) == 0);
        CHECK(aio_return(&cbs[i]) == (ssize_t)len);
    }
    for (int i = 0; i < n; i++) {
        CHECK(size_of(reused[i]) == 0);
        CHECK(size_of(keep[i]) == (off_t)len);
        close(reused[i]);
        close(keep[i]);
    }
    free(buf);
}

/* A read of 256 KiB whose fd is closed and reused by a file of other bytes:
 * it reads the first file's. */
static void round_of_reads(void) {
    size_t len = 256 * 1024;
    char *data = malloc(len), *got = malloc(len);
    CHECK(data != NULL && got != NULL);
    if (data == NULL || got == NULL) {
        free(data);
        free(got);
        return;
    }
    memset(data, 'r', len);
    int keep = temp_file("read");
    CHECK(pwrite(keep, data, len, 0) == (ssize_t)len);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", keep);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    /* Out of the page cache where the file system lets go of it: the read
     * waits for the disk (tmpfs keeps the pages: the read is cached). */
    CHECK(fdatasync(keep) == 0);
    (void)posix_fadvise(keep, 0, 0, POSIX_FADV_DONTNEED);
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = got;
    cb.aio_nbytes = len;
    cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_read(&cb) == 0);
    CHECK(close(fd) == 0);
    int other = temp_file("other");
    memset(data, 'x', len);
    CHECK(pwrite(other, data, len, 0) == (ssize_t)len);
    wait_done(&cb);
    CHECK(aio_error(&cb) == 0);
    CHECK(aio_return(&cb) == (ssize_t)len);
    size_t wrong = 0;
    for (size_t i = 0; i < len; i++)
        wrong += got[i] != 'r';
    CHECK(wrong == 0);
    close(other);
    close(keep);
    free(data);
    free(got);
}

int main(void) {
    if (not_on_uring("fd copies ahead of the kernel's workers"))
        return finish();
    for (int round = 0; round < 10; round++) {
        round_of_writes(256 * 1024, 1, 0);
        round_of_writes(1024 * 1024, 1, 0);
        round_of_writes(256 * 1024, LIST, 1);
        round_of_reads();
    }
    return finish();
}
