//! Standard output of the examples, as the tools (`tfp`, `rtstat`) write theirs: an
//! output that cannot be written ends the example cleanly, where `println!` would
//! panic ("failed printing to stdout") with a backtrace.
//!
//! - A closed pipe (`example | head`) ends the example quietly: [`init`] restores
//!   the default action of SIGPIPE, which ends the process at its first write into
//!   the pipe; if SIGPIPE is blocked, the write's EPIPE ends it, status 0.
//! - Any other write error (a full disk: `example > /dev/full`) ends it with one
//!   line on standard error, `PROG: standard output: No space left on device
//!   (ENOSPC 28)`, and exit status 1.
//!
//! Either way the example ends at once (its `atexit` handlers run, its destructors
//! do not), as a death by SIGPIPE would. Include it first in the crate root, call
//! [`init`] at the top of `main`, and print with `outln!` as with `println!`
//! (and with `errln!` as with `eprintln!`: an unwritable standard error is
//! ignored, so the exit status stays the documented one):
//!
//! ```ignore
//! #[macro_use]
//! #[path = "support/out.rs"]
//! mod out;
//!
//! fn main() {
//!     out::init("prog");
//!     outln!("{} lines", 42);
//! }
//! ```

use std::io::{self, Write};
use std::sync::OnceLock;

static PROG: OnceLock<&'static str> = OnceLock::new();

/// Names the program in the error line and restores the default action of
/// SIGPIPE. Call it first in `main`, before any thread starts.
pub fn init(prog: &'static str) {
    let _ = PROG.set(prog);
    // SAFETY: sets the disposition of SIGPIPE to its default; no handler is
    // involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// `println!` that ends the example cleanly when standard output cannot be
/// written (see the module's documentation).
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// `eprintln!` that ignores a standard error that cannot be written (a full
/// disk, a closed descriptor): the example's exit status stays the one it
/// documents, where `eprintln!` would panic (status 101).
#[allow(unused_macros)]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::err_line(format_args!($($arg)*))
    };
}

/// Writes `args` and a newline to standard error; a write error is ignored.
#[allow(dead_code)]
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// Writes `args` and a newline to standard output as one line (other threads'
/// lines do not come between); a write error ends the process.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
    drop(out);
    if let Err(e) = written {
        failed(&e);
    }
}

/// Ends the process after a write error on standard output: quietly (status 0)
/// for a closed pipe, whose reader has what it wanted; otherwise status 1 with
/// one line on standard error.
#[cold]
pub fn failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    let prog = PROG.get().copied().unwrap_or("example");
    let _ = writeln!(io::stderr(), "{prog}: standard output: {}", os_error(e));
    std::process::exit(1)
}

/// `e` with its errno named as posixrt's own errors name it ("No space left on
/// device (ENOSPC 28)", not Rust's "(os error 28)"), as the tools do.
pub fn os_error(e: &io::Error) -> String {
    posixrt::error::io_error_text(e)
}
