/* posix_trace_event from C: ns per event with 8 bytes of data into a running
 * stream, into a stopped stream, and filtered out; the same method as the Rust
 * example trace_overhead (batches of 20000 timed with the thread's CPU clock, a
 * LOOP stream of 8 MiB whose whole sub-buffer is written once first, cleared
 * between batches, the median batch). Prints one JSON line.
 *
 *   trace_event [--events N] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <trace.h>

#define BATCH 20000L

/* The thread's CPU clock, as trace_overhead times its single-thread batches:
 * time the thread spends preempted on a shared machine does not count. */
static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double batch(trace_event_id_t id, long n)
{
    double t0 = now_ns();
    long i;
    for (i = 0; i < n; i++) {
        unsigned long long v = (unsigned long long)i;
        posix_trace_event(id, &v, sizeof v);
    }
    return (now_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp);
    return v[n / 2];
}

static void must(int err, const char *what)
{
    if (err != 0) {
        fprintf(stderr, "trace_event: %s: error %d\n", what, err);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long events = 1000000;
    int rounds, r;
    double *v, stopped, running, filtered;
    trace_event_id_t ev, other;
    trace_attr_t attr;
    trace_event_set_t f;
    trace_id_t t;

    if (argc == 3 && strcmp(argv[1], "--events") == 0)
        events = atol(argv[2]);
    rounds = (int)(events / BATCH);
    if (rounds < 5)
        rounds = 5;
    v = malloc(sizeof(double) * (size_t)rounds);
    if (!v)
        return 1;
    must(posix_trace_eventid_open("overhead", &ev), "eventid_open");
    must(posix_trace_eventid_open("overhead.filtered", &other), "eventid_open");
    must(posix_trace_attr_init(&attr), "attr_init");
    must(posix_trace_attr_setstreamsize(&attr, 8 << 20), "setstreamsize");
    must(posix_trace_attr_setstreamfullpolicy(&attr, POSIX_TRACE_LOOP), "setstreamfullpolicy");
    must(posix_trace_create(0, &attr, &t), "create");

    for (r = 0; r < rounds; r++)
        v[r] = batch(ev, BATCH);
    stopped = median(v, rounds);

    must(posix_trace_start(t), "start");
    /* Touch the whole sub-buffer once (16 MiB: 2^20 records of 24 bytes wrap
     * it), as trace_overhead does, then start clean. */
    for (r = 0; r < 4; r++)
        batch(ev, 1L << 18);
    must(posix_trace_clear(t), "clear");
    for (r = 0; r < rounds; r++) {
        v[r] = batch(ev, BATCH);
        must(posix_trace_clear(t), "clear");
    }
    running = median(v, rounds);

    must(posix_trace_eventset_empty(&f), "eventset_empty");
    must(posix_trace_eventset_add(other, &f), "eventset_add");
    must(posix_trace_set_filter(t, &f, POSIX_TRACE_SET_EVENTSET), "set_filter");
    for (r = 0; r < rounds; r++)
        v[r] = batch(other, BATCH);
    filtered = median(v, rounds);
    must(posix_trace_shutdown(t), "shutdown");

    printf("{\"running_ns\":%.2f,\"stopped_ns\":%.2f,\"filtered_ns\":%.2f}\n", running,
           stopped, filtered);
    free(v);
    return 0;
}
