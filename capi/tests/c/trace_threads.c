/* Which thread recorded an event: posix_thread_id is a pthread_t, as POSIX
 * declares it, the recording thread's pthread_self(); also the caller and the
 * owner in the data of the mutex events read from a stream.
 * `trace_threads NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"

static trace_event_id_t ev;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held, tried;

static void record(long who)
{
    posix_trace_event(ev, &who, sizeof who);
}

static void *second(void *arg)
{
    (void)arg;
    record(2);
    return NULL;
}

/* Two threads record; each event's posix_thread_id is its recorder's
 * pthread_self() (it used to be the kernel tid: no pthread_t matched). */
static void t_thread_id(void)
{
    struct posix_trace_event_info info;
    pthread_t other, main_thread = pthread_self();
    trace_id_t t = new_stream();
    long who;
    size_t len;
    int un, seen[3] = {0, 0, 0};
    OK(posix_trace_eventid_open("threads.who", &ev));
    OK(posix_trace_start(t));
    record(1);
    OK(pthread_create(&other, NULL, second, NULL));
    OK(pthread_join(other, NULL));
    record(1);
    OK(posix_trace_stop(t));
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, &who, sizeof who, &len, &un));
        if (un)
            break;
        if (info.posix_event_id != ev)
            continue;
        EQ(len, sizeof who);
        TRUE(who == 1 || who == 2);
        if (who == 1) {
            TRUE(pthread_equal(info.posix_thread_id, main_thread));
            TRUE(info.posix_thread_id == main_thread);
        } else {
            TRUE(pthread_equal(info.posix_thread_id, other));
            TRUE(!pthread_equal(info.posix_thread_id, main_thread));
        }
        seen[who]++;
    }
    EQ(seen[1], 2);
    EQ(seen[2], 1);
    OK(posix_trace_shutdown(t));
}

static void *holder(void *arg)
{
    (void)arg;
    OK(pthread_mutex_lock(&lock));
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&tried);
    OK(pthread_mutex_unlock(&lock));
    return NULL;
}

/* The mutex events' caller (word 1) and owner (word 4) compare with
 * posix_thread_id and pthread_self(): the holder's lock names it as caller
 * and owner, the main thread's failed trylock names itself as caller and
 * the holder as owner. */
static void t_thread_mutex_owner(void)
{
    struct posix_trace_event_info info;
    unsigned long long d[8];
    pthread_t h, main_thread = pthread_self();
    trace_id_t t = new_stream();
    size_t len;
    int un, locks = 0, busy = 0;
    OK(pthread_barrier_init(&held, NULL, 2));
    OK(pthread_barrier_init(&tried, NULL, 2));
    OK(posix_trace_start(t));
    OK(pthread_create(&h, NULL, holder, NULL));
    pthread_barrier_wait(&held);
    EQ(pthread_mutex_trylock(&lock), EBUSY);
    pthread_barrier_wait(&tried);
    OK(pthread_join(h, NULL));
    OK(posix_trace_stop(t));
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, d, sizeof d, &len, &un));
        if (un)
            break;
        if ((info.posix_event_id != traceMutexLock && info.posix_event_id != traceMutexTryLock) ||
            d[3] != (unsigned long long)(unsigned long)&lock)
            continue;
        EQ(len, 40);
        TRUE(d[1] == (unsigned long long)info.posix_thread_id);
        if (info.posix_event_id == traceMutexLock) {
            TRUE(pthread_equal(info.posix_thread_id, h));
            EQ(d[0], 0);
            TRUE(d[4] == (unsigned long long)h);
            locks++;
        } else {
            TRUE(pthread_equal(info.posix_thread_id, main_thread));
            EQ(d[0], EBUSY);
            TRUE(d[4] == (unsigned long long)h);
            busy++;
        }
    }
    EQ(locks, 1);
    EQ(busy, 1);
    OK(posix_trace_shutdown(t));
    OK(pthread_barrier_destroy(&held));
    OK(pthread_barrier_destroy(&tried));
}

static const struct test TESTS[] = {
    {"thread_id", t_thread_id},
    {"thread_mutex_owner", t_thread_mutex_owner},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
