//! The C ABI's requests as `libposixrt.so` hands them to the C engine
//! (`CEngine`), for the tests that drive the engine directly.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use posixrt::aio::capi::{error_code, Aiocb, CEngine, COp, CRequest};
use posixrt::aio::Notify;

/// A zeroed aiocb (what a C program starts from), boxed so its address stays.
pub fn aiocb() -> Box<Aiocb> {
    // SAFETY: every field of `Aiocb` (ints, raw pointers, arrays of them) is
    // valid all-zero.
    Box::new(unsafe { std::mem::zeroed() })
}

/// A read of `buf.len()` bytes of `fd` at `offset` into `buf`, with `cb` as
/// its control block, notifying with `notify`.
pub fn read_at(cb: &mut Aiocb, fd: i32, offset: i64, buf: &mut [u8], notify: Notify) -> CRequest {
    CRequest {
        cb,
        op: COp::Read,
        fd,
        offset,
        buf: buf.as_mut_ptr(),
        len: buf.len(),
        reqprio: 0,
        ordered: false,
        nonblock: false,
        stream: false,
        notify,
    }
}

/// [`read_at`] offset 0, without a notification.
pub fn read(cb: &mut Aiocb, fd: i32, buf: &mut [u8]) -> CRequest {
    read_at(cb, fd, 0, buf, Notify::None)
}

/// Waits in `engine` (up to `within`) until `cb` is no longer in progress:
/// `engine.wait`'s answer (`Ok(true)` once it is done).
pub fn wait_within(engine: &CEngine, cb: &Aiocb, within: Duration) -> Result<bool, i32> {
    let p: *const Aiocb = cb;
    engine.wait(Some(Instant::now() + within), &mut || {
        // SAFETY: `cb` is borrowed for the whole wait.
        (unsafe { error_code(p) }) != libc::EINPROGRESS
    })
}

/// A 4-byte read of an empty pipe, submitted by [`HeldRead::submit`]: it
/// stays in flight until 4 bytes are written to `wr`, so that the C requests
/// submitted meanwhile are deferred. (The test waits for it before it drops
/// this: the engine writes into `buf` until then.)
pub struct HeldRead {
    pub cb: Box<Aiocb>,
    pub buf: Box<[u8; 4]>,
    pub rd: OwnedFd,
    pub wr: OwnedFd,
}

impl HeldRead {
    /// Submits the read to `engine`.
    pub fn submit(engine: &CEngine) -> HeldRead {
        let (rd, wr) = super::pipe();
        let mut held = HeldRead {
            cb: aiocb(),
            buf: Box::new([0; 4]),
            rd,
            wr,
        };
        let r = read(&mut held.cb, held.rd.as_raw_fd(), &mut held.buf[..]);
        // SAFETY: the aiocb and the buffer are boxed, so they stay where
        // they are as `held` moves, and outlive the request (the test waits
        // for it).
        unsafe { engine.submit(vec![r], None, false) }.expect("submit");
        held
    }
}
