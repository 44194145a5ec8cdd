//! Listing 7.10: sum the bytes of a file, reading it with advisory interfaces.
//!
//! ```text
//! bytesum FILE
//! ```
//!
//! Like the C program, it declares the access pattern with `posix_fadvise`
//! (`POSIX_FADV_SEQUENTIAL`, then `POSIX_FADV_NOREUSE`; a refusal is reported and the
//! program goes on), reads through a `BUFSIZ`-sized buffer aligned to `BUFSIZ`
//! (`posix_memalign`, here [`AlignedBuf`]), and prints the sum as a `long`.
//!
//! The sum is computed the way the C listing computes it on x86-64 Linux: `char` is
//! **signed** there, so every byte 0x80..=0xFF adds a negative value (`b as i8`).
//! (On arm64, where `char` is unsigned, the C program would print a different
//! number for files with such bytes; this example always uses the x86-64 meaning.)
//!
//! `-h`/`--help` prints the usage to stdout and exits 0 (a file of that name can
//! still be read as `./--help`).
//! Exit codes as in the listing: 1 with a usage message for a wrong argument count,
//! 2 if the file cannot be opened or read (a directory: `READ: DIR: Is a directory`,
//! and no sum is printed), 0 otherwise; an unknown option (`-x`) is a usage error,
//! exit 2.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use posixrt::advise::{fadvise, Advice, AlignedBuf};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

/// glibc's `BUFSIZ`, the buffer size and alignment of the listing.
const BUFSIZ: usize = 8192;

fn main() -> ExitCode {
    // A closed pipe (`bytesum | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("bytesum");
    // The file name is bytes, as the listing's argv[1]: it need not be UTF-8
    // (`std::env::args` would panic on such a name).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let me = args
        .first()
        .map_or("bytesum".into(), |a| a.to_string_lossy().into_owned());
    if args.len() == 2 && matches!(args[1].to_str(), Some("-h" | "--help")) {
        outln!(
            "Usage: {me} FILE\n\nPrints the sum of the bytes of FILE (each read as a signed char)."
        );
        return ExitCode::SUCCESS;
    }
    // An option is not a file name (a file called `-x` is `./-x`); `-` alone is
    // not special either (the listing has no standard input), so it is a file name.
    if args.len() == 2 && args[1].len() > 1 && args[1].as_bytes().starts_with(b"-") {
        args::usage_error("bytesum", format!("unknown option {:?}", args[1]));
    }
    if args.len() != 2 {
        errln!("Usage: {me} FILE");
        return ExitCode::from(1);
    }
    let mut file = match std::fs::File::open(&args[1]) {
        Ok(f) => f,
        Err(e) => {
            errln!("OPEN: {}: {}", args[1].to_string_lossy(), plain(&e));
            return ExitCode::from(2);
        }
    };

    // Describe how the file will be used; a refusal is only advice lost.
    if let Err(e) = fadvise(&file, 0, 0, Advice::Sequential)
        .and_then(|()| fadvise(&file, 0, 0, Advice::NoReuse))
    {
        errln!("POSIX_FADVISE: {e}");
    }

    let mut buf = match AlignedBuf::new(BUFSIZ, BUFSIZ) {
        Ok(b) => b,
        Err(e) => {
            errln!("POSIX_MEMALIGN: {e}");
            return ExitCode::from(2);
        }
    };

    let mut sum: i64 = 0;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => sum += buf[..n].iter().map(|&b| i64::from(b as i8)).sum::<i64>(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // No (partial) sum on stdout: the failure is the whole result.
                errln!("READ: {}: {}", args[1].to_string_lossy(), plain(&e));
                return ExitCode::from(2);
            }
        }
    }
    outln!("{sum}");
    ExitCode::SUCCESS
}

/// An I/O error's text without Rust's " (os error N)", as perror prints it.
fn plain(e: &std::io::Error) -> String {
    let t = e.to_string();
    t.split(" (os error").next().unwrap_or(&t).to_string()
}
