/* posix_trace_event at the edges of its arguments: `trace_limits NAME`.
 * - event_len_huge: a data_len beyond what any buffer can be (SIZE_MAX,
 *   PTRDIFF_MAX + 1) records the first maxdatasize bytes, truncated
 *   (POSIX_TRACE_TRUNCATED_RECORD), as any data_len above the maximum does:
 *   the library reads no more than it records. It used to make a slice of
 *   data_len bytes first, which is undefined past PTRDIFF_MAX (a debug build
 *   of the library aborted the program). */
#define _GNU_SOURCE
#include "trace/test_util.h"
#include <stdint.h>

static void t_event_len_huge(void)
{
    trace_attr_t a;
    trace_id_t t;
    trace_event_id_t ev;
    struct posix_trace_event_info info;
    unsigned char data[64], got[128];
    size_t len, i, lens[2];
    int un, k;
    /* Not constants: the calls go to the function, not the inline path. */
    volatile size_t huge = SIZE_MAX, past = (size_t)PTRDIFF_MAX + 1;
    for (i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7 + 1);
    lens[0] = huge;
    lens[1] = past;
    OK(posix_trace_eventid_open("event_len_huge", &ev));
    OK(posix_trace_attr_init(&a));
    OK(posix_trace_attr_setmaxdatasize(&a, sizeof data));
    OK(posix_trace_create(0, &a, &t));
    OK(posix_trace_start(t));
    for (k = 0; k < 2; k++) {
        posix_trace_event(ev, data, lens[k]);
        (posix_trace_event)(ev, data, lens[k]);
    }
    OK(posix_trace_stop(t));
    OK(posix_trace_getnext_event(t, &info, got, sizeof got, &len, &un));
    EQ(un, 0);
    EQ(info.posix_event_id, POSIX_TRACE_START);
    for (k = 0; k < 4; k++) {
        OK(posix_trace_getnext_event(t, &info, got, sizeof got, &len, &un));
        EQ(un, 0);
        EQ(info.posix_event_id, ev);
        EQ(len, sizeof data);
        EQ(info.posix_truncation_status, POSIX_TRACE_TRUNCATED_RECORD);
        EQ(memcmp(got, data, sizeof data), 0);
    }
    OK(posix_trace_getnext_event(t, &info, got, sizeof got, &len, &un));
    EQ(info.posix_event_id, POSIX_TRACE_STOP);
    OK(posix_trace_shutdown(t));
    OK(posix_trace_attr_destroy(&a));
}

static const struct test TESTS[] = {
    {"event_len_huge", t_event_len_huge},
};

int main(int argc, char **argv)
{
    return RUN_TESTS(TESTS);
}
