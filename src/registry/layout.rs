//! The file layout: header and slot offsets, states and limits (see the
//! [module docs](super)).

use std::time::Duration;

/// The directory registry files live in.
pub const DIR: &str = "/dev/shm";
/// The file magic.
pub const MAGIC: [u8; 8] = *b"PRTREG\0\0";
/// The layout version.
pub const VERSION: u32 = 1;
/// Size of the file header.
pub const HEADER_SIZE: usize = 128;
/// Size of a slot's own header (before the payload).
pub const SLOT_HEADER_SIZE: usize = 32;
/// How many times a reader retries a slot whose copy was torn (see also
/// [`RETRY_BUDGET`]).
pub const MAX_RETRIES: u32 = 1_000_000;
/// How long a reader keeps retrying one slot before reporting it busy.
pub const RETRY_BUDGET: Duration = Duration::from_millis(2);

/// The largest slot a reader accepts (a corrupt or hostile header is refused).
pub(crate) const MAX_SLOT_SIZE: usize = 64 * 1024;
/// The most slots a reader walks in one registry.
pub(crate) const MAX_SLOT_COUNT: u32 = 1 << 20;

pub(crate) const STATE_FREE: u32 = 0;
pub(crate) const STATE_RESERVED: u32 = 1;
pub(crate) const STATE_LIVE: u32 = 2;
/// Taken aside by a reclaimer checking that the dead owner still holds it
/// (invisible to readers, like RESERVED).
pub(crate) const STATE_RECLAIM: u32 = 3;

// Header offsets.
pub(crate) const H_VERSION: usize = 8;
pub(crate) const H_HEADER_SIZE: usize = 12;
pub(crate) const H_KIND: usize = 16;
pub(crate) const H_PID: usize = 32;
pub(crate) const H_START: usize = 40;
pub(crate) const H_SLOT_SIZE: usize = 48;
pub(crate) const H_SLOT_COUNT: usize = 52;
pub(crate) const H_PAYLOAD: usize = 56;
pub(crate) const H_HIGH_WATER: usize = 60;

// Slot offsets.
pub(crate) const S_SEQ: usize = 0;
pub(crate) const S_STATE: usize = 4;
pub(crate) const S_TID: usize = 8;
pub(crate) const S_TSTART: usize = 16;
