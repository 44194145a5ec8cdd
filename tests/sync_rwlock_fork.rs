//! A process forked while another of its threads holds the lock of an
//! `RwLock`'s list of real-time waiting writers (as a writer does for a moment
//! when it starts or stops waiting): in the child, a real-time writer that has
//! to wait lists itself without waiting for that holder, which stayed in the
//! parent.
//!
//! The thread is held there by the global allocator (an allocation made inside
//! the test hook that runs with the list lock held). Its own binary: the test
//! crate's global allocator is the holding one.

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
