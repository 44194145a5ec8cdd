/* Several threads, half of them SCHED_FIFO where the process may (at
 * different priorities, with different aio_reqprio), each submitting 1 to 8
 * reads of a cached file one aio_read at a time and then waiting for each:
 * every request completes, within STALL seconds, with the bytes of its
 * offset. On the thread engine this drives the pool's count of the workers
 * woken and not back yet (a real-time request switches and wakes a sleeping
 * worker by its tag, others wake whichever sleeps): a request left with every
 * worker asleep shows here as a read still in progress (a pool that did not
 * wake a worker for a lone ready request hung here).
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define THREADS 6
#define BATCHES 400
#define MOST 8
#define BLOCK 4096
#define BLOCKS 256
/* Seconds a cached read may take before the test calls it stalled. */
#define STALL 5

static int fd;

struct worker {
    long id;
    long wrong;    /* results or bytes not as written */
    unsigned char bufs[MOST][BLOCK];
};

static struct worker workers[THREADS];

/* The byte every block `b` of the file holds. */
static unsigned char fill(long b) {
    return (unsigned char)(b * 37 + 11);
}

/* A cheap generator per thread (rand_r is not C99). */
static unsigned next(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void *run(void *arg) {
    struct worker *w = arg;
    if (w->id % 2 == 1) {
        /* Refused without the privilege: the thread stays SCHED_OTHER. */
        struct sched_param p;
        memset(&p, 0, sizeof p);
        p.sched_priority = 10 + (int)w->id;
        (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    }
    unsigned seed = 7919u * (unsigned)(w->id + 1);
    struct aiocb cbs[MOST];
    for (int batch = 0; batch < BATCHES; batch++) {
        int k = 1 + (int)(next(&seed) % MOST);
        long blocks[MOST];
        for (int i = 0; i < k; i++) {
            blocks[i] = (long)(next(&seed) % BLOCKS);
            memset(&cbs[i], 0, sizeof cbs[i]);
            cbs[i].aio_fildes = fd;
            cbs[i].aio_buf = w->bufs[i];
            cbs[i].aio_nbytes = BLOCK;
            cbs[i].aio_offset = (off_t)blocks[i] * BLOCK;
            cbs[i].aio_reqprio = (int)(next(&seed) % 3);
            if (aio_read(&cbs[i]) != 0) {
                w->wrong++;
                k = i;
                break;
            }
        }
        for (int i = 0; i < k; i++) {
            const struct aiocb *one[1] = {&cbs[i]};
            int waits = 0;
            while (aio_error(&cbs[i]) == EINPROGRESS) {
                struct timespec t = {1, 0};
                if (aio_suspend(one, 1, &t) != 0 && errno == EAGAIN && ++waits == STALL) {
                    /* Its buffer cannot be reused while it may still land. */
                    fprintf(stderr, "thread %ld: a read still in progress after %d s\n",
                            w->id, STALL);
                    _exit(1);
                }
            }
            if (aio_return(&cbs[i]) != BLOCK || w->bufs[i][0] != fill(blocks[i]) ||
                w->bufs[i][BLOCK - 1] != fill(blocks[i])) {
                w->wrong++;
            }
        }
    }
    return NULL;
}

int main(void) {
    fd = temp_file("mixed");
    if (fd < 0)
        return finish();
    static unsigned char block[BLOCK];
    for (long b = 0; b < BLOCKS; b++) {
        memset(block, fill(b), sizeof block);
        CHECK(write(fd, block, sizeof block) == BLOCK);
    }
    pthread_t t[THREADS];
    struct worker *w = workers;
    for (long i = 0; i < THREADS; i++) {
        w[i].id = i;
        CHECK(pthread_create(&t[i], NULL, run, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        CHECK(w[i].wrong == 0);
        if (w[i].wrong != 0)
            fprintf(stderr, "thread %d: %ld results wrong\n", i, w[i].wrong);
    }
    close(fd);
    return finish();
}
