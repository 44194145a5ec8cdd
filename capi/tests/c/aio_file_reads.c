/* Reads of files the library has seen before, as glibc's pread(2) gives them:
 * - procfs and sysfs files, which refuse non-blocking reads (RWF_NOWAIT),
 *   read on every call, not only the first;
 * - a read of a file whose first page only is in the page cache returns every
 *   byte asked for, not the cached page, and one past the end of the file the
 *   bytes up to the end.
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
#include <unistd.h>

#include "check.h"

#define PART (128 * 1024)
#define FILE_SZ (1024 * 1024)

/* One aio_read of `len` bytes at `off`, waited for; its return value, and its
 * error in `*err`. */
static ssize_t read_once(int fd, off_t off, char *buf, size_t len, int *err) {
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_offset = off;
    cb.aio_buf = buf;
    cb.aio_nbytes = len;
    cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_read(&cb) == 0);
    const struct aiocb *list[1] = {&cb};
    struct timespec limit = {10, 0};
    for (int i = 0; i < 3 && aio_error(&cb) == EINPROGRESS; i++)
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    *err = aio_error(&cb);
    return aio_return(&cb);
}

static void pseudo_files(char *buf) {
    const char *paths[] = {"/proc/self/status", "/sys/devices/system/cpu/online"};
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
        int fd = open(paths[k], O_RDONLY);
        if (fd < 0)
            continue; /* no sysfs here */
        for (int i = 0; i < 3; i++) {
            int err;
            ssize_t r = read_once(fd, 0, buf, 4096, &err);
            if (err != 0 || r <= 0)
                fprintf(stderr, "%s, read %d: %zd, error %d\n", paths[k], i, r, err);
            CHECK(err == 0 && r > 0);
        }
        close(fd);
    }
}

/* A 128 KiB read of a file whose first page only is in the page cache
 * (readahead off): all of it, not the cached page. Then a read past the end
 * of the file: the bytes up to the end. */
static void partly_cached_file(char *buf) {
    int fd = temp_file("file-reads");
    if (fd < 0)
        return;
    for (size_t i = 0; i < FILE_SZ; i++)
        buf[i] = (char)(i * 7 + i / 4096);
    CHECK(write(fd, buf, FILE_SZ) == FILE_SZ);
    CHECK(fsync(fd) == 0);
    char *out = buf + FILE_SZ;
    int err;
    for (int i = 0; i < 2; i++)
        CHECK(read_once(fd, 0, out, 16, &err) == 16 && err == 0);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);
    CHECK(pread(fd, out, 4096, 0) == 4096);
    memset(out, 0, PART);
    ssize_t r = read_once(fd, 0, out, PART, &err);
    CHECK(err == 0 && r == PART);
    CHECK(memcmp(buf, out, PART) == 0);
    memset(out, 0, PART);
    r = read_once(fd, FILE_SZ - 100, out, 4096, &err);
    CHECK(err == 0 && r == 100);
    CHECK(memcmp(buf + FILE_SZ - 100, out, 100) == 0);
    close(fd);
}

int main(void) {
    char *buf = malloc(FILE_SZ + PART);
    CHECK(buf != NULL);
    if (buf == NULL)
        return finish();
    pseudo_files(buf);
    partly_cached_file(buf);
    free(buf);
    return finish();
}
