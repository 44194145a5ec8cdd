//! `tfp -p PID NAME` where PID's path does not end with NAME: the -p process
//! cannot be listed, and --help says such a process is an error (exit 1), so
//! tfp says why instead of printing an empty listing with status 0.

use std::process::{Child, Command, Stdio};

mod common;
use common::{stdout, tfp, wait_registry, NO_MATCH};

/// A marked process (tfp marks its own main thread) that waits; killed on drop.
struct Marked(Child);

impl Marked {
    fn start() -> Marked {
        let c = Command::new(env!("CARGO_BIN_EXE_tfp"))
            .args(["--watch", "1000", NO_MATCH])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_registry(c.id() as i32);
        Marked(c)
    }
    fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_pid_whose_path_does_not_match_the_names_is_an_error() {
    let t = Marked::start();
    let p = t.pid();
    for args in [
        vec!["--no-self", "-p", &p, NO_MATCH],
        vec!["--no-self", "--json", "-p", &p, NO_MATCH, "/also/not/this"],
        vec![
            "--no-self",
            "--watch",
            "0.05",
            "-n",
            "2",
            "-p",
            &p,
            NO_MATCH,
        ],
    ] {
        let o = tfp(&args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {o:?}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with(&format!("tfp: the path of process {p} (\"")),
            "{e}"
        );
        assert!(
            e.contains(&format!("does not end with {NO_MATCH:?}")),
            "{e}"
        );
        assert!(e.contains("; hint: "), "{e}");
    }
    // A NAME its path ends with lists it, as before.
    let o = tfp(&["--no-self", "-p", &p, NO_MATCH, "tfp"]);
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).starts_with(&format!("PID {p:>9} ")), "{o:?}");
    // The help says so.
    let h = stdout(&tfp(&["--help"])).replace(char::is_whitespace, "");
    assert!(h.contains("whosepathdoesnotendwithaNAMEgiven"), "{h}");
}

#[test]
fn one_unmatched_pid_among_matched_ones_is_still_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let a = Marked::start();
    // Another marked process, whose path does not end with "/tfp".
    let dir = std::env::temp_dir().join(format!("tfp-pid-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("other");
    std::fs::copy(env!("CARGO_BIN_EXE_tfp"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spawned = (0..500).find_map(|_| {
        match Command::new(&bin)
            .args(["--watch", "1000", NO_MATCH])
            .stdout(Stdio::null())
            .spawn()
        {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                None
            }
            r => Some(r.unwrap()),
        }
    });
    let b = Marked(spawned.expect("the copy stayed busy"));
    wait_registry(b.0.id() as i32);
    let both = ["--no-self", "-p", &a.pid(), "-p", &b.pid()];
    let o = tfp(&[&both[..], &["/tfp", "/other"]].concat());
    assert!(o.status.success(), "{o:?}");
    let t = stdout(&o);
    assert_eq!(
        t.lines().filter(|l| l.starts_with("PID ")).count(),
        2,
        "{t}"
    );
    let o = tfp(&[&both[..], &["/tfp"]].concat());
    let b_pid = b.pid();
    drop(b);
    let _ = std::fs::remove_dir_all(&dir);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!("tfp: the path of process {b_pid} (\"")),
        "{e}"
    );
}
