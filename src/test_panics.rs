//! Expected panics of the unit tests, kept out of the
//! output (`.ci/run` fails a passing run that prints a panic backtrace). One
//! hook for all of them, installed once, silences the panics of a thread
//! inside [`quietly`]; every other panic reaches the previous hook.

use std::cell::Cell;

thread_local! {
    /// The calling thread runs a [`quietly`] closure.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, catching its panic (`catch_unwind`) without printing it.
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.try_with(Cell::get).unwrap_or(false) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    r
}

/// The message of a caught panic (a `String` or `&str` payload; empty if
/// neither).
pub(crate) fn message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
