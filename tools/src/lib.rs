//! Shared helpers for the posixrt command-line tools (`tfp`, `rtrace`, `rtstat`).
//!
//! Each tool is one file in `src/bin/`; put code that two tools share here. JSON
//! output goes through `serde_json`, so every string is escaped whatever it holds.

#![deny(unsafe_op_in_unsafe_fn)]
