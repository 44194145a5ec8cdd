//! Children that a test ends with a signal (shared by the tests that send one):
//! `#[path = "common/signals.rs"] mod signals;`.
//!
//! A test run started as a background job of a script (`cargo test &`) or under
//! `nohup` has SIGINT and SIGQUIT (or SIGHUP) ignored, and a child inherits
//! that: sent SIGINT, it would go on. A test that means to see the signal's
//! effect sets its default action back in the child.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd`'s child start with the default action for each of `sigs`.
pub fn default_action<'a>(cmd: &'a mut Command, sigs: &'static [i32]) -> &'a mut Command {
    // SAFETY: between fork and exec the child only calls `signal`, which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            for &s in sigs {
                if libc::signal(s, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}
