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
