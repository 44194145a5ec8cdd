//! Named spawn: the seed's `pthread_create_named`.

use std::sync::mpsc;
use std::thread::{JoinHandle, Thread};

use crate::{Error, ErrorKind, Result};

/// Builds a thread that is marked before it runs any user code (the seed's
/// `pthread_create_named`).
///
/// ```
/// let t = posixrt::mark::Builder::new("worker 1").stack_size(256 * 1024).spawn(|| {
///     posixrt::mark::current()
/// })?;
/// assert_eq!(t.join().unwrap().as_deref(), Some("worker 1"));
/// # Ok::<(), posixrt::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    marker: String,
    stack_size: Option<usize>,
}

impl Builder {
    /// A builder for a thread marked `marker` (also its std and kernel name; an
    /// empty marker names neither, so the thread keeps the kernel name it inherits
    /// from the thread that spawns it).
    pub fn new(marker: impl Into<String>) -> Builder {
        Builder {
            marker: marker.into(),
            stack_size: None,
        }
    }

    /// The stack size in bytes (`std::thread::Builder::stack_size`).
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Spawns the thread; it sets its marker (and kernel name) with
    /// [`set`](super::set) and only then calls `f`.
    ///
    /// Returns once the mark is in place, so a reader that runs after this returns
    /// sees the thread. If marking fails (bad marker, registry full), `f` never runs
    /// and the error is returned.
    ///
    /// # Errors
    ///
    /// - [`InvalidInput`](crate::ErrorKind::InvalidInput) if the marker contains a
    ///   NUL byte or is longer than [`MARKER_MAX`](super::MARKER_MAX) bytes;
    /// - [`OutOfResources`](crate::ErrorKind::OutOfResources) if the thread cannot
    ///   be created (thread limit, memory for the stack);
    /// - the new thread's [`set`](super::set) errors: all slots taken
    ///   (`OutOfResources`), the registry file or `/proc/thread-self/stat` errors,
    ///   a refused kernel name;
    /// - [`Other`](crate::ErrorKind::Other) if the new thread ended before it
    ///   reported its mark.
    #[doc(alias = "pthread_create")]
    pub fn spawn<F, T>(self, f: F) -> Result<MarkedThread<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if self.marker.as_bytes().contains(&0) {
            return Err(
                Error::invalid("pthread_create_named", "the name contains a NUL byte").with_hint(
                    "a thread name cannot hold NUL: remove it, or spawn without a name and \
                 mark the thread with mark::set",
                ),
            );
        }
        if self.marker.len() > super::MARKER_MAX {
            return Err(Error::invalid(
                "pthread_create_named",
                format!(
                    "the name is {} bytes, the limit is {}",
                    self.marker.len(),
                    super::MARKER_MAX
                ),
            )
            .with_hint("shorten the marker; put numbers in the raw block (write_raw)"));
        }
        // std names the kernel thread too, and an empty name would empty it:
        // without one the thread keeps the kernel name it inherits from its
        // spawner, as `set("")` keeps the current one.
        let mut b = std::thread::Builder::new();
        if !self.marker.is_empty() {
            b = b.name(self.marker.clone());
        }
        if let Some(s) = self.stack_size {
            b = b.stack_size(s);
        }
        let (tx, rx) = mpsc::sync_channel::<Result<i32>>(1);
        let marker = self.marker;
        let handle = b
            .spawn(move || {
                let r =
                    super::set(&marker).map(|()| rustix::thread::gettid().as_raw_nonzero().get());
                let ok = r.is_ok();
                let _ = tx.send(r);
                drop(tx);
                if ok {
                    Some(f())
                } else {
                    None
                }
            })
            .map_err(|e| {
                Error::new(ErrorKind::OutOfResources, "pthread_create", e.to_string())
                    .with_hint("too many threads or not enough memory for the stack")
            })?;
        match rx.recv() {
            Ok(Ok(tid)) => Ok(MarkedThread { inner: handle, tid }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => {
                let _ = handle.join();
                Err(Error::new(
                    ErrorKind::Other,
                    "pthread_create_named",
                    "the new thread ended before marking itself",
                ))
            }
        }
    }
}

/// `pthread_create_named`: spawns a thread marked `marker` before it runs `f`.
/// See [`Builder`] for a stack size.
///
/// # Errors
///
/// Those of [`Builder::spawn`].
#[doc(alias = "pthread_create")]
#[doc(alias = "pthread_setname_np")]
pub fn spawn_named<F, T>(marker: &str, f: F) -> Result<MarkedThread<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new(marker).spawn(f)
}

/// A thread spawned with a mark; join it like a [`JoinHandle`].
#[derive(Debug)]
pub struct MarkedThread<T> {
    inner: JoinHandle<Option<T>>,
    tid: i32,
}

impl<T> MarkedThread<T> {
    /// Waits for the thread.
    ///
    /// # Errors
    ///
    /// `Err` carries the thread's panic payload.
    pub fn join(self) -> std::thread::Result<T> {
        match self.inner.join()? {
            Some(v) => Ok(v),
            None => Err(Box::new("marked thread did not run its function")),
        }
    }

    /// The kernel thread id (as `tfp` lists it).
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The std thread handle.
    pub fn thread(&self) -> &Thread {
        self.inner.thread()
    }

    /// Whether the thread has finished.
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
}
