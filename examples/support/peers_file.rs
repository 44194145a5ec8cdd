//! The test file of `aio_peers`: made in the temp dir and unlinked at once, so
//! nothing is left behind however the run ends (Ctrl-C, a kill, a panic); the
//! engines read it through the open descriptor, or by the path of that
//! descriptor (`/proc/self/fd/N`) for the peers that open a path.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The text of an I/O error of the test file: the errno named as posixrt names
/// it ("No space left on device (ENOSPC 28)", not "(os error 28)").
pub fn file_error(what: &str, e: &std::io::Error) -> String {
    format!("{what}: {}", posixrt::error::io_error_text(e))
}

/// A file of `size_mb` MiB of a fixed pattern made in `dir` under `name` and
/// unlinked before it is written, open for reading and writing, and synced
/// (written back now, not by the kernel's flusher in the middle of a
/// measurement). An error names the file and its errno.
pub fn unlinked_test_file(dir: &Path, name: &str, size_mb: usize) -> Result<File, String> {
    let path = dir.join(name);
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| file_error(&path.display().to_string(), &e))?;
    // Gone from the directory before a byte is written: a kill while it fills
    // leaves nothing either.
    std::fs::remove_file(&path).map_err(|e| file_error(&path.display().to_string(), &e))?;
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 253) as u8).collect();
    let shown = format!("{} (unlinked)", path.display());
    let mut out = &f;
    for _ in 0..size_mb {
        out.write_all(&chunk).map_err(|e| file_error(&shown, &e))?;
    }
    f.sync_data().map_err(|e| file_error(&shown, &e))?;
    Ok(f)
}

/// A path that opens `f` again (its descriptor's, under `/proc/self/fd`), for
/// the peers that open a file by path: valid while `f` is open.
pub fn fd_path(f: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()))
}
