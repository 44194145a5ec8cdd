/* pthread_cancel of a thread asleep in aio_suspend leaves the engine working,
 * and the thread's request completes.
 *
 * The victim waits for a read on an empty pipe (on io_uring it is the thread
 * that reaps the ring). A deferred cancel sent while it sleeps is acted on
 * when its wait ends (here: its read completes), not inside the library's
 * sleep, which would leave the engine's state half changed (the ring's
 * reaper gone, its wake-up fd still registered: every later wait of the
 * process then slept to its timeout). Then the main thread reads a pipe that
 * holds data, and its wait must return it.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int p1[2], p2[2];
static struct aiocb victim_cb;
static char victim_byte;

static void *victim(void *arg) {
    (void)arg;
    victim_cb.aio_fildes = p1[0];
    victim_cb.aio_buf = &victim_byte;
    victim_cb.aio_nbytes = 1;
    if (aio_read(&victim_cb) != 0)
        return NULL;
    const struct aiocb *list[1] = {&victim_cb};
    for (;;)
        aio_suspend(list, 1, NULL);
    return NULL;
}

int main(void) {
    CHECK(pipe(p1) == 0);
    CHECK(pipe(p2) == 0);
    pthread_t v;
    CHECK(pthread_create(&v, NULL, victim, NULL) == 0);
    struct timespec nap = {0, 100 * 1000000L};
    nanosleep(&nap, NULL);
    CHECK(pthread_cancel(v) == 0);
    nanosleep(&nap, NULL);
    /* The victim's wait ends: it acts on the cancel. */
    CHECK(write(p1[1], "v", 1) == 1);
    void *res = NULL;
    int joined = join_within_10s(v, &res);
    CHECK(joined == 0);
    CHECK(res == PTHREAD_CANCELED);
    /* Its read is done (glibc acts on the cancel inside its wait: the read
     * may still be finishing there). It used to stay in progress for good
     * on io_uring: the cancel was acted on in a `close` of the engine's, in
     * the middle of the read's completion. */
    const struct aiocb *vlist[1] = {&victim_cb};
    struct timespec five_s = {5, 0};
    for (int i = 0; i < 5 && aio_error(&victim_cb) == EINPROGRESS; i++)
        aio_suspend(vlist, 1, &five_s);
    CHECK(aio_error(&victim_cb) == 0);
    CHECK(aio_return(&victim_cb) == 1 && victim_byte == 'v');

    /* The engine still works: a read of data that is there is returned. */
    CHECK(write(p2[1], "m", 1) == 1);
    char byte = 0;
    struct aiocb cb;
    aiocb_on(&cb, p2[0], &byte, 1, 0);
    CHECK(aio_read(&cb) == 0);
    const struct aiocb *list[1] = {&cb};
    int rc = aio_suspend(list, 1, &five_s);
    if (rc != 0)
        fprintf(stderr, "the next wait: %d, errno %d, aio_error %d\n", rc, errno, aio_error(&cb));
    CHECK(rc == 0);
    CHECK(aio_return(&cb) == 1 && byte == 'm');
    return finish();
}
