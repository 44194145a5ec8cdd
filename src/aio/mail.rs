//! A request's result box: posted by its completion under the core lock, read
//! by the request's handle without it (see `Core::attach_mail`).

/// The result of one request, posted by its completion (under the core lock) and
/// read by its handle without the lock. Once posted, the request's slot is free.
#[derive(Debug)]
pub(crate) struct Mail(std::sync::atomic::AtomicI64);

impl Mail {
    /// Not posted yet.
    const EMPTY: i64 = i64::MIN;

    pub(crate) fn new() -> Mail {
        Mail(std::sync::atomic::AtomicI64::new(Mail::EMPTY))
    }

    /// The posted result, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<i64> {
        match self.0.load(std::sync::atomic::Ordering::Acquire) {
            Mail::EMPTY => None,
            r => Some(r),
        }
    }

    /// Makes the box empty again, for another request.
    #[inline]
    pub(crate) fn clear(&self) {
        self.0
            .store(Mail::EMPTY, std::sync::atomic::Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn post(&self, res: i64) {
        self.0.store(res, std::sync::atomic::Ordering::Release);
    }
}

/// Where a slot posts its result: the address of a [`Mail`] (0: none).
///
/// The handle of the request owns the box (an `Arc`) and keeps it alive while
/// its slot holds the address: the slot lets go of it when it posts, or when
/// the handle gives the request up (under the core lock, before it drops the
/// box). A handle leaked with `mem::forget` leaks the box too. A plain address
/// spares a reference count taken and dropped per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MailAddr(usize);

impl MailAddr {
    /// No box.
    pub(crate) const NONE: MailAddr = MailAddr(0);

    pub(crate) fn of(m: &std::sync::Arc<Mail>) -> MailAddr {
        MailAddr(std::sync::Arc::as_ptr(m) as usize)
    }

    #[inline]
    pub(crate) fn is_none(self) -> bool {
        self.0 == 0
    }

    /// Posts `res` to the box.
    ///
    /// # Safety
    /// The box is alive: the address came from [`MailAddr::of`], and its owner
    /// has not let go of it since (see the type's docs).
    #[inline]
    pub(crate) unsafe fn post(self, res: i64) {
        debug_assert!(!self.is_none());
        // SAFETY: per the caller's contract, the address is that of a live
        // `Mail`, which is only ever used through shared references (its
        // contents are atomic).
        let m = unsafe { &*(self.0 as *const Mail) };
        m.post(res);
    }
}
