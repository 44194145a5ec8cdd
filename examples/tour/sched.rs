//! Tour section: `posixrt::sched`.

use posixrt::sched::{self, rt, Builder, CpuSet, Policy, Priority};

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    outln!("   priority ranges (sched_get_priority_min/max):");
    for p in [Policy::Fifo, Policy::RoundRobin, Policy::Other] {
        let r = p.priority_range()?;
        outln!("     {:<11} {} to {}", p.name(), r.start(), r.end());
    }
    outln!(
        "   this thread: tid {}, {} (kernel prio: {})",
        sched::gettid(),
        sched::current_scheduling()?,
        sched::kernel_priority(sched::gettid())?
    );

    // A SCHED_FIFO thread whose attributes are set at creation, checked from inside.
    let cpu = CpuSet::allowed()?.iter().last().unwrap_or(0);
    let spawned = Builder::new()
        .name("tour-fifo")
        .scheduling(Priority::fifo(50)?)
        .affinity(CpuSet::single(cpu)?)
        .stack_size(256 * 1024)
        .spawn(|| {
            format!(
                "{} | name {:?} | cpus {} | stack {} KiB | kernel prio {}",
                sched::current_scheduling().map_or("?".into(), |p| p.to_string()),
                sched::current_name().unwrap_or_default(),
                sched::thread_affinity(sched::gettid()).map_or("?".into(), |c| c.to_string()),
                sched::current_stack_size().unwrap_or(0) / 1024,
                sched::kernel_priority(sched::gettid()).map_or("?".into(), |k| k.to_string()),
            )
        });
    match spawned {
        Ok(h) => {
            let tid = h.tid();
            let seen = h.join().map_err(|_| "tour thread panicked")?;
            outln!("   spawned tid {tid} sees itself as: {seen}");
        }
        Err(e) => outln!("   SCHED_FIFO spawn refused: {e}"),
    }

    // The RT checklist, with its report. The heap step is skipped (it retunes malloc
    // for the whole process) and memory is unlocked afterwards, so the rest of the
    // tour is not affected.
    let report = rt::Setup::new().prefault_heap(0).apply();
    for line in report.to_string().lines() {
        outln!("   {line}");
    }
    drop(report);
    let _ = rt::unlock_memory();
    Ok(())
}
