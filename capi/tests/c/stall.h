/* Memory the kernel waits for, as tests/common/stall.rs: pages registered
 * with userfaultfd(2), missing until stall_release supplies them. A write(2)
 * from them sleeps inside the kernel's copy, in its system call, until then:
 * a test holds the thread that makes it (a worker of the library's thread
 * engine) for as long as it wants, and learns from the descriptor itself,
 * without timing, which thread waits there (stall_fault).
 *
 * userfaultfd needs CAP_SYS_PTRACE for faults the kernel takes on a user
 * address (or vm.unprivileged_userfaultfd = 1): without it, stall_open
 * gives EPERM. (For a test that defines _GNU_SOURCE.) */
#ifndef POSIXRT_TEST_STALL_H
#define POSIXRT_TEST_STALL_H
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct stall {
    int uffd;
    char *addr;
    size_t len;
};

/* Maps `len` bytes (whole pages) missing until stall_release: 0, or the
 * errno userfaultfd(2) or its set-up failed with (EPERM without the
 * privilege), with nothing left open. */
static inline int stall_open(struct stall *s, size_t len) {
    struct uffdio_api api;
    struct uffdio_register reg;
    void *p;
    int e;
    s->addr = NULL;
    s->len = len;
    s->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (s->uffd < 0)
        return errno;
    memset(&api, 0, sizeof api);
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_THREAD_ID;
    if (ioctl(s->uffd, UFFDIO_API, &api) != 0)
        goto fail;
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        goto fail;
    s->addr = p;
    memset(&reg, 0, sizeof reg);
    reg.range.start = (uintptr_t)p;
    reg.range.len = len;
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (ioctl(s->uffd, UFFDIO_REGISTER, &reg) != 0)
        goto fail;
    return 0;
fail:
    e = errno;
    if (s->addr != NULL)
        munmap(s->addr, len);
    close(s->uffd);
    s->addr = NULL;
    s->uffd = -1;
    return e;
}

/* The thread id of the first thread that waits for a page, once one does
 * (within `ms` milliseconds); 0 if none came, -1 on an error. Each fault is
 * told once. */
static inline long stall_fault(struct stall *s, int ms) {
    struct pollfd p;
    struct uffd_msg msg;
    int n;
    p.fd = s->uffd;
    p.events = POLLIN;
    p.revents = 0;
    do {
        n = poll(&p, 1, ms);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n < 0 || read(s->uffd, &msg, sizeof msg) != (ssize_t)sizeof msg)
        return -1;
    if (msg.event != UFFD_EVENT_PAGEFAULT || msg.arg.pagefault.address < (uintptr_t)s->addr ||
        msg.arg.pagefault.address >= (uintptr_t)s->addr + s->len)
        return -1;
    return (long)msg.arg.pagefault.feat.ptid;
}

/* Supplies every page (zeros): whatever waited for them goes on. 0, or -1
 * (errno set). */
static inline int stall_release(struct stall *s) {
    struct uffdio_zeropage z;
    memset(&z, 0, sizeof z);
    z.range.start = (uintptr_t)s->addr;
    z.range.len = s->len;
    return ioctl(s->uffd, UFFDIO_ZEROPAGE, &z) == 0 || errno == EEXIST ? 0 : -1;
}

/* Closes the userfaultfd (the kernel wakes whatever still waits, and
 * supplies its page as to any fault) and unmaps the pages: call once
 * nothing uses them. */
static inline void stall_close(struct stall *s) {
    if (s->uffd >= 0)
        close(s->uffd);
    if (s->addr != NULL)
        munmap(s->addr, s->len);
    s->uffd = -1;
    s->addr = NULL;
}

/* True if thread `tid` of this process is a worker of the library's thread
 * engine (named posixrt-aio-<n>). */
static inline int is_pool_worker(long tid) {
    char path[64], comm[32];
    const char *prefix = "posixrt-aio-";
    size_t k = strlen(prefix);
    FILE *f;
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(comm, sizeof comm, f) == NULL)
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    if (strncmp(comm, prefix, k) != 0 || comm[k] == '\0')
        return 0;
    for (const char *c = comm + k; *c != '\0'; c++)
        if (*c < '0' || *c > '9')
            return 0;
    return 1;
}

#endif
