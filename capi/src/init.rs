//! `aio_init` (GNU): the engine's sizes, taken before the first request
//! starts it (they are read once, by `crate::aio`'s engine start).

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use crate::aio::{engine_if_started, CFG_ENTRIES, CFG_WORKERS};
use crate::debug::debug;
use crate::nocancel::NoCancel;

/// glibc's `struct aioinit`.
#[repr(C)]
pub struct AioInit {
    aio_threads: c_int,
    aio_num: c_int,
    aio_locks: c_int,
    aio_usedba: c_int,
    aio_debug: c_int,
    aio_numusers: c_int,
    aio_idle_time: c_int,
    aio_reserved: c_int,
}

/// `aio_init` (GNU): `aio_threads` sizes the fallback thread pool (1..=1024),
/// `aio_num` the io_uring ring (rounded up to a power of two, at most 32768).
/// Only before the first request; the other fields are ignored.
///
/// # Safety
/// `init` is null or a valid `struct aioinit`.
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_init(init: *const AioInit) {
    let _nc = NoCancel::new();
    if init.is_null() {
        return;
    }
    // SAFETY: valid by contract.
    let (threads, num) = unsafe { ((*init).aio_threads, (*init).aio_num) };
    if engine_if_started().is_some() {
        debug(format_args!("aio_init after the first request: no effect"));
        return;
    }
    if (1..=1024).contains(&threads) {
        CFG_WORKERS.store(threads as u32, Ordering::Relaxed);
    }
    if num > 0 {
        let n = (num as u32).min(32768).next_power_of_two();
        CFG_ENTRIES.store(n, Ordering::Relaxed);
    }
}

const _: () = assert!(std::mem::size_of::<AioInit>() == 32);
