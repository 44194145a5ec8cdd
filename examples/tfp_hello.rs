//! The thread fingerprint "Hello, world" (QNX Cookbook), plus two named workers.
//!
//! ```text
//! tfp_hello [FIRST_SECS [SECOND_SECS]]     (defaults: 60 and 10, as in the seed)
//! ```
//!
//! The main thread marks itself "Main thread sleeping", sleeps FIRST_SECS, re-marks
//! itself "Main thread about to exit", sleeps SECOND_SECS and exits. Two worker
//! threads are created with `spawn_named` (the seed's `pthread_create_named`), so
//! they are marked before their code runs; they count in their raw block and
//! update their marker every 100 ms. Run `tfp -b tfp_hello` in another terminal
//! meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use posixrt::mark;

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

fn secs(arg: Option<String>, default: f64) -> Result<Duration, String> {
    match arg {
        None => Ok(Duration::from_secs_f64(default)),
        Some(s) => match s.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => {
                Ok(Duration::from_secs_f64(v))
            }
            // `--json`, `-v`: an option this program does not have, not a bad number.
            Err(_) if s.starts_with('-') => Err(format!("unknown argument {s:?}")),
            _ => Err(format!("{s:?} is not a number of seconds from 0 to 86400")),
        },
    }
}

fn main() {
    // A closed pipe (`tfp_hello | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("tfp_hello");
    let mut args = args::Args::new(
        "tfp_hello",
        "usage: tfp_hello [FIRST_SECS [SECOND_SECS]]   (defaults: 60 and 10)

The thread fingerprint \"Hello, world\": marks the main thread \"Main thread
sleeping\", sleeps FIRST_SECS, re-marks it \"Main thread about to exit\", sleeps
SECOND_SECS and exits. Two marked workers count in their raw blocks meanwhile.
Run `tfp -b tfp_hello` in another terminal to see them. Seconds: 0 to 86400.",
    );
    let (first, second) = match (secs(args.next(), 60.0), secs(args.next(), 10.0)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => args.fail(e),
    };
    if let Some(extra) = args.next() {
        args.unknown(&extra);
    }
    // A failure in plain words, one line, exit 1 (not the Debug form a `main`
    // that returns the error prints).
    if let Err(e) = run(first, second) {
        errln!("tfp_hello: {e}");
        std::process::exit(1);
    }
}

fn run(first: Duration, second: Duration) -> posixrt::Result<()> {
    outln!("Hello, world");
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for n in 1..=2 {
        let stop = stop.clone();
        let w = mark::spawn_named(&format!("worker {n}"), move || -> posixrt::Result<u64> {
            let mut step = 0u64;
            while !stop.load(Ordering::Relaxed) {
                step += 1;
                mark::write_raw(0, &step.to_le_bytes())?;
                mark::update(&format!("worker {n}: step {step}"))?;
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(step)
        })?;
        outln!("worker {n} is thread {}", w.tid());
        workers.push(w);
    }

    mark::set("Main thread sleeping")?;
    outln!("pid {}: marked; sleeping {:?}", std::process::id(), first);
    std::thread::sleep(first);
    mark::set("Main thread about to exit")?;
    outln!("re-marked; sleeping {:?}", second);
    std::thread::sleep(second);

    stop.store(true, Ordering::Relaxed);
    for w in workers {
        match w.join() {
            Ok(Ok(steps)) => outln!("a worker stopped after {steps} steps"),
            Ok(Err(e)) => errln!("a worker failed: {e}"),
            Err(_) => errln!("a worker panicked"),
        }
    }
    Ok(())
}
