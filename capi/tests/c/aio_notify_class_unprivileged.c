/* A SIGEV_THREAD notification of a SCHED_FIFO submitter without the
 * privilege to use SCHED_FIFO (RLIMIT_RTPRIO 0, uid 65534 without
 * capabilities: a process made SCHED_FIFO by a privileged parent, or that
 * dropped its privileges) runs at the class its attributes say: the
 * submitter's SCHED_FIFO priority with NULL or inheriting attributes, a lower
 * SCHED_FIFO priority or SCHED_OTHER when explicit attributes say so. Linux
 * lets such a thread keep the class it inherits and lower its priority
 * within it; glibc's notification thread inherits it from its AIO helper
 * thread, made by the submitter.
 *
 * The library creates the thread from one of its own threads, which ran at
 * another class (that of the thread that first asked for SIGEV_THREAD, or
 * SCHED_BATCH for the thread engine's workers), and then set the submitter's
 * class on it: refused without the privilege, so the function ran at
 * SCHED_OTHER; explicit SCHED_FIFO attributes were refused at the thread's
 * creation, and the notification was lost.
 *
 * Runs as root: sets SCHED_FIFO priority 5 on its main thread, then
 * RLIMIT_RTPRIO 0 and uid and gid 65534 (which drops every capability), and
 * checks that the privilege is gone. With "other-first" the main thread makes
 * a SIGEV_THREAD request at SCHED_OTHER before that (the library's
 * notification threads start at its class); with "fork" a child forked at
 * the end makes requests too; with "rr" the policy is SCHED_RR; with
 * "rtprio-2" RLIMIT_RTPRIO is 2 (below the priority, and above 0). Each case reads a pipe (its byte
 * written after aio_read returned) and a cached file (often done inside
 * aio_read), by aio_read and by lio_listio; the function records its policy,
 * priority and nice value. Not as root, or where SCHED_FIFO is refused even
 * to root, it says so and passes.
 *
 * Exits 0 and prints "ok" when every check passes; otherwise prints the failed
 * checks and exits 1.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"
#include "waits.h"

static sem_t notified;
static int seen_policy, seen_priority, seen_nice;

/* The calling thread's nice value (getpriority with PRIO_PROCESS takes a tid
 * on Linux); 100 if it cannot be read. */
static int own_nice(void) {
    int n;
    errno = 0;
    n = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    return n == -1 && errno != 0 ? 100 : n;
}

static void on_done(union sigval v) {
    struct sched_param sp;
    (void)v;
    seen_policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    CHECK(sched_getparam(0, &sp) == 0);
    seen_priority = sp.sched_priority;
    seen_nice = own_nice();
    sem_post(&notified);
}

static int file_fd, pipe_r, pipe_w, base_nice;
/* The submitter's policy (SCHED_FIFO, or SCHED_RR with "rr") and the
 * RLIMIT_RTPRIO it keeps (0, or 2 with "rtprio-2": below its priority). */
static int policy = SCHED_FIFO;
static rlim_t rtprio;

/* One SIGEV_THREAD read with `attr`, by aio_read or by lio_listio (`lio`), of
 * the pipe (`pipe`) or of the file; the function must run at `policy` and
 * `priority`, and at the program's nice value. */
static void one(pthread_attr_t *attr, int lio, int pipe, int policy, int priority,
                const char *what) {
    static struct aiocb cb;
    static char buf[1];
    const char *how = read_how(lio, pipe);
    aiocb_on(&cb, pipe ? pipe_r : file_fd, buf, 1, 0);
    sigev_thread_on(&cb, on_done, attr);
    seen_policy = -1;
    seen_priority = -1;
    seen_nice = -100;
    CHECK(submit_read(&cb, lio) == 0);
    if (pipe)
        CHECK(write(pipe_w, "x", 1) == 1);
    if (wait_10s(&notified) != 0) {
        fprintf(stderr, "%s (%s): no notification\n", what, how);
        failures++;
    } else {
        if (seen_policy != policy || seen_priority != priority) {
            fprintf(stderr, "%s (%s): the function ran at policy %d priority %d, not %d %d\n",
                    what, how, seen_policy, seen_priority, policy, priority);
            failures++;
        }
        if (seen_nice != base_nice) {
            fprintf(stderr, "%s (%s): the function ran at nice %d, not %d\n", what, how,
                    seen_nice, base_nice);
            failures++;
        }
    }
    wait_done(&cb);
    CHECK(aio_return(&cb) == 1);
}

static void all_ways(pthread_attr_t *attr, int policy, int priority, const char *what) {
    for (int lio = 0; lio < 2; lio++)
        for (int pipe = 0; pipe < 2; pipe++)
            one(attr, lio, pipe, policy, priority, what);
}

static void explicit_class(pthread_attr_t *a, int policy, int priority) {
    struct sched_param sp = {.sched_priority = priority};
    CHECK(pthread_attr_init(a) == 0);
    CHECK(pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED) == 0);
    CHECK(pthread_attr_setschedpolicy(a, policy) == 0);
    CHECK(pthread_attr_setschedparam(a, &sp) == 0);
}

/* RLIMIT_RTPRIO 0, no supplementary groups, uid and gid 65534: 0 once the
 * privilege to raise a priority is gone. */
static int drop_privilege(void) {
    struct rlimit low = {rtprio, rtprio};
    struct sched_param up = {.sched_priority = 6};
    CHECK(setrlimit(RLIMIT_RTPRIO, &low) == 0);
    CHECK(setgroups(0, NULL) == 0);
    CHECK(setresgid(65534, 65534, 65534) == 0);
    CHECK(setresuid(65534, 65534, 65534) == 0);
    CHECK(getuid() == 65534 && geteuid() == 65534);
    /* Raising the priority, or another real-time policy, is refused. */
    errno = 0;
    CHECK(sched_setscheduler(0, SCHED_FIFO, &up) == -1 && errno == EPERM);
    errno = 0;
    CHECK(sched_setscheduler(0, SCHED_RR, &up) == -1 && errno == EPERM);
    CHECK(sched_getscheduler(0) == policy);
    return failures == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    int p[2];
    struct sched_param fifo5 = {.sched_priority = 5};
    pthread_attr_t inherit, fifo3, other;
    int other_first = argc > 1 && strcmp(argv[1], "other-first") == 0;
    int forked = argc > 1 && strcmp(argv[1], "fork") == 0;
    char who[128];
    if (argc > 1 && strcmp(argv[1], "rr") == 0)
        policy = SCHED_RR;
    if (argc > 1 && strcmp(argv[1], "rtprio-2") == 0)
        rtprio = 2;
    CHECK(sem_init(&notified, 0, 0) == 0);
    if (geteuid() != 0) {
        fprintf(stderr, "not root: cannot drop a privilege, nothing to check\n");
        return finish();
    }
    if (rtprio != 0) {
        struct rlimit low = {rtprio, rtprio};
        if (setrlimit(RLIMIT_RTPRIO, &low) != 0) {
            fprintf(stderr, "RLIMIT_RTPRIO %d refused here (errno %d): nothing to check\n",
                    (int)rtprio, errno);
            return finish();
        }
    }
    file_fd = temp_file("notify-class-unprivileged");
    CHECK(write(file_fd, "abc", 3) == 3);
    CHECK(pipe(p) == 0);
    pipe_r = p[0];
    pipe_w = p[1];
    base_nice = own_nice();
    if (other_first)
        all_ways(NULL, SCHED_OTHER, 0, "SCHED_OTHER main thread, NULL attributes");
    if (sched_setscheduler(0, policy, &fifo5) != 0) {
        fprintf(stderr, "a real-time policy is refused here (errno %d): nothing to check\n",
                errno);
        return finish();
    }
    if (drop_privilege() != 0)
        return finish();

    snprintf(who, sizeof who, "unprivileged %s 5 submitter (RLIMIT_RTPRIO %d)",
             policy == SCHED_RR ? "SCHED_RR" : "SCHED_FIFO", (int)rtprio);
    strcat(who, ", NULL attributes");
    all_ways(NULL, policy, 5, who);
    CHECK(pthread_attr_init(&inherit) == 0);
    strcpy(strrchr(who, ',') + 2, "default attributes");
    all_ways(&inherit, policy, 5, who);
    explicit_class(&fifo3, policy, 3);
    strcpy(strrchr(who, ',') + 2, "explicit attributes at priority 3");
    all_ways(&fifo3, policy, 3, who);
    explicit_class(&other, SCHED_OTHER, 0);
    strcpy(strrchr(who, ',') + 2, "explicit SCHED_OTHER attributes");
    all_ways(&other, SCHED_OTHER, 0, who);
    if (forked) {
        /* A child forked after the library's threads for the class were
         * started (they are not in the child): its functions too. */
        int status = 0;
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            failures = 0;
            all_ways(NULL, policy, 5, "forked child, NULL attributes");
            all_ways(&fifo3, policy, 3, "forked child, explicit attributes at priority 3");
            _exit(failures == 0 ? 0 : 1);
        }
        if (child > 0) {
            CHECK(waitpid(child, &status, 0) == child);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
    }
    CHECK(pthread_attr_destroy(&inherit) == 0);
    CHECK(pthread_attr_destroy(&fifo3) == 0);
    CHECK(pthread_attr_destroy(&other) == 0);
    close(pipe_r);
    close(pipe_w);
    close(file_fd);
    return finish();
}
