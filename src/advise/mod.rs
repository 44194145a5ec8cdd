//! Advisory I/O (listings 7.6, 7.9 and 7.10): tell the kernel how you will use files
//! and memory, get aligned buffers for O_DIRECT, and flush data to stable storage.
//!
//! | POSIX / Linux call | here |
//! |---|---|
//! | `posix_fadvise` | [`fadvise()`] with every [`Advice`] kind |
//! | `posix_fallocate`, `fallocate` | [`fallocate()`], [`fallocate_mode`] ([`FallocateMode::KeepSize`], [`FallocateMode::PunchHole`]), [`fallocate_or_fill`] (glibc's fallback: zeros written where the filesystem has no `fallocate`) |
//! | `posix_madvise`, `madvise` | [`AlignedBuf::advise`] (safe, on memory the buffer owns), [`madvise()`] (`unsafe`, any memory), [`MemAdvice`] |
//! | `posix_memalign` | [`AlignedBuf`] |
//! | `statx(STATX_DIOALIGN)`, `BLKSSZGET` | [`direct_io_alignment`] |
//! | `sync`, `fsync`, `fdatasync` | [`sync()`], [`fsync`], [`fdatasync`] |
//! | `sync_file_range` | [`sync_file_range()`] with [`SyncRangeFlags`] |
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
mod fill;
mod flush;
mod madvise;
mod range;

pub use buf::AlignedBuf;
pub use direct::{direct_io_alignment, AlignmentSource, DirectIoAlignment};
pub use fadvise::{fadvise, Advice};
pub use fallocate::{fallocate, fallocate_mode, FallocateMode};
pub use fill::{fallocate_or_fill, Allocation};
pub use flush::{fdatasync, fsync, sync, sync_file_range, SyncRangeFlags};
pub use madvise::{madvise, MemAdvice};
pub use range::page_size;
