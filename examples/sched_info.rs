//! Listing 6.4 of the seed: query the scheduling policies and this process's
//! scheduling attributes, then switch to SCHED_RR priority 50 and print the
//! round-robin quantum (listing 6.5 shows the Linux output). The original policy is
//! restored at the end. Without CAP_SYS_NICE (or RLIMIT_RTPRIO >= 50) the switch
//! is refused: the reason goes to standard error, as the listing's `perror`, and the
//! quantum printed is that of the unchanged policy (exit status 0, as the listing).
//!
//! ```sh
//! cargo run --example sched_info
//! ```

use posixrt::sched::{self, Policy, Priority};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

fn main() {
    // A closed pipe (`sched_info | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("sched_info");
    args::Args::new("sched_info", "usage: sched_info\n\nPrints the priority range of each scheduling policy, this process's policy and priority,\nthen switches to SCHED_RR 50, prints the RR quantum and restores the original policy.\nThe switch needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 50; a refusal is reported on stderr.").none();
    if let Err(e) = run() {
        errln!("sched_info: {e}");
        std::process::exit(1);
    }
}

fn run() -> posixrt::Result<()> {
    outln!("Priority ranges of the scheduling policies");
    // Listing 6.4's order (the POSIX policies), then the ones Linux adds.
    for p in [
        Policy::Fifo,
        Policy::RoundRobin,
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Deadline,
    ] {
        let r = p.priority_range()?;
        outln!("{:<15}: {} to {}", p.name(), r.start(), r.end());
    }

    // sched_getscheduler(0) / sched_getparam(0): on Linux, the calling (main) thread.
    let policy = sched::get_scheduler(None)?;
    let prio = sched::get_param(None)?;
    outln!("Current scheduling policy of this process: {policy}");
    outln!("Current priority of this process: {prio}");
    let original = Priority::new(policy, prio);
    // A SCHED_DEADLINE caller has no priority to restore; keep its parameters.
    let original_deadline = sched::deadline::get(sched::gettid())?.deadline_params();

    let rr50 = Priority::round_robin(50)?;
    let switched = match sched::set_scheduler(None, rr50) {
        Ok(former) => {
            outln!(
                "Switched from {former} to {} (now {} {})",
                rr50,
                sched::get_scheduler(None)?,
                sched::get_param(None)?
            );
            true
        }
        Err(e) => {
            // As the listing's perror("SCHED_SETSCHEDULER"): on stderr, and on.
            errln!("sched_info: switch to {rr50} refused: {e}");
            outln!("(still {policy} {prio}; sched_rr_get_interval below reports on that policy)");
            false
        }
    };

    let q = sched::rr_interval(None)?;
    outln!(
        "Round-robin quantum (sched_rr_get_interval): {} s",
        q.as_secs_f64()
    );

    if switched {
        match (original, original_deadline) {
            (_, Some(dl)) => {
                sched::deadline::set(sched::gettid(), &dl)?;
                outln!("Restored {dl}");
            }
            (Ok(p), None) => {
                sched::set_scheduler(None, p)?;
                outln!("Restored {}", sched::current_scheduling()?);
            }
            (Err(e), None) => {
                sched::set_scheduler(None, Priority::other())?;
                outln!("Restored SCHED_OTHER 0 (the original {policy} {prio} is not valid: {e})");
            }
        }
    }
    Ok(())
}
