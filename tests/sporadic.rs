//! Integration tests for `posixrt::sched::sporadic`.
//!
//! The POSIX rules are checked on `SporadicState` with made-up times (no clock, no
//! timing). One real test puts a pinned, bounded CPU-bound thread under the server
//! and asserts the states it goes through (priority switched to low, back to normal,
//! counters, trace events), never how long anything took.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use posixrt::sched::sporadic::{
    self, Level, Replenishment, SporadicParams, SporadicState, Transition, SS_REPL_MAX,
};
use posixrt::sched::{self, Builder, CpuSet, Priority};
use posixrt::ErrorKind;

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// 2 ms every 10 ms, low priority 10, up to 4 pending replenishments; normal 50.
/// CPU-bound until `stop`, bounded in time (3 s) whatever happens to the server.
fn spin_until(stop: &AtomicBool) {
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(3) {
        std::hint::spin_loop();
    }
}

fn p2of10() -> SporadicParams {
    SporadicParams::new(10, ms(10), ms(2), 4)
}

fn repl(at: Duration, amount: Duration) -> Replenishment {
    Replenishment { at, amount }
}

use Transition::{Exhausted, Replenished, Scheduled, Switched};

#[path = "common/caps.rs"]
mod caps;
#[path = "common/probe.rs"]
mod probe;
use caps::{can_rt, wait_for};

// ---------- replenishment amounts and times ----------

#[test]
fn cpu_bound_thread_gets_its_budget_each_period() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.activation(), Some(ms(0)));
    assert_eq!(s.cpu_deadline(), Some(ms(2)));

    // Half-way: nothing happens, half the budget is left.
    assert_eq!(s.advance(ms(1), ms(1)), []);
    assert_eq!(s.remaining(ms(1)), ms(1));

    // Spent: demoted, the 2 ms consumed since activation 0 come back at 0 + 10 ms.
    assert_eq!(
        s.advance(ms(2), ms(2)),
        [
            Exhausted {
                consumed: ms(2),
                overrun: ms(0)
            },
            Switched(Level::Low),
            Scheduled(repl(ms(10), ms(2))),
        ]
    );
    assert_eq!(s.level(), Level::Low);
    assert_eq!(s.activation(), None);
    assert_eq!(s.remaining(ms(2)), ms(0));
    assert_eq!(s.pending(), [repl(ms(10), ms(2))]);
    assert_eq!(s.next_wakeup(ms(2), ms(2)), Some(ms(10)));

    // Not yet due.
    assert_eq!(s.advance(ms(10) - us(1), ms(2)), []);
    // Due: full budget, back to the normal priority, activated at 10 ms.
    assert_eq!(
        s.advance(ms(10), ms(2)),
        [
            Replenished {
                amount: ms(2),
                budget: ms(2)
            },
            Switched(Level::Normal),
        ]
    );
    assert_eq!(s.activation(), Some(ms(10)));
    assert_eq!(s.pending(), []);
    assert_eq!(s.cpu_deadline(), Some(ms(4)));

    // Second period: the next replenishment is at 10 + 10 ms.
    let t = s.advance(ms(12), ms(4));
    assert_eq!(t[2], Scheduled(repl(ms(20), ms(2))));
}

#[test]
fn a_late_server_step_activates_at_the_replenishment_time() {
    // The server saw the replenishment due at 10 ms only at 10.3 ms: the thread is
    // activated at 10 ms, as a kernel would have done, so periods do not drift.
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    s.advance(ms(2), ms(2));
    s.advance(us(10_300), ms(2));
    assert_eq!(s.activation(), Some(ms(10)));
    let t = s.advance(us(12_300), ms(4));
    assert!(t.contains(&Scheduled(repl(ms(20), ms(2)))), "{t:?}");
}

#[test]
fn an_overrun_is_reported_and_the_budget_is_capped() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    // The step that saw the exhaustion came 50 us of CPU late.
    let t = s.advance(us(2_050), us(2_050));
    assert_eq!(
        t[0],
        Exhausted {
            consumed: us(2_050),
            overrun: us(50)
        }
    );
    // POSIX: the amount is what was consumed since activation...
    assert_eq!(s.pending(), [repl(ms(10), us(2_050))]);
    // ...but the budget never exceeds sched_ss_init_budget.
    let t = s.advance(ms(10), us(2_050));
    assert_eq!(
        t[0],
        Replenished {
            amount: us(2_050),
            budget: ms(2)
        }
    );
    assert_eq!(s.remaining(us(2_050)), ms(2));
}

#[test]
fn time_at_the_low_priority_is_not_charged() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    s.advance(ms(2), ms(2));
    // Runs 3 ms of CPU at the low priority (nothing else wanted the CPU).
    assert_eq!(s.advance(ms(9), ms(5)), []);
    s.advance(ms(10), ms(5));
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.remaining(ms(5)), ms(2));
    assert_eq!(s.cpu_deadline(), Some(ms(7)));
}

#[test]
fn preemption_at_the_normal_priority_charges_only_cpu_time() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    // 5 ms of wall time, but a higher-priority thread took 4 of them.
    assert_eq!(s.advance(ms(5), ms(1)), []);
    assert_eq!(s.remaining(ms(1)), ms(1));
    assert_eq!(s.level(), Level::Normal);
    // The earliest the budget can run out is 1 ms of wall time away.
    assert_eq!(s.next_wakeup(ms(5), ms(1)), Some(ms(6)));
}

#[test]
fn a_replenishment_already_due_is_carried_out_at_once() {
    // Activated at 0 but preempted until 15 ms; the budget runs out at 17 ms, after
    // activation + period (10 ms): the replenishment is carried out immediately and
    // the thread is activated again then.
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    assert_eq!(
        s.advance(ms(17), ms(2)),
        [
            Exhausted {
                consumed: ms(2),
                overrun: ms(0)
            },
            Switched(Level::Low),
            Scheduled(repl(ms(10), ms(2))),
            Replenished {
                amount: ms(2),
                budget: ms(2)
            },
            Switched(Level::Normal),
        ]
    );
    assert_eq!(s.pending(), []);
    assert_eq!(s.activation(), Some(ms(17)));
}

#[test]
fn a_replenishment_while_running_extends_the_budget_and_keeps_the_activation() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    s.block(ms(1), ms(1)); // 1 ms consumed, back at 10 ms
    s.wake(ms(9), ms(1)); // activation 9 ms, 1 ms left
    assert_eq!(s.activation(), Some(ms(9)));
    // At 10 ms it has used 0.5 ms more: 0.5 ms left + 1 ms back = 1.5 ms.
    let t = s.advance(ms(10), us(1_500));
    assert_eq!(
        t,
        [Replenished {
            amount: ms(1),
            budget: us(1_500)
        }]
    );
    assert_eq!(s.activation(), Some(ms(9)));
    assert_eq!(s.cpu_deadline(), Some(ms(3)));
    // Exhausted at CPU 3 ms: 2 ms consumed since the activation at 9 ms.
    let t = s.advance(us(11_500), ms(3));
    assert_eq!(
        t[0],
        Exhausted {
            consumed: ms(2),
            overrun: ms(0)
        }
    );
    assert_eq!(s.pending(), [repl(ms(19), ms(2))]);
}

// ---------- blocking ----------

#[test]
fn a_thread_that_blocks_half_way_through_its_budget() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    // Runs 1 ms, then blocks: 1 ms charged, 1 ms comes back at 0 + 10 ms; it keeps
    // the normal priority (budget left, 1 of 4 replenishments pending).
    assert_eq!(s.block(ms(1), ms(1)), [Scheduled(repl(ms(10), ms(1)))]);
    assert!(s.is_blocked());
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.remaining(ms(1)), ms(1));
    assert_eq!(s.activation(), None);
    assert_eq!(s.cpu_deadline(), None, "no budget timer while blocked");

    // Wakes at 4 ms: a new activation.
    assert_eq!(s.wake(ms(4), ms(1)), []);
    assert_eq!(s.activation(), Some(ms(4)));
    // Spends the other half: the second chunk comes back at 4 + 10 ms.
    assert_eq!(
        s.advance(ms(5), ms(2)),
        [
            Exhausted {
                consumed: ms(1),
                overrun: ms(0)
            },
            Switched(Level::Low),
            Scheduled(repl(ms(14), ms(1))),
        ]
    );
    assert_eq!(s.pending(), [repl(ms(10), ms(1)), repl(ms(14), ms(1))]);

    // 10 ms: half the budget back, normal priority, activated at 10 ms.
    let t = s.advance(ms(10), ms(2));
    assert_eq!(
        t,
        [
            Replenished {
                amount: ms(1),
                budget: ms(1)
            },
            Switched(Level::Normal)
        ]
    );
    assert_eq!(s.activation(), Some(ms(10)));
    // Still running at 14 ms (0.5 ms used): the second half comes back, capped at 2.
    let t = s.advance(ms(14), us(2_500));
    assert_eq!(
        t,
        [Replenished {
            amount: ms(1),
            budget: us(1_500)
        }]
    );
}

#[test]
fn a_replenishment_while_blocked_decides_the_priority_it_wakes_at() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    s.advance(ms(2), ms(2)); // exhausted
    assert_eq!(
        s.block(ms(3), ms(3)),
        [],
        "low-priority time is not charged"
    );
    assert_eq!(s.level(), Level::Low);
    // Replenished while blocked: it must wake at the normal priority...
    assert_eq!(
        s.advance(ms(10), ms(3)),
        [
            Replenished {
                amount: ms(2),
                budget: ms(2)
            },
            Switched(Level::Normal)
        ]
    );
    // ...but it is not active until it wakes.
    assert_eq!(s.activation(), None);
    assert_eq!(s.wake(ms(12), ms(3)), []);
    assert_eq!(s.activation(), Some(ms(12)));
}

#[test]
fn block_and_wake_are_idempotent() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    assert_eq!(s.wake(ms(1), ms(1)), [], "not blocked: nothing to do");
    s.block(ms(1), ms(1));
    assert_eq!(s.block(ms(2), ms(1)), []);
    assert_eq!(s.pending().len(), 1);
}

// ---------- max_repl ----------

#[test]
fn max_repl_pending_replenishments_drop_the_thread_to_low_priority() {
    // Budget 4 ms, at most 2 pending replenishments.
    let p = SporadicParams::new(10, ms(10), ms(4), 2);
    let mut s = SporadicState::new(p, 50, ms(0), ms(0)).unwrap();
    s.block(ms(1), ms(1)); // pending 1
    s.wake(ms(2), ms(1));
    // The second block fills max_repl: budget is left (2 ms), but the thread must
    // run at the low priority.
    assert_eq!(
        s.block(ms(3), ms(2)),
        [Scheduled(repl(ms(12), ms(1))), Switched(Level::Low)]
    );
    assert_eq!(s.pending().len(), 2);
    assert_eq!(s.remaining(ms(2)), ms(2));
    // It wakes at the low priority: no activation, nothing charged.
    assert_eq!(s.wake(ms(4), ms(2)), []);
    assert_eq!((s.level(), s.activation()), (Level::Low, None));
    assert_eq!(s.advance(ms(9), ms(6)), []);
    assert_eq!(s.remaining(ms(6)), ms(2));
    // The first replenishment frees a slot: normal priority again, activated at 10.
    assert_eq!(
        s.advance(ms(10), ms(6)),
        [
            Replenished {
                amount: ms(1),
                budget: ms(3)
            },
            Switched(Level::Normal)
        ]
    );
    assert_eq!(s.activation(), Some(ms(10)));
    assert_eq!(s.pending(), [repl(ms(12), ms(1))]);
}

#[test]
fn pending_replenishments_never_exceed_max_repl() {
    for max_repl in 1..=SS_REPL_MAX {
        let p = SporadicParams::new(10, ms(100), ms(50), max_repl);
        let mut s = SporadicState::new(p, 50, ms(0), ms(0)).unwrap();
        let (mut now, mut cpu) = (ms(0), ms(0));
        // Many short bursts, each ending in a block.
        for _ in 0..40 {
            now += ms(1);
            cpu += us(100);
            s.advance(now, cpu);
            s.block(now, cpu);
            assert!(s.pending().len() <= max_repl, "max_repl {max_repl}");
            now += ms(1);
            s.wake(now, cpu);
        }
        assert_eq!(s.pending().len(), max_repl);
        assert_eq!(s.level(), Level::Low);
        // Only the first max_repl bursts were charged (the rest ran at low).
        assert_eq!(s.remaining(cpu), ms(50) - us(100) * max_repl as u32);
    }
}

// ---------- no limit: Duration::MAX never overflows ----------

/// A `Duration::MAX` period and budget mean "no limit": every deadline saturates
/// (the old code panicked with "overflow when adding durations").
#[test]
fn an_endless_period_and_budget_saturate_instead_of_overflowing() {
    let p = SporadicParams::new(10, Duration::MAX, Duration::MAX, 4);
    let mut s = SporadicState::new(p, 50, ms(5), ms(5)).unwrap();
    assert_eq!(s.cpu_deadline(), Some(Duration::MAX));
    assert_eq!(s.next_wakeup(ms(5), ms(5)), Some(Duration::MAX));
    assert_eq!(s.remaining(ms(7)), Duration::MAX - ms(2));
    // Blocking after 2 ms schedules the chunk at activation + MAX: never.
    let t = s.block(ms(8), ms(7));
    assert_eq!(t, [Scheduled(repl(Duration::MAX, ms(2)))]);
    assert_eq!(s.pending(), [repl(Duration::MAX, ms(2))]);
    let t = s.wake(ms(9), ms(7));
    assert!(t.is_empty(), "{t:?}");
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.next_wakeup(ms(9), ms(7)), Some(Duration::MAX));
    // i64::MAX seconds, the largest C timespec, likewise.
    let big = Duration::from_secs(i64::MAX as u64);
    let p = SporadicParams::new(10, big, big, 1);
    let mut s = SporadicState::new(p, 50, big, big).unwrap();
    assert_eq!(s.cpu_deadline(), Some(big + big));
    assert_eq!(s.next_wakeup(big, big), Some(big + big));
    let t = s.advance(big, big + ms(1));
    assert!(t.is_empty(), "{t:?}");
}

// ---------- the real server ----------

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn the_server_switches_a_cpu_bound_thread_between_its_priorities() {
    let _g = serial();
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    // 2 ms every 50 ms: the thread spends most of each period at the low priority.
    let params = SporadicParams::new(10, ms(50), ms(2), 4);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let spawn = Builder::new()
        .name("ss-served")
        .affinity(CpuSet::single(cpu).unwrap())
        .sporadic(params, 50)
        .spawn(move || {
            spin_until(&stop2);
        });
    if !can_rt() {
        let e = spawn.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        assert!(e.hint().is_some_and(|h| h.contains("CAP_SYS_NICE")), "{e}");
        return;
    }
    let h = spawn.unwrap();
    sporadic::set_server_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
    let tid = h.tid();
    let served = h.sporadic().expect("a sporadic handle");
    assert_eq!(served.tid(), tid);
    assert_eq!(served.params(), params);

    let low = Priority::fifo(10).unwrap();
    let normal = Priority::fifo(50).unwrap();
    // Exhausted: the server drops it to the low priority and schedules the chunk.
    assert!(
        wait_for(Duration::from_secs(2), || sched::thread_scheduling(tid)
            .is_ok_and(|p| p == low)),
        "never dropped to the low priority: {:?}",
        sched::thread_scheduling(tid)
    );
    let st = served.stats();
    assert!(st.exhaustions >= 1, "{st:?}");
    let pending = h.pending_replenishments();
    assert!(!pending.is_empty(), "a replenishment is pending");
    assert!(pending.iter().all(|r| r.amount >= ms(2)), "{pending:?}");
    // Replenished: back to the normal priority with budget.
    assert!(
        wait_for(Duration::from_secs(2), || sched::thread_scheduling(tid)
            .is_ok_and(|p| p == normal)),
        "never replenished"
    );
    assert!(served.stats().replenishments >= 1);
    assert!(h.remaining_budget().is_some());
    assert_eq!(served.last_error(), None);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
}

/// The server thread survives a `Duration::MAX` period and budget: the old code
/// panicked in it ("overflow when adding durations"), so a thread served after it
/// was never demoted.
#[test]
fn the_server_survives_an_endless_period_and_keeps_serving() {
    let _g = serial();
    if !can_rt() {
        return;
    }
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spin = |name: &str| {
        let stop = Arc::clone(&stop);
        Builder::new()
            .name(name)
            .affinity(CpuSet::single(cpu).unwrap())
            .spawn(move || {
                let t0 = Instant::now();
                while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(3) {
                    std::thread::sleep(us(200));
                    let t1 = Instant::now();
                    while t1.elapsed() < ms(1) {
                        std::hint::spin_loop();
                    }
                }
            })
            .unwrap()
    };
    let a = spin("ss-endless");
    let b = spin("ss-bounded");
    let endless = SporadicParams::new(10, Duration::MAX, Duration::MAX, 4);
    let sa = sporadic::serve_handle(&a, endless, 50).unwrap();
    // Served after it: 1 ms every 50 ms, so it is soon exhausted.
    let sb = sporadic::serve_handle(&b, SporadicParams::new(10, ms(50), ms(1), 4), 50).unwrap();
    let low = Priority::fifo(10).unwrap();
    assert!(
        wait_for(Duration::from_secs(2), || sched::thread_scheduling(b.tid())
            .is_ok_and(|p| p == low)),
        "the server stopped serving after the endless thread"
    );
    assert!(sched::thread_scheduling(sporadic::server_tid().unwrap()).is_ok());
    assert_eq!(sa.level(), Level::Normal);
    // Published in u64 nanoseconds: about 584 years at most.
    assert!(sa.remaining_budget().unwrap() > Duration::from_secs(1 << 33));
    assert_eq!(sa.stats().exhaustions, 0);
    assert_eq!(sa.last_error(), None);
    stop.store(true, Ordering::Relaxed);
    drop((sa, sb));
    a.join().unwrap();
    b.join().unwrap();
}

#[test]
fn an_existing_thread_is_served_by_tid_and_reports_trace_events() {
    use posixrt::trace::{Trace, TraceAttr};
    let _g = serial();
    if !can_rt() {
        let e = sporadic::serve(sched::gettid(), p2of10(), 50).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .affinity(CpuSet::single(cpu).unwrap())
        .spawn(move || {
            let _ = go_rx.recv();
            let t0 = Instant::now();
            while !stop2.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(3) {
                // Mostly CPU-bound, with a declared block now and then.
                let t1 = Instant::now();
                while t1.elapsed() < ms(1) {
                    std::hint::spin_loop();
                }
                sporadic::blocking(|| std::thread::sleep(us(200)));
            }
        })
        .unwrap();
    sporadic::set_server_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
    let trace = Trace::create(&TraceAttr::new()).unwrap();
    trace.start().unwrap();
    let served = sporadic::serve_handle(&h, SporadicParams::new(10, ms(40), ms(3), 4), 50).unwrap();
    // Serving it twice is refused.
    let again = sporadic::serve(h.tid(), p2of10(), 50).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::Busy);
    assert_eq!(
        sched::thread_scheduling(h.tid()).unwrap(),
        Priority::fifo(50).unwrap()
    );
    go_tx.send(()).unwrap();
    let tid = h.tid();
    assert!(
        wait_for(Duration::from_secs(2), || served.stats().replenishments
            >= 2),
        "{:?}",
        served.stats()
    );
    trace.stop().unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let st = served.stats();
    assert!(st.exhaustions >= 1 && st.switches >= 2, "{st:?}");
    drop(served);

    let names: Vec<String> = trace
        .events()
        .filter(|e| e.id.is_system())
        .filter(|e| e.data.len() >= 4 && e.data[..4] == tid.as_raw().to_le_bytes())
        .filter_map(|e| trace.eventid_name(e.id).ok())
        .collect();
    for want in [
        "sched_ss_exhausted",
        "sched_ss_replenished",
        "sched_ss_switch",
    ] {
        assert!(names.iter().any(|n| n == want), "no {want} in {names:?}");
    }
}

#[test]
fn a_spawned_sporadic_thread_stays_served_when_its_handle_is_dropped() {
    let _g = serial();
    if !can_rt() {
        return; // the refusal is asserted by the test above
    }
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    sporadic::set_server_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .affinity(CpuSet::single(cpu).unwrap())
        .sporadic(SporadicParams::new(10, ms(50), ms(2), 4), 50)
        .spawn(move || {
            spin_until(&stop2);
            let _ = done_tx.send(());
        })
        .unwrap();
    let tid = h.tid();
    drop(h); // detached
             // Served still: demoted, replenished, demoted again (an unserved thread would
             // stay at whichever priority it had).
    for (prio, what) in [(10, "demoted"), (50, "replenished"), (10, "demoted again")] {
        assert!(
            wait_for(Duration::from_secs(2), || sched::thread_scheduling(tid)
                .is_ok_and(|p| p == Priority::fifo(prio).unwrap())),
            "the detached thread was not {what}: the server dropped it"
        );
    }
    stop.store(true, Ordering::Relaxed);
    done_rx.recv_timeout(Duration::from_secs(5)).unwrap();
}

#[test]
fn the_server_events_are_system_events() {
    use posixrt::trace::{catalog, EventSet, FillWhat};
    let mut system = EventSet::empty();
    system.fill(FillWhat::System);
    for ev in [
        &catalog::SCHED_SS_EXHAUSTED,
        &catalog::SCHED_SS_REPLENISHED,
        &catalog::SCHED_SS_SWITCH,
    ] {
        let id = ev.id().unwrap();
        assert!(id.is_system() && system.contains(id), "{id:?}");
    }
}

// ---------- without privilege ----------

const PROBE_ENV: &str = "POSIXRT_SPORADIC_UNPRIV_PROBE";

/// Runs only inside the unprivileged child started by the test below.
#[test]
#[ignore = "helper: run by without_privilege_serving_is_permission_denied_with_hint"]
fn unprivileged_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    assert!(!can_rt(), "the probe must run without CAP_SYS_NICE");
    let e = sporadic::serve(sched::gettid(), p2of10(), 50).unwrap_err();
    println!("PROBE serve: {:?} {}", e.kind(), e);
    let e = Builder::new()
        .sporadic(p2of10(), 50)
        .spawn(|| ())
        .unwrap_err();
    println!("PROBE spawn: {:?} {}", e.kind(), e);
}

/// `CAP_SYS_NICE` from `<linux/capability.h>`.
const CAP_SYS_NICE: libc::c_ulong = 23;

#[test]
fn without_privilege_serving_is_permission_denied_with_hint() {
    if !rustix::process::geteuid().is_root() {
        return; // dropping CAP_SYS_NICE from the bounding set needs root
    }
    // SAFETY: setrlimit and prctl are async-signal-safe system calls; nothing else
    // runs between fork and exec.
    let stdout = unsafe {
        probe::run("unprivileged_probe", PROBE_ENV, &[], || {
            let zero = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &zero) != 0
                || libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("PROBE ")).collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for l in lines {
        assert!(l.contains("PermissionDenied"), "{l}");
        assert!(l.contains("CAP_SYS_NICE"), "{l}");
        assert!(l.contains("RLIMIT_RTPRIO"), "{l}");
    }
}

/// A call inside `sporadic::blocking` that panics, caught by the served thread,
/// must still tell the server the thread woke up. The old code sent `Wake` only
/// after `f` returned: on unwind the server kept the thread "blocked" for good, so
/// it never armed the budget timers again and the thread ran at its normal
/// priority without any budget.
#[test]
fn a_panic_inside_blocking_still_wakes_the_thread_for_the_server() {
    let _g = serial();
    quiet_expected_panic("the blocking call failed");
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let spawn = Builder::new()
        .name("ss-blockpanic")
        .affinity(CpuSet::single(cpu).unwrap())
        .sporadic(SporadicParams::new(10, ms(50), ms(2), 4), 50)
        .spawn(move || {
            let r = std::panic::catch_unwind(|| {
                sporadic::blocking(|| panic!("the blocking call failed"))
            });
            assert!(r.is_err());
            spin_until(&stop2);
        });
    if !can_rt() {
        let e = spawn.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    let h = spawn.unwrap();
    sporadic::set_server_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
    let tid = h.tid();
    let low = Priority::fifo(10).unwrap();
    let demoted = wait_for(Duration::from_secs(2), || {
        sched::thread_scheduling(tid).is_ok_and(|p| p == low)
    });
    let st = h.sporadic().unwrap().stats();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert!(
        demoted && st.exhaustions >= 1,
        "the thread was never demoted after a panic in blocking(): {st:?}"
    );
}

/// The server thread cannot serve itself: refused (InvalidInput), its own
/// top priority untouched, and nothing left marked as served.
#[test]
fn the_server_cannot_be_served() {
    let _g = serial();
    if !can_rt() {
        let e = sporadic::serve(sched::gettid(), p2of10(), 50).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    let srv = sporadic::server_tid().unwrap();
    let before = sched::thread_scheduling(srv).unwrap();
    let e = sporadic::serve(srv, p2of10(), 50).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(sched::thread_scheduling(srv).unwrap(), before);
    // Not left in the served set: a second try gives the same answer.
    let e = sporadic::serve(srv, p2of10(), 50).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}
