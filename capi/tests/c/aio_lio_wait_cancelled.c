/* lio_listio(LIO_WAIT) whose entries another thread cancels while the call
 * waits (two reads of an empty pipe): the call returns -1/EIO, as for any
 * entry that failed ("[EIO] One or more of the individual I/O operations
 * failed"), each entry's status being ECANCELED, and each aio_cancel returns
 * AIO_CANCELED. On both engines the call often returned 0, and an
 * aio_cancel AIO_ALLDONE for the request it had just cancelled: the list's
 * waiter and aio_cancel both free a request's slot once it is done (the
 * waiter keeps it to read how it ended), and whichever comes second finds no
 * slot: the waiter counts that request as done without failure, aio_cancel
 * as done before it came ("another canceller took it").
 *
 * The canceller waits until both entries are in progress, then cancels them
 * one by one (even rounds) or with aio_cancel(fd, NULL) (odd rounds).
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int p[2];
static struct aiocb cbs[2];
static int by_fd;

static void *canceller(void *arg) {
    (void)arg;
    /* Both submitted and in progress (the status is set at submission). */
    for (int i = 0; i < 2; i++)
        while (aio_error(&cbs[i]) != EINPROGRESS) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    if (by_fd) {
        CHECK(aio_cancel(p[0], NULL) == AIO_CANCELED);
    } else {
        for (int i = 0; i < 2; i++)
            CHECK(aio_cancel(p[0], &cbs[i]) == AIO_CANCELED);
    }
    return NULL;
}

int main(void) {
    CHECK(pipe(p) == 0);
    char b[2][4];
    struct aiocb *list[2] = {&cbs[0], &cbs[1]};
    for (int round = 0; round < 20; round++) {
        by_fd = round % 2;
        for (int i = 0; i < 2; i++) {
            aiocb_on(&cbs[i], p[0], b[i], 4, 0);
            cbs[i].aio_lio_opcode = LIO_READ;
        }
        pthread_t t;
        CHECK(pthread_create(&t, NULL, canceller, NULL) == 0);
        errno = 0;
        int r = lio_listio(LIO_WAIT, list, 2, NULL);
        int e = errno;
        CHECK(pthread_join(t, NULL) == 0);
        if (r != -1 || e != EIO) {
            fprintf(stderr, "round %d: lio_listio(LIO_WAIT) gave %d (errno %d) with every "
                            "entry cancelled; wanted -1/EIO\n", round, r, e);
            failures++;
        }
        for (int i = 0; i < 2; i++) {
            CHECK(aio_error(&cbs[i]) == ECANCELED);
            CHECK(aio_return(&cbs[i]) == -1);
        }
    }
    return finish();
}
