//! # posixrt: the POSIX real-time toolbox for Linux, at modern kernel speed
//!
//! `posixrt` gives Linux services the POSIX real-time facilities with Rust types and
//! errors that tell the fix:
//!
//! | module | what it covers |
//! |---|---|
//! | [`sched`] | policies and priorities, RR quantum, yield, spawn with attributes applied at creation, affinity, SCHED_DEADLINE, memory locking and the RT setup checklist, periodic timers |
//! | [`sync`] | PI, priority-ceiling, normal and recursive mutexes, condvars, semaphores, rwlocks; tracking with info, statistics, waiters and deadlock detection, readable by `rtstat` from another process |
//! | [`aio`] | POSIX asynchronous I/O on io_uring, with a thread-pool fallback |
//! | [`trace`] | the POSIX trace facility: streams, filters, logs, analysis |
//! | [`advise`] | fadvise, fallocate, madvise, aligned buffers, the fsync family |
//! | [`mark`] | thread fingerprints readable from other processes |
//!
//! Every fallible call returns [`Result`], whose [`Error`] carries the errno, the
//! failing call and a hint that tells the fix.
//!
//! # A tour, one example per module
//!
//! **sched**: a thread whose policy, priority and affinity are set when it is
//! created (a real-time policy needs CAP_SYS_NICE or RLIMIT_RTPRIO; without it the
//! error says which and how to get it).
//!
//! ```
//! use posixrt::sched::{self, Builder, CpuSet, Policy, Priority};
//!
//! let range = Policy::Fifo.priority_range()?;
//! println!("SCHED_FIFO priorities {range:?}");
//! let cpu = CpuSet::usable()?.iter().next().expect("some CPU");
//! let h = Builder::new()
//!     .name("control")
//!     .affinity(CpuSet::single(cpu)?)
//!     .spawn(|| sched::current_cpu())?;
//! assert_eq!(h.join().expect("no panic"), cpu);
//! match Priority::fifo(80).and_then(|p| Builder::new().scheduling(p).spawn(|| ())) {
//!     Ok(h) => h.join().expect("no panic"),
//!     Err(e) => println!("no SCHED_FIFO here: {e}"), // names CAP_SYS_NICE, RLIMIT_RTPRIO
//! }
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! **sync**: a priority-inheritance mutex (one CAS each way when uncontended), with
//! introspection switched on at run time.
//!
//! ```
//! use posixrt::sync::{self, PiMutex, Tracking};
//!
//! sync::set_tracking(Tracking::Counts);
//! let m = PiMutex::new(Vec::new());
//! m.lock().push(1);
//! assert!(m.try_lock().is_some());
//! assert!(sync::find_deadlocks().is_empty());
//! sync::set_tracking(Tracking::Off);
//! ```
//!
//! **aio**: POSIX asynchronous I/O on io_uring (or a thread pool where io_uring is
//! refused); the runtime owns the buffer until the request completes.
//!
//! ```
//! use posixrt::aio::Aio;
//!
//! let file = std::fs::File::open("Cargo.toml")?;
//! let aio = Aio::new()?;
//! println!("backend: {}", aio.backend());
//! let mut req = aio.read(&file, 0, vec![0u8; 64])?;   // aio_read
//! let done = req.wait()?;                               // aio_suspend + aio_return
//! let n = done.result?;
//! let buf = done.buf.expect("the buffer comes back");
//! assert!(buf[..n].starts_with(b"["));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **trace**: a POSIX trace stream; recording costs about 10 ns, and nothing when
//! the stream is stopped.
//!
//! ```
//! use posixrt::trace::{self, Trace, TraceAttr};
//!
//! let t = Trace::create(&TraceAttr::new())?;
//! let grab = trace::eventid_open("fork grab")?;
//! t.start()?;
//! trace::event(grab, &7i32.to_le_bytes());
//! t.stop()?;
//! let ours: Vec<_> = t.events().filter(|e| e.id == grab).collect();
//! assert_eq!(ours.len(), 1);
//! assert_eq!(ours[0].data, 7i32.to_le_bytes());
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! **advise**: aligned buffers (for O_DIRECT) and access-pattern advice.
//!
//! ```
//! use posixrt::advise::{self, Advice, AlignedBuf};
//!
//! let buf = AlignedBuf::new(8192, 4096)?;
//! assert_eq!(buf.as_ptr() as usize % 4096, 0);
//! assert!(AlignedBuf::new(8192, 3000).is_err()); // not a power of two: InvalidInput
//! let f = std::fs::File::open("Cargo.toml")?;
//! advise::fadvise(&f, 0, 0, Advice::Sequential)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **mark**: a thread labels itself; `tfp` in another terminal lists it.
//!
//! ```
//! use posixrt::mark;
//!
//! mark::update("worker: step 17")?;   // no system call: ~0.1x a prctl rename
//! assert_eq!(mark::current().as_deref(), Some("worker: step 17"));
//! mark::clear();
//! # Ok::<(), posixrt::Error>(())
//! ```

//!
//! # Examples and tools
//!
//! Start with the tour: one short section per module, printing what each shows.
//!
//! ```sh
//! cargo run --release --example tour
//! ```
//!
//! Each module has its own examples (the seed listings, in `examples/`): `sched_info`,
//! `cyclic` and `sporadic` (sched), `priority_inversion` and `sync_inspect` (sync),
//! `linecount`, `linecount_notify`, `aio_latency`, `aio_priority`, `aio_tokio` (`--features tokio`)
//! and `aio_peers` (`--features peers`) (aio), `trace_defaults`, `philosophers`,
//! `trace_overhead` and `mutex_starvation` (trace), `bytesum` and `streaming_write` (advise), `tfp_hello`
//! (mark). Every one takes `--help`:
//!
//! ```sh
//! cargo run --release --example cyclic -- --help
//! ```
//!
//! The `posixrt-tools` package (`tools/`) has the command-line tools that read what a
//! running or finished program left behind:
//!
//! - `tfp`: the marked threads of every process ([`mark`]), as the QNX `tfp` lists them;
//! - `rtstat PID`: the tracked locks of a process, their waiters and deadlocks ([`sync`]);
//! - `rtrace dump|stats|export LOG`: trace logs, exported for Perfetto or babeltrace2
//!   ([`trace`]).
//!
//! ```sh
//! cargo build --release -p posixrt-tools
//! ./target/release/tfp --help
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod error;
mod sys;

pub mod advise;
pub mod aio;
pub mod mark;
pub mod sched;
pub mod sync;
pub mod trace;

#[doc(hidden)]
pub mod registry;
#[cfg(test)]
pub(crate) mod test_panics;

pub use error::{Error, ErrorKind, Result};

/// The Rust snippets of README.md, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
