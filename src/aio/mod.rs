//! The `aio` module (under construction).
