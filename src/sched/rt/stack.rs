//! The stack step of the real-time setup: touch the calling thread's stack
//! before the loop needs it ([`prefault_stack`], re-exported from `rt`).

use super::{status_kib, PAGE};
use crate::sched::hint::MemlockFacts;
use crate::{Error, ErrorKind, Result};

/// Touches `bytes` of the calling thread's stack below the current frame, so those
/// pages are present (and, after `mlockall(MCL_FUTURE)`, locked) before a real-time
/// loop needs them. More than the stack has left (less a 16 KiB margin) is
/// `InvalidInput`, never an overflow.
///
/// The main thread's stack mapping grows as it is touched. Once it is locked
/// (`mlockall(MCL_CURRENT)`, [`lock_memory`](super::lock_memory)), that growth
/// counts against `RLIMIT_MEMLOCK` for a process without `CAP_IPC_LOCK`, and a
/// page fault beyond the limit kills the process with SIGSEGV: growth that would
/// pass the limit is [`ErrorKind::OutOfResources`] naming it, before any page is
/// touched. (Prefault the stack before locking memory, and `mlockall` counts it.)
///
/// # References
///  - [`pthread_getattr_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getattr_np.3.html)
pub fn prefault_stack(bytes: usize) -> Result<()> {
    let remaining = stack_remaining()?;
    if bytes.saturating_add(16 * 1024) > remaining {
        return Err(Error::invalid(
            "prefault_stack",
            format!("{bytes} bytes asked, only {remaining} left on this thread's stack"),
        )
        .with_hint("ask for less, or spawn the thread with a larger Builder::stack_size"));
    }
    let here = std::hint::black_box(0u8);
    let here = &here as *const u8 as usize;
    let until = here.saturating_sub(bytes);
    check_locked_growth(here, until.saturating_sub(TOUCH_BELOW))?;
    touch_stack(until);
    Ok(())
}

/// How far below its target [`touch_stack`] may reach. Its last frame is the
/// first whose page-sized array starts at or below the target: up to one frame
/// (the page and the frame's overhead: return address, saved registers,
/// padding) below it, with that overhead below the array too. The growth check
/// covers these pages: one page past `RLIMIT_MEMLOCK` is a SIGSEGV.
const TOUCH_BELOW: usize = 2 * PAGE;

/// The mapping that holds the calling thread's stack, from `/proc/self/smaps`.
struct StackVma {
    start: usize,
    /// `VmFlags` has `gd`: it grows down as it is touched (the main thread's).
    grows_down: bool,
    /// `VmFlags` has `lo`: its pages are locked (`mlock`, `mlockall`).
    locked: bool,
}

/// The mapping of `/proc/self/smaps` that contains `addr`.
fn stack_vma(addr: usize) -> Option<StackVma> {
    let smaps = crate::sys::proc::read_text("/proc/self/smaps").ok()?;
    let mut start = None;
    for line in smaps.lines() {
        // A mapping's first line: `start-end perms offset dev inode [path]`.
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    start = (a..b).contains(&addr).then_some(a);
                    continue;
                }
            }
        }
        if let (Some(a), Some(flags)) = (start, line.strip_prefix("VmFlags:")) {
            let has = |f: &str| flags.split_whitespace().any(|x| x == f);
            return Some(StackVma {
                start: a,
                grows_down: has("gd"),
                locked: has("lo"),
            });
        }
    }
    None
}

/// Refuses to touch the stack from `here` down to `until` (the lowest address the
/// touch may reach) if that grows a locked stack mapping beyond `RLIMIT_MEMLOCK`
/// (the kernel would answer the fault with SIGSEGV). Unknown facts let the touch go ahead, as it always did.
fn check_locked_growth(here: usize, until: usize) -> Result<()> {
    let Some(vma) = stack_vma(here) else {
        return Ok(());
    };
    if !vma.grows_down || !vma.locked || until >= vma.start {
        return Ok(());
    }
    let f = MemlockFacts::gather();
    let Some(soft) = f.limit.0 else {
        return Ok(());
    };
    if f.cap_ipc_lock != Some(false) {
        return Ok(());
    }
    let page = rustix::param::page_size();
    let grow = (vma.start - (until & !(page - 1))) as u64;
    let locked = status_kib("VmLck:").unwrap_or(0) * 1024;
    let need = locked.saturating_add(grow);
    if need <= soft {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::OutOfResources,
        "prefault_stack",
        format!(
            "growing the locked stack by {grow} bytes would lock {need} bytes, beyond \
             RLIMIT_MEMLOCK ({soft})"
        ),
    )
    .with_hint(format!(
        "the main thread's stack grows as it is touched and its pages are locked \
         (mlockall MCL_CURRENT; {locked} bytes locked now); the kernel would kill the \
         process with SIGSEGV rather than grow it past the limit, and {}; fix: prefault \
         the stack before lock_memory (mlockall then counts it), or prefault less; or {}",
        f.cap_text(),
        f.fixes(Some(need))
    )))
}

/// Touches the stack from the caller's frame down to address `until`. The depth is
/// decided by the frames' real addresses, not by a page count: each frame is a page
/// plus its return address and padding, so counting pages would run past the
/// request (by tens of KiB on an 8 MiB stack) and into the guard page.
#[inline(never)]
fn touch_stack(until: usize) {
    let mut frame = [0u8; PAGE];
    // black_box on both sides keeps the frame real and stops a tail call.
    std::hint::black_box(&mut frame);
    if frame.as_ptr() as usize > until {
        touch_stack(until);
    }
    std::hint::black_box(&mut frame);
}

/// Bytes between the current frame and the low end of this thread's stack.
fn stack_remaining() -> Result<usize> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: pthread_getattr_np initialises `attr` on success; destroyed below.
    let r = unsafe { libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) };
    crate::error::check_pthread("pthread_getattr_np", r)?;
    let mut addr: *mut libc::c_void = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: `attr` is initialised; out-pointers are writable.
    let r = unsafe { libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size) };
    // SAFETY: `attr` is initialised and destroyed exactly once.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    crate::error::check_pthread("pthread_attr_getstack", r)?;
    let here = std::hint::black_box(0u8);
    let here = &here as *const u8 as usize;
    Ok(here.saturating_sub(addr as usize))
}
