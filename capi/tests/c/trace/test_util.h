/* Shared by the C trace tests: checks, helpers and the test runner. Each
 * program runs the test named by its argument and exits 0 if it passed. */
#ifndef TRACE_TEST_UTIL_H
#define TRACE_TEST_UTIL_H
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <trace.h>

#define EQ(expr, want)                                                            \
    do {                                                                          \
        long long got_ = (long long)(expr);                                       \
        long long want_ = (long long)(want);                                      \
        if (got_ != want_) {                                                      \
            fprintf(stderr, "%s:%d: %s = %lld, want %lld\n", __FILE__, __LINE__, \
                    #expr, got_, want_);                                          \
            exit(1);                                                              \
        }                                                                         \
    } while (0)
#define OK(expr) EQ(expr, 0)
#define TRUE(expr) EQ(!!(expr), 1)

static const trace_id_t BAD = 0x7777777700000031ul;

static inline trace_id_t new_stream(void)
{
    trace_id_t t;
    OK(posix_trace_create(0, NULL, &t));
    return t;
}

static inline int temp_file(void)
{
    char p[] = "/tmp/trace_fn_XXXXXX";
    int fd;
    fd = mkstemp(p);
    TRUE(fd >= 0);
    unlink(p);
    return fd;
}

/* Reads every event left; returns the count, stores ids. */
static inline int drain(trace_id_t t, trace_event_id_t *ids, int max)
{
    struct posix_trace_event_info info;
    char data[512];
    size_t len;
    int unavail, n = 0;
    for (;;) {
        OK(posix_trace_trygetnext_event(t, &info, data, sizeof data, &len, &unavail));
        if (unavail)
            return n;
        if (n < max)
            ids[n] = info.posix_event_id;
        n++;
    }
}

struct test {
    const char *name;
    void (*fn)(void);
};

static int run_test(const struct test *tests, size_t n, int argc, char **argv)
{
    size_t i;
    if (argc != 2) {
        fprintf(stderr, "usage: %s TEST\n", argv[0]);
        return 2;
    }
    for (i = 0; i < n; i++) {
        if (strcmp(argv[1], tests[i].name) == 0) {
            tests[i].fn();
            printf("ok %s\n", argv[1]);
            return 0;
        }
    }
    fprintf(stderr, "no test %s\n", argv[1]);
    return 2;
}

#define RUN_TESTS(tests) run_test(tests, sizeof tests / sizeof tests[0], argc, argv)

#endif
