//! The writer side: the calling thread's marker, raw block and timestamp.

use std::cell::RefCell;
use std::ffi::CStr;

use super::layout::{self, MARKER_MAX, RAW_LEN};
use crate::registry::{self, Payload, Registry, SlotWriter};
use crate::sys::pilock::PiLocked;
use crate::{Error, ErrorKind, Result};

/// Taken on a thread's first mark (and by `registry_path`), never on the update
/// path; priority-inheriting, so a real-time thread's first mark boosts a
/// lower-priority thread that is creating the registry instead of waiting behind
/// it.
static REGISTRY: PiLocked<Option<&'static Registry>> = PiLocked::new(None);

/// This process's mark registry, created on first use (and again in a forked child).
pub(super) fn registry() -> Result<&'static Registry> {
    static FORK_HOOK: crate::sys::fork::ForkOnce = crate::sys::fork::ForkOnce::new();
    FORK_HOOK.call_once(|| crate::sys::fork::on_child(after_fork_in_child));
    let mut guard = REGISTRY.lock();
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    if let Some(r) = *guard {
        if r.pid() == pid {
            return Ok(r);
        }
        // A forked child: the parent's registry stays mapped but is never written.
    }
    let r: &'static Registry = Box::leak(Box::new(Registry::create(
        layout::KIND,
        layout::PAYLOAD,
        layout::SLOTS,
    )?));
    *guard = Some(r);
    Ok(r)
}

/// In a forked child, the lock may have been held by a parent thread that does not
/// exist there (the handle it guards is one pointer, always consistent).
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing.
    unsafe { REGISTRY.raw() }.reset_in_child();
}

/// How often, at most, a thread's marks look for a deleted registry file:
/// the first mark at least this long (by the timestamp each mark reads
/// anyway) after the thread's last look asks the registry, which makes one
/// `fstat` per [`DELETED_CHECK_MS`](registry::DELETED_CHECK_MS) at most (see
/// [`update`] for the delay this gives).
const LOOK_EVERY_NS: u64 = 50_000_000;

/// The calling thread's slot and what it last told the kernel.
struct Local {
    /// [`registry::generation`] when the slot was claimed: a forked child sees a
    /// different value and never writes or frees the parent's slot.
    generation: u32,
    slot: Option<SlotWriter<'static>>,
    /// The kernel name last applied by `set` (`comm_len == u8::MAX`: unknown).
    comm: [u8; 16],
    comm_len: u8,
    /// The timestamp (ns, `CLOCK_REALTIME_COARSE`) of the thread's last look
    /// for a deleted registry file (see [`LOOK_EVERY_NS`]).
    looked: u64,
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            if self.generation == registry::generation() {
                slot.release();
            }
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

fn tls_error() -> Error {
    Error::new(
        ErrorKind::InvalidState,
        "tfp_mark",
        "the thread is exiting (thread-local storage is being destroyed)",
    )
}

/// Writes the calling thread's slot with `write` (claiming one first if
/// needed), then runs `then`. `write` returns the timestamp it stored.
///
/// If another process truncated the registry file, the slot may have been
/// wiped (readers no longer list it): the file is put back and the writer
/// moves to a new slot before the write, or after it when the write itself
/// found the truncation (a fault past the file's end), and writes again.
///
/// A registry file deleted under the process (which hides it from readers)
/// is looked for once [`LOOK_EVERY_NS`] have passed since the thread last
/// looked, by that timestamp (no clock read of its own): a compare on the
/// fast path.
#[inline]
fn with_slot<R>(
    write: impl Fn(&mut Payload<'_>) -> u64,
    then: impl FnOnce(&mut Local2) -> R,
) -> Result<R> {
    LOCAL
        .try_with(|cell| {
            let mut local = cell.try_borrow_mut().map_err(|_| {
                Error::new(
                    ErrorKind::InvalidState,
                    "tfp_mark",
                    "marked from inside a mark call (signal handler?)",
                )
            })?;
            let generation = registry::generation();
            let fresh = match local.as_ref() {
                Some(l) => l.generation != generation || l.slot.is_none(),
                None => true,
            };
            if fresh {
                *local = None; // drops (and frees, if ours) an old slot
                let reg = registry()?;
                let (tid, start) = registry::current_thread()?;
                let slot = reg.claim(tid, start)?;
                *local = Some(Local {
                    generation,
                    slot: Some(slot),
                    comm: [0; 16],
                    comm_len: u8::MAX,
                    // The claim looked (it checks the file first).
                    looked: now_ns(),
                });
            }
            match local.as_mut() {
                Some(l) => match l.slot.as_mut() {
                    Some(slot) => {
                        let now = write_visible(slot, &write)?;
                        // Wrapping: a clock set back looks at once.
                        if now.wrapping_sub(l.looked) >= LOOK_EVERY_NS {
                            look_for_deleted(slot, &mut l.looked, now);
                        }
                        let mut extra = Local2 {
                            comm: &mut l.comm,
                            comm_len: &mut l.comm_len,
                            slot,
                        };
                        Ok(then(&mut extra))
                    }
                    None => Err(tls_error()),
                },
                None => Err(tls_error()),
            }
        })
        .map_err(|_| tls_error())?
}

/// Writes `slot` with `write` so that readers list it: a slot wiped by a
/// truncation of the file is replaced first, and again if this write found
/// the truncation (a fault past the file's end). Returns the timestamp the
/// (last) write stored.
#[inline(always)]
fn write_visible(
    slot: &mut SlotWriter<'static>,
    write: &impl Fn(&mut Payload<'_>) -> u64,
) -> Result<u64> {
    if !slot.wiped() {
        let now = slot.write(write);
        if !slot.wiped() {
            return Ok(now);
        }
    }
    rewrite(slot, write)
}

/// [`write_visible`] of a wiped slot: a few rounds at most (a file truncated
/// again and again is listed again at a later mark).
#[cold]
#[inline(never)]
fn rewrite(
    slot: &mut SlotWriter<'static>,
    write: &impl Fn(&mut Payload<'_>) -> u64,
) -> Result<u64> {
    let mut now = 0;
    for _ in 0..3 {
        slot.reclaim()?;
        now = slot.write(write);
        if !slot.wiped() {
            break;
        }
    }
    Ok(now)
}

/// Publishes the registry again if its file was deleted (see
/// [`SlotWriter::notice_deleted`]): once the file is replaced the slot reads
/// [`wiped`](SlotWriter::wiped), so the next mark moves it (the new file
/// already holds what this one wrote).
#[cold]
#[inline(never)]
fn look_for_deleted(slot: &SlotWriter<'static>, looked: &mut u64, now: u64) {
    *looked = now;
    slot.notice_deleted();
}

/// [`Local`]'s parts, borrowed after the slot was written.
struct Local2<'a> {
    comm: &'a mut [u8; 16],
    comm_len: &'a mut u8,
    slot: &'a SlotWriter<'static>,
}

/// Wall-clock time in nanoseconds since the epoch, from the coarse clock
/// (`CLOCK_REALTIME_COARSE`: a vDSO read, no system call, tick resolution).
#[inline]
fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

#[inline]
fn check_marker(marker: &str) -> Result<&[u8]> {
    let b = marker.as_bytes();
    if b.len() > MARKER_MAX {
        return Err(Error::invalid(
            "tfp_mark",
            format!("marker is {} bytes, the limit is {MARKER_MAX}", b.len()),
        )
        .with_hint("shorten the marker; put numbers in the raw block (write_raw)"));
    }
    Ok(b)
}

/// Stores the marker and the timestamp, and returns the timestamp.
#[inline]
fn store_marker(p: &mut Payload<'_>, bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut w = layout::W_MARKER;
    for c in &mut chunks {
        p.store_u64(
            w,
            u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
        w += 1;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        p.store_u64(w, u64::from_ne_bytes(last));
    }
    let flags = p.load_u64(layout::W_LEN) & !0xffff_ffff;
    p.store_u64(
        layout::W_LEN,
        flags | layout::FLAG_MARKED | bytes.len() as u64,
    );
    let now = now_ns();
    p.store_u64(layout::W_TIME, now);
    now
}

/// Sets the calling thread's marker and timestamp, **without** touching the kernel
/// thread name: the fast path for markers that change often (progress, state).
///
/// Costs a thread-local lookup, the sequence-counter writes, one word store per 8
/// bytes of marker and a `CLOCK_REALTIME_COARSE` read (14 ns in the `mark` bench,
/// for a 17-byte and for a 128-byte marker). The first call on a thread claims its slot (and the first in the
/// process creates the registry file), which costs a few microseconds.
///
/// A registry file deleted under the process (`rm`, systemd-logind's
/// `RemoveIPC=yes`) hides all its marks from readers such as `tfp`. Marks
/// look for that at almost no cost: each compares the timestamp it reads
/// anyway with the thread's last look, and looks again 50 ms later at the
/// earliest (a coarse clock read; and, by whichever thread looks first, one
/// `fstat` per process per
/// [`DELETED_CHECK_MS`](crate::registry::DELETED_CHECK_MS), 1 s: the only
/// system call `update` makes after the first mark). So the file is published again, with every thread's mark, at the
/// latest by the first mark (`update`, [`set`], [`write_raw`]) of any marked
/// thread of the process made 1.05 s or more after the deletion (give or
/// take a clock tick): within about 1.05 s for a thread that marks at 1 kHz,
/// 1.05 s plus the gap between two marks for a slower one. A process whose
/// threads stop marking stays unlisted until one marks again or a marked
/// thread exits.
///
/// # Errors
///
/// - [`InvalidInput`](crate::ErrorKind::InvalidInput) if the marker is longer than
///   [`MARKER_MAX`] bytes;
/// - [`InvalidState`](crate::ErrorKind::InvalidState) if the thread is already
///   inside a mark call (a mark from a signal handler that interrupted one), or
///   its thread-local storage is being torn down (a mark from a thread-local
///   destructor while the thread exits);
/// - on the thread's first mark only (and its first in a forked child):
///   [`OutOfResources`](crate::ErrorKind::OutOfResources) if all slots are taken;
///   the error reading `/proc/thread-self/stat` (the thread's start time:
///   `NotFound` without `/proc`); and, on the first mark in the process, the
///   error creating the registry file in `/dev/shm` (the errno's kind, e.g.
///   `PermissionDenied`, or `OutOfResources` when `/dev/shm` is full; `Busy`
///   when a live process in another pid namespace sharing `/dev/shm` holds a
///   registry of the same name);
/// - after another process truncated the registry file (the thread's slot is
///   then moved to a new one, so that readers list the mark again):
///   [`OutOfResources`](crate::ErrorKind::OutOfResources) if `/dev/shm` has no
///   room to put the file back (the message says the file was truncated; a
///   later mark tries again) or no slot is free;
///   [`InvalidState`](crate::ErrorKind::InvalidState) if the program closed
///   the registry's descriptor (one it did not open) and its number names
///   another file, which is left alone.
#[inline]
pub fn update(marker: &str) -> Result<()> {
    let bytes = check_marker(marker)?;
    with_slot(
        |p| store_marker(p, bytes),
        // Once the marker is stored: a mark that fails changes nothing.
        |_| super::hook::marker(super::hook::How::Update, bytes),
    )
}

/// `tfp_mark(string)`: sets the calling thread's marker and timestamp, and the
/// kernel thread name (`prctl(PR_SET_NAME)`, the first 15 bytes, cut at a character
/// boundary and at the first NUL) so `ps -L`, `top -H` and `perf` show it too.
/// If that leaves no bytes (an empty marker, or one starting with NUL), the
/// kernel name is left as it is rather than emptied.
///
/// The kernel name is only rewritten when those first bytes change: re-marking
/// with the same prefix ("worker 3: step 17" → "worker 3: step 18" keeps
/// "worker 3: step ") costs about the same as [`update`] (16 ns against 14 ns in
/// the `mark` bench); a changed prefix adds the `prctl` system call (270 ns in
/// total there, more on a loaded machine). Use [`update`] to never touch the kernel
/// name. The comparison is with the prefix this thread last gave the kernel: a
/// rename made meanwhile outside `mark` (`pthread_setname_np`, `prctl`) is not
/// seen, and a `set` with that same prefix leaves it in place. On the main thread
/// the kernel name is also the process name `ps` shows.
///
/// ```
/// posixrt::mark::set("Main thread sleeping")?;
/// assert_eq!(posixrt::mark::current().as_deref(), Some("Main thread sleeping"));
/// # Ok::<(), posixrt::Error>(())
/// ```
///
/// # Errors
///
/// Those of [`update`] (a marker longer than [`MARKER_MAX`] bytes, a mark from a
/// signal handler or from a thread being torn down, and on the first mark the
/// slot and registry errors), and the errno of `prctl(PR_SET_NAME)` if the kernel
/// refuses the name (the marker and timestamp are already set then).
///
/// # References
///  - [Linux `prctl(PR_SET_NAME)`](https://man7.org/linux/man-pages/man2/pr_set_name.2const.html)
#[doc(alias = "prctl")]
#[doc(alias = "PR_SET_NAME")]
pub fn set(marker: &str) -> Result<()> {
    let bytes = check_marker(marker)?;
    let name = kernel_name(bytes);
    with_slot(
        |p| store_marker(p, bytes),
        |local| {
            // Once the marker is stored (a refused kernel name below leaves it
            // set): a mark that fails changes nothing.
            super::hook::marker(super::hook::How::Set, bytes);
            // An empty prefix (empty marker, or a leading NUL) would leave the thread,
            // or on the main thread the process, nameless: keep the current name.
            let changed =
                *local.comm_len as usize != name.len() || &local.comm[..name.len()] != name;
            if !name.is_empty() && changed {
                let mut buf = [0u8; 16];
                buf[..name.len()].copy_from_slice(name);
                let c = CStr::from_bytes_until_nul(&buf).map_err(|_| {
                    Error::invalid("prctl(PR_SET_NAME)", "kernel name is not NUL-terminated")
                })?;
                rustix::thread::set_name(c)
                    .map_err(|e| Error::from_errno("prctl(PR_SET_NAME)", e.raw_os_error()))?;
                local.comm[..name.len()].copy_from_slice(name);
                *local.comm_len = name.len() as u8;
                // A system call was made anyway: the time to look (once a
                // second at most) for a registry file deleted under us.
                local.slot.notice_deleted();
            }
            Ok(())
        },
    )?
}

/// The kernel-name prefix of a marker: at most 15 bytes, stopping at a NUL and
/// never splitting a UTF-8 character.
fn kernel_name(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut n = end.min(15);
    while n > 0 && n < bytes.len() && (bytes[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    &bytes[..n]
}

/// Removes the calling thread's mark: its slot is freed, so readers stop listing
/// the thread (the raw block goes too). The kernel thread name is left as it is.
/// Does nothing if the thread is not marked.
pub fn clear() {
    super::hook::marker(super::hook::How::Clear, &[]);
    let _ = LOCAL.try_with(|cell| {
        if let Ok(mut l) = cell.try_borrow_mut() {
            *l = None;
        }
    });
}

fn check_raw(call: &'static str, offset: usize, len: usize) -> Result<()> {
    // The seed checks `offset + nbytes >= 64`, which refuses the last byte; the
    // block is 64 bytes, so offset..offset+len must end at or before 64.
    if offset > RAW_LEN || len > RAW_LEN - offset {
        return Err(Error::invalid(
            call,
            format!("{len} bytes at offset {offset} do not fit the {RAW_LEN}-byte raw block"),
        ));
    }
    Ok(())
}

/// `tfp_write_raw_block(ptr, offset, nbytes)`: writes `data` into the calling
/// thread's 64-byte raw block at `offset` and updates the timestamp.
///
/// `offset + data.len()` may be at most 64 ([`RAW_LEN`]). Marks the thread
/// (with an empty marker) if it was not marked.
///
/// An empty `data` (within the bounds) writes nothing and changes nothing: the
/// thread is not marked by it, and the timestamp and the "raw block written" flag
/// readers see ([`ThreadMark::raw_written`](super::ThreadMark::raw_written)) stay
/// as they were.
///
/// # Errors
///
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) if `offset + data.len()`
/// exceeds [`RAW_LEN`]; otherwise, for a non-empty `data`, those of [`update`]
/// after its marker check ([`InvalidState`](crate::ErrorKind::InvalidState) from a
/// signal handler or a thread being torn down, and on the first mark the slot
/// and registry errors).
pub fn write_raw(offset: usize, data: &[u8]) -> Result<()> {
    check_raw("tfp_write_raw_block", offset, data.len())?;
    if data.is_empty() {
        return Ok(());
    }
    with_slot(
        |p| {
            p.store_bytes(layout::RAW_OFF + offset, data);
            let w = p.load_u64(layout::W_LEN);
            p.store_u64(layout::W_LEN, w | layout::FLAG_RAW);
            let now = now_ns();
            p.store_u64(layout::W_TIME, now);
            now
        },
        |_| (),
    )
}

/// `tfp_read_raw_block(ptr, offset, nbytes)`: reads the calling thread's raw block
/// from `offset` into `out` (zeros if the thread is not marked).
///
/// # Errors
///
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) if `offset + out.len()`
/// exceeds [`RAW_LEN`] (64); nothing else (an unmarked thread, or one inside a
/// mark call or being torn down, reads zeros).
pub fn read_raw(offset: usize, out: &mut [u8]) -> Result<()> {
    check_raw("tfp_read_raw_block", offset, out.len())?;
    out.fill(0);
    let _ = LOCAL.try_with(|cell| {
        if let Ok(l) = cell.try_borrow() {
            if let Some(slot) = l
                .as_ref()
                .filter(|l| l.generation == registry::generation())
                .and_then(|l| l.slot.as_ref())
            {
                slot.read(|p| p.load_bytes(layout::RAW_OFF + offset, out));
            }
        }
    });
    Ok(())
}

/// The calling thread's marker, if it is marked.
pub fn current() -> Option<String> {
    LOCAL
        .try_with(|cell| {
            let l = cell.try_borrow().ok()?;
            let l = l
                .as_ref()
                .filter(|l| l.generation == registry::generation())?;
            let slot = l.slot.as_ref()?;
            Some(slot.read(|p| {
                let len = (p.load_u64(layout::W_LEN) & 0xffff_ffff) as usize;
                let mut b = vec![0u8; len.min(MARKER_MAX)];
                p.load_bytes(layout::MARKER_OFF, &mut b);
                String::from_utf8_lossy(&b).into_owned()
            }))
        })
        .ok()
        .flatten()
}

/// This process's registry file, once a thread has been marked.
pub fn registry_path() -> Option<std::path::PathBuf> {
    let guard = REGISTRY.lock();
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    guard
        .filter(|r| r.pid() == pid)
        .map(|r| r.path().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_name_cuts_at_char_boundary_and_nul() {
        assert_eq!(kernel_name(b"short"), b"short");
        assert_eq!(kernel_name(b"0123456789abcdefgh"), b"0123456789abcde");
        assert_eq!(kernel_name(b"ab\0cd"), b"ab");
        let s = "Главныйпотокспит"; // 2-byte characters: 15 would split one
        assert_eq!(kernel_name(s.as_bytes()), &s.as_bytes()[..14]);
    }
}
