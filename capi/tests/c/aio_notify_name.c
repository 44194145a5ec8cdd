/* A SIGEV_THREAD function's thread has the name of the thread that submitted
 * the request (its name when it submitted), as a thread it created would:
 * glibc's notification thread is made by its AIO helper thread, made by the
 * submitter, and Linux gives a new thread its creator's name. Tools that list
 * threads (ps -L, top -H) and a function that reads its thread's name (to
 * log it) see the program's name.
 *
 * The library creates the thread from one of its own threads, named after
 * the library ("posixrt-aio-not..."), and the function's thread took that
 * name.
 *
 * The main thread, then a thread it names, then the same thread under another
 * name, read a pipe (its byte written after the call returned) and a cached
 * file (often done inside aio_read), by aio_read and by lio_listio, with NULL
 * attributes and with an attribute object; the function records its thread's
 * name.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include "check.h"
#include "waits.h"

static sem_t notified;
static char seen[16];

static void on_done(union sigval v) {
    (void)v;
    memset(seen, 0, sizeof seen);
    CHECK(prctl(PR_GET_NAME, seen, 0, 0, 0) == 0);
    sem_post(&notified);
}

static int file_fd, pipe_r, pipe_w;

static void one(pthread_attr_t *attr, int lio, int pipe, const char *want) {
    static struct aiocb cb;
    static char buf[1];
    const char *how = read_how(lio, pipe);
    aiocb_on(&cb, pipe ? pipe_r : file_fd, buf, 1, 0);
    sigev_thread_on(&cb, on_done, attr);
    CHECK(submit_read(&cb, lio) == 0);
    if (pipe)
        CHECK(write(pipe_w, "x", 1) == 1);
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "submitter %s (%s): no notification\n", want, how);
        failures++;
    } else if (strcmp(seen, want) != 0) {
        fprintf(stderr, "submitter %s (%s%s): the function's thread is named \"%s\"\n", want,
                how, attr ? ", attributes" : "", seen);
        failures++;
    }
    wait_done(&cb);
    CHECK(aio_return(&cb) == 1);
}

/* Every way of `one`, from the calling thread named `name`. */
static void all_ways(const char *name) {
    pthread_attr_t a;
    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_setstacksize(&a, (size_t)1 << 20) == 0);
    for (int lio = 0; lio < 2; lio++)
        for (int pipe = 0; pipe < 2; pipe++) {
            one(NULL, lio, pipe, name);
            one(&a, lio, pipe, name);
        }
    CHECK(pthread_attr_destroy(&a) == 0);
}

static void *named_submitter(void *arg) {
    (void)arg;
    CHECK(pthread_setname_np(pthread_self(), "submitter-7") == 0);
    all_ways("submitter-7");
    CHECK(prctl(PR_SET_NAME, "renamed", 0, 0, 0) == 0);
    all_ways("renamed");
    return NULL;
}

int main(void) {
    int p[2];
    pthread_t t;
    CHECK(sem_init(&notified, 0, 0) == 0);
    file_fd = temp_file("notify-name");
    CHECK(write(file_fd, "abc", 3) == 3);
    CHECK(pipe(p) == 0);
    pipe_r = p[0];
    pipe_w = p[1];
    CHECK(prctl(PR_SET_NAME, "notify-main", 0, 0, 0) == 0);
    all_ways("notify-main");
    CHECK(pthread_create(&t, NULL, named_submitter, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    close(pipe_r);
    close(pipe_w);
    close(file_fd);
    return finish();
}
