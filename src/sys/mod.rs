//! The private system layer: raw calls that the subsystems share.

pub(crate) mod timer;
