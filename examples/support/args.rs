//! The command line of the examples, one convention for all of them:
//!
//! - `-h`/`--help` prints the usage on standard output and exits 0;
//! - a wrong argument (unknown, missing value, out of range) prints one line on
//!   standard error, `PROG: what is wrong (see PROG --help)`, and exits 2.
//!
//! Include it with `#[path = "support/args.rs"] mod args;` and read the arguments in
//! a loop:
//!
//! ```ignore
//! let mut a = args::Args::new("prog", "usage: prog [--json] [--runs N]\n\n...");
//! while let Some(x) = a.next() {
//!     match x.as_str() {
//!         "--json" => json = true,
//!         "--runs" => runs = a.value_in("--runs", 1..=100),
//!         _ => a.unknown(&x),
//!     }
//! }
//! ```

#![allow(dead_code)] // each example uses the part it needs

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// Exit status of a usage error.
pub const USAGE_ERROR: i32 = 2;

pub struct Args {
    prog: &'static str,
    rest: std::vec::IntoIter<String>,
}

impl Args {
    /// The process's arguments. `-h` or `--help` before any `--` prints `help` on
    /// standard output and exits 0.
    ///
    /// An argument that is not valid UTF-8 is a usage error (`std::env::args`
    /// would panic on it).
    pub fn new(prog: &'static str, help: &str) -> Args {
        let all: Vec<String> = std::env::args_os()
            .skip(1)
            .map(|a| {
                a.into_string().unwrap_or_else(|a| {
                    usage_error(
                        prog,
                        format!("argument {:?} is not valid UTF-8", a.to_string_lossy()),
                    )
                })
            })
            .collect();
        if all
            .iter()
            .take_while(|a| a.as_str() != "--")
            .any(|a| a == "-h" || a == "--help")
        {
            print_help(prog, help);
        }
        Args {
            prog,
            rest: all.into_iter(),
        }
    }

    /// For programs whose arguments are file names, which need not be UTF-8: the
    /// arguments as the system gives them. `-h` or `--help` before any `--` prints
    /// `help` on standard output and exits 0.
    pub fn files(help: &str) -> Vec<std::ffi::OsString> {
        let all: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        if all
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == "-h" || a == "--help")
        {
            let argv0 = std::env::args_os().next().unwrap_or_default();
            let prog = std::path::Path::new(&argv0).file_name().unwrap_or_default();
            print_help(&prog.to_string_lossy(), help);
        }
        all
    }

    /// The next argument, if any.
    pub fn next(&mut self) -> Option<String> {
        self.rest.next()
    }

    /// The arguments not read yet.
    pub fn rest(&mut self) -> Vec<String> {
        self.rest.by_ref().collect()
    }

    /// For programs that take no arguments: any argument is a usage error.
    pub fn none(mut self) {
        if let Some(x) = self.next() {
            self.unknown(&x);
        }
    }

    /// The value after `flag`, parsed; a usage error if it is missing or does not
    /// parse.
    pub fn value<T: FromStr>(&mut self, flag: &str) -> T {
        let Some(v) = self.next() else {
            self.fail(format!("{flag} needs a value"));
        };
        match v.parse() {
            Ok(x) => x,
            Err(_) => self.fail(format!("{flag}: {v:?} is not a valid value")),
        }
    }

    /// The value after `flag`: engine names from `engines`, separated by
    /// commas (as `--only` takes them); a usage error names them all.
    pub fn engines(&mut self, flag: &str, engines: &[&str]) -> String {
        let e: String = self.value(flag);
        if !e.split(',').all(|n| engines.contains(&n)) {
            self.fail(format!(
                "{flag} needs engines from {} (comma-separated)",
                engines.join(", ")
            ));
        }
        e
    }

    /// The value after `flag`, parsed and within `range` (nothing is clamped: a
    /// value outside is a usage error that names the range).
    pub fn value_in<T>(&mut self, flag: &str, range: RangeInclusive<T>) -> T
    where
        T: FromStr + PartialOrd + Display,
    {
        let Some(v) = self.next() else {
            self.fail(format!(
                "{flag} needs a value from {} to {}",
                range.start(),
                range.end()
            ));
        };
        match v.parse::<T>() {
            Ok(x) if range.contains(&x) => x,
            _ => self.fail(format!(
                "{flag}: {v:?} is not a number from {} to {}",
                range.start(),
                range.end()
            )),
        }
    }

    /// The value after `flag`: a number more than 0 and at most `max`, fractions
    /// allowed (a duration in milliseconds); a usage error that names the range
    /// if it is missing, not a number, or out of the range (nothing is clamped).
    pub fn positive_at_most(&mut self, flag: &str, max: f64) -> f64 {
        let Some(v) = self.next() else {
            self.fail(format!(
                "{flag} needs a number more than 0 and at most {max}"
            ));
        };
        match v.parse::<f64>() {
            Ok(x) if x > 0.0 && x <= max => x,
            _ => self.fail(format!(
                "{flag}: {v:?} is not a number more than 0 and at most {max}"
            )),
        }
    }

    /// A usage error unless a file can be made in the temp dir (`$TMPDIR` or
    /// `/tmp`) and one of `mb` MiB, plus 64 MiB to spare, fits in its free space;
    /// `flag` names the option. (The file is the program's, not the user's: the
    /// error names the temp dir and TMPDIR, not a path the user never gave.)
    pub fn check_temp_space(&self, flag: &str, mb: usize) {
        let dir = std::env::temp_dir();
        let probe = dir.join(format!(".posixrt-temp-probe-{}", std::process::id()));
        match takes_a_file(&probe) {
            Ok(()) => {}
            Err(e) => self.fail(format!(
                "the temp dir {} cannot take the test file: {}; set TMPDIR to a writable directory",
                dir.display(),
                posixrt::error::io_error_text(&e)
            )),
        }
        if let Ok(st) = rustix::fs::statvfs(&dir) {
            let free_mb = st.f_bavail.saturating_mul(st.f_frsize) / (1 << 20);
            if mb as u64 + 64 > free_mb {
                self.fail(format!(
                    "{flag} {mb}: {} has {free_mb} MiB free (the file needs that much plus 64 MiB)",
                    dir.display()
                ));
            }
        }
    }

    /// An argument the program does not know: a usage error.
    pub fn unknown(&self, arg: &str) -> ! {
        self.fail(format!("unknown argument {arg:?}"))
    }

    /// A usage error: one line on standard error, exit 2.
    pub fn fail(&self, msg: impl Display) -> ! {
        usage_error(self.prog, msg)
    }
}

/// Prints `help` on standard output and exits 0. An output that cannot be
/// written is exit 1 with one line on standard error (a full disk), or a quiet
/// exit (a closed pipe), not a panic as in `println!`.
fn print_help(prog: &str, help: &str) -> ! {
    use std::io::Write;
    match writeln!(std::io::stdout(), "{}", help.trim_end()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(
                std::io::stderr(),
                "{prog}: standard output: {}",
                super::out::os_error(&e)
            );
            std::process::exit(1)
        }
        _ => std::process::exit(0),
    }
}

/// Whether a new file can be made at `probe` (made, then removed): a directory
/// without write permission, or on a read-only or special file system, says so
/// now, before a run that would need it.
pub fn takes_a_file(probe: &std::path::Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(probe)?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// A usage error found outside [`Args`]: one line on standard error, exit 2.
pub fn usage_error(prog: &str, msg: impl Display) -> ! {
    use std::io::Write;
    // (Ignored if standard error cannot be written: the status says it.)
    let _ = writeln!(std::io::stderr(), "{prog}: {msg} (see {prog} --help)");
    std::process::exit(USAGE_ERROR)
}
