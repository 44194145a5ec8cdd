/* The interposed mutex and signal calls return what glibc's own return, and
 * leave errno as glibc's leave it, while a stream runs and records them: each
 * scenario runs once on glibc's definitions (looked up in libc.so.6) and once
 * on the interposed ones (this program is linked with -lposixrt), and every
 * result and errno must be the same. `trace_interpose_glibc NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* errno before each call: a call that succeeds leaves it so. */
#define SENT 4242

struct fns {
    int (*kill)(pid_t, int);
    int (*sigqueue)(pid_t, int, const union sigval);
    int (*pthread_kill)(pthread_t, int);
    int (*pthread_sigqueue)(pthread_t, int, const union sigval);
    int (*sigwaitinfo)(const sigset_t *, siginfo_t *);
    int (*sigtimedwait)(const sigset_t *, siginfo_t *, const struct timespec *);
    int (*sigwait)(const sigset_t *, int *);
    int (*lock)(pthread_mutex_t *);
    int (*trylock)(pthread_mutex_t *);
    int (*unlock)(pthread_mutex_t *);
};

static const struct fns INTERPOSED = {
    kill,         sigqueue, pthread_kill,         pthread_sigqueue,     sigwaitinfo,
    sigtimedwait, sigwait,  pthread_mutex_lock, pthread_mutex_trylock, pthread_mutex_unlock,
};

static void next_definition(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        fprintf(stderr, "no %s in libc.so.6\n", name);
    TRUE(p != NULL);
    memcpy(fn, &p, size);
}

/* glibc's own definitions (libc.so.6 is loaded: dlsym on its handle finds
 * them there, not in libposixrt). */
static struct fns glibc(void)
{
    struct fns f;
    void *lib = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    TRUE(lib != NULL);
#define NEXT(field, name) next_definition(lib, name, &f.field, sizeof f.field)
    NEXT(kill, "kill");
    NEXT(sigqueue, "sigqueue");
    NEXT(pthread_kill, "pthread_kill");
    NEXT(pthread_sigqueue, "pthread_sigqueue");
    NEXT(sigwaitinfo, "sigwaitinfo");
    NEXT(sigtimedwait, "sigtimedwait");
    NEXT(sigwait, "sigwait");
    NEXT(lock, "pthread_mutex_lock");
    NEXT(trylock, "pthread_mutex_trylock");
    NEXT(unlock, "pthread_mutex_unlock");
#undef NEXT
    return f;
}

/* The results of one scenario: each call's value and errno after it. */
struct results {
    long v[256];
    int err[256];
    int n;
};

#define STEP(r, call)                                                                         \
    do {                                                                                      \
        TRUE((r)->n < 256);                                                                    \
        errno = SENT;                                                                         \
        (r)->v[(r)->n] = (long)(call);                                                        \
        (r)->err[(r)->n] = errno;                                                             \
        (r)->n++;                                                                             \
    } while (0)

static void same(const char *what, const struct results *g, const struct results *p)
{
    int i;
    EQ(p->n, g->n);
    for (i = 0; i < g->n; i++) {
        if (p->v[i] != g->v[i] || p->err[i] != g->err[i])
            fprintf(stderr, "%s step %d: %ld errno %d, glibc %ld errno %d\n", what, i, p->v[i],
                    p->err[i], g->v[i], g->err[i]);
        EQ(p->v[i], g->v[i]);
        EQ(p->err[i], g->err[i]);
    }
}

/* The events of the interposers in a stream (read to the end). */
static int interposer_events(trace_id_t t)
{
    trace_event_id_t ids[512];
    int i, n = drain(t, ids, 512), k = 0;
    for (i = 0; i < n && i < 512; i++)
        k += ids[i] == traceSigGeneration || ids[i] == traceSigDelivery ||
             ids[i] == traceMutexLock || ids[i] == traceMutexTryLock || ids[i] == traceMutexUnlock;
    return k;
}

/* Runs `scenario` on glibc's definitions, then on the interposed ones, each
 * while `t` runs; the results must be the same, and only the interposed run
 * records events. */
static void compare(const char *what, trace_id_t t, void (*scenario)(const struct fns *, struct results *))
{
    static struct results g, p;
    struct fns lc = glibc();
    memset(&g, 0, sizeof g);
    memset(&p, 0, sizeof p);
    OK(posix_trace_start(t));
    scenario(&lc, &g);
    OK(posix_trace_stop(t));
    EQ(interposer_events(t), 0);
    OK(posix_trace_start(t));
    scenario(&INTERPOSED, &p);
    OK(posix_trace_stop(t));
    TRUE(interposer_events(t) > 0);
    same(what, &g, &p);
}

static void sending(const struct fns *f, struct results *r)
{
    union sigval v;
    pid_t me = getpid();
    pthread_t self = pthread_self();
    v.sival_int = 5;
    /* kill: signals to this process (SIGUSR2 is ignored), the null signal to
     * the group and to every process, bad numbers, no such process. */
    STEP(r, f->kill(me, 0));
    STEP(r, f->kill(me, SIGUSR2));
    STEP(r, f->kill(0, 0));
    STEP(r, f->kill(-1, 0));
    STEP(r, f->kill(me, -1));
    STEP(r, f->kill(me, 65));
    STEP(r, f->kill(me, INT_MAX));
    STEP(r, f->kill(INT_MAX, 0));
    STEP(r, f->kill(INT_MAX, SIGUSR2));
    STEP(r, f->kill(-INT_MAX, SIGUSR2));
    /* sigqueue */
    STEP(r, f->sigqueue(me, SIGUSR2, v));
    STEP(r, f->sigqueue(me, 0, v));
    STEP(r, f->sigqueue(me, -1, v));
    STEP(r, f->sigqueue(me, 65, v));
    STEP(r, f->sigqueue(INT_MAX, SIGUSR2, v));
    STEP(r, f->sigqueue(INT_MAX, 0, v));
    STEP(r, f->sigqueue(0, SIGUSR2, v));
    STEP(r, f->sigqueue(-1, 0, v));
    /* pthread_kill, pthread_sigqueue: bad numbers and glibc's own signals
     * (32, 33) included */
    STEP(r, f->pthread_kill(self, 0));
    STEP(r, f->pthread_kill(self, SIGUSR2));
    STEP(r, f->pthread_kill(self, -1));
    STEP(r, f->pthread_kill(self, 65));
    STEP(r, f->pthread_kill(self, 32));
    STEP(r, f->pthread_kill(self, 33));
    STEP(r, f->pthread_sigqueue(self, SIGUSR2, v));
    STEP(r, f->pthread_sigqueue(self, 0, v));
    STEP(r, f->pthread_sigqueue(self, -1, v));
    STEP(r, f->pthread_sigqueue(self, 32, v));
}

static void waiting(const struct fns *f, struct results *r)
{
    struct timespec zero = {0, 0}, bad = {0, 2000000000};
    union sigval v;
    siginfo_t si;
    sigset_t set;
    int sig = 0;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    OK(pthread_sigmask(SIG_BLOCK, &set, NULL));
    /* nothing pending: a zero timeout, a bad one */
    STEP(r, f->sigtimedwait(&set, &si, &zero));
    STEP(r, f->sigtimedwait(&set, NULL, &zero));
    STEP(r, f->sigtimedwait(&set, NULL, &bad));
    /* one pending, taken with and without a siginfo */
    v.sival_int = 11;
    STEP(r, f->sigqueue(getpid(), SIGRTMIN, v));
    STEP(r, f->sigtimedwait(&set, NULL, &zero));
    v.sival_int = 12;
    STEP(r, f->sigqueue(getpid(), SIGRTMIN, v));
    memset(&si, 0, sizeof si);
    STEP(r, f->sigtimedwait(&set, &si, &zero));
    STEP(r, si.si_value.sival_int);
    STEP(r, si.si_code);
    v.sival_int = 13;
    STEP(r, f->sigqueue(getpid(), SIGRTMIN, v));
    memset(&si, 0, sizeof si);
    STEP(r, f->sigwaitinfo(&set, &si));
    STEP(r, si.si_value.sival_int);
    STEP(r, si.si_signo);
    STEP(r, f->sigqueue(getpid(), SIGRTMIN, v));
    STEP(r, f->sigwaitinfo(&set, NULL));
    STEP(r, f->pthread_kill(pthread_self(), SIGRTMIN));
    STEP(r, f->sigwait(&set, &sig));
    STEP(r, sig);
}

/* A process without the permission to signal process 1: the null signal only
 * (the permission is checked all the same), then an ignored signal to itself
 * (recorded). Run in a child that gives up root when it has it, with a stream
 * of its own. */
static void no_permission(const struct fns *f, struct results *r)
{
    union sigval v;
    v.sival_int = 1;
    STEP(r, f->kill(1, 0));
    STEP(r, f->sigqueue(1, 0, v));
    STEP(r, f->kill(getpid(), SIGUSR2));
}

static void t_signal_as_glibc(void)
{
    trace_id_t t = new_stream();
    struct stat init;
    pid_t c;
    int st;
    alarm(20);
    TRUE(signal(SIGUSR2, SIG_IGN) != SIG_ERR);
    compare("sending", t, sending);
    compare("waiting", t, waiting);
    OK(posix_trace_shutdown(t));
    c = fork();
    TRUE(c >= 0);
    if (c == 0) {
        if (geteuid() == 0)
            OK(setuid(65534));
        t = new_stream();
        compare("no permission", t, no_permission);
        OK(posix_trace_shutdown(t));
        /* The documented error, where process 1 is another user's. */
        if (stat("/proc/1", &init) == 0 && init.st_uid != geteuid()) {
            errno = 0;
            EQ(kill(1, 0), -1);
            EQ(errno, EPERM);
        }
        exit(0);
    }
    EQ(waitpid(c, &st, 0), c);
    TRUE(WIFEXITED(st));
    EQ(WEXITSTATUS(st), 0);
}

static const struct fns *other_fns;
static pthread_mutex_t *other_m;
static struct results *other_r;

/* Another thread unlocks and trylocks a mutex the caller holds. */
static void *not_owner(void *p)
{
    (void)p;
    STEP(other_r, other_fns->unlock(other_m));
    STEP(other_r, other_fns->trylock(other_m));
    return NULL;
}

/* Locks and exits holding the mutex. */
static void *die_holding(void *p)
{
    (void)p;
    STEP(other_r, other_fns->lock(other_m));
    return NULL;
}

static void in_thread(const struct fns *f, pthread_mutex_t *m, struct results *r, void *(*fn)(void *))
{
    pthread_t th;
    other_fns = f;
    other_m = m;
    other_r = r;
    OK(pthread_create(&th, NULL, fn, NULL));
    OK(pthread_join(th, NULL));
}

static void new_mutex(pthread_mutex_t *m, int type, int protocol, int robust)
{
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutexattr_setprotocol(&a, protocol));
    OK(pthread_mutexattr_setrobust(&a, robust));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));
}

static void locking(const struct fns *f, struct results *r)
{
    static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK,
                                PTHREAD_MUTEX_RECURSIVE};
    static const int protocols[] = {PTHREAD_PRIO_NONE, PTHREAD_PRIO_INHERIT};
    pthread_mutex_t m;
    size_t i, j;
    int robust;
    for (robust = 0; robust < 2; robust++)
        for (j = 0; j < 2; j++)
            for (i = 0; i < 3; i++) {
                new_mutex(&m, types[i], protocols[j],
                          robust ? PTHREAD_MUTEX_ROBUST : PTHREAD_MUTEX_STALLED);
                STEP(r, f->lock(&m));
                /* a normal mutex relocked would deadlock: trylock only */
                if (types[i] != PTHREAD_MUTEX_NORMAL)
                    STEP(r, f->lock(&m));
                STEP(r, f->trylock(&m));
                /* another thread's unlock is checked but for a plain
                 * normal mutex (undefined there) */
                if (types[i] != PTHREAD_MUTEX_NORMAL || protocols[j] != PTHREAD_PRIO_NONE || robust)
                    in_thread(f, &m, r, not_owner);
                STEP(r, f->unlock(&m));
                if (types[i] == PTHREAD_MUTEX_RECURSIVE) {
                    STEP(r, f->unlock(&m));
                    STEP(r, f->unlock(&m));
                }
                /* unlocked: a normal mutex's unlock is not checked */
                if (types[i] != PTHREAD_MUTEX_NORMAL)
                    STEP(r, f->unlock(&m));
                STEP(r, f->trylock(&m));
                STEP(r, f->unlock(&m));
                if (robust) {
                    /* the owner died: EOWNERDEAD, then made consistent */
                    in_thread(f, &m, r, die_holding);
                    STEP(r, f->lock(&m));
                    STEP(r, pthread_mutex_consistent(&m));
                    STEP(r, f->unlock(&m));
                    /* the owner died again, and the mutex is left
                     * inconsistent: ENOTRECOVERABLE */
                    in_thread(f, &m, r, die_holding);
                    STEP(r, f->trylock(&m));
                    STEP(r, f->unlock(&m));
                    STEP(r, f->lock(&m));
                    STEP(r, f->trylock(&m));
                }
                STEP(r, pthread_mutex_destroy(&m));
            }
}

static void t_mutex_as_glibc(void)
{
    trace_id_t t = new_stream();
    alarm(20);
    compare("locking", t, locking);
    OK(posix_trace_shutdown(t));
}

static const struct test TESTS[] = {
    {"signal_as_glibc", t_signal_as_glibc},
    {"mutex_as_glibc", t_mutex_as_glibc},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
