//! A tour of posixrt: one short section per module.
//!
//! Run it with `cargo run --release --example tour`. Each section lives in its own
//! file beside this one.

fn main() {
    println!("posixrt tour");
}
