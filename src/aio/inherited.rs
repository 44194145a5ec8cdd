//! The refusal of a call made in a forked child through an AIO context its
//! parent made (see `Inner::inherited`): the rings and requests are the
//! parent's. The error names the call the child made.

use crate::Error;

/// The message of [`inherited_context_in`]'s error.
const INHERITED: &str = "this AIO context was made by the parent of this forked process";

/// The error of `call` (`"aio_write"`, `"lio_listio"`, ...) made through a
/// context in a forked child that its parent made (see
/// [`Inner::inherited`](super::engine::Inner::inherited)).
pub(crate) fn inherited_context_in(call: &'static str) -> Error {
    Error::new(crate::ErrorKind::InvalidState, call, INHERITED)
    .with_hint("make a new posixrt::aio::Aio in the child; the parent's rings and requests are not the child's")
}

/// [`inherited_context_in`] for the submissions' shared check, which does
/// not know its call: it names `aio_read`, and a caller that knows better
/// names its own call with [`naming_call`].
pub(crate) fn inherited_context() -> Error {
    inherited_context_in("aio_read")
}

/// `e`, naming `call` if it is the refusal of an inherited context (see
/// [`inherited_context`]); any other error as it is.
#[cold]
pub(crate) fn naming_call(e: Error, call: &'static str) -> Error {
    if e.kind() == crate::ErrorKind::InvalidState
        && e.errno().is_none()
        && e.message() == Some(INHERITED)
        && e.call() != call
    {
        inherited_context_in(call)
    } else {
        e
    }
}
