//! Integration tests for `posixrt::sched::rt::raise_rtprio_limit`: a refusal
//! names the fix with this user's login name.

#[path = "common/probe.rs"]
mod probe;

use posixrt::sched::rt;
use posixrt::ErrorKind;

const PROBE_ENV: &str = "POSIXRT_RT_RTPRIO_PROBE";

/// Runs only in the child of the test below (RLIMIT_RTPRIO 0/0, no
/// CAP_SYS_RESOURCE): asks for 50 and prints the refusal.
#[test]
#[ignore = "helper: run by a_refused_rtprio_raise_names_the_login_in_limits_conf"]
fn rtprio_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let cap = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_RESOURCE)
    });
    if cap {
        // CAP_SYS_RESOURCE could not be dropped (no CAP_SETPCAP): the raise
        // would succeed, and there is no refusal to look at.
        println!("RTPRIOPROBE skip: CAP_SYS_RESOURCE kept");
        return;
    }
    match rt::raise_rtprio_limit(50) {
        Ok(l) => println!("RTPRIOPROBE ok {l}"),
        Err(e) => println!("RTPRIOPROBE {:?} | {e}", e.kind()),
    }
}

/// The limits.conf line must name the user it is for, as the scheduling
/// hints do, not a literal `USER` the reader has to replace.
#[test]
fn a_refused_rtprio_raise_names_the_login_in_limits_conf() {
    // SAFETY: between fork and exec the child only makes async-signal-safe calls.
    let out = unsafe {
        probe::run(
            "rtprio_probe",
            PROBE_ENV,
            &[("USER", "rtprio-probe-user")],
            || {
                let lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // CAP_SYS_RESOURCE (24) out of the bounding set, so that even
                // root cannot raise the hard limit again (best effort: needs
                // CAP_SETPCAP; a process without that lacks CAP_SYS_RESOURCE too).
                libc::prctl(libc::PR_CAPBSET_DROP, 24, 0, 0, 0);
                Ok(())
            },
        )
    };
    let line = probe::line(&out, "RTPRIOPROBE");
    if line.starts_with("skip") {
        println!("{line}");
        return;
    }
    assert!(
        line.starts_with(&format!("{:?} |", ErrorKind::PermissionDenied)),
        "{line}"
    );
    assert!(
        line.contains("`rtprio-probe-user - rtprio 50` to /etc/security/limits.conf"),
        "{line}"
    );
}
