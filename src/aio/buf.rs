//! Owned buffers for in-flight requests.
//!
//! A request takes its buffer by value and gives it back with the result, so the
//! kernel (or a pool thread) can never write into memory the program has freed or
//! is still reading. A buffer type qualifies when the bytes it points to stay at the
//! same address while the value is moved around and not otherwise touched: `Vec<u8>`,
//! `Box<[u8]>` and `&'static` slices do; an array on the stack does not.

/// A buffer the runtime may read from while a write is in flight.
///
/// # Safety
///
/// Implementors guarantee that [`stable_ptr`](IoBuf::stable_ptr) points to
/// [`bytes_len`](IoBuf::bytes_len) initialised bytes, and that the pointer stays
/// valid and unchanged while the value is moved (but not mutated or dropped).
pub unsafe trait IoBuf: Send + 'static {
    /// Address of the first byte.
    fn stable_ptr(&self) -> *const u8;
    /// Number of bytes to transfer.
    fn bytes_len(&self) -> usize;
}

/// A buffer the runtime may write into while a read is in flight.
///
/// # Safety
///
/// As for [`IoBuf`], and [`stable_mut_ptr`](IoBufMut::stable_mut_ptr) must be valid
/// for writes of [`bytes_len`](IoBuf::bytes_len) bytes.
pub unsafe trait IoBufMut: IoBuf {
    /// Address of the first byte, for writing.
    fn stable_mut_ptr(&mut self) -> *mut u8;
}

// SAFETY: a Vec's heap block does not move when the Vec value moves.
unsafe impl IoBuf for Vec<u8> {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: as above; `as_mut_ptr` covers `len()` initialised bytes.
unsafe impl IoBufMut for Vec<u8> {
    #[inline]
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
}

// SAFETY: a boxed slice's heap block does not move when the Box moves.
unsafe impl IoBuf for Box<[u8]> {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: as above.
unsafe impl IoBufMut for Box<[u8]> {
    #[inline]
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
}

// SAFETY: static data never moves and is never freed.
unsafe impl IoBuf for &'static [u8] {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: static data never moves and is never freed.
unsafe impl IoBuf for &'static str {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: a String's heap block does not move when the String moves.
unsafe impl IoBuf for String {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: a leaked mutable slice is never freed and the reference is exclusive.
unsafe impl IoBuf for &'static mut [u8] {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: as above.
unsafe impl IoBufMut for &'static mut [u8] {
    #[inline]
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
}

// SAFETY: an AlignedBuf owns one heap block (posix_memalign) that does not move
// when the value moves and stays valid until it is dropped.
unsafe impl IoBuf for crate::advise::AlignedBuf {
    #[inline]
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    #[inline]
    fn bytes_len(&self) -> usize {
        self.len()
    }
}

// SAFETY: as above; `as_mut_ptr` covers `len()` zero-initialised bytes.
unsafe impl IoBufMut for crate::advise::AlignedBuf {
    #[inline]
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
}
