/*
 * <trace.h> against POSIX (IEEE Std 1003.1-2008, the Trace option; the same
 * prototypes as the seed's listings 8.1-8.21): compiled, never run, by
 * tests/trace.rs (header_declares_the_posix_interface) with -std=c99
 * -pedantic -Wall -Wextra -Werror.
 *
 * Every function is redeclared here with POSIX's prototype: a declaration
 * incompatible with the header's is a compile error. Every member of the two
 * structures has its address taken into a pointer of POSIX's type (an
 * incompatible pointer is an error under -Werror). Every symbolic constant is
 * used, the values of each group must differ, and the limits must be at
 * least POSIX's minimums (an array of size -1 otherwise).
 */
#include <trace.h>

/* ---- functions, in the order of POSIX's <trace.h> page ---- */

int posix_trace_attr_destroy(trace_attr_t *);
int posix_trace_attr_getclockres(const trace_attr_t *, struct timespec *);
int posix_trace_attr_getcreatetime(const trace_attr_t *, struct timespec *);
int posix_trace_attr_getgenversion(const trace_attr_t *, char *);
int posix_trace_attr_getinherited(const trace_attr_t *restrict, int *restrict);
int posix_trace_attr_getlogfullpolicy(const trace_attr_t *restrict, int *restrict);
int posix_trace_attr_getlogsize(const trace_attr_t *restrict, size_t *restrict);
int posix_trace_attr_getmaxdatasize(const trace_attr_t *restrict, size_t *restrict);
int posix_trace_attr_getmaxsystemeventsize(const trace_attr_t *restrict, size_t *restrict);
int posix_trace_attr_getmaxusereventsize(const trace_attr_t *restrict, size_t, size_t *restrict);
int posix_trace_attr_getname(const trace_attr_t *, char *);
int posix_trace_attr_getstreamfullpolicy(const trace_attr_t *restrict, int *restrict);
int posix_trace_attr_getstreamsize(const trace_attr_t *restrict, size_t *restrict);
int posix_trace_attr_init(trace_attr_t *);
int posix_trace_attr_setinherited(trace_attr_t *, int);
int posix_trace_attr_setlogfullpolicy(trace_attr_t *, int);
int posix_trace_attr_setlogsize(trace_attr_t *, size_t);
int posix_trace_attr_setmaxdatasize(trace_attr_t *, size_t);
int posix_trace_attr_setname(trace_attr_t *, const char *);
int posix_trace_attr_setstreamfullpolicy(trace_attr_t *, int);
int posix_trace_attr_setstreamsize(trace_attr_t *, size_t);
int posix_trace_clear(trace_id_t);
int posix_trace_close(trace_id_t);
int posix_trace_create(pid_t, const trace_attr_t *restrict, trace_id_t *restrict);
int posix_trace_create_withlog(pid_t, const trace_attr_t *restrict, int, trace_id_t *restrict);
/* The header may define posix_trace_event as a function-like macro as well
 * (POSIX allows it); the parentheses name the function. */
void(posix_trace_event)(trace_event_id_t, const void *restrict, size_t);
int posix_trace_eventid_equal(trace_id_t, trace_event_id_t, trace_event_id_t);
int posix_trace_eventid_get_name(trace_id_t, trace_event_id_t, char *);
int posix_trace_eventid_open(const char *restrict, trace_event_id_t *restrict);
int posix_trace_eventset_add(trace_event_id_t, trace_event_set_t *);
int posix_trace_eventset_del(trace_event_id_t, trace_event_set_t *);
int posix_trace_eventset_empty(trace_event_set_t *);
int posix_trace_eventset_fill(trace_event_set_t *, int);
int posix_trace_eventset_ismember(trace_event_id_t, const trace_event_set_t *restrict,
                                  int *restrict);
int posix_trace_eventtypelist_getnext_id(trace_id_t, trace_event_id_t *restrict, int *restrict);
int posix_trace_eventtypelist_rewind(trace_id_t);
int posix_trace_flush(trace_id_t);
int posix_trace_get_attr(trace_id_t, trace_attr_t *);
int posix_trace_get_filter(trace_id_t, trace_event_set_t *);
int posix_trace_get_status(trace_id_t, struct posix_trace_status_info *);
int posix_trace_getnext_event(trace_id_t, struct posix_trace_event_info *restrict, void *restrict,
                              size_t, size_t *restrict, int *restrict);
int posix_trace_open(int, trace_id_t *);
int posix_trace_rewind(trace_id_t);
int posix_trace_set_filter(trace_id_t, const trace_event_set_t *, int);
int posix_trace_shutdown(trace_id_t);
int posix_trace_start(trace_id_t);
int posix_trace_stop(trace_id_t);
int posix_trace_timedgetnext_event(trace_id_t, struct posix_trace_event_info *restrict,
                                   void *restrict, size_t, size_t *restrict, int *restrict,
                                   const struct timespec *restrict);
int posix_trace_trid_eventid_open(trace_id_t, const char *restrict, trace_event_id_t *restrict);
int posix_trace_trygetnext_event(trace_id_t, struct posix_trace_event_info *restrict,
                                 void *restrict, size_t, size_t *restrict, int *restrict);

/* ---- structures ---- */

void posix_members(struct posix_trace_event_info *ev, struct posix_trace_status_info *st);
void posix_members(struct posix_trace_event_info *ev, struct posix_trace_status_info *st)
{
    trace_event_id_t *event_id = &ev->posix_event_id;
    pid_t *pid = &ev->posix_pid;
    void **prog_address = &ev->posix_prog_address;
    int *truncation_status = &ev->posix_truncation_status;
    struct timespec *timestamp = &ev->posix_timestamp;
    pthread_t *thread_id = &ev->posix_thread_id;
    int *status[7];
    status[0] = &st->posix_stream_status;
    status[1] = &st->posix_stream_full_status;
    status[2] = &st->posix_stream_overrun_status;
    status[3] = &st->posix_stream_flush_status;
    status[4] = &st->posix_stream_flush_error;
    status[5] = &st->posix_log_overrun_status;
    status[6] = &st->posix_log_full_status;
    (void)event_id, (void)pid, (void)prog_address, (void)truncation_status;
    (void)timestamp, (void)thread_id, (void)status;
}

/* ---- symbolic constants ---- */

#define DISTINCT2(a, b) ((a) != (b))
#define DISTINCT3(a, b, c) ((a) != (b) && (a) != (c) && (b) != (c))
#define DISTINCT4(a, b, c, d) (DISTINCT3(a, b, c) && (d) != (a) && (d) != (b) && (d) != (c))
#define CHECK(name, cond) typedef char name[(cond) ? 1 : -1]

/* posix_stream_status, _full_status, _overrun_status, _flush_status */
CHECK(stream_status, DISTINCT2(POSIX_TRACE_RUNNING, POSIX_TRACE_SUSPENDED));
CHECK(full_status, DISTINCT2(POSIX_TRACE_FULL, POSIX_TRACE_NOT_FULL));
CHECK(overrun_status, DISTINCT2(POSIX_TRACE_OVERRUN, POSIX_TRACE_NO_OVERRUN));
CHECK(flush_status, DISTINCT2(POSIX_TRACE_FLUSHING, POSIX_TRACE_NOT_FLUSHING));
/* posix_truncation_status */
CHECK(truncation, DISTINCT3(POSIX_TRACE_NOT_TRUNCATED, POSIX_TRACE_TRUNCATED_RECORD,
                            POSIX_TRACE_TRUNCATED_READ));
/* stream and log full policies */
CHECK(stream_policy, DISTINCT3(POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_FLUSH));
CHECK(log_policy, DISTINCT3(POSIX_TRACE_LOOP, POSIX_TRACE_UNTIL_FULL, POSIX_TRACE_APPEND));
/* inheritance */
CHECK(inherit, DISTINCT2(POSIX_TRACE_CLOSE_FOR_CHILD, POSIX_TRACE_INHERITED));
/* posix_trace_eventset_fill's what, posix_trace_set_filter's how */
CHECK(fill, DISTINCT3(POSIX_TRACE_WOPID_EVENTS, POSIX_TRACE_SYSTEM_EVENTS,
                      POSIX_TRACE_ALL_EVENTS));
CHECK(how, DISTINCT3(POSIX_TRACE_SET_EVENTSET, POSIX_TRACE_ADD_EVENTSET,
                     POSIX_TRACE_SUB_EVENTSET));
/* the system event types, of type trace_event_id_t */
CHECK(start_stop, DISTINCT4(POSIX_TRACE_START, POSIX_TRACE_STOP, POSIX_TRACE_FILTER,
                            POSIX_TRACE_OVERFLOW));
CHECK(resume_flush, DISTINCT4(POSIX_TRACE_RESUME, POSIX_TRACE_FLUSH_START,
                              POSIX_TRACE_FLUSH_STOP, POSIX_TRACE_ERROR));
CHECK(unnamed, POSIX_TRACE_UNNAMED_USER_EVENT == POSIX_TRACE_UNNAMED_USEREVENT);
CHECK(event_type, sizeof(POSIX_TRACE_START) == sizeof(trace_event_id_t) &&
                      sizeof(POSIX_TRACE_UNNAMED_USER_EVENT) == sizeof(trace_event_id_t));
/* the limits (<limits.h>'s in POSIX) and their minimums */
CHECK(name_min, _POSIX_TRACE_NAME_MAX == 8 && TRACE_NAME_MAX >= _POSIX_TRACE_NAME_MAX);
CHECK(event_name_min,
      _POSIX_TRACE_EVENT_NAME_MAX == 30 && TRACE_EVENT_NAME_MAX >= _POSIX_TRACE_EVENT_NAME_MAX);
CHECK(sys_min, _POSIX_TRACE_SYS_MAX == 8 && TRACE_SYS_MAX >= _POSIX_TRACE_SYS_MAX);
CHECK(user_event_min,
      _POSIX_TRACE_USER_EVENT_MAX == 32 && TRACE_USER_EVENT_MAX >= _POSIX_TRACE_USER_EVENT_MAX);
/* The options this library provides, as <unistd.h> names them (glibc's says
 * -1: it has no trace): a program that tests them before it traces compiles
 * its tracing in, whichever of the two headers it includes first (this one
 * includes <unistd.h> after <trace.h>; tests/trace.rs compiles the other
 * order). The Trace Inherit option is not provided. */
#include <unistd.h>
CHECK(option_trace, _POSIX_TRACE > 0);
CHECK(option_event_filter, _POSIX_TRACE_EVENT_FILTER > 0);
CHECK(option_log, _POSIX_TRACE_LOG > 0);
CHECK(option_inherit, _POSIX_TRACE_INHERIT <= 0);
