//! A tour of posixrt: one short section per module.
//!
//! Run it with `cargo run --release --example tour`. Each section lives in its own
//! file beside this one and prints what it shows; a section that cannot run here
//! (no privilege, no io_uring) says why and the tour goes on.

mod advise;
mod aio;
mod mark;
mod sched;
mod sync;
mod trace;

type Section = fn() -> Result<(), Box<dyn std::error::Error>>;

fn main() {
    // `tour | head` ends quietly instead of a panic in println!.
    // SAFETY: restores the default disposition of SIGPIPE; no handler is involved
    // and no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    const USAGE: &str =
        "usage: tour\n\nRuns one short section per posixrt module and prints what each shows.";
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return;
        }
        eprintln!("tour: unknown argument {arg:?}\n{USAGE}");
        std::process::exit(2);
    }
    let sections: [(&str, Section); 6] = [
        ("sched", sched::run),
        ("sync", sync::run),
        ("aio", aio::run),
        ("trace", trace::run),
        ("advise", advise::run),
        ("mark", mark::run),
    ];
    let mut failed = 0;
    for (name, run) in sections {
        println!("\n== posixrt::{name}");
        if let Err(e) = run() {
            println!("   (section {name} failed: {e})");
            failed += 1;
        }
    }
    if failed > 0 {
        std::process::exit(1);
    }
}
