/* aio_suspend fails with EINTR when a signal handler runs at any moment of the
 * call, not only while it sleeps: POSIX says it shall fail with EINTR "a
 * signal interrupted aio_suspend()". A handler that ran while the call was
 * awake, before its first sleep, went unseen: the call slept on until its
 * timeout (EAGAIN), or for good without one.
 *
 * The main thread waits for a read on an empty pipe (it never completes),
 * with a 2 s timeout, SIGUSR1 caught by a handler installed without
 * SA_RESTART. This program defines clock_gettime, so the library's own calls
 * come here: the first one a call of aio_suspend makes (it reads the clock
 * for its deadline) marks the moment the call is under way.
 *
 * - early: that first clock read raises SIGUSR1 in the calling thread, in
 *   the middle of the call. The handler must end the call with EINTR.
 * - random: another thread, once it sees that mark, waits a random number
 *   of spins (0 up to some microseconds) and sends SIGUSR1 to the main thread,
 *   which is then anywhere in the call, awake or asleep: EINTR each time.
 *
 * A round that misses its signal ends in EAGAIN after 2 s; each part stops at
 * its first miss. Exits 0 and prints "ok" when every check passes; otherwise
 * prints the failed checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define EARLY_ROUNDS 20
#define RANDOM_ROUNDS 300
#define MAX_SPIN 20000

enum { ARM_NONE, ARM_RAISE, ARM_MARK };

/* What the main thread's next clock read does (see clock_gettime). */
static __thread volatile int armed;
/* The round whose call made its first clock read (ARM_MARK). */
static volatile int inside;
/* The round the sender is to signal, and the last one it signalled. */
static volatile int asked, sent;
static volatile sig_atomic_t handled;
static pthread_t waiter;

static void on_usr1(int signo) {
    (void)signo;
    handled++;
}

/* The library's clock reads come here (it calls clock_gettime through its
 * PLT, which this definition interposes). */
int clock_gettime(clockid_t clock, struct timespec *ts) {
    long r = syscall(SYS_clock_gettime, clock, ts);
    int a = armed;
    armed = ARM_NONE;
    if (a == ARM_RAISE)
        pthread_kill(pthread_self(), SIGUSR1);
    else if (a == ARM_MARK)
        __atomic_store_n(&inside, asked, __ATOMIC_RELEASE);
    return r == 0 ? 0 : -1;
}

static void pause_us(long us) {
    struct timespec t = {0, us * 1000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static void *sender(void *arg) {
    (void)arg;
    unsigned seed = 12345;
    for (int r = 1; r <= RANDOM_ROUNDS; r++) {
        /* Until the round's call is under way (or the test gave up). */
        while (__atomic_load_n(&inside, __ATOMIC_ACQUIRE) < r) {
            if (__atomic_load_n(&asked, __ATOMIC_ACQUIRE) < 0)
                return NULL;
        }
        long spin = rand_r(&seed) % MAX_SPIN;
        for (volatile long i = 0; i < spin; i++) {
        }
        pthread_kill(waiter, SIGUSR1);
        __atomic_store_n(&sent, r, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* One wait that must end with EINTR, its handler run during the call. */
static int round_eintr(const struct aiocb *const *list, int arm, int r) {
    struct timespec timeout = {2, 0};
    sig_atomic_t before = handled;
    __atomic_store_n(&asked, r, __ATOMIC_RELEASE);
    armed = arm;
    int rc = aio_suspend(list, 1, &timeout);
    int e = errno;
    armed = ARM_NONE;
    if (rc == -1 && e == EINTR && handled != before)
        return 1;
    fprintf(stderr, "round %d (%s): aio_suspend gave %d, errno %d (%s), handler %s\n", r,
            arm == ARM_RAISE ? "early" : "random", rc, e, strerror(e),
            handled != before ? "ran" : "did not run");
    return 0;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

    int fds[2];
    CHECK(pipe(fds) == 0);
    static char buf[16];
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fds[0];
    cb.aio_buf = buf;
    cb.aio_nbytes = sizeof buf;
    CHECK(aio_read(&cb) == 0);
    const struct aiocb *list[1] = {&cb};

    for (int r = 1; r <= EARLY_ROUNDS; r++)
        if (!round_eintr(list, ARM_RAISE, r)) {
            CHECK(!"a signal raised at the call's first clock read gave EINTR");
            break;
        }

    waiter = pthread_self();
    pthread_t s;
    CHECK(pthread_create(&s, NULL, sender, NULL) == 0);
    for (int r = 1; r <= RANDOM_ROUNDS; r++) {
        int ok = round_eintr(list, ARM_MARK, r);
        /* The round's signal was sent, and its handler ran. */
        for (int i = 0; i < 200000 && __atomic_load_n(&sent, __ATOMIC_ACQUIRE) < r; i++)
            pause_us(10);
        CHECK(__atomic_load_n(&sent, __ATOMIC_ACQUIRE) >= r);
        if (!ok) {
            CHECK(!"a signal sent at a random moment of the call gave EINTR");
            break;
        }
    }
    __atomic_store_n(&asked, -1, __ATOMIC_RELEASE);
    CHECK(pthread_join(s, NULL) == 0);

    CHECK(aio_cancel(fds[0], &cb) == AIO_CANCELED);
    CHECK(aio_error(&cb) == ECANCELED);
    CHECK(aio_return(&cb) == -1);
    close(fds[0]);
    close(fds[1]);
    return finish();
}
