//! The AIO context: engine choice, submission of single requests, cancel by fd.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::backend::{Backend, BackendInfo};
use super::buf::{IoBuf, IoBufMut};
use super::cancel::{cancel_fd, CancelResult};
use super::engine::{Config, Engine, Inner};
use super::fsync::SyncMode;
use super::op::{BorrowFd, Kind, Op};
use super::request::Request;
use super::uring::{default_rings, MAX_RINGS};
use crate::{Error, Result};

/// Builds an [`Aio`] context with a chosen backend and sizes.
#[derive(Debug, Clone)]
pub struct Builder {
    backend: Option<Backend>,
    entries: u32,
    rings: usize,
    workers: usize,
    worker_affinity: Option<Vec<usize>>,
    max_workers: Option<(u32, u32)>,
    notify_stack: Option<usize>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            backend: None,
            entries: 256,
            rings: default_rings(),
            workers: 8,
            worker_affinity: None,
            max_workers: None,
            notify_stack: None,
        }
    }
}

impl Builder {
    /// The defaults: io_uring with 256 entries (a ring per CPU, at most 4; see
    /// [`rings`](Builder::rings)), falling back to 8 pool threads.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Require a backend (no fallback). Without this, `POSIXRT_AIO_BACKEND=threads|uring`
    /// decides, and without that io_uring is tried first.
    #[must_use]
    pub fn backend(mut self, b: Backend) -> Builder {
        self.backend = Some(b);
        self
    }

    /// Requests the io_uring ring holds at once (a power of two, 1..=32768); more
    /// wait in the priority queue.
    #[must_use]
    pub fn entries(mut self, n: u32) -> Builder {
        self.entries = n;
        self
    }

    /// io_uring: the most rings the context uses (1..=8; default one per CPU,
    /// at most 4). The kernel runs a ring's inline work (a cached read's copy)
    /// under that ring's lock, so threads that submit to one ring at the same
    /// time copy one after the other. A thread that submits while another is
    /// entering the ring (or about to) puts its requests into a ring of its
    /// own, created then: threads that submit at the same time copy at the
    /// same time, and a program that submits from one thread keeps one ring.
    /// With more than one ring, a thread that has to sleep in a wait polls the
    /// rings' fds instead of waiting in one ring. `rings(1)` keeps exactly
    /// one. Ignored by the thread engine.
    ///
    /// ```
    /// use posixrt::aio::Aio;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let aio = Aio::builder().rings(1).build()?;
    /// // One ring on io_uring, and it stays one (none on the thread pool).
    /// assert!(aio.rings() <= 1);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn rings(mut self, n: usize) -> Builder {
        self.rings = n;
        self
    }

    /// Threads of the pool backend (1..=1024).
    #[must_use]
    pub fn workers(mut self, n: usize) -> Builder {
        self.workers = n;
        self
    }

    /// io_uring: the CPUs the kernel workers (io-wq, which run requests the
    /// kernel cannot complete inline) may run on (`IORING_REGISTER_IOWQ_AFF`).
    /// The kernel keeps io-wq per thread and applies this to the workers of the
    /// thread that calls [`build`](Builder::build) only: requests another thread
    /// submits run on that thread's workers, which follow its own affinity (pin
    /// the submitting threads, or the process). Ignored by the thread engine (pin
    /// its workers with the process's affinity). An empty set is EINVAL at
    /// `build`, as for `sched_setaffinity`.
    ///
    /// # References
    /// - [`io_uring_register(2)`](https://man7.org/linux/man-pages/man2/io_uring_register.2.html)
    #[must_use]
    #[doc(alias = "IORING_REGISTER_IOWQ_AFF")]
    #[doc(alias = "io_uring_register_iowq_aff")]
    pub fn worker_affinity(mut self, cpus: impl IntoIterator<Item = usize>) -> Builder {
        self.worker_affinity = Some(cpus.into_iter().collect());
        self
    }

    /// io_uring: at most `bounded` kernel workers for bounded work (regular
    /// files, block devices) and `unbounded` for unbounded work (sockets, pipes),
    /// per NUMA node (`IORING_REGISTER_IOWQ_MAX_WORKERS`; 0 keeps the kernel's
    /// limit). Ignored by the thread engine (see [`workers`](Builder::workers)).
    ///
    /// # References
    /// - [`io_uring_register(2)`](https://man7.org/linux/man-pages/man2/io_uring_register.2.html)
    #[must_use]
    #[doc(alias = "IORING_REGISTER_IOWQ_MAX_WORKERS")]
    #[doc(alias = "io_uring_register_iowq_max_workers")]
    pub fn max_workers(mut self, bounded: u32, unbounded: u32) -> Builder {
        self.max_workers = Some((bounded, unbounded));
        self
    }

    /// The stack size, in bytes, of the threads that run the context's
    /// [`Notify::Thread`](super::Notify::Thread) callbacks (`pthread_attr_setstacksize`
    /// for a C `SIGEV_THREAD` function), for a callback that needs more (or
    /// less) than Rust's default for a new thread: 2 MiB, or `RUST_MIN_STACK`
    /// where set. Rounded up as [`std::thread::Builder::stack_size`] does (to whole pages, at least
    /// `PTHREAD_STACK_MIN`: 0 asks for the smallest stack the system allows).
    /// A size above `isize::MAX` is EINVAL at [`build`](Builder::build); a
    /// smaller one the system cannot give makes the first `Thread` request
    /// fail with `pthread_create`'s error (EAGAIN).
    ///
    /// ```
    /// use posixrt::aio::Aio;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // For callbacks that keep a 4 MiB array on their stack.
    /// let aio = Aio::builder().notify_stack_size(8 << 20).build()?;
    /// # drop(aio);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    #[doc(alias = "pthread_attr_setstacksize")]
    pub fn notify_stack_size(mut self, bytes: usize) -> Builder {
        self.notify_stack = Some(bytes);
        self
    }

    /// Creates the context (`io_uring_setup`, or the thread pool).
    ///
    /// # Errors
    /// EINVAL for bad sizes (entries, rings, workers, a notification stack
    /// above `isize::MAX`, an empty or out-of-range CPU set); resource errors (ENOMEM, EMFILE, EAGAIN) from
    /// `io_uring_setup` are reported, never fallen back from.
    pub fn build(self) -> Result<Aio> {
        if !(1..=32768).contains(&self.entries) || !self.entries.is_power_of_two() {
            return Err(Error::invalid(
                "posixrt::aio::Builder::build",
                format!("{} io_uring entries", self.entries),
            )
            .with_hint("entries must be a power of two in 1..=32768"));
        }
        if !(1..=MAX_RINGS).contains(&self.rings) {
            return Err(Error::invalid(
                "posixrt::aio::Builder::build",
                format!("{} io_uring rings", self.rings),
            )
            .with_hint(format!("rings must be in 1..={MAX_RINGS}")));
        }
        if !(1..=1024).contains(&self.workers) {
            return Err(Error::invalid(
                "posixrt::aio::Builder::build",
                format!("{} pool threads", self.workers),
            )
            .with_hint("workers must be in 1..=1024"));
        }
        if let Some(bytes) = self.notify_stack.filter(|&b| b > isize::MAX as usize) {
            // (pthread_create fails with EINVAL for such a size, past the
            // first `Thread` request: say so here, naming the option.)
            return Err(Error::invalid(
                "posixrt::aio::Builder::build",
                format!("a notification thread stack of {bytes} bytes"),
            )
            .with_hint("notify_stack_size must be at most isize::MAX bytes"));
        }
        let mut set = None;
        if let Some(cpus) = &self.worker_affinity {
            // SAFETY: an all-zero cpu_set_t is a valid, empty set.
            let mut s: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
            for &c in cpus {
                if c >= max {
                    return Err(Error::invalid(
                        "io_uring_register",
                        format!("CPU {c} is out of range"),
                    )
                    .with_hint(format!("worker_affinity takes CPU numbers below {max}")));
                }
                // SAFETY: `c` is below the set's size, checked above.
                unsafe { libc::CPU_SET(c, &mut s) };
            }
            if cpus.is_empty() {
                return Err(Error::invalid("io_uring_register", "an empty CPU set")
                    .with_hint("worker_affinity needs at least one CPU"));
            }
            set = Some(s);
        }
        let inner = Inner::new(&Config {
            backend: self.backend,
            entries: self.entries,
            rings: self.rings,
            workers: self.workers,
            notify_stack: self.notify_stack,
        })?;
        inner.add_user();
        let aio = Aio { inner };
        if let Engine::Uring(r) = &aio.inner.engine {
            let reg = |e: std::io::Error, what: &str| {
                Error::from_errno(
                    "io_uring_register",
                    e.raw_os_error().unwrap_or(libc::EINVAL),
                )
                .with_message(format!("setting the io_uring kernel workers' {what}"))
            };
            if let Some(s) = &set {
                r.set_worker_affinity(s)
                    .map_err(|e| reg(e, "CPU affinity (IORING_REGISTER_IOWQ_AFF)"))?;
            }
            if let Some((b, u)) = self.max_workers {
                r.set_max_workers(b, u)
                    .map_err(|e| reg(e, "limits (IORING_REGISTER_IOWQ_MAX_WORKERS)"))?;
            }
        }
        Ok(aio)
    }
}

/// A POSIX AIO context: submits requests, waits for them, cancels them.
///
/// Cheap to clone (clones share the engine). The engine stops when the last clone
/// and the last [`Request`] are dropped.
///
/// A context belongs to the process that made it. In a child made by `fork`,
/// the parent's rings and requests are still the parent's (the rings' memory
/// is shared with it): there a context the parent made refuses to submit, to
/// register an fd, to wait and to cancel ([`ErrorKind::InvalidState`](crate::ErrorKind),
/// with the hint to make a new one), reaps nothing, and dropping it cancels
/// none of the parent's requests. Make a new context in the child. (A
/// thread-engine context starts threads: in the child of a parent with other
/// threads, Rust's thread start-up can hang if one of them was starting or
/// ending at the fork. A thread engine's workers and poller have all started
/// when [`Builder::build`](super::Builder::build) returns; its terminal
/// writers, `posixrt-aio-tty`, start when a write to a blocking terminal needs
/// one and end after 2 s without work.)
pub struct Aio {
    pub(crate) inner: Arc<Inner>,
}

impl Clone for Aio {
    fn clone(&self) -> Aio {
        self.inner.add_user();
        Aio {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl Drop for Aio {
    fn drop(&mut self) {
        self.inner.drop_user();
    }
}

impl std::fmt::Debug for Aio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aio")
            .field("backend", &self.inner.info)
            .finish()
    }
}

impl Aio {
    /// A context with the default engine: io_uring, or the thread pool when
    /// io_uring is refused (see [`Aio::backend`] for which and why).
    pub fn new() -> Result<Aio> {
        Builder::new().build()
    }

    /// A [`Builder`] to choose the backend and sizes.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Which backend is live, and why.
    pub fn backend(&self) -> &BackendInfo {
        &self.inner.info
    }

    /// io_uring rings this context has created so far (0 on the thread engine):
    /// 1 until two threads submit at the same time (see
    /// [`Builder::rings`]).
    pub fn rings(&self) -> usize {
        match &self.inner.engine {
            Engine::Uring(r) => r.rings(),
            Engine::Threads(_) => 0,
        }
    }

    /// Test hook, not part of the API: the calling thread's io_uring requests
    /// go into ring `k` (created if need be, within [`Builder::rings`]), or
    /// are placed as usual with `None`.
    #[doc(hidden)]
    pub fn __use_ring(&self, k: Option<usize>) {
        if let Engine::Uring(r) = &self.inner.engine {
            r.force(k);
        }
    }

    /// Test hook, not part of the API: runs `f` with the context's core lock
    /// held (no request can be submitted, reaped or waited for meanwhile).
    #[doc(hidden)]
    pub fn __with_core_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.inner.with_core_locked(f)
    }

    /// Submits one request (`aio_read`, `aio_write` or `aio_fsync`, depending on
    /// `op`). The buffer is owned by the runtime until the request is done.
    ///
    /// # Errors
    /// EINVAL for a `reqprio` outside 0..=20, a negative offset, an offset + length
    /// that overflows, a bad signal number, or an `LIO_NOP`; for an fsync, EBADF
    /// and EINVAL (see [`Aio::fsync`]); EAGAIN
    /// ([`OutOfResources`](crate::ErrorKind::OutOfResources)) when the request
    /// cannot be queued for want of descriptors;
    /// [`InvalidState`](crate::ErrorKind::InvalidState) in a child made by
    /// `fork`, through the parent's context. What the transfer meets, such as
    /// EBADF for a read on a descriptor not open for reading, comes in the
    /// request's result instead ([`Request::error`]; see the
    /// [module docs](super#errors-in-the-call-or-in-the-result)).
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    #[doc(alias = "aio_read")]
    #[doc(alias = "aio_write")]
    #[doc(alias = "aio_fsync")]
    pub fn submit<B: Send + 'static>(&self, mut op: Op<'_, B>) -> Result<Request<B>> {
        let call = match op.kind {
            Kind::Io(super::table::OpKind::Read) => "aio_read",
            Kind::Io(super::table::OpKind::Write) => "aio_write",
            Kind::Io(_) => "aio_fsync",
            Kind::Nop => "aio_read",
        };
        let threads = matches!(self.inner.engine, Engine::Threads(_));
        let mut p = op.prepare(call, threads)?;
        let notify = std::mem::take(&mut op.notify);
        self.inner.prepare_notify(&notify, call)?;
        let (idx, gen) = self
            .inner
            .submit_one(&mut p, notify)
            .map_err(|e| super::inherited::naming_call(e, call))?;
        Ok(Request::new(
            Arc::clone(&self.inner),
            idx,
            gen,
            op.buf.take(),
        ))
    }

    /// `aio_read`: reads `buf.len()` bytes at `offset`.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    #[inline]
    #[doc(alias = "aio_read")]
    pub fn read<'fd, B: IoBufMut>(
        &self,
        fd: impl BorrowFd<'fd>,
        offset: i64,
        buf: B,
    ) -> Result<Request<B>> {
        self.submit(Op::read(fd, offset, buf))
    }

    /// `aio_write`: writes `buf` at `offset` (appends on `O_APPEND`/stream fds).
    ///
    /// # References
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    #[inline]
    #[doc(alias = "aio_write")]
    pub fn write<'fd, B: IoBuf>(
        &self,
        fd: impl BorrowFd<'fd>,
        offset: i64,
        buf: B,
    ) -> Result<Request<B>> {
        self.submit(Op::write(fd, offset, buf))
    }

    /// `aio_fsync`: flushes `fd` after every request queued on it before this one.
    ///
    /// # References
    /// - [`aio_fsync(3)`](https://man7.org/linux/man-pages/man3/aio_fsync.3.html)
    ///
    /// # Errors
    /// EBADF if `fd` is not open for writing; EINVAL if it cannot be synchronised
    /// (a pipe, socket, FIFO or terminal). Both at submission, as POSIX says.
    /// At completion, besides the sync's own errors: the error of the first
    /// request it covers (on `fd`, in flight when it came) that failed, as
    /// POSIX says ("In the event that any of the queued I/O operations fail,
    /// aio_fsync() shall return the error condition defined for read() and
    /// write()").
    #[inline]
    #[doc(alias = "aio_fsync")]
    pub fn fsync<'fd>(&self, fd: impl BorrowFd<'fd>, mode: SyncMode) -> Result<Request<()>> {
        self.submit(Op::<()>::fsync(fd, mode))
    }

    /// `aio_cancel(fd, NULL)`: cancels every request on `fd`.
    ///
    /// # Errors
    /// EBADF if `fd` is not open; [`ErrorKind::InvalidState`](crate::ErrorKind)
    /// in a child made by `fork`, through the parent's context (its requests
    /// are the parent's).
    ///
    /// # References
    /// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
    #[doc(alias = "aio_cancel")]
    pub fn cancel_fd(&self, fd: RawFd) -> Result<CancelResult> {
        cancel_fd(&self.inner, fd)
    }

    /// How many `SIGEV_SIGNAL` and `SIGEV_THREAD_ID` notifications of this
    /// context could not be queued (`rt_sigqueueinfo` or `rt_tgsigqueueinfo`
    /// failed: EAGAIN when `RLIMIT_SIGPENDING` is reached, ESRCH when a
    /// [`Notify::ThreadSignal`](super::Notify::ThreadSignal)'s thread has
    /// ended). Each failure also emits the `aio_notify_failed` trace event.
    #[doc(alias = "rt_sigqueueinfo")]
    pub fn failed_notifications(&self) -> u64 {
        self.inner.notify_failed.load(Ordering::Relaxed)
    }
}
