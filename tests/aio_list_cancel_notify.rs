//! A `lio_listio(ListMode::NoWait)` list whose entries are cancelled (by fd,
//! from the submitting thread after the call) beside one that succeeds:
//! every entry's `SIGEV_THREAD` callback runs once, with its own value, after
//! its request shows done, and the list's runs once, after every entry shows
//! done; the results are ECANCELED for the cancelled ones. `both!(name, f)`
//! makes `name::uring` and `name::threads`.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend, CancelResult, ListMode, Notify, Op, RequestId};
use posixrt::ErrorKind;

mod common;
use common::both;
use common::{ctx, pipe};

/// What the callbacks saw.
#[derive(Default)]
struct Seen {
    /// Runs per entry value (0..3), and of the list's (3).
    runs: [AtomicUsize; 4],
    /// Callbacks that found a request of theirs still in progress.
    early: AtomicUsize,
}

/// Waits (at most 5 s) for the ids, which the test sets as soon as the call
/// returns (a callback of the file read may run before that).
fn ids_of(ids: &OnceLock<Vec<RequestId>>) -> &Vec<RequestId> {
    let t0 = Instant::now();
    loop {
        if let Some(v) = ids.get() {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "ids never set");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn is_done(aio: &Aio, id: RequestId) -> bool {
    match aio.suspend([id], Some(Duration::ZERO)) {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::TimedOut => false,
        Err(e) => panic!("suspend: {e}"),
    }
}

fn cancelled_list_notifies_once_after_status(b: Backend) {
    let aio = ctx(b);
    let (rd, _wr) = pipe();
    let f = common::disk_temp_file(&common::pattern(4096));
    let seen = Arc::new(Seen::default());
    let ids: Arc<OnceLock<Vec<RequestId>>> = Arc::new(OnceLock::new());
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let entry_notify = |i: usize| {
        let (seen, ids, aio) = (Arc::clone(&seen), Arc::clone(&ids), aio.clone());
        Notify::thread(i, move |v| {
            seen.runs[v.0].fetch_add(1, Ordering::SeqCst);
            if !is_done(&aio, ids_of(&ids)[v.0]) {
                seen.early.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let list_notify = {
        let (seen, ids, aio, failures) = (
            Arc::clone(&seen),
            Arc::clone(&ids),
            aio.clone(),
            Arc::clone(&failures),
        );
        Notify::thread(3usize, move |v| {
            if v.0 != 3 {
                failures.lock().unwrap().push(format!("list value {}", v.0));
            }
            seen.runs[3].fetch_add(1, Ordering::SeqCst);
            for &id in ids_of(&ids) {
                if !is_done(&aio, id) {
                    seen.early.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
    };
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            [
                Some(Op::read(&rd, 0, vec![0u8; 8]).notify(entry_notify(0))),
                Some(Op::read(&f, 0, vec![0u8; 64]).notify(entry_notify(1))),
                Some(Op::read(&rd, 0, vec![0u8; 8]).notify(entry_notify(2))),
            ],
            list_notify,
        )
        .unwrap();
    ids.set(list.ids().map(Option::unwrap).collect()).unwrap();
    let out = aio.cancel_fd(rd.as_raw_fd()).unwrap();
    assert_eq!(out, CancelResult::Canceled);
    let t0 = Instant::now();
    while seen.runs.iter().any(|r| r.load(Ordering::SeqCst) == 0)
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    // (Late second runs would show by now.)
    std::thread::sleep(Duration::from_millis(50));
    let runs: Vec<usize> = seen.runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
    assert_eq!(runs, [1, 1, 1, 1], "each callback ran once (entries, list)");
    assert_eq!(
        seen.early.load(Ordering::SeqCst),
        0,
        "a callback ran before its status was set"
    );
    assert!(
        failures.lock().unwrap().is_empty(),
        "{:?}",
        failures.lock().unwrap()
    );
    let all = list.take_all().unwrap();
    let errs: Vec<Option<i32>> = all
        .iter()
        .map(|c| {
            c.as_ref()
                .unwrap()
                .result
                .as_ref()
                .err()
                .and_then(|e| e.errno())
        })
        .collect();
    assert_eq!(errs, [Some(libc::ECANCELED), None, Some(libc::ECANCELED)]);
}
both!(cancelled_list, cancelled_list_notifies_once_after_status);
