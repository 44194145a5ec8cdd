//! An advise error turned into `std::io::Error` (by `?` in a function returning
//! `io::Result`) keeps the kind std gives its errno: a full filesystem is
//! `StorageFull`, a range past the largest file `FileTooLarge`, a pipe
//! `NotSeekable`, as for `std::fs` calls, even when the error carries a hint.

use std::io;

use posixrt::advise::{fadvise, fallocate, Advice};

#[allow(unused_macros, unused_imports)]
mod common;
use common::temp_file_in;

/// `TMPFS_MAGIC` of `<linux/magic.h>`.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Asserts that `e`, turned into an `io::Error`, has std's kind for its errno.
fn assert_std_kind(e: posixrt::Error, errno: i32) {
    assert_eq!(e.errno(), Some(errno), "{e}");
    assert!(
        e.hint().is_some(),
        "the case under test carries a hint: {e}"
    );
    let text = e.to_string();
    let io: io::Error = e.into();
    assert_eq!(
        io.kind(),
        io::Error::from_raw_os_error(errno).kind(),
        "{text}"
    );
}

#[test]
fn advise_errors_keep_std_io_kinds() {
    // EFBIG: a range past the largest off_t.
    let f = temp_file_in(&std::env::temp_dir(), b"");
    assert_std_kind(fallocate(&f, i64::MAX, 1).unwrap_err(), libc::EFBIG);

    // ESPIPE: fadvise on a pipe, fallocate on its write end.
    let (r, w) = std::io::pipe().unwrap();
    assert_std_kind(
        fadvise(&r, 0, 0, Advice::Sequential).unwrap_err(),
        libc::ESPIPE,
    );
    assert_std_kind(fallocate(&w, 0, 4096).unwrap_err(), libc::ESPIPE);

    // ENOSPC: more than a size-limited tmpfs holds (refused at once, nothing
    // allocated).
    let shm = std::path::Path::new("/dev/shm");
    #[allow(clippy::unnecessary_cast)]
    let limited_tmpfs =
        rustix::fs::statfs(shm).is_ok_and(|st| st.f_type as i64 == TMPFS_MAGIC && st.f_blocks > 0);
    if limited_tmpfs {
        let f = temp_file_in(shm, b"");
        assert_std_kind(fallocate(&f, 0, 1 << 60).unwrap_err(), libc::ENOSPC);
    } else {
        println!("ENOSPC case skipped: /dev/shm is not a tmpfs with a size limit");
    }
}
