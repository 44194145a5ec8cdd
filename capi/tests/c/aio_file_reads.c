/* Reads of files the library has seen before, as glibc's pread(2) gives them:
 * - procfs and sysfs files, which refuse non-blocking reads (RWF_NOWAIT),
 *   read on every call, not only the first;
 * - a read of a whole file whose second half is not in the page cache returns
 *   every byte, not the cached part.
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

#define SZ (2 << 20)

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

static void partly_cached_file(char *buf) {
    int fd = temp_file("file-reads");
    if (fd < 0)
        return;
    memset(buf, 'x', SZ);
    CHECK(write(fd, buf, SZ) == SZ);
    CHECK(fsync(fd) == 0);
    int err;
    for (int i = 0; i < 2; i++)
        CHECK(read_once(fd, 0, buf, 4096, &err) == 4096 && err == 0);
    CHECK(posix_fadvise(fd, SZ / 2, SZ / 2, POSIX_FADV_DONTNEED) == 0);
    memset(buf, 0, SZ);
    ssize_t r = read_once(fd, 0, buf, SZ, &err);
    CHECK(err == 0 && r == SZ);
    CHECK(buf[0] == 'x' && buf[SZ / 2] == 'x' && buf[SZ - 1] == 'x');
    close(fd);
}

int main(void) {
    char *buf = malloc(SZ);
    CHECK(buf != NULL);
    if (buf == NULL)
        return finish();
    pseudo_files(buf);
    partly_cached_file(buf);
    free(buf);
    return finish();
}
