//! Review of the SCHED_SPORADIC state machine against POSIX's rules (XSH 2.8.4) and
//! the seed's description: edge cases driven with explicit times, no clock.

use std::time::Duration;

use posixrt::sched::sporadic::{
    Level, Replenishment, SporadicParams, SporadicState, Transition, SS_REPL_MAX,
};

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn p2of10() -> SporadicParams {
    SporadicParams::new(10, ms(10), ms(2), 4)
}

fn repl(at: Duration, amount: Duration) -> Replenishment {
    Replenishment { at, amount }
}

/// Sum of the amounts of every `Scheduled` transition.
fn scheduled_total(ts: &[Transition]) -> Duration {
    ts.iter()
        .map(|t| match t {
            Transition::Scheduled(r) => r.amount,
            _ => Duration::ZERO,
        })
        .sum()
}

/// A late server step that finds an exhaustion (with an overrun) and then a
/// replenishment due inside the overrun window must not charge the overrun twice:
/// the exhaustion's replenishment already gives back all CPU time consumed up to
/// the step, so the time after the replenishment is not consumed again from the
/// new budget (the thread would otherwise get back more than it used).
#[test]
fn a_late_step_does_not_count_the_overrun_twice() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    let mut all = s.block(us(500), us(500)); // 0.5 ms back at 10 ms
    all.extend(s.wake(ms(8), us(500))); // activation 8 ms, 1.5 ms left
                                        // Budget gone at 9.5 ms (CPU 2 ms); the server looks at 10.5 ms, CPU 3 ms.
    all.extend(s.advance(us(10_500), ms(3)));
    // Everything consumed at the normal priority since the start is 3 ms; the
    // replenishments scheduled in all must not exceed it.
    let cpu = ms(3);
    let pending_total: Duration = s.pending().iter().map(|r| r.amount).sum();
    assert!(
        scheduled_total(&all) <= cpu,
        "scheduled {:?} for {:?} of CPU: {all:?}",
        scheduled_total(&all),
        cpu
    );
    assert_eq!(pending_total, us(2500));
    // Lifted at 10 ms with the 0.5 ms replenishment; the CPU time between 10 ms
    // and 10.5 ms was already given back by the exhaustion's replenishment, so the
    // new budget is whole (the old code charged it again: a second exhaustion and
    // a replenishment of 0.5 ms that was never consumed).
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.activation(), Some(ms(10)));
    assert_eq!(s.remaining(cpu), us(500));
    assert_eq!(s.pending(), [repl(ms(18), us(2500))]);
}

/// Budget used exactly to zero when the thread blocks: one exhaustion, one
/// replenishment of the whole budget, low priority, nothing scheduled twice.
#[test]
fn budget_used_exactly_to_zero_then_block() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    let mut t = s.block(ms(2), ms(2));
    t.extend(s.wake(ms(3), ms(2)));
    assert_eq!(scheduled_total(&t), ms(2));
    assert_eq!(s.pending(), [repl(ms(10), ms(2))]);
    assert_eq!(s.level(), Level::Low);
    assert_eq!(s.remaining(ms(2)), Duration::ZERO);
    // Back at 10 ms: full budget, the normal priority, activated then.
    s.advance(ms(10), ms(9));
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.remaining(ms(9)), ms(2));
    assert_eq!(s.activation(), Some(ms(10)));
}

/// A replenishment carried out while the thread is blocked: budget restored, no
/// activation until it wakes, and the wake is the activation.
#[test]
fn a_replenishment_while_blocked_then_wake() {
    let mut s = SporadicState::new(p2of10(), 50, ms(0), ms(0)).unwrap();
    s.advance(ms(2), ms(2)); // exhausted, 2 ms back at 10
    s.wake(ms(3), ms(2)); // not blocked: nothing
    s.block(ms(4), ms(3)); // blocked at low: nothing charged
    assert_eq!(s.pending(), [repl(ms(10), ms(2))]);
    let t = s.advance(ms(10), ms(3));
    assert!(t.contains(&Transition::Replenished {
        amount: ms(2),
        budget: ms(2)
    }));
    assert_eq!(s.activation(), None);
    assert!(s.is_blocked());
    s.wake(ms(12), ms(3));
    assert_eq!(s.activation(), Some(ms(12)));
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.remaining(ms(3)), ms(2));
}

/// max_repl reached with budget left: the remaining budget is kept (not lost) and
/// each replenishment adds exactly its amount (not double-counted).
#[test]
fn max_repl_reached_keeps_the_rest_of_the_budget() {
    let p = SporadicParams::new(10, ms(10), ms(2), 1);
    let mut s = SporadicState::new(p, 50, ms(0), ms(0)).unwrap();
    s.block(us(500), us(500));
    assert_eq!(s.level(), Level::Low);
    assert_eq!(s.remaining(us(500)), us(1500));
    s.wake(ms(1), us(500));
    assert_eq!(s.level(), Level::Low);
    assert_eq!(s.activation(), None);
    // Runs 3 ms at low priority: not charged, no replenishment scheduled.
    s.block(ms(4), us(3500));
    s.wake(ms(5), us(3500));
    assert_eq!(s.pending(), [repl(ms(10), us(500))]);
    s.advance(ms(10), ms(5));
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.remaining(ms(5)), ms(2));
    assert_eq!(s.activation(), Some(ms(10)));
    assert_eq!(s.pending(), []);
}

/// Many short blocks: each one schedules its own consumption; at max_repl the
/// thread drops low with the rest of the budget kept, and each replenishment
/// lifts it back.
#[test]
fn many_short_blocks() {
    let p = SporadicParams::new(10, ms(10), ms(2), SS_REPL_MAX);
    let mut s = SporadicState::new(p, 50, ms(0), ms(0)).unwrap();
    let mut cpu = Duration::ZERO;
    let mut now = Duration::ZERO;
    for i in 0..SS_REPL_MAX as u64 {
        cpu += us(10);
        now += us(100);
        s.block(now, cpu);
        now += us(10);
        s.wake(now, cpu);
        assert_eq!(s.pending().len(), i as usize + 1);
    }
    assert_eq!(s.level(), Level::Low);
    assert_eq!(s.remaining(cpu), ms(2) - us(10) * SS_REPL_MAX as u32);
    let total: Duration = s.pending().iter().map(|r| r.amount).sum();
    assert_eq!(total, us(10) * SS_REPL_MAX as u32);
    // The first replenishment (at 10.0 ms + 0 activation) lifts it back.
    s.advance(ms(10), cpu);
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.pending().len(), SS_REPL_MAX - 1);
    assert_eq!(s.remaining(cpu), ms(2) - us(10) * (SS_REPL_MAX as u32 - 1));
}

/// Parameters at their limits: init_budget == repl_period is valid, so is
/// max_repl 1 and SS_REPL_MAX; above it, 0, and a budget above the period are EINVAL.
#[test]
fn parameters_at_their_limits() {
    for max_repl in [1, SS_REPL_MAX] {
        assert!(SporadicParams::new(10, ms(10), ms(10), max_repl)
            .validate(50)
            .is_ok());
    }
    for p in [
        SporadicParams::new(10, ms(10), ms(10), 0),
        SporadicParams::new(10, ms(10), ms(10), SS_REPL_MAX + 1),
        SporadicParams::new(10, ms(10), ms(11), 1),
        SporadicParams::new(50, ms(10), ms(1), 1),
    ] {
        let e = p.validate(50).unwrap_err();
        assert_eq!(e.kind(), posixrt::ErrorKind::InvalidInput, "{p:?}");
    }
    // Budget == period: a CPU-bound thread exhausts at the period and is
    // replenished at once (at activation + period, already due).
    let p = SporadicParams::new(10, ms(10), ms(10), 1);
    let mut s = SporadicState::new(p, 50, ms(0), ms(0)).unwrap();
    s.advance(ms(10), ms(10));
    assert_eq!(s.level(), Level::Normal);
    assert_eq!(s.remaining(ms(10)), ms(10));
    assert_eq!(s.activation(), Some(ms(10)));
    assert_eq!(s.pending(), []);
}

/// A tiny deterministic generator (no dependency).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Budget is conserved by the rules: what the thread may still use plus what is
/// pending never exceeds `init_budget` plus the overruns reported (an overrun is
/// consumed at the normal priority past the budget and given back too). Driven
/// with random blocks, wakes and late steps; also checks `max_repl` and the order
/// of the pending replenishments.
#[test]
fn budget_is_never_created_by_any_sequence_of_steps() {
    for seed in 0..200u64 {
        let mut g = Lcg(seed);
        let max_repl = 1 + g.below(SS_REPL_MAX as u64) as usize;
        let budget = us(200 + g.below(3000));
        let period = budget + us(g.below(10_000));
        let period = period.max(us(200));
        let p = SporadicParams::new(10, period, budget, max_repl);
        let mut s = SporadicState::new(p, 50, ms(0), ms(0)).unwrap();
        let (mut now, mut cpu) = (Duration::ZERO, Duration::ZERO);
        let mut overrun = Duration::ZERO;
        let mut log = Vec::new();
        for _ in 0..300 {
            let dt = us(g.below(3000));
            now += dt;
            if !s.is_blocked() && g.below(4) != 0 {
                cpu += us(g.below(dt.as_micros() as u64 + 1));
            }
            let t = match g.below(3) {
                0 => s.advance(now, cpu),
                1 => s.block(now, cpu),
                _ => s.wake(now, cpu),
            };
            for tr in &t {
                if let Transition::Exhausted { overrun: o, .. } = tr {
                    overrun += *o;
                }
            }
            log.push((now, cpu, t));
            let pending: Duration = s.pending().iter().map(|r| r.amount).sum();
            assert!(
                s.remaining(cpu) + pending <= budget + overrun,
                "seed {seed}: {:?} + {pending:?} > {budget:?} + {overrun:?}\n{log:#?}",
                s.remaining(cpu)
            );
            assert!(s.pending().len() <= max_repl, "seed {seed}");
            assert!(s.pending().windows(2).all(|w| w[0].at <= w[1].at));
            if s.level() == Level::Normal && !s.is_blocked() {
                assert!(s.activation().is_some(), "seed {seed}");
            }
        }
    }
}
