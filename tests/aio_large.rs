//! A transfer past the kernel's per-call limit (`MAX_RW_COUNT`, 2 GiB less a
//! page) on a regular file ends where `write(2)` ends it, on both engines:
//! `aio_return` gives what the one call would have returned.
//!
//! One test in this binary: it writes 2 GiB into memory (a memfd), one
//! engine after the other.

#[allow(unused_macros, unused_imports)]
mod common;

use posixrt::aio::Backend;

/// `MAX_RW_COUNT` of the kernel: `INT_MAX & PAGE_MASK` with 4 KiB pages.
const MAX_RW: usize = 0x7fff_f000;

fn memfd() -> std::fs::File {
    std::fs::File::from(
        rustix::fs::memfd_create("posixrt-aio-large", rustix::fs::MemfdFlags::CLOEXEC)
            .expect("memfd_create"),
    )
}

/// A write of 8 KiB more than `MAX_RW` to a regular file: `write(2)` writes
/// `MAX_RW` bytes and says so. io_uring, which cuts it at the same place,
/// had the rest written as a second round (as for a pipe that filled up) when
/// the request had its own fd copy (a large transfer from a `SCHED_OTHER`
/// thread), and reported every byte: a result `write(2)` never gives, and
/// not the thread engine's.
#[test]
fn a_write_past_the_per_call_limit_ends_where_write_ends() {
    let len = MAX_RW + 8192;
    // (Zeroed and untouched: read from the zero page, no memory of its own.)
    let buf = vec![0u8; len];
    let sys = memfd();
    let by_write = rustix::io::pwrite(&sys, &buf, 0).expect("pwrite");
    drop(sys);
    assert_eq!(by_write, MAX_RW, "the kernel's limit");
    let mut buf = Some(buf);
    for b in [Backend::Uring, Backend::Threads] {
        if b == Backend::Uring && common::uring::uring_refused() {
            continue;
        }
        let aio = common::ctx(b);
        let f = memfd();
        let mut r = aio
            .write(&f, 0, buf.take().expect("buffer"))
            .expect("write");
        let c = r.wait().expect("done");
        assert_eq!(
            c.result.as_ref().ok(),
            Some(&by_write),
            "{b:?}: {:?}",
            c.result
        );
        assert_eq!(
            f.metadata().expect("fstat").len(),
            by_write as u64,
            "{b:?}: the file holds what the result says"
        );
        buf = c.buf;
    }
}
