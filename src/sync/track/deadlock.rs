//! The deadlock search over snapshots: cycles of threads waiting on locks held by
//! one another.

use super::record::Kind;
use super::snapshot::{objects, Snapshot};

/// A cycle of threads each waiting for a lock held by the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The threads of the cycle, in order: `threads[i]` waits for `locks[i]`, which is
    /// held by `threads[(i + 1) % len]`.
    pub threads: Vec<u32>,
    /// The addresses of the locks of the cycle (as in [`Info::address`](super::Info::address)).
    pub locks: Vec<usize>,
}

/// Every cycle of threads waiting on mutexes (and rwlock write locks) held by one
/// another, found from the owner and waiter information of the known objects.
///
/// Needs tracking on while the threads block (waiters are recorded only then).
pub fn find_deadlocks() -> Vec<Deadlock> {
    find_deadlocks_in(&objects())
}

/// [`find_deadlocks`] over given snapshots (e.g. read from another process).
pub fn find_deadlocks_in(objects: &[Snapshot]) -> Vec<Deadlock> {
    use std::collections::HashMap;
    // waiter tid -> (lock address, owner tid)
    let mut waits: HashMap<u32, (usize, u32)> = HashMap::new();
    for o in objects {
        if let (true, Some(owner)) = (
            o.info.kind.is_mutex() || o.info.kind == Kind::RwLock,
            o.info.owner,
        ) {
            for &w in &o.waiters {
                waits.insert(w, (o.info.address, owner));
            }
        }
    }
    let mut found: Vec<Deadlock> = Vec::new();
    let mut done: std::collections::HashSet<u32> = std::collections::HashSet::new();
    let mut starts: Vec<u32> = waits.keys().copied().collect();
    starts.sort_unstable();
    for start in starts {
        if done.contains(&start) {
            continue;
        }
        let mut path: Vec<u32> = Vec::new();
        let mut t = start;
        loop {
            if let Some(pos) = path.iter().position(|&p| p == t) {
                let cyc = &path[pos..];
                // Rotate so the smallest tid comes first (one report per cycle).
                let min = cyc
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, &v)| v)
                    .map(|(i, _)| i)
                    .unwrap_or(0);
                let threads: Vec<u32> = cyc[min..].iter().chain(&cyc[..min]).copied().collect();
                let locks = threads.iter().map(|t| waits[t].0).collect();
                let d = Deadlock { threads, locks };
                if !found.contains(&d) {
                    found.push(d);
                }
                break;
            }
            if done.contains(&t) {
                break;
            }
            path.push(t);
            match waits.get(&t) {
                Some(&(_, owner)) => t = owner,
                None => break,
            }
        }
        done.extend(path);
    }
    found
}
