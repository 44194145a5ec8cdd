/* The interposed mutex and signal calls and the oc2000 events they record:
 * `trace_interpose NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <sys/syscall.h>
#include <sys/wait.h>

/* malloc, replaced to count the allocations: kill, sigqueue and pthread_kill are
 * async-signal-safe, so their interposers must not allocate (a handler that
 * interrupted malloc would then deadlock or corrupt the heap). */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
static volatile sig_atomic_t allocs;
void *malloc(size_t n)
{
    allocs++;
    return __libc_malloc(n);
}
void *calloc(size_t k, size_t n)
{
    allocs++;
    return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n)
{
    allocs++;
    return __libc_realloc(p, n);
}
void *memalign(size_t a, size_t n)
{
    allocs++;
    return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n)
{
    allocs++;
    return __libc_memalign(a, n);
}
int posix_memalign(void **p, size_t a, size_t n)
{
    allocs++;
    *p = __libc_memalign(a, n);
    return *p ? 0 : ENOMEM;
}
void free(void *p)
{
    __libc_free(p);
}

static int mutex_events(trace_id_t t, pthread_mutex_t *m, int *kinds, long long *errs, int max)
{
    struct posix_trace_event_info info;
    unsigned long long d[16];
    size_t len;
    int un, n = 0;
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, d, sizeof d, &len, &un));
        if (un)
            return n;
        if (info.posix_event_id != traceMutexLock && info.posix_event_id != traceMutexTryLock &&
            info.posix_event_id != traceMutexUnlock)
            continue;
        EQ(len, 40);
        if ((void *)(unsigned long)d[3] != (void *)m)
            continue;
        EQ(d[1], info.posix_thread_id); /* the caller */
        if (n < max) {
            kinds[n] = info.posix_event_id == traceMutexLock      ? 1
                       : info.posix_event_id == traceMutexTryLock ? 2
                                                                  : 3;
            errs[n] = (long long)d[0];
            if (kinds[n] != 3)
                EQ(d[4], info.posix_thread_id); /* this thread owns it */
            else
                EQ(d[4], 0);
        }
        n++;
    }
}

static void t_mutex_events(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    trace_id_t t = new_stream();
    trace_event_set_t f;
    int kinds[8];
    long long errs[8];
    /* No stream runs: nothing is recorded. */
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    OK(posix_trace_start(t));
    OK(pthread_mutex_lock(&m));
    EQ(pthread_mutex_trylock(&m), EBUSY);
    OK(pthread_mutex_unlock(&m));
    OK(posix_trace_stop(t));
    EQ(mutex_events(t, &m, kinds, errs, 8), 3);
    EQ(kinds[0], 1);
    EQ(errs[0], 0);
    EQ(kinds[1], 2);
    EQ(errs[1], EBUSY);
    EQ(kinds[2], 3);
    EQ(errs[2], 0);
    /* A stream that filters traceMutexLock records the others only. */
    OK(posix_trace_eventset_empty(&f));
    OK(posix_trace_eventset_add(traceMutexLock, &f));
    OK(posix_trace_set_filter(t, &f, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_start(t));
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    OK(posix_trace_stop(t));
    EQ(mutex_events(t, &m, kinds, errs, 8), 1);
    EQ(kinds[0], 3);
    /* Filtering all system events: none. */
    OK(posix_trace_eventset_fill(&f, POSIX_TRACE_SYSTEM_EVENTS));
    OK(posix_trace_set_filter(t, &f, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_start(t));
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    OK(posix_trace_stop(t));
    EQ(mutex_events(t, &m, kinds, errs, 8), 0);
    OK(posix_trace_shutdown(t));
}

static void t_signal_events(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_event_info info;
    int d[16], un, sig, n = 0, gen = 0, del = 0;
    size_t len;
    sigset_t set;
    siginfo_t si;
    union sigval v;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    OK(pthread_sigmask(SIG_BLOCK, &set, NULL));
    v.sival_int = 7;
    /* No stream runs: nothing is recorded. */
    OK(sigqueue(getpid(), SIGRTMIN, v));
    EQ(sigwaitinfo(&set, &si), SIGRTMIN);
    OK(posix_trace_start(t));
    OK(sigqueue(getpid(), SIGRTMIN, v));
    EQ(sigwaitinfo(&set, &si), SIGRTMIN);
    OK(pthread_kill(pthread_self(), SIGRTMIN));
    OK(sigwait(&set, &sig));
    EQ(sig, SIGRTMIN);
    OK(posix_trace_stop(t));
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, d, sizeof d, &len, &un));
        if (un)
            break;
        if (info.posix_event_id == traceSigGeneration) {
            EQ(len, 24);
            EQ(d[0], syscall(SYS_gettid)); /* the signal words name threads by tid */
            TRUE(pthread_equal(info.posix_thread_id, pthread_self()));
            EQ(d[1], getpid());
            EQ(d[2], SIGRTMIN);
            EQ(d[3], gen == 0 ? 7 : 0);
            EQ(d[4], gen == 0 ? 0 : 1); /* sigqueue: the process; pthread_kill: a thread */
            EQ(d[5], gen == 0 ? 0 : d[0]);
            EQ(del, gen); /* generated before delivered */
            gen++;
        } else if (info.posix_event_id == traceSigDelivery) {
            EQ(len, 12);
            EQ(d[0], syscall(SYS_gettid)); /* the signal words name threads by tid */
            TRUE(pthread_equal(info.posix_thread_id, pthread_self()));
            EQ(d[1], SIGRTMIN);
            EQ(d[2], del == 0 ? 7 : 0);
            del++;
        }
        n++;
    }
    EQ(gen, 2);
    EQ(del, 2);
    OK(posix_trace_shutdown(t));
}

static volatile sig_atomic_t handler_allocs = -1;

static void send_from_handler(int sig)
{
    union sigval v;
    sig_atomic_t before = allocs;
    (void)sig;
    v.sival_int = 3;
    kill(getpid(), SIGUSR2);
    sigqueue(getpid(), SIGUSR2, v);
    pthread_kill(pthread_self(), SIGUSR2);
    handler_allocs = allocs - before;
}

/* The signal-sending calls, from a signal handler while a stream runs, record
 * their events without allocating (they are async-signal-safe). */
static void t_signal_handler_events(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t ids[64];
    struct sigaction sa;
    int i, n, gen = 0;
    alarm(10);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    OK(sigaction(SIGUSR2, &sa, NULL));
    sa.sa_handler = send_from_handler;
    OK(sigaction(SIGUSR1, &sa, NULL));
    OK(posix_trace_start(t));
    /* The thread's first event (its buffer) is made outside the handler. */
    OK(kill(getpid(), SIGUSR2));
    OK(pthread_kill(pthread_self(), SIGUSR1));
    OK(posix_trace_stop(t));
    EQ(handler_allocs, 0);
    n = drain(t, ids, 64);
    for (i = 0; i < n && i < 64; i++)
        gen += ids[i] == traceSigGeneration;
    EQ(gen, 5);
    OK(posix_trace_shutdown(t));
}

/* sigtimedwait without a siginfo records the value, as sigwaitinfo does. */
static void t_sigtimedwait_events(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_event_info info;
    struct timespec ts = {5, 0};
    int d[16], un, del = 0;
    size_t len;
    sigset_t set;
    union sigval v;
    alarm(10);
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    OK(pthread_sigmask(SIG_BLOCK, &set, NULL));
    v.sival_int = 9;
    OK(posix_trace_start(t));
    OK(sigqueue(getpid(), SIGRTMIN, v));
    EQ(sigtimedwait(&set, NULL, &ts), SIGRTMIN);
    OK(sigqueue(getpid(), SIGRTMIN, v));
    EQ(sigwaitinfo(&set, NULL), SIGRTMIN);
    OK(posix_trace_stop(t));
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, d, sizeof d, &len, &un));
        if (un)
            break;
        if (info.posix_event_id == traceSigDelivery) {
            EQ(d[1], SIGRTMIN);
            EQ(d[2], 9);
            del++;
        }
    }
    EQ(del, 2);
    OK(posix_trace_shutdown(t));
}

static pthread_mutex_t exit_m = PTHREAD_MUTEX_INITIALIZER;

static void lock_at_exit(void *p)
{
    (void)p;
    OK(pthread_mutex_lock(&exit_m));
    OK(pthread_mutex_unlock(&exit_m));
}

static void *lock_and_exit(void *key)
{
    OK(pthread_setspecific(*(pthread_key_t *)key, key));
    OK(pthread_mutex_lock(&exit_m));
    OK(pthread_mutex_unlock(&exit_m));
    return NULL;
}

static long vm_pages(void)
{
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    TRUE(f != NULL);
    EQ(fscanf(f, "%ld", &pages), 1);
    fclose(f);
    return pages;
}

static void drain_all(trace_id_t t)
{
    trace_event_id_t ids[1];
    drain(t, ids, 1);
}

/* Threads that lock a mutex in a thread-specific data destructor (after the
 * library's own thread-exit clean-up) while a stream runs: their events are
 * recorded or not, but the stream takes back their buffers once read, as for
 * any exited thread (each such thread kept a whole buffer until shutdown). */
static void t_mutex_exit_events(void)
{
    trace_id_t t = new_stream();
    pthread_key_t key;
    pthread_t th;
    long before = 0, grown;
    int i;
    alarm(20);
    OK(pthread_key_create(&key, lock_at_exit));
    OK(posix_trace_start(t));
    for (i = 0; i < 72; i++) {
        if (i == 8)
            before = vm_pages();
        OK(pthread_create(&th, NULL, lock_and_exit, &key));
        OK(pthread_join(th, NULL));
        drain_all(t);
    }
    grown = (vm_pages() - before) * sysconf(_SC_PAGESIZE);
    OK(posix_trace_stop(t));
    drain_all(t);
    OK(posix_trace_shutdown(t));
    /* 64 threads, one buffer (1 MiB) each if kept. */
    if (grown >= 16l << 20)
        fprintf(stderr, "grew %ld bytes\n", grown);
    TRUE(grown < 16l << 20);
}

/* A forked child's mutex events carry its own tid: the parent recorded one
 * first (the interposer's tid was then known), and the child's only thread has
 * a new one. */
static void t_mutex_fork_events(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    trace_id_t t = new_stream();
    int kinds[4], st;
    long long errs[4];
    pid_t c;
    alarm(20);
    OK(posix_trace_start(t));
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    OK(posix_trace_stop(t));
    EQ(mutex_events(t, &m, kinds, errs, 4), 2);
    OK(posix_trace_shutdown(t));
    c = fork();
    TRUE(c >= 0);
    if (c == 0) {
        /* mutex_events checks the tid word against the event's thread. */
        t = new_stream();
        OK(posix_trace_start(t));
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(posix_trace_stop(t));
        EQ(mutex_events(t, &m, kinds, errs, 4), 2);
        OK(posix_trace_shutdown(t));
        exit(0);
    }
    EQ(waitpid(c, &st, 0), c);
    TRUE(WIFEXITED(st));
    EQ(WEXITSTATUS(st), 0);
}

static const struct test TESTS[] = {
    {"mutex_events", t_mutex_events},
    {"signal_events", t_signal_events},
    {"signal_handler_events", t_signal_handler_events},
    {"sigtimedwait_events", t_sigtimedwait_events},
    {"mutex_exit_events", t_mutex_exit_events},
    {"mutex_fork_events", t_mutex_fork_events},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
