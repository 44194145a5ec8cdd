//! Helpers the tools' tests share: `mod common;`.
#![allow(dead_code)]

use std::process::{Command, Output};
use std::time::Instant;

/// `/dev/full` (a full disk) open for writing; `None` on a system without it.
pub fn dev_full() -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .ok()
}

/// Runs tool `exe` with `args` and its standard output on `/dev/full` (a full
/// disk); `None` on a system without `/dev/full`.
pub fn run_into_dev_full(exe: &str, args: &[&str]) -> Option<Output> {
    let full = dev_full()?;
    Some(
        Command::new(exe)
            .args(args)
            .stdout(full)
            .output()
            .expect("run the tool"),
    )
}

/// Runs `tfp ARGS` to its end.
pub fn tfp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(args)
        .output()
        .expect("run tfp")
}

/// This process's pid.
pub fn me() -> i32 {
    std::process::id() as i32
}

/// A tool's standard output (UTF-8).
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 output")
}

/// Waits (bounded) for `pid`'s mark registry file to appear.
pub fn wait_registry(pid: i32) -> std::path::PathBuf {
    let prefix = format!("posixrt-mark-{pid}-");
    let t0 = Instant::now();
    loop {
        let found = std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(&prefix));
        if let Some(e) = found {
            return e.path();
        }
        assert!(
            t0.elapsed().as_secs() < 20,
            "pid {pid} never created its registry"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The start time (field 22 of /proc/<pid>/stat) of a process.
pub fn starttime(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &s[s.rfind(')').unwrap() + 2..];
    after.split(' ').nth(19).unwrap().parse().unwrap()
}

/// A copy of a binary that any user can run: mode 0755 in a fresh 0755 directory
/// under the system temp dir (the build directory may sit in a 0700 directory that
/// uid 65534 cannot traverse). The directory is removed on drop.
pub struct WorldExecutable {
    dir: std::path::PathBuf,
    pub bin: std::path::PathBuf,
}

impl WorldExecutable {
    pub fn of(bin: &str) -> WorldExecutable {
        use std::os::unix::fs::PermissionsExt;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("posixrt-tfp-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = WorldExecutable {
            bin: dir.join("tfp"),
            dir,
        };
        std::fs::set_permissions(&copy.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::copy(bin, &copy.bin).unwrap();
        std::fs::set_permissions(&copy.bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy
    }
}

/// `cmd.output()`, tried again while the executable is busy (ETXTBSY): a copy
/// just written (a [`WorldExecutable`]) is busy while a child forked meanwhile
/// by another test thread still holds the copy's write descriptor, until that
/// child's exec closes it.
pub fn output_when_free(cmd: &mut std::process::Command) -> std::process::Output {
    for _ in 0..500 {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{cmd:?}: the executable stayed busy for 5 s");
}

impl Drop for WorldExecutable {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A mark registry of another layout version under live process `pid`'s name,
/// held locked as its owner would hold it; removed on drop.
pub struct IncompatibleRegistry {
    pub path: String,
    _lock: std::fs::File,
}

impl IncompatibleRegistry {
    pub fn of(pid: u32) -> IncompatibleRegistry {
        use std::os::fd::AsRawFd;
        let path = format!("/dev/shm/posixrt-mark-{pid}-{}", starttime(pid));
        let mut hdr = Vec::new();
        hdr.extend_from_slice(b"PRTREG\0\0");
        hdr.extend_from_slice(&99u32.to_ne_bytes()); // a future layout version
        hdr.resize(4096, 0);
        std::fs::write(&path, &hdr).unwrap();
        let lock = std::fs::File::open(&path).unwrap();
        // SAFETY: a plain flock on a descriptor this test owns.
        assert_eq!(
            unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        IncompatibleRegistry { path, _lock: lock }
    }
}

impl Drop for IncompatibleRegistry {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A NAME that no process's path ends with: `tfp NO_MATCH` lists nothing (and
/// exits 0), for tests of `--watch` that want a short listing. (`-p` of a process
/// without marks, such as pid 1, is an error.)
pub const NO_MATCH: &str = "/no/such/program";

/// Makes `cmd` run as nobody (uid and gid 65534, no supplementary groups): the
/// tools' view of files and registries of another user. The caller is root.
pub fn as_nobody(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the child only makes async-signal-safe
    // system calls.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(65534, 65534, 65534) != 0
                || libc::setresuid(65534, 65534, 65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
}

/// Streams record every `event()` of the process: tests that record take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes the test binary's turn to record (see [`SERIAL`]).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `rtrace` with `args`.
pub fn rtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(args)
        .output()
        .unwrap()
}

/// A tool's standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory for one test, removed with its contents when dropped.
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A new, empty scratch directory `rtrace-test-PID-NAME` in the temp dir.
pub fn dir(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("rtrace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}
