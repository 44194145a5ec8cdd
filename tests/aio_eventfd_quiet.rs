//! Once a context's completion eventfd is registered (a future that had to wait,
//! under tokio or not), a future whose read completes while its first poll
//! enters the ring does not make the kernel signal that eventfd: its poll reaps
//! the completion itself, and a signal would cost every request a wake-up of
//! the reactor or of the completion thread.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

// (`both!` is not used: the test is about the io_uring engine only.)
#[allow(unused_macros, unused_imports)]
mod common;
use common::{disk_temp_file, pattern, pipe, uring};

/// The counters of this process's eventfds (`eventfd-count` in fdinfo), by
/// eventfd (`eventfd-id`: an eventfd open under two numbers counts once).
fn eventfd_counts() -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let link = std::fs::read_link(e.path()).unwrap_or_default();
        if link.to_string_lossy() != "anon_inode:[eventfd]" {
            continue;
        }
        let fd = e.file_name().to_string_lossy().into_owned();
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) else {
            continue;
        };
        let field = |name: &str, radix: u32| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|c| u64::from_str_radix(c.trim(), radix).ok())
        };
        let (Some(id), Some(count)) = (field("eventfd-id:", 10), field("eventfd-count:", 16))
        else {
            continue;
        };
        if !v.iter().any(|&(i, _)| i == id) {
            v.push((id, count));
        }
    }
    v
}

/// A memory file holding `content`: io_uring sends its reads to the kernel's
/// workers (they are not tried inline).
fn memfd(content: &[u8]) -> std::fs::File {
    use std::io::Write;
    let fd = rustix::fs::memfd_create("quiet", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let mut f = std::fs::File::from(fd);
    f.write_all(content).unwrap();
    f
}

/// The tests of this file one at a time: the first counts the signals of
/// every eventfd of the process.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Nop;
impl Wake for Nop {
    fn wake(self: Arc<Self>) {}
}

#[test]
fn inline_completions_do_not_signal_the_eventfd() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(1);
    // A cached regular file off tmpfs: its reads complete inline.
    let f = Arc::new(disk_temp_file(&pattern(64 * 4096)));
    // A read of an empty pipe waits: its poll registers the eventfd with this
    // runtime's reactor. The runtime is not driven after `block_on` returns,
    // so nothing reads the eventfd's counter afterwards.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (r, _w) = pipe();
    let r = Arc::new(std::fs::File::from(r));
    rt.block_on(async {
        let mut fut = aio.read_async(Arc::clone(&r), 0, vec![0u8; 8]);
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut fut).poll(cx))).await;
        assert!(first.is_pending());
    });
    // (The pipe read is cancelled; its completion may signal.)
    let before = eventfd_counts();
    assert!(!before.is_empty(), "no eventfd registered");
    // 200 reads, each polled outside any runtime until done.
    let waker = Waker::from(Arc::new(Nop));
    let mut cx = Context::from_waker(&waker);
    // Reads done at their first poll (completed inline).
    let mut inline = 0u64;
    for i in 0..200usize {
        let mut fut = aio.read_async(Arc::clone(&f), ((i % 64) * 4096) as i64, vec![0u8; 4096]);
        let mut first = true;
        let c = loop {
            match Pin::new(&mut fut).poll(&mut cx) {
                Poll::Ready(c) => break c.unwrap(),
                Poll::Pending => std::thread::yield_now(),
            }
            first = false;
        };
        assert_eq!(*c.result.as_ref().unwrap(), 4096);
        assert_eq!(c.data(), &pattern(64 * 4096)[(i % 64) * 4096..][..4096]);
        inline += first as u64;
    }
    let after = eventfd_counts();
    let signals: u64 = after
        .iter()
        .map(|(id, n)| n - before.iter().find(|(b, _)| b == id).map_or(0, |b| b.1))
        .sum();
    if inline < 180 {
        // A file system whose reads go to the kernel's workers (overlayfs
        // on some kernels): each of those signals, rightly.
        eprintln!("skipped: only {inline} of 200 reads completed inline here");
        return;
    }
    // A read the kernel did not finish inline (a page being read back in)
    // signals, rightly, and so may the reap after it: a few at most.
    assert!(
        signals <= 200 - inline + 10,
        "{signals} eventfd signals for 200 reads, {inline} of them completed inline"
    );
    drop(rt);
}

/// Reads that complete later (a pipe fed by another thread, a tmpfs file's
/// reads, which go to the kernel's workers) beside a stream of reads that
/// complete inline, each of which quiets the eventfd while it enters: every
/// one is woken, with the right bytes, on a `multi_thread` and on a
/// `current_thread` runtime.
#[test]
fn later_completions_beside_quiet_entries_are_woken() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if common::uring::uring_refused() {
        return;
    }
    for (multi, pipes) in [(true, true), (false, true), (true, false), (false, false)] {
        let aio = uring(2);
        let disk = Arc::new(disk_temp_file(&pattern(64 * 4096)));
        let shm = Arc::new(memfd(&pattern(64 * 4096)));
        let rt = if multi {
            common::multi_rt()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        // Without pipe reads waiting, the eventfd goes quiet for most entries,
        // and the tmpfs reads, still in the kernel when their entry's reap
        // looks, end quiets with requests in flight.
        let pipes: Vec<_> = (0..if pipes { 4 } else { 0 }).map(|_| pipe()).collect();
        let (readers, writers): (Vec<_>, Vec<_>) = pipes
            .into_iter()
            .map(|(r, w)| (Arc::new(std::fs::File::from(r)), std::fs::File::from(w)))
            .unzip();
        let feeder = std::thread::spawn(move || {
            use std::io::Write;
            for k in 0..writers.len() * 100 {
                let mut w = &writers[k % writers.len()];
                w.write_all(&[(k / writers.len()) as u8]).unwrap();
                if k % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            }
        });
        let run = async {
            let mut tasks = Vec::new();
            for (p, r) in readers.iter().enumerate() {
                let (aio, r) = (aio.clone(), Arc::clone(r));
                tasks.push(tokio::spawn(async move {
                    for k in 0..100usize {
                        let c = aio
                            .read_async(Arc::clone(&r), 0, vec![0u8; 1])
                            .await
                            .unwrap();
                        assert_eq!(*c.result.as_ref().unwrap(), 1, "pipe {p}");
                        assert_eq!(c.data(), &[k as u8], "pipe {p}");
                    }
                }));
            }
            for (t, f) in [(0usize, &disk), (1, &disk), (2, &shm)] {
                let (aio, f) = (aio.clone(), Arc::clone(f));
                tasks.push(tokio::spawn(async move {
                    let want = pattern(64 * 4096);
                    for k in 0..600usize {
                        let i = (k * 7 + t) % 64;
                        let c = aio
                            .read_async(Arc::clone(&f), (i * 4096) as i64, vec![0u8; 4096])
                            .await
                            .unwrap();
                        assert_eq!(*c.result.as_ref().unwrap(), 4096);
                        assert_eq!(c.data(), &want[i * 4096..][..4096]);
                        if k % 50 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        };
        // A lost wake-up would hang: a minute is far beyond the run's length.
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(60), run)
                .await
                .expect("a read was never woken")
        });
        feeder.join().unwrap();
    }
}
