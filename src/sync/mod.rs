//! The `sync` module (under construction).
