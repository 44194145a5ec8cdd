//! A tour of posixrt: one short section per module.
//!
//! Run it with `cargo run --release --example tour`. Each section lives in its own
//! file beside this one and prints what it shows; a section that cannot run here
//! (no privilege, no io_uring) says why and the tour goes on.

mod advise;
mod aio;
#[path = "../support/args.rs"]
mod args;
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
    args::Args::new(
        "tour",
        "usage: tour\n\nRuns one short section per posixrt module and prints what each shows.",
    )
    .none();
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
