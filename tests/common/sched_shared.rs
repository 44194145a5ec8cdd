//! Helpers shared by the `sched_*` integration tests split from one file:
//! `#[path = "common/sched_shared.rs"] mod shared;`.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use std::time::Duration;

use posixrt::sched::{CpuSet, Tid};

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises the tests of one binary that change scheduling.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub fn has_cap(cap: rustix::thread::CapabilitySet) -> bool {
    rustix::thread::capabilities(None)
        .map(|c| c.effective.contains(cap))
        .unwrap_or(false)
}

/// The last CPU we may run on: RT demo threads go there.
pub fn demo_cpu() -> usize {
    CpuSet::allowed().unwrap().iter().last().unwrap()
}

/// A tid that is not in use: above pid_max.
pub fn unused_tid() -> Tid {
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Tid::from_raw(max + 1).unwrap()
}

/// `v` milliseconds.
pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}
