//! The heap step of the real-time setup: prefault a block of heap and keep it in
//! the allocator ([`prefault_heap`], re-exported from `rt`).

use super::{memlock_limit, memlock_limits_new_mappings, status_kib, PAGE};
use crate::sched::hint::MemlockFacts;
use crate::{Error, ErrorKind, Result};

/// Prefaults `bytes` of heap and keeps them in the allocator: sets glibc's
/// (process-wide) `M_MMAP_MAX` to 0 (no allocation goes to a separate `mmap` that `free` would
/// unmap) and `M_TRIM_THRESHOLD` to "never", then allocates, touches every page and
/// frees the block. Later allocations of the calling thread's arena reuse those
/// present pages. (Threads other than the main one may use other glibc arenas.)
///
/// Call it from the main thread for a large heap: its arena grows with `brk` and
/// keeps any amount. Another thread's arena is made of heaps of at most 64 MiB, so
/// glibc maps a block it cannot fit there on its own, whatever `M_MMAP_MAX` says,
/// and unmaps it again on `free`. The pages are checked after the `free`
/// (`mincore`): a block given back to the kernel is
/// [`ErrorKind::Unsupported`] naming that fix, never a silent `Ok`.
///
/// # References
///  - [`mallopt(3)`](https://man7.org/linux/man-pages/man3/mallopt.3.html)
pub fn prefault_heap(bytes: usize) -> Result<()> {
    // SAFETY: mallopt takes two ints and changes allocator tuning only.
    let ok1 = unsafe { libc::mallopt(libc::M_MMAP_MAX, 0) };
    // SAFETY: as above; -1 as the threshold disables trimming.
    let ok2 = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, -1) };
    if ok1 != 1 || ok2 != 1 {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "mallopt",
            "the allocator refused M_MMAP_MAX/M_TRIM_THRESHOLD",
        ));
    }
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: malloc returns null or a block of `bytes` bytes that we own until free.
    let p = unsafe { libc::malloc(bytes) }.cast::<u8>();
    if p.is_null() {
        return Err(heap_enomem(bytes));
    }
    let mut off = 0;
    while off < bytes {
        // SAFETY: `off < bytes`, inside the block we own.
        unsafe { std::ptr::write_volatile(p.add(off), 0) };
        off += PAGE;
    }
    // SAFETY: `p` came from malloc and is freed once.
    unsafe { libc::free(p.cast()) };
    // Only the addresses are used from here on, never the memory.
    if still_mapped(p as usize, bytes) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Unsupported,
        "prefault_heap",
        format!("the allocator gave the {bytes} prefaulted bytes back to the kernel"),
    )
    .with_hint(
        "this thread allocates from its own glibc arena, whose heaps hold at most 64 MiB: \
         a larger block is mapped on its own and unmapped by free, so nothing stays \
         prefaulted; fix: call prefault_heap (or rt::setup) from the main thread, whose \
         heap keeps what it grows, or prefault less than 64 MiB from this thread",
    ))
}

/// Whether every page of `addr..addr + len` is still mapped (`mincore` fails
/// with ENOMEM on a range with an unmapped page).
fn still_mapped(addr: usize, len: usize) -> bool {
    let page = rustix::param::page_size();
    let mut at = addr & !(page - 1);
    let end = addr.saturating_add(len);
    // One residency byte per page, a chunk of pages at a time (no allocation).
    let mut vec = [0u8; 1024];
    while at < end {
        let pages = ((end - at).div_ceil(page)).min(vec.len());
        // SAFETY: `at` is page-aligned and `vec` has room for `pages` bytes;
        // mincore reads no memory of the range, it only looks the pages up.
        let r = unsafe { libc::mincore(at as *mut libc::c_void, pages * page, vec.as_mut_ptr()) };
        if r != 0 {
            // ENOMEM: a page is unmapped. Any other failure proves nothing.
            return std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM);
        }
        at += pages * page;
    }
    true
}

/// The ENOMEM of [`prefault_heap`], with its likely cause: after
/// `mlockall(MCL_FUTURE)` every new mapping is locked, so without `CAP_IPC_LOCK` the
/// heap can grow only while the locked total stays within `RLIMIT_MEMLOCK`.
fn heap_enomem(bytes: usize) -> Error {
    let e = Error::from_errno("malloc", libc::ENOMEM).with_message(format!("{bytes} bytes"));
    let locked = status_kib("VmLck:").unwrap_or(0) * 1024;
    if !memlock_limits_new_mappings() {
        return e;
    }
    let f = MemlockFacts::gather();
    e.with_hint(format!(
        "memory is locked (mlockall MCL_FUTURE; {locked} bytes locked now): a new block must fit \
         in RLIMIT_MEMLOCK ({}), and {}; fix: prefault less; or raise RLIMIT_MEMLOCK (`ulimit -l`, \
         or `{} - memlock unlimited` in /etc/security/limits.conf); or {}",
        memlock_limit(),
        f.cap_text(),
        f.user,
        f.cap_fix()
    ))
}
