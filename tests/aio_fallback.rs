//! Engine choice: a child process in which a seccomp filter makes `io_uring_setup`
//! fail with EPERM falls back to the thread pool, says so, and still works; the
//! `POSIXRT_AIO_BACKEND` variable forces a backend.
//!
//! The children re-run this test binary on the ignored `child_entry` test.

#[path = "common/uring.rs"]
mod uring;

use std::os::unix::process::CommandExt;
use std::process::Command;

use posixrt::aio::{Aio, Backend, Op};
use posixrt::ErrorKind;

fn run_child(mode: &str, seccomp: bool, backend_env: Option<&str>) -> String {
    run_child_os(mode, seccomp, backend_env.map(std::ffi::OsStr::new))
}

/// [`run_child`] with any bytes in `POSIXRT_AIO_BACKEND`.
fn run_child_os(mode: &str, seccomp: bool, backend_env: Option<&std::ffi::OsStr>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("POSIXRT_AIO_CHILD_MODE", mode)
    .env_remove("POSIXRT_AIO_BACKEND");
    if let Some(v) = backend_env {
        cmd.env("POSIXRT_AIO_BACKEND", v);
    }
    if seccomp {
        // SAFETY: the closure runs between fork and exec and only makes two
        // async-signal-safe system calls on stack data.
        unsafe {
            cmd.pre_exec(|| {
                install_seccomp_eperm_io_uring_setup();
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child {mode} failed:\n{text}");
    assert!(
        text.contains("test result: ok. 1 passed"),
        "child {mode} did not run:\n{text}"
    );
    text
}

/// seccomp filter: `io_uring_setup` → EPERM, everything else allowed.
fn install_seccomp_eperm_io_uring_setup() {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    let filter = [
        // A = seccomp_data.nr
        libc::sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: JEQ_K,
            jt: 0,
            jf: 1,
            k: libc::SYS_io_uring_setup as u32,
        },
        libc::sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl/seccomp calls with a valid program on the stack.
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        );
    }
}

fn roundtrip(aio: &Aio) {
    let mut f = tempfile();
    std::io::Write::write_all(&mut f, b"fallback works\n").unwrap();
    let mut r = aio.read(&f, 0, vec![0u8; 15]).unwrap();
    assert_eq!(r.wait().unwrap().data(), b"fallback works\n");
    let mut w = aio.submit(Op::write(&f, 15, b"more\n".to_vec())).unwrap();
    assert_eq!(w.wait().unwrap().result.unwrap(), 5);
}

fn tempfile() -> std::fs::File {
    std::fs::File::from(
        rustix::fs::memfd_create("aio-fallback", rustix::fs::MemfdFlags::CLOEXEC).unwrap(),
    )
}

#[test]
#[ignore = "entry point of the child processes started by the other tests"]
fn child_entry() {
    let mode = std::env::var("POSIXRT_AIO_CHILD_MODE").expect("run by the parent tests");
    match mode.as_str() {
        "seccomp" => {
            // The filter is really there: a raw io_uring refuses.
            let raw = io_uring::IoUring::new(8).map(drop).unwrap_err();
            assert_eq!(raw.raw_os_error(), Some(libc::EPERM));
            let aio = Aio::new().unwrap();
            let info = aio.backend();
            assert_eq!(info.backend(), Backend::Threads);
            assert!(info.is_fallback());
            assert_eq!(info.refused().unwrap().errno(), Some(libc::EPERM));
            assert!(info.reason().contains("EPERM"), "{info}");
            assert!(info.reason().contains("thread pool"), "{info}");
            println!("BACKEND {info}");
            roundtrip(&aio);
            // Requiring io_uring gives the error and the fix, no fallback.
            let e = Aio::builder().backend(Backend::Uring).build().unwrap_err();
            assert_eq!(e.errno(), Some(libc::EPERM));
            assert!(
                e.hint().unwrap().contains("POSIXRT_AIO_BACKEND=threads"),
                "{e}"
            );
        }
        "env-threads" => {
            let aio = Aio::new().unwrap();
            assert_eq!(aio.backend().backend(), Backend::Threads);
            assert!(!aio.backend().is_fallback());
            assert!(aio
                .backend()
                .reason()
                .contains("POSIXRT_AIO_BACKEND=threads"));
            roundtrip(&aio);
        }
        "env-uring" => {
            let aio = Aio::new().unwrap();
            assert_eq!(aio.backend().backend(), Backend::Uring);
            roundtrip(&aio);
        }
        "env-bad" => {
            let e = Aio::new().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert!(e.hint().unwrap().contains("uring"));
        }
        "env-bad-bytes" => {
            // Refused as any other unknown value, its bytes shown escaped.
            let e = Aio::new().map(drop).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert_eq!(
                e.message(),
                Some(r#"POSIXRT_AIO_BACKEND="thr\xffeads" is not a backend"#),
                "{e}"
            );
            assert!(e.hint().unwrap().contains("`uring` or `threads`"), "{e}");
        }
        "default" => {
            let aio = Aio::new().unwrap();
            assert_eq!(aio.backend().backend(), Backend::Uring, "{}", aio.backend());
            roundtrip(&aio);
        }
        other => panic!("unknown mode {other}"),
    }
}

#[test]
fn seccomp_eperm_falls_back_to_threads() {
    // Where io_uring is refused already, the filter adds nothing to see.
    if uring::uring_refused() {
        return;
    }
    let out = run_child("seccomp", true, None);
    assert!(out.contains("BACKEND threads"), "{out}");
}

#[test]
fn env_forces_backend() {
    run_child("env-threads", false, Some("threads"));
    run_child("env-bad", false, Some("io-uring-please"));
    // Not UTF-8: refused too, not taken as unset (the default engine).
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = std::ffi::OsStr::from_bytes(b"thr\xffeads");
        run_child_os("env-bad-bytes", false, Some(bytes));
    }
    if uring::uring_refused() {
        return;
    }
    run_child("env-uring", false, Some("uring"));
    // This machine allows io_uring: the default is io_uring.
    run_child("default", false, None);
}

/// The default engine names itself once: `uring (io_uring, the default)`, as
/// `POSIXRT_AIO_DEBUG` and `Aio::backend` print it (it read `uring (io_uring
/// (default))`).
#[test]
fn the_default_engine_reads_as_one_phrase() {
    if uring::uring_refused() || std::env::var_os("POSIXRT_AIO_BACKEND").is_some() {
        return;
    }
    let aio = Aio::new().expect("context");
    assert_eq!(aio.backend().to_string(), "uring (io_uring, the default)");
}
