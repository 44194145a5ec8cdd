//! `RwLock`s in a process forked while other threads of the parent used them:
//! in the child, where those threads do not exist, nothing waits for them.
//!
//! - A thread holds the lock of the lists of real-time waiting writers (as a
//!   writer does for a moment when it starts or stops waiting): it is held
//!   there by the global allocator (an allocation made inside the test hook
//!   that runs with the list lock held). Its own binary: the test crate's
//!   global allocator is the holding one.
//! - A writer waits (for a read lock of the forking thread): in the child it
//!   holds no reader back, and a real-time one does not outrank the child's
//!   real-time readers.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/held_fork.rs"]
mod held_fork;

use std::time::Duration;

use posixrt::sync::RwLock;

/// In the child: as a `SCHED_FIFO` thread (whose waiting write lists itself),
/// a timed write while this thread reads it waits, times out, and leaves the
/// lock free for the next write.
fn rt_write_waits_in_child(l: &RwLock<u32>) -> Result<(), String> {
    if caps::can_rt() {
        let p = libc::sched_param { sched_priority: 10 };
        // SAFETY: a valid sched_param for the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
            return Err(format!("SCHED_FIFO: {}", std::io::Error::last_os_error()));
        }
    }
    let r = l.read();
    if l.try_write_for(Duration::from_millis(1)).is_some() {
        return Err("write-locked while this thread reads".into());
    }
    drop(r);
    match l.try_write() {
        Some(mut g) => {
            *g += 1;
            Ok(())
        }
        None => Err("the lock stayed held after the timed write".into()),
    }
}

#[test]
fn a_child_forked_while_a_thread_holds_an_rwlock_writer_list_does_not_wait_for_it() {
    let l: &'static RwLock<u32> = Box::leak(Box::new(RwLock::new(0)));
    let a = std::thread::spawn(move || {
        // SAFETY: the raw lock is only used for the test hook.
        unsafe { l.raw() }.__with_writer_list_locked(|| {
            held_fork::arm();
            drop(std::hint::black_box(Box::new(0u64)));
        })
    });
    assert!(
        held_fork::wait_held(|| a.is_finished()),
        "the hook made no allocation to hold it at"
    );
    let release = held_fork::ReleaseOnDrop;
    let child = held_fork::in_child(|| rt_write_waits_in_child(l));
    drop(release);
    a.join().unwrap();
    child.unwrap();
    // In the parent, the list lock was released: the same works here.
    rt_write_waits_in_child(l).unwrap();
}

/// In the child: the lock is read-locked (by the child's copy of the forking
/// thread's guard) and nothing else: reads pass, and a writer that waits for
/// that reader and gives up leaves reads passing.
fn reads_pass_in_child(l: &RwLock<u32>) -> Result<(), String> {
    if l.try_read().is_none() {
        return Err("a read is held back by a writer that does not exist".into());
    }
    if l.try_write_for(Duration::from_millis(1)).is_some() {
        return Err("write-locked while read-locked".into());
    }
    match l.try_read() {
        Some(_) => Ok(()),
        None => Err("a read is held back after the child's writer left".into()),
    }
}

/// A process forked while another of its threads waits to write-lock an
/// `RwLock` that the forking thread reads: that writer does not exist in the
/// child, where reads must not wait for it.
#[test]
fn a_child_forked_while_a_writer_waits_does_not_hold_reads_back_for_it() {
    let l: &'static RwLock<u32> = Box::leak(Box::new(RwLock::new(0)));
    let r = l.read();
    let w = std::thread::spawn(move || *l.write() += 1);
    // Writers are preferred: once the writer waits, reads are held back.
    assert!(
        caps::wait_for(Duration::from_secs(5), || l.try_read().is_none()),
        "the writer never waited"
    );
    let child = held_fork::in_child(|| reads_pass_in_child(l));
    drop(r);
    w.join().unwrap();
    child.unwrap();
    assert_eq!(*l.read(), 1);
}

/// Sets the calling thread to `SCHED_FIFO` at `prio`.
fn fifo(prio: i32) -> Result<(), String> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: a valid sched_param for the calling thread.
    match unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } {
        0 => Ok(()),
        _ => Err(format!("SCHED_FIFO: {}", std::io::Error::last_os_error())),
    }
}

/// In the child, where the lock is read-locked by the child's copy of the
/// forking thread's guard: a FIFO-20 writer waits and gives up, a
/// `SCHED_OTHER` writer waits, and a FIFO-10 reader must pass it (the FIFO-50
/// writer of the parent, still listed in the copied list, does not exist here).
fn rt_read_passes_in_child(l: &'static RwLock<u32>) -> Result<(), String> {
    let gave_up = std::thread::spawn(move || {
        fifo(20)?;
        match l.try_write_for(Duration::from_millis(1)) {
            None => Ok(()),
            Some(_) => Err("write-locked while read-locked".to_string()),
        }
    });
    gave_up
        .join()
        .map_err(|_| "the FIFO-20 writer panicked")??;
    // Never gets the lock: the child ends with it waiting.
    std::thread::spawn(move || drop(l.write()));
    if !caps::wait_for(Duration::from_secs(5), || l.try_read().is_none()) {
        return Err("the SCHED_OTHER writer never waited".into());
    }
    let reader = std::thread::spawn(move || {
        fifo(10)?;
        Ok::<bool, String>(l.try_read().is_some())
    });
    match reader.join().map_err(|_| "the FIFO-10 reader panicked")?? {
        true => Ok(()),
        false => Err("a FIFO-10 read is held back by the parent's FIFO-50 writer".into()),
    }
}

/// A process forked while a FIFO-50 writer waits for an `RwLock` the forking
/// thread reads: in the child, real-time readers rank against the child's
/// waiting writers only.
#[test]
fn a_child_forked_while_an_rt_writer_waits_ranks_readers_against_its_own_writers() {
    if !caps::can_rt() {
        assert!(fifo(10).unwrap_err().contains("Operation not permitted"));
        return;
    }
    let l: &'static RwLock<u32> = Box::leak(Box::new(RwLock::new(0)));
    let r = l.read();
    let w = std::thread::spawn(move || {
        fifo(50).unwrap();
        *l.write() += 1
    });
    assert!(
        caps::wait_for(Duration::from_secs(5), || l.try_read().is_none()),
        "the writer never waited"
    );
    let child = held_fork::in_child(|| rt_read_passes_in_child(l));
    drop(r);
    w.join().unwrap();
    child.unwrap();
    assert_eq!(*l.read(), 1);
}
