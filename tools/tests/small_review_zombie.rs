//! `tfp -p PID` and `rtstat PID` of a process that has exited but is not reaped
//! yet (a zombie: /proc still shows it) say that it has exited, not that it has
//! no marked thread or never switched tracking on, which would send the user
//! to its code.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn run(exe: &str, args: &[&str]) -> Output {
    Command::new(exe).args(args).output().unwrap()
}

#[test]
fn a_zombie_is_said_to_have_exited() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Not reaped: a zombie once it has exited (bounded wait).
    let t0 = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        if stat[stat.rfind(')').unwrap() + 2..].starts_with('Z') {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{stat}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let p = pid.to_string();
    let tfp = run(env!("CARGO_BIN_EXE_tfp"), &["--no-self", "-p", &p]);
    let rtstat = run(env!("CARGO_BIN_EXE_rtstat"), &[&p]);
    child.wait().unwrap();
    for (o, prog) in [(&tfp, "tfp"), (&rtstat, "rtstat")] {
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{prog}: {o:?}");
        assert!(o.stdout.is_empty(), "{prog}: {o:?}");
        assert_eq!(e.lines().count(), 1, "{prog}: {e}");
        assert!(
            e.starts_with(&format!("{prog}: process {pid} has exited")),
            "{prog}: {e}"
        );
    }
}
