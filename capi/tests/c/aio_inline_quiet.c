/* A request without notification that completes while aio_read enters the
 * ring (a read of a cached file) does not wake the io_uring completion thread:
 * the call reaps it itself. The completion thread runs here because a request
 * with SIGEV_THREAD came first; its voluntary context switches count its
 * wake-ups (each one blocks again on the ring's eventfd). The reads are 200 us
 * apart, so that the thread, woken, is back asleep before the next one (wakes
 * that come faster are read from the eventfd together, as one).
 *
 * Skipped (prints "ok") on the thread engine, which has no completion thread,
 * on kernels before 5.11 (no quiet eventfd there), and on file systems whose
 * reads io_uring does not try inline (tmpfs, overlayfs). A read that goes to a
 * kernel worker makes the next entries wake the thread, so the count is taken
 * up to 3 times and one quiet count passes.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define BLOCK 4096
#define BLOCKS 16
#define READS 200
#define QUIET_MAX 20

#define TMPFS_MAGIC_ 0x01021994
#define OVERLAYFS_MAGIC_ 0x794c7630

static sem_t notified;

static void on_done(union sigval v) {
    (void)v;
    sem_post(&notified);
}

/* The id of the thread named `name` in this process, or -1. */
static long thread_named(const char *name) {
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    long found = -1;
    struct dirent *e;
    while (found < 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f)) {
            comm[strcspn(comm, "\n")] = 0;
            if (strcmp(comm, name) == 0)
                found = strtol(e->d_name, NULL, 10);
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

/* The voluntary context switches of thread `tid` so far, or -1. */
static long switches(long tid) {
    char path[100], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* One aio_read of block `k` into `buf`, waited for; checks its bytes. */
static void read_block(int fd, int k, unsigned char *buf, int sigev) {
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_offset = (off_t)k * BLOCK;
    cb.aio_buf = buf;
    cb.aio_nbytes = BLOCK;
    cb.aio_sigevent.sigev_notify = sigev;
    if (sigev == SIGEV_THREAD)
        cb.aio_sigevent.sigev_notify_function = on_done;
    CHECK(aio_read(&cb) == 0);
    const struct aiocb *list[1] = {&cb};
    struct timespec limit = {10, 0};
    for (int i = 0; i < 3 && aio_error(&cb) == EINPROGRESS; i++)
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    CHECK(aio_error(&cb) == 0 && aio_return(&cb) == BLOCK);
    CHECK(buf[1] == (unsigned char)(k * 3 + 1) && buf[BLOCK - 1] == (unsigned char)(k * 3 + 1));
}

/* True if the kernel is older than 5.11, whose io_uring lacks the extended
 * enter argument the library needs to keep the eventfd quiet. */
static int kernel_before_5_11(void) {
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
        return 0;
    return major < 5 || (major == 5 && minor < 11);
}

int main(void) {
    if (not_on_uring("completion thread"))
        return finish();
    if (kernel_before_5_11()) {
        fprintf(stderr, "io_uring before 5.11 has no quiet eventfd: nothing to check\n");
        return finish();
    }
    int fd = temp_file("inline-quiet");
    if (fd < 0)
        return finish();
    struct statfs fs;
    CHECK(fstatfs(fd, &fs) == 0);
    if (fs.f_type == TMPFS_MAGIC_ || fs.f_type == OVERLAYFS_MAGIC_) {
        fprintf(stderr, "io_uring does not read this file system inline: nothing to check\n");
        close(fd);
        return finish();
    }
    static unsigned char buf[BLOCK * BLOCKS];
    for (int k = 0; k < BLOCKS; k++)
        memset(buf + k * BLOCK, k * 3 + 1, BLOCK);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    CHECK(pread(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf); /* cached */

    /* A read done inline is done when its aio_read returns (elsewhere, e.g.
     * FUSE or NFS, io_uring gives it to a kernel worker). */
    static unsigned char probe[BLOCK];
    struct aiocb pcb;
    memset(&pcb, 0, sizeof pcb);
    pcb.aio_fildes = fd;
    pcb.aio_buf = probe;
    pcb.aio_nbytes = BLOCK;
    pcb.aio_sigevent.sigev_notify = SIGEV_NONE;
    CHECK(aio_read(&pcb) == 0);
    int inline_done = ((volatile unsigned char *)probe)[BLOCK - 1] == 1;
    const struct aiocb *plist[1] = {&pcb};
    while (aio_error(&pcb) == EINPROGRESS)
        aio_suspend(plist, 1, NULL);
    CHECK(aio_return(&pcb) == BLOCK);
    if (!inline_done) {
        fprintf(stderr, "a cached read is not done inline here: nothing to check\n");
        close(fd);
        return finish();
    }

    /* A notification starts the completion thread. */
    CHECK(sem_init(&notified, 0, 0) == 0);
    unsigned char out[BLOCK];
    read_block(fd, 0, out, SIGEV_THREAD);
    CHECK(sem_wait(&notified) == 0);
    /* Started by the request; it names itself once running (5 s at most). */
    long tid = -1;
    for (int i = 0; i < 500 && tid < 0; i++) {
        tid = thread_named("posixrt-aio-com");
        if (tid < 0) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    CHECK(tid > 0);
    if (tid <= 0) {
        close(fd);
        return finish();
    }

    long woken[3];
    int quiet = 0;
    for (int attempt = 0; attempt < 3 && !quiet; attempt++) {
        long before = switches(tid);
        for (int i = 0; i < READS; i++) {
            read_block(fd, i % BLOCKS, out, SIGEV_NONE);
            struct timespec gap = {0, 200 * 1000};
            nanosleep(&gap, NULL);
        }
        long after = switches(tid);
        CHECK(before >= 0 && after >= before);
        woken[attempt] = after - before;
        quiet = woken[attempt] <= QUIET_MAX;
        if (!quiet)
            fprintf(stderr, "attempt %d: the completion thread woke %ld times for %d reads\n",
                    attempt + 1, woken[attempt], READS);
    }
    CHECK(quiet);
    close(fd);
    return finish();
}
