//! Thread fingerprints (the QNX "thread fingerprint" utility): every thread can
//! attach a marker string, a 64-byte raw block and a timestamp to itself, change
//! them at any time, and any process (the `tfp` tool) can list them.
//!
//! | seed | here |
//! |---|---|
//! | `tfp_mark(string)` | [`set`] (also the kernel thread name), [`update`] (marker only, the fast path), [`clear`] |
//! | `tfp_write_raw_block`, `tfp_read_raw_block` | [`write_raw`], [`read_raw`] (bounds checked correctly: offset + length ≤ 64) |
//! | `pthread_create_named` | [`spawn_named`], [`Builder`] |
//! | the `tfp` command | [`snapshot`], [`snapshot_pid`], and the `tfp` tool in `tools/` |
//!
//! # How it works
//!
//! The seed found markers by walking each thread's POSIX keys through QNX's
//! `/proc/<pid>/as`. Linux has no such door, so each process that marks threads
//! keeps a shared-memory registry instead: `/dev/shm/posixrt-mark-<pid>-<starttime>`
//! (mode 0600), one fixed 256-byte slot per marked thread (see
//! [the payload layout](#payload-layout)). A thread writes only its own slot, under
//! a sequence counter that is odd while it writes, so a reader copies the slot and
//! retries if the counter moved: it never shows half of one marker and half of
//! another, which is the fix the seed's last section proposes.
//!
//! Clean-up: a thread that exits frees its slot (a thread-local destructor); a
//! thread that vanishes without it (killed) is recognised by its tid and start
//! time and never listed; a process's file is removed at normal exit, and the file
//! of a killed process is removed by the next reader or writer.
//!
//! A registry file truncated by another process (`truncate -s 0`, a clean-up
//! script) does not kill its owner with `SIGBUS` (see the `registry` module
//! docs): the marks it wiped are lost, and each thread's next mark puts the
//! file back and is listed again. A registry file deleted by another process
//! (`rm`, systemd-logind's `RemoveIPC=yes`) is published again, with every
//! thread's mark, by the first mark made 1.05 s or more after the deletion
//! (see [`update`] for how, at no cost to the fast path).
//!
//! `fork`: the child never writes or frees the parent's slots; its first mark
//! creates the child's own registry (`posixrt-mark-<child pid>-...`), and the
//! child's thread is listed there. As POSIX says for any child of a multi-threaded
//! process, marking there before `exec` is only safe if no other thread of the
//! parent was inside a first mark (creating the registry or claiming a slot, a few
//! microseconds under a lock) at the instant of the fork.
//!
//! # Cost
//!
//! [`update`] (marker + timestamp; no system call but one `fstat` a second per
//! process, which looks for a deleted registry file) is the fast path: 14 ns in the
//! `mark` bench on a quiet machine, 21 ns at load 3, against 191 ns for a `prctl`
//! rename in the same run (the goal is 50 ns). [`set`] costs about the same (16 ns) while the
//! first 15 bytes, the kernel name, stay the same, and adds a `prctl(PR_SET_NAME)`
//! when they change (270 ns in total there): the kernel name is applied eagerly
//! but only when it changes, so a thread that reports progress with a stable
//! prefix never pays for it. A whole run of `tfp` lists 1000 marked threads in about
//! 20–25 ms (its readers `pread` each slot, so that a file truncated under them cannot
//! kill them with SIGBUS). The timestamp comes from `CLOCK_REALTIME_COARSE` (vDSO,
//! tick resolution), enough for the second-level times `tfp` prints.
//!
//! ```
//! use posixrt::mark;
//!
//! mark::set("Main thread sleeping")?;
//! mark::write_raw(0, &42u32.to_le_bytes())?;
//! let worker = mark::spawn_named("worker 1", || {
//!     mark::update("worker 1: step 1").unwrap();
//!     7
//! })?;
//! assert_eq!(worker.join().unwrap(), 7);
//!
//! let snap = mark::snapshot_pid(std::process::id() as i32)?;
//! let me = &snap.processes[0];
//! let main = me.threads.iter().find(|t| t.marker == "Main thread sleeping").unwrap();
//! assert_eq!(&main.raw[..4], &42u32.to_le_bytes());
//! // the worker has exited: its slot is gone
//! assert!(me.threads.iter().all(|t| !t.marker.starts_with("worker 1")));
//! mark::clear();
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! # Payload layout
//!
//! Inside each registry slot (see the `registry` module docs for the file and slot
//! headers):
//!
//! | payload offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | last update, ns since the epoch |
//! | 8 | 4 | marker length in bytes |
//! | 12 | 4 | flags: bit 0 marked, bit 1 raw block written |
//! | 16 | 64 | raw block |
//! | 80 | 128 | marker bytes (UTF-8) |
//!
//! # References
//!  - Robert Krten, *The QNX Cookbook*, "Thread fingerprint utility"
//!  - [Linux `prctl(PR_SET_NAME)`](https://man7.org/linux/man-pages/man2/pr_set_name.2const.html)
//!  - [Linux `proc_pid_stat(5)`](https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html)

pub(crate) mod hook;
mod layout;
mod reader;
mod spawn;
mod thread;

pub use layout::{MARKER_MAX, RAW_LEN};
pub use reader::{snapshot, snapshot_pid, ProcessMarks, SchedFacts, Snapshot, ThreadMark};
pub use spawn::{spawn_named, Builder, MarkedThread};
pub use thread::{clear, current, read_raw, registry_path, set, update, write_raw};
