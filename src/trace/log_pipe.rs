//! The bytes of a log read from a pipe, a FIFO or a socket, taken in as its
//! writer writes them and never waited for here: a record that came in part
//! stays in the buffer until the rest comes, and whoever reads the log waits
//! for the writer (with a [`LogWaiter`](super::LogWaiter), a deadline, the
//! signal mask it needs) without holding the log.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::Arc;

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

/// The bytes taken in from the file and not consumed yet.
pub(crate) struct PipeBuf {
    file: Arc<File>,
    buf: Vec<u8>,
    /// The first byte not consumed.
    at: usize,
    end: End,
}

impl PipeBuf {
    pub(crate) fn new(file: Arc<File>) -> PipeBuf {
        PipeBuf {
            file,
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
    /// one read, made only if `poll` says it would not block (the log has
    /// one reader: this one). Returns true if bytes came or the file ended
    /// (its end of file, or a read error, kept for
    /// [`end`](Self::end)); false if nothing was there, for now.
    pub(crate) fn pull(&mut self) -> bool {
        if self.end != End::Open {
            return false;
        }
        let mut fds = [libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        match crate::sys::poll::ppoll(&mut fds, Some(std::time::Duration::ZERO), None) {
            Ok(0) => return false,
            Ok(_) => {}
            // A handler ran: nothing taken in; the caller's wait goes on.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return false,
            Err(e) => {
                self.end = End::Failed(e.raw_os_error().unwrap_or(libc::EIO));
                return true;
            }
        }
        // The consumed bytes go first, once they are many (or all).
        if self.at == self.buf.len() || self.at >= CHUNK {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + CHUNK, 0);
        let r = (&*self.file).read(&mut self.buf[old..]);
        let got = match r {
            Ok(0) => {
                self.end = End::Eof;
                0
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => {
                self.end = End::Failed(e.raw_os_error().unwrap_or(libc::EIO));
                0
            }
        };
        self.buf.truncate(old + got);
        got > 0 || self.end != End::Open
    }
}
