//! Placeholder until this module's benches land.
fn main() {}
