//! The submission queue entry of a request, as its slot stands.

use io_uring::{opcode, squeue, types};

use super::table::{OpKind, Slot, MAX_RW};
use crate::sys::prio::SchedClass;

/// Reads and writes at least this large go to the kernel's workers
/// (`IOSQE_ASYNC`): io_uring would otherwise copy a cached transfer inline, in
/// the submitting thread's `io_uring_enter`, and a 10 MiB `aio_read` would
/// return only once its data is there. Smaller ones stay inline (the 4 KiB
/// round trip is the floor the engine is measured against).
const INLINE_MAX: usize = 256 * 1024;

/// The submission queue entry of a request (see [`sqe_inline`]), sent to the
/// kernel's workers when it is a large transfer from a SCHED_OTHER submitter. A
/// real-time submitter's stays inline: the kernel's io-wq workers are created
/// from the submitting thread and take its class, so a worker would run at the
/// submitter's priority, above the request's effective one.
#[inline]
pub(super) fn sqe(s: &Slot) -> squeue::Entry {
    let e = sqe_inline(s);
    if s.to_worker || punted(s.op.kind, s.op.len, s.class) {
        e.flags(squeue::Flags::ASYNC)
    } else {
        e
    }
}

/// The entry of a request issued again after a first attempt (refused with
/// ESPIPE at an offset, EPERM on the real-time I/O class, cancelled by the
/// kernel at its thread's exit): on its own fd copy or the caller's fd, never a
/// registered file's slot, which a guard dropped since may have freed (see
/// `files.rs`).
#[inline]
pub(super) fn sqe_again(s: &mut Slot) -> squeue::Entry {
    s.fixed = 0;
    sqe(s)
}

/// Whether a request goes to the kernel's workers (`IOSQE_ASYNC`, see [`sqe`]).
/// The kernel then looks its fd number up only when a worker starts it, after
/// the submitting call has returned, so such a request is given its own fd copy
/// first (`Prepared::own`): the caller's number may name another file by then.
pub(super) fn punted(kind: OpKind, len: usize, class: SchedClass) -> bool {
    // (The length first: most transfers are far smaller.)
    may_punt(kind, len) && !class.is_rt()
}

/// Whether a request may go to the kernel's workers, whatever its
/// submitter's class (see [`punted`]).
#[inline]
pub(super) fn may_punt(kind: OpKind, len: usize) -> bool {
    len >= INLINE_MAX && matches!(kind, OpKind::Read | OpKind::Write)
}

/// The submission queue entry of a request on the file `$fd` names: an fd
/// number or a slot of the rings' file tables (two types the opcodes take, with
/// no trait to name both).
macro_rules! entry_on {
    ($s:expr, $fd:expr) => {{
        let s: &Slot = $s;
        let fd = $fd;
        let op = &s.op;
        let len = op.len.min(MAX_RW) as u32;
        let stream = s.fd_kind.is_some_and(|k| k.is_stream());
        let nowait = if (s.nonblock && stream) || s.recheck {
            libc::RWF_NOWAIT
        } else {
            0
        };
        match op.kind {
            OpKind::Read => {
                // Non-seekable: the offset means nothing (a socket refuses one).
                let off = if stream { u64::MAX } else { op.offset as u64 };
                opcode::Read::new(fd, op.ptr as *mut u8, len)
                    .offset(off)
                    .rw_flags(nowait)
                    .ioprio(ioprio(s))
                    .build()
            }
            OpKind::Write => {
                // Ordered writes (O_APPEND, streams) use the current position: -1.
                let off = if op.ordered || stream {
                    u64::MAX
                } else {
                    op.offset as u64
                };
                opcode::Write::new(fd, op.ptr as *const u8, len)
                    .offset(off)
                    .rw_flags(nowait)
                    .ioprio(ioprio(s))
                    .build()
            }
            OpKind::Fsync => opcode::Fsync::new(fd).build(),
            OpKind::Fdatasync => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
        }
    }};
}

/// The submission queue entry of a request, as its slot stands: its own fd copy
/// if it has one, else its registered file's slot if it has one, else the
/// caller's fd; offset -1 on a non-seekable fd, `RWF_NOWAIT` on an
/// `O_NONBLOCK` one, `IOPRIO_CLASS_RT` for a real-time submitter.
#[inline]
fn sqe_inline(s: &Slot) -> squeue::Entry {
    if s.fixed != 0 && s.own_fd.is_none() {
        entry_on!(s, types::Fixed(s.fixed - 1))
    } else {
        entry_on!(s, types::Fd(s.io_fd()))
    }
}

/// `IOPRIO_CLASS_RT` with a level from the effective priority for a real-time
/// request (if the process may use it); 0 (the submitter's own I/O priority)
/// otherwise.
#[inline]
fn ioprio(s: &Slot) -> u16 {
    if s.class.is_rt() && crate::sys::prio::rt_ioprio_allowed() {
        crate::sys::prio::ioprio_rt(s.class.priority)
    } else {
        0
    }
}
