//! The `mark` module (under construction).
