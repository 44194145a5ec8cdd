//! Tour section: `posixrt::mark`.

use std::sync::mpsc;

use posixrt::mark;

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    mark::set("tour: mark section")?;
    mark::write_raw(0, b"raw block")?;
    let (release, wait) = mpsc::channel::<()>();
    let (ready_tx, ready) = mpsc::channel::<()>();
    let worker = mark::spawn_named("tour worker", move || {
        let _ = mark::update("tour worker: waiting");
        let _ = ready_tx.send(());
        let _ = wait.recv();
    })?;
    ready.recv()?;
    if let Some(path) = mark::registry_path() {
        outln!("   this process's marks live in {}", path.display());
    }
    let me = std::process::id() as i32;
    let snap = mark::snapshot_pid(me)?;
    for p in &snap.processes {
        outln!("   PID {:>9} \"{}\"", p.pid, p.exe);
        for t in &p.threads {
            outln!(
                "   TID {:>9} {:<5} {:>3} {:>3} {}",
                t.tid,
                t.sched.policy_short(),
                t.sched.rt_priority,
                t.sched.nice,
                t.marker
            );
        }
    }
    drop(release);
    let _ = worker.join();
    mark::clear();
    let after = mark::snapshot_pid(me)?;
    outln!(
        "   after the worker exited and main cleared its mark: {} marked thread(s) here",
        after.threads().count()
    );
    outln!("   (run `tfp` from another terminal while a program marks its threads)");
    Ok(())
}
