//! The `advise` module (under construction).
