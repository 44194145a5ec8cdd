/* Prints sizeof and every offsetof of the system's struct aiocb, struct aiocb64,
 * struct sigevent and struct aioinit, one "name value" per line, for the test
 * that compares them with libposixrt's definitions. */
#define _GNU_SOURCE
#include <aio.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#define OFF(type, field) printf(#type "." #field " %zu\n", offsetof(struct type, field))

int main(void) {
    printf("aiocb.size %zu\n", sizeof(struct aiocb));
    OFF(aiocb, aio_fildes);
    OFF(aiocb, aio_lio_opcode);
    OFF(aiocb, aio_reqprio);
    OFF(aiocb, aio_buf);
    OFF(aiocb, aio_nbytes);
    OFF(aiocb, aio_sigevent);
    OFF(aiocb, __next_prio);
    OFF(aiocb, __abs_prio);
    OFF(aiocb, __policy);
    OFF(aiocb, __error_code);
    OFF(aiocb, __return_value);
    OFF(aiocb, aio_offset);
    OFF(aiocb, __glibc_reserved);
    printf("aiocb64.size %zu\n", sizeof(struct aiocb64));
    OFF(aiocb64, aio_fildes);
    OFF(aiocb64, aio_lio_opcode);
    OFF(aiocb64, aio_reqprio);
    OFF(aiocb64, aio_buf);
    OFF(aiocb64, aio_nbytes);
    OFF(aiocb64, aio_sigevent);
    OFF(aiocb64, __next_prio);
    OFF(aiocb64, __abs_prio);
    OFF(aiocb64, __policy);
    OFF(aiocb64, __error_code);
    OFF(aiocb64, __return_value);
    OFF(aiocb64, aio_offset);
    OFF(aiocb64, __glibc_reserved);
    printf("sigevent.size %zu\n", sizeof(struct sigevent));
    OFF(sigevent, sigev_value);
    OFF(sigevent, sigev_signo);
    OFF(sigevent, sigev_notify);
    OFF(sigevent, _sigev_un._tid);
    OFF(sigevent, _sigev_un._sigev_thread._function);
    OFF(sigevent, _sigev_un._sigev_thread._attribute);
    printf("aioinit.size %zu\n", sizeof(struct aioinit));
    OFF(aioinit, aio_threads);
    OFF(aioinit, aio_num);
    return 0;
}
