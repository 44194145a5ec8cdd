//! Trace hook of the thread markers: the `mark_set` system event (payload layout in
//! [`crate::trace::catalog`]). One relaxed load and a branch when no trace stream
//! runs.

use crate::trace::catalog as tc;

/// How the marker changed (the `how` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum How {
    /// `mark::update`.
    Update = 0,
    /// `mark::set`.
    Set = 1,
    /// `mark::clear`.
    Clear = 2,
}

/// The fixed fields, then at most this many bytes of marker text.
const TEXT_MAX: usize = 128;

/// The calling thread's marker became `text` (empty for a clear): called
/// once the marker is stored, never for a mark that failed.
#[inline(always)]
pub(crate) fn marker(how: How, text: &[u8]) {
    if crate::trace::system_events::enabled() {
        emit(how, text)
    }
}

#[cold]
#[inline(never)]
fn emit(how: How, text: &[u8]) {
    let Some(id) = tc::recorded(&tc::MARK_SET) else {
        return;
    };
    let text = &text[..text.len().min(TEXT_MAX)];
    tc::Packer::<{ 12 + TEXT_MAX }>::new()
        .u32(crate::sys::tid::current())
        .u32(how as u32)
        .u32(text.len() as u32)
        .bytes(text)
        .emit_id(id)
}
