/* C and Rust events in one stream: C threads record user events with
 * posix_trace_event, while libposixrt's Rust code records system events for
 * the same calls (the AIO engine: aio_submit / aio_complete, some on its own
 * threads; the interposed mutex functions: traceMutexLock / traceMutexUnlock).
 * Prints every event read back: "<ns> <thread> <name> <first data word>". */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <trace.h>

#define ROUNDS 20

static trace_event_id_t before, after;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static int fd;

static void *worker(void *arg)
{
    long w = (long)arg;
    int i;
    char byte = 'x';
    for (i = 0; i < ROUNDS; i++) {
        struct aiocb cb;
        const struct aiocb *list[1];
        long long tag = w * 1000 + i;
        posix_trace_event(before, &tag, sizeof tag);
        pthread_mutex_lock(&mtx);
        pthread_mutex_unlock(&mtx);
        memset(&cb, 0, sizeof cb);
        cb.aio_fildes = fd;
        cb.aio_buf = &byte;
        cb.aio_nbytes = 1;
        cb.aio_sigevent.sigev_notify = SIGEV_NONE;
        cb.aio_offset = tag;
        if (aio_write(&cb) != 0) {
            perror("aio_write");
            exit(1);
        }
        list[0] = &cb;
        while (aio_error(&cb) == EINPROGRESS)
            aio_suspend(list, 1, NULL);
        if (aio_return(&cb) != 1) {
            fprintf(stderr, "aio_return\n");
            exit(1);
        }
        posix_trace_event(after, &tag, sizeof tag);
    }
    return NULL;
}

int main(void)
{
    trace_id_t t;
    pthread_t th[2];
    struct posix_trace_event_info info;
    long long data[64];
    char name[TRACE_EVENT_NAME_MAX];
    char path[] = "/tmp/trace_mixed_XXXXXX";
    size_t len;
    int un;
    long i;

    fd = mkstemp(path);
    if (fd < 0)
        return 1;
    unlink(path);
    if (posix_trace_create(0, NULL, &t) || posix_trace_eventid_open("c_before", &before) ||
        posix_trace_eventid_open("c_after", &after) || posix_trace_start(t))
        return 1;
    for (i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    if (posix_trace_stop(t))
        return 1;
    while (posix_trace_getnext_event(t, &info, data, sizeof data, &len, &un) == 0 && !un) {
        if (posix_trace_eventid_get_name(t, info.posix_event_id, name))
            strcpy(name, "?");
        printf("%lld %lu %s %lld\n",
               (long long)info.posix_timestamp.tv_sec * 1000000000LL + info.posix_timestamp.tv_nsec,
               (unsigned long)info.posix_thread_id, name, len >= 8 ? data[0] : -1LL);
    }
    posix_trace_shutdown(t);
    return 0;
}
