//! POSIX aio_fsync: "In the event that any of the queued I/O operations fail,
//! aio_fsync() shall return the error condition defined for read() and
//! write()". A write submitted with an fsync behind it (one `lio_listio`)
//! fails: the fsync, which succeeds itself, reports the write's error.

mod common;

use common::{both, ctx};
use posixrt::aio::{Backend, ListMode, Notify, Op, SyncMode};

/// A page the process may not read: a write from it fails with EFAULT in
/// the kernel (nothing in this process reads it).
struct Unreadable(*mut std::ffi::c_void);

// SAFETY: only the address travels; the page stays mapped until dropped.
unsafe impl Send for Unreadable {}

impl Unreadable {
    fn new() -> Unreadable {
        // SAFETY: a fresh anonymous mapping, owned by the value.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                4096,
                rustix::mm::ProtFlags::empty(),
                rustix::mm::MapFlags::PRIVATE,
            )
        };
        Unreadable(p.expect("mmap"))
    }
}

impl Drop for Unreadable {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        let _ = unsafe { rustix::mm::munmap(self.0, 4096) };
    }
}

// SAFETY: the address stays valid (mapped) while the value lives; the
// kernel's read of it fails with EFAULT, which is the point.
unsafe impl posixrt::aio::IoBuf for Unreadable {
    fn stable_ptr(&self) -> *const u8 {
        self.0 as *const u8
    }
    fn bytes_len(&self) -> usize {
        16
    }
}

fn covered_write_fails(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"abc");
    for mode in [SyncMode::Sync, SyncMode::DataSync] {
        let list = aio
            .lio_listio(
                ListMode::Wait,
                [
                    Some(Op::write(&f, 0, Unreadable::new())),
                    Some(Op::fsync(&f, mode)),
                ],
                Notify::None,
            )
            .unwrap();
        let mut reqs = list.into_requests();
        let write = reqs[0].as_mut().unwrap().aio_return().unwrap().result;
        assert_eq!(write.map_err(|e| e.errno()), Err(Some(libc::EFAULT)));
        let sync = reqs[1].as_mut().unwrap().aio_return().unwrap().result;
        assert_eq!(
            sync.map_err(|e| e.errno()),
            Err(Some(libc::EFAULT)),
            "{mode:?}: the fsync reports the write it covers"
        );
    }
    // An fsync alone after that: the failed writes were done before it came.
    let mut alone = aio.fsync(&f, SyncMode::Sync).unwrap();
    assert_eq!(alone.wait().unwrap().result.unwrap(), 0);
}
both!(
    a_failed_write_before_it_fails_the_fsync,
    covered_write_fails
);
