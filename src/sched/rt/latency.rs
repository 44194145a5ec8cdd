//! The CPU wake-up latency limit and the timer slack of the real-time setup
//! ([`super::Setup`] holds and sets them; re-exported from `rt`).

use std::fs::File;
use std::io::Write;

use crate::{Error, Result};

// ---------------- /dev/cpu_dma_latency ----------------

/// Holds a CPU wake-up latency limit (`/dev/cpu_dma_latency`, PM QoS) for as long as
/// it lives: with 0 µs, CPUs stay out of idle states whose exit takes longer. Dropping
/// it closes the file and the limit goes away.
///
/// # References
///  - [PM QoS interface](https://docs.kernel.org/power/pm_qos_interface.html)
#[derive(Debug)]
pub struct CpuDmaLatency {
    _file: File,
    micros: i32,
}

impl CpuDmaLatency {
    /// Opens `/dev/cpu_dma_latency` and writes `micros` (a binary `s32`). Needs write
    /// access to the device (root by default); otherwise `PermissionDenied` with a hint.
    pub fn hold(micros: i32) -> Result<CpuDmaLatency> {
        if micros < 0 {
            return Err(Error::invalid(
                "write /dev/cpu_dma_latency",
                format!("negative latency {micros} us"),
            )
            .with_hint(
                "give the wake-up latency the CPUs may add, in microseconds, 0 or more \
                 (0 keeps them out of every idle state with an exit latency)",
            ));
        }
        let io = |call, e: std::io::Error| {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            let err = Error::from_errno(call, errno);
            match errno {
                libc::EACCES | libc::EPERM => err.with_hint(
                    "/dev/cpu_dma_latency is writable by root only by default; run as root or \
                     give the user write access with a udev rule",
                ),
                libc::ENOENT => {
                    err.with_hint("this kernel has no PM QoS device (CONFIG_CPU_IDLE off?)")
                }
                _ => err,
            }
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .map_err(|e| io("open /dev/cpu_dma_latency", e))?;
        file.write_all(&micros.to_ne_bytes())
            .map_err(|e| io("write /dev/cpu_dma_latency", e))?;
        Ok(CpuDmaLatency {
            _file: file,
            micros,
        })
    }

    /// The latency held, in microseconds.
    pub fn micros(&self) -> i32 {
        self.micros
    }
}

// ---------------- timer slack ----------------

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`): how late the kernel
/// may fire its timers to batch wake-ups (default 50 µs). `0` restores the default.
/// The kernel ignores the slack of `SCHED_FIFO`/`SCHED_RR`/`SCHED_DEADLINE` threads
/// (they always get 0), so this matters for the non-RT threads of an RT program.
///
/// # References
///  - [`PR_SET_TIMERSLACK(2const)`](https://man7.org/linux/man-pages/man2/PR_SET_TIMERSLACK.2const.html)
pub fn set_timer_slack(nanos: u64) -> Result<()> {
    rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(nanos))
        .map_err(|e| Error::from_errno("prctl(PR_SET_TIMERSLACK)", e.raw_os_error()))
}

/// The calling thread's timer slack in nanoseconds (`PR_GET_TIMERSLACK`).
///
/// # References
///  - [`PR_GET_TIMERSLACK(2const)`](https://man7.org/linux/man-pages/man2/PR_GET_TIMERSLACK.2const.html)
pub fn timer_slack() -> Result<u64> {
    rustix::thread::current_timer_slack()
        .map_err(|e| Error::from_errno("prctl(PR_GET_TIMERSLACK)", e.raw_os_error()))
}
