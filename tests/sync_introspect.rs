//! Integration tests of sync introspection: info, statistics and waiters of every
//! kind against known sequences, tracking off, forcing state, deadlock cycles, and a
//! second process reading the shared registry while this one hammers its locks.
//!
//! Tracking is process-wide: every test takes `LOCK` and sets the level it needs.
//! Waits are bounded polls on states; nothing asserts a duration except lower
//! bounds that sleeping guarantees (a hold that slept 20 ms lasted at least 20 ms).

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

use posixrt::sync::{
    self, current_tid, find_deadlocks, objects, Condvar, Kind, MutexExt, NormalMutex, PiMutex,
    RecursiveMutex, RwLock, Semaphore, Snapshot, Tracking,
};
use posixrt::ErrorKind;

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

/// Holds `lock` in the test thread, lets `n` threads block on it, checks the waiters
/// (count and tids) while they are blocked, then releases. Returns the waiters' tids.
fn three_contended<M: Sync>(
    m: &M,
    lock_unlock: impl Fn(&M) + Sync,
    hold: impl FnOnce(&M) -> Box<dyn FnOnce() + '_>,
    snap: impl Fn(&M) -> Option<Snapshot>,
) -> Vec<u32> {
    let release = hold(m);
    let tids = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                tids.lock().unwrap().push(current_tid());
                lock_unlock(m);
            });
        }
        assert!(
            poll(|| snap(m).is_some_and(|s| s.info.waiters == 3)),
            "3 waiters never showed: {:?}",
            snap(m)
        );
        let s = snap(m).unwrap();
        assert!(s.info.has_waiters);
        assert_eq!(
            sorted(s.waiters.clone()),
            sorted(tids.lock().unwrap().clone())
        );
        release();
    });
    let s = snap(m).unwrap();
    assert_eq!(s.info.waiters, 0);
    assert!(s.waiters.is_empty());
    let t = tids.lock().unwrap().clone();
    t
}

#[test]
fn normal_mutex_info_stats_and_waiters() {
    let _g = serial(Tracking::Counts);
    let m = NormalMutex::new(0u32);
    let snap = |m: &NormalMutex<u32>| unsafe { m.raw() }.snapshot();
    assert!(snap(&m).is_none(), "unknown before first use");
    unsafe { m.raw() }.set_name("normal-under-test");
    three_contended(
        &m,
        |m| *m.lock() += 1,
        |m| {
            let g = m.lock();
            let info = snap(m).unwrap().info;
            assert_eq!(info.kind, Kind::NormalMutex);
            assert!(info.locked);
            assert_eq!(info.owner, Some(current_tid()));
            assert_eq!(info.owner_pid, Some(std::process::id()));
            assert_eq!(info.name.as_deref(), Some("normal-under-test"));
            assert!(!info.shared);
            Box::new(move || drop(g))
        },
        snap,
    );
    // Failed and successful trylocks.
    let g = m.lock();
    std::thread::scope(|s| {
        s.spawn(|| assert!(m.try_lock().is_none()));
    });
    drop(g);
    assert!(m.try_lock().is_some());
    let s = snap(&m).unwrap();
    assert_eq!(*m.lock(), 3);
    let st = s.stats;
    assert_eq!(st.locks, 1 + 3 + 1 + 1, "{st:?}");
    assert_eq!(st.contended, 3);
    assert_eq!(st.trylocks, 2);
    assert_eq!(st.trylock_failures, 1);
    assert!(!s.info.locked);
    // The object is listed by the iteration.
    let addr = unsafe { m.raw() } as *const _ as usize;
    assert!(objects()
        .iter()
        .any(|o| o.info.address == addr && o.info.kind == Kind::NormalMutex));
}

#[test]
fn pi_mutex_info_stats_and_waiters() {
    let _g = serial(Tracking::Counts);
    let m = PiMutex::new(0u32);
    let snap = |m: &PiMutex<u32>| unsafe { m.raw() }.snapshot();
    m.lock_checked().map(drop).unwrap(); // first use registers it
    three_contended(
        &m,
        |m| *m.lock() += 1,
        |m| {
            let g = m.lock();
            assert_eq!(snap(m).unwrap().info.owner, Some(current_tid()));
            Box::new(move || drop(g))
        },
        snap,
    );
    let st = snap(&m).unwrap().stats;
    assert_eq!((st.locks, st.contended), (1 + 1 + 3, 3), "{st:?}");
    assert_eq!(snap(&m).unwrap().info.kind, Kind::PiMutex);
}

#[test]
fn recursive_mutex_recursion_count() {
    let _g = serial(Tracking::Counts);
    let m = RecursiveMutex::new(());
    let a = m.lock();
    let b = m.lock();
    let c = m.lock();
    let s = m.snapshot().unwrap();
    assert_eq!(s.info.kind, Kind::RecursiveMutex);
    assert_eq!(s.info.recursion, 3);
    assert_eq!(s.info.owner, Some(current_tid()));
    std::thread::scope(|sc| {
        sc.spawn(|| assert!(m.try_lock().is_none()));
    });
    drop((c, b));
    assert_eq!(m.snapshot().unwrap().info.recursion, 1);
    drop(a);
    let s = m.snapshot().unwrap();
    assert_eq!(s.info.recursion, 0);
    assert!(!s.info.locked);
    assert_eq!(s.stats.locks, 3);
    assert_eq!((s.stats.trylocks, s.stats.trylock_failures), (1, 1));
}

#[test]
fn ceiling_mutex_shows_its_ceiling() {
    let _g = serial(Tracking::Counts);
    let m = sync::ceiling_mutex(42, ()).unwrap();
    unsafe { m.raw() }.set_name("ceiling-42");
    let s = unsafe { m.raw() }.snapshot().unwrap();
    assert_eq!(s.info.kind, Kind::CeilingMutex);
    assert_eq!(s.info.ceiling, Some(42));
    assert_eq!(s.info.name.as_deref(), Some("ceiling-42"));
}

#[test]
fn semaphore_info_stats_and_waiters() {
    let _g = serial(Tracking::Counts);
    let sem = Semaphore::new(0).unwrap();
    sem.set_name("sem");
    let tids = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                tids.lock().unwrap().push(current_tid());
                sem.wait();
            });
        }
        assert!(poll(|| sem.snapshot().is_some_and(|s| s.info.waiters == 2)));
        let snap = sem.snapshot().unwrap();
        assert_eq!(sorted(snap.waiters), sorted(tids.lock().unwrap().clone()));
        assert_eq!(snap.info.sem_count, Some(0));
        sem.post().unwrap();
        sem.post().unwrap();
    });
    assert!(!sem.try_wait());
    sem.post().unwrap();
    assert_eq!(sem.snapshot().unwrap().info.sem_count, Some(1));
    assert!(sem.try_wait());
    let s = sem.snapshot().unwrap();
    assert_eq!(s.info.kind, Kind::Semaphore);
    assert_eq!(s.info.sem_count, Some(0));
    let st = s.stats;
    assert_eq!(st.locks, 3, "{st:?}");
    assert_eq!(st.contended, 2);
    assert_eq!(st.posts, 3);
    assert_eq!((st.trylocks, st.trylock_failures), (2, 1));
    assert_eq!(st.min_count, 0);
    assert!(st.max_count >= 1);
}

#[test]
fn condvar_stats_and_waiters() {
    let _g = serial(Tracking::Counts);
    let m = NormalMutex::new(false);
    let cv = Condvar::new();
    cv.set_name("cv");
    assert!(!cv.notify_one(), "no waiter to wake");
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut g = m.lock();
                while !*g {
                    cv.wait(&mut g);
                }
            });
        }
        assert!(poll(|| cv.snapshot().is_some_and(|s| s.info.waiters == 2)));
        assert_eq!(cv.snapshot().unwrap().waiters.len(), 2);
        *m.lock() = true;
        cv.notify_all();
    });
    let mut g = m.lock();
    assert!(
        cv.wait_for(&mut g, Duration::from_millis(5)),
        "nobody signals: times out"
    );
    drop(g);
    let s = cv.snapshot().unwrap();
    assert_eq!(s.info.kind, Kind::Condvar);
    let st = s.stats;
    assert!(st.locks >= 3, "{st:?}"); // spurious wake-ups may add waits
    assert_eq!((st.timed_waits, st.timeouts), (1, 1));
    assert_eq!((st.signals, st.broadcasts), (1, 1));
}

#[test]
fn rwlock_info_stats_and_waiters() {
    let _g = serial(Tracking::Counts);
    let l = RwLock::new(0);
    let raw = unsafe { l.raw() };
    let r1 = l.read();
    let r2 = l.read();
    let s = raw.snapshot().unwrap();
    assert_eq!((s.info.readers, s.info.write_locked), (2, false));
    let writer_tid = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            assert!(l.try_write().is_none());
            writer_tid.store(current_tid(), Ordering::SeqCst);
            *l.write() += 1;
        });
        assert!(poll(|| raw.snapshot().is_some_and(|s| s.info.waiters == 1)));
        assert_eq!(
            raw.snapshot().unwrap().waiters,
            [writer_tid.load(Ordering::SeqCst)]
        );
        drop((r1, r2));
    });
    let w = l.write();
    let s = raw.snapshot().unwrap();
    assert!(s.info.write_locked);
    assert_eq!(s.info.owner, Some(current_tid()));
    drop(w);
    let st = raw.snapshot().unwrap().stats;
    assert_eq!(st.read_locks, 2, "{st:?}");
    assert_eq!(st.locks, 2);
    assert_eq!(st.contended, 1);
    assert_eq!((st.trylocks, st.trylock_failures), (1, 1));
}

/// `objects()` and the shared registry (what `rtstat` shows) see only the record, not
/// the lock: a read-locked rwlock must show its readers there too, and free again
/// once they are gone.
#[test]
fn rwlock_readers_in_objects_and_registry() {
    let _g = serial(Tracking::Counts);
    let l = RwLock::new(0);
    let raw = unsafe { l.raw() };
    raw.set_name("readers");
    let listed = || {
        objects()
            .into_iter()
            .find(|o| o.info.name.as_deref() == Some("readers"))
            .expect("known")
    };
    let published = || {
        sync::publish().unwrap();
        sync::read_process(std::process::id())
            .unwrap()
            .into_iter()
            .find(|o| o.info.name.as_deref() == Some("readers"))
            .expect("published")
    };
    let r1 = l.read();
    let r2 = l.try_read().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| drop(l.read())).join().unwrap();
    });
    for o in [listed(), published()] {
        assert_eq!(
            (o.info.readers, o.info.locked, o.info.write_locked),
            (2, true, false),
            "{o:?}"
        );
    }
    drop(r1);
    drop(r2);
    for o in [listed(), published()] {
        assert_eq!((o.info.readers, o.info.locked), (0, false), "{o:?}");
    }
}

/// After threads post and wait at once, and then stop, the count that
/// `objects()` and the shared registry (`rtstat`) show is the semaphore's real
/// count: the record's count is written by each post and wait after its own
/// change, so the last to write must not leave a stale value.
#[test]
fn semaphore_count_in_objects_after_racing_posts_and_waits() {
    let _g = serial(Tracking::Counts);
    let sem = Semaphore::new(0).unwrap();
    sem.set_name("racing sem");
    let listed = || {
        objects()
            .into_iter()
            .find(|o| o.info.name.as_deref() == Some("racing sem"))
            .expect("known")
            .info
            .sem_count
    };
    let published = || {
        sync::publish().unwrap();
        sync::read_process(std::process::id())
            .unwrap()
            .into_iter()
            .find(|o| o.info.name.as_deref() == Some("racing sem"))
            .expect("published")
            .info
            .sem_count
    };
    // Each round, two threads post and a third waits at once, then all stop.
    let go = Barrier::new(3);
    for round in 0..3000 {
        std::thread::scope(|s| {
            for t in 0..3 {
                let (sem, go) = (&sem, &go);
                s.spawn(move || {
                    go.wait();
                    if t == 2 {
                        assert!(sem.try_wait() || sem.wait_for(Duration::from_secs(10)).is_ok());
                    } else {
                        sem.post().unwrap();
                    }
                });
            }
        });
        let real = sem.value();
        assert_eq!(listed(), Some(real), "round {round}: objects()");
        if round % 100 == 0 {
            assert_eq!(published(), Some(real), "round {round}: registry");
        }
    }
}

#[test]
fn tracking_off_records_no_new_objects() {
    let _g = serial(Tracking::Off);
    let before = objects().len();
    let m = NormalMutex::new(());
    let p = PiMutex::new(());
    let sem = Semaphore::new(1).unwrap();
    let l = RwLock::new(());
    drop(m.lock());
    drop(p.lock());
    sem.wait();
    sem.post().unwrap();
    drop(l.write());
    assert!(unsafe { m.raw() }.snapshot().is_none());
    assert!(unsafe { p.raw() }.snapshot().is_none());
    assert!(sem.snapshot().is_none());
    assert!(unsafe { l.raw() }.snapshot().is_none());
    assert_eq!(objects().len(), before);
    // Known objects stop counting while tracking is off.
    sync::set_tracking(Tracking::Counts);
    drop(m.lock());
    sync::set_tracking(Tracking::Off);
    drop(m.lock());
    assert_eq!(unsafe { m.raw() }.snapshot().unwrap().stats.locks, 1);
}

#[test]
fn timing_level_records_hold_and_wait_times() {
    let _g = serial(Tracking::Timing);
    let m = NormalMutex::new(());
    let held = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let g = m.lock();
            held.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            // Released only once the test thread waits (not merely after 20 ms).
            let waits = || {
                unsafe { m.raw() }
                    .snapshot()
                    .is_some_and(|s| s.info.waiters == 1)
            };
            assert!(poll(waits), "the test thread never waited");
            drop(g);
        });
        assert!(poll(|| held.load(Ordering::SeqCst)));
        drop(m.lock()); // waits for the holder
    });
    let st = unsafe { m.raw() }.snapshot().unwrap().stats;
    assert_eq!(st.contended, 1);
    assert!(st.hold_max >= Duration::from_millis(20), "{st:?}");
    assert!(st.hold_total >= st.hold_max);
    assert!(
        st.wait_total > Duration::ZERO && st.wait_max <= st.wait_total,
        "{st:?}"
    );
    sync::set_tracking(Tracking::Counts);
}

#[test]
fn forcing_state() {
    let _g = serial(Tracking::Counts);
    // A mutex left locked by a thread that is gone: force it open.
    let m = NormalMutex::new(());
    std::thread::scope(|s| {
        s.spawn(|| std::mem::forget(m.lock()));
    });
    assert!(m.is_locked());
    assert!(m.try_lock().is_none());
    // SAFETY: the owner is gone and its guard was forgotten: nobody will unlock it.
    unsafe { m.raw().force_unlock() };
    assert!(!m.is_locked());
    assert!(m.try_lock().is_some());
    assert!(!unsafe { m.raw() }.snapshot().unwrap().info.locked);

    // A semaphore whose waiter is stuck at 0: set the count.
    let sem = Semaphore::new(0).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| sem.wait());
        assert!(poll(|| sem.waiters() == 1));
        // SAFETY: a test of the debugging escape hatch; nothing else uses the count.
        unsafe { sem.force_count(3) }.unwrap();
    });
    assert_eq!(sem.value(), 2);
    assert_eq!(
        unsafe { sem.force_count(u32::MAX) }.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );

    // A PI mutex with no kernel waiters can be forced; its raw unlock then is a no-op.
    let p = PiMutex::new(());
    std::thread::scope(|s| {
        s.spawn(|| std::mem::forget(p.lock()));
    });
    // SAFETY: as above.
    unsafe { p.raw().force_unlock() }.unwrap();
    assert!(p.try_lock().is_some());
}

/// `n` threads, `n` mutexes: thread i holds mutex i and then wants mutex i+1.
fn make_cycle(n: usize) {
    let locks: Vec<NormalMutex<()>> = (0..n).map(|_| NormalMutex::new(())).collect();
    let addrs: Vec<usize> = locks
        .iter()
        .map(|l| unsafe { l.raw() } as *const _ as usize)
        .collect();
    let barrier = Barrier::new(n + 1);
    let tids = Mutex::new(vec![0u32; n]);
    let found = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for i in 0..n {
            let (locks, barrier, tids, found) = (&locks, &barrier, &tids, &found);
            handles.push(s.spawn(move || {
                tids.lock().unwrap()[i] = current_tid();
                let g = locks[i].lock();
                barrier.wait();
                // Blocks until the cycle is found and broken by the timeout.
                // The first timeout breaks the cycle; the others may then get in.
                let r = locks[(i + 1) % n].lock_for_checked(Duration::from_secs(2));
                assert!(found.load(Ordering::SeqCst), "released before detection");
                let timed_out = match r {
                    Ok(_) => false,
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::TimedOut);
                        true
                    }
                };
                drop(g);
                timed_out
            }));
        }
        barrier.wait();
        let tids = tids.lock().unwrap().clone();
        let mut cycle = None;
        poll(|| {
            cycle = find_deadlocks()
                .into_iter()
                .find(|d| tids.iter().all(|t| d.threads.contains(t)));
            cycle.is_some()
        });
        let d = cycle.expect("cycle found");
        found.store(true, Ordering::SeqCst);
        assert_eq!(d.threads.len(), n);
        // threads[i] waits for locks[i], held by threads[i+1].
        for (k, t) in d.threads.iter().enumerate() {
            let i = tids.iter().position(|x| x == t).unwrap();
            assert_eq!(d.locks[k], addrs[(i + 1) % n]);
            assert_eq!(d.threads[(k + 1) % n], tids[(i + 1) % n]);
        }
        let timeouts = handles
            .into_iter()
            .filter(|_| true)
            .map(|h| h.join().unwrap())
            .filter(|&t| t)
            .count();
        assert!(timeouts >= 1, "a deadlock is only broken by a timeout");
    });
    // Broken: no cycle left among these threads.
    assert!(find_deadlocks()
        .iter()
        .all(|d| !d.locks.iter().any(|l| addrs.contains(l))));
}

#[test]
fn deadlock_two_cycle() {
    let _g = serial(Tracking::Counts);
    make_cycle(2);
}

#[test]
fn deadlock_three_cycle() {
    let _g = serial(Tracking::Counts);
    make_cycle(3);
}

// ---- another process reads the shared registry ----

const CHILD_ENV: &str = "POSIXRT_SYNC_READER_OF";

/// The reader half, run in a child process (this test binary again): reads the
/// parent's registry until told to stop, checking each snapshot, then a final read.
#[test]
#[ignore = "helper: run as a child process by another_process_reads_the_registry"]
fn registry_reader_child() {
    let pid: u32 = std::env::var(CHILD_ENV)
        .expect("run by another_process_reads_the_registry, which sets the parent pid")
        .parse()
        .unwrap();
    let find = || {
        sync::read_process(pid)
            .ok()?
            .into_iter()
            .find(|o| o.info.name.as_deref() == Some("hammered"))
    };
    let mut reads = 0u64;
    let mut last = 0u64;
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        stop2.store(true, Ordering::SeqCst);
    });
    while !stop.load(Ordering::SeqCst) {
        if let Some(o) = find() {
            assert_eq!(o.info.kind, Kind::NormalMutex);
            assert!(
                o.stats.locks >= last,
                "locks went back: {} < {last}",
                o.stats.locks
            );
            assert!(o.stats.contended <= o.stats.locks);
            assert!(o.stats.trylock_failures <= o.stats.trylocks);
            last = o.stats.locks;
            reads += 1;
            if reads == 1 {
                // The parent hammers only from now on, so this reader overlaps it
                // however late the child started on a loaded machine.
                println!("CHILD READY");
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let o = find().expect("final read");
    println!(
        "CHILD reads={reads} final_locks={} trylocks={}",
        o.stats.locks, o.stats.trylocks
    );
}

#[test]
fn another_process_reads_the_registry() {
    let _g = serial(Tracking::Counts);
    let m = NormalMutex::new(0u64);
    unsafe { m.raw() }.set_name("hammered");
    sync::publish().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "registry_reader_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, std::process::id().to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    while !ready.contains("CHILD READY") && !ready.contains("CHILD reads") {
        ready.clear();
        if out.read_line(&mut ready).unwrap_or(0) == 0 {
            break; // the child ended: its report (or its absence) is checked below
        }
    }
    let (threads, each) = (4u64, 50_000u64);
    let hammering = AtomicBool::new(true);
    std::thread::scope(|s| {
        let hammers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    for i in 0..each {
                        if i % 100 == 0 {
                            if let Some(mut g) = m.try_lock() {
                                *g += 1;
                                continue;
                            }
                        }
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        // Publish continuously while hammering (the publisher thread also does).
        s.spawn(|| {
            while hammering.load(Ordering::SeqCst) {
                sync::publish().unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        for h in hammers {
            h.join().unwrap();
        }
        hammering.store(false, Ordering::SeqCst);
    });
    let st = unsafe { m.raw() }.snapshot().unwrap().stats;
    assert_eq!(*m.lock(), threads * each);
    let expected_locks = st.locks + 1; // plus the lock just above
    sync::publish().unwrap();
    // The child may already have failed (its report below says why).
    let _ = child.stdin.take().unwrap().write_all(b"stop\n");
    let all: Vec<String> = std::iter::once(ready)
        .chain(out.lines().map_while(Result::ok))
        .collect();
    let line = all
        .iter()
        .find_map(|l| l.find("CHILD reads=").map(|i| l[i..].to_string()))
        .unwrap_or_else(|| panic!("no child report:\n{}", all.join("\n")));
    assert!(child.wait().unwrap().success(), "child failed: {line}");
    let field = |k: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")).map(|v| v.parse().unwrap()))
            .unwrap()
    };
    assert!(field("reads") > 0, "{line}");
    assert_eq!(field("final_locks"), expected_locks, "{line}");
    assert_eq!(field("trylocks"), st.trylocks, "{line}");
}

/// Successful trylocks are counted by the owner (plain stores), failed ones by the
/// failing thread (atomic add) in a separate word: hammering both at once loses no
/// count.
#[test]
fn trylock_counts_stay_exact_under_concurrent_failures() {
    use std::sync::atomic::AtomicU64;
    let _g = serial(Tracking::Counts);
    let pi = PiMutex::new(0u64);
    let normal = NormalMutex::new(0u64);
    fn run<R: lock_api::RawMutex + Sync>(m: &lock_api::Mutex<R, u64>) -> (u64, u64) {
        let (ok, failed) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        match m.try_lock() {
                            Some(mut g) => {
                                *g += 1;
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            None => {
                                failed.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        (ok.into_inner(), failed.into_inner())
    }
    let (ok, failed) = run(&pi);
    let s = unsafe { pi.raw() }.snapshot().expect("known");
    assert_eq!(
        (s.stats.locks, s.stats.trylocks, s.stats.trylock_failures),
        (ok, 60_000, failed)
    );
    assert_eq!(*pi.lock(), ok);
    let (ok, failed) = run(&normal);
    let s = unsafe { normal.raw() }.snapshot().expect("known");
    assert_eq!(
        (s.stats.locks, s.stats.trylocks, s.stats.trylock_failures),
        (ok, 60_000, failed)
    );
    sync::set_tracking(Tracking::Off);
}

/// `read_process` (what `rtstat PID` calls) tells a missing process from one without
/// a registry, and rejects a pid that cannot be one.
#[test]
fn read_process_errors_name_the_cause() {
    // A pid above pid_max (at most 2^22) is never a live process.
    let e = sync::read_process(4_194_305 + 7).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("no process with pid"), "{e}");
    // pid 1 exists but publishes nothing (it is not this test).
    let e = sync::read_process(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.to_string().contains("has no posixrt sync registry"),
        "{e}"
    );
    let e = sync::read_process(u32::MAX).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

/// More live objects than registry slots: publishing reports the overflow (after
/// publishing what fits), and once objects are dropped their slots serve new ones.
#[test]
fn full_registry_recovers_when_objects_are_dropped() {
    let _g = serial(Tracking::Counts);
    let many: Vec<NormalMutex<()>> = (0..1100).map(|_| NormalMutex::new(())).collect();
    for m in &many {
        drop(m.lock());
    }
    let e = sync::publish().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfResources, "{e}");
    drop(many);
    let fresh: Vec<NormalMutex<()>> = (0..10).map(|_| NormalMutex::new(())).collect();
    for m in &fresh {
        drop(m.lock());
    }
    let n = sync::publish().expect("room again");
    assert!(n >= 10, "{n}");
    let mine = sync::read_process(std::process::id()).unwrap();
    for m in &fresh {
        let a = unsafe { m.raw() }.snapshot().unwrap().info.address;
        assert!(mine.iter().any(|s| s.info.address == a));
    }
    sync::set_tracking(Tracking::Off);
}

/// Up to 24 waiter tids are listed (the count is exact beyond that): 20 blocked
/// threads are all named.
#[test]
fn twenty_waiters_are_all_listed() {
    let _g = serial(Tracking::Counts);
    let m = NormalMutex::new(());
    let held = m.lock();
    let tids = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..20 {
            s.spawn(|| {
                tids.lock().unwrap().push(current_tid());
                drop(m.lock());
            });
        }
        let snap = || unsafe { m.raw() }.snapshot().unwrap();
        assert!(poll(|| snap().info.waiters == 20), "{:?}", snap());
        assert_eq!(sorted(snap().waiters), sorted(tids.lock().unwrap().clone()));
        drop(held);
    });
    let s = unsafe { m.raw() }.snapshot().unwrap();
    assert_eq!((s.info.waiters, s.waiters.len()), (0, 0));
    sync::set_tracking(Tracking::Off);
}
