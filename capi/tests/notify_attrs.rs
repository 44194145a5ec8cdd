//! How a `SIGEV_THREAD` notification's thread follows its attributes
//! (`sigev_notify_attributes`) and its submitter: the programs in `tests/c/`
//! that check it, run linked with `-lposixrt` and under
//! `LD_PRELOAD=libposixrt.so`, on both engines.

mod c_prog;
use c_prog::*;

/// Attributes naming every CPU a set can hold (all 1024 of a `cpu_set_t`,
/// or all of a larger `CPU_ALLOC` set) run the function on every CPU its
/// cpuset allows, as `pthread_create` with them would; attributes without a
/// set (or whose set was cleared) on its submitter's. A full set used to be
/// copied as no set: the function ran on the submitter's CPUs.
#[test]
fn a_full_cpu_set_is_a_set_given() {
    prints_ok("aio_notify_cpus_full.c", engines(), &[&[]]);
}
