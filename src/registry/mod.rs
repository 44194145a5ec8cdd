//! Per-process, shared-memory, seqlock-read registries that other processes read.
//!
//! This is the one mechanism behind [`crate::mark`] (thread fingerprints, kind
//! `"mark"`) and the tracked synchronisation objects (kind `"sync"`, what `rtstat` reads). A process
//! creates one registry file per kind; its threads claim fixed-size slots and write
//! them under a sequence counter; any process with read access to the file (root,
//! or the same user) lists all registries of a kind with [`scan()`] and gets a
//! consistent copy of each live slot.
//!
//! # The file
//!
//! `/dev/shm/posixrt-<KIND>-<PID>-<STARTTIME>`, mode 0600, where `STARTTIME` is
//! field 22 of `/proc/<PID>/stat` (clock ticks since boot at process start), so a
//! recycled pid never matches an old file. It is created under a temporary name,
//! filled in, then renamed, so readers never see a half-written header. The
//! name is predictable and `/dev/shm` world-writable: what another user
//! planted there (a file, a symlink, a FIFO) is replaced by that rename, never
//! opened for writing nor followed, and never taken for another live writer's
//! file (see [`Registry::create`]); readers skip a file that belongs neither
//! to root nor to a user the named process runs as. It is
//! removed at normal process exit (an `atexit` handler), and by the next [`scan()`]
//! or [`Registry::create`] of the same kind once the process is gone (pid missing,
//! start time different, or a zombie) and nobody holds the file's lock (a writer
//! in another pid namespace sharing `/dev/shm` names itself by a pid that means
//! nothing here; its file is kept and counted as unreadable; and a process here
//! whose pid and start time name the same file gets `Busy` from
//! [`Registry::create`] rather than replacing it). The temporary file of a
//! process killed between creating and renaming it
//! (`.posixrt-<KIND>-<PID>-<STARTTIME>.tmp`, possibly with a random part
//! before `.tmp`) is removed by the same clean-up once it is a minute old and
//! unlocked. The owner also holds the file open
//! (close-on-exec) with an exclusive `flock` for its whole life, so a reader that
//! can take a shared lock knows the owner is gone even when the pid and start time
//! still match (the process called `exec`); [`scan()`] removes such a file too
//! (unless the path names another file by then: the new program image's own
//! registry, published over it meanwhile). A
//! child created by `fork` lets go of its inherited reference to that lock at once
//! (a fork handler points its copy of the descriptor at `/dev/null`; the lock is
//! taken on a second, never-mapped open of the file, because an inherited
//! mapping would otherwise keep the locked file description alive), so a child
//! that keeps running cannot keep its parent's stale file alive, and dropping an
//! inherited [`Registry`] in a child never removes the parent's file. The fork
//! handler runs in the child when the child first runs, not when `fork` returns
//! in the parent: a parent that execs before its new child was ever scheduled
//! leaves a stale file that still looks owned until the child runs (the file
//! shows no live slot, and the first scan after the child ran removes it).
//!
//! All integers are native-endian (readers run on the same machine).
//!
//! | offset | size | header field |
//! |---:|---:|---|
//! | 0 | 8 | magic `b"PRTREG\0\0"` |
//! | 8 | 4 | version (1) |
//! | 12 | 4 | header size (128) |
//! | 16 | 16 | kind, NUL-padded ASCII |
//! | 32 | 4 | pid |
//! | 36 | 4 | reserved (0) |
//! | 40 | 8 | process start time (clock ticks) |
//! | 48 | 4 | slot size in bytes (multiple of 64) |
//! | 52 | 4 | slot count |
//! | 56 | 4 | payload size in bytes (multiple of 8) |
//! | 60 | 4 | high water: slots `0..high_water` have ever been claimed (atomic) |
//! | 64 | 64 | reserved (0) |
//!
//! Slot `i` starts at `128 + i * slot_size`:
//!
//! | offset | size | slot field |
//! |---:|---:|---|
//! | 0 | 4 | sequence counter (atomic; odd while the owner writes) |
//! | 4 | 4 | state: 0 free, 1 reserved (invisible), 2 live, 3 being reclaimed (invisible) |
//! | 8 | 4 | owner tid, or 0 for a slot owned by the process as a whole |
//! | 12 | 4 | reserved (0) |
//! | 16 | 8 | owner thread start time (field 22 of `/proc/<pid>/task/<tid>/stat`) |
//! | 24 | 8 | reserved (0) |
//! | 32 | payload size | payload, written and read as 64-bit words |
//!
//! # Writing and reading (the seqlock)
//!
//! Only the owner writes a slot. A write makes the counter odd (relaxed store, then
//! a release fence), stores the words (relaxed atomics), and makes it even again
//! (release store). A reader reads the counter (a `pread`, then an acquire fence),
//! retries while it is odd, copies state, owner and payload (one `pread`), issues
//! an acquire fence and rereads the counter: if it changed, the copy may be
//! torn and the reader retries (yielding the CPU every 64 attempts), for at most
//! [`RETRY_BUDGET`], then reports the slot as busy. This is the seed's "begin and
//! end serial numbers" proposal, made data-race free with atomics (the scheme of
//! Boehm, "Can seqlocks get along with programming language memory models?").
//!
//! The owner maps its file and touches the shared bytes only through atomics of at
//! most 8 bytes. Readers never map it: they read it with `pread`, which copies
//! into the reader's own buffers (no Rust-visible data race), and which comes back
//! short, instead of raising `SIGBUS` as a mapped load would, when the file's
//! user shrinks the file under the reader (`ftruncate`). A registry cut short,
//! before the scan or during it (down to 0 bytes, into its header, or below
//! its slots), is counted as unreadable ([`Scan::unreadable`]), not as
//! incompatible: it is no other layout, and no release of the reader reads it.
//!
//! If a writer panics inside [`SlotWriter::write`], the counter is still made even
//! (a drop guard), so readers do not treat the slot as busy forever; a slot whose
//! owner died mid-write (odd counter) is made consistent again when it is reclaimed.
//!
//! # A file truncated under its owner
//!
//! Another process of the same user (or root) may shrink the file: an admin's
//! `truncate -s 0`, a clean-up script. The owner's stores to (and loads from)
//! mapped pages past the new end would raise `SIGBUS` and kill the process,
//! for the sake of a diagnostic file. Two things keep it alive:
//!
//! - A `SIGBUS` handler, installed when the first registry is created,
//!   catches a fault inside a registry mapping at any moment (a
//!   [`SlotWriter::write`] or [`SlotWriter::release`] after the truncation, a
//!   claim racing it): it extends the file to its size again and backs the
//!   faulting page, or, when `/dev/shm` has no room for it (ENOSPC), maps
//!   private memory over that page, so the access completes unseen by readers.
//!   Any other fault takes the course it had before (a handler the program
//!   installed earlier, or the default action: the process dies of `SIGBUS`
//!   as it would have). A program that installs its own `SIGBUS` handler
//!   after the first registry replaces this one.
//! - [`Registry::claim`], [`Registry::live_slots`], [`Registry::check_size`]
//!   (for an owner that writes on its own schedule, as the sync publisher
//!   does before each round) and [`SlotWriter::reclaim`] check the file's
//!   size (one `fstat`) and whether the handler caught a fault since, and
//!   put the file back: its reserved pages are allocated again
//!   (`fallocate`), it is extended to its size, the file is mapped again over
//!   pages the handler replaced, and its header is written again; if that
//!   fails (ENOSPC), the call fails with an error saying so, and touches no
//!   slot.
//!
//! What the truncation wiped is lost, and a wiped slot reads as free while its
//! writer may still hold it: every slot below the high-water mark that reads
//! free is kept reserved (invisible to readers, never handed out again) until
//! a writer that holds it releases it; slots that were really free then stay
//! unused for the registry's life. A writer learns that its slot may have been
//! wiped from [`SlotWriter::wiped`] (one relaxed load, no system call), and
//! [`SlotWriter::reclaim`] moves it to a new slot that readers list again,
//! with what its old slot still held (`mark` does both around each write, so a
//! thread's next mark after a truncation is listed). A truncation that leaves
//! the writer's own page mapped (a cut inside that page) raises no fault: a
//! slot whose header it zeroed reads as not live, which [`SlotWriter::wiped`]
//! also checks; one cut inside its payload only is found by the next size
//! check (a claim, [`Registry::check_size`]). A claim in another thread racing the
//! repair may take a wiped slot whose writer still holds it before the repair
//! reserves it (both then write it; readers may show a mix, memory stays
//! safe).
//!
//! # A file deleted under its owner
//!
//! An `rm` of the file, or systemd-logind's `RemoveIPC=yes` (which removes a
//! user's files in `/dev/shm` when the user's last session ends), leaves the
//! owner writing a mapping of a file no reader can find. The owner notices
//! it (the held descriptor's link count is 0) in the same places it notices a
//! truncation ([`Registry::claim`], [`Registry::check_size`],
//! [`SlotWriter::reclaim`], ...), when a slot is released, and in
//! [`SlotWriter::notice_deleted`], at most once per [`DELETED_CHECK_MS`] (one
//! `fstat`): so the sync publisher's next round lists the process again, and
//! for `mark` a thread's first mark, a `mark::set` that renames the thread
//! (it makes a system call anyway), or a marked thread's exit, after that
//! delay. `mark`'s fast path (`mark::update`, a `set` that keeps the
//! thread's name, `write_raw`) reads no clock of its own for it: it asks
//! [`SlotWriter::notice_deleted`] (so makes that `fstat` a second) when the
//! timestamp it stores anyway is 50 ms or more past the thread's last ask, so a process
//! whose threads only update their marks is listed again by the first mark
//! made 1.05 s or more after the deletion (see `mark::update`).
//! It publishes a new file as [`Registry::create`] does (a temporary name,
//! locked, renamed to the same name) with a copy of the header and of every
//! claimed slot (each copied as a reader copies it), maps it over the old
//! mapping at the same address (every reference into it stays valid), and
//! points the descriptors it held (the lock's, the data's) at the new file.
//! A write made while the slots were copied may have landed in the old file
//! only: every slot held is then [`wiped`](SlotWriter::wiped), and its
//! writer writes it again ([`SlotWriter::reclaim`] moves it to a new slot, or
//! rewrites it in place when the registry has no free one). If the new file
//! cannot be made (`/dev/shm` full or read-only by then), the owner keeps
//! writing the deleted one, unlisted, and tries again at a later check. A
//! forked child never publishes its parent's file.
//!
//! # Liveness
//!
//! A live slot with a non-zero owner tid is shown only if
//! `/proc/<pid>/task/<tid>/stat` exists, is not a zombie, and has the recorded start
//! time: a thread that vanished without freeing its slot (killed, or exited
//! through a raw `exit` syscall) is never shown as alive, and its slot is reclaimed
//! by the next [`Registry::claim`] that finds the registry full. Only a thread
//! known to be gone loses its slot: one whose `stat` cannot be read for another
//! reason (EMFILE, ENOMEM) counts as alive there.

#![allow(clippy::len_without_is_empty)]

mod exit;
mod fault;
mod file;
mod layout;
mod map;
mod payload;
mod proc;
mod scan;
mod writer;

pub use exit::generation;
pub use layout::{DIR, HEADER_SIZE, MAGIC, MAX_RETRIES, RETRY_BUDGET, SLOT_HEADER_SIZE, VERSION};
pub use payload::Payload;
pub use proc::{current_thread, process_ended, TaskStat};
pub use scan::{cleanup, scan, ProcessEntry, Scan, SlotCopy};
pub use writer::{Registry, SlotWriter, DELETED_CHECK_MS};

#[cfg(test)]
mod tests {
    use super::exit;
    use super::layout::*;
    use super::map::*;
    use super::proc::*;
    use super::scan::*;
    use super::*;
    use crate::ErrorKind;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn stat_parse_handles_parens_in_comm() {
        let t = "123 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 20 -5 1 0 98765 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 50 1 0 0";
        let st = TaskStat::parse(t).unwrap();
        assert_eq!(st.comm, "a) b) (c");
        assert_eq!(st.state, 'S');
        assert_eq!((st.utime, st.stime), (11, 12));
        assert_eq!(st.nice, -5);
        assert_eq!(st.starttime, 98765);
        assert_eq!((st.processor, st.rt_priority, st.policy), (1, 50, 1));
    }

    #[test]
    fn names_and_kinds() {
        let n = parse_name("mark", b"posixrt-mark-42-1234").unwrap();
        assert_eq!((n.pid, n.starttime), (42, 1234));
        assert!(parse_name("mark", b"posixrt-sync-42-1234").is_none());
        assert!(parse_name("mark", b".posixrt-mark-42-1234.tmp").is_none());
        assert!(kind_bytes("Mark").is_err());
        assert!(kind_bytes("").is_err());
        assert!(kind_bytes("sync").is_ok());
        for (payload, slots) in [(usize::MAX, 1), (MAX_SLOT_SIZE, 1), (8, 0), (8, u32::MAX)] {
            let e = geometry(payload, slots).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{payload} x {slots}");
        }
        assert_eq!(geometry(20, 8).unwrap(), (24, 64, 128 + 8 * 64));
    }

    #[test]
    fn write_scan_release() {
        let reg = Registry::create("regtest", 20, 8).unwrap();
        assert_eq!(reg.payload_size(), 24);
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        w.write(|p| {
            p.store_bytes(3, b"hello world");
            p.store_u64(2, 0xdead_beef);
        });
        let mut p2 = reg.claim(0, 0).unwrap();
        p2.write(|p| p.store_bytes(0, b"process"));
        let s = scan("regtest", Some(reg.pid())).unwrap();
        assert_eq!(s.processes.len(), 1);
        let e = &s.processes[0];
        assert_eq!(e.slots.len(), 2);
        assert_eq!(&e.slots[0].payload[3..14], b"hello world");
        assert_eq!(e.slots[0].tid, tid);
        assert!(e.slots[0].task.is_some());
        assert_eq!(&e.slots[1].payload[..7], b"process");
        assert!(e.slots[1].task.is_none());
        w.release();
        let s = scan("regtest", Some(reg.pid())).unwrap();
        assert_eq!(s.processes[0].slots.len(), 1);
        // a dead owner (tid that does not exist) is hidden and reclaimable
        let ghost = reg.claim(i32::MAX - 1, 1).unwrap();
        let _ = ghost.index();
        let s = scan("regtest", Some(reg.pid())).unwrap();
        assert_eq!(s.processes[0].slots.len(), 1);
        let mut held = Vec::new();
        while let Ok(w) = reg.claim(tid, start) {
            held.push(w);
            assert!(held.len() <= 8);
        }
        assert_eq!(held.len(), 7, "the ghost's slot was reclaimed");
        let path = reg.path().to_path_buf();
        drop(held);
        drop(reg);
        assert!(!path.exists());
    }

    #[test]
    fn a_second_registry_of_a_kind_does_not_replace_the_first() {
        // Both would be named posixrt-<kind>-<pid>-<start>: the second must not
        // take the first's file (its writes would vanish from every reader, and
        // dropping either would remove the other's file).
        let first = Registry::create("regdup", 16, 2).unwrap();
        let (tid, start) = current_thread().unwrap();
        let mut w = first.claim(tid, start).unwrap();
        w.write(|p| p.store_u64(0, 42));
        let e = Registry::create("regdup", 16, 2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
        let s = scan("regdup", Some(first.pid())).unwrap();
        assert_eq!(s.processes.len(), 1, "{s:?}");
        assert_eq!(s.processes[0].slots.len(), 1, "the first's slot is listed");
        assert_eq!(s.processes[0].slots[0].payload[..8], 42u64.to_ne_bytes());
        let path = first.path().to_path_buf();
        drop(first);
        assert!(!path.exists());
        // Once the first is gone, the kind can be created again.
        let again = Registry::create("regdup", 16, 2).unwrap();
        assert!(again.path().exists());
    }

    #[test]
    fn a_file_gone_since_the_listing_is_not_unreadable() {
        // A process that exits during a scan removes its file between the
        // directory listing and the open: that is not a permission problem, and
        // tfp must not tell the user to run as root for it.
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let name = FileName { pid, starttime: 1 };
        let path = Path::new(DIR).join(format!("posixrt-gonetest-{pid}-1"));
        let _ = std::fs::remove_file(&path);
        let r = read_file(&path, &kind_bytes("gonetest").unwrap(), &name);
        assert!(!matches!(r, FileRead::Unreadable), "counted as unreadable");
    }

    #[test]
    fn a_stale_file_replaced_meanwhile_is_not_removed() {
        // A reader finds the file of an earlier program image of this pid
        // (before an exec: nobody holds its lock) stale; before it removes
        // it, the new image publishes its own registry at the same path. The
        // reader must remove the stale file only, never the live registry
        // (whose marks would then be invisible for the process's life).
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let start = read_stat("/proc/self/stat").unwrap().starttime;
        let path = Path::new(DIR).join(format!("posixrt-regexec-{pid}-{start}"));
        std::fs::write(&path, b"left by the image before exec").unwrap();
        let name = FileName {
            pid,
            starttime: start,
        };
        let FileRead::Stale(stale) = read_file(&path, &kind_bytes("regexec").unwrap(), &name)
        else {
            let _ = std::fs::remove_file(&path);
            panic!("an unlocked file of this process is not stale");
        };
        let reg = Registry::create("regexec", 8, 1).unwrap();
        assert_eq!(reg.path(), path);
        let removed = remove_stale(&path, &stale);
        let kept = path.exists();
        let s = scan("regexec", Some(pid)).unwrap();
        assert!(!removed && kept, "the live registry was removed");
        assert_eq!(s.processes.len(), 1, "{s:?}");
    }

    #[test]
    fn racing_creates_of_a_kind_leave_one_registry() {
        // Two threads creating the same kind at once: one registry, whose file
        // is the one at the path (the other is Busy), never two that share or
        // lose the file.
        for round in 0..200 {
            let go = std::sync::Barrier::new(2);
            let (a, b) = std::thread::scope(|s| {
                let t = || {
                    go.wait();
                    Registry::create("regrace", 16, 2)
                };
                let a = s.spawn(t);
                let b = s.spawn(t);
                (a.join().unwrap(), b.join().unwrap())
            });
            let mut ok: Vec<Registry> = Vec::new();
            for r in [a, b] {
                match r {
                    Ok(r) => ok.push(r),
                    Err(e) => assert_eq!(e.kind(), ErrorKind::Busy, "round {round}: {e}"),
                }
            }
            assert_eq!(ok.len(), 1, "round {round}: both creates succeeded");
            let (tid, start) = current_thread().unwrap();
            let mut w = ok[0].claim(tid, start).unwrap();
            w.write(|p| p.store_u64(0, round));
            let s = scan("regrace", Some(ok[0].pid())).unwrap();
            assert_eq!(s.processes.len(), 1, "round {round}: {s:?}");
            assert_eq!(
                s.processes[0].slots[0].payload[..8],
                round.to_ne_bytes(),
                "round {round}: the registry's own file is listed"
            );
        }
    }

    #[test]
    fn panicking_writer_still_closes_the_counter() {
        let reg = Registry::create("regpanic", 16, 2).unwrap();
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.write(|p| {
                p.store_u64(0, 7);
                p.store_u64(5, 1); // out of range: panics mid-write
            })
        }));
        assert!(r.is_err());
        let s = scan("regpanic", Some(reg.pid())).unwrap();
        assert_eq!(s.busy, 0, "the counter was left odd");
        assert_eq!(s.processes[0].slots.len(), 1);
        assert_eq!(s.processes[0].slots[0].payload[..8], 7u64.to_ne_bytes());
    }

    /// `f()` must panic with a message starting with `prefix`; that panic is
    /// kept off the output.
    fn expect_panic(prefix: &'static str, f: impl FnOnce()) {
        let e = crate::test_panics::quietly(f).expect_err("no panic");
        let msg = crate::test_panics::message(&*e);
        assert!(msg.starts_with(prefix), "panicked with {msg:?}");
    }

    #[test]
    fn a_huge_payload_word_index_is_refused() {
        // `i * 8 + 8 <= len` wrapped for indices near usize::MAX / 8: word
        // 2^61 - 1 passed the check and was stored over the slot header's
        // reserved word (8 bytes before the payload), word 2^61 over word 0.
        let reg = Registry::create("regindex", 16, 1).unwrap();
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        for i in [usize::MAX / 8, usize::MAX / 8 + 1, usize::MAX] {
            expect_panic("payload word", || w.write(|p| p.store_u64(i, u64::MAX)));
            expect_panic("payload word", || {
                w.read(|p| p.load_u64(i));
            });
        }
        assert_eq!(w.read(|p| p.load_u64(0)), 0, "word 0 untouched");
        let s = scan("regindex", Some(reg.pid())).unwrap();
        assert_eq!(s.processes[0].slots.len(), 1);
        assert_eq!(s.processes[0].slots[0].payload, vec![0; 16]);
        assert_eq!(s.processes[0].slots[0].thread_start, start);
    }

    #[test]
    fn a_child_forked_during_an_exit_registration_can_create_a_registry() {
        // The fork came while another thread of the parent registered a file
        // for removal at exit (`Registry::create` of another kind): whatever
        // that registration holds must not be held for good in the child.
        let pid = exit::while_registering_exit_unlink(|| {
            // SAFETY: the child makes only the calls below and leaves with
            // `_exit` (no exit handlers, no unwinding into the test harness).
            unsafe {
                let pid = libc::fork();
                if pid == 0 {
                    let code = match Registry::create("regforkexit", 8, 1) {
                        Ok(reg) => {
                            drop(reg);
                            0
                        }
                        Err(_) => 2,
                    };
                    libc::_exit(code);
                }
                pid
            }
        });
        assert!(pid > 0, "fork: {}", std::io::Error::last_os_error());
        let end = std::time::Instant::now() + Duration::from_secs(20);
        let status = loop {
            let mut status = 0;
            // SAFETY: polls our own child; `status` is writable.
            let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if got == pid {
                break Some(status);
            }
            if std::time::Instant::now() >= end {
                // SAFETY: kills and reaps our own child, not yet waited for.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let _ = cleanup("regforkexit");
        let status = status.expect("the child hung in Registry::create (killed)");
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status:#x}"
        );
    }

    #[test]
    fn reclaimed_slot_with_odd_counter_is_repaired() {
        let reg = Registry::create("regodd", 16, 1).unwrap();
        let ghost = reg.claim(i32::MAX - 1, 1).unwrap();
        ghost.begin(); // its owner "dies" mid-write: the counter stays odd
        let (tid, start) = current_thread().unwrap();
        let mut w = reg
            .claim(tid, start)
            .expect("the dead owner's slot is reclaimed");
        assert_eq!(w.index(), 0);
        w.write(|p| p.store_u64(0, 9));
        let s = scan("regodd", Some(reg.pid())).unwrap();
        assert_eq!(s.busy, 0, "the reclaimed slot's counter is consistent");
        assert_eq!(s.processes[0].slots.len(), 1);
        assert_eq!(s.processes[0].slots[0].payload[..8], 9u64.to_ne_bytes());
    }

    #[test]
    fn a_planted_fifo_does_not_block_the_reader() {
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let start = read_stat("/proc/self/stat").unwrap().starttime;
        let path = Path::new(DIR).join(format!("posixrt-fifotest-{pid}-{start}"));
        let _ = std::fs::remove_file(&path);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(scan("fifotest", Some(pid))));
        let got = rx.recv_timeout(Duration::from_secs(20));
        let _ = std::fs::remove_file(&path);
        let s = got.expect("scan blocked on a FIFO").unwrap();
        assert!(s.processes.is_empty());
        assert_eq!(s.unreadable, 1);
    }

    #[test]
    fn a_file_whose_lock_is_held_is_not_removed_as_dead() {
        // A writer in another pid namespace sharing /dev/shm (a container with the
        // host's /dev/shm) names its file with a pid this reader cannot see, or
        // that is another process here; its exclusive lock says it is alive.
        let path = Path::new(DIR).join(format!("posixrt-nstest-{}-1", i32::MAX - 3));
        let _ = std::fs::remove_file(&path);
        let f = std::fs::File::create(&path).unwrap();
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        let s = scan("nstest", None).unwrap();
        let c = cleanup("nstest").unwrap();
        let kept = path.exists();
        drop(f);
        let _ = std::fs::remove_file(&path);
        assert!(
            kept,
            "a live owner's file was removed (scan {s:?}, cleanup {c})"
        );
        assert_eq!((s.removed, s.unreadable, c), (0, 1, 0));
    }

    #[test]
    fn a_dead_owners_slot_goes_to_one_reclaimer_only() {
        use std::sync::{Arc, Barrier};
        // One slot whose owner died: two threads that find the registry full race
        // to reclaim it. One may get it; the other must not take it again from the
        // (live) winner.
        let reg: &'static Registry = Box::leak(Box::new(Registry::create("regaba", 8, 1).unwrap()));
        for round in 0..200 {
            let _ghost = reg.claim(i32::MAX - 1, 1).unwrap(); // its owner "dies"
            let go = Arc::new(Barrier::new(2));
            let done = Arc::new(Barrier::new(2));
            let racers: Vec<_> = (0..2)
                .map(|_| {
                    let (go, done) = (go.clone(), done.clone());
                    std::thread::spawn(move || {
                        let (tid, start) = current_thread().unwrap();
                        go.wait();
                        let w = reg.claim(tid, start).ok();
                        let got = w.as_ref().map(|w| w.index());
                        done.wait(); // both hold what they got
                        if let Some(w) = w {
                            w.release();
                        }
                        got
                    })
                })
                .collect();
            let got: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
            assert!(
                got.iter().flatten().count() <= 1,
                "round {round}: the one slot went to two live owners: {got:?}"
            );
        }
    }

    #[test]
    fn malformed_files_of_a_live_owner_are_refused_not_trusted() {
        // A file named for this (live) process and locked as its owner would
        // lock it, whose header lies about sizes, offsets and lengths: each is
        // counted as incompatible (or unreadable when cut short), never read
        // past its end, and never shown.
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let start = read_stat("/proc/self/stat").unwrap().starttime;
        let path = Path::new(DIR).join(format!("posixrt-regbad-{pid}-{start}"));
        let header = |slot_size: u32, slot_count: u32, payload: u32, high_water: u32| {
            let mut h = vec![0u8; HEADER_SIZE];
            h[..8].copy_from_slice(&MAGIC);
            h[H_VERSION..H_VERSION + 4].copy_from_slice(&VERSION.to_ne_bytes());
            h[H_HEADER_SIZE..H_HEADER_SIZE + 4]
                .copy_from_slice(&(HEADER_SIZE as u32).to_ne_bytes());
            h[H_KIND..H_KIND + 6].copy_from_slice(b"regbad");
            h[H_PID..H_PID + 4].copy_from_slice(&pid.to_ne_bytes());
            h[H_START..H_START + 8].copy_from_slice(&start.to_ne_bytes());
            h[H_SLOT_SIZE..H_SLOT_SIZE + 4].copy_from_slice(&slot_size.to_ne_bytes());
            h[H_SLOT_COUNT..H_SLOT_COUNT + 4].copy_from_slice(&slot_count.to_ne_bytes());
            h[H_PAYLOAD..H_PAYLOAD + 4].copy_from_slice(&payload.to_ne_bytes());
            h[H_HIGH_WATER..H_HIGH_WATER + 4].copy_from_slice(&high_water.to_ne_bytes());
            h
        };
        let live_slot = |slot_size: usize| {
            let mut s = vec![0u8; slot_size];
            s[S_STATE..S_STATE + 4].copy_from_slice(&STATE_LIVE.to_ne_bytes());
            s
        };
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("bad magic", {
                let mut h = header(64, 1, 8, 1);
                h[0] = b'X';
                [h, live_slot(64)].concat()
            }),
            (
                "count times size overflows",
                header(64 * 1024, u32::MAX, 8, u32::MAX),
            ),
            (
                "slot size not a multiple of 64",
                [header(72, 1, 8, 1), live_slot(72)].concat(),
            ),
            (
                "payload larger than the slot",
                [header(64, 1, 40, 1), live_slot(64)].concat(),
            ),
            (
                "payload not a multiple of 8",
                [header(64, 1, 12, 1), live_slot(64)].concat(),
            ),
            (
                "huge slot",
                [header(1 << 30, 1, 8, 1), live_slot(64)].concat(),
            ),
        ];
        // The scan of `bytes` as this (live, locked) process's registry file.
        let scan_as_file = |bytes: &[u8]| {
            let _ = std::fs::remove_file(&path);
            std::fs::write(&path, bytes).unwrap();
            let f = std::fs::File::open(&path).unwrap();
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
            let s = scan("regbad", Some(pid));
            drop(f);
            let _ = std::fs::remove_file(&path);
            s.unwrap()
        };
        for (what, bytes) in cases {
            let s = scan_as_file(&bytes);
            assert!(s.processes.is_empty(), "{what}: {s:?}");
            assert_eq!((s.incompatible, s.unreadable), (1, 0), "{what}");
        }
        // Files cut short (a truncation) are unreadable, not another layout.
        for (what, bytes) in [
            ("shorter than a header", header(64, 1, 8, 1)[..100].to_vec()),
            ("cut and extended again (zeroed)", vec![0; HEADER_SIZE + 64]),
            (
                "slots past the end",
                [header(64, 4, 8, 4), live_slot(64)].concat(),
            ),
        ] {
            let s = scan_as_file(&bytes);
            assert!(s.processes.is_empty(), "{what}: {s:?}");
            assert_eq!((s.incompatible, s.unreadable), (0, 1), "{what}");
        }
        // A high-water mark past the slot count is clamped to it.
        let s = scan_as_file(&[header(64, 1, 8, u32::MAX), live_slot(64)].concat());
        assert_eq!(s.processes.len(), 1, "{s:?}");
        assert_eq!(s.processes[0].slots.len(), 1, "{s:?}");
        assert_eq!(s.processes[0].slots[0].payload, vec![0; 8]);
    }

    #[test]
    fn a_file_owned_by_another_user_is_not_trusted() {
        let reg = Registry::create("uidtest", 16, 2).unwrap();
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        w.write(|p| p.store_u64(0, 1));
        assert_eq!(scan("uidtest", Some(reg.pid())).unwrap().processes.len(), 1);
        // Hand the file to another user (`nobody`, or uid 65533 when the test
        // runs as `nobody`), as if that user had planted it under our name.
        let me = rustix::process::geteuid().as_raw();
        let other = Some(rustix::process::Uid::from_raw(if me == 65534 {
            65533
        } else {
            65534
        }));
        match rustix::fs::chown(reg.path(), other, None) {
            Ok(()) => {
                let s = scan("uidtest", Some(reg.pid())).unwrap();
                assert!(s.processes.is_empty(), "{s:?}");
                assert_eq!(s.unreadable, 1);
            }
            Err(e) => {
                println!("skip: chown needs root ({e})");
                assert_eq!(e, rustix::io::Errno::PERM);
            }
        }
    }
}
