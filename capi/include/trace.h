/*
 * <trace.h>: the POSIX trace option (IEEE Std 1003.1-2001, "Trace") for Linux,
 * implemented by libposixrt over posixrt's Rust trace facility.
 *
 * Link with -lposixrt. C and Rust code of one process record into the same
 * streams; logs written here are the log format `rtrace` reads.
 *
 * Not implemented (each returns the errno given):
 *   - POSIX_TRACE_INHERITED (the Trace Inherit option):
 *     posix_trace_attr_setinherited(attr, POSIX_TRACE_INHERITED) -> EINVAL.
 *   - tracing another process: posix_trace_create*(pid != 0 and != getpid())
 *     -> ENOSYS (ESRCH if no such process).
 *
 * Extensions (not in POSIX): the oc2000 mutex system events traceMutexLock,
 * traceMutexTryLock and traceMutexUnlock, emitted by libposixrt's interposed
 * pthread_mutex_lock / pthread_mutex_trylock / pthread_mutex_unlock (the
 * program linked with -lposixrt, or run with LD_PRELOAD=libposixrt.so) while a
 * stream that does not filter them runs. Their data is five 64-bit words:
 *   [0] the error code the call returned (0, EBUSY, ...),
 *   [1] the caller,
 *   [2] 0 (reserved),
 *   [3] the mutex address,
 *   [4] the owner: the thread holding the mutex after the call (0 if none).
 * Read from a stream, [1] and [4] are pthread_t values, as posix_thread_id
 * is, so they compare with it and with pthread_self() (an owner that never
 * recorded into the stream is given by its kernel thread id); read from a
 * log, which keeps kernel thread ids only, they are kernel thread ids.
 * posix_thread_id in struct posix_trace_event_info is the recording thread's
 * pthread_t (its pthread_self()), as POSIX declares it; read from a log, the
 * recording thread's kernel thread id (gettid()). posix_timestamp is
 * CLOCK_MONOTONIC time (POSIX leaves the clock to the implementation; its
 * resolution is posix_trace_attr_getclockres's), not CLOCK_REALTIME as the
 * stream's creation time is.
 * traceSigGeneration and traceSigDelivery (oc2000 signal events) are
 * recorded the same way by the interposed sigqueue, kill, pthread_kill,
 * pthread_sigqueue (generation, recorded as the call is made: six 32-bit
 * words [0] sender tid, [1] target pid, [2] signal, [3] value, [4] 1 if sent
 * to a thread, [5] the target's tid if it is the sender, else 0) and
 * sigwaitinfo, sigtimedwait, sigwait (delivery, when a signal is taken: three
 * 32-bit words [0] receiver tid, [1] signal, [2] value, 0 from sigwait).
 * traceSigCatchFunc is declared so oc2000 programs compile; it is never
 * recorded (signal handlers are not tracked).
 */
#ifndef POSIXRT_TRACE_H
#define POSIXRT_TRACE_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

/* The Trace options this library provides. POSIX names them in <unistd.h>,
 * where glibc defines them as -1 (it has no trace): set here after including
 * it, so that a program which tests them before it traces compiles its
 * tracing in, whichever of the two headers it includes first. The Trace
 * Inherit option is not provided (_POSIX_TRACE_INHERIT stays as <unistd.h>
 * has it). sysconf(_SC_TRACE) is glibc's and still says -1. */
#undef _POSIX_TRACE
#define _POSIX_TRACE 200809L
#undef _POSIX_TRACE_EVENT_FILTER
#define _POSIX_TRACE_EVENT_FILTER 200809L
#undef _POSIX_TRACE_LOG
#define _POSIX_TRACE_LOG 200809L

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__cplusplus) || !defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L
#define POSIXRT_TRACE_RESTRICT
#else
#define POSIXRT_TRACE_RESTRICT restrict
#endif

/* ---- limits ---------------------------------------------------------- */

/* Bytes of a stream name or generation version, its NUL included. */
#define TRACE_NAME_MAX 65
/* Bytes of an event type name, its NUL included (names up to 64 bytes). */
#define TRACE_EVENT_NAME_MAX 65
/* Streams that may exist at once in a process. */
#define TRACE_SYS_MAX 8
/* User event types per process, POSIX_TRACE_UNNAMED_USER_EVENT included (895
 * names, then the unnamed one). */
#define TRACE_USER_EVENT_MAX 896

/* The POSIX minimum values of those limits. */
#define _POSIX_TRACE_NAME_MAX 8
#define _POSIX_TRACE_EVENT_NAME_MAX 30
#define _POSIX_TRACE_SYS_MAX 8
#define _POSIX_TRACE_USER_EVENT_MAX 32

/* ---- types ----------------------------------------------------------- */

/* The library's 64-bit word: unsigned long long, the same type (so the same
 * layout) in every language mode. C89 and C++98 have no long long; GCC and
 * Clang have it there as an extension, which __extension__ keeps -pedantic
 * quiet about, except G++ in C++98 modes, which takes a diagnostic pragma. */
#if defined(__GNUC__) && defined(__cplusplus) && !defined(__clang__) \
    && (__GNUC__ > 4 || (__GNUC__ == 4 && __GNUC_MINOR__ >= 6))
#define POSIXRT_TRACE_GXX_PRAGMA 1
#endif
#if defined(POSIXRT_TRACE_GXX_PRAGMA)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wlong-long"
#endif
#if defined(__GNUC__)
__extension__ typedef unsigned long long __posixrt_trace_u64;
#else
typedef unsigned long long __posixrt_trace_u64;
#endif
#if defined(POSIXRT_TRACE_GXX_PRAGMA)
#pragma GCC diagnostic pop
#undef POSIXRT_TRACE_GXX_PRAGMA
#endif

/* An event type identifier (process-wide: the same name gives the same id). */
typedef unsigned int trace_event_id_t;

/* A trace stream or an opened log. */
typedef unsigned long trace_id_t;

/* A set of event types: a bitmap over the 1024 ids. */
typedef struct {
    __posixrt_trace_u64 __bits[16];
} trace_event_set_t;

/* Stream attributes: a plain value, fields private to the library. */
typedef struct {
    unsigned int __magic;
    int __stream_full;
    int __log_full;
    int __inherit;
    __posixrt_trace_u64 __create_time_ns;
    __posixrt_trace_u64 __clock_res_ns;
    __posixrt_trace_u64 __stream_size;
    __posixrt_trace_u64 __log_size;
    __posixrt_trace_u64 __max_data;
    char __name[TRACE_NAME_MAX];
    char __pad[7];
} trace_attr_t;

struct posix_trace_status_info {
    int posix_stream_status;
    int posix_stream_full_status;
    int posix_stream_overrun_status;
    int posix_stream_flush_status;
    int posix_stream_flush_error;
    int posix_log_overrun_status;
    int posix_log_full_status;
};

struct posix_trace_event_info {
    trace_event_id_t posix_event_id;
    pid_t posix_pid;
    void *posix_prog_address;
    int posix_truncation_status;
    struct timespec posix_timestamp;
    pthread_t posix_thread_id;
};

/* ---- constants ------------------------------------------------------- */

#define POSIX_TRACE_RUNNING 0
#define POSIX_TRACE_SUSPENDED 1

#define POSIX_TRACE_NOT_FULL 0
#define POSIX_TRACE_FULL 1

#define POSIX_TRACE_NO_OVERRUN 0
#define POSIX_TRACE_OVERRUN 1

#define POSIX_TRACE_NOT_FLUSHING 0
#define POSIX_TRACE_FLUSHING 1

#define POSIX_TRACE_NOT_TRUNCATED 0
#define POSIX_TRACE_TRUNCATED_RECORD 1
#define POSIX_TRACE_TRUNCATED_READ 2

#define POSIX_TRACE_LOOP 0
#define POSIX_TRACE_UNTIL_FULL 1
#define POSIX_TRACE_FLUSH 2
#define POSIX_TRACE_APPEND 3

#define POSIX_TRACE_CLOSE_FOR_CHILD 0
#define POSIX_TRACE_INHERITED 1

#define POSIX_TRACE_WOPID_EVENTS 0
#define POSIX_TRACE_SYSTEM_EVENTS 1
#define POSIX_TRACE_ALL_EVENTS 2

#define POSIX_TRACE_SET_EVENTSET 0
#define POSIX_TRACE_ADD_EVENTSET 1
#define POSIX_TRACE_SUB_EVENTSET 2

/* System event types. */
#define POSIX_TRACE_START ((trace_event_id_t)0)
#define POSIX_TRACE_STOP ((trace_event_id_t)1)
#define POSIX_TRACE_FILTER ((trace_event_id_t)2)
#define POSIX_TRACE_OVERFLOW ((trace_event_id_t)3)
#define POSIX_TRACE_RESUME ((trace_event_id_t)4)
#define POSIX_TRACE_FLUSH_START ((trace_event_id_t)5)
#define POSIX_TRACE_FLUSH_STOP ((trace_event_id_t)6)
#define POSIX_TRACE_ERROR ((trace_event_id_t)7)
#define POSIX_TRACE_UNNAMED_USEREVENT ((trace_event_id_t)128)
/* The <trace.h> page's spelling of the same event (posix_trace_eventid_open's
 * page spells it as above). */
#define POSIX_TRACE_UNNAMED_USER_EVENT POSIX_TRACE_UNNAMED_USEREVENT

/* Extensions: oc2000 system event names (see the top of this file). */
#define traceMutexLock ((trace_event_id_t)0x10001u)
#define traceMutexTryLock ((trace_event_id_t)0x10002u)
#define traceMutexUnlock ((trace_event_id_t)0x10003u)
#define traceSigGeneration ((trace_event_id_t)0x10004u)
#define traceSigDelivery ((trace_event_id_t)0x10005u)
#define traceSigCatchFunc ((trace_event_id_t)0x10006u)

/* ---- attributes ------------------------------------------------------ */

int posix_trace_attr_init(trace_attr_t *attr);
int posix_trace_attr_destroy(trace_attr_t *attr);
int posix_trace_attr_getgenversion(const trace_attr_t *attr, char *genversion);
int posix_trace_attr_getname(const trace_attr_t *attr, char *tracename);
int posix_trace_attr_setname(trace_attr_t *attr, const char *tracename);
int posix_trace_attr_getcreatetime(const trace_attr_t *attr, struct timespec *createtime);
int posix_trace_attr_getclockres(const trace_attr_t *attr, struct timespec *resolution);
int posix_trace_attr_getinherited(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                  int *POSIXRT_TRACE_RESTRICT inheritancepolicy);
int posix_trace_attr_setinherited(trace_attr_t *attr, int inheritancepolicy);
int posix_trace_attr_getstreamfullpolicy(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                         int *POSIXRT_TRACE_RESTRICT streampolicy);
int posix_trace_attr_setstreamfullpolicy(trace_attr_t *attr, int streampolicy);
int posix_trace_attr_getlogfullpolicy(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                      int *POSIXRT_TRACE_RESTRICT logpolicy);
int posix_trace_attr_setlogfullpolicy(trace_attr_t *attr, int logpolicy);
int posix_trace_attr_getmaxdatasize(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                    size_t *POSIXRT_TRACE_RESTRICT maxdatasize);
int posix_trace_attr_setmaxdatasize(trace_attr_t *attr, size_t maxdatasize);
int posix_trace_attr_getmaxsystemeventsize(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                           size_t *POSIXRT_TRACE_RESTRICT eventsize);
int posix_trace_attr_getmaxusereventsize(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                         size_t data_len,
                                         size_t *POSIXRT_TRACE_RESTRICT eventsize);
int posix_trace_attr_getstreamsize(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                   size_t *POSIXRT_TRACE_RESTRICT streamsize);
int posix_trace_attr_setstreamsize(trace_attr_t *attr, size_t streamsize);
int posix_trace_attr_getlogsize(const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                                size_t *POSIXRT_TRACE_RESTRICT logsize);
int posix_trace_attr_setlogsize(trace_attr_t *attr, size_t logsize);

/* ---- streams --------------------------------------------------------- */

int posix_trace_create(pid_t pid, const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                       trace_id_t *POSIXRT_TRACE_RESTRICT trid);
int posix_trace_create_withlog(pid_t pid, const trace_attr_t *POSIXRT_TRACE_RESTRICT attr,
                               int fildes, trace_id_t *POSIXRT_TRACE_RESTRICT trid);
int posix_trace_start(trace_id_t trid);
int posix_trace_stop(trace_id_t trid);
/* A stream not shut down when the process calls exit (or returns from main)
 * is shut down then, as by this call: its log gets the STOP of a running
 * stream, the final flush and the end record. Before execve, execv, execvp,
 * execvpe and fexecve (interposed) every log is written, so it holds the
 * events recorded before the exec (no end record); the streams go on if the
 * exec fails. execl, execle and execlp are not covered. */
int posix_trace_shutdown(trace_id_t trid);
int posix_trace_flush(trace_id_t trid);
int posix_trace_clear(trace_id_t trid);
int posix_trace_get_attr(trace_id_t trid, trace_attr_t *attr);
int posix_trace_get_status(trace_id_t trid, struct posix_trace_status_info *statusinfo);

/* ---- filters and event sets ------------------------------------------ */

int posix_trace_get_filter(trace_id_t trid, trace_event_set_t *set);
int posix_trace_set_filter(trace_id_t trid, const trace_event_set_t *set, int how);
int posix_trace_eventset_empty(trace_event_set_t *set);
int posix_trace_eventset_fill(trace_event_set_t *set, int what);
int posix_trace_eventset_add(trace_event_id_t event_id, trace_event_set_t *set);
int posix_trace_eventset_del(trace_event_id_t event_id, trace_event_set_t *set);
int posix_trace_eventset_ismember(trace_event_id_t event_id,
                                  const trace_event_set_t *POSIXRT_TRACE_RESTRICT set,
                                  int *POSIXRT_TRACE_RESTRICT ismember);

/* ---- event types ----------------------------------------------------- */

int posix_trace_eventid_open(const char *POSIXRT_TRACE_RESTRICT event_name,
                             trace_event_id_t *POSIXRT_TRACE_RESTRICT event_id);
int posix_trace_trid_eventid_open(trace_id_t trid, const char *POSIXRT_TRACE_RESTRICT event_name,
                                  trace_event_id_t *POSIXRT_TRACE_RESTRICT event);
int posix_trace_eventid_get_name(trace_id_t trid, trace_event_id_t event, char *event_name);
int posix_trace_eventid_equal(trace_id_t trid, trace_event_id_t event1, trace_event_id_t event2);
int posix_trace_eventtypelist_getnext_id(trace_id_t trid,
                                         trace_event_id_t *POSIXRT_TRACE_RESTRICT event,
                                         int *POSIXRT_TRACE_RESTRICT unavailable);
int posix_trace_eventtypelist_rewind(trace_id_t trid);

/* ---- recording ------------------------------------------------------- */

/* Data past a stream's maximum data size is neither recorded nor read (the
 * event is POSIX_TRACE_TRUNCATED_RECORD), whatever data_len says. */
void posix_trace_event(trace_event_id_t event_id, const void *POSIXRT_TRACE_RESTRICT data_ptr,
                       size_t data_len);

/* The inline fast path of posix_trace_event: entry `id` is nonzero while some
 * running stream records `id` (private to the library; read only). When no
 * stream runs, or every running stream filters the id, a call costs a load and
 * a test, no function call. With GCC or Clang, data of a size known at compile
 * time and at most 8 bytes is passed packed in a register (the library's
 * __posixrt_trace_event_word); anything else calls posix_trace_event. Define
 * POSIXRT_TRACE_NO_INLINE to call the function always. (POSIX allows any
 * function to be a macro as well.) */
extern const volatile unsigned char *const __posixrt_trace_on;
void __posixrt_trace_event_word(trace_event_id_t event_id, __posixrt_trace_u64 word,
                                size_t data_len, unsigned char pass);

/* C99 and C++ say `inline`; GCC and Clang take `__inline__` in C89 modes
 * (-std=c89, -ansi), where `inline` is no keyword. Another C89 compiler calls
 * the function. */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define POSIXRT_TRACE_INLINE inline
#elif defined(__GNUC__)
#define POSIXRT_TRACE_INLINE __inline__
#elif !defined(POSIXRT_TRACE_NO_INLINE)
#define POSIXRT_TRACE_NO_INLINE
#endif

#ifndef POSIXRT_TRACE_NO_INLINE
static POSIXRT_TRACE_INLINE void posixrt_trace_event_inline(trace_event_id_t event_id, const void *data_ptr,
                                              size_t data_len)
{
    /* The mask keeps the load inside the table; the function checks the id. */
    unsigned char pass = __posixrt_trace_on[event_id & 1023u];
    if (pass) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (__builtin_constant_p(data_len) && data_len <= 8u) {
            __posixrt_trace_u64 word = 0;
            /* As the function: a null data pointer is no data. (Free for the
             * address of an object, which the compiler knows is not null.) */
            if (!data_ptr) {
                __posixrt_trace_event_word(event_id, 0u, 0u, pass);
                return;
            }
            if (data_len > 0u)
                __builtin_memcpy(&word, data_ptr, data_len);
            __posixrt_trace_event_word(event_id, word, data_len, pass);
            return;
        }
#endif
        (posix_trace_event)(event_id, data_ptr, data_len);
    }
}
#define posix_trace_event(event_id, data_ptr, data_len) \
    posixrt_trace_event_inline((event_id), (data_ptr), (data_len))
#endif

/* ---- reading --------------------------------------------------------- */

int posix_trace_getnext_event(trace_id_t trid,
                              struct posix_trace_event_info *POSIXRT_TRACE_RESTRICT event,
                              void *POSIXRT_TRACE_RESTRICT data_ptr, size_t num_bytes,
                              size_t *POSIXRT_TRACE_RESTRICT data_len,
                              int *POSIXRT_TRACE_RESTRICT unavailable);
int posix_trace_timedgetnext_event(trace_id_t trid,
                                   struct posix_trace_event_info *POSIXRT_TRACE_RESTRICT event,
                                   void *POSIXRT_TRACE_RESTRICT data_ptr, size_t num_bytes,
                                   size_t *POSIXRT_TRACE_RESTRICT data_len,
                                   int *POSIXRT_TRACE_RESTRICT unavailable,
                                   const struct timespec *POSIXRT_TRACE_RESTRICT abstime);
int posix_trace_trygetnext_event(trace_id_t trid,
                                 struct posix_trace_event_info *POSIXRT_TRACE_RESTRICT event,
                                 void *POSIXRT_TRACE_RESTRICT data_ptr, size_t num_bytes,
                                 size_t *POSIXRT_TRACE_RESTRICT data_len,
                                 int *POSIXRT_TRACE_RESTRICT unavailable);

/* ---- logs ------------------------------------------------------------ */

/* Opens the log that fildes holds (open for reading), read from its start;
 * the descriptor is duplicated, fildes stays the caller's. EBADF if fildes is
 * not open for reading, EINVAL if it holds no trace log.
 * A log may be opened from a pipe or a FIFO (or a socket: any descriptor that
 * cannot seek), as `cat log | prog` or a FIFO a stream logs to: it is read
 * once, in order, from where the descriptor is. posix_trace_open then waits
 * for the log's header and its first records (up to the first event: the
 * attributes and the event types named so far); the rest is read as
 * posix_trace_getnext_event asks for it, and the final status is known once
 * the reading has reached it. */
int posix_trace_open(int fildes, trace_id_t *trid);
/* Back to the first event of an opened log; EINVAL for a stream. A log opened
 * from a pipe or a FIFO cannot go back: once an event was read from it,
 * posix_trace_rewind fails with ESPIPE (before that it succeeds, with nothing
 * to do), and reading goes on where it was. */
int posix_trace_rewind(trace_id_t trid);
int posix_trace_close(trace_id_t trid);

#ifdef __cplusplus
}
#endif

#endif /* POSIXRT_TRACE_H */
