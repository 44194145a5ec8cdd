/* ns per uncontended pthread_mutex_lock + pthread_mutex_unlock pair (the median
 * of batches). Built against glibc only: run it plain and under
 * LD_PRELOAD=libposixrt.so to see what the interposition costs when no stream
 * runs. With --stream (preloaded only), a stream that records the mutex events
 * runs meanwhile. Prints one JSON line.
 *
 *   trace_mutex [--stream] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 200000L
#define ROUNDS 41

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double v[ROUNDS];
    int r, stream = argc > 1 && strcmp(argv[1], "--stream") == 0;
    long i;
    unsigned long trid = 0;
    int (*create)(int, const void *, unsigned long *);
    int (*start)(unsigned long);

    if (stream) {
        /* Found only when libposixrt is loaded. */
        *(void **)&create = dlsym(RTLD_DEFAULT, "posix_trace_create");
        *(void **)&start = dlsym(RTLD_DEFAULT, "posix_trace_start");
        if (!create || !start || create(0, NULL, &trid) || start(trid)) {
            fprintf(stderr, "trace_mutex: --stream needs LD_PRELOAD=libposixrt.so\n");
            return 1;
        }
    }
    for (r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (i = 0; i < BATCH; i++) {
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
        }
        v[r] = (now_ns() - t0) / (double)BATCH;
    }
    qsort(v, ROUNDS, sizeof v[0], cmp);
    printf("{\"pair_ns\":%.3f}\n", v[ROUNDS / 2]);
    return 0;
}
