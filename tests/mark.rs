//! Integration tests for `posixrt::mark`: a child process marks threads and this
//! process reads them (torn-read safe), slots are freed on thread exit, a SIGKILLed
//! child disappears, the registry file is private, and the bounds are right.
//!
//! Child processes are this test binary run again with `POSIXRT_MARK_CHILD=<mode>`
//! and `child_process --exact --ignored`: that (ignored) test acts as the child
//! when the variable is set, and does nothing otherwise.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

#[path = "common/child.rs"]
mod child;

use posixrt::mark::{self, MARKER_MAX, RAW_LEN};
use posixrt::ErrorKind;

const CHILD_ENV: &str = "POSIXRT_MARK_CHILD";
const MARKER_A: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const MARKER_B: &str = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

fn wait_stdin_eof() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

/// The child side. Prints `READY <pid> <tid>...` once its marks are in place.
/// Ignored in normal runs (it is not a test of its own); the other tests run it in
/// child processes with `--ignored`.
#[test]
#[ignore = "entry point of the child processes the other tests spawn"]
fn child_process() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return; // not a child run
    };
    let me = rustix::thread::gettid().as_raw_nonzero().get();
    match mode.as_str() {
        "basic" | "kill" => {
            mark::set("child main thread").unwrap();
            mark::write_raw(0, b"child raw block").unwrap();
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let done_rx = Arc::new(std::sync::Mutex::new(done_rx));
            let (wrote_tx, wrote_rx) = mpsc::channel::<()>();
            let mut workers = Vec::new();
            for n in 1..=3 {
                let rx = done_rx.clone();
                let wrote = wrote_tx.clone();
                let w = mark::spawn_named(&format!("child worker {n}"), move || {
                    mark::write_raw(RAW_LEN - 1, &[n as u8]).unwrap();
                    wrote.send(()).unwrap();
                    let _ = rx.lock().unwrap().recv();
                })
                .unwrap();
                workers.push(w);
            }
            for _ in 0..3 {
                wrote_rx.recv().unwrap();
            }
            let tids: Vec<String> = workers.iter().map(|w| w.tid().to_string()).collect();
            println!("READY {} {me} {}", std::process::id(), tids.join(" "));
            if mode == "kill" {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            wait_stdin_eof();
            drop(done_tx);
            for w in workers {
                w.join().unwrap();
            }
        }
        "torn" => {
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let writer = mark::spawn_named("writer", move || {
                let mut k = 0u8;
                while !s2.load(Ordering::Relaxed) {
                    k = k.wrapping_add(1);
                    mark::update(if k & 1 == 0 { MARKER_A } else { MARKER_B }).unwrap();
                    mark::write_raw(0, &[k; RAW_LEN]).unwrap();
                }
            })
            .unwrap();
            println!("READY {} {}", std::process::id(), writer.tid());
            wait_stdin_eof();
            stop.store(true, Ordering::Relaxed);
            writer.join().unwrap();
        }
        "exec" => {
            use std::os::unix::process::CommandExt;
            mark::set("child before exec").unwrap();
            println!("READY {} {me}", std::process::id());
            // Replace the image: same pid and start time, marks not rewritten.
            let err = child_command("idle").exec();
            panic!("exec failed: {err}");
        }
        "fork-exec" => {
            use std::os::unix::process::CommandExt;
            mark::set("child before fork and exec").unwrap();
            // The grandchild lets go of the inherited registry lock in posixrt's
            // fork child handler, which runs in the grandchild when it is first
            // scheduled, not when `fork` returns here. Without waiting for it, this
            // process could exec (and the test scan) while the grandchild still
            // holds the lock: the stale file then looks owned and is kept.
            let mut ready = [0i32; 2];
            // SAFETY: `ready` has room for the two descriptors.
            assert_eq!(
                unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) },
                0
            );
            // SAFETY: the forked grandchild only makes async-signal-safe calls
            // (write, close, read, _exit) before it leaves.
            let grandchild = unsafe { libc::fork() };
            assert!(grandchild >= 0, "fork failed");
            if grandchild == 0 {
                // The fork child handlers have run: say so.
                // SAFETY: writes one byte from a static buffer to our pipe end.
                unsafe {
                    libc::write(ready[1], b"f".as_ptr().cast(), 1);
                    libc::close(ready[1]);
                }
                // Outlive the parent's exec: block until the test closes stdin.
                let mut b = [0u8; 64];
                // SAFETY: reads into a local buffer of the given size.
                while unsafe { libc::read(0, b.as_mut_ptr().cast(), b.len()) } > 0 {}
                // SAFETY: leaves without running the parent's destructors.
                unsafe { libc::_exit(0) };
            }
            let mut b = [0u8; 1];
            // SAFETY: closes our copy of the write end, then reads one byte into a
            // local buffer; EOF (0) would mean the grandchild died first.
            let n = unsafe {
                libc::close(ready[1]);
                libc::read(ready[0], b.as_mut_ptr().cast(), 1)
            };
            assert_eq!(n, 1, "the grandchild never ran its fork handlers");
            println!("READY {} {me} {grandchild}", std::process::id());
            let err = child_command("idle").exec();
            panic!("exec failed: {err}");
        }
        "fork" => {
            // Fork from a process with no other marking threads, so the forked
            // child cannot inherit a lock another thread held at the fork.
            mark::set("parent before fork").unwrap();
            let parent = std::process::id() as i32;
            let parent_tid = rustix::thread::gettid().as_raw_nonzero().get();
            let parent_path = mark::registry_path().unwrap();
            // SAFETY: the child only runs the checks below and leaves with `_exit`;
            // no other thread of this process marks or allocates meanwhile.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                let code = (|| {
                    // The inherited slot belongs to the parent: marking must not
                    // write it.
                    mark::set("child after fork").ok()?;
                    let path = mark::registry_path()?;
                    let me = std::process::id() as i32;
                    if path == parent_path || !path.to_str()?.contains(&format!("-{me}-")) {
                        return Some(2);
                    }
                    let snap = mark::snapshot_pid(parent).ok()?;
                    let still = snap
                        .process(parent)?
                        .threads
                        .iter()
                        .any(|t| t.tid == parent_tid && t.marker == "parent before fork");
                    Some(if still { 0 } else { 3 })
                })()
                .unwrap_or(4);
                // SAFETY: leaving the forked child without running the parent's
                // destructors.
                unsafe { libc::_exit(code) };
            }
            let status = child::wait_child(pid);
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                100
            };
            let kept = mark::current().as_deref() == Some("parent before fork");
            println!("READY {pid} {code} {}", i32::from(kept));
            wait_stdin_eof();
        }
        "idle" => {
            println!("IDLE {}", std::process::id());
            wait_stdin_eof();
        }
        other => panic!("unknown child mode {other}"),
    }
}

/// This test binary running [`child_process`] in `mode`.
fn child_command(mode: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "child_process",
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "--ignored",
    ])
    .env(CHILD_ENV, mode);
    cmd
}

struct ChildProc {
    child: Child,
    pid: i32,
    tids: Vec<i32>,
    _out: BufReader<ChildStdout>,
}

impl ChildProc {
    /// Closes the child's stdin (EOF: it exits normally) and checks it did.
    #[track_caller]
    fn finish(&mut self) {
        drop(self.child.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for ChildProc {
    /// A failed assertion must not leave the child running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// The child is reaped by `ChildProc`'s destructor on every path.
#[allow(clippy::zombie_processes)]
fn spawn_child(mode: &str) -> ChildProc {
    let mut child = child_command(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the child");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "child ended before READY");
        if let Some(pos) = line.find("READY ") {
            let nums: Vec<i32> = line[pos + 6..]
                .split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect();
            return ChildProc {
                child,
                pid: nums[0],
                tids: nums[1..].to_vec(),
                _out: out,
            };
        }
    }
}

fn registry_files(pid: i32) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("posixrt-mark-{pid}-")))
        })
        .collect()
}

#[test]
fn child_marks_are_visible_to_parent() {
    let mut c = spawn_child("basic");
    let snap = mark::snapshot_pid(c.pid).unwrap();
    assert_eq!(snap.processes.len(), 1, "{snap:?}");
    let p = &snap.processes[0];
    assert_eq!(p.pid, c.pid);
    let exe = std::env::current_exe().unwrap();
    assert_eq!(p.exe, exe.to_string_lossy());
    let tids: Vec<i32> = p.threads.iter().map(|t| t.tid).collect();
    let mut want = c.tids.clone();
    want.sort();
    assert_eq!(tids, want, "exactly the marked threads, by tid");

    let main = p.threads.iter().find(|t| t.tid == c.tids[0]).unwrap();
    assert_eq!(main.marker, "child main thread");
    assert_eq!(&main.raw[..15], b"child raw block");
    assert!(main.raw_written);
    assert_eq!(main.sched.kernel_name, "child main thre");
    let age = std::time::SystemTime::now()
        .duration_since(main.updated)
        .unwrap_or_default();
    assert!(
        age < Duration::from_secs(120),
        "timestamp is recent: {age:?}"
    );
    for (n, tid) in c.tids[1..].iter().enumerate() {
        let t = p.threads.iter().find(|t| t.tid == *tid).unwrap();
        assert_eq!(t.marker, format!("child worker {}", n + 1));
        assert_eq!(t.raw[RAW_LEN - 1], n as u8 + 1, "last raw byte is writable");
        assert_eq!(t.sched.policy, Some(posixrt::sched::Policy::Other));
        assert_eq!(t.sched.policy_short(), "OTHER");
        assert_eq!(t.sched.rt_priority, 0);
        assert!(t.sched.last_cpu >= 0);
    }
    // the full listing has it too
    let all = mark::snapshot().unwrap();
    assert!(all.process(c.pid).is_some());

    c.finish(); // EOF: the child exits normally
    assert!(mark::snapshot_pid(c.pid).unwrap().processes.is_empty());
    assert!(registry_files(c.pid).is_empty(), "removed at exit");
}

#[test]
fn torn_reads_never_mix_markers() {
    let mut c = spawn_child("torn");
    let writer = c.tids[0];
    let (mut saw_a, mut saw_b, mut reads, mut busy) = (0u64, 0u64, 0u64, 0u64);
    let t0 = Instant::now();
    while (reads < 2000 || saw_a == 0 || saw_b == 0) && t0.elapsed() < Duration::from_secs(20) {
        let snap = mark::snapshot_pid(c.pid).unwrap();
        if snap.busy > 0 {
            busy += 1;
            reads += 1;
            continue;
        }
        let p = snap.process(c.pid).expect("child listed");
        let t = p
            .threads
            .iter()
            .find(|t| t.tid == writer)
            .expect("writer listed");
        match t.marker.as_str() {
            MARKER_A => saw_a += 1,
            MARKER_B => saw_b += 1,
            "writer" => {} // the name it was spawned with, before its first update
            other => panic!("torn marker read: {other:?}"),
        }
        assert!(
            t.raw.iter().all(|&b| b == t.raw[0]),
            "torn raw block: {:?}",
            t.raw
        );
        reads += 1;
    }
    println!(
        "{reads} reads: {saw_a} A, {saw_b} B, {busy} busy, {:?}",
        t0.elapsed()
    );
    assert!(
        saw_a > 0 && saw_b > 0,
        "the writer was changing the marker meanwhile"
    );
    c.finish();
}

#[test]
fn sigkilled_child_disappears() {
    let mut c = spawn_child("kill");
    assert_eq!(
        mark::snapshot()
            .unwrap()
            .process(c.pid)
            .unwrap()
            .threads
            .len(),
        4
    );
    assert_eq!(registry_files(c.pid).len(), 1);
    c.child.kill().unwrap(); // SIGKILL: no destructor, no atexit
    c.child.wait().unwrap();
    assert_gone(c.pid, &mark::snapshot().unwrap(), "dead process listed");
}

/// Process `pid` is not in `snap` (else: `listed`), and its registry file
/// was removed.
#[track_caller]
fn assert_gone(pid: i32, snap: &mark::Snapshot, listed: &str) {
    assert!(snap.process(pid).is_none(), "{listed}: {snap:?}");
    assert!(
        registry_files(pid).is_empty(),
        "the stale or dead file was removed"
    );
}

fn wait_idle(c: &mut ChildProc) {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            c._out.read_line(&mut line).unwrap() > 0,
            "child ended before IDLE"
        );
        if line.contains("IDLE ") {
            break;
        }
    }
}

#[test]
fn exec_leaves_no_live_marks() {
    let mut c = spawn_child("exec");
    wait_idle(&mut c);
    // Same pid and start time, but the new image holds no lock on the old file.
    assert_gone(
        c.pid,
        &mark::snapshot_pid(c.pid).unwrap(),
        "exec'd process listed",
    );
    c.finish();
}

#[test]
fn exec_with_a_forked_child_still_alive_leaves_no_live_marks() {
    // The child marks, forks a grandchild that keeps running, then execs. The
    // grandchild inherited the registry descriptor, and a flock belongs to the open
    // file description: unless the grandchild let go of it at fork time, the stale
    // file would still look owned.
    let mut c = spawn_child("fork-exec");
    let grandchild = c.tids[1];
    wait_idle(&mut c);
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .map(|s| s.contains(") S ") || s.contains(") R "))
            .ok(),
        Some(true),
        "the forked grandchild is alive"
    );
    let snap = mark::snapshot_pid(c.pid).unwrap();
    assert_gone(
        c.pid,
        &snap,
        "exec'd process listed while its forked child lives",
    );
    c.finish(); // EOF for both the child and the grandchild
}

#[test]
fn thread_exit_frees_slot() {
    let me = std::process::id() as i32;
    for round in 0..20 {
        let (tx, rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let t = mark::spawn_named(&format!("short-lived {round}"), move || {
            tx.send(()).unwrap();
            go_rx.recv().unwrap();
        })
        .unwrap();
        rx.recv().unwrap();
        let tid = t.tid();
        let snap = mark::snapshot_pid(me).unwrap();
        let listed = snap
            .process(me)
            .unwrap()
            .threads
            .iter()
            .any(|x| x.tid == tid);
        assert!(listed, "live thread listed");
        go_tx.send(()).unwrap();
        t.join().unwrap();
        let snap = mark::snapshot_pid(me).unwrap();
        let still = snap
            .process(me)
            .is_some_and(|p| p.threads.iter().any(|x| x.tid == tid));
        assert!(!still, "exited thread still listed");
    }
}

#[test]
fn registry_file_mode_is_0600() {
    mark::set("mode check").unwrap();
    let path = mark::registry_path().expect("registry exists after set");
    let md = std::fs::metadata(&path).unwrap();
    assert_eq!(md.mode() & 0o7777, 0o600, "{}", path.display());
    assert_eq!(md.uid(), rustix::process::geteuid().as_raw());
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let start = after.split_whitespace().nth(19).unwrap(); // field 22
    assert_eq!(name, format!("posixrt-mark-{}-{start}", std::process::id()));
    mark::clear();
}

#[test]
fn raw_block_bounds() {
    let full: Vec<u8> = (0..RAW_LEN as u8).collect();
    mark::write_raw(0, &full).unwrap();
    mark::write_raw(RAW_LEN - 1, &[0xEE]).unwrap(); // the seed's check refuses this one
    mark::write_raw(RAW_LEN, &[]).unwrap();
    mark::write_raw(10, &[1, 2, 3]).unwrap();
    let mut back = [0u8; RAW_LEN];
    mark::read_raw(0, &mut back).unwrap();
    let mut want = full.clone();
    want[RAW_LEN - 1] = 0xEE;
    want[10..13].copy_from_slice(&[1, 2, 3]);
    assert_eq!(&back[..], &want[..]);
    let mut two = [0u8; 2];
    mark::read_raw(RAW_LEN - 2, &mut two).unwrap();
    assert_eq!(two, [RAW_LEN as u8 - 2, 0xEE]);

    for (off, len) in [
        (0, RAW_LEN + 1),
        (RAW_LEN - 3, 4),
        (RAW_LEN + 1, 0),
        (usize::MAX, 2),
    ] {
        let e = mark::write_raw(off, &vec![0; len]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{off}+{len}");
        let e = mark::read_raw(off, &mut vec![0; len]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
    mark::clear();
}

/// An empty write writes nothing: it used to set the "raw block written" flag
/// (and mark the thread), so a reader showed an untouched block as written.
#[test]
fn an_empty_raw_write_changes_nothing() {
    let seen = std::thread::spawn(|| {
        let me = rustix::thread::gettid().as_raw_nonzero().get();
        let pid = std::process::id() as i32;
        let raw_written = || {
            let snap = mark::snapshot_pid(pid).unwrap();
            let p = snap.process(pid).unwrap();
            p.threads.iter().find(|t| t.tid == me).unwrap().raw_written
        };
        // Not marked: an empty write does not mark the thread.
        mark::write_raw(0, &[]).unwrap();
        let unmarked = mark::current();
        mark::update("empty raw writes").unwrap();
        mark::write_raw(RAW_LEN, &[]).unwrap();
        mark::write_raw(0, &[]).unwrap();
        let after_empty = raw_written();
        mark::write_raw(3, &[7]).unwrap();
        let after_byte = raw_written();
        mark::write_raw(RAW_LEN, &[]).unwrap();
        let mut back = [0u8; RAW_LEN];
        mark::read_raw(0, &mut back).unwrap();
        mark::clear();
        (unmarked, after_empty, after_byte, back)
    })
    .join()
    .unwrap();
    assert_eq!(seen.0, None, "an empty write must not mark the thread");
    assert!(!seen.1, "an empty write must not set raw_written");
    assert!(seen.2, "a one-byte write sets raw_written");
    let mut want = [0u8; RAW_LEN];
    want[3] = 7;
    assert_eq!(seen.3, want, "an empty write leaves the block as it was");
}

fn comm() -> String {
    std::fs::read_to_string("/proc/thread-self/comm")
        .unwrap()
        .trim_end()
        .to_string()
}

#[test]
fn marker_limits_kernel_name_and_clear() {
    let max = "m".repeat(MARKER_MAX);
    mark::set(&max).unwrap();
    assert_eq!(mark::current().as_deref(), Some(max.as_str()));
    let e = mark::set(&"m".repeat(MARKER_MAX + 1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        mark::update(&"x".repeat(MARKER_MAX + 1))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        mark::current().as_deref(),
        Some(max.as_str()),
        "a refused marker changes nothing"
    );

    mark::set("kernel name check 1").unwrap();
    assert_eq!(comm(), "kernel name che");
    mark::update("other prefix").unwrap();
    assert_eq!(comm(), "kernel name che", "update leaves the kernel name");
    assert_eq!(mark::current().as_deref(), Some("other prefix"));
    mark::set("short").unwrap();
    assert_eq!(comm(), "short");

    let me = std::process::id() as i32;
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    let listed = |snap: &mark::Snapshot| {
        snap.process(me).and_then(|p| {
            p.threads
                .iter()
                .find(|t| t.tid == tid)
                .map(|t| t.marker.clone())
        })
    };
    assert_eq!(
        listed(&mark::snapshot_pid(me).unwrap()).as_deref(),
        Some("short")
    );
    mark::clear();
    assert_eq!(mark::current(), None);
    assert_eq!(
        listed(&mark::snapshot_pid(me).unwrap()),
        None,
        "cleared threads are not listed"
    );
}

#[test]
fn spawn_named_marks_before_user_code() {
    let t = mark::spawn_named("named worker thread", || (mark::current(), comm())).unwrap();
    let tid = t.tid();
    assert!(tid > 0);
    let (marker, kname) = t.join().unwrap();
    assert_eq!(marker.as_deref(), Some("named worker thread"));
    assert_eq!(kname, "named worker th");
    let e = mark::spawn_named("bad\0name", || ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = mark::Builder::new("x".repeat(MARKER_MAX + 1))
        .spawn(|| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let t = mark::Builder::new("small stack")
        .stack_size(64 * 1024)
        .spawn(|| 5)
        .unwrap();
    assert_eq!(t.join().unwrap(), 5);
}

#[test]
fn forked_child_gets_its_own_registry() {
    // The fork happens in a child process of its own (mode "fork"): forking this
    // multi-threaded test process could copy a lock another test holds.
    let mut c = spawn_child("fork");
    // READY <forked pid> <its exit code> <1 if the parent kept its mark>
    let (forked, code, kept) = (c.pid, c.tids[0], c.tids[1]);
    assert_eq!(code, 0, "check in the forked process failed (2: shared registry, 3: parent's mark changed, 4: error, 100: crashed)");
    assert_eq!(kept, 1, "the parent's own mark survived the fork");
    // `_exit` ran no atexit handler, so the file outlived the forked process; the
    // next scan removes it.
    assert!(mark::snapshot().unwrap().process(forked).is_none());
    assert!(
        registry_files(forked).is_empty(),
        "the next scan removed the dead child's file"
    );
    c.finish();
}

#[test]
fn snapshot_reports_policy_priority_and_nice() {
    // One channel per thread: their answers may come in either order.
    let (tx, rx) = mpsc::channel::<i32>();
    let (tx2, rx2) = mpsc::channel::<i32>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let fifo = mark::spawn_named("fifo thread", move || {
        let p = libc::sched_param { sched_priority: 10 };
        // SAFETY: sets the calling thread's policy (pid 0 = this thread on Linux).
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        tx.send(if rc == 0 { 0 } else { errno }).unwrap();
        let _ = go_rx.recv(); // blocked, not spinning
    })
    .unwrap();
    let (go2_tx, go2_rx) = mpsc::channel::<()>();
    let nice = mark::spawn_named("nice thread", move || {
        // SAFETY: sets the calling thread's nice value (who 0 = this thread).
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 5) };
        tx2.send(if rc == 0 { 0 } else { -1 }).unwrap();
        let _ = go2_rx.recv();
    })
    .unwrap();
    let fifo_rc = rx.recv().unwrap();
    assert_eq!(rx2.recv().unwrap(), 0, "raising nice never needs privilege");
    let me = std::process::id() as i32;
    let snap = mark::snapshot_pid(me).unwrap();
    let p = snap.process(me).unwrap();
    let f = p.threads.iter().find(|t| t.tid == fifo.tid()).unwrap();
    if fifo_rc == 0 {
        assert_eq!(f.sched.policy, Some(posixrt::sched::Policy::Fifo));
        assert_eq!(f.sched.policy_short(), "FIFO");
        assert_eq!(f.sched.rt_priority, 10);
    } else {
        println!("skip FIFO check: sched_setscheduler refused (errno {fifo_rc})");
        assert_eq!(fifo_rc, libc::EPERM);
    }
    let n = p.threads.iter().find(|t| t.tid == nice.tid()).unwrap();
    assert_eq!(n.sched.nice, 5);
    assert_eq!(n.sched.policy, Some(posixrt::sched::Policy::Other));
    assert_eq!(n.sched.rt_priority, 0);
    drop((go_tx, go2_tx));
    fifo.join().unwrap();
    nice.join().unwrap();
}

#[test]
fn a_kernel_name_cut_inside_a_character_is_still_listed() {
    // std names the kernel thread with the first 15 bytes of its name, which can
    // end inside a UTF-8 character: /proc then shows a `comm` that is not UTF-8.
    let name = "Главныйпотокспит"; // 2-byte characters: 15 bytes split one
    let (tid, updated) = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(|| {
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let comm = std::fs::read("/proc/thread-self/comm").unwrap();
            assert!(std::str::from_utf8(&comm).is_err(), "{comm:?}");
            let updated = mark::update("worker with a cut kernel name");
            let me = std::process::id() as i32;
            let listed = mark::snapshot_pid(me).map(|s| {
                s.process(me)
                    .and_then(|p| p.threads.iter().find(|t| t.tid == tid).cloned())
            });
            mark::clear();
            (tid, updated.and(listed))
        })
        .unwrap()
        .join()
        .unwrap();
    let t = updated
        .unwrap_or_else(|e| panic!("marking failed: {e}"))
        .unwrap_or_else(|| panic!("thread {tid} is not listed"));
    assert_eq!(t.marker, "worker with a cut kernel name");
    assert!(t.sched.kernel_name.starts_with("Главный"), "{t:?}");
}

#[test]
fn an_empty_marker_keeps_the_kernel_name() {
    // The kernel name is the marker's prefix; an empty one (an empty marker, or
    // one that starts with NUL) would leave the thread, or on the main thread
    // the process, without a name in ps, top and pgrep.
    let names = std::thread::Builder::new()
        .name("keep my name".into())
        .spawn(|| {
            let mut seen = Vec::new();
            for m in ["", "\0hidden"] {
                let r = mark::set(m).map(|()| mark::current());
                seen.push((r.map_err(|e| e.to_string()), comm()));
            }
            mark::clear();
            seen
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(names[0], (Ok(Some(String::new())), "keep my name".into()));
    assert_eq!(
        names[1],
        (Ok(Some("\0hidden".into())), "keep my name".into())
    );
}
