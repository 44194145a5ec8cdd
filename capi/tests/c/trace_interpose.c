/* The interposed mutex and signal calls and the oc2000 events they record:
 * `trace_interpose NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"

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
            EQ(d[0], info.posix_thread_id);
            EQ(d[1], getpid());
            EQ(d[2], SIGRTMIN);
            EQ(d[3], gen == 0 ? 7 : 0);
            EQ(d[4], gen == 0 ? 0 : 1); /* sigqueue: the process; pthread_kill: a thread */
            EQ(d[5], gen == 0 ? 0 : d[0]);
            EQ(del, gen); /* generated before delivered */
            gen++;
        } else if (info.posix_event_id == traceSigDelivery) {
            EQ(len, 12);
            EQ(d[0], info.posix_thread_id);
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

static const struct test TESTS[] = {
    {"mutex_events", t_mutex_events},
    {"signal_events", t_signal_events},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
