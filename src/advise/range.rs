//! Helpers shared by the advise calls: the page size and the check of an `off_t`
//! range.

use crate::{Error, Result};

/// The system page size (`sysconf(_SC_PAGESIZE)`).
#[inline]
#[doc(alias = "sysconf")]
#[doc(alias = "getpagesize")]
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Checks an `off_t` range and converts it.
pub(super) fn check_range(call: &'static str, offset: i64, len: i64) -> Result<(u64, u64)> {
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
