/* A SCHED_FIFO thread's AIO read latency: aio_read of 4 KiB of a cached file,
 * then aio_suspend until it is done, N times with a 200 us pause between them.
 * Prints one JSON line: {"p50_ns": .., "p90_ns": .., "p99_ns": .., "max_ns": ..}.
 * Built against glibc; run as is (glibc's AIO) or under LD_PRELOAD=libposixrt.so.
 *
 * Usage: rt_read FILE [N] [PRIORITY]   (N reads, default 2000; FIFO priority,
 * default 50). Needs CAP_SYS_NICE or RLIMIT_RTPRIO; exits 2 without it. */
#define _POSIX_C_SOURCE 200809L
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static char buf[4096];
    struct sched_param sp;
    long long *lat;
    int fd, i, n, prio;

    if (argc < 2) {
        fprintf(stderr, "usage: rt_read FILE [N] [PRIORITY]\n");
        return 2;
    }
    n = argc > 2 ? atoi(argv[2]) : 2000;
    prio = argc > 3 ? atoi(argv[3]) : 50;
    if (n < 10) {
        fprintf(stderr, "rt_read: N must be at least 10\n");
        return 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror("rt_read: open");
        return 1;
    }
    sp.sched_priority = prio;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        perror("rt_read: sched_setscheduler(SCHED_FIFO) (needs CAP_SYS_NICE or RLIMIT_RTPRIO)");
        return 2;
    }
    lat = calloc((size_t)n, sizeof *lat);
    if (lat == NULL) {
        perror("rt_read: calloc");
        return 1;
    }
    for (i = 0; i < n; i++) {
        struct aiocb cb;
        const struct aiocb *list[1];
        long long t;

        memset(&cb, 0, sizeof cb);
        cb.aio_fildes = fd;
        cb.aio_buf = buf;
        cb.aio_nbytes = sizeof buf;
        cb.aio_offset = (off_t)(i % 64) * 4096;
        list[0] = &cb;
        t = now_ns();
        if (aio_read(&cb) != 0) {
            perror("rt_read: aio_read");
            return 1;
        }
        while (aio_error(&cb) == EINPROGRESS)
            aio_suspend(list, 1, NULL);
        lat[i] = now_ns() - t;
        if (aio_return(&cb) != (ssize_t)sizeof buf) {
            fprintf(stderr, "rt_read: read %d was short or failed\n", i);
            return 1;
        }
        {
            struct timespec pause = { 0, 200000 };
            nanosleep(&pause, NULL);
        }
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp);
    printf("{\"p50_ns\": %lld, \"p90_ns\": %lld, \"p99_ns\": %lld, \"max_ns\": %lld}\n",
           lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], lat[n - 1]);
    free(lat);
    return 0;
}
