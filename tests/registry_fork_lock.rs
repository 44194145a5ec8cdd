//! A child forked while another thread of its parent is inside
//! `Registry::create`, after the registry file was locked: the child must not
//! keep the parent's lock (the fork hook lets go of it), or the parent's file
//! looks owned after the parent `exec`s, for as long as the child lives.
//!
//! The creating thread is held in its allocation of the exit-removal path
//! (a `CString` of the registry path, sized `path.len() + 1`: an allocation of
//! that size made by that thread alone), after the file was locked and
//! published; the test forks then.

#[path = "common/flocks.rs"]
mod flocks;
#[path = "common/held_fork.rs"]
mod held_fork;

use posixrt::registry::Registry;

#[test]
fn a_child_forked_inside_create_lets_go_of_the_lock() {
    let kind = "regforklockwin";
    let pid = std::process::id();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let path = format!("/dev/shm/posixrt-{kind}-{pid}-{start}");
    let creator = std::thread::spawn(move || {
        held_fork::arm_at(path.len() + 1);
        let r = Registry::create(kind, 8, 1);
        held_fork::disarm();
        r
    });
    let release = held_fork::ReleaseOnDrop;
    assert!(
        held_fork::wait_held(|| creator.is_finished()),
        "the creating thread never allocated the path"
    );
    let child = held_fork::in_child(|| {
        let held = flocks::held();
        if held.is_empty() {
            Ok(())
        } else {
            Err(format!("{held:?}"))
        }
    });
    drop(release);
    let reg = creator.join().unwrap().expect("create");
    drop(reg);
    if let Err(msg) = child {
        panic!("the child holds the parent's registry lock: {msg}");
    }
}
