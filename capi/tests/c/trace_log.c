/* Trace logs read back from C, one test each: `trace_log NAME`.
 * - log_open_pipe: a log piped through `cat` opens with posix_trace_open and
 *   reads back whole; only posix_trace_rewind needs to seek (ESPIPE).
 * - log_open_live_pipe: a log written to a pipe by its stream is read from
 *   the other end while the stream records.
 * - log_name_bytes: a stream name that is not UTF-8 comes back from the log
 *   byte for byte (posix_trace_get_attr + posix_trace_attr_getname). */
#define _GNU_SOURCE
#include "trace/test_util.h"

#define N_EVENTS 20000

/* What `cat` does: writes `len` bytes of `buf` to `fd`, then closes it. */
struct cat {
    int fd;
    const char *buf;
    size_t len;
};

static void *cat_thread(void *p)
{
    struct cat *c = p;
    size_t off = 0;
    while (off < c->len) {
        ssize_t n = write(c->fd, c->buf + off, c->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        TRUE(n > 0);
        off += (size_t)n;
    }
    close(c->fd);
    return NULL;
}

/* Records `n` events of `ev` (their index as data) into a stream logged to
 * `fd` with the APPEND log policy, and shuts it down. */
static void write_log(int fd, trace_event_id_t ev, int n)
{
    trace_attr_t a;
    trace_id_t t;
    int i;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_create_withlog(0, &a, fd, &t));
    OK(posix_trace_attr_destroy(&a));
    OK(posix_trace_start(t));
    for (i = 0; i < n; i++)
        posix_trace_event(ev, &i, sizeof i);
    OK(posix_trace_stop(t));
    OK(posix_trace_shutdown(t));
}

/* Reads `l` to its end; returns how many events of `ev` it held, each
 * carrying the next index. */
static int read_events(trace_id_t l, trace_event_id_t ev, int next)
{
    struct posix_trace_event_info info;
    char buf[64];
    size_t len;
    int un, v, n = 0;
    for (;;) {
        OK(posix_trace_getnext_event(l, &info, buf, sizeof buf, &len, &un));
        if (un)
            return n;
        if (!posix_trace_eventid_equal(l, info.posix_event_id, ev))
            continue;
        EQ(len, sizeof v);
        memcpy(&v, buf, sizeof v);
        EQ(v, next + n);
        n++;
    }
}

static void t_log_open_pipe(void)
{
    trace_event_id_t ev, lev;
    trace_id_t l;
    struct posix_trace_status_info st;
    struct cat c;
    pthread_t th;
    char *bytes;
    off_t size;
    int fd = temp_file(), p[2], first;
    OK(posix_trace_eventid_open("log_pipe_cat", &ev));
    write_log(fd, ev, N_EVENTS);
    size = lseek(fd, 0, SEEK_END);
    TRUE(size > 65536); /* more than a pipe holds */
    bytes = malloc((size_t)size);
    TRUE(bytes != NULL);
    EQ(pread(fd, bytes, (size_t)size, 0), size);
    close(fd);
    OK(pipe(p));
    c.fd = p[1];
    c.buf = bytes;
    c.len = (size_t)size;
    OK(pthread_create(&th, NULL, cat_thread, &c));
    OK(posix_trace_open(p[0], &l));
    OK(posix_trace_trid_eventid_open(l, "log_pipe_cat", &lev));
    /* Nothing taken yet: rewinding is nothing to do. */
    OK(posix_trace_rewind(l));
    first = read_events(l, lev, 0);
    EQ(first, N_EVENTS);
    OK(pthread_join(th, NULL));
    OK(posix_trace_get_status(l, &st));
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN);
    /* A pipe cannot go back: rewind alone fails, as the seek would. */
    EQ(posix_trace_rewind(l), ESPIPE);
    EQ(read_events(l, lev, 0), 0);
    OK(posix_trace_close(l));
    close(p[0]);
    free(bytes);
}

/* The stream's log is the write end of a pipe; a thread reads the other end. */
struct live {
    int fd;
    trace_event_id_t ev;
    int got;
};

static void *live_reader(void *p)
{
    struct live *lv = p;
    trace_id_t l;
    trace_event_id_t lev;
    OK(posix_trace_open(lv->fd, &l));
    OK(posix_trace_trid_eventid_open(l, "log_pipe_live", &lev));
    lv->got = read_events(l, lev, 0);
    OK(posix_trace_close(l));
    return NULL;
}

static void t_log_open_live_pipe(void)
{
    struct live lv;
    pthread_t th;
    int p[2];
    OK(pipe(p));
    OK(posix_trace_eventid_open("log_pipe_live", &lv.ev));
    lv.fd = p[0];
    lv.got = -1;
    OK(pthread_create(&th, NULL, live_reader, &lv));
    /* The stream writes to its own copy of p[1]: the reader sees the end
       when the stream is shut down. */
    write_log(p[1], lv.ev, N_EVENTS);
    close(p[1]);
    OK(pthread_join(th, NULL));
    EQ(lv.got, N_EVENTS);
    close(p[0]);
}

/* Creates a stream named `name` logged to a new file, shuts it down, opens
 * the log and checks the name it gives back is `name`, byte for byte. */
static void name_round_trip(const char *name)
{
    trace_attr_t a, g;
    trace_id_t t, l;
    char buf[TRACE_NAME_MAX];
    int fd = temp_file();
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, name));
    OK(posix_trace_create_withlog(0, &a, fd, &t));
    OK(posix_trace_attr_destroy(&a));
    OK(posix_trace_shutdown(t));
    EQ(lseek(fd, 0, SEEK_SET), 0);
    OK(posix_trace_open(fd, &l));
    OK(posix_trace_get_attr(l, &g));
    memset(buf, 0x55, sizeof buf);
    OK(posix_trace_attr_getname(&g, buf));
    EQ(strlen(buf), strlen(name));
    EQ(memcmp(buf, name, strlen(name) + 1), 0);
    OK(posix_trace_close(l));
    close(fd);
}

static void t_log_name_bytes(void)
{
    char longest[TRACE_NAME_MAX];
    /* Latin-1, a lone continuation byte, a UTF-8 character cut short, and
       valid UTF-8 next to bytes that are not. */
    name_round_trip("caf\xe9");
    name_round_trip("\x80");
    name_round_trip("ab\xc3");
    name_round_trip("\xc3\xa9t\xe9 \xff\xfe");
    name_round_trip("plain");
    /* The longest name: each byte would be 3 as U+FFFD. */
    memset(longest, '\xe9', sizeof longest - 1);
    longest[sizeof longest - 1] = 0;
    name_round_trip(longest);
}

static const struct test TESTS[] = {
    {"log_open_pipe", t_log_open_pipe},
    {"log_open_live_pipe", t_log_open_live_pipe},
    {"log_name_bytes", t_log_name_bytes},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
