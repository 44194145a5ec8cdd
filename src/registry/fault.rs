//! A registry file truncated under its owner at any moment: the `SIGBUS`
//! handler that keeps the owner alive (see the [module docs](super#a-file-truncated-under-its-owner)).
//!
//! Each live [`Registry`](super::Registry) enters its mapping in [`MAPS`]. A
//! store or load that faults inside one (a page past the file's new end)
//! runs [`on_sigbus`], which extends the file to its size again and backs the
//! faulting page (`ftruncate`, `fallocate`), or, when that page cannot be
//! backed (ENOSPC), maps private anonymous memory over it, so that the access
//! completes when the handler returns. It bumps the entry's epoch: writers
//! compare it with the epoch their slot was claimed at
//! ([`SlotWriter::wiped`](super::SlotWriter::wiped)), and the next
//! [`Registry::check_size`](super::Registry::check_size) or claim puts the
//! rest back (header, wiped slots kept aside, the file mapping over anonymous
//! pages). A fault anywhere else takes the course it had before: a handler the
//! program installed earlier is called, else the default action kills the
//! process as it would have.
//!
//! The handler is installed once, at the first registry's creation; a program
//! that installs its own `SIGBUS` handler later replaces it (a truncation then
//! kills it again, unless its handler chains to the one it replaced).
//!
//! # References
//! - [`sigaction`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sigaction.html)
//! - [`signal-safety(7)`](https://man7.org/linux/man-pages/man7/signal-safety.7.html)

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{
    fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

/// One registry mapping the handler knows.
pub(crate) struct MapEntry {
    /// Odd while the entry changes (the handler skips it then).
    seq: AtomicU32,
    /// Start of the mapping (0: free entry).
    base: AtomicUsize,
    /// Length of the mapping: the file's full size.
    len: AtomicUsize,
    /// The mapped file's writable descriptor.
    fd: AtomicI32,
    /// The mapped file's device and inode: the descriptor's number may have
    /// come to name another file (a program that closed descriptors it did
    /// not open), which the handler must not touch.
    dev: AtomicU64,
    ino: AtomicU64,
    /// Bumped at each fault the handler took in this mapping, and at each
    /// repair (see [`Registry::check_size`](super::Registry::check_size)).
    pub(crate) epoch: AtomicU32,
    /// Some page of the mapping is anonymous memory now (it could not be
    /// backed in the handler): the repair maps the file over it again.
    pub(crate) detached: AtomicBool,
}

/// The mappings of this process's registries (more than 64 at once keep
/// working; the extra ones are not protected).
pub(crate) static MAPS: [MapEntry; 64] = [const {
    MapEntry {
        seq: AtomicU32::new(0),
        base: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        fd: AtomicI32::new(-1),
        dev: AtomicU64::new(0),
        ino: AtomicU64::new(0),
        epoch: AtomicU32::new(0),
        detached: AtomicBool::new(false),
    }
}; 64];

/// Enters the mapping `base..base + len` of the file open as `fd`; the
/// entry's index, or `None` if the table is full.
pub(crate) fn enter(base: usize, len: usize, fd: i32, id: (u64, u64)) -> Option<usize> {
    install();
    for (i, e) in MAPS.iter().enumerate() {
        // Take a free, stable entry by making its counter odd.
        let s = e.seq.load(Ordering::Relaxed);
        if s & 1 == 1 || e.base.load(Ordering::Relaxed) != 0 {
            continue;
        }
        if e.seq
            .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        if e.base.load(Ordering::Relaxed) != 0 {
            e.seq.store(s + 2, Ordering::Release);
            continue;
        }
        e.len.store(len, Ordering::Relaxed);
        e.fd.store(fd, Ordering::Relaxed);
        e.dev.store(id.0, Ordering::Relaxed);
        e.ino.store(id.1, Ordering::Relaxed);
        e.detached.store(false, Ordering::Relaxed);
        e.base.store(base, Ordering::Relaxed);
        e.seq.store(s + 2, Ordering::Release);
        return Some(i);
    }
    None
}

/// Tells entry `i` the new identity of the file its descriptor names (a
/// deleted registry file replaced). Not under the entry's counter: a handler
/// that reads half of it finds the identity wrong and maps private memory
/// over the page (which the replacement's mapping then replaces), where an
/// entry skipped while odd would let the fault kill the process.
pub(crate) fn set_id(i: usize, id: (u64, u64)) {
    let e = &MAPS[i];
    e.dev.store(id.0, Ordering::Relaxed);
    e.ino.store(id.1, Ordering::Relaxed);
}

/// Takes entry `i` out of the table (before its mapping is unmapped and its
/// descriptor closed).
pub(crate) fn leave(i: usize) {
    let e = &MAPS[i];
    e.seq.fetch_add(1, Ordering::Acquire);
    e.base.store(0, Ordering::Relaxed);
    e.fd.store(-1, Ordering::Relaxed);
    e.seq.fetch_add(1, Ordering::Release);
}

/// The `SIGBUS` disposition before ours (written once, before our handler is
/// installed; read only by the handler).
struct Saved(UnsafeCell<MaybeUninit<libc::sigaction>>, AtomicBool);

// SAFETY: the entry is written once, before the flag is set with Release, and
// only read after the flag is seen with Acquire.
unsafe impl Sync for Saved {}

static SAVED: Saved = Saved(
    UnsafeCell::new(MaybeUninit::uninit()),
    AtomicBool::new(false),
);

/// The page size, read before the handler is installed (the handler makes
/// system calls only).
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// Installs [`on_sigbus`] once per process (a forked child inherits it).
/// A `ForkOnce`: a child forked while another thread of its parent ran this
/// runs it again (a `std::sync::Once` would wait there forever), so a
/// repeat must leave an installed handler and its saved predecessor alone.
fn install() {
    static ONCE: crate::sys::fork::ForkOnce = crate::sys::fork::ForkOnce::new();
    ONCE.call_once(|| {
        PAGE.store(rustix::param::page_size(), Ordering::Relaxed);
        let mut old = MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: queries the current action into a zeroed, properly sized struct.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), old.as_mut_ptr()) } != 0 {
            return;
        }
        // SAFETY: `sigaction` succeeded, so `old` is initialised.
        let old = unsafe { old.assume_init() };
        if old.sa_sigaction == on_sigbus as *const () as usize {
            return; // installed before a fork
        }
        if !SAVED.1.load(Ordering::Acquire) {
            // SAFETY: written only here, once (a repeat in a forked child
            // finds the flag set), before the handler that reads it exists.
            unsafe { (*SAVED.0.get()).write(old) };
            SAVED.1.store(true, Ordering::Release);
        }
        // SAFETY: a zeroed sigaction is valid; we fill the handler, flags and mask.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_sigbus as *const () as usize;
        // SA_ONSTACK: a handler installed before (Rust's own, which reports a
        // stack overflow) runs on the alternate stack as it expects.
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            act.sa_mask = old.sa_mask;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | (old.sa_flags & libc::SA_RESTART);
        } else {
            // SAFETY: `act.sa_mask` is a valid sigset to empty.
            unsafe { libc::sigemptyset(&mut act.sa_mask) };
        }
        // SAFETY: `act` is a valid sigaction; `on_sigbus` has the SA_SIGINFO
        // signature and makes only async-signal-safe calls.
        unsafe { libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) };
    });
}

extern "C" fn on_sigbus(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: `__errno_location` is the calling thread's errno, always valid.
    let saved = unsafe { *libc::__errno_location() };
    if !repair_fault(info) {
        chain(sig, info, ctx);
    }
    // SAFETY: as above: the interrupted code gets its errno back.
    unsafe { *libc::__errno_location() = saved };
}

/// `si_code` of a `SIGBUS` for an access to a nonexistent physical address
/// (`<asm-generic/siginfo.h>`; the `libc` crate does not define it for Linux).
const BUS_ADRERR: i32 = 2;

/// Handles a fault inside a registry mapping; false if it is not one.
fn repair_fault(info: *mut libc::siginfo_t) -> bool {
    if info.is_null() {
        return false;
    }
    // SAFETY: `info` is the kernel's siginfo for this delivery (SA_SIGINFO);
    // for a fault (si_code > 0) its address field is set.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // An access past the end of a file's mapping is BUS_ADRERR. Anything else
    // (a signal sent by kill or raise, si_code <= 0; a hardware memory error,
    // BUS_MCEERR_*, which no file repair can cure) takes its former course.
    if code != BUS_ADRERR {
        return false;
    }
    for e in &MAPS {
        let s = e.seq.load(Ordering::Acquire);
        let (base, len, fd, id) = (
            e.base.load(Ordering::Relaxed),
            e.len.load(Ordering::Relaxed),
            e.fd.load(Ordering::Relaxed),
            (e.dev.load(Ordering::Relaxed), e.ino.load(Ordering::Relaxed)),
        );
        fence(Ordering::Acquire);
        if s & 1 == 1 || e.seq.load(Ordering::Relaxed) != s {
            continue;
        }
        if base == 0 || addr < base || addr - base >= len {
            continue;
        }
        e.epoch.fetch_add(1, Ordering::AcqRel);
        return back_page(e, base, len, (fd, id), addr - base);
    }
    false
}

/// Makes the page at `off` of the mapping `base..base + len` (of `fd`, if it
/// still names the file `id`) accessible again: the file extended to `len`
/// and the page backed, or the page replaced by anonymous memory.
/// Async-signal-safe (system calls only).
fn back_page(e: &MapEntry, base: usize, len: usize, file: (i32, (u64, u64)), off: usize) -> bool {
    let (fd, id) = file;
    let page = PAGE.load(Ordering::Relaxed);
    let at = off & !(page - 1);
    // SAFETY: `fd` is the registry's own descriptor, open while its mapping is
    // entered (a fault in the mapping means a live borrow of its registry);
    // `ftruncate` and `fallocate` only change that file. `st` is plain data.
    let backed = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        let ours = libc::fstat(fd, &mut st) == 0 && (st.st_dev, st.st_ino) == id;
        let whole = st.st_size >= len as i64;
        ours && (whole || libc::ftruncate(fd, len as i64) == 0)
            && libc::fallocate(fd, 0, at as i64, page.min(len - at) as i64) == 0
    };
    if backed {
        return true;
    }
    e.detached.store(true, Ordering::Release);
    // SAFETY: replaces one page inside our own mapping (page-aligned, inside
    // `base..base + len` rounded up to a page) with zeroed private memory; the
    // mapping stays valid for every reference into it.
    let p = unsafe {
        libc::mmap(
            (base + at) as *mut libc::c_void,
            page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    p != libc::MAP_FAILED
}

/// Gives a fault that is not ours the course it had before our handler.
fn chain(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
    let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
    if SAVED.1.load(Ordering::Acquire) {
        // SAFETY: the flag says the entry was written, and it is never written again.
        prev = unsafe { (*SAVED.0.get()).assume_init_read() };
    }
    if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN {
        crate::sys::sigchain::run_previous(&prev, sig, info, ctx);
        return;
    }
    // The default action: restore it; a fault then happens again when the
    // instruction is re-executed, a sent signal is raised again.
    // SAFETY: a zeroed sigaction is SIG_DFL; `sigaction` and `raise` are
    // async-signal-safe.
    crate::sys::sigchain::reset_to_default(sig);
    // SAFETY: `info` is null or the kernel's siginfo for this delivery;
    // `raise` is async-signal-safe.
    unsafe {
        if info.is_null() || (*info).si_code <= 0 {
            libc::raise(sig);
        }
    }
}
