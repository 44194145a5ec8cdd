//! The one private system layer of the crate: every raw call to the kernel lives
//! here, one concern per file, and every subsystem above reaches the kernel through
//! it. Nothing here imports from the rest of the crate except [`crate::error`].
//!
//! | file | what it wraps |
//! |---|---|
//! | [`tid`] | `gettid`, cached per thread |
//! | [`fork`] | the one `pthread_atfork` child handler, which resets every per-process cache |
//! | [`timer`] | POSIX per-thread CPU-time and monotonic timers (`timer_create` with `SIGEV_THREAD_ID`) |
//! | [`clock`] | the TSC (invariant check, calibration) and `CLOCK_MONOTONIC` / `CLOCK_REALTIME` |
//! | [`futex`] | the futex operations of `sync` (through `rustix::thread::futex`) |
//! | [`sched`] | `sched_*`, `pthread_setschedparam`, `sched_attr`, affinity |
//! | [`thread`] | `pthread_self`, the calling thread's name and stack size |
//! | [`cputime`] | CPU-time clocks (`clock_getcpuclockid`, `clock_gettime` on a dynamic id) |
//! | [`proc`] | the one `/proc/.../stat` parser |
//! | [`process`] | `atexit`, `unlink` at exit, a descriptor pointed at `/dev/null` (fork-safe) |
//! | [`process_end`] | a hook on the fatal signals (`sigaction`, chained to the previous disposition), blocking them in a helper thread |
//! | [`pilock`] | the crate's internal priority-inheriting lock (a bare PI futex) |
//! | [`rtlock`] | the AIO core lock: PI for real-time waiters, stealing for the others; its condition variable |
//! | [`io`] | fd I/O of the AIO thread engine, `RWF_NOWAIT`/`MSG_DONTWAIT` forms, `fsync`, fd kind and flags, `dup` |
//! | [`signal`] | `rt_sigqueueinfo` to this process, result checked |
//! | [`prio`] | the calling thread's policy/priority (read, switch) and io_uring `ioprio` |
//! | [`ringfd`] | `io_uring_enter` through a ring index each thread registers (`IORING_REGISTER_RING_FDS`) |
//! | [`mm`] | `posix_madvise` (glibc's behaviour for `POSIX_MADV_DONTNEED`) |
//! | [`file`] | `sync_file_range` |

pub(crate) mod clock;
pub(crate) mod cputime;
pub(crate) mod file;
pub(crate) mod fork;
pub(crate) mod futex;
pub(crate) mod io;
pub(crate) mod mm;
pub(crate) mod pilock;
pub(crate) mod poll;
pub(crate) mod prio;
pub(crate) mod proc;
pub(crate) mod process;
pub(crate) mod process_end;
pub(crate) mod ringfd;
pub(crate) mod rtlock;
pub(crate) mod sched;
pub(crate) mod sigchain;
pub(crate) mod signal;
pub(crate) mod thread;
pub(crate) mod tid;
pub(crate) mod timer;
pub(crate) mod valgrind;
