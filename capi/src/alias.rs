//! The `*64` names of the large-file interface (`-D_FILE_OFFSET_BITS=64`
//! makes glibc's `<aio.h>` call them): the same functions, as `struct aiocb64`
//! is `struct aiocb` on LP64 targets.

use std::ffi::c_int;

use rt::aio::capi::{self as raw, Aiocb};

use crate::aio::{aio_cancel, aio_error, aio_fsync, aio_read, aio_return, aio_write, lio_listio};
use crate::suspend::aio_suspend;

macro_rules! alias64 {
    ($($name:ident => $target:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty;)*) => {$(
        /// The `*64` name (large-file interface; the same ABI on LP64 targets).
        /// "C-unwind" (the C calling convention) so that the cancellation of
        /// `aio_suspend64` may unwind through it: it holds nothing to drop.
        ///
        /// # Safety
        /// As the function without the suffix.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: forwarded contract.
            unsafe { $target($($arg),*) }
        }
    )*};
}

alias64! {
    aio_read64 => aio_read(cb: *mut Aiocb) -> c_int;
    aio_write64 => aio_write(cb: *mut Aiocb) -> c_int;
    aio_fsync64 => aio_fsync(op: c_int, cb: *mut Aiocb) -> c_int;
    aio_error64 => aio_error(cb: *const Aiocb) -> c_int;
    aio_return64 => aio_return(cb: *mut Aiocb) -> isize;
    aio_suspend64 => aio_suspend(list: *const *const Aiocb, nent: c_int, timeout: *const libc::timespec) -> c_int;
    aio_cancel64 => aio_cancel(fd: c_int, cb: *mut Aiocb) -> c_int;
    lio_listio64 => lio_listio(mode: c_int, list: *const *mut Aiocb, nent: c_int, sig: *const raw::SigEvent) -> c_int;
}
