//! `read_async` and `write_async` check and order their requests as `Aio::read`
//! and `Aio::write` do: the future builds its request without an `Op`, so these
//! hold the two paths to the same rules.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use posixrt::aio::{Aio, Backend};
use posixrt::ErrorKind;

mod common;
use common::both;
use common::ctx;

const WRITES: usize = 32;
/// Together more than a pipe holds (64 KiB): later pipe writes wait for room.
const LEN: usize = 8192;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Bad offsets and lengths: the future's first poll gives the error the call
/// gives, with its errno, message and hint.
fn bad_input_refused_as_by_the_call(b: Backend) {
    let aio = ctx(b);
    let f = Arc::new(common::temp_file(&[0u8; 16]));
    let rt = rt();
    for (offset, len) in [(-1i64, 4usize), (i64::MAX - 1, 4), (i64::MIN, 0)] {
        let by_call = aio.read(&*f, offset, vec![0u8; len]).err();
        let by_future = rt
            .block_on(aio.read_async(Arc::clone(&f), offset, vec![0u8; len]))
            .err();
        let e = by_future.expect("the read future refuses it");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
        assert_eq!(e.call(), "aio_read", "{e}");
        assert!(e.hint().is_some_and(|h| h.contains("aio_offset")), "{e}");
        assert_eq!(Some(e), by_call, "offset {offset} length {len}");

        let by_call = aio.write(&*f, offset, vec![1u8; len]).err();
        let by_future = rt
            .block_on(aio.write_async(Arc::clone(&f), offset, vec![1u8; len]))
            .err();
        let e = by_future.expect("the write future refuses it");
        assert_eq!(e.call(), "aio_write", "{e}");
        assert_eq!(Some(e), by_call, "offset {offset} length {len}");
    }
    // Nothing was written by the refused writes.
    assert_eq!(f.metadata().unwrap().len(), 16);
    let mut back = [1u8; 16];
    std::os::unix::fs::FileExt::read_exact_at(&*f, &mut back, 0).unwrap();
    assert_eq!(back, [0u8; 16]);
}
both!(bad_input, bad_input_refused_as_by_the_call);

/// `WRITES` writes of `LEN` bytes (write `i` all bytes `i`) to `fd` at offset 0,
/// as futures of one task first polled in order `0..WRITES`, all in flight at
/// once. Returns the byte count of each.
fn write_all_in_flight<F>(aio: &Aio, fd: impl Fn() -> F) -> Vec<usize>
where
    F: posixrt::aio::SubmitFd,
{
    let mut futs: Vec<_> = (0..WRITES)
        .map(|i| Some(aio.write_async(fd(), 0, vec![i as u8; LEN])))
        .collect();
    let mut done = vec![0usize; WRITES];
    rt().block_on(std::future::poll_fn(|cx| {
        let mut left = false;
        for (i, slot) in futs.iter_mut().enumerate() {
            let Some(f) = slot.as_mut() else { continue };
            match Pin::new(f).poll(cx) {
                Poll::Ready(r) => {
                    done[i] = r.unwrap().result.unwrap();
                    *slot = None;
                }
                Poll::Pending => left = true,
            }
        }
        if left {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }));
    done
}

/// The bytes of `WRITES` writes in submission order.
fn in_order() -> Vec<u8> {
    (0..WRITES).flat_map(|i| [i as u8; LEN]).collect()
}

/// On an `O_APPEND` file the offset is ignored and the writes land in the order
/// they were submitted.
fn appending_writes_land_in_order(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"");
    rustix::fs::fcntl_setfl(&f, rustix::fs::OFlags::APPEND).unwrap();
    let f = Arc::new(f);
    let n = write_all_in_flight(&aio, || Arc::clone(&f));
    assert_eq!(n, vec![LEN; WRITES]);
    let mut back = Vec::new();
    std::fs::File::open(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&*f)
    ))
    .unwrap()
    .read_to_end(&mut back)
    .unwrap();
    assert_eq!(back, in_order());
}
both!(appending_writes, appending_writes_land_in_order);

/// On a pipe the writes land in the order they were submitted, also those that
/// had to wait for room.
fn pipe_writes_land_in_order(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = common::pipe();
    let wr = Arc::new(std::fs::File::from(wr));
    let reader = std::thread::spawn(move || {
        let mut back = vec![0u8; WRITES * LEN];
        std::fs::File::from(rd).read_exact(&mut back).unwrap();
        back
    });
    let n = write_all_in_flight(&aio, || Arc::clone(&wr));
    assert_eq!(n, vec![LEN; WRITES]);
    assert_eq!(reader.join().unwrap(), in_order());
}
both!(pipe_writes, pipe_writes_land_in_order);

/// A future polled again after it gave its result answers "already taken",
/// whether the read completed at once or after a wait (a pipe), and gives no
/// second buffer.
fn polled_after_its_result(b: Backend) {
    let aio = ctx(b);
    let f = Arc::new(common::temp_file(b"twice"));
    let rt = rt();
    let (r, w) = rustix::pipe::pipe().unwrap();
    let r = Arc::new(std::fs::File::from(r));
    rt.block_on(async {
        let mut fut = aio.read_async(Arc::clone(&f), 0, vec![0u8; 5]);
        let c = (&mut fut).await.unwrap();
        assert_eq!(c.data(), b"twice");
        let again = std::future::poll_fn(|cx| Pin::new(&mut fut).poll(cx)).await;
        assert_eq!(again.err().map(|e| e.kind()), Some(ErrorKind::AlreadyTaken));

        let mut fut = aio.read_async(Arc::clone(&r), 0, vec![0u8; 4]);
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut fut).poll(cx))).await;
        assert!(first.is_pending());
        rustix::io::write(&w, b"late").unwrap();
        let c = (&mut fut).await.unwrap();
        assert_eq!(c.data(), b"late");
        let again = std::future::poll_fn(|cx| Pin::new(&mut fut).poll(cx)).await;
        assert_eq!(again.err().map(|e| e.kind()), Some(ErrorKind::AlreadyTaken));
    });
}
both!(polled_after_its_result, polled_after_its_result);
