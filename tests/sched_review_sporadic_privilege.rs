//! Review of the refusal `Builder::sporadic` gives a process without the
//! privilege for it: the fix its hint names must be enough to spawn the thread.

use std::time::Duration;

use posixrt::sched::rt;
use posixrt::sched::sporadic::SporadicParams;
use posixrt::sched::Builder;
use posixrt::ErrorKind;

#[path = "common/probe.rs"]
mod probe;

const PROBE_ENV: &str = "POSIXRT_SPORADIC_HINT_PROBE";

/// `CAP_SYS_NICE` from `<linux/capability.h>`.
const CAP_SYS_NICE: libc::c_ulong = 23;

fn params() -> SporadicParams {
    let ms = Duration::from_millis;
    SporadicParams::new(10, ms(10), ms(2), 4)
}

/// The limit a refusal says is needed: the `N` of `RLIMIT_RTPRIO >= N`.
fn named_limit(text: &str) -> Option<u32> {
    text.split("RLIMIT_RTPRIO >= ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Runs only inside the child started by the test below (no CAP_SYS_NICE,
/// RLIMIT_RTPRIO soft 0): spawns a sporadic thread and reads the limit the
/// refusal names; where the hard limit allows it, raises the soft one to that
/// and spawns again.
#[test]
#[ignore = "helper: run by a_refused_sporadic_spawn_names_the_limit_that_lets_it_start"]
fn sporadic_hint_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let e = Builder::new()
        .sporadic(params(), 50)
        .spawn(|| ())
        .unwrap_err();
    println!("PROBE first {:?} | {e}", e.kind());
    let Some(n) = named_limit(&e.to_string()) else {
        println!("PROBE named none");
        return;
    };
    println!("PROBE named {n}");
    if rt::rtprio_limit().hard.is_some_and(|h| h < u64::from(n)) {
        println!("PROBE then skip: the hard limit is below {n}");
        return;
    }
    if let Err(e) = rt::raise_rtprio_limit(n) {
        println!("PROBE then raise failed: {e}");
        return;
    }
    match Builder::new().sporadic(params(), 50).spawn(|| ()) {
        Ok(h) => {
            let _ = h.join();
            println!("PROBE then Ok");
        }
        Err(e) => println!("PROBE then {:?} | {e}", e.kind()),
    }
}

/// A sporadic thread needs more than its own priorities: the server thread
/// that enforces its budget runs `SCHED_FIFO` at the top priority, and is
/// started for the first served thread. `Builder::sporadic` creates the thread
/// at its low priority first, so without privilege the refusal named that
/// priority ("SCHED_FIFO priority 10 needs CAP_SYS_NICE or RLIMIT_RTPRIO >=
/// 10", with "call raise_rtprio_limit(10)" where the hard limit allows it).
/// Raising the limit to 10 only moved the refusal on, to the server's 99: the
/// hint named a fix that does not work. The refusal now names the priority
/// the whole setup needs.
#[test]
fn a_refused_sporadic_spawn_names_the_limit_that_lets_it_start() {
    if !rustix::process::geteuid().is_root() {
        return; // dropping CAP_SYS_NICE from the bounding set needs root
    }
    // SAFETY: setrlimit and prctl are async-signal-safe system calls; nothing else
    // runs between fork and exec.
    let out = unsafe {
        probe::run("sporadic_hint_probe", PROBE_ENV, &[], || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            lim.rlim_cur = 0;
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) != 0
                || libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let first = probe::line(&out, "PROBE first");
    assert!(
        first.starts_with(&format!("{:?}", ErrorKind::PermissionDenied)),
        "{first}"
    );
    let named = probe::line(&out, "PROBE named");
    assert_ne!(named, "none", "the refusal names no limit: {first}");
    // The server's priority: a limit below it cannot start the server.
    let top = posixrt::sched::Policy::Fifo.priority_max().unwrap();
    assert!(
        named.parse::<i32>().is_ok_and(|n| n >= top),
        "the refusal names RLIMIT_RTPRIO >= {named}, below the sporadic server's \
         priority {top}: {first}"
    );
    let then = probe::line(&out, "PROBE then");
    assert!(
        then == "Ok" || then.starts_with("skip"),
        "raising RLIMIT_RTPRIO to {named}, as the refusal said, was not enough: {then}"
    );
}
