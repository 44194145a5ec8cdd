/* A pipelined program (fio's posixaio at depth 32) submits a run of requests
 * before it looks at any: on io_uring, the run after its first request goes
 * into the submission queue without entering the kernel, and the program's
 * next look (aio_error, aio_suspend, ...) enters it once for all. This holds
 * also when the first request is done inside its own aio_read (a cached
 * read), so nothing is in flight when the second is submitted.
 *
 * Seen from here: right after the run's last aio_read returns, its buffer is
 * still untouched (the read is not in the kernel yet). The library's flusher
 * thread enters a waiting queue within 1 ms; were it to run in that instant,
 * the check is taken again (3 times at most). Every read is then waited for
 * and its bytes checked. Skipped (prints "ok") on the thread engine, which
 * has no submission queue, and where the run's first read is not done when
 * its aio_read returns (io_uring gives it to a kernel worker: tmpfs, ...).
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

#define BLOCK 4096
#define RUN 33

static unsigned char file_data[BLOCK * RUN];
static unsigned char bufs[RUN][BLOCK];

/* Block `k` of the file holds `k + 1` in every byte. */
static unsigned char byte_of(int k) {
    return (unsigned char)(k + 1);
}

/* One run: RUN aio_reads with no look in between. True if the last one's
 * buffer was untouched when its aio_read returned; -1 if the first one's was
 * (its read not done inline: nothing to learn from the last one). */
static int one_run(int fd) {
    struct aiocb cbs[RUN];
    memset(bufs, 0, sizeof bufs);
    int untouched = 0;
    for (int k = 0; k < RUN; k++) {
        memset(&cbs[k], 0, sizeof cbs[k]);
        cbs[k].aio_fildes = fd;
        cbs[k].aio_offset = (off_t)k * BLOCK;
        cbs[k].aio_buf = bufs[k];
        cbs[k].aio_nbytes = BLOCK;
        cbs[k].aio_sigevent.sigev_notify = SIGEV_NONE;
        CHECK(aio_read(&cbs[k]) == 0);
        if (k == 0) {
            volatile unsigned char *b = bufs[0];
            if (b[0] != byte_of(0) || b[BLOCK - 1] != byte_of(0))
                untouched = -1;
        }
        if (k == RUN - 1 && untouched == 0) {
            /* Read while the request may still be queued: volatile, and only
             * compared, never relied on for the data. */
            volatile unsigned char *b = bufs[k];
            untouched = b[0] == 0 && b[BLOCK - 1] == 0;
        }
    }
    for (int k = 0; k < RUN; k++) {
        const struct aiocb *list[1] = {&cbs[k]};
        struct timespec limit = {10, 0};
        for (int i = 0; i < 3 && aio_error(&cbs[k]) == EINPROGRESS; i++)
            CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
        CHECK(aio_error(&cbs[k]) == 0 && aio_return(&cbs[k]) == BLOCK);
        CHECK(bufs[k][0] == byte_of(k) && bufs[k][BLOCK - 1] == byte_of(k));
    }
    return untouched;
}

int main(void) {
    if (not_on_uring("submission queue"))
        return finish();
    int fd = temp_file("pipelined");
    if (fd < 0)
        return finish();
    for (int k = 0; k < RUN; k++)
        memset(file_data + k * BLOCK, byte_of(k), BLOCK);
    CHECK(write(fd, file_data, sizeof file_data) == (ssize_t)sizeof file_data);
    CHECK(pread(fd, file_data, sizeof file_data, 0) == (ssize_t)sizeof file_data); /* cached */

    int batched = 0;
    for (int attempt = 0; attempt < 3 && !batched; attempt++) {
        batched = one_run(fd);
        if (batched < 0) {
            /* tmpfs, overlayfs, a network file system: io_uring hands the
             * read to a kernel worker, so an untouched buffer proves nothing. */
            fprintf(stderr, "a cached read is not done inline here: nothing to check\n");
            close(fd);
            return finish();
        }
        if (!batched)
            fprintf(stderr, "attempt %d: the run's last read was in the kernel at once\n",
                    attempt + 1);
    }
    CHECK(batched);
    close(fd);
    return finish();
}
