/* A signal handler that runs while posix_trace_getnext_event or
 * posix_trace_timedgetnext_event waits for an event: POSIX has them fail
 * with EINTR ("the call had no effect"), and go on after a handler installed
 * with SA_RESTART. The reads used to wait on (getnext until the next event,
 * timedgetnext until its deadline). `trace_eintr NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <sys/syscall.h>

static volatile sig_atomic_t handled;
static volatile int reading, returned;
static pid_t reader_tid;
static trace_event_id_t wake_ev;

static void on_usr1(int signo)
{
    (void)signo;
    handled++;
}

static void install(int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    OK(sigaction(SIGUSR1, &sa, NULL));
}

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* True if the reader sleeps in a system call that waits (the read's nap). */
static int reader_asleep(void)
{
    char path[64], buf[128];
    long nr;
    int fd;
    ssize_t n;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)reader_tid);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0 || buf[0] < '0' || buf[0] > '9')
        return 0;
    buf[n] = 0;
    nr = strtol(buf, NULL, 10);
    return nr == SYS_ppoll || nr == SYS_nanosleep || nr == SYS_clock_nanosleep || nr == SYS_futex;
}

/* Once the reader sleeps in its read, SIGUSR1 to it (tgkill: the
 * interposed pthread_kill would record an event, which would end the read);
 * then, once its handler ran, an event after `wake_ms` if the read is still
 * waiting (a read that missed the signal, or went on after it). */
static void *signaler(void *arg)
{
    long wake_ms = (long)arg;
    int i;
    long v = 1;
    while (!__atomic_load_n(&reading, __ATOMIC_ACQUIRE))
        pause_ms(1);
    for (i = 0; i < 5000 && !reader_asleep(); i++)
        pause_ms(1);
    OK(syscall(SYS_tgkill, getpid(), reader_tid, SIGUSR1));
    for (i = 0; i < 5000 && handled == 0; i++)
        pause_ms(1);
    for (i = 0; i < wake_ms && !__atomic_load_n(&returned, __ATOMIC_ACQUIRE); i++)
        pause_ms(1);
    if (!__atomic_load_n(&returned, __ATOMIC_ACQUIRE))
        posix_trace_event(wake_ev, &v, sizeof v);
    return NULL;
}

/* Reads once from a running, empty stream while another thread signals the
 * reader; returns the read's result, *id the event's if one came. */
static int read_signalled(int timed, long wake_ms, trace_event_id_t *id)
{
    struct posix_trace_event_info info;
    struct timespec abstime;
    char data[64];
    size_t len;
    int un, r;
    pthread_t s;
    trace_id_t t = new_stream();
    OK(posix_trace_eventid_open("eintr.wake", &wake_ev));
    OK(posix_trace_start(t));
    OK(posix_trace_trygetnext_event(t, &info, data, sizeof data, &len, &un));
    EQ(un, 0);
    EQ(info.posix_event_id, POSIX_TRACE_START);
    handled = 0;
    returned = 0;
    reader_tid = (pid_t)syscall(SYS_gettid);
    OK(pthread_create(&s, NULL, signaler, (void *)wake_ms));
    OK(clock_gettime(CLOCK_REALTIME, &abstime));
    abstime.tv_sec += 5;
    __atomic_store_n(&reading, 1, __ATOMIC_RELEASE);
    if (timed)
        r = posix_trace_timedgetnext_event(t, &info, data, sizeof data, &len, &un, &abstime);
    else
        r = posix_trace_getnext_event(t, &info, data, sizeof data, &len, &un);
    __atomic_store_n(&returned, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&reading, 0, __ATOMIC_RELEASE);
    *id = r == 0 && !un ? info.posix_event_id : (trace_event_id_t)-1;
    OK(pthread_join(s, NULL));
    EQ(handled, 1);
    OK(posix_trace_shutdown(t));
    return r;
}

static void t_eintr_getnext(void)
{
    trace_event_id_t id;
    install(0);
    EQ(read_signalled(0, 2000, &id), EINTR);
}

static void t_eintr_timedgetnext(void)
{
    trace_event_id_t id;
    install(0);
    EQ(read_signalled(1, 2000, &id), EINTR);
}

/* After a handler with SA_RESTART the read goes on, and takes the event
 * that comes later. */
static void t_eintr_restart(void)
{
    trace_event_id_t id;
    install(SA_RESTART);
    OK(read_signalled(0, 100, &id));
    EQ(id, wake_ev);
    OK(read_signalled(1, 100, &id));
    EQ(id, wake_ev);
}

static const struct test TESTS[] = {
    {"eintr_getnext", t_eintr_getnext},
    {"eintr_timedgetnext", t_eintr_timedgetnext},
    {"eintr_restart", t_eintr_restart},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
