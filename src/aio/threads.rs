//! The thread-pool backend: used when io_uring is refused (or forced with
//! `POSIXRT_AIO_BACKEND=threads`). Same semantics as the io_uring backend:
//! workers take ready requests in priority order and run `pread`/`pwrite`/`read`/
//! `write`/`fsync`/`fdatasync`.
//!
//! A request on a pipe, socket or terminal first sleeps in `poll` together with the
//! worker's eventfd, so a cancel can stop a read that would block forever (a read
//! from an empty pipe is `AIO_CANCELED`, as on io_uring). Once the transfer itself
//! runs it cannot be cancelled (`AIO_NOTCANCELED`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar};

use rustix::event::{eventfd, EventfdFlags};

use super::core::{OpKind, RawOp};
use super::engine::Inner;
use super::uring::MAX_RW;
use crate::{Error, Result};

pub(crate) struct Pool {
    /// Signalled when requests become ready.
    pub work: Condvar,
    /// One eventfd per worker, written to interrupt its `poll`.
    wake: Vec<OwnedFd>,
}

impl Pool {
    pub(crate) fn new(workers: usize) -> Result<Pool> {
        let mut wake = Vec::with_capacity(workers);
        for _ in 0..workers {
            let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map_err(|e| Error::from_errno("eventfd", e.raw_os_error()))?;
            wake.push(fd);
        }
        Ok(Pool {
            work: Condvar::new(),
            wake,
        })
    }

    pub(crate) fn workers(&self) -> usize {
        self.wake.len()
    }

    /// Starts the workers; each holds the context until shutdown.
    pub(crate) fn spawn(inner: &Arc<Inner>, workers: usize) -> Result<()> {
        for w in 0..workers {
            let i = Arc::clone(inner);
            std::thread::Builder::new()
                .name(format!("posixrt-aio-{w}"))
                .spawn(move || worker(i, w as u32))
                .map_err(|e| {
                    Error::from_errno("pthread_create", e.raw_os_error().unwrap_or(libc::EAGAIN))
                        .with_message("starting the AIO thread pool")
                        .with_hint("raise RLIMIT_NPROC or use fewer AIO worker threads")
                })?;
        }
        Ok(())
    }

    /// Interrupts worker `w`'s `poll`.
    pub(crate) fn interrupt(&self, w: u32) {
        if let Some(fd) = self.wake.get(w as usize) {
            let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
        }
    }
}

fn worker(inner: Arc<Inner>, w: u32) {
    let pool = match &inner.engine {
        super::engine::Engine::Threads(p) => p,
        super::engine::Engine::Uring(_) => return,
    };
    let mut core = inner.lock();
    loop {
        if let Some(idx) = core.pop_ready() {
            let s = &mut core.slots[idx as usize];
            s.worker = w;
            // Cancellable until the transfer starts (see `run`).
            s.interruptible = true;
            let op = s.op;
            drop(core);
            let res = run(&inner, pool, w, idx, op);
            let mut c = inner.lock();
            c.complete(idx, res);
            inner.release(c);
            core = inner.lock();
        } else if core.shutdown {
            break;
        } else {
            core = pool.work.wait(core).unwrap_or_else(|p| p.into_inner());
        }
    }
}

fn is_stream(fd: i32) -> bool {
    match rustix::fs::fstat(borrow(fd)) {
        Ok(st) => {
            let t = rustix::fs::FileType::from_raw_mode(st.st_mode);
            !matches!(
                t,
                rustix::fs::FileType::RegularFile | rustix::fs::FileType::BlockDevice
            )
        }
        Err(_) => false,
    }
}

fn borrow<'a>(fd: i32) -> std::os::fd::BorrowedFd<'a> {
    // SAFETY: the fd is only used for the duration of one call while the request
    // that names it is in flight; a closed fd yields EBADF, never UB.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

fn run(inner: &Inner, pool: &Pool, w: u32, idx: u32, op: RawOp) -> i64 {
    if matches!(op.kind, OpKind::Read | OpKind::Write) && is_stream(op.fd) {
        let events = if op.kind == OpKind::Read {
            libc::POLLIN
        } else {
            libc::POLLOUT
        };
        {
            let mut c = inner.lock();
            let s = &mut c.slots[idx as usize];
            if s.cancel_req {
                return -(libc::ECANCELED as i64);
            }
            s.interruptible = true;
        }
        let wake = pool.wake[w as usize].as_raw_fd();
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: op.fd,
                    events,
                    revents: 0,
                },
                libc::pollfd {
                    fd: wake,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            if fds[1].revents != 0 {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(&pool.wake[w as usize], &mut b);
            }
            let mut c = inner.lock();
            let s = &mut c.slots[idx as usize];
            if s.cancel_req {
                s.interruptible = false;
                return -(libc::ECANCELED as i64);
            }
            if fds[0].revents != 0 || r < 0 {
                s.interruptible = false;
                break;
            }
        }
    }
    {
        let mut c = inner.lock();
        let s = &mut c.slots[idx as usize];
        s.interruptible = false;
        if s.cancel_req {
            return -(libc::ECANCELED as i64);
        }
    }
    let len = op.len.min(MAX_RW);
    loop {
        // SAFETY: (ptr, len) is the request's buffer, owned by the runtime until the
        // request completes (see the core); the fd is the caller's.
        let r = unsafe {
            match op.kind {
                OpKind::Read => {
                    let r = libc::pread(op.fd, op.ptr as *mut libc::c_void, len, op.offset);
                    if r < 0 && errno() == libc::ESPIPE {
                        libc::read(op.fd, op.ptr as *mut libc::c_void, len)
                    } else {
                        r
                    }
                }
                OpKind::Write => {
                    if op.ordered {
                        libc::write(op.fd, op.ptr as *const libc::c_void, len)
                    } else {
                        let r = libc::pwrite(op.fd, op.ptr as *const libc::c_void, len, op.offset);
                        if r < 0 && errno() == libc::ESPIPE {
                            libc::write(op.fd, op.ptr as *const libc::c_void, len)
                        } else {
                            r
                        }
                    }
                }
                OpKind::Fsync => libc::fsync(op.fd) as isize,
                OpKind::Fdatasync => libc::fdatasync(op.fd) as isize,
            }
        };
        if r >= 0 {
            return r as i64;
        }
        let e = errno();
        if e != libc::EINTR {
            return -(e as i64);
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
