//! Running a child without real-time privilege (shared by the tests that check
//! an example's refusal message): `#[path = "common/unprivileged.rs"] mod unprivileged;`.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd`'s child lose the privilege to raise its scheduling priority:
/// RLIMIT_RTPRIO 0, CAP_SYS_NICE dropped from the bounding set (best effort: needs
/// CAP_SETPCAP), and, as root, uid/gid nobody (65534) with no groups, which loses
/// it anyway. The binary must be reachable by uid 65534.
pub fn without_rt_privilege(cmd: &mut Command) -> &mut Command {
    // SAFETY: between fork and exec the child only makes async-signal-safe syscalls.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_CAPBSET_DROP, 23, 0, 0, 0);
            if libc::geteuid() == 0
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(65534, 65534, 65534) != 0
                    || libc::setresuid(65534, 65534, 65534) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
