//! `tfp -v` shows a kernel name (comm) that is not UTF-8 byte for byte, as
//! `\xHH`, as it shows a path: not as U+FFFD, which shows two names alike.

use std::sync::mpsc;

mod common;
use common::{me, tfp};

#[test]
fn a_kernel_name_that_is_not_utf8_shows_its_bytes() {
    let (tx, rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        posixrt::mark::set("small review comm").unwrap();
        // After the mark, which names the thread after its marker.
        let name = b"w\xff\xfeq\0";
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        let r = unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
        assert_eq!(r, 0);
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    let o = tfp(&["-v", "--no-self", "-p", &me().to_string()]);
    drop(stop_tx);
    t.join().unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    lines
        .find(|l| l.starts_with("TID") && l.split_whitespace().nth(1) == Some(&tid.to_string()))
        .unwrap_or_else(|| panic!("thread {tid} not listed: {text}"));
    let verbose = lines.next().unwrap();
    assert!(
        verbose.ends_with("kernel name \"w\\xff\\xfeq\""),
        "{verbose:?}"
    );
    assert!(!text.contains('\u{fffd}'), "{text}");
}
