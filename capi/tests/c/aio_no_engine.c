/* Run with POSIXRT_AIO_BACKEND set to no engine ("none"): every submission is
 * refused with EAGAIN. A refused lio_listio gives each entry its status, as
 * POSIX asks of a list refused with EAGAIN ("the application may check the
 * error status for each aiocb structure to determine the individual
 * request(s) that failed") and as the library does past POSIXRT_AIO_MAX: its
 * reads and writes EAGAIN, an entry with a bad opcode EINVAL, aio_return -1.
 * With no engine the library returned before it gave the entries a status:
 * they were no requests (aio_error -1/EINVAL), and nothing told the program
 * which to submit again.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    int p[2];
    CHECK(pipe(p) == 0);
    char b[3][4] = {"abc", "def", "ghi"};
    struct aiocb rd, wr, bad, nop;
    aiocb_on(&rd, p[0], b[0], 3, 0);
    aiocb_on(&wr, p[1], b[1], 3, 0);
    aiocb_on(&bad, p[0], b[2], 3, 0);
    aiocb_on(&nop, p[0], b[2], 3, 0);
    struct aiocb *list[5] = {&rd, NULL, &wr, &bad, &nop};

    /* A single request: refused, and no request. */
    errno = 0;
    CHECK(aio_read(&rd) == -1 && errno == EAGAIN);
    errno = 0;
    CHECK(aio_error(&rd) == -1 && errno == EINVAL);

    for (int mode = 0; mode < 2; mode++) {
        rd.aio_lio_opcode = LIO_READ;
        wr.aio_lio_opcode = LIO_WRITE;
        bad.aio_lio_opcode = 12345;
        nop.aio_lio_opcode = LIO_NOP;
        errno = 0;
        CHECK(lio_listio(mode ? LIO_WAIT : LIO_NOWAIT, list, 5, NULL) == -1 &&
              errno == EAGAIN);
        CHECK(aio_error(&rd) == EAGAIN && aio_return(&rd) == -1);
        CHECK(aio_error(&wr) == EAGAIN && aio_return(&wr) == -1);
        CHECK(aio_error(&bad) == EINVAL && aio_return(&bad) == -1);
        errno = 0;
        CHECK(aio_error(&nop) == -1 && errno == EINVAL);
    }
    return finish();
}
