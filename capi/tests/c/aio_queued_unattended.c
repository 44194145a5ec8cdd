/* Requests that wait in the library's queue run although the program makes
 * no further call (fire and forget, as with glibc's helper threads): ten
 * O_APPEND writes, each queued behind the one before, and, with a ring of 2
 * entries (aio_init), ten writes at offsets, most of them queued for room.
 * The file is watched with fstat only, up to 5 s. On io_uring only the
 * writes that went to the kernel in their call were done (the rest waited
 * for the program's next aio_* call).
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define N 10
#define SZ 4096

static struct aiocb cb[N];
static char out[N][SZ];

/* N writes on a new file (O_APPEND if `append`), then its size watched. */
static int unattended(int append) {
    int fd = temp_file("unattended");
    if (fd < 0)
        return 1;
    int wfd = fd;
    if (append) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        wfd = open(path, O_WRONLY | O_APPEND);
        CHECK(wfd >= 0);
    }
    for (int i = 0; i < N; i++) {
        memset(out[i], 'A' + i, SZ);
        aiocb_on(&cb[i], wfd, out[i], SZ, (off_t)i * SZ);
        CHECK(aio_write(&cb[i]) == 0);
    }
    struct stat st;
    st.st_size = 0;
    for (int t = 0; t < 500 && st.st_size < N * SZ; t++) {
        CHECK(fstat(fd, &st) == 0);
        if (st.st_size < N * SZ)
            usleep(10000);
    }
    CHECK(st.st_size == N * SZ);
    return failures != 0;
}

static int appended(void) { return unattended(1); }

static int queued_for_room(void) {
    struct aioinit init;
    memset(&init, 0, sizeof init);
    init.aio_num = 2;
    aio_init(&init);
    return unattended(0);
}

int main(void) {
    CHECK(fork_run(appended, 30, "O_APPEND writes") == 0);
    CHECK(fork_run(queued_for_room, 30, "writes queued for room") == 0);
    return finish();
}
