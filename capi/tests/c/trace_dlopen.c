/* posix_trace_event from a library loaded with dlopen: the library keeps each
 * thread's recording state in an initial-exec TLS word, which glibc must give
 * to threads that already ran before the dlopen as well as to new ones.
 * Three threads record ROUNDS events each: one started before the dlopen, the
 * main thread, and one started after; each event's data is (thread << 16 | i).
 * Prints "<tag> <thread> <data>" for every user event read back (tag: the
 * recording thread's 0, 1 or 2 whose pthread_self() is the event's
 * posix_thread_id), then "end". The first thread is joined last, so the
 * third cannot get its pthread_t.
 *
 *   trace_dlopen /path/to/libposixrt.so */
#define _GNU_SOURCE
#define POSIXRT_TRACE_NO_INLINE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <trace.h>

#define ROUNDS 100

typedef void (*event_fn)(trace_event_id_t, const void *, size_t);
static event_fn event;
static trace_event_id_t ev;
static pthread_barrier_t loaded, recorded;
static pthread_t threads[3];

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "trace_dlopen: no %s\n", name);
        exit(1);
    }
    return p;
}

static void record(long who)
{
    long i;
    threads[who] = pthread_self();
    for (i = 0; i < ROUNDS; i++) {
        long long v = (long long)(who << 16 | i);
        event(ev, &v, sizeof v);
    }
}

/* Runs before the library is loaded, records after. */
static void *early(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&loaded);
    record(0);
    pthread_barrier_wait(&recorded);
    return NULL;
}

static void *late(void *arg)
{
    (void)arg;
    record(2);
    return NULL;
}

static void must(int err, const char *what)
{
    if (err != 0) {
        fprintf(stderr, "trace_dlopen: %s: error %d\n", what, err);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    pthread_t e, l;
    void *lib;
    trace_id_t t;
    struct posix_trace_event_info info;
    long long data;
    size_t len;
    int un = 0, k;
    int (*create)(pid_t, const trace_attr_t *, trace_id_t *);
    int (*start)(trace_id_t), (*stop)(trace_id_t), (*shutdown)(trace_id_t);
    int (*eventid_open)(const char *, trace_event_id_t *);
    int (*trygetnext)(trace_id_t, struct posix_trace_event_info *, void *, size_t, size_t *,
                      int *);

    if (argc != 2)
        return 2;
    must(pthread_barrier_init(&loaded, NULL, 2), "barrier");
    must(pthread_barrier_init(&recorded, NULL, 2), "barrier");
    must(pthread_create(&e, NULL, early, NULL), "pthread_create");

    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "trace_dlopen: %s\n", dlerror());
        return 1;
    }
    *(void **)&create = sym(lib, "posix_trace_create");
    *(void **)&start = sym(lib, "posix_trace_start");
    *(void **)&stop = sym(lib, "posix_trace_stop");
    *(void **)&shutdown = sym(lib, "posix_trace_shutdown");
    *(void **)&eventid_open = sym(lib, "posix_trace_eventid_open");
    *(void **)&trygetnext = sym(lib, "posix_trace_trygetnext_event");
    *(void **)&event = sym(lib, "posix_trace_event");

    must(eventid_open("dlopen.event", &ev), "eventid_open");
    must(create(0, NULL, &t), "create");
    must(start(t), "start");
    pthread_barrier_wait(&loaded);
    pthread_barrier_wait(&recorded);
    record(1);
    must(pthread_create(&l, NULL, late, NULL), "pthread_create");
    must(pthread_join(l, NULL), "pthread_join");
    must(pthread_join(e, NULL), "pthread_join");
    must(stop(t), "stop");

    for (;;) {
        must(trygetnext(t, &info, &data, sizeof data, &len, &un), "trygetnext");
        if (un)
            break;
        if (info.posix_event_id != ev)
            continue;
        if (len != sizeof data) {
            fprintf(stderr, "trace_dlopen: %zu bytes of data\n", len);
            return 1;
        }
        for (k = 0; k < 3; k++)
            if (pthread_equal(info.posix_thread_id, threads[k]))
                break;
        printf("%d %lu %lld\n", k, (unsigned long)info.posix_thread_id, data);
    }
    must(shutdown(t), "shutdown");
    printf("end\n");
    return 0;
}
