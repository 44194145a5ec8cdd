/* aio_suspend with an empty list (nent 0) whose pointer is NULL, as a
 * program passes when it builds its list in a buffer that holds nothing yet:
 * nothing to wait for, so 0 at once, with or without a timeout, before and
 * after the engine has started, and for aio_suspend64 alike. (lio_listio
 * already took such a list.) The library made a slice of the NULL pointer:
 * undefined behaviour, and an abort in a build with debug assertions.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "check.h"

/* Pointers the compiler cannot prove null (the prototypes say nonnull). */
static const struct aiocb *const *volatile no_list;
static struct aiocb *const *volatile no_lio_list;
static const struct aiocb64 *const *volatile no_list64;

static void empty_lists(void) {
    struct timespec limit = {5, 0};
    errno = 0;
    CHECK(aio_suspend(no_list, 0, NULL) == 0);
    CHECK(aio_suspend(no_list, 0, &limit) == 0);
    CHECK(aio_suspend64(no_list64, 0, NULL) == 0);
    CHECK(lio_listio(LIO_WAIT, no_lio_list, 0, NULL) == 0);
    /* A NULL list that claims entries is refused. */
    errno = 0;
    CHECK(aio_suspend(no_list, 1, &limit) == -1 && errno == EINVAL);
}

int main(void) {
    /* Before the first request: no engine yet. */
    empty_lists();

    /* With the engine started and a request done. */
    int fd = temp_file("suspend-empty");
    char buf[4] = "abc";
    struct aiocb cb;
    aiocb_on(&cb, fd, buf, 3, 0);
    CHECK(aio_write(&cb) == 0);
    const struct aiocb *list[1] = {&cb};
    struct timespec limit = {10, 0};
    for (int i = 0; i < 3 && aio_error(&cb) == EINPROGRESS; i++)
        CHECK(aio_suspend(list, 1, &limit) == 0 || errno == EINTR);
    CHECK(aio_error(&cb) == 0 && aio_return(&cb) == 3);
    empty_lists();
    return finish();
}
