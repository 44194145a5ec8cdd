//! The bytes of a log read from a pipe, a FIFO or a socket, taken in as its
//! writer writes them and never waited for here: a record that came in part
//! stays in the buffer until the rest comes, and whoever reads the log waits
//! for the writer (with a [`LogWaiter`](super::LogWaiter), a deadline, the
//! signal mask it needs) without holding the log.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;

use crate::sys::io::{self as sio, FdKind, Mode};

/// How much one read takes in at most.
const CHUNK: usize = 64 << 10;

/// Where the bytes of the file end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The writer may write more.
    Open,
    /// The writer closed its end: every byte it wrote is in the buffer.
    Eof,
    /// A read failed with this errno (the bytes before it are in the buffer).
    Failed(i32),
}

/// How [`PipeBuf::pull`] reads without waiting. Another reader of the same
/// pipe (a second process, say) may take the bytes between a look (`poll`)
/// and a read, and a plain `read(2)` then waits for the writer; so the read
/// itself must not wait, without setting `O_NONBLOCK` on the caller's open
/// file description, whose other users would see it too.
enum Take {
    /// `preadv2(offset -1, RWF_NOWAIT)`: EAGAIN instead of waiting (pipes
    /// and FIFOs from Linux 6.4; earlier kernels refuse the flag there).
    NoWait,
    /// `recv(MSG_DONTWAIT)`: a socket.
    Socket,
    /// A second open of the file (`/proc/self/fd/N`) with `O_NONBLOCK` of
    /// its own, read with `read(2)`: where the kernel refuses `RWF_NOWAIT`.
    Reopened(File),
    /// `poll`, then `read(2)` if the file is readable: where neither works
    /// (no `/proc`). A second reader that takes the bytes in between makes
    /// this read wait for the writer.
    Polled,
}

/// The bytes taken in from the file and not consumed yet.
pub(crate) struct PipeBuf {
    file: Arc<File>,
    take: Take,
    buf: Vec<u8>,
    /// The first byte not consumed.
    at: usize,
    end: End,
}

impl PipeBuf {
    pub(crate) fn new(file: Arc<File>) -> PipeBuf {
        let take = match sio::kind(file.as_fd()) {
            Ok(FdKind::Datagram | FdKind::StreamSocket) => Take::Socket,
            _ => Take::NoWait,
        };
        PipeBuf {
            file,
            take,
            buf: Vec::new(),
            at: 0,
            end: End::Open,
        }
    }

    /// The bytes taken in and not consumed yet.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.at..]
    }

    /// Marks the first `n` bytes of [`bytes`](Self::bytes) consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.buf.len());
    }

    pub(crate) fn end(&self) -> End {
        self.end
    }

    /// Takes in what the writer has written so far, without waiting: at most
    /// one read, which never waits (see [`Take`]), also when another reader
    /// of the file took the bytes since a look said they were there. Returns
    /// true if bytes came or the file ended (its end of file, or a read
    /// error, kept for [`end`](Self::end)); false if nothing was there, for
    /// now.
    pub(crate) fn pull(&mut self) -> bool {
        if self.end != End::Open {
            return false;
        }
        // The consumed bytes go first, once they are many (or all).
        if self.at == self.buf.len() || self.at >= CHUNK {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + CHUNK, 0);
        let got = match self.read_now(old) {
            Ok(0) => {
                self.end = End::Eof;
                0
            }
            Ok(n) => n,
            // Nothing there; or a handler ran: the caller's wait goes on.
            Err(libc::EAGAIN | libc::EINTR) => 0,
            Err(e) => {
                self.end = End::Failed(e);
                0
            }
        };
        self.buf.truncate(old + got);
        got > 0 || self.end != End::Open
    }

    /// One read into `buf[from..]` that does not wait: the count (0 at the
    /// end of the file) or the errno, `EAGAIN` when nothing is there.
    fn read_now(&mut self, from: usize) -> Result<usize, i32> {
        loop {
            let fd = self.file.as_raw_fd();
            let r = match &self.take {
                Take::NoWait => match read_into(fd, &mut self.buf[from..], Mode::NoWait) {
                    // A kernel (or file) without `RWF_NOWAIT` for it.
                    Err(libc::EOPNOTSUPP | libc::ENOSYS) => {
                        self.take = reopen(fd).map_or(Take::Polled, Take::Reopened);
                        continue;
                    }
                    r => r,
                },
                Take::Socket => read_into(fd, &mut self.buf[from..], Mode::SocketNoWait),
                Take::Reopened(f) => read_into(f.as_raw_fd(), &mut self.buf[from..], Mode::Stream),
                Take::Polled => {
                    let mut fds = [libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    }];
                    match crate::sys::poll::ppoll(&mut fds, Some(std::time::Duration::ZERO), None) {
                        Ok(0) => Err(libc::EAGAIN),
                        Ok(_) => read_into(fd, &mut self.buf[from..], Mode::Stream),
                        Err(e) => Err(e.raw_os_error().unwrap_or(libc::EIO)),
                    }
                }
            };
            return r;
        }
    }
}

/// A second open of the file `fd` names, non-blocking, for reading: its
/// own open file description, whose `O_NONBLOCK` no other user of `fd`
/// sees. `None` where it cannot be made (no `/proc`, a socket).
fn reopen(fd: i32) -> Option<File> {
    File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{fd}"))
        .ok()
}

/// One read from `fd` into `buf` as `mode` says.
fn read_into(fd: i32, buf: &mut [u8], mode: Mode) -> Result<usize, i32> {
    // SAFETY: `buf` is writable for its length and borrowed for the call.
    unsafe { sio::read(fd, buf.as_mut_ptr(), buf.len(), mode) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::{FromRawFd, OwnedFd};

    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 stores.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors are open and owned by no one else.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        (File::from(r), File::from(w))
    }

    /// `RWF_NOWAIT` and the fallbacks of kernels that refuse it on a pipe
    /// (before Linux 6.4), made to run here: each takes in what came,
    /// returns false on an empty pipe instead of waiting, sees the end of
    /// file, and leaves the caller's descriptor blocking.
    #[test]
    fn pull_and_its_fallbacks_take_in_without_waiting() {
        for fallback in ["nowait", "reopened", "polled"] {
            let (rd, mut wr) = pipe();
            let rd = Arc::new(rd);
            let mut p = PipeBuf::new(rd.clone());
            match fallback {
                "reopened" => p.take = Take::Reopened(reopen(rd.as_raw_fd()).unwrap()),
                "polled" => p.take = Take::Polled,
                _ => assert!(matches!(p.take, Take::NoWait)),
            }
            assert!(!p.pull(), "{fallback}: an empty pipe");
            wr.write_all(b"abc").unwrap();
            assert!(p.pull(), "{fallback}");
            assert_eq!(p.bytes(), b"abc", "{fallback}");
            assert!(!p.pull(), "{fallback}: emptied");
            drop(wr);
            assert!(p.pull(), "{fallback}: the end");
            assert_eq!(p.end(), End::Eof, "{fallback}");
            let fl = sio::status_flags(rd.as_fd()).unwrap();
            assert_eq!(fl & libc::O_NONBLOCK, 0, "{fallback}: the caller's flags");
        }
    }
}
