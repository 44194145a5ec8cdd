/* The stream, filter, event type, recording and log functions of <trace.h>, one
 * test each (success and each documented error): `trace_functions NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <sys/syscall.h>

static void t_create(void)
{
    trace_attr_t a, z;
    trace_id_t t[TRACE_SYS_MAX], x;
    int i;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, "created"));
    for (i = 0; i < TRACE_SYS_MAX; i++)
        OK(posix_trace_create(0, i ? &a : NULL, &t[i]));
    EQ(posix_trace_create(0, NULL, &x), EAGAIN); /* TRACE_SYS_MAX streams */
    for (i = 0; i < TRACE_SYS_MAX; i++)
        OK(posix_trace_shutdown(t[i]));
    EQ(posix_trace_create(0, NULL, NULL), EINVAL);
    memset(&z, 0, sizeof z);
    EQ(posix_trace_create(0, &z, &x), EINVAL);
    OK(posix_trace_create(getpid(), NULL, &x));
    OK(posix_trace_shutdown(x));
    EQ(posix_trace_create(1, NULL, &x), ENOSYS);          /* another process */
    EQ(posix_trace_create(0x7ffffff0, NULL, &x), ESRCH); /* no such process */
}

static void t_create_withlog(void)
{
    trace_id_t t;
    int fd = temp_file(), ro = open("/dev/null", O_RDONLY);
    OK(posix_trace_create_withlog(0, NULL, fd, &t));
    OK(posix_trace_shutdown(t));
    TRUE(lseek(fd, 0, SEEK_END) > 16); /* the log was written */
    EQ(posix_trace_create_withlog(0, NULL, -1, &t), EBADF);
    EQ(posix_trace_create_withlog(0, NULL, ro, &t), EBADF);
    EQ(posix_trace_create_withlog(0, NULL, fd, NULL), EINVAL);
    EQ(posix_trace_create_withlog(1, NULL, fd, &t), ENOSYS);
    close(fd);
    close(ro);
}

static void t_start_stop(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_status_info st;
    trace_event_id_t ids[8];
    OK(posix_trace_get_status(t, &st));
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    OK(posix_trace_start(t));
    OK(posix_trace_get_status(t, &st));
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    OK(posix_trace_stop(t));
    OK(posix_trace_get_status(t, &st));
    EQ(st.posix_stream_status, POSIX_TRACE_SUSPENDED);
    EQ(drain(t, ids, 8), 2);
    EQ(ids[0], POSIX_TRACE_START);
    EQ(ids[1], POSIX_TRACE_STOP);
    EQ(posix_trace_start(BAD), EINVAL);
    EQ(posix_trace_stop(BAD), EINVAL);
    OK(posix_trace_shutdown(t));
    EQ(posix_trace_start(t), EINVAL); /* shut down */
}

static void t_shutdown(void)
{
    trace_id_t t = new_stream();
    OK(posix_trace_shutdown(t));
    EQ(posix_trace_shutdown(t), EINVAL);
    EQ(posix_trace_shutdown(BAD), EINVAL);
}

static void t_flush(void)
{
    trace_id_t t = new_stream(), l;
    int fd = temp_file();
    off_t before;
    trace_event_id_t ev;
    EQ(posix_trace_flush(t), EINVAL); /* no log */
    OK(posix_trace_shutdown(t));
    OK(posix_trace_eventid_open("flushed", &ev));
    OK(posix_trace_create_withlog(0, NULL, fd, &l));
    OK(posix_trace_start(l));
    posix_trace_event(ev, "abc", 3);
    before = lseek(fd, 0, SEEK_END);
    OK(posix_trace_flush(l));
    TRUE(lseek(fd, 0, SEEK_END) > before);
    EQ(posix_trace_flush(BAD), EINVAL);
    OK(posix_trace_shutdown(l));
    close(fd);
}

static void t_clear(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t ev, ids[8];
    OK(posix_trace_eventid_open("cleared", &ev));
    OK(posix_trace_start(t));
    posix_trace_event(ev, NULL, 0);
    posix_trace_event(ev, NULL, 0);
    OK(posix_trace_stop(t));
    OK(posix_trace_clear(t));
    EQ(drain(t, ids, 8), 0);
    EQ(posix_trace_clear(BAD), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_get_attr(void)
{
    trace_attr_t a;
    char buf[TRACE_NAME_MAX];
    size_t v;
    trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, "attrs"));
    OK(posix_trace_attr_setmaxdatasize(&a, 64));
    OK(posix_trace_create(0, &a, &t));
    memset(&a, 0, sizeof a);
    OK(posix_trace_get_attr(t, &a));
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strcmp(buf, "attrs"), 0);
    OK(posix_trace_attr_getmaxdatasize(&a, &v));
    EQ(v, 64);
    EQ(posix_trace_get_attr(t, NULL), EINVAL);
    EQ(posix_trace_get_attr(BAD, &a), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_get_status(void)
{
    trace_attr_t a;
    trace_id_t t;
    trace_event_id_t ev;
    struct posix_trace_status_info st;
    char data[64] = {0};
    int i;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamsize(&a, 4096));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("filler", &ev));
    OK(posix_trace_start(t));
    for (i = 0; i < 2000; i++)
        posix_trace_event(ev, data, sizeof data);
    OK(posix_trace_get_status(t, &st));
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_OVERRUN); /* LOOP overwrote */
    EQ(st.posix_stream_flush_status, POSIX_TRACE_NOT_FLUSHING);
    OK(posix_trace_get_status(t, &st));
    EQ(st.posix_stream_overrun_status, POSIX_TRACE_NO_OVERRUN); /* reset by the read */
    EQ(posix_trace_get_status(t, NULL), EINVAL);
    EQ(posix_trace_get_status(BAD, &st), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_filter(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t a, b, ids[16];
    trace_event_set_t s, g;
    int m, n;
    OK(posix_trace_eventid_open("filtered_a", &a));
    OK(posix_trace_eventid_open("filtered_b", &b));
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_eventset_add(a, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SET_EVENTSET));
    OK(posix_trace_get_filter(t, &g));
    OK(posix_trace_eventset_ismember(a, &g, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_ismember(b, &g, &m));
    EQ(m, 0);
    /* ADD then SUB */
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_eventset_add(b, &s));
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_ADD_EVENTSET));
    OK(posix_trace_get_filter(t, &g));
    OK(posix_trace_eventset_ismember(b, &g, &m));
    EQ(m, 1);
    OK(posix_trace_set_filter(t, &s, POSIX_TRACE_SUB_EVENTSET));
    OK(posix_trace_get_filter(t, &g));
    OK(posix_trace_eventset_ismember(b, &g, &m));
    EQ(m, 0);
    OK(posix_trace_eventset_ismember(a, &g, &m));
    EQ(m, 1);
    EQ(drain(t, ids, 16), 3); /* three FILTER events while suspended */
    EQ(ids[0], POSIX_TRACE_FILTER);
    OK(posix_trace_start(t));
    posix_trace_event(a, NULL, 0); /* filtered */
    posix_trace_event(b, NULL, 0);
    OK(posix_trace_stop(t));
    n = drain(t, ids, 16);
    EQ(n, 3);
    EQ(ids[0], POSIX_TRACE_START);
    EQ(ids[1], b);
    EQ(ids[2], POSIX_TRACE_STOP);
    EQ(posix_trace_set_filter(t, &s, 9), EINVAL);
    EQ(posix_trace_set_filter(t, NULL, POSIX_TRACE_SET_EVENTSET), EINVAL);
    EQ(posix_trace_set_filter(BAD, &s, POSIX_TRACE_SET_EVENTSET), EINVAL);
    EQ(posix_trace_get_filter(t, NULL), EINVAL);
    EQ(posix_trace_get_filter(BAD, &g), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_eventset(void)
{
    trace_event_set_t s;
    trace_event_id_t u;
    int m;
    OK(posix_trace_eventid_open("setmember", &u));
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_eventset_ismember(POSIX_TRACE_START, &s, &m));
    EQ(m, 0);
    OK(posix_trace_eventset_fill(&s, POSIX_TRACE_SYSTEM_EVENTS));
    OK(posix_trace_eventset_ismember(POSIX_TRACE_START, &s, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_ismember(traceMutexLock, &s, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_ismember(u, &s, &m));
    EQ(m, 0);
    OK(posix_trace_eventset_del(traceMutexLock, &s));
    OK(posix_trace_eventset_ismember(traceMutexLock, &s, &m));
    EQ(m, 0);
    OK(posix_trace_eventset_ismember(traceMutexUnlock, &s, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_fill(&s, POSIX_TRACE_ALL_EVENTS));
    OK(posix_trace_eventset_ismember(u, &s, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_eventset_fill(&s, POSIX_TRACE_WOPID_EVENTS));
    OK(posix_trace_eventset_ismember(POSIX_TRACE_OVERFLOW, &s, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_ismember(POSIX_TRACE_START, &s, &m));
    EQ(m, 0);
    OK(posix_trace_eventset_add(u, &s));
    OK(posix_trace_eventset_add(u, &s)); /* adding a member is not an error */
    OK(posix_trace_eventset_ismember(u, &s, &m));
    EQ(m, 1);
    OK(posix_trace_eventset_del(u, &s));
    OK(posix_trace_eventset_del(u, &s));
    OK(posix_trace_eventset_ismember(u, &s, &m));
    EQ(m, 0);
    EQ(posix_trace_eventset_fill(&s, 9), EINVAL);
    EQ(posix_trace_eventset_add(5000, &s), EINVAL);
    EQ(posix_trace_eventset_del(5000, &s), EINVAL);
    EQ(posix_trace_eventset_ismember(5000, &s, &m), EINVAL);
    EQ(posix_trace_eventset_ismember(u, &s, NULL), EINVAL);
    EQ(posix_trace_eventset_empty(NULL), EINVAL);
    EQ(posix_trace_eventset_fill(NULL, POSIX_TRACE_ALL_EVENTS), EINVAL);
    EQ(posix_trace_eventset_add(u, NULL), EINVAL);
}

static void t_eventid_open(void)
{
    trace_event_id_t a, b, c;
    char name[80];
    OK(posix_trace_eventid_open("same name", &a));
    OK(posix_trace_eventid_open("same name", &b));
    OK(posix_trace_eventid_open("other name", &c));
    EQ(a, b);
    TRUE(a != c);
    TRUE(a >= 128 && a < 1024);
    memset(name, 'n', 64);
    name[64] = 0;
    OK(posix_trace_eventid_open(name, &a)); /* 64 bytes fit */
    name[64] = 'n';
    name[65] = 0;
    EQ(posix_trace_eventid_open(name, &a), ENAMETOOLONG);
    EQ(posix_trace_eventid_open("", &a), EINVAL);
    EQ(posix_trace_eventid_open(NULL, &a), EINVAL);
    EQ(posix_trace_eventid_open("x", NULL), EINVAL);
}

/* <limits.h>: TRACE_USER_EVENT_MAX user event ids may exist at once,
 * POSIX_TRACE_UNNAMED_USER_EVENT included. */
static void t_user_event_max(void)
{
    trace_event_id_t id;
    char name[32];
    int i, named = 0;
    for (i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "user %d", i);
        OK(posix_trace_eventid_open(name, &id));
        if (id == POSIX_TRACE_UNNAMED_USEREVENT)
            break;
        named++;
    }
    EQ(named + 1, TRACE_USER_EVENT_MAX);
}

/* A call refused for a null out-pointer opens no event type. */
static void t_eventid_open_null(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t id;
    int un, n = 0;
    EQ(posix_trace_eventid_open("never opened", NULL), EINVAL);
    EQ(posix_trace_trid_eventid_open(t, "nor this", NULL), EINVAL);
    for (un = 0; !un; n++)
        OK(posix_trace_eventtypelist_getnext_id(t, &id, &un));
    EQ(n - 1, 9); /* the 8 POSIX system events and the unnamed user event */
    OK(posix_trace_shutdown(t));
}

/* POSIX keeps user and system event names apart: posix_trace_eventid_open
 * opens a user event, so a system event's name (a POSIX one, or one of the
 * oc2000 extension names) gives a user event of its own, never the system
 * event's id; a log then gives that user event's id for the name. */
static void t_eventid_open_system_name(void)
{
    static const char *const names[] = {"posix_trace_overflow", "traceMutexLock",
                                        "traceSigDelivery"};
    static const trace_event_id_t sys[] = {POSIX_TRACE_OVERFLOW, traceMutexLock,
                                           traceSigDelivery};
    trace_event_id_t u[3], id;
    trace_id_t t, l;
    char buf[TRACE_EVENT_NAME_MAX];
    int i, fd = temp_file();
    for (i = 0; i < 3; i++) {
        OK(posix_trace_eventid_open(names[i], &u[i]));
        TRUE(u[i] != sys[i]);
        TRUE(u[i] > POSIX_TRACE_UNNAMED_USEREVENT && u[i] < 1024); /* a user id */
        OK(posix_trace_eventid_open(names[i], &id));
        EQ(id, u[i]);
    }
    OK(posix_trace_create_withlog(0, NULL, fd, &t));
    for (i = 0; i < 3; i++) {
        OK(posix_trace_trid_eventid_open(t, names[i], &id));
        EQ(id, u[i]);
        OK(posix_trace_eventid_get_name(t, u[i], buf));
        EQ(strcmp(buf, names[i]), 0);
    }
    OK(posix_trace_start(t));
    posix_trace_event(u[0], "u", 1);
    OK(posix_trace_stop(t));
    OK(posix_trace_shutdown(t));
    lseek(fd, 0, SEEK_SET);
    OK(posix_trace_open(fd, &l));
    OK(posix_trace_trid_eventid_open(l, "posix_trace_overflow", &id));
    EQ(id, u[0]);
    OK(posix_trace_close(l));
    close(fd);
}

static void t_trid_eventid_open(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t a, b;
    OK(posix_trace_eventid_open("by trid", &a));
    OK(posix_trace_trid_eventid_open(t, "by trid", &b));
    EQ(a, b);
    EQ(posix_trace_trid_eventid_open(BAD, "by trid", &b), EINVAL);
    EQ(posix_trace_trid_eventid_open(t, NULL, &b), EINVAL);
    OK(posix_trace_shutdown(t));
}

/* POSIX event names are byte strings: one that is not UTF-8 opens an event
 * type as any other name does, the same bytes give the same id, different
 * bytes another id (also the UTF-8 spelling of the same text, and names that
 * decode alike with replacement characters), and the name reads back as the
 * same bytes, from the stream and from its log. */
static void t_eventid_open_bytes(void)
{
    trace_id_t t, l;
    trace_event_id_t a, b, c, d, e, f, g, x;
    char buf[TRACE_EVENT_NAME_MAX], name[80];
    int fd = temp_file();
    OK(posix_trace_eventid_open("caf\xe9", &a)); /* Latin-1 */
    OK(posix_trace_eventid_open("caf\xe9", &b));
    EQ(a, b);
    OK(posix_trace_eventid_open("caf\xe8", &c));
    OK(posix_trace_eventid_open("caf\xc3\xa9", &d));     /* UTF-8 */
    OK(posix_trace_eventid_open("caf\xef\xbf\xbd", &e)); /* U+FFFD */
    OK(posix_trace_eventid_open("caf\xc3\x83\xc2\xa9", &f));
    TRUE(a != c && a != d && a != e && a != f && c != e && d != f);
    TRUE(a >= 128 && a < 1024);
    memset(name, '\xff', 64);
    name[64] = 0;
    OK(posix_trace_eventid_open(name, &g)); /* 64 bytes fit */
    OK(posix_trace_eventid_open(name, &x));
    EQ(g, x);
    name[64] = '\xff';
    name[65] = 0;
    EQ(posix_trace_eventid_open(name, &x), ENAMETOOLONG);
    OK(posix_trace_create_withlog(0, NULL, fd, &t));
    OK(posix_trace_trid_eventid_open(t, "caf\xe9", &b));
    EQ(a, b);
    OK(posix_trace_eventid_get_name(t, a, buf));
    EQ(strcmp(buf, "caf\xe9"), 0);
    OK(posix_trace_eventid_get_name(t, g, buf));
    EQ(strlen(buf), 64);
    EQ(memcmp(buf, name, 64), 0);
    OK(posix_trace_eventid_get_name(t, d, buf));
    EQ(strcmp(buf, "caf\xc3\xa9"), 0);
    OK(posix_trace_start(t));
    posix_trace_event(a, "x", 1);
    OK(posix_trace_stop(t));
    OK(posix_trace_shutdown(t));
    lseek(fd, 0, SEEK_SET);
    OK(posix_trace_open(fd, &l));
    OK(posix_trace_trid_eventid_open(l, "caf\xe9", &b));
    EQ(a, b);
    OK(posix_trace_eventid_get_name(l, a, buf));
    EQ(strcmp(buf, "caf\xe9"), 0);
    OK(posix_trace_close(l));
    close(fd);
}

static void t_eventid_get_name(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t a;
    char buf[TRACE_EVENT_NAME_MAX];
    OK(posix_trace_eventid_open("named event", &a));
    OK(posix_trace_eventid_get_name(t, a, buf));
    EQ(strcmp(buf, "named event"), 0);
    OK(posix_trace_eventid_get_name(t, POSIX_TRACE_START, buf));
    EQ(strcmp(buf, "posix_trace_start"), 0);
    OK(posix_trace_eventid_get_name(t, traceMutexTryLock, buf));
    EQ(strcmp(buf, "traceMutexTryLock"), 0);
    EQ(posix_trace_eventid_get_name(t, 1000, buf), EINVAL); /* no such type */
    EQ(posix_trace_eventid_get_name(t, 70000, buf), EINVAL);
    EQ(posix_trace_eventid_get_name(BAD, a, buf), EINVAL);
    EQ(posix_trace_eventid_get_name(t, a, NULL), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_eventid_equal(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t a, b;
    OK(posix_trace_eventid_open("eq a", &a));
    OK(posix_trace_eventid_open("eq b", &b));
    TRUE(posix_trace_eventid_equal(t, a, a));
    EQ(posix_trace_eventid_equal(t, a, b), 0);
    TRUE(posix_trace_eventid_equal(t, traceMutexLock, traceMutexLock));
    EQ(posix_trace_eventid_equal(t, traceMutexLock, traceMutexUnlock), 0);
    OK(posix_trace_shutdown(t));
}

static void t_eventtypelist(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t a, id, first = 0;
    int un, n = 0, seen_start = 0, seen_a = 0;
    OK(posix_trace_eventid_open("listed", &a));
    for (;;) {
        OK(posix_trace_eventtypelist_getnext_id(t, &id, &un));
        if (un)
            break;
        if (n == 0)
            first = id;
        n++;
        seen_start |= id == POSIX_TRACE_START;
        seen_a |= id == a;
    }
    TRUE(n >= 10 && seen_start && seen_a);
    OK(posix_trace_eventtypelist_getnext_id(t, &id, &un));
    EQ(un, 1); /* stays at the end */
    OK(posix_trace_eventtypelist_rewind(t));
    OK(posix_trace_eventtypelist_getnext_id(t, &id, &un));
    EQ(un, 0);
    EQ(id, first);
    EQ(posix_trace_eventtypelist_getnext_id(BAD, &id, &un), EINVAL);
    EQ(posix_trace_eventtypelist_getnext_id(t, NULL, &un), EINVAL);
    EQ(posix_trace_eventtypelist_rewind(BAD), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_event(void)
{
    trace_attr_t a;
    trace_id_t t;
    trace_event_id_t ev;
    struct posix_trace_event_info info;
    char big[100], buf[100];
    size_t len;
    int un, i;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setmaxdatasize(&a, 32));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("data event", &ev));
    for (i = 0; i < 100; i++)
        big[i] = (char)i;
    posix_trace_event(ev, big, 8); /* not running: not recorded */
    OK(posix_trace_start(t));
    posix_trace_event(ev, big, 8);
    posix_trace_event(ev, big, 100);           /* cut to 32 */
    posix_trace_event(ev, big, 20);            /* read into 4 bytes */
    posix_trace_event(POSIX_TRACE_STOP, big, 4); /* system id: ignored */
    posix_trace_event(5000, big, 4);           /* not an id: ignored */
    OK(posix_trace_stop(t));
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_START);
    EQ(info.posix_pid, getpid());
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, ev);
    EQ(len, 8);
    EQ(memcmp(buf, big, 8), 0);
    EQ(info.posix_truncation_status, POSIX_TRACE_NOT_TRUNCATED);
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(len, 32);
    EQ(memcmp(buf, big, 32), 0);
    EQ(info.posix_truncation_status, POSIX_TRACE_TRUNCATED_RECORD);
    OK(posix_trace_trygetnext_event(t, &info, buf, 4, &len, &un));
    EQ(len, 4);
    EQ(info.posix_truncation_status, POSIX_TRACE_TRUNCATED_READ);
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_STOP);
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(un, 1);
    OK(posix_trace_shutdown(t));
}

/* posix_trace_event is async-signal-safe (POSIX lists it): a handler records
 * while its thread, signalled by another thread one signal at a time, records
 * too. A handler's event that interrupted its thread inside the recorder is
 * dropped and counted (POSIX_TRACE_OVERFLOW); none is lost silently and the
 * thread's own events all read back, in order. */
static trace_event_id_t h_ev;
static unsigned long h_handled;
static volatile int h_stop;
static pid_t h_tid;

static void h_on_signal(int sig)
{
    unsigned long n = __atomic_fetch_add(&h_handled, 1, __ATOMIC_RELAXED);
    (void)sig;
    posix_trace_event(h_ev, &n, sizeof n);
}

static void *h_sender(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&h_stop, __ATOMIC_RELAXED)) {
        unsigned long h = __atomic_load_n(&h_handled, __ATOMIC_RELAXED);
        syscall(SYS_tgkill, getpid(), h_tid, SIGRTMIN);
        while (__atomic_load_n(&h_handled, __ATOMIC_RELAXED) == h &&
               !__atomic_load_n(&h_stop, __ATOMIC_RELAXED))
            ;
    }
    return NULL;
}

static void t_event_in_handler(void)
{
    trace_attr_t a;
    trace_id_t t;
    trace_event_id_t ev;
    struct posix_trace_event_info info;
    struct sigaction sa;
    pthread_t sender;
    time_t give_up = time(NULL) + 5;
    unsigned long n = 0, next = 0, handlers = 0, lost = 0, first = ~0ul;
    char buf[64];
    size_t len;
    int un;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setstreamsize(&a, 96u << 20));
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_eventid_open("main event", &ev));
    OK(posix_trace_eventid_open("handler event", &h_ev));
    OK(posix_trace_start(t));
    posix_trace_event(ev, &first, sizeof first); /* maps this thread's sub-buffer */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h_on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    OK(sigaction(SIGRTMIN, &sa, NULL));
    h_tid = (pid_t)syscall(SYS_gettid);
    OK(pthread_create(&sender, NULL, h_sender, NULL));
    while (__atomic_load_n(&h_handled, __ATOMIC_RELAXED) < 2000 && time(NULL) < give_up) {
        int i;
        if (n >= 3000000) {
            if (__atomic_load_n(&h_handled, __ATOMIC_RELAXED) >= 10)
                break;
            continue;
        }
        for (i = 0; i < 256; i++, n++)
            posix_trace_event(ev, &n, sizeof n);
    }
    __atomic_store_n(&h_stop, 1, __ATOMIC_RELAXED);
    OK(pthread_join(sender, NULL));
    OK(posix_trace_stop(t));
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
        if (un)
            break;
        if (info.posix_event_id == ev) {
            unsigned long v;
            memcpy(&v, buf, sizeof v);
            if (v != first) {
                EQ(v, next); /* the thread's own events, each once, in order */
                next++;
            }
        } else if (info.posix_event_id == h_ev) {
            handlers++;
        } else if (info.posix_event_id == POSIX_TRACE_OVERFLOW) {
            unsigned long long c;
            memcpy(&c, buf, sizeof c);
            lost += (unsigned long)c;
        }
    }
    OK(posix_trace_shutdown(t));
    EQ(next, n);
    TRUE(h_handled >= 10);
    EQ(handlers + lost, h_handled);
}

/* Data of 0 to 9 bytes, recorded through trace.h's inline path (sizes known at
 * compile time: up to 8 bytes are packed into a word) and through the function
 * itself: each event reads back with its own length and bytes. */
#define EV_SIZE(n)                                                                            \
    do {                                                                                      \
        posix_trace_event(ev, bytes, n);                                                      \
        (posix_trace_event)(ev, bytes, n);                                                    \
    } while (0)

static void t_event_sizes(void)
{
    trace_id_t t;
    trace_event_id_t ev;
    struct posix_trace_event_info info;
    unsigned char bytes[16], buf[16];
    size_t len, n;
    int un, i;
    OK(posix_trace_create(0, NULL, &t));
    OK(posix_trace_eventid_open("sized event", &ev));
    for (i = 0; i < 16; i++)
        bytes[i] = (unsigned char)(0xa0 + i);
    OK(posix_trace_start(t));
    EV_SIZE(0);
    EV_SIZE(1);
    EV_SIZE(2);
    EV_SIZE(3);
    EV_SIZE(4);
    EV_SIZE(5);
    EV_SIZE(6);
    EV_SIZE(7);
    EV_SIZE(8);
    EV_SIZE(9);
    OK(posix_trace_stop(t));
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_START);
    for (n = 0; n < 20; n++) {
        memset(buf, 0, sizeof buf);
        OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
        EQ(un, 0);
        EQ(info.posix_event_id, ev);
        EQ(len, n / 2);
        EQ(memcmp(buf, bytes, n / 2), 0);
        EQ(buf[n / 2], 0); /* nothing past the data */
        EQ(info.posix_truncation_status, POSIX_TRACE_NOT_TRUNCATED);
    }
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_STOP);
    OK(posix_trace_shutdown(t));
}

static trace_event_id_t late_ev;

static void *late_poster(void *arg)
{
    struct timespec d = {0, 50000000};
    (void)arg;
    nanosleep(&d, NULL);
    posix_trace_event(late_ev, "late", 4);
    return NULL;
}

static void t_getnext(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_event_info info;
    char buf[16];
    size_t len;
    int un;
    pthread_t th;
    OK(posix_trace_eventid_open("late event", &late_ev));
    OK(posix_trace_start(t));
    OK(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_START);
    pthread_create(&th, NULL, late_poster, NULL);
    /* Blocks until the other thread records. */
    OK(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(un, 0);
    EQ(info.posix_event_id, late_ev);
    EQ(memcmp(buf, "late", 4), 0);
    TRUE(info.posix_thread_id != 0);
    pthread_join(th, NULL);
    OK(posix_trace_stop(t));
    OK(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_STOP);
    OK(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(un, 1); /* suspended and empty: does not block */
    EQ(posix_trace_getnext_event(BAD, &info, buf, sizeof buf, &len, &un), EINVAL);
    EQ(posix_trace_getnext_event(t, NULL, buf, sizeof buf, &len, &un), EINVAL);
    EQ(posix_trace_getnext_event(t, &info, NULL, 4, &len, &un), EINVAL);
    EQ(posix_trace_getnext_event(t, &info, buf, sizeof buf, NULL, &un), EINVAL);
    EQ(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, NULL), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_timedgetnext(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_event_info info;
    char buf[16];
    size_t len;
    int un;
    struct timespec at, bad = {0, 2000000000L};
    OK(posix_trace_start(t));
    clock_gettime(CLOCK_REALTIME, &at);
    OK(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, &at));
    EQ(info.posix_event_id, POSIX_TRACE_START);
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_nsec += 30000000;
    if (at.tv_nsec >= 1000000000) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000;
    }
    EQ(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, &at), ETIMEDOUT);
    EQ(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, &bad), EINVAL);
    EQ(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, NULL), EINVAL);
    EQ(posix_trace_timedgetnext_event(BAD, &info, buf, sizeof buf, &len, &un, &at), EINVAL);
    OK(posix_trace_shutdown(t));
}

/* A deadline before 1970 is a time like any other, long past: POSIX makes only
 * a bad tv_nsec EINVAL. An event there is returned; none is ETIMEDOUT. */
static void t_timedgetnext_past(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_event_info info;
    char buf[16];
    size_t len;
    int un;
    struct timespec past = {-5, 0};
    OK(posix_trace_start(t));
    OK(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, &past));
    EQ(un, 0);
    EQ(info.posix_event_id, POSIX_TRACE_START);
    EQ(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, &past), ETIMEDOUT);
    OK(posix_trace_shutdown(t));
}

static void t_trygetnext(void)
{
    trace_id_t t = new_stream();
    struct posix_trace_event_info info;
    char buf[16];
    size_t len;
    int un;
    OK(posix_trace_start(t));
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(un, 0);
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(un, 1); /* running and empty: returns at once */
    EQ(posix_trace_trygetnext_event(BAD, &info, buf, sizeof buf, &len, &un), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_open_rewind_close(void)
{
    trace_id_t t, l;
    trace_event_id_t ev, id;
    struct posix_trace_event_info info;
    struct timespec at = {0, 0};
    char buf[16];
    size_t len;
    int un, n, fd = temp_file(), junk = temp_file(), wo = open("/dev/null", O_WRONLY);
    trace_attr_t a;
    OK(posix_trace_eventid_open("logged", &ev));
    OK(posix_trace_create_withlog(0, NULL, fd, &t));
    OK(posix_trace_start(t));
    posix_trace_event(ev, "one", 3);
    posix_trace_event(ev, "two", 3);
    OK(posix_trace_stop(t));
    /* An active stream with a log is read through its log (POSIX reads
       active streams without one): EINVAL, and nothing is taken from it. */
    EQ(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, &un), EINVAL);
    EQ(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un), EINVAL);
    EQ(posix_trace_timedgetnext_event(t, &info, buf, sizeof buf, &len, &un, &at), EINVAL);
    EQ(posix_trace_rewind(t), EINVAL); /* an active stream */
    EQ(posix_trace_close(t), EINVAL);
    OK(posix_trace_shutdown(t));
    lseek(fd, 0, SEEK_SET);
    OK(posix_trace_open(fd, &l));
    for (n = 0;; n++) {
        OK(posix_trace_getnext_event(l, &info, buf, sizeof buf, &len, &un));
        if (un)
            break;
        if (n == 0)
            EQ(info.posix_event_id, POSIX_TRACE_START);
        if (n == 1) {
            EQ(info.posix_event_id, ev);
            EQ(memcmp(buf, "one", 3), 0);
        }
        if (n == 2)
            EQ(memcmp(buf, "two", 3), 0);
        if (n == 3)
            EQ(info.posix_event_id, POSIX_TRACE_STOP);
        /* shutdown flushes the stream to the log */
        if (n == 4)
            EQ(info.posix_event_id, POSIX_TRACE_FLUSH_START);
        if (n == 5)
            EQ(info.posix_event_id, POSIX_TRACE_FLUSH_STOP);
    }
    EQ(n, 6);
    OK(posix_trace_eventid_get_name(l, ev, buf));
    EQ(strcmp(buf, "logged"), 0);
    OK(posix_trace_trid_eventid_open(l, "logged", &id));
    EQ(id, ev);
    EQ(posix_trace_trid_eventid_open(l, "never logged", &id), EINVAL);
    OK(posix_trace_get_attr(l, &a));
    EQ(posix_trace_start(l), EINVAL);
    EQ(posix_trace_trygetnext_event(l, &info, buf, sizeof buf, &len, &un), EINVAL);
    EQ(posix_trace_timedgetnext_event(l, &info, buf, sizeof buf, &len, &un, &at), EINVAL);
    EQ(posix_trace_shutdown(l), EINVAL); /* a log is closed, not shut down */
    OK(posix_trace_rewind(l));
    for (n = 0;; n++) {
        OK(posix_trace_getnext_event(l, &info, buf, sizeof buf, &len, &un));
        if (un)
            break;
    }
    EQ(n, 6);
    OK(posix_trace_close(l));
    EQ(posix_trace_close(l), EINVAL);
    EQ(posix_trace_rewind(l), EINVAL);
    EQ(posix_trace_rewind(BAD), EINVAL);
    EQ(write(junk, "not a trace log at all", 22), 22);
    lseek(junk, 0, SEEK_SET);
    EQ(posix_trace_open(junk, &l), EINVAL);
    EQ(posix_trace_open(-1, &l), EBADF);
    EQ(posix_trace_open(wo, &l), EBADF);
    EQ(posix_trace_open(fd, NULL), EINVAL);
    close(fd);
    close(junk);
    close(wo);
}

/* Reads the mutex events on `m` left in `t` into kinds[] (1 lock, 2 trylock,
 * 3 unlock) and checks their payload. */

static const struct test TESTS[] = {
    {"create", t_create},
    {"create_withlog", t_create_withlog},
    {"start_stop", t_start_stop},
    {"shutdown", t_shutdown},
    {"flush", t_flush},
    {"clear", t_clear},
    {"get_attr", t_get_attr},
    {"get_status", t_get_status},
    {"filter", t_filter},
    {"eventset", t_eventset},
    {"eventid_open", t_eventid_open},
    {"user_event_max", t_user_event_max},
    {"eventid_open_null", t_eventid_open_null},
    {"eventid_open_system_name", t_eventid_open_system_name},
    {"trid_eventid_open", t_trid_eventid_open},
    {"eventid_open_bytes", t_eventid_open_bytes},
    {"eventid_get_name", t_eventid_get_name},
    {"eventid_equal", t_eventid_equal},
    {"eventtypelist", t_eventtypelist},
    {"event", t_event},
    {"event_sizes", t_event_sizes},
    {"event_in_handler", t_event_in_handler},
    {"getnext", t_getnext},
    {"timedgetnext", t_timedgetnext},
    {"timedgetnext_past", t_timedgetnext_past},
    {"trygetnext", t_trygetnext},
    {"open_rewind_close", t_open_rewind_close},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
