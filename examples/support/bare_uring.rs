//! The least a tokio future that reads through io_uring can cost: the floor
//! `aio_peers` measures `posixrt_await` against (engine `tokio_bare_uring`).
//!
//! A read future pushes its entry at its first poll, under one uncontended
//! lock, and leaves its waker beside it. The first push of a turn wakes a
//! flusher task, which a `current_thread` runtime polls after the tasks that
//! were ready before it: it enters the ring once for the turn, reaps, and
//! wakes the readers, whose next poll takes the result. No checks, no
//! cancellation, no fd safety, no notification, no priority, no trace: the
//! future is `Send`, and that is all. A read dropped in flight leaks its
//! buffer to the kernel.

use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use io_uring::{opcode, types, IoUring};
use posixrt::advise::AlignedBuf;

pub struct BareRing {
    shared: Mutex<Shared>,
}

struct Shared {
    ring: IoUring,
    /// Per slot: the reader's waker, then its result.
    slots: Vec<(Option<Waker>, Option<i32>)>,
    free: Vec<u32>,
    in_flight: usize,
    flusher: Option<Waker>,
    /// Entries pushed since the flusher last ran (it is woken once per turn).
    due: bool,
}

impl BareRing {
    /// A ring of `entries` entries, with `fd` in its file table (as posixrt's
    /// benchmark engines register theirs): reads name it by its slot.
    pub fn new(entries: u32, fd: RawFd) -> std::io::Result<Arc<BareRing>> {
        let ring = IoUring::new(entries)?;
        ring.submitter().register_files(&[fd])?;
        Ok(Arc::new(BareRing {
            shared: Mutex::new(Shared {
                ring,
                slots: Vec::new(),
                free: Vec::new(),
                in_flight: 0,
                flusher: None,
                due: false,
            }),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A read of `buf.len()` bytes of the registered file at `off`; resolves to
    /// the result (bytes or -errno) and the buffer.
    pub fn read(&self, off: u64, buf: AlignedBuf) -> Read<'_> {
        Read {
            ring: self,
            off,
            buf: Some(buf),
            idx: None,
        }
    }

    /// The flusher: run it as a task beside the readers, until `stop` is set
    /// and no read is in flight.
    pub async fn flusher(self: Arc<Self>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
        let mut woken: Vec<Waker> = Vec::with_capacity(64);
        std::future::poll_fn(|cx| {
            let mut s = self.lock();
            s.due = false;
            if let Err(e) = s.ring.submit() {
                return Poll::Ready(Err(e));
            }
            let Shared {
                ring,
                slots,
                in_flight,
                ..
            } = &mut *s;
            for cqe in ring.completion() {
                let slot = &mut slots[cqe.user_data() as usize];
                slot.1 = Some(cqe.result());
                woken.extend(slot.0.take());
                *in_flight -= 1;
            }
            let (idle, busy) = (s.in_flight == 0, s.in_flight > 0);
            match &s.flusher {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => s.flusher = Some(cx.waker().clone()),
            }
            if busy {
                // Reads the kernel did not finish inline: look again next turn.
                s.due = true;
                cx.waker().wake_by_ref();
            }
            drop(s);
            woken.drain(..).for_each(Waker::wake);
            if idle && stop.load(Ordering::Acquire) {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

pub struct Read<'a> {
    ring: &'a BareRing,
    off: u64,
    buf: Option<AlignedBuf>,
    idx: Option<u32>,
}

impl Future for Read<'_> {
    type Output = (i32, AlignedBuf);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut s = this.ring.lock();
        let Some(idx) = this.idx else {
            let idx = s.free.pop().unwrap_or_else(|| {
                s.slots.push((None, None));
                (s.slots.len() - 1) as u32
            });
            let Some(buf) = this.buf.as_mut() else {
                return Poll::Pending;
            };
            let e = opcode::Read::new(types::Fixed(0), buf.as_mut_ptr(), buf.len() as u32)
                .offset(this.off)
                .build()
                .user_data(idx as u64);
            // SAFETY: the buffer stays alive until the completion is reaped: this
            // future holds it, and leaks it if dropped before then (`Drop`).
            if unsafe { s.ring.submission().push(&e) }.is_err() {
                s.free.push(idx);
                drop(s);
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            s.slots[idx as usize].0 = Some(cx.waker().clone());
            s.in_flight += 1;
            this.idx = Some(idx);
            let flusher = (!s.due).then(|| s.flusher.clone()).flatten();
            s.due = true;
            drop(s);
            if let Some(f) = flusher {
                f.wake();
            }
            return Poll::Pending;
        };
        let slot = &mut s.slots[idx as usize];
        match slot.1.take() {
            Some(r) => {
                s.free.push(idx);
                this.idx = None;
                drop(s);
                match this.buf.take() {
                    Some(b) => Poll::Ready((r, b)),
                    None => Poll::Pending,
                }
            }
            None => {
                match &slot.0 {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => slot.0 = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Read<'_> {
    fn drop(&mut self) {
        if self.idx.is_some() {
            // Still in the kernel: its buffer goes with it.
            std::mem::forget(self.buf.take());
        }
    }
}
