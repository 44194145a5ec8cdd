//! Advisory I/O (listings 7.6, 7.9 and 7.10): tell the kernel how you will use files
//! and memory, get aligned buffers for O_DIRECT, and flush data to stable storage.
//!
//! | POSIX / Linux call | here |
//! |---|---|
//! | `posix_fadvise` | [`fadvise()`] with every [`Advice`] kind |
//! | `posix_fallocate`, `fallocate` | [`fallocate()`], [`fallocate_mode`] ([`FallocateMode::KeepSize`], [`FallocateMode::PunchHole`]) |
//! | `posix_madvise`, `madvise` | [`AlignedBuf::advise`] (safe, on memory the buffer owns), [`madvise()`] (`unsafe`, any memory), [`MemAdvice`] |
//! | `posix_memalign` | [`AlignedBuf`] |
//! | `statx(STATX_DIOALIGN)`, `BLKSSZGET` | [`direct_io_alignment`] |
//! | `sync`, `fsync`, `fdatasync` | [`sync()`], [`fsync`], [`fdatasync`] |
//!
//! Offsets and lengths are `i64` like C's `off_t`, so a negative value is reported
//! as [`InvalidInput`](crate::ErrorKind::InvalidInput) instead of wrapping.
//!
//! Listing 7.10 (the `bytesum` example) in Rust:
//!
//! ```
//! use std::io::Read;
//! use posixrt::advise::{fadvise, Advice, AlignedBuf};
//!
//! let mut f = std::fs::File::open("/proc/self/exe")?;
//! fadvise(&f, 0, 0, Advice::Sequential)?;
//! fadvise(&f, 0, 0, Advice::NoReuse)?;
//! let mut buf = AlignedBuf::new(8192, 8192)?;
//! let mut sum: i64 = 0;
//! loop {
//!     let n = f.read(&mut buf)?;
//!     if n == 0 { break; }
//!     // C's `char` is signed on x86-64: bytes >= 0x80 count as negative.
//!     sum += buf[..n].iter().map(|&b| b as i8 as i64).sum::<i64>();
//! }
//! println!("{sum}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod buf;
mod direct;
mod fadvise;
mod fallocate;
mod madvise;
mod sync;

pub use buf::AlignedBuf;
pub use direct::{direct_io_alignment, AlignmentSource, DirectIoAlignment};
pub use fadvise::{fadvise, Advice};
pub use fallocate::{fallocate, fallocate_mode, FallocateMode};
pub use madvise::{madvise, MemAdvice};
pub use sync::{fdatasync, fsync, sync};

use crate::{Error, Result};

/// The system page size (`sysconf(_SC_PAGESIZE)`).
#[inline]
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Checks an `off_t` range and converts it.
fn check_range(call: &'static str, offset: i64, len: i64) -> Result<(u64, u64)> {
    if offset < 0 {
        return Err(Error::invalid(call, format!("offset {offset} is negative")));
    }
    if len < 0 {
        return Err(Error::invalid(call, format!("length {len} is negative"))
            .with_hint("use 0 for \"to the end of the file\" where the call allows it"));
    }
    if offset.checked_add(len).is_none() {
        return Err(Error::invalid(
            call,
            format!("offset {offset} + length {len} overflows off_t"),
        ));
    }
    Ok((offset as u64, len as u64))
}
