//! Trace points of every subsystem (issue 6): each system event appears with the
//! right payload (decoded by the layout the log carries, fields checked), is part of
//! `fill(System)`, and vanishes when filtered.
//!
//! Events of every thread of the test binary land in every running stream, so each
//! test picks its own events by object address, fd or tid. Tests that change
//! scheduling run one at a time (a static mutex) on a thread pinned to one CPU.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use posixrt::sync::{
    ceiling_mutex, current_tid, Condvar, MutexExt, NormalMutex, PiMutex, RecursiveMutex, RwLock,
    Semaphore,
};
use posixrt::trace::system_events::{self as sys, Value};
use posixrt::trace::{catalog, EventSet, FillWhat, FilterHow, Trace, TraceAttr};

static SCHED: Mutex<()> = Mutex::new(());

/// One decoded system event: name, recording tid, fields, trailing bytes.
#[derive(Debug, Clone)]
struct Ev {
    name: String,
    tid: u32,
    f: BTreeMap<String, Value>,
    tail: Vec<u8>,
}

impl Ev {
    fn u(&self, k: &str) -> u64 {
        match self.f.get(k) {
            Some(Value::U(v)) | Some(Value::Hex(v)) => *v,
            Some(Value::I(v)) => *v as u64,
            other => panic!("{}: field {k} is {other:?}", self.name),
        }
    }
    fn i(&self, k: &str) -> i64 {
        match self.f.get(k) {
            Some(Value::I(v)) => *v,
            other => panic!("{}: field {k} is {other:?}", self.name),
        }
    }
}

fn new_trace() -> Trace {
    let mut a = TraceAttr::new();
    a.set_stream_size(1 << 20).unwrap();
    Trace::create(&a).unwrap()
}

/// Every system event of the stream with a payload layout, decoded.
fn decoded(t: &Trace) -> Vec<Ev> {
    let types: BTreeMap<u16, _> = t.event_types().map(|ty| (ty.id.raw(), ty)).collect();
    t.events()
        .filter_map(|e| {
            let ty = types.get(&e.id.raw())?;
            if ty.fields.is_empty() {
                return None;
            }
            let vals = sys::decode(&ty.fields, &e.data).expect("payload shorter than layout");
            let used: usize = ty.fields.iter().map(|f| f.1.size()).sum();
            Some(Ev {
                name: ty.name.clone(),
                tid: e.tid,
                f: vals.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
                tail: e.data[used..].to_vec(),
            })
        })
        .collect()
}

/// The sync events about the object at `addr`, as (name, tid, owner, result).
fn sync_events(evs: &[Ev], addr: usize) -> Vec<(String, u32, u32, i64)> {
    evs.iter()
        .filter(|e| {
            e.name.starts_with("sync_") && e.f.get("addr") == Some(&Value::Hex(addr as u64))
        })
        .map(|e| {
            assert_eq!(
                e.u("tid") as u32,
                e.tid,
                "payload tid is the recording thread"
            );
            (
                e.name.clone(),
                e.tid,
                e.f.get("owner").map_or(u32::MAX, |_| e.u("owner") as u32),
                e.f.get("result").map_or(-1, |_| e.i("result")),
            )
        })
        .collect()
}

fn s(x: &str) -> String {
    x.to_string()
}

/// Lock, a trylock from another thread while held, unlock, a trylock that succeeds
/// and its unlock: the five events with tids, owners and result codes.
macro_rules! check_mutex_kind {
    ($m:expr) => {{
        let m = &$m;
        let addr = unsafe { m.raw() } as *const _ as usize;
        let t = new_trace();
        t.start().unwrap();
        let me = current_tid();
        let g = m.lock();
        let other = std::thread::scope(|sc| {
            sc.spawn(|| {
                assert!(m.try_lock().is_none(), "held: the trylock fails");
                current_tid()
            })
            .join()
            .unwrap()
        });
        drop(g);
        drop(m.try_lock().expect("free: the trylock succeeds"));
        t.stop().unwrap();
        let got = sync_events(&decoded(&t), addr);
        let busy = i64::from(libc::EBUSY);
        assert_eq!(
            got,
            [
                (s("sync_lock"), me, me, 0),
                (s("sync_trylock"), other, me, busy),
                (s("sync_unlock"), me, u32::MAX, 0),
                (s("sync_trylock"), me, me, 0),
                (s("sync_unlock"), me, u32::MAX, 0),
            ]
        );
    }};
}

#[test]
fn normal_mutex_events() {
    check_mutex_kind!(NormalMutex::new(()));
}

#[test]
fn pi_mutex_events() {
    check_mutex_kind!(PiMutex::new(()));
}

#[test]
fn ceiling_mutex_events() {
    let _g = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let m = ceiling_mutex(10, ()).unwrap();
    // The ceiling protocol raises the caller to SCHED_FIFO 10: it needs the privilege.
    match m.lock_checked() {
        Ok(g) => drop(g),
        Err(e) => {
            assert_eq!(e.kind(), posixrt::ErrorKind::PermissionDenied, "{e}");
            eprintln!("no privilege for SCHED_FIFO: ceiling trace points not exercised");
            return;
        }
    }
    check_mutex_kind!(m);
}

#[test]
fn recursive_mutex_events_per_level() {
    let m = RecursiveMutex::new(());
    let addr = &m as *const _ as usize;
    let t = new_trace();
    t.start().unwrap();
    let me = current_tid();
    {
        let _a = m.lock();
        let _b = m.try_lock().expect("owner relocks");
        let other = std::thread::scope(|sc| {
            sc.spawn(|| {
                assert!(m.try_lock().is_none());
                current_tid()
            })
            .join()
            .unwrap()
        });
        drop(_b);
        t.stop().unwrap();
        let got = sync_events(&decoded(&t), addr);
        assert_eq!(
            got,
            [
                (s("sync_lock"), me, me, 0),
                (s("sync_trylock"), me, me, 0),
                (s("sync_trylock"), other, me, i64::from(libc::EBUSY)),
                (s("sync_unlock"), me, u32::MAX, 0),
            ]
        );
    }
}

/// A ceiling lock the protocol refuses is traced like any other refused lock: a
/// relock by the owner (EDEADLK), or, without the privilege to raise, the EPERM
/// of a lock and of a trylock.
#[test]
fn refused_ceiling_lock_events() {
    let _g = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let m = ceiling_mutex(10, ()).unwrap();
    let addr = unsafe { m.raw() } as *const _ as usize;
    let t = new_trace();
    t.start().unwrap();
    let me = current_tid();
    let expected = match m.lock_checked() {
        Ok(g) => {
            let e = m.lock_checked().map(drop).unwrap_err();
            assert_eq!(e.errno(), Some(libc::EDEADLK), "{e}");
            drop(g);
            vec![
                (s("sync_lock"), me, me, 0),
                (s("sync_lock"), me, me, i64::from(libc::EDEADLK)),
                (s("sync_unlock"), me, u32::MAX, 0),
            ]
        }
        Err(e) => {
            assert_eq!(e.kind(), posixrt::ErrorKind::PermissionDenied, "{e}");
            let e = m.try_lock_checked().map(drop).unwrap_err();
            assert_eq!(e.kind(), posixrt::ErrorKind::PermissionDenied, "{e}");
            let eperm = i64::from(libc::EPERM);
            vec![
                (s("sync_lock"), me, 0, eperm),
                (s("sync_trylock"), me, 0, eperm),
            ]
        }
    };
    t.stop().unwrap();
    assert_eq!(sync_events(&decoded(&t), addr), expected);
}

#[test]
fn contended_and_timed_lock_events() {
    let m = NormalMutex::new(());
    let addr = unsafe { m.raw() } as *const _ as usize;
    let t = new_trace();
    t.start().unwrap();
    let me = current_tid();
    let g = m.lock();
    let other = std::thread::scope(|sc| {
        sc.spawn(|| {
            assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
            current_tid()
        })
        .join()
        .unwrap()
    });
    // Relocking a held normal mutex is refused with EDEADLK.
    assert_eq!(
        m.lock_until_checked(Instant::now() + Duration::from_millis(1))
            .err()
            .and_then(|e| e.errno()),
        Some(libc::EDEADLK)
    );
    drop(g);
    t.stop().unwrap();
    let got = sync_events(&decoded(&t), addr);
    assert_eq!(
        got,
        [
            (s("sync_lock"), me, me, 0),
            (s("sync_lock"), other, me, i64::from(libc::ETIMEDOUT)),
            (s("sync_lock"), me, me, i64::from(libc::EDEADLK)),
            (s("sync_unlock"), me, u32::MAX, 0),
        ]
    );
}

#[test]
fn rwlock_events() {
    let l = RwLock::new(0);
    let addr = unsafe { l.raw() } as *const _ as usize;
    let t = new_trace();
    t.start().unwrap();
    let me = current_tid();
    {
        let _r = l.read();
        let other = std::thread::scope(|sc| {
            sc.spawn(|| {
                assert!(l.try_write().is_none());
                current_tid()
            })
            .join()
            .unwrap()
        });
        drop(_r);
        *l.write() += 1;
        assert!(l.try_read().is_some());
        t.stop().unwrap();
        let evs = decoded(&t);
        let got: Vec<_> = evs
            .iter()
            .filter(|e| e.f.get("addr") == Some(&Value::Hex(addr as u64)))
            .map(|e| {
                let extra = match e.name.as_str() {
                    "sync_rdlock" => e.u("try") as i64 * 1000 + e.i("result"),
                    "sync_trylock" | "sync_lock" => e.u("owner") as i64 * 1000 + e.i("result"),
                    _ => 0,
                };
                (e.name.clone(), e.tid, extra)
            })
            .collect();
        let busy = i64::from(libc::EBUSY);
        assert_eq!(
            got,
            [
                (s("sync_rdlock"), me, 0),
                (s("sync_trylock"), other, busy), // owner 0: readers, no writer
                (s("sync_rdunlock"), me, 0),
                (s("sync_lock"), me, me as i64 * 1000),
                (s("sync_unlock"), me, 0),
                (s("sync_rdlock"), me, 1000),
                (s("sync_rdunlock"), me, 0),
            ]
        );
    }
}

#[test]
fn condvar_and_semaphore_events() {
    let m = NormalMutex::new(false);
    let maddr = unsafe { m.raw() } as *const _ as usize;
    let cv = Condvar::new();
    let caddr = &cv as *const _ as usize;
    let sem = Semaphore::new(1).unwrap();
    let saddr = &sem as *const _ as usize;
    let t = new_trace();
    t.start().unwrap();
    let me = current_tid();
    // A timed wait that times out, then a signal and a broadcast.
    {
        let mut g = m.lock();
        let _ = cv.wait_for(&mut g, Duration::from_millis(1));
    }
    cv.notify_one();
    cv.notify_all();
    sem.wait();
    assert!(!sem.try_wait());
    sem.post().unwrap();
    t.stop().unwrap();
    let evs = decoded(&t);
    let cvs: Vec<_> = evs
        .iter()
        .filter(|e| e.f.get("addr") == Some(&Value::Hex(caddr as u64)))
        .map(|e| match e.name.as_str() {
            "sync_cond_wait" => (e.name.clone(), e.u("mutex"), e.u("timed")),
            _ => (e.name.clone(), 0, e.u("broadcast")),
        })
        .collect();
    assert_eq!(
        cvs,
        [
            (s("sync_cond_wait"), maddr as u64, 1),
            (s("sync_cond_signal"), 0, 0),
            (s("sync_cond_signal"), 0, 1),
        ]
    );
    assert!(evs
        .iter()
        .filter(|e| e.name.starts_with("sync_cond"))
        .all(|e| e.tid == me));
    let sems: Vec<_> = evs
        .iter()
        .filter(|e| e.f.get("addr") == Some(&Value::Hex(saddr as u64)))
        .map(|e| {
            (
                e.name.clone(),
                e.u("value"),
                e.f.get("result").map_or(-1, |_| e.i("result")),
            )
        })
        .collect();
    assert_eq!(
        sems,
        [
            (s("sync_sem_wait"), 0, 0),
            (s("sync_sem_wait"), 0, i64::from(libc::EAGAIN)),
            (s("sync_sem_post"), 1, -1),
        ]
    );
}

#[test]
fn system_set_includes_every_trace_point_and_the_filter_drops_them() {
    let all = [
        &catalog::SYNC_LOCK,
        &catalog::SYNC_TRYLOCK,
        &catalog::SYNC_UNLOCK,
        &catalog::SYNC_RDLOCK,
        &catalog::SYNC_RDUNLOCK,
        &catalog::SYNC_COND_WAIT,
        &catalog::SYNC_COND_SIGNAL,
        &catalog::SYNC_SEM_WAIT,
        &catalog::SYNC_SEM_POST,
        &catalog::SCHED_CHANGE,
        &catalog::SCHED_AFFINITY,
        &catalog::SCHED_THREAD_CREATE,
        &catalog::MARK_SET,
        &catalog::AIO_SUBMIT,
        &catalog::AIO_COMPLETE,
        &catalog::AIO_CANCEL,
        &catalog::AIO_LIST_START,
        &catalog::AIO_LIST_END,
    ];
    let mut system = EventSet::empty();
    system.fill(FillWhat::System);
    let mut filter = EventSet::empty();
    for ev in all {
        let id = ev.id().unwrap();
        assert!(id.is_system());
        assert!(system.contains(id), "{id:?} not in fill(System)");
        filter.add(id);
    }
    // With every trace point filtered, none is recorded; a user event still is.
    let t = new_trace();
    t.set_filter(&filter, FilterHow::Set).unwrap();
    let user = t.eventid_open("points user").unwrap();
    t.start().unwrap();
    let m = NormalMutex::new(());
    *m.lock();
    assert!(m.try_lock().is_some());
    let sem = Semaphore::new(0).unwrap();
    sem.post().unwrap();
    sem.wait();
    Condvar::new().notify_all();
    posixrt::mark::update("filtered").unwrap();
    let me = posixrt::sched::gettid();
    let cpus = posixrt::sched::thread_affinity(me).unwrap();
    posixrt::sched::set_thread_affinity(me, &cpus).unwrap(); // unchanged: no privilege needed
    posixrt::sched::Builder::new()
        .spawn(|| ())
        .unwrap()
        .join()
        .unwrap();
    posixrt::trace::event(user, &7i32.to_le_bytes());
    t.stop().unwrap();
    let ids: Vec<_> = t.events().map(|e| e.id).collect();
    assert!(ids.contains(&user));
    for ev in all {
        let id = ev.id().unwrap();
        assert!(!ids.contains(&id), "{id:?} recorded although filtered");
    }
    // The same sequence unfiltered records them.
    let t2 = new_trace();
    t2.start().unwrap();
    let _g = m.lock();
    t2.stop().unwrap();
    assert!(t2
        .events()
        .any(|e| e.id == catalog::SYNC_LOCK.id().unwrap()));
    posixrt::mark::clear();
}

#[test]
fn stopped_stream_records_nothing() {
    let t = new_trace();
    t.start().unwrap();
    t.stop().unwrap();
    // Other tests' threads record into every running stream, and one caught
    // mid-event by the stop may still land. So read what is there, then count
    // only this thread's events: its lock after the stop must add none.
    let _ = t.events().count();
    let m = NormalMutex::new(());
    *m.lock();
    let me = current_tid();
    assert_eq!(t.events().filter(|e| e.tid == me).count(), 0);
}

#[test]
fn mark_events_carry_tid_and_text() {
    let t = new_trace();
    t.start().unwrap();
    let (tid, long) = std::thread::spawn(|| {
        posixrt::mark::update("step 1").unwrap();
        posixrt::mark::set("worker: ready").unwrap();
        let long = "x".repeat(posixrt::mark::MARKER_MAX);
        posixrt::mark::update(&long).unwrap();
        posixrt::mark::clear();
        (current_tid(), long)
    })
    .join()
    .unwrap();
    t.stop().unwrap();
    let got: Vec<_> = decoded(&t)
        .into_iter()
        .filter(|e| e.name == "mark_set" && e.tid == tid)
        .map(|e| {
            assert_eq!(e.u("tid") as u32, tid);
            assert_eq!(e.u("len") as usize, e.tail.len());
            (e.u("how"), String::from_utf8(e.tail).unwrap())
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, s("step 1")),
            (1, s("worker: ready")),
            (0, long),
            (2, s("")),
        ]
    );
}

#[test]
fn sched_events_old_and_new() {
    use posixrt::sched::{self, Builder, CpuSet, Policy, Priority, Tid};
    let _g = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let t = new_trace();
    t.start().unwrap();
    let (tid, old_mask, fifo_ok, child) = std::thread::spawn(|| {
        let me = sched::gettid();
        let old = sched::thread_affinity(me).unwrap();
        let old_mask = old.iter().filter(|&c| c < 64).fold(0u64, |m, c| m | 1 << c);
        let cpu = old.iter().next().unwrap();
        sched::set_thread_affinity(me, &CpuSet::single(cpu).unwrap()).unwrap();
        let fifo_ok = sched::set_current_scheduling(Priority::fifo(10).unwrap()).is_ok();
        if fifo_ok {
            sched::set_current_priority(12).unwrap();
            sched::set_current_scheduling(Priority::other()).unwrap();
        }
        // A refused change: no such thread.
        let gone = Tid::from_raw(i32::MAX - 7).unwrap();
        assert!(sched::set_thread_scheduling(gone, Priority::other()).is_err());
        let child = if fifo_ok {
            let h = Builder::new()
                .scheduling(Priority::fifo(5).unwrap())
                .affinity(CpuSet::single(cpu).unwrap())
                .spawn(|| ())
                .unwrap();
            let tid = h.tid().as_raw();
            h.join().unwrap();
            Some((tid, cpu))
        } else {
            None
        };
        (me.as_raw(), old_mask, fifo_ok, child)
    })
    .join()
    .unwrap();
    t.stop().unwrap();
    let evs = decoded(&t);
    let aff: Vec<_> = evs
        .iter()
        .filter(|e| e.name == "sched_affinity" && e.i("tid") as i32 == tid)
        .collect();
    assert_eq!(aff.len(), 1);
    assert_eq!(aff[0].u("old_cpus"), old_mask);
    assert_eq!(aff[0].u("new_cpus").count_ones(), 1);
    assert_eq!(aff[0].i("result"), 0);
    let ch: Vec<_> = evs
        .iter()
        .filter(|e| e.name == "sched_change")
        .filter(|e| e.i("tid") as i32 == tid || e.i("tid") as i32 == i32::MAX - 7)
        .map(|e| {
            (
                e.i("old_policy"),
                e.i("old_prio"),
                e.i("new_policy"),
                e.i("new_prio"),
                e.i("result"),
            )
        })
        .collect();
    let fifo = i64::from(Policy::Fifo.as_raw());
    let esrch = i64::from(libc::ESRCH);
    if fifo_ok {
        assert_eq!(
            ch,
            [
                (0, 0, fifo, 10, 0),
                (fifo, 10, fifo, 12, 0),
                (fifo, 12, 0, 0, 0),
                (-1, -1, -1, -1, esrch),
            ]
        );
        let (ctid, cpu) = child.unwrap();
        let created: Vec<_> = evs
            .iter()
            .filter(|e| e.name == "sched_thread_create" && e.i("tid") as i32 == ctid)
            .map(|e| (e.i("policy"), e.i("prio"), e.u("cpus")))
            .collect();
        assert_eq!(created, [(fifo, 5, 1u64 << cpu)]);
    } else {
        eprintln!("no privilege for SCHED_FIFO: only the refused change is checked");
        assert_eq!(ch.last(), Some(&(-1, -1, -1, -1, esrch)));
    }
}

#[test]
fn aio_events_complete_set() {
    use posixrt::aio::{Aio, CancelResult, ListMode, Notify, Op};
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let mut f = std::fs::File::from(
        rustix::fs::memfd_create("points", rustix::fs::MemfdFlags::empty()).unwrap(),
    );
    f.write_all(b"0123456789").unwrap();
    let fd = f.as_raw_fd();
    let aio = Aio::new().unwrap();
    let t = new_trace();
    t.start().unwrap();
    let r = aio.read(&f, 2, vec![0u8; 4]).unwrap();
    aio.suspend([&r], None).unwrap();
    let outcome = r.cancel().unwrap();
    assert_eq!(outcome, CancelResult::AllDone);
    let list = aio
        .lio_listio(
            ListMode::Wait,
            [
                Some(Op::read(&f, 0, vec![0u8; 3])),
                Some(Op::read(&f, 5, vec![0u8; 5])),
            ],
            Notify::None,
        )
        .unwrap();
    drop(list);
    t.stop().unwrap();
    let evs = decoded(&t);
    let mine: Vec<_> = evs
        .iter()
        .filter(|e| e.name.starts_with("aio_"))
        .filter(|e| !e.f.contains_key("fd") || e.i("fd") == i64::from(fd))
        .map(|e| match e.name.as_str() {
            "aio_list_start" => (e.name.clone(), e.u("entries") as i64, e.u("wait") as i64),
            "aio_list_end" => (e.name.clone(), 0, 0),
            "aio_complete" => (e.name.clone(), e.i("offset"), e.i("result")),
            "aio_cancel" => (
                e.name.clone(),
                e.i("offset"),
                i64::from(e.i("outcome") as i32),
            ),
            _ => (e.name.clone(), e.i("offset"), e.u("len") as i64),
        })
        .collect();
    let count = |n: &str| mine.iter().filter(|m| m.0 == n).count();
    assert!(mine.contains(&(s("aio_submit"), 2, 4)), "{mine:?}");
    assert!(mine.contains(&(s("aio_complete"), 2, 4)), "{mine:?}");
    assert!(mine.contains(&(s("aio_cancel"), 2, 2)), "{mine:?}");
    assert!(mine.contains(&(s("aio_list_start"), 2, 1)), "{mine:?}");
    assert!(mine.contains(&(s("aio_submit"), 5, 5)), "{mine:?}");
    assert!(mine.contains(&(s("aio_complete"), 0, 3)), "{mine:?}");
    assert!(mine.contains(&(s("aio_complete"), 5, 5)), "{mine:?}");
    assert_eq!(count("aio_list_end"), 1, "{mine:?}");
    assert_eq!((count("aio_submit"), count("aio_complete")), (3, 3));
    // Each request's submit comes before its completion.
    let pos = |n: &str, off: i64| mine.iter().position(|m| m.0 == n && m.1 == off).unwrap();
    assert!(pos("aio_submit", 5) < pos("aio_complete", 5));
}

#[test]
fn deadline_change_event() {
    use posixrt::sched::{self, deadline, Priority};
    let _g = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let t = new_trace();
    t.start().unwrap();
    // A fresh, unpinned thread (SCHED_DEADLINE refuses threads pinned to a subset).
    let (tid, r) = std::thread::spawn(|| {
        let me = sched::gettid();
        let p = deadline::Deadline::new(
            Duration::from_millis(1),
            Duration::from_millis(10),
            Duration::from_millis(100),
        )
        .unwrap();
        let r = deadline::set(me, &p).map_err(|e| e.errno().unwrap_or(-1));
        if r.is_ok() {
            sched::set_current_scheduling(Priority::other()).unwrap();
        }
        (me.as_raw(), r)
    })
    .join()
    .unwrap();
    t.stop().unwrap();
    let ch: Vec<_> = decoded(&t)
        .into_iter()
        .filter(|e| e.name == "sched_change" && e.i("tid") as i32 == tid)
        .map(|e| {
            (
                e.i("old_policy"),
                e.i("new_policy"),
                e.i("new_prio"),
                e.i("result"),
            )
        })
        .collect();
    let dl = i64::from(libc::SCHED_DEADLINE);
    match r {
        Ok(()) => assert_eq!(ch, [(0, dl, 0, 0), (dl, 0, 0, 0)]),
        Err(errno) => {
            eprintln!("SCHED_DEADLINE refused (errno {errno}): the refusal is traced");
            assert_eq!(ch, [(0, 0, 0, i64::from(errno))]);
        }
    }
}

/// Changing a spawned thread's affinity through its handle is an affinity change
/// like `set_thread_affinity`: it emits `sched_affinity` with the old and new
/// masks, as `JoinHandle::set_scheduling` emits `sched_change`.
#[test]
fn handle_affinity_change_event() {
    use posixrt::sched::{self, Builder, CpuSet};
    let _g = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let all = CpuSet::allowed().unwrap();
    let cpu = all.iter().next().unwrap();
    let mask = |s: &CpuSet| s.iter().filter(|&c| c < 64).fold(0u64, |m, c| m | 1 << c);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .affinity(all)
        .spawn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    let t = new_trace();
    t.start().unwrap();
    h.set_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
    t.stop().unwrap();
    let tid = h.tid().as_raw();
    assert_eq!(sched::thread_affinity(h.tid()).unwrap().count(), 1);
    drop(tx);
    h.join().unwrap();
    let aff: Vec<_> = decoded(&t)
        .into_iter()
        .filter(|e| e.name == "sched_affinity" && e.i("tid") as i32 == tid)
        .map(|e| (e.u("old_cpus"), e.u("new_cpus"), e.i("result")))
        .collect();
    assert_eq!(aff, [(mask(&all), 1u64 << cpu, 0)]);
}
