/* pthread_cancel of a thread that waits in aio_suspend, with no timeout, for
 * a request that does not complete: the thread is woken and acts on the
 * cancel, as POSIX requires of a cancellation point ("the thread shall be
 * awakened and the cancellation request shall be acted upon") and as glibc's
 * aio_suspend does. The library acted on it only once the wait ended (a
 * completion, the timeout or a signal): here, never, and the join timed out.
 *
 * The thread's request stays valid: it completes once the pipe has data, and
 * another thread reads its status and result. A thread that disabled
 * cancellation is not woken (its wait goes on until its request is done).
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
static struct aiocb cb1, cb2;
static char byte1, byte2;
static volatile int waited2; /* the second victim's aio_suspend returned */

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Waits without a timeout for a read on an empty pipe. */
static void *victim(void *arg) {
    (void)arg;
    aiocb_on(&cb1, p1[0], &byte1, 1, 0);
    if (aio_read(&cb1) != 0)
        return NULL;
    const struct aiocb *list[1] = {&cb1};
    for (;;)
        aio_suspend(list, 1, NULL);
    return NULL;
}

/* The same with cancellation disabled: the wait ends with its request. */
static void *victim_disabled(void *arg) {
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    aiocb_on(&cb2, p2[0], &byte2, 1, 0);
    if (aio_read(&cb2) != 0)
        return NULL;
    const struct aiocb *list[1] = {&cb2};
    while (aio_error(&cb2) == EINPROGRESS)
        aio_suspend(list, 1, NULL);
    waited2 = 1;
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    pthread_testcancel();
    return NULL;
}

int main(void) {
    CHECK(pipe(p1) == 0);
    CHECK(pipe(p2) == 0);
    pthread_t v, d;
    CHECK(pthread_create(&v, NULL, victim, NULL) == 0);
    CHECK(pthread_create(&d, NULL, victim_disabled, NULL) == 0);
    nap_ms(100);
    CHECK(pthread_cancel(v) == 0);
    CHECK(pthread_cancel(d) == 0);

    /* Woken and cancelled while its request is still in progress. */
    void *res = NULL;
    int joined = join_within_10s(v, &res);
    CHECK(joined == 0);
    if (joined != 0) {
        fprintf(stderr, "the thread waiting in aio_suspend was not cancelled within 10 s\n");
        return finish();
    }
    CHECK(res == PTHREAD_CANCELED);
    CHECK(aio_error(&cb1) == EINPROGRESS);

    /* Its request completes, and its result is read from this thread. */
    CHECK(write(p1[1], "v", 1) == 1);
    const struct aiocb *list[1] = {&cb1};
    struct timespec five_s = {5, 0};
    for (int i = 0; i < 5 && aio_error(&cb1) == EINPROGRESS; i++)
        aio_suspend(list, 1, &five_s);
    CHECK(aio_error(&cb1) == 0);
    CHECK(aio_return(&cb1) == 1 && byte1 == 'v');

    /* The thread with cancellation disabled still waits, until its read is
     * done; then it acts on the cancel where it enables it again. */
    CHECK(!waited2);
    CHECK(write(p2[1], "d", 1) == 1);
    res = NULL;
    CHECK(join_within_10s(d, &res) == 0);
    CHECK(res == PTHREAD_CANCELED);
    CHECK(waited2);
    CHECK(aio_return(&cb2) == 1 && byte2 == 'd');
    return finish();
}
