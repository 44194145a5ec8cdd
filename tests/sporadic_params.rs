//! Integration tests for the `SCHED_SPORADIC` parameters: POSIX's validity rules
//! for `sched_ss_low_priority`, `sched_ss_repl_period`, `sched_ss_init_budget` and
//! `sched_ss_max_repl` (EINVAL with a hint), and this implementation's own limits.
//! No thread is served here.

use std::time::Duration;

use posixrt::sched::sporadic::{self, SporadicParams, SporadicState, SS_REPL_MAX};
use posixrt::sched::{self, Builder, Policy, Priority};
use posixrt::ErrorKind;

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// 2 ms every 10 ms, low priority 10, up to 4 pending replenishments.
fn p2of10() -> SporadicParams {
    SporadicParams::new(10, ms(10), ms(2), 4)
}

fn invalid(p: SporadicParams, normal: i32, says: &str) {
    let e = p.validate(normal).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(e.errno(), Some(libc::EINVAL));
    assert!(e.hint().is_some_and(|h| !h.is_empty()), "no hint: {e}");
    assert!(e.to_string().contains(says), "{e} should say {says:?}");
    // The state machine refuses them too.
    assert_eq!(
        SporadicState::new(p, normal, ms(0), ms(0))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn invalid_parameters_are_refused_with_a_hint() {
    let ok = p2of10();
    ok.validate(50).unwrap();
    invalid(
        SporadicParams {
            init_budget: ms(11),
            ..ok
        },
        50,
        "exceeds sched_ss_repl_period",
    );
    invalid(
        SporadicParams {
            init_budget: ms(0),
            ..ok
        },
        50,
        "sched_ss_init_budget is zero",
    );
    invalid(
        SporadicParams { max_repl: 0, ..ok },
        50,
        "sched_ss_max_repl 0",
    );
    invalid(
        SporadicParams {
            max_repl: SS_REPL_MAX + 1,
            ..ok
        },
        50,
        "sched_ss_max_repl",
    );
    invalid(ok, 10, "is not below sched_priority");
    invalid(ok, 5, "is not below sched_priority");
    invalid(
        SporadicParams {
            low_priority: 0,
            ..ok
        },
        50,
        "sched_ss_low_priority 0 is outside SCHED_FIFO's range",
    );
    invalid(ok, 100, "sched_priority 100 is outside");
    invalid(
        SporadicParams {
            repl_period: us(50),
            init_budget: us(10),
            ..ok
        },
        50,
        "sched_ss_repl_period",
    );
    // Budget == period and max_repl == SS_REPL_MAX are allowed.
    SporadicParams {
        init_budget: ms(10),
        max_repl: SS_REPL_MAX,
        ..ok
    }
    .validate(50)
    .unwrap();
}

#[test]
fn builder_refuses_invalid_sporadic_parameters_before_creating_a_thread() {
    let bad = SporadicParams {
        init_budget: ms(20),
        ..p2of10()
    };
    let e = Builder::new().sporadic(bad, 50).spawn(|| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = Builder::new()
        .sporadic(p2of10(), 50)
        .scheduling(Priority::other())
        .spawn(|| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

/// The server thread runs at the top `SCHED_FIFO` priority. A served thread at that
/// same priority is never preempted by it (equal FIFO priorities do not preempt), so
/// on a shared CPU its budget would never be enforced: such a normal priority is
/// refused, by `validate`, `serve` and `Builder::sporadic` alike.
#[test]
fn a_normal_priority_equal_to_the_servers_is_refused() {
    let top = Policy::Fifo.priority_max().unwrap();
    let p = SporadicParams {
        low_priority: top - 1,
        ..p2of10()
    };
    invalid(p, top, "sporadic server");
    let e = sporadic::serve(sched::gettid(), p, top).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let e = Builder::new().sporadic(p, top).spawn(|| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // One below the server is allowed.
    SporadicParams {
        low_priority: top - 2,
        ..p2of10()
    }
    .validate(top - 1)
    .unwrap();
}
