/* Conformance of <trace.h> to the POSIX text, one test each:
 * `trace_conform NAME`. Each test is a defect that was found and fixed. */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <sys/wait.h>

/* Reads the next event of `t` into `buf` (`num` bytes); returns its
 * posix_truncation_status and stores the data length. */
static int next_truncation(trace_id_t t, char *buf, size_t num, size_t *len)
{
    struct posix_trace_event_info info;
    int un;
    OK(posix_trace_getnext_event(t, &info, buf, num, len, &un));
    EQ(un, 0);
    return info.posix_truncation_status;
}

/* POSIX (the posix_trace_event_info members): POSIX_TRACE_TRUNCATED_READ,
 * data cut because the reader's buffer was too small, overrides
 * POSIX_TRACE_TRUNCATED_RECORD. An event cut to the maximum data size when
 * recorded and cut again by a small read buffer is TRUNCATED_READ, read from
 * the stream and read from its log (it was TRUNCATED_RECORD). */
static void t_conf_truncated_read_overrides_record(void)
{
    trace_attr_t a;
    trace_id_t t, l;
    trace_event_id_t ev;
    struct posix_trace_event_info info;
    char big[100], buf[100];
    size_t len;
    int i, pass, fd = temp_file();
    for (i = 0; i < 100; i++)
        big[i] = (char)i;
    OK(posix_trace_eventid_open("cut twice", &ev));
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setmaxdatasize(&a, 16));
    for (pass = 0; pass < 2; pass++) {
        if (pass == 0)
            OK(posix_trace_create(0, &a, &t));
        else
            OK(posix_trace_create_withlog(0, &a, fd, &t));
        OK(posix_trace_start(t));
        posix_trace_event(ev, big, 100); /* cut to 16, read into 4 */
        posix_trace_event(ev, big, 100); /* cut to 16, read whole */
        posix_trace_event(ev, big, 10);  /* whole, read into 4 */
        posix_trace_event(ev, big, 10);  /* whole */
        OK(posix_trace_stop(t));
        if (pass == 1) {
            OK(posix_trace_shutdown(t));
            lseek(fd, 0, SEEK_SET);
            OK(posix_trace_open(fd, &l));
            t = l;
        }
        EQ(next_truncation(t, buf, sizeof buf, &len), POSIX_TRACE_NOT_TRUNCATED); /* START */
        EQ(next_truncation(t, buf, 4, &len), POSIX_TRACE_TRUNCATED_READ);
        EQ(len, 4);
        EQ(memcmp(buf, big, 4), 0);
        EQ(next_truncation(t, buf, sizeof buf, &len), POSIX_TRACE_TRUNCATED_RECORD);
        EQ(len, 16);
        EQ(next_truncation(t, buf, 4, &len), POSIX_TRACE_TRUNCATED_READ);
        EQ(len, 4);
        EQ(next_truncation(t, buf, sizeof buf, &len), POSIX_TRACE_NOT_TRUNCATED);
        EQ(len, 10);
        /* No buffer at all: every byte of data is cut at read. */
        if (pass == 1) {
            OK(posix_trace_rewind(t));
            EQ(next_truncation(t, NULL, 0, &len), POSIX_TRACE_NOT_TRUNCATED); /* START */
            EQ(next_truncation(t, NULL, 0, &len), POSIX_TRACE_TRUNCATED_READ);
            EQ(len, 0);
            OK(posix_trace_close(t));
        } else {
            OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &i));
            EQ(info.posix_event_id, POSIX_TRACE_STOP);
            OK(posix_trace_shutdown(t));
        }
    }
    close(fd);
}

/* trace.h defines posix_trace_event as a macro too (POSIX allows it); the
 * macro must do what the function does. The function takes a null data
 * pointer as no data, whatever the length; the macro's inline path for data
 * of a size known at compile time copied from it (a crash). Both now record
 * the event with no data. The pointer is volatile so the compiler cannot see
 * it is null. */
static void t_conf_event_null_data_inline(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t ev;
    struct posix_trace_event_info info;
    const void *volatile nil = NULL;
    char buf[16];
    size_t len;
    int un, i;
    OK(posix_trace_eventid_open("null data", &ev));
    OK(posix_trace_start(t));
    (posix_trace_event)(ev, nil, 4); /* the function */
    posix_trace_event(ev, nil, 4);   /* the macro */
    posix_trace_event(ev, nil, 0);
    OK(posix_trace_stop(t));
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_START);
    for (i = 0; i < 3; i++) {
        OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
        EQ(un, 0);
        EQ(info.posix_event_id, ev);
        EQ(len, 0);
        EQ(info.posix_truncation_status, POSIX_TRACE_NOT_TRUNCATED);
    }
    OK(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_STOP);
    OK(posix_trace_shutdown(t));
}

/* POSIX (posix_trace_shutdown): "Any thread blocked on one of the
 * trace_getnext_event() functions (which specified this trid) before this
 * call is unblocked with the error [EINVAL]." A reader waits on a running,
 * empty stream, in posix_trace_getnext_event or (no deadline near)
 * posix_trace_timedgetnext_event, while the main thread shuts the stream
 * down: the read ends with EINVAL, whether it was already waiting or not yet
 * called (then the id is already invalid). It used to end with 0, and
 * *unavailable set or the POSIX_TRACE_STOP event the shutdown recorded. */
static trace_id_t sd_trid;
static int sd_timed, sd_result;

static void *sd_reader(void *arg)
{
    struct posix_trace_event_info info;
    struct timespec far;
    char buf[16];
    size_t len;
    int un;
    (void)arg;
    clock_gettime(CLOCK_REALTIME, &far);
    far.tv_sec += 60;
    if (sd_timed)
        sd_result = posix_trace_timedgetnext_event(sd_trid, &info, buf, sizeof buf, &len, &un,
                                                   &far);
    else
        sd_result = posix_trace_getnext_event(sd_trid, &info, buf, sizeof buf, &len, &un);
    return NULL;
}

static void t_conf_shutdown_unblocks_reader_einval(void)
{
    trace_event_id_t ids[4];
    pthread_t th;
    int i;
    for (i = 0; i < 20; i++) {
        struct timespec d = {0, 1000000L * (i % 10)};
        sd_timed = i & 1;
        sd_trid = new_stream();
        OK(posix_trace_start(sd_trid));
        EQ(drain(sd_trid, ids, 4), 1); /* START: now running and empty */
        sd_result = -1;
        OK(pthread_create(&th, NULL, sd_reader, NULL));
        nanosleep(&d, NULL); /* often waiting by now; EINVAL either way */
        OK(posix_trace_shutdown(sd_trid));
        OK(pthread_join(th, NULL));
        EQ(sd_result, EINVAL);
    }
}

/* POSIX (posix_trace_create): the stream id "is valid only in the process
 * that made the function call. If it is used from another process, that is a
 * child process, ... these functions shall return with the error [EINVAL]."
 * A forked child got 0 from posix_trace_get_status, _get_attr, _shutdown,
 * _get_filter, _set_filter, _eventid_get_name, _trid_eventid_open and
 * _eventtypelist_*, on its parent's stream (the calls that reach the
 * recording core were EINVAL already). Every call is EINVAL in the child;
 * the parent's stream, and a stream of the child's own, work. */
static void t_conf_child_trid_einval(void)
{
    trace_id_t t = new_stream(), mine;
    trace_event_id_t ev, id;
    trace_event_set_t set;
    trace_attr_t a;
    struct posix_trace_status_info st;
    struct posix_trace_event_info info;
    char buf[TRACE_EVENT_NAME_MAX];
    size_t len;
    int un, status;
    pid_t c;
    OK(posix_trace_eventid_open("forked", &ev));
    OK(posix_trace_eventset_empty(&set));
    OK(posix_trace_start(t));
    alarm(20);
    c = fork();
    TRUE(c >= 0);
    if (c == 0) {
        EQ(posix_trace_get_status(t, &st), EINVAL);
        EQ(posix_trace_get_attr(t, &a), EINVAL);
        EQ(posix_trace_get_filter(t, &set), EINVAL);
        EQ(posix_trace_set_filter(t, &set, POSIX_TRACE_SET_EVENTSET), EINVAL);
        EQ(posix_trace_eventid_get_name(t, ev, buf), EINVAL);
        EQ(posix_trace_trid_eventid_open(t, "forked", &id), EINVAL);
        EQ(posix_trace_eventtypelist_getnext_id(t, &id, &un), EINVAL);
        EQ(posix_trace_eventtypelist_rewind(t), EINVAL);
        EQ(posix_trace_trygetnext_event(t, &info, buf, sizeof buf, &len, &un), EINVAL);
        EQ(posix_trace_getnext_event(t, &info, buf, sizeof buf, &len, &un), EINVAL);
        EQ(posix_trace_stop(t), EINVAL);
        EQ(posix_trace_clear(t), EINVAL);
        EQ(posix_trace_shutdown(t), EINVAL);
        mine = new_stream();
        TRUE(mine != t);
        OK(posix_trace_get_status(mine, &st));
        EQ(posix_trace_get_status(t, &st), EINVAL);
        OK(posix_trace_shutdown(mine));
        exit(0);
    }
    EQ(waitpid(c, &status, 0), c);
    TRUE(WIFEXITED(status));
    EQ(WEXITSTATUS(status), 0);
    OK(posix_trace_get_status(t, &st));
    EQ(st.posix_stream_status, POSIX_TRACE_RUNNING);
    OK(posix_trace_eventid_get_name(t, ev, buf));
    EQ(strcmp(buf, "forked"), 0);
    OK(posix_trace_stop(t));
    OK(posix_trace_shutdown(t));
}

/* POSIX (posix_trace_eventset_fill): fill "shall initialize the trace event
 * type set ... such that the set of trace event types defined by the
 * argument what shall be included in the set", and it may be the first call
 * on a set (listings 8.22 and 8.24 fill a set that is a local variable never
 * emptied). It added to what the set held: after a fill with
 * POSIX_TRACE_ALL_EVENTS, or on a set of garbage, a fill with
 * POSIX_TRACE_SYSTEM_EVENTS kept user events in it (a filter set from it
 * then dropped them). Now it holds what `what` names, and nothing else. */
static void t_conf_eventset_fill_initializes(void)
{
    trace_event_set_t s;
    trace_event_id_t u;
    int m, pass;
    OK(posix_trace_eventid_open("not a system event", &u));
    for (pass = 0; pass < 2; pass++) {
        if (pass == 0)
            OK(posix_trace_eventset_fill(&s, POSIX_TRACE_ALL_EVENTS));
        else
            memset(&s, 0xa5, sizeof s); /* as a stack variable may hold */
        OK(posix_trace_eventset_fill(&s, POSIX_TRACE_SYSTEM_EVENTS));
        OK(posix_trace_eventset_ismember(u, &s, &m));
        EQ(m, 0);
        OK(posix_trace_eventset_ismember(POSIX_TRACE_UNNAMED_USEREVENT, &s, &m));
        EQ(m, 0);
        OK(posix_trace_eventset_ismember(POSIX_TRACE_START, &s, &m));
        EQ(m, 1);
        OK(posix_trace_eventset_ismember(traceMutexLock, &s, &m));
        EQ(m, 1);
        OK(posix_trace_eventset_fill(&s, POSIX_TRACE_WOPID_EVENTS));
        OK(posix_trace_eventset_ismember(POSIX_TRACE_START, &s, &m));
        EQ(m, 0);
        OK(posix_trace_eventset_ismember(u, &s, &m));
        EQ(m, 0);
        OK(posix_trace_eventset_ismember(POSIX_TRACE_OVERFLOW, &s, &m));
        EQ(m, 1);
    }
}

/* POSIX (posix_trace_eventtypelist_getnext_id): successive calls return "the
 * next trace event type identifier" of the list. The list is the process's
 * event types in id order, and a system event type can join it while a
 * program walks it (the extension events register on first use: here by an
 * eventset call, as by the first interposed mutex call). The position was an
 * index into the list, so a type joining before it made the next call
 * return the previous id again. Every id now comes once; a user event opened
 * during the walk still comes. */
static void t_conf_eventtypelist_no_repeat(void)
{
    trace_id_t t = new_stream();
    trace_event_id_t id, late, seen[1100];
    trace_event_set_t s;
    int un, n = 0, i, j, m, late_seen = 0;
    OK(posix_trace_eventid_open("walk a", &id));
    OK(posix_trace_eventid_open("walk b", &id));
    for (i = 0; i < 11; i++) {
        OK(posix_trace_eventtypelist_getnext_id(t, &id, &un));
        EQ(un, 0);
        seen[n++] = id;
    }
    /* System types join the list below the position. */
    OK(posix_trace_eventset_empty(&s));
    OK(posix_trace_eventset_ismember(traceSigCatchFunc, &s, &m));
    OK(posix_trace_eventset_ismember(traceMutexTryLock, &s, &m));
    OK(posix_trace_eventid_open("walk late", &late));
    for (;;) {
        OK(posix_trace_eventtypelist_getnext_id(t, &id, &un));
        if (un)
            break;
        TRUE(n < 1100);
        seen[n++] = id;
    }
    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++)
            TRUE(seen[i] != seen[j]);
        late_seen |= seen[i] == late;
    }
    TRUE(late_seen);
    OK(posix_trace_shutdown(t));
}

/* POSIX (posix_trace_shutdown): it "shall not return until all the resources
 * associated with the trace stream have been freed". With a reader waiting
 * on the stream, it returned at once and the stream lived on until the
 * reader let go: right after it, with TRACE_SYS_MAX streams made, creating
 * one more failed with EAGAIN (every round). It now waits for the calls
 * still on the stream (the reader ends with EINVAL) and frees it first. */
static void t_conf_shutdown_frees_before_return(void)
{
    trace_id_t t[TRACE_SYS_MAX], x;
    trace_event_id_t ids[4];
    pthread_t th;
    int round, i;
    for (round = 0; round < 10; round++) {
        struct timespec d = {0, 5000000L};
        for (i = 0; i < TRACE_SYS_MAX; i++)
            OK(posix_trace_create(0, NULL, &t[i]));
        sd_trid = t[0];
        sd_timed = round & 1;
        OK(posix_trace_start(sd_trid));
        EQ(drain(sd_trid, ids, 4), 1);
        sd_result = -1;
        OK(pthread_create(&th, NULL, sd_reader, NULL));
        nanosleep(&d, NULL); /* often waiting by now */
        OK(posix_trace_shutdown(sd_trid));
        OK(posix_trace_create(0, NULL, &x)); /* its slot is free */
        OK(pthread_join(th, NULL));
        EQ(sd_result, EINVAL);
        OK(posix_trace_shutdown(x));
        for (i = 1; i < TRACE_SYS_MAX; i++)
            OK(posix_trace_shutdown(t[i]));
    }
}

/* POSIX (posix_trace_create_withlog): EINVAL if the log's file "refers to a
 * file with a file type that is not compatible with the log policy". A
 * POSIX_TRACE_LOOP log (the default) is rewritten from its start once it
 * wraps, which a pipe cannot be: it was accepted, and every flush after the
 * wrap failed with ESPIPE. An UNTIL_FULL log on a pipe is fine. */
static void t_conf_loop_log_on_pipe_einval(void)
{
    trace_attr_t a;
    trace_id_t t;
    int p[2];
    OK(pipe(p));
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setlogsize(&a, 4096));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_UNTIL_FULL));
    OK(posix_trace_create_withlog(0, &a, p[1], &t));
    OK(posix_trace_shutdown(t));
    OK(posix_trace_attr_setlogfullpolicy(&a, POSIX_TRACE_LOOP));
    EQ(posix_trace_create_withlog(0, &a, p[1], &t), EINVAL);
    OK(posix_trace_attr_destroy(&a));
    close(p[0]);
    close(p[1]);
}

/* Reads the ids of the events of the log in `fd` (from its start) into
 * `ids`; returns their count. */
static int log_ids(int fd, trace_event_id_t *ids, int max)
{
    struct posix_trace_event_info info;
    trace_id_t l;
    char buf[64];
    size_t len;
    int un, n = 0;
    lseek(fd, 0, SEEK_SET);
    OK(posix_trace_open(fd, &l));
    for (;;) {
        OK(posix_trace_getnext_event(l, &info, buf, sizeof buf, &len, &un));
        if (un)
            break;
        if (n < max)
            ids[n] = info.posix_event_id;
        n++;
    }
    OK(posix_trace_close(l));
    return n;
}

/* POSIX (posix_trace_shutdown): it "shall stop the tracing of trace events
 * in the trace stream identified by trid, as if posix_trace_stop() had been
 * invoked", then flushes the stream to its log. A running stream shut down
 * without a stop left a log with no POSIX_TRACE_STOP: its last event, then
 * the final flush's FLUSH_START and FLUSH_STOP. The log now has the STOP
 * after the last event; a stream already stopped gets no second one (a stop
 * has no effect then). */
static void t_conf_shutdown_records_stop(void)
{
    trace_id_t t;
    trace_event_id_t ev, ids[16];
    int pass, n, fd;
    OK(posix_trace_eventid_open("shut down running", &ev));
    for (pass = 0; pass < 2; pass++) {
        fd = temp_file();
        OK(posix_trace_create_withlog(0, NULL, fd, &t));
        OK(posix_trace_start(t));
        posix_trace_event(ev, "x", 1);
        if (pass == 1)
            OK(posix_trace_stop(t));
        OK(posix_trace_shutdown(t));
        n = log_ids(fd, ids, 16);
        EQ(n, 5);
        EQ(ids[0], POSIX_TRACE_START);
        EQ(ids[1], ev);
        EQ(ids[2], POSIX_TRACE_STOP);
        EQ(ids[3], POSIX_TRACE_FLUSH_START);
        EQ(ids[4], POSIX_TRACE_FLUSH_STOP);
        close(fd);
    }
}

/* POSIX (posix_trace_shutdown): "If the process exits, invokes a member of
 * the exec family of functions, or is terminated, the trace streams that the
 * process had created and that have not yet been shut down, shall be
 * automatically shut down as if an explicit call were made to the
 * posix_trace_shutdown() function." A process that returned from main or
 * called exit with a stream still running left its log as the exit's last
 * flush wrote it: no STOP, no final flush, no end record (a reader took it
 * for a log cut short). It now reads as after posix_trace_shutdown: the
 * STOP, then FLUSH_START and FLUSH_STOP. */
static int ex_fd;
static trace_event_id_t ex_ev;

static int exit_traced(void)
{
    trace_id_t t;
    if (posix_trace_create_withlog(0, NULL, ex_fd, &t) != 0 || posix_trace_start(t) != 0)
        return 3;
    posix_trace_event(ex_ev, "x", 1);
    exit(0);
}

static void t_conf_exit_shuts_down(void)
{
    trace_event_id_t ids[16];
    int status;
    pid_t c;
    OK(posix_trace_eventid_open("exits running", &ex_ev));
    ex_fd = temp_file();
    c = fork();
    TRUE(c >= 0);
    if (c == 0) {
        alarm(20);
        _exit(exit_traced());
    }
    EQ(waitpid(c, &status, 0), c);
    TRUE(WIFEXITED(status));
    EQ(WEXITSTATUS(status), 0);
    EQ(log_ids(ex_fd, ids, 16), 5);
    EQ(ids[0], POSIX_TRACE_START);
    EQ(ids[1], ex_ev);
    EQ(ids[2], POSIX_TRACE_STOP);
    EQ(ids[3], POSIX_TRACE_FLUSH_START);
    EQ(ids[4], POSIX_TRACE_FLUSH_STOP);
    close(ex_fd);
}

/* The same POSIX text: a process that "invokes a member of the exec family
 * of functions" has its streams shut down as by posix_trace_shutdown, which
 * flushes them to their logs. A stream's events wait in memory for its
 * flusher's next write (every 100 ms by default), which an exec forestalls:
 * a program that recorded events and then called execv, execve, execvp,
 * execvpe or execveat left a log without them (only its header). libposixrt now writes
 * every log before the exec; a log so ends as that of a process killed
 * (its events, no end record). An exec that fails leaves the streams as
 * they were. (execl, execle and execlp: conf_execl_flushes_log.) */
/* execveat: glibc 2.34 and later (else execve stands in). */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define EXECVEAT(argv, envp) execveat(AT_FDCWD, "/bin/true", argv, envp, 0)
#else
#define EXECVEAT(argv, envp) execve("/bin/true", argv, envp)
#endif

static int exec_traced(int how)
{
    static char *const argv[] = {"true", NULL};
    static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
    trace_id_t t;
    if (posix_trace_create_withlog(0, NULL, ex_fd, &t) != 0 || posix_trace_start(t) != 0)
        return 3;
    posix_trace_event(ex_ev, "1", 1);
    posix_trace_event(ex_ev, "2", 1);
    if (how == 0)
        execv("/bin/true", argv);
    else if (how == 1)
        execve("/bin/true", argv, envp);
    else if (how == 2)
        execvp("true", argv);
    else if (how == 3)
        execvpe("true", argv, envp);
    else if (how == 4)
        EXECVEAT(argv, envp);
    else if (execv("/nonexistent/posixrt-test", argv) == -1 && errno == ENOENT) {
        posix_trace_event(ex_ev, "3", 1);
        return posix_trace_shutdown(t) == 0 ? 0 : 5;
    }
    return 4;
}

/* Waits for the child c, which must exit 0, and checks the log ex_fd: START
 * and the two events the child recorded before its exec; and, where the exec
 * failed (and the stream went on), a third event and the STOP of its
 * shutdown. */
static void exec_child_logged(pid_t c, int exec_failed)
{
    trace_event_id_t ids[16];
    int status;
    EQ(waitpid(c, &status, 0), c);
    TRUE(WIFEXITED(status));
    EQ(WEXITSTATUS(status), 0);
    EQ(log_ids(ex_fd, ids, 16), exec_failed ? 7 : 3);
    EQ(ids[0], POSIX_TRACE_START);
    EQ(ids[1], ex_ev);
    EQ(ids[2], ex_ev);
    if (exec_failed) {
        EQ(ids[3], ex_ev);
        EQ(ids[4], POSIX_TRACE_STOP);
    }
}

static void t_conf_exec_flushes_log(void)
{
    int how;
    pid_t c;
    OK(posix_trace_eventid_open("before exec", &ex_ev));
    for (how = 0; how < 6; how++) {
        ex_fd = temp_file();
        c = fork();
        TRUE(c >= 0);
        if (c == 0) {
            alarm(20);
            _exit(exec_traced(how));
        }
        exec_child_logged(c, how == 5);
        close(ex_fd);
    }
}

/* The same for execl, execle and execlp, the variadic members: glibc's go
 * to its own execve directly, past the interposed one, and their logs held
 * no events. libposixrt now defines them too (trampolines that write the
 * logs, then jump to glibc's with every argument as the caller passed it).
 * The new image, sh printing its arguments and EXEC_ENV, gets all eight
 * after the command (past the six argument registers of x86_64: the last
 * ones, the NULL and execle's environment are on the stack) and execle's
 * environment. */
#define PRINT_ARGS "printf '%s|' \"$0\" \"$@\" \"$EXEC_ENV\""

static int execl_traced(int how, int out)
{
    static char *const envp[] = {"EXEC_ENV=arrived", "PATH=/usr/bin:/bin", NULL};
    trace_id_t t;
    if (dup2(out, STDOUT_FILENO) != STDOUT_FILENO)
        return 6;
    if (posix_trace_create_withlog(0, NULL, ex_fd, &t) != 0 || posix_trace_start(t) != 0)
        return 3;
    posix_trace_event(ex_ev, "1", 1);
    posix_trace_event(ex_ev, "2", 1);
    if (how == 0)
        execl("/bin/sh", "sh", "-c", PRINT_ARGS, "a0", "a1", "a2", "a3", "a4", "a5", "a6",
              "a7", (char *)NULL);
    else if (how == 1)
        execle("/bin/sh", "sh", "-c", PRINT_ARGS, "a0", "a1", "a2", "a3", "a4", "a5", "a6",
               "a7", (char *)NULL, envp);
    else if (how == 2)
        execlp("sh", "sh", "-c", PRINT_ARGS, "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
               (char *)NULL);
    else if (execl("/nonexistent/posixrt-test", "x", (char *)NULL) == -1 && errno == ENOENT) {
        posix_trace_event(ex_ev, "3", 1);
        return posix_trace_shutdown(t) == 0 ? 0 : 5;
    }
    return 4;
}

static void t_conf_execl_flushes_log(void)
{
    static const char *const want[] = {
        "a0|a1|a2|a3|a4|a5|a6|a7||",
        "a0|a1|a2|a3|a4|a5|a6|a7|arrived|",
        "a0|a1|a2|a3|a4|a5|a6|a7||",
        "",
    };
    char got[128];
    ssize_t n;
    int how, out;
    pid_t c;
    OK(unsetenv("EXEC_ENV"));
    OK(posix_trace_eventid_open("before execl", &ex_ev));
    for (how = 0; how < 4; how++) {
        ex_fd = temp_file();
        out = temp_file();
        c = fork();
        TRUE(c >= 0);
        if (c == 0) {
            alarm(20);
            _exit(execl_traced(how, out));
        }
        exec_child_logged(c, how == 3);
        n = pread(out, got, sizeof got - 1, 0);
        TRUE(n >= 0);
        got[n] = '\0';
        if (strcmp(got, want[how]) != 0) {
            fprintf(stderr, "exec %d printed \"%s\", want \"%s\"\n", how, got, want[how]);
            exit(1);
        }
        close(out);
        close(ex_fd);
    }
}

/* POSIX (posix_trace_open): it "shall fail if: [EINVAL] The object pointed
 * to by file_desc does not correspond to a valid trace log." A descriptor of
 * a directory, open for reading, gave EISDIR (the error of the read), which
 * the page does not list; now EINVAL, as for any other file that holds no
 * log. */
static void t_conf_open_directory_einval(void)
{
    trace_id_t l;
    int dir = open("/", O_RDONLY);
    TRUE(dir >= 0);
    EQ(posix_trace_open(dir, &l), EINVAL);
    close(dir);
}

static const struct test TESTS[] = {
    {"conf_truncated_read_overrides_record", t_conf_truncated_read_overrides_record},
    {"conf_event_null_data_inline", t_conf_event_null_data_inline},
    {"conf_shutdown_unblocks_reader_einval", t_conf_shutdown_unblocks_reader_einval},
    {"conf_child_trid_einval", t_conf_child_trid_einval},
    {"conf_eventset_fill_initializes", t_conf_eventset_fill_initializes},
    {"conf_eventtypelist_no_repeat", t_conf_eventtypelist_no_repeat},
    {"conf_shutdown_frees_before_return", t_conf_shutdown_frees_before_return},
    {"conf_loop_log_on_pipe_einval", t_conf_loop_log_on_pipe_einval},
    {"conf_shutdown_records_stop", t_conf_shutdown_records_stop},
    {"conf_exit_shuts_down", t_conf_exit_shuts_down},
    {"conf_exec_flushes_log", t_conf_exec_flushes_log},
    {"conf_execl_flushes_log", t_conf_execl_flushes_log},
    {"conf_open_directory_einval", t_conf_open_directory_einval},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
