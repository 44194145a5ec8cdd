//! A tour of posixrt: one short section per module.
//!
//! Run it with `cargo run --release --example tour`. Each section lives in its own
//! file beside this one and prints what it shows; a section that cannot run here
//! (no privilege, no io_uring) says why and the tour goes on.

#[macro_use]
#[path = "../support/out.rs"]
mod out;

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
    // A closed pipe (`tour | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("tour");
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
        outln!("\n== posixrt::{name}");
        if let Err(e) = run() {
            outln!("   (section {name} failed: {e})");
            failed += 1;
        }
    }
    if failed > 0 {
        std::process::exit(1);
    }
}
