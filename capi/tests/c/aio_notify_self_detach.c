/* A SIGEV_THREAD function whose attributes make a joinable thread (those of
 * pthread_attr_init) may detach its own thread, the usual way for a glibc
 * program not to leak it: once its thread ended, the library must not touch
 * that thread's handle, which glibc gives to the next thread made on the
 * same stack.
 *
 * The library created the thread joinable and then detached it: a function
 * that detached itself and ended first left the library detaching whatever
 * thread the handle named by then, here a joinable thread of the program,
 * which could no longer be joined.
 *
 * This program defines pthread_create over the next definition (looked up
 * with dlsym(RTLD_NEXT)), hence `-rdynamic`: the library's calls come here
 * too. A creation whose attributes ask for MARKER bytes of stack is the
 * notification's. The first tries are refused (EAGAIN), so that the library's
 * retry thread makes the thread, and ends once it has (which the program
 * waits for: it then did all it would with the handle). The creation that
 * succeeds waits until the function detached its thread and the thread
 * ended, then makes a joinable thread of the program on the same stack
 * (MARKER bytes too: glibc's stack cache gives it the ended thread's, and the
 * same handle), before it returns. That thread must still be joinable once
 * the retry thread ended, and be joined.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"
#include "waits.h"

/* The stack size that marks the notification's thread. */
#define MARKER ((size_t)3 << 20)

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn next_create;
/* Set: a marked creation fails with EAGAIN. */
static int refuse;
static int refused;
/* Set by the function: its thread's handle and id. */
static pthread_t fn_self;
static pid_t fn_tid;
static sem_t fn_done, created, release;
/* The program's joinable thread made on the ended thread's stack. */
static pthread_t held;
static int held_made;
/* The id of the library's thread that made the notification's. */
static pid_t maker_tid;

static pid_t own_tid(void) {
    return (pid_t)syscall(SYS_gettid);
}

/* True once thread `tid` of this process is gone (10 s at most). */
static int ended(pid_t tid) {
    for (int i = 0; i < 10000; i++) {
        if (syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH)
            return 1;
        pause_ms(1);
    }
    return 0;
}

static void *holder(void *arg) {
    (void)arg;
    while (sem_wait(&release) != 0 && errno == EINTR) {
    }
    return NULL;
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
    size_t size = 0;
    int r;
    if (f == holder || !a || pthread_attr_getstacksize(a, &size) != 0 || size != MARKER)
        return next_create(t, a, f, arg);
    if (__atomic_load_n(&refuse, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&refused, 1, __ATOMIC_SEQ_CST);
        return EAGAIN;
    }
    maker_tid = own_tid();
    r = next_create(t, a, f, arg);
    if (r == 0 && wait_10s(&fn_done) == 0 && ended(fn_tid)) {
        pthread_attr_t joinable;
        CHECK(pthread_attr_init(&joinable) == 0);
        CHECK(pthread_attr_setstacksize(&joinable, MARKER) == 0);
        held_made = next_create(&held, &joinable, holder, NULL) == 0;
        CHECK(held_made);
        CHECK(pthread_attr_destroy(&joinable) == 0);
    }
    sem_post(&created);
    return r;
}

static void on_done(union sigval v) {
    (void)v;
    fn_self = pthread_self();
    fn_tid = own_tid();
    /* A glibc program's way not to leak a joinable notification thread (0
     * there; the library's may say it is detached already). */
    int e = pthread_detach(pthread_self());
    CHECK(e == 0 || e == EINVAL);
    sem_post(&fn_done);
}

int main(void) {
    static struct aiocb cb;
    static char buf[1];
    pthread_attr_t attr;
    int p[2], state = -1;
    void *sym = dlsym(RTLD_NEXT, "pthread_create");
    CHECK(sym != NULL);
    if (sym == NULL)
        return finish();
    memcpy(&next_create, &sym, sizeof next_create);
    CHECK(sem_init(&fn_done, 0, 0) == 0);
    CHECK(sem_init(&created, 0, 0) == 0);
    CHECK(sem_init(&release, 0, 0) == 0);
    CHECK(pipe(p) == 0);
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, MARKER) == 0);
    aiocb_on(&cb, p[0], buf, 1, 0);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb.aio_sigevent.sigev_notify_function = on_done;
    cb.aio_sigevent.sigev_notify_attributes = &attr;
    __atomic_store_n(&refuse, 1, __ATOMIC_SEQ_CST);
    CHECK(aio_read(&cb) == 0);
    CHECK(write(p[1], "x", 1) == 1);
    for (int i = 0; i < 10000 && __atomic_load_n(&refused, __ATOMIC_SEQ_CST) == 0; i++)
        pause_ms(1);
    CHECK(__atomic_load_n(&refused, __ATOMIC_SEQ_CST) >= 1);
    __atomic_store_n(&refuse, 0, __ATOMIC_SEQ_CST);
    CHECK(wait_10s(&created) == 0);
    wait_done(&cb);
    CHECK(aio_return(&cb) == 1);
    CHECK(held_made);
    if (!held_made)
        return finish();
    /* The program's thread took the ended one's stack, and handle. */
    CHECK(pthread_equal(held, fn_self));
    /* The retry thread ended: it is done with the handle. */
    CHECK(ended(maker_tid));
    {
        pthread_attr_t now;
        CHECK(pthread_getattr_np(held, &now) == 0);
        CHECK(pthread_attr_getdetachstate(&now, &state) == 0);
        CHECK(pthread_attr_destroy(&now) == 0);
    }
    if (state != PTHREAD_CREATE_JOINABLE) {
        fprintf(stderr, "the program's joinable thread was detached (the library detached "
                        "the ended notification thread's handle)\n");
        failures++;
        sem_post(&release);
    } else {
        sem_post(&release);
        CHECK(pthread_join(held, NULL) == 0);
    }
    CHECK(pthread_attr_destroy(&attr) == 0);
    close(p[0]);
    close(p[1]);
    return finish();
}
