//! `aio_fsync`: asynchronous `fsync`/`fdatasync` that covers every request queued on
//! the fd before it.

/// Which flush an asynchronous fsync performs (`aio_fsync`'s `op`).
///
/// # References
/// - [`aio_fsync(3)`](https://man7.org/linux/man-pages/man3/aio_fsync.3.html)
/// - [`fsync(2)`](https://man7.org/linux/man-pages/man2/fsync.2.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "O_SYNC")]
#[doc(alias = "O_DSYNC")]
pub enum SyncMode {
    /// `O_SYNC`: like `fsync(2)`: data and metadata (file integrity).
    Sync,
    /// `O_DSYNC`: like `fdatasync(2)`: data and the metadata needed to read it.
    DataSync,
}

impl SyncMode {
    /// From `aio_fsync`'s `op` argument (`O_SYNC` or `O_DSYNC`).
    pub fn from_raw(op: i32) -> Option<SyncMode> {
        match op {
            libc::O_SYNC => Some(SyncMode::Sync),
            libc::O_DSYNC => Some(SyncMode::DataSync),
            _ => None,
        }
    }
}
