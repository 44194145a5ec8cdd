//! The `mark` payload inside a registry slot (kind `"mark"`).
//!
//! | payload offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | last update, ns since the epoch (`CLOCK_REALTIME_COARSE`) |
//! | 8 | 4 | marker length in bytes |
//! | 12 | 4 | flags: bit 0 marked, bit 1 raw block written |
//! | 16 | 64 | raw block |
//! | 80 | 128 | marker bytes (UTF-8) |

/// Registry kind.
pub(crate) const KIND: &str = "mark";
/// Slots per process.
pub(crate) const SLOTS: u32 = 4096;
/// The longest marker, in bytes.
pub const MARKER_MAX: usize = 128;
/// The raw block size, in bytes.
pub const RAW_LEN: usize = 64;

pub(crate) const W_TIME: usize = 0;
pub(crate) const W_LEN: usize = 1;
pub(crate) const RAW_OFF: usize = 16;
pub(crate) const MARKER_OFF: usize = 80;
pub(crate) const W_MARKER: usize = MARKER_OFF / 8;
pub(crate) const PAYLOAD: usize = MARKER_OFF + MARKER_MAX;
pub(crate) const FLAG_MARKED: u64 = 1 << 32;
pub(crate) const FLAG_RAW: u64 = 1 << 33;
