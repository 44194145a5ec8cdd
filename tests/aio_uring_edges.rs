//! Edge cases of the io_uring engine's Rust API: errors a caller can act on,
//! builder options that make no sense.

use std::os::unix::fs::OpenOptionsExt;

use posixrt::aio::{Aio, Backend};
use posixrt::ErrorKind;

#[allow(unused_macros, unused_imports)]
mod common;

fn uring() -> Option<Aio> {
    if common::uring::uring_refused() {
        return None;
    }
    Some(Aio::builder().backend(Backend::Uring).build().unwrap())
}

#[test]
fn o_direct_misaligned_has_a_hint() {
    let Some(aio) = uring() else { return };
    let path = std::env::temp_dir().join(format!("posixrt-ura-direct-{}", std::process::id()));
    std::fs::write(&path, vec![7u8; 8192]).unwrap();
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    {
        Ok(f) => f,
        Err(_) => return,
    };
    std::fs::remove_file(&path).unwrap();
    let mut r = aio.read(&f, 1, vec![0u8; 100]).unwrap();
    let e = r.wait().unwrap().result.unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    assert!(e.hint().is_some_and(|h| h.contains("O_DIRECT")), "{e:?}");
}

#[test]
fn empty_worker_affinity_is_refused() {
    if common::uring::uring_refused() {
        return;
    }
    let e = Aio::builder()
        .backend(Backend::Uring)
        .worker_affinity([])
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}
