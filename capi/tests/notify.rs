//! Completion notification through the C interface (`struct sigevent`): the
//! programs in `tests/c/` that check it, run linked with `-lposixrt` and
//! under `LD_PRELOAD=libposixrt.so`, on both engines.

mod c_prog;
use c_prog::*;

/// A `SIGEV_THREAD` callback runs at the class of the thread that submitted
/// its request (NULL or inheriting attributes), or at the attributes'
/// explicit one; it used to take the class of the library thread that
/// noticed the completion (`SCHED_BATCH` on the thread engine).
#[test]
fn sigev_thread_runs_at_the_submitter_s_class() {
    prints_ok("aio_notify_class.c", engines(), &[&[]]);
}
