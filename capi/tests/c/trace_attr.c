/* The posix_trace_attr_* functions, one test each: `trace_attr NAME`. */
#define _GNU_SOURCE
#include "trace/test_util.h"

static void t_attr_init(void)
{
    trace_attr_t a;
    OK(posix_trace_attr_init(&a));
    EQ(posix_trace_attr_init(NULL), EINVAL);
}

static void t_attr_destroy(void)
{
    trace_attr_t a;
    char buf[TRACE_NAME_MAX];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_destroy(&a));
    EQ(posix_trace_attr_destroy(&a), EINVAL);
    EQ(posix_trace_attr_getname(&a, buf), EINVAL);
    EQ(posix_trace_attr_destroy(NULL), EINVAL);
}

static void t_attr_getgenversion(void)
{
    trace_attr_t a, z;
    char buf[TRACE_NAME_MAX];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getgenversion(&a, buf));
    EQ(strncmp(buf, "posixrt-trace", 13), 0);
    memset(&z, 0, sizeof z);
    EQ(posix_trace_attr_getgenversion(&z, buf), EINVAL);
    EQ(posix_trace_attr_getgenversion(&a, NULL), EINVAL);
}

static void t_attr_name(void)
{
    trace_attr_t a, z;
    char buf[TRACE_NAME_MAX], big[200];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strcmp(buf, "trace"), 0);
    OK(posix_trace_attr_setname(&a, "mystream"));
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strcmp(buf, "mystream"), 0);
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    OK(posix_trace_attr_setname(&a, big)); /* truncated, as POSIX says */
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strlen(buf), TRACE_NAME_MAX - 1);
    EQ(posix_trace_attr_setname(&a, NULL), EINVAL);
    EQ(posix_trace_attr_getname(&a, NULL), EINVAL);
    memset(&z, 0, sizeof z);
    EQ(posix_trace_attr_setname(&z, "x"), EINVAL);
    EQ(posix_trace_attr_getname(&z, buf), EINVAL);
}

/* A name is bytes, not necessarily UTF-8 (a Latin-1 locale's): one under the
 * limit is kept whole, one over it cut to TRACE_NAME_MAX - 1 bytes. */
static void t_attr_name_bytes(void)
{
    trace_attr_t a;
    char buf[TRACE_NAME_MAX], big[200];
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, "caf\xe9"));
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strcmp(buf, "caf\xe9"), 0);
    memset(big, '\xe9', sizeof big - 1);
    big[sizeof big - 1] = 0;
    OK(posix_trace_attr_setname(&a, big));
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strlen(buf), TRACE_NAME_MAX - 1);
    /* UTF-8 cut on a character's boundary: 32 two-byte characters. */
    memset(big, 0, sizeof big);
    {
        int i;
        for (i = 0; i < 40; i++) {
            big[2 * i] = '\xc3';
            big[2 * i + 1] = '\xa9';
        }
    }
    OK(posix_trace_attr_setname(&a, big));
    OK(posix_trace_attr_getname(&a, buf));
    EQ(strlen(buf), 64);
    EQ(memcmp(buf, big, 64), 0);
}

static void t_attr_getcreatetime(void)
{
    trace_attr_t a;
    struct timespec ts, now;
    trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getcreatetime(&a, &ts));
    EQ(ts.tv_sec, 0);
    t = new_stream();
    OK(posix_trace_get_attr(t, &a));
    OK(posix_trace_attr_getcreatetime(&a, &ts));
    clock_gettime(CLOCK_REALTIME, &now);
    TRUE(ts.tv_sec <= now.tv_sec && ts.tv_sec >= now.tv_sec - 5);
    EQ(posix_trace_attr_getcreatetime(&a, NULL), EINVAL);
    EQ(posix_trace_attr_getcreatetime(NULL, &ts), EINVAL);
    OK(posix_trace_shutdown(t));
}

static void t_attr_getclockres(void)
{
    trace_attr_t a;
    struct timespec ts;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getclockres(&a, &ts));
    TRUE(ts.tv_sec == 0 && ts.tv_nsec >= 1 && ts.tv_nsec < 1000000);
    EQ(posix_trace_attr_getclockres(&a, NULL), EINVAL);
}

static void t_attr_inherited(void)
{
    trace_attr_t a;
    int v = -1;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getinherited(&a, &v));
    EQ(v, POSIX_TRACE_CLOSE_FOR_CHILD);
    EQ(posix_trace_attr_setinherited(&a, POSIX_TRACE_INHERITED), EINVAL); /* unsupported */
    EQ(posix_trace_attr_setinherited(&a, 42), EINVAL);
    OK(posix_trace_attr_setinherited(&a, POSIX_TRACE_CLOSE_FOR_CHILD));
    EQ(posix_trace_attr_getinherited(&a, NULL), EINVAL);
}

static void t_attr_streamfullpolicy(void)
{
    trace_attr_t a;
    int v = -1, fd;
    trace_id_t t;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &v));
    EQ(v, POSIX_TRACE_LOOP);
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &v));
    EQ(v, POSIX_TRACE_UNTIL_FULL);
    EQ(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_APPEND), EINVAL);
    EQ(posix_trace_attr_getstreamfullpolicy(&a, NULL), EINVAL);
    OK(posix_trace_attr_setstreamfullpolicy(&a, POSIX_TRACE_FLUSH));
    EQ(posix_trace_create(0, &a, &t), EINVAL); /* FLUSH needs a log */
    /* The default with a log is FLUSH. */
    OK(posix_trace_attr_init(&a));
    fd = temp_file();
    OK(posix_trace_create_withlog(0, &a, fd, &t));
    OK(posix_trace_get_attr(t, &a));
    OK(posix_trace_attr_getstreamfullpolicy(&a, &v));
    EQ(v, POSIX_TRACE_FLUSH);
    OK(posix_trace_shutdown(t));
    close(fd);
}

static void t_attr_logfullpolicy(void)
{
    trace_attr_t a;
    int v = -1;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getlogfullpolicy(&a, &v));
    EQ(v, POSIX_TRACE_LOOP);
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_APPEND));
    OK(posix_trace_attr_getlogfullpolicy(&a, &v));
    EQ(v, POSIX_TRACE_APPEND);
    EQ(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_FLUSH), EINVAL);
    EQ(posix_trace_attr_getlogfullpolicy(&a, NULL), EINVAL);
}

static void t_attr_maxdatasize(void)
{
    trace_attr_t a;
    size_t v = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getmaxdatasize(&a, &v));
    EQ(v, 256);
    OK(posix_trace_attr_setmaxdatasize(&a, 100));
    OK(posix_trace_attr_getmaxdatasize(&a, &v));
    EQ(v, 100);
    EQ(posix_trace_attr_setmaxdatasize(&a, 5000), EINVAL);
    EQ(posix_trace_attr_getmaxdatasize(&a, NULL), EINVAL);
}

static void t_attr_getmaxsystemeventsize(void)
{
    trace_attr_t a;
    size_t v = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getmaxsystemeventsize(&a, &v));
    TRUE(v >= 16 + 256);
    EQ(posix_trace_attr_getmaxsystemeventsize(&a, NULL), EINVAL);
}

static void t_attr_getmaxusereventsize(void)
{
    trace_attr_t a;
    size_t v = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getmaxusereventsize(&a, 10, &v));
    EQ(v, 16 + 16); /* header + data rounded to 8 */
    OK(posix_trace_attr_setmaxdatasize(&a, 8));
    OK(posix_trace_attr_getmaxusereventsize(&a, 100, &v));
    EQ(v, 16 + 8); /* data beyond the maximum is not kept */
    EQ(posix_trace_attr_getmaxusereventsize(&a, 1, NULL), EINVAL);
}

static void t_attr_streamsize(void)
{
    trace_attr_t a;
    size_t v = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_getstreamsize(&a, &v));
    EQ(v, 1 << 20);
    OK(posix_trace_attr_setstreamsize(&a, 8192));
    OK(posix_trace_attr_getstreamsize(&a, &v));
    EQ(v, 8192);
    EQ(posix_trace_attr_setstreamsize(&a, 100), EINVAL);
    EQ(posix_trace_attr_getstreamsize(&a, NULL), EINVAL);
}

static void t_attr_logsize(void)
{
    trace_attr_t a;
    size_t v = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogsize(&a, 4096));
    OK(posix_trace_attr_getlogsize(&a, &v));
    EQ(v, 4096);
    EQ(posix_trace_attr_setlogsize(&a, 10), EINVAL);
    EQ(posix_trace_attr_getlogsize(&a, NULL), EINVAL);
}

/* <trace.h> names the predefined user event POSIX_TRACE_UNNAMED_USER_EVENT
 * (posix_trace_eventid_open's page spells it POSIX_TRACE_UNNAMED_USEREVENT). */
static void t_attr_unnamed_user_event(void)
{
    EQ(POSIX_TRACE_UNNAMED_USER_EVENT, POSIX_TRACE_UNNAMED_USEREVENT);
}

/* A name of bytes that are not UTF-8 (a Latin-1 locale's), at the limit, is a
 * valid name for the stream: created with it, and read back unchanged. */
static void t_attr_name_create(void)
{
    trace_attr_t a, g;
    trace_id_t t;
    char buf[TRACE_NAME_MAX], name[TRACE_NAME_MAX];
    size_t v;
    memset(name, '\xe9', sizeof name - 1);
    name[sizeof name - 1] = 0;
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setname(&a, name));
    OK(posix_trace_attr_getmaxusereventsize(&a, 8, &v));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_get_attr(t, &g));
    OK(posix_trace_attr_getname(&g, buf));
    EQ(strcmp(buf, name), 0);
    OK(posix_trace_shutdown(t));
    OK(posix_trace_attr_setname(&a, "caf\xe9"));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_get_attr(t, &g));
    OK(posix_trace_attr_getname(&g, buf));
    EQ(strcmp(buf, "caf\xe9"), 0);
    OK(posix_trace_shutdown(t));
}

static const struct test TESTS[] = {
    {"attr_init", t_attr_init},
    {"attr_destroy", t_attr_destroy},
    {"attr_getgenversion", t_attr_getgenversion},
    {"attr_name", t_attr_name},
    {"attr_name_bytes", t_attr_name_bytes},
    {"attr_name_create", t_attr_name_create},
    {"attr_getcreatetime", t_attr_getcreatetime},
    {"attr_getclockres", t_attr_getclockres},
    {"attr_inherited", t_attr_inherited},
    {"attr_streamfullpolicy", t_attr_streamfullpolicy},
    {"attr_logfullpolicy", t_attr_logfullpolicy},
    {"attr_maxdatasize", t_attr_maxdatasize},
    {"attr_getmaxsystemeventsize", t_attr_getmaxsystemeventsize},
    {"attr_getmaxusereventsize", t_attr_getmaxusereventsize},
    {"attr_streamsize", t_attr_streamsize},
    {"attr_logsize", t_attr_logsize},
    {"attr_unnamed_user_event", t_attr_unnamed_user_event},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
