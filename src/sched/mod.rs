//! The `sched` module (under construction).
