/* Reading a trace log from a pipe while its writer is silent:
 * `trace_log_wait NAME`.
 * - log_wait_signals: posix_trace_getnext_event waiting for the next record
 *   of a log read from a pipe lets signals through. A handler (installed with
 *   SA_RESTART) sent to the waiting thread runs while it waits (it used to
 *   run only once the writer wrote again: the read waited with every signal
 *   blocked, so a signal whose default action ends the process did not end
 *   it either), and the read goes on and gives the log's remaining events.
 * - log_wait_eintr: a handler installed without SA_RESTART that runs while
 *   the read waits ends it with EINTR, no event taken (the read used to go
 *   on, retried inside the library); the next read gets the next event.
 * - log_wait_cancel: the waiting read is a cancellation point: a
 *   pthread_cancel ends the thread while the writer stays silent (the read
 *   used to wait in read(2) with cancellation off, until the writer wrote).
 * - log_wait_others: while one thread waits, posix_trace_get_status,
 *   posix_trace_get_attr, posix_trace_eventid_get_name and the type list
 *   calls on the same log return in another thread (they used to wait for the writer: the waiting
 *   read held the log's lock).
 * - log_wait_close: posix_trace_close of the log while a thread waits on it
 *   ends that read with EINVAL and closes the log's descriptor (the read
 *   used to wait on, the descriptor open, until the writer wrote).
 * - log_wait_timed: posix_trace_timedgetnext_event on the log is EINVAL at
 *   once (it reads active streams only), whatever its deadline, while the
 *   writer is silent.
 * - log_wait_partial: a record whose first half came while the reader
 *   waited: the reader takes it in and waits for the rest without the log's
 *   lock, so posix_trace_get_status and the other calls on the log return
 *   meanwhile (they used to wait for the rest: the read waited for it in
 *   read(2) holding the lock); once the rest comes, the event reads back
 *   whole.
 * - log_open_eintr: posix_trace_open of a pipe whose writer is silent waits
 *   for the log's header with signals let through: a handler installed
 *   without SA_RESTART ends it with EINTR, nothing opened (it used to wait
 *   in read(2), the EINTR retried, until the writer wrote); after one with
 *   SA_RESTART it goes on and opens the log once written.
 * - log_open_eintr_taken: a handler without SA_RESTART that runs once the
 *   open took the log's header from the pipe (it waits for the first event)
 *   does not end it: the header is gone from the pipe, so an EINTR, nothing
 *   opened, left a pipe no later open could read (EINVAL, not a header); the
 *   open goes on and opens the log once written.
 * - log_open_ends: posix_trace_open of a pipe that is not a log's is EINVAL
 *   as soon as its first bytes say so (it used to wait for 16 of them while
 *   the writer kept the pipe open), as is one whose writer closes it before
 *   the header is whole. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <dirent.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static volatile sig_atomic_t hits;
static void on_signal(int s)
{
    (void)s;
    hits++;
}

/* A child process whose stream logs to a pipe: the marker, flushed, then
 * silence until `go` is written (or closed: the parent ended), then `last`
 * and the shutdown. */
struct writer {
    pid_t pid;
    int log_fd; /* the pipe's read end, in the parent */
    int go;     /* the write end of `go`, in the parent */
};

static void start_writer(struct writer *w, trace_event_id_t marker, trace_event_id_t last)
{
    int data[2], go[2];
    char c = 0;
    OK(pipe(data));
    OK(pipe(go));
    w->pid = fork();
    TRUE(w->pid >= 0);
    if (w->pid == 0) {
        trace_attr_t a;
        trace_id_t t;
        close(data[0]);
        close(go[1]);
        OK(posix_trace_attr_init(&a));
        OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
        OK(posix_trace_create_withlog(0, &a, data[1], &t));
        OK(posix_trace_start(t));
        posix_trace_event(marker, NULL, 0);
        OK(posix_trace_flush(t));
        TRUE(read(go[0], &c, 1) >= 0);
        posix_trace_event(last, NULL, 0);
        OK(posix_trace_shutdown(t));
        _exit(0);
    }
    close(data[1]);
    close(go[0]);
    w->log_fd = data[0];
    w->go = go[1];
}

/* Lets the writer end; its status. */
static int reap_writer(struct writer *w)
{
    int status;
    char c = 0;
    EQ(write(w->go, &c, 1), 1);
    EQ(waitpid(w->pid, &status, 0), w->pid);
    close(w->go);
    return status;
}

/* Lets the writer end, and checks it did well. */
static void end_writer(struct writer *w)
{
    int status = reap_writer(w);
    TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

struct reader {
    trace_id_t log;
    trace_event_id_t marker, last;
    volatile pid_t tid;   /* the reader's kernel thread id */
    volatile int drained; /* the marker was read: the next read waits */
    volatile int done;    /* the reads ended */
    int result, markers, lasts;
    char last_data[16]; /* the data of the last `last` read */
    size_t last_len;
};

static void *read_log(void *arg)
{
    struct reader *r = arg;
    struct posix_trace_event_info info;
    char data[256];
    size_t len;
    int un;
    r->tid = (pid_t)syscall(SYS_gettid);
    for (;;) {
        r->result = posix_trace_getnext_event(r->log, &info, data, sizeof data, &len, &un);
        if (r->result != 0 || un) {
            __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
            return NULL;
        }
        if (info.posix_event_id == r->marker) {
            r->markers++;
            __atomic_store_n(&r->drained, 1, __ATOMIC_RELEASE);
        }
        if (info.posix_event_id == r->last) {
            r->lasts++;
            r->last_len = len < sizeof r->last_data ? len : sizeof r->last_data;
            memcpy(r->last_data, data, r->last_len);
        }
    }
}

static void pause_ms(long ms)
{
    struct timespec d = {0, ms * 1000000L};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
}

/* The reader's /proc file `name` (stat, syscall) into buf; its length, or 0. */
static ssize_t task_file(pid_t tid, const char *name, char *buf, size_t size)
{
    char path[64];
    ssize_t n;
    int fd;
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return n;
}

/* True if thread `tid` sleeps in a read(2) or a ppoll(2) (the wait for the
 * writer), seen before and after its state. */
static int asleep_in_wait(pid_t tid)
{
    char buf[512], *p;
    long nr;
    if (task_file(tid, "syscall", buf, sizeof buf) == 0 || buf[0] < '0' || buf[0] > '9')
        return 0;
    nr = strtol(buf, NULL, 10);
    if (nr != SYS_read && nr != SYS_ppoll)
        return 0;
    if (task_file(tid, "stat", buf, sizeof buf) == 0)
        return 0;
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] != 'S')
        return 0;
    if (task_file(tid, "syscall", buf, sizeof buf) == 0)
        return 0;
    return strtol(buf, NULL, 10) == nr;
}

/* Opens the writer's log and starts a reader thread on it; returns once the
 * reader read the marker and waits for the silent writer (at most 20 s). */
static void start_reader(struct reader *r, struct writer *w, pthread_t *th)
{
    int i;
    trace_event_id_t marker, last;
    OK(posix_trace_eventid_open("log_wait_marker", &marker));
    OK(posix_trace_eventid_open("log_wait_last", &last));
    start_writer(w, marker, last);
    memset(r, 0, sizeof *r);
    r->marker = marker;
    r->last = last;
    OK(posix_trace_open(w->log_fd, &r->log));
    OK(pthread_create(th, NULL, read_log, r));
    for (i = 0; i < 20000; i++) {
        if (__atomic_load_n(&r->drained, __ATOMIC_ACQUIRE) && asleep_in_wait(r->tid))
            return;
        pause_ms(1);
    }
    TRUE(0 && "the reader never waited for the writer");
}

/* Lets the writer end, joins the reader `th` started by `start_reader`, which
 * must have read the log to its end (the last event once), and closes the
 * log and the writer's descriptor. */
static void end_reading(struct reader *r, struct writer *w, pthread_t th)
{
    end_writer(w);
    OK(pthread_join(th, NULL));
    OK(r->result);
    EQ(r->lasts, 1);
    OK(posix_trace_close(r->log));
    close(w->log_fd);
}

/* Joins `th`, which must end while the writer is silent: a generous bound
 * (20 s), only so that a thread that waits for the writer fails the test
 * instead of hanging it. */
static void join_soon(pthread_t th, void **res)
{
    struct timespec until;
    OK(clock_gettime(CLOCK_REALTIME, &until));
    until.tv_sec += 20;
    OK(pthread_timedjoin_np(th, res, &until));
}

/* Waits (at most 20 s) until `hits` reaches `n`. */
static int wait_hits(int n)
{
    int i;
    for (i = 0; i < 20000 && hits < n; i++)
        pause_ms(1);
    return hits >= n;
}

static void t_log_wait_signals(void)
{
    pthread_t th;
    struct reader r;
    struct writer w;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* the read goes on after the handler */
    OK(sigaction(SIGUSR1, &sa, NULL));
    start_reader(&r, &w, &th);
    /* Twice, the second after the first handler ran: one of them at least
     * reaches the reader while it waits for the silent writer. */
    OK(pthread_kill(th, SIGUSR1));
    TRUE(wait_hits(1));
    OK(pthread_kill(th, SIGUSR1));
    TRUE(wait_hits(2));
    /* Let the writer end: the reader gets the rest of the log. */
    end_reading(&r, &w, th);
    EQ(r.markers, 1);
}

static void t_log_wait_eintr(void)
{
    pthread_t th;
    struct reader r;
    struct writer w;
    struct sigaction sa;
    struct posix_trace_event_info info;
    char data[256];
    size_t len;
    int un, i, sent = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: EINTR */
    OK(sigaction(SIGALRM, &sa, NULL));
    start_reader(&r, &w, &th);
    /* Again while the read goes on (at most 20 s), each time the reader
     * sleeps in its wait once the last handler ran: a handler that runs while
     * it is awake between two slices of its wait goes unseen. */
    for (i = 0; i < 20000 && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE); i++) {
        if (hits == sent && asleep_in_wait(r.tid)) {
            OK(pthread_kill(th, SIGALRM));
            sent++;
        }
        pause_ms(1);
    }
    join_soon(th, NULL);
    EQ(r.result, EINTR);
    TRUE(hits >= 1);
    EQ(r.markers, 1);
    /* No event was taken: the next read gets the writer's last one. */
    end_writer(&w);
    OK(posix_trace_getnext_event(r.log, &info, data, sizeof data, &len, &un));
    EQ(un, 0);
    EQ(info.posix_event_id, r.last);
    OK(posix_trace_close(r.log));
    close(w.log_fd);
}

static void t_log_wait_cancel(void)
{
    pthread_t th;
    struct reader r;
    struct writer w;
    void *res = NULL;
    start_reader(&r, &w, &th);
    OK(pthread_cancel(th));
    join_soon(th, &res);
    TRUE(res == PTHREAD_CANCELED);
    end_writer(&w);
    OK(posix_trace_close(r.log));
    close(w.log_fd);
}

struct others {
    trace_id_t log;
    trace_event_id_t marker;
    int status, attr, name, list, types;
    struct posix_trace_status_info st;
    char buf[TRACE_EVENT_NAME_MAX];
};

static void *call_others(void *arg)
{
    struct others *o = arg;
    trace_attr_t a;
    o->status = posix_trace_get_status(o->log, &o->st);
    o->attr = posix_trace_get_attr(o->log, &a);
    if (o->attr == 0)
        OK(posix_trace_attr_destroy(&a));
    o->name = posix_trace_eventid_get_name(o->log, o->marker, o->buf);
    o->list = posix_trace_eventtypelist_rewind(o->log);
    while (o->list == 0) {
        trace_event_id_t id;
        int un;
        o->list = posix_trace_eventtypelist_getnext_id(o->log, &id, &un);
        if (o->list != 0 || un)
            break;
        o->types++;
    }
    return NULL;
}

/* Runs call_others on `r`'s log in another thread, which must end while
 * the writer is silent (see join_soon), and checks that the status, the
 * attributes and the marker's name came back. */
static void others_answer(struct others *o, const struct reader *r)
{
    pthread_t other;
    memset(o, 0, sizeof *o);
    o->log = r->log;
    o->marker = r->marker;
    OK(pthread_create(&other, NULL, call_others, o));
    join_soon(other, NULL);
    OK(o->status);
    OK(o->attr);
    OK(o->name);
    EQ(strcmp(o->buf, "log_wait_marker"), 0);
}

static void t_log_wait_others(void)
{
    pthread_t th;
    struct reader r;
    struct writer w;
    struct others o;
    start_reader(&r, &w, &th);
    others_answer(&o, &r);
    OK(o.list);
    TRUE(o.types >= 1);
    /* The reader still waits, and gets the last event once written. */
    end_reading(&r, &w, th);
}

/* The number of open descriptors of the process. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    TRUE(d != NULL);
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static void t_log_wait_close(void)
{
    pthread_t th;
    struct reader r;
    struct writer w;
    int before;
    start_reader(&r, &w, &th);
    /* The log's own copy of the pipe's read end is open: closing ours leaves
     * it, so the count tells when the log's is closed. */
    close(w.log_fd);
    before = open_fds();
    OK(posix_trace_close(r.log));
    join_soon(th, NULL);
    EQ(r.result, EINVAL);
    EQ(open_fds(), before - 1);
    /* (The pipe has no reader left: the writer's last write fails.) */
    reap_writer(&w);
}

static void *timed_read(void *arg)
{
    struct reader *r = arg;
    struct posix_trace_event_info info;
    struct timespec until;
    char data[256];
    size_t len;
    int un;
    OK(clock_gettime(CLOCK_REALTIME, &until));
    until.tv_sec += 2;
    r->result = posix_trace_timedgetnext_event(r->log, &info, data, sizeof data, &len, &un,
                                               &until);
    return NULL;
}

static void t_log_wait_timed(void)
{
    pthread_t th, timed;
    struct reader r, t;
    struct writer w;
    start_reader(&r, &w, &th);
    t = r;
    OK(pthread_create(&timed, NULL, timed_read, &t));
    join_soon(timed, NULL);
    EQ(t.result, EINVAL);
    end_reading(&r, &w, th);
}

/* A complete log in `buf` (at most `size` bytes): `marker`, a flush, then
 * `last` with the data "partial", and the shutdown. Returns its length;
 * `*second` is where its second record holding events starts, `*cut` the
 * middle of that record. */
static size_t cut_log(unsigned char *buf, size_t size, trace_event_id_t marker,
                      trace_event_id_t last, size_t *second, size_t *cut)
{
    trace_attr_t a;
    trace_id_t t;
    size_t at = 16, n;
    ssize_t got;
    int fd = temp_file(), found = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_create_withlog(0, &a, fd, &t));
    OK(posix_trace_attr_destroy(&a));
    OK(posix_trace_start(t));
    posix_trace_event(marker, NULL, 0);
    OK(posix_trace_flush(t));
    posix_trace_event(last, "partial", 7);
    OK(posix_trace_shutdown(t));
    got = pread(fd, buf, size, 0);
    close(fd);
    TRUE(got > 16 && (size_t)got < size);
    n = (size_t)got;
    /* Records: length (32 bits, little-endian), checksum, body (kind first:
     * 3, 6 and 7 hold events). */
    while (at + 8 < n) {
        uint32_t len = (uint32_t)buf[at] | (uint32_t)buf[at + 1] << 8 |
                       (uint32_t)buf[at + 2] << 16 | (uint32_t)buf[at + 3] << 24;
        if ((buf[at + 8] == 3 || buf[at + 8] == 6 || buf[at + 8] == 7) && ++found == 2) {
            *second = at;
            *cut = at + 8 + len / 2;
            return n;
        }
        at += 8 + len;
    }
    TRUE(0 && "no second record with events");
    return 0;
}

static void t_log_wait_partial(void)
{
    static unsigned char buf[60 << 10];
    pthread_t th;
    struct reader r;
    struct others o;
    size_t n, second, cut;
    int p[2], avail = -1, i;
    memset(&r, 0, sizeof r);
    OK(posix_trace_eventid_open("log_wait_marker", &r.marker));
    OK(posix_trace_eventid_open("log_wait_last", &r.last));
    n = cut_log(buf, sizeof buf, r.marker, r.last, &second, &cut);
    OK(pipe(p));
    EQ(write(p[1], buf, second), (ssize_t)second);
    OK(posix_trace_open(p[0], &r.log));
    OK(pthread_create(&th, NULL, read_log, &r));
    for (i = 0; i < 20000; i++) {
        if (__atomic_load_n(&r.drained, __ATOMIC_ACQUIRE) && asleep_in_wait(r.tid))
            break;
        pause_ms(1);
    }
    TRUE(i < 20000);
    /* The first half of the next record: the reader takes it in (the pipe is
     * drained) and waits for the rest. */
    EQ(write(p[1], buf + second, cut - second), (ssize_t)(cut - second));
    for (i = 0; i < 20000; i++) {
        OK(ioctl(p[0], FIONREAD, &avail));
        if (avail == 0 && asleep_in_wait(r.tid))
            break;
        pause_ms(1);
    }
    EQ(avail, 0);
    others_answer(&o, &r);
    EQ(r.lasts, 0);
    /* The rest, and the end: the event reads back whole. */
    EQ(write(p[1], buf + cut, n - cut), (ssize_t)(n - cut));
    close(p[1]);
    join_soon(th, NULL);
    OK(r.result);
    EQ(r.markers, 1);
    EQ(r.lasts, 1);
    EQ(r.last_len, 7);
    EQ(memcmp(r.last_data, "partial", 7), 0);
    OK(posix_trace_close(r.log));
    close(p[0]);
}

struct opener {
    int fd;
    volatile pid_t tid;
    volatile int done;
    int result;
    trace_id_t log;
};

static void *open_log(void *arg)
{
    struct opener *o = arg;
    o->tid = (pid_t)syscall(SYS_gettid);
    o->result = posix_trace_open(o->fd, &o->log);
    __atomic_store_n(&o->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Opens the log on `fd` in a thread, sending it `sig` each time it sleeps
 * in its wait and the last handler ran, until the open ends or `until_hits`
 * handlers ran (0: no limit). */
static void open_signalled(struct opener *o, int fd, int sig, int until_hits, pthread_t *th)
{
    int i, sent = hits;
    memset(o, 0, sizeof *o);
    o->fd = fd;
    OK(pthread_create(th, NULL, open_log, o));
    for (i = 0; i < 20000 && !__atomic_load_n(&o->done, __ATOMIC_ACQUIRE); i++) {
        if (until_hits && hits >= until_hits)
            return;
        if (hits == sent && o->tid && asleep_in_wait(o->tid)) {
            OK(pthread_kill(*th, sig));
            sent++;
        }
        pause_ms(1);
    }
}

static void t_log_open_eintr(void)
{
    static unsigned char buf[60 << 10];
    struct opener o;
    struct sigaction sa;
    pthread_t th;
    trace_event_id_t marker, last;
    size_t n, second, cut;
    int p[2];
    OK(pipe(p));
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: EINTR */
    OK(sigaction(SIGALRM, &sa, NULL));
    open_signalled(&o, p[0], SIGALRM, 0, &th);
    join_soon(th, NULL);
    EQ(o.result, EINTR);
    TRUE(hits >= 1);
    /* With SA_RESTART the open goes on (the handler without it gone: it
     * could have run instead), and opens the log once written. */
    sa.sa_handler = SIG_DFL;
    OK(sigaction(SIGALRM, &sa, NULL));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    OK(sigaction(SIGUSR1, &sa, NULL));
    hits = 0;
    open_signalled(&o, p[0], SIGUSR1, 2, &th);
    TRUE(hits >= 2);
    TRUE(!__atomic_load_n(&o.done, __ATOMIC_ACQUIRE));
    OK(posix_trace_eventid_open("log_wait_marker", &marker));
    OK(posix_trace_eventid_open("log_wait_last", &last));
    n = cut_log(buf, sizeof buf, marker, last, &second, &cut);
    EQ(write(p[1], buf, n), (ssize_t)n);
    join_soon(th, NULL);
    OK(o.result);
    OK(posix_trace_close(o.log));
    close(p[0]);
    close(p[1]);
}

static void t_log_open_eintr_taken(void)
{
    static unsigned char buf[60 << 10];
    struct opener o;
    struct sigaction sa;
    pthread_t th;
    trace_event_id_t marker, last;
    size_t n, second, cut;
    int p[2], avail = -1, i;
    OK(posix_trace_eventid_open("log_wait_marker", &marker));
    OK(posix_trace_eventid_open("log_wait_last", &last));
    n = cut_log(buf, sizeof buf, marker, last, &second, &cut);
    OK(pipe(p));
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART */
    OK(sigaction(SIGALRM, &sa, NULL));
    hits = 0;
    /* The header only: the open takes it in, then waits for the rest. */
    EQ(write(p[1], buf, 16), 16);
    memset(&o, 0, sizeof o);
    o.fd = p[0];
    OK(pthread_create(&th, NULL, open_log, &o));
    for (i = 0; i < 20000; i++) {
        OK(ioctl(p[0], FIONREAD, &avail));
        if (avail == 0 && o.tid && asleep_in_wait(o.tid))
            break;
        pause_ms(1);
    }
    TRUE(i < 20000);
    /* Once the handler ran there, the open waits on (or ended: EINTR). */
    for (i = 0; i < 20000 && hits < 1; i++) {
        if (asleep_in_wait(o.tid))
            OK(pthread_kill(th, SIGALRM));
        pause_ms(1);
    }
    TRUE(hits >= 1);
    EQ(write(p[1], buf + 16, n - 16), (ssize_t)(n - 16));
    join_soon(th, NULL);
    EQ(o.result, 0);
    OK(posix_trace_close(o.log));
    close(p[0]);
    close(p[1]);
}

/* posix_trace_open on a pipe holding `bytes` (`len` of them), its write
 * end closed first if `eof`. */
static int open_pipe_holding(const void *bytes, size_t len, int eof)
{
    struct opener o;
    pthread_t th;
    int p[2];
    OK(pipe(p));
    EQ(write(p[1], bytes, len), (ssize_t)len);
    if (eof)
        close(p[1]);
    memset(&o, 0, sizeof o);
    o.fd = p[0];
    OK(pthread_create(&th, NULL, open_log, &o));
    join_soon(th, NULL);
    if (!eof)
        close(p[1]);
    close(p[0]);
    return o.result;
}

static void t_log_open_ends(void)
{
    EQ(open_pipe_holding("hello", 5, 0), EINVAL);
    EQ(open_pipe_holding("", 0, 1), EINVAL);
    EQ(open_pipe_holding("PXTRLOG", 8, 1), EINVAL);
    EQ(open_pipe_holding("PXTR", 4, 1), EINVAL);
}

static const struct test TESTS[] = {
    {"log_wait_signals", t_log_wait_signals}, {"log_wait_eintr", t_log_wait_eintr},
    {"log_wait_cancel", t_log_wait_cancel},   {"log_wait_others", t_log_wait_others},
    {"log_wait_close", t_log_wait_close},     {"log_wait_timed", t_log_wait_timed},
    {"log_wait_partial", t_log_wait_partial}, {"log_open_eintr", t_log_open_eintr},
    {"log_open_ends", t_log_open_ends},       {"log_open_eintr_taken", t_log_open_eintr_taken},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
