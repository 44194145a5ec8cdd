//! The calling thread's trace recorder ([`rt::trace::ThreadRecorder`]) cached in
//! an initial-exec thread-local word, so `posix_trace_event` finds it with two
//! instructions instead of a call to `__tls_get_addr` (which every Rust
//! `thread_local!` of a shared library costs: general-dynamic TLS).
//!
//! The word is declared in assembly because stable Rust cannot choose a TLS model.
//! Initial-exec TLS in a shared library takes 8 bytes of glibc's static TLS
//! surplus (the linker marks the library `DF_STATIC_TLS`); that works for
//! `-lposixrt`, `LD_PRELOAD` and `dlopen` alike. A new thread starts with the word
//! zero, and the word dies with its thread, as the recorder it caches does.
//! On other targets than x86_64 the recorder is looked up on every call.

use rt::trace::{EventId, ThreadRecorder};

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 3",
    // Global for the other codegen units of this crate, hidden to the library.
    ".globl posixrt_capi_recorder",
    ".hidden posixrt_capi_recorder",
    ".type posixrt_capi_recorder,@object",
    ".size posixrt_capi_recorder,8",
    "posixrt_capi_recorder:",
    ".zero 8",
    ".popsection",
);

/// [`rt::trace::event`] through the cached recorder.
///
/// With the recorder cached and the record taking the core's fast path, this
/// makes no call, so `posix_trace_event` needs no stack frame.
#[inline(always)]
pub(crate) fn event(id: EventId, data: &[u8]) {
    let p = cached();
    if p.is_null() {
        return event_uncached(id, data);
    }
    // SAFETY: only `event_uncached` stores into this thread's word, a pointer
    // from `into_raw` on this same thread.
    unsafe { ThreadRecorder::from_raw(p) }.event(id, data)
}

/// The thread's first event: looks the recorder up and caches it.
#[cold]
#[inline(never)]
fn event_uncached(id: EventId, data: &[u8]) {
    if let Some(r) = ThreadRecorder::current() {
        store(r.into_raw());
        r.event(id, data);
    }
}

/// [`event`] for data packed into a word (`len <= 8`).
#[inline(always)]
pub(crate) fn event_word(pass: u8, id: EventId, len: usize, word: u64) {
    let p = cached();
    if p.is_null() {
        return event_word_uncached(pass, id, len, word);
    }
    // SAFETY: as in `event`.
    unsafe { ThreadRecorder::from_raw(p) }.event_word(pass, id, len, word)
}

#[cold]
#[inline(never)]
fn event_word_uncached(pass: u8, id: EventId, len: usize, word: u64) {
    if let Some(r) = ThreadRecorder::current() {
        store(r.into_raw());
        r.event_word(pass, id, len, word);
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn cached() -> *mut () {
    let p: *mut ();
    // SAFETY: loads the calling thread's 8-byte word `posixrt_capi_recorder`
    // (defined above in .tbss) through its GOT offset from the thread pointer.
    unsafe {
        std::arch::asm!(
            "movq posixrt_capi_recorder@GOTTPOFF(%rip), {p}",
            "movq %fs:({p}), {p}",
            p = out(reg) p,
            options(att_syntax, nostack, preserves_flags, readonly),
        );
    }
    p
}

#[cfg(target_arch = "x86_64")]
fn store(v: *mut ()) {
    // SAFETY: stores into the calling thread's 8-byte word `posixrt_capi_recorder`
    // (see `cached`); nothing else aliases it.
    unsafe {
        std::arch::asm!(
            "movq posixrt_capi_recorder@GOTTPOFF(%rip), {t}",
            "movq {v}, %fs:({t})",
            t = out(reg) _,
            v = in(reg) v,
            options(att_syntax, nostack, preserves_flags),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn cached() -> *mut () {
    std::ptr::null_mut()
}

#[cfg(not(target_arch = "x86_64"))]
fn store(_: *mut ()) {}
