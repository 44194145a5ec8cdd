//! The one private system layer of the crate: every raw call to the kernel lives
//! here, one concern per file, and every subsystem above reaches the kernel through
//! it. Nothing here imports from the rest of the crate except [`crate::error`].
//!
//! | file | what it wraps |
//! |---|---|
//! | [`tid`] | `gettid`, cached per thread |
//! | [`fork`] | the one `pthread_atfork` child handler, which resets every per-process cache |
//! | [`clock`] | the TSC (invariant check, calibration) and `CLOCK_MONOTONIC` / `CLOCK_REALTIME` |

pub(crate) mod clock;
pub(crate) mod fork;
pub(crate) mod futex;
pub(crate) mod proc;
pub(crate) mod sched;
pub(crate) mod tid;
