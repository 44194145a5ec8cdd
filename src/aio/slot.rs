//! One request's record in the table (see `table.rs`): what it does, where
//! it is in its life, who is told when it is done, and what the engine learned
//! of its fd. The table re-exports these names.

use std::os::fd::{AsRawFd, OwnedFd};
use std::task::Waker;

use super::hook::HookOp;
use super::mail::MailAddr;
use super::notify::Notify;
use crate::sys::io::FdKind;
use crate::sys::prio::SchedClass;

/// Marks "no list".
pub(crate) const NO_LIST: u32 = u32::MAX;

/// The operation of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    Read,
    Write,
    Fsync,
    Fdatasync,
}

impl OpKind {
    pub(crate) fn hook(self) -> HookOp {
        match self {
            OpKind::Read => HookOp::Read,
            OpKind::Write => HookOp::Write,
            OpKind::Fsync => HookOp::Fsync,
            OpKind::Fdatasync => HookOp::Fdatasync,
        }
    }
}

/// What the engine needs to perform a request: plain data, no Rust ownership.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawOp {
    pub kind: OpKind,
    pub fd: i32,
    pub offset: i64,
    /// Buffer address (as an integer so the table is `Send`).
    pub ptr: usize,
    pub len: usize,
    /// Must wait for every earlier request on `fd` to finish before it starts.
    pub ordered: bool,
}

/// Where a request is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Free,
    FdQueued,
    Ready,
    Issued,
    Done,
}

/// One request.
pub(crate) struct Slot {
    pub gen: u32,
    pub state: State,
    pub op: RawOp,
    pub reqprio: u8,
    /// Issue order key: lower first (`reqprio` minus the submitter's priority).
    pub key: i32,
    pub seq: u64,
    /// Bytes transferred, or `-errno`.
    pub res: i64,
    pub notify: Notify,
    pub list: u32,
    pub waker: Option<Waker>,
    /// The buffer of a request whose handle was dropped while in flight; freed on
    /// completion, never earlier.
    pub orphan: Option<Box<dyn Send>>,
    /// No handle refers to this slot any more: free it when done.
    pub detached: bool,
    /// Detached with the request left to run (an interrupted `LIO_WAIT`
    /// list's), not given up by a dropped handle: `aio_cancel(fd, NULL)` still
    /// reaches it.
    pub kept: bool,
    /// C requests: the calls waiting to read how the request ended (a
    /// `lio_listio(LIO_WAIT)` and each `aio_cancel` of it in progress), which
    /// keep the slot once done; the last of them frees it (see
    /// [`Core::let_go_kept`](super::table::Core::let_go_kept)).
    pub keepers: u8,
    /// Thread backend: which worker runs it, whether that worker sleeps in `poll`
    /// (and so can be interrupted), and whether a cancel asked it to stop.
    pub worker: u32,
    pub interruptible: bool,
    pub cancel_req: bool,
    /// A C request (`posixrt-capi`): the address of the caller's `struct aiocb`,
    /// whose status fields get the result when the request is done (0 otherwise).
    pub aiocb: usize,
    /// The request's own copy of the caller's descriptor (`F_DUPFD_CLOEXEC`), when
    /// the descriptor is used after the submitting call returns; closed when done.
    pub own_fd: Option<OwnedFd>,
    /// The effective scheduling class: the submitter's policy and its priority
    /// minus `reqprio`, clamped at the policy's minimum.
    pub class: SchedClass,
    /// io_uring: the fd's slot + 1 in the rings' file tables (0: none), used
    /// when the request has no fd copy of its own (see `files.rs`).
    pub fixed: u32,
    /// The thread that submitted the request (its exit waits for the request
    /// on io_uring: see `exit_wait.rs`).
    pub submitter: u32,
    /// io_uring: the fd was known, when the request was submitted, to name a
    /// regular file, block device or directory: the transfer ends on its own
    /// (its submitter's exit may wait for it).
    pub finite: bool,
    /// The kind of the fd, when known (learned at submission or from the kernel).
    pub fd_kind: Option<FdKind>,
    /// The fd is `O_NONBLOCK`: a transfer that would block ends with EAGAIN.
    pub nonblock: bool,
    /// io_uring: a read submitted without checks; the submitter settles it before
    /// its call returns (see the engine's `settle_probes`).
    pub probe: bool,
    /// io_uring: a probe read the kernel refused with ESPIPE (a socket at an
    /// offset): to be issued again at offset -1 by the submitter.
    pub espipe: bool,
    /// io_uring: a probe issued again at offset -1 while its ESPIPE completion
    /// still waited in the reaper's queue: that completion is skipped.
    pub skip_espipe: bool,
    /// io_uring: cancelled because it would block on an `O_NONBLOCK` fd: reports
    /// EAGAIN instead of ECANCELED (0 for a read of no bytes, which is also
    /// cancelled on a blocking fd, where it waited for data).
    pub eagain: bool,
    /// io_uring: issued again after an EFAULT, which the kernel gives a
    /// transfer it finishes after its thread exited (once: a second EFAULT is
    /// the caller's buffer).
    pub refaulted: bool,
    /// io_uring: the thread that reaped the request's EFAULT or ECANCELED
    /// and entered it again (0: none). A second EFAULT after that thread
    /// exited is its exit again, not the caller's buffer.
    pub reentered_by: u32,
    /// An fsync's: the errno of the first request it covers (on its fd, in
    /// flight when it came) that failed, which it reports if it succeeds
    /// itself (POSIX aio_fsync); 0 if none. Reset by its completion.
    pub covered: i32,
    /// io_uring: a C read on an fd number last seen to name a regular file or
    /// block device, issued with `RWF_NOWAIT` so that an EAGAIN shows whether
    /// the number names something else now (closed and reused by a pipe or
    /// socket): the reaper then looks at it (see `Shard::reap`).
    pub recheck: bool,
    /// Thread engine: waiting for readiness in the engine's epoll set.
    pub parked: bool,
    /// io_uring: a C write to a pipe, socket or terminal, sent to the kernel's
    /// workers (`IOSQE_ASYNC`), which block every signal: the SIGPIPE of a
    /// write with no reader is theirs, as it is glibc's helper thread's, not
    /// the submitting thread's, which it would kill.
    pub to_worker: bool,
    /// Held while its `lio_listio(LIO_NOWAIT)` call runs (see `hold.rs`).
    pub hold: Hold,
    /// Where the result goes when the request is done, for a handle that reads
    /// it without the lock: the slot is then freed by the completion itself.
    pub mail: MailAddr,
}

impl Slot {
    /// Posts a done request's result to its mail box, if it has one (true: the
    /// slot is to be freed, its handle reads the box).
    #[inline(always)]
    pub(crate) fn post_mail(&mut self, res: i64) -> bool {
        let m = std::mem::take(&mut self.mail);
        if m.is_none() {
            return false;
        }
        // SAFETY: the request's handle keeps the box alive while the slot holds
        // its address (`MailAddr`), and the slot lets go of it here.
        unsafe { m.post(res) };
        true
    }

    /// The descriptor the I/O uses: the request's own copy, or the caller's.
    #[inline]
    pub(crate) fn io_fd(&self) -> i32 {
        match &self.own_fd {
            Some(f) => f.as_raw_fd(),
            None => self.op.fd,
        }
    }

    /// True for an issued write that a cancel leaves to run: one on a
    /// datagram socket, whose send cannot end part way. Both engines could
    /// stop it while it waits for room (the thread engine parks it, and its
    /// poller tries it again), but they agree (as glibc, and as the Open
    /// POSIX Test Suite's `aio_cancel` tests expect): it is in progress,
    /// `AIO_NOTCANCELED`, and the cancel does not wait for it. `kind` gives the fd's kind, if known
    /// (asked only for a write).
    #[inline]
    pub(crate) fn issued_write_stays(&self, kind: impl FnOnce() -> Option<FdKind>) -> bool {
        self.op.kind == OpKind::Write && kind() == Some(FdKind::Datagram)
    }

    pub(crate) fn empty() -> Slot {
        Slot {
            gen: 0,
            state: State::Free,
            op: RawOp {
                kind: OpKind::Read,
                fd: -1,
                offset: 0,
                ptr: 0,
                len: 0,
                ordered: false,
            },
            reqprio: 0,
            key: 0,
            seq: 0,
            res: 0,
            notify: Notify::None,
            list: NO_LIST,
            waker: None,
            orphan: None,
            detached: false,
            kept: false,
            keepers: 0,
            worker: u32::MAX,
            interruptible: false,
            cancel_req: false,
            aiocb: 0,
            own_fd: None,
            class: SchedClass::OTHER,
            fixed: 0,
            submitter: 0,
            finite: false,
            fd_kind: None,
            nonblock: false,
            probe: false,
            espipe: false,
            skip_espipe: false,
            mail: MailAddr::NONE,
            eagain: false,
            refaulted: false,
            reentered_by: 0,
            recheck: false,
            covered: 0,
            to_worker: false,
            parked: false,
            hold: Hold::No,
        }
    }
}

/// Where a request stands with the call that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Not held: its completion completes it.
    No,
    /// Its submitting call runs: a completion is held.
    Running,
    /// Done while its call ran: the result waits in `Slot::res`.
    Done,
}

impl Hold {
    /// Whether the requests of a list are held until its call returns: those
    /// of a `LIO_NOWAIT` list (`no_wait`) of which something notifies
    /// (`notifies`: the list or one of its requests), so that no
    /// notification fires before the call returns (POSIX `lio_listio`).
    #[inline]
    pub(crate) fn needed(no_wait: bool, notifies: bool) -> bool {
        no_wait && notifies
    }
}

impl Slot {
    /// At the completion of this request with `res`: true if it is held (the
    /// result is kept, nothing else happens). Otherwise it is not held any
    /// more, and completes as usual.
    #[inline]
    pub(crate) fn held(&mut self, res: i64) -> bool {
        match self.hold {
            Hold::No => false,
            Hold::Running if self.state == State::Issued && !self.parked && !self.probe => {
                self.hold = Hold::Done;
                self.res = res;
                self.interruptible = false;
                true
            }
            _ => {
                debug_assert!(self.hold != Hold::Done, "a held request completed twice");
                self.hold = Hold::No;
                false
            }
        }
    }
}
