//! The `trace` module (under construction).
