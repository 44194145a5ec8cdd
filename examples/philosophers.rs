//! The dining philosophers with tracing (listings 8.22 and 8.23).
//!
//! Each philosopher is a thread; a fork is a mutex. Around every meal a philosopher
//! records three user events with its number as data: "fork request", "fork grab"
//! and "fork release". Two streams record at once: one without a log, read back after
//! the dinner and printed as in listing 8.23, and one with a log for `rtrace`:
//!
//! ```sh
//! cargo run --release --example philosophers -- --rounds 3
//! cargo run --release -p posixrt-tools --bin rtrace -- dump philosophers.trace
//! ```
//!
//! As in listing 8.22, the filter drops the system events (here all but START and
//! STOP).

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use posixrt::trace::{self, EventId, EventSet, FillWhat, FilterHow, Trace, TraceAttr};

#[path = "support/args.rs"]
mod args;

struct Args {
    rounds: u32,
    philosophers: u32,
    log: PathBuf,
}

const USAGE: &str = "usage: philosophers [--rounds N (1..=1000, default 3)] [--philosophers N (2..=32, default 5)] [--log PATH (default philosophers.trace)]";

fn args() -> Args {
    let mut a = Args {
        rounds: 3,
        philosophers: 5,
        log: PathBuf::from("philosophers.trace"),
    };
    let mut it = args::Args::new("philosophers", USAGE);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--rounds" => a.rounds = it.value_in("--rounds", 1..=1000),
            "--philosophers" => a.philosophers = it.value_in("--philosophers", 2..=32),
            "--log" => a.log = PathBuf::from(it.value::<String>("--log")),
            _ => it.unknown(&x),
        }
    }
    a
}

fn dine(no: i32, left: Arc<Mutex<()>>, right: Arc<Mutex<()>>, rounds: u32, ev: [EventId; 3]) {
    let data = no.to_le_bytes();
    for _ in 0..rounds {
        // Think.
        std::thread::sleep(Duration::from_micros(300 * no as u64));
        trace::event(ev[0], &data);
        let l = left.lock().unwrap_or_else(|p| p.into_inner());
        let r = right.lock().unwrap_or_else(|p| p.into_inner());
        trace::event(ev[1], &data);
        // Eat.
        std::thread::sleep(Duration::from_millis(1));
        drop(r);
        drop(l);
        trace::event(ev[2], &data);
    }
}

fn main() {
    // `philosophers | head` ends quietly instead of a panic in println!.
    // SAFETY: restores the default disposition of SIGPIPE before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // Errors in plain words on stderr (not Rust's Debug quoting): 2 for bad
    // arguments, 1 for a failed run.
    let a = args();
    if let Err(e) = run(a) {
        eprintln!("philosophers: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    // The stream we read back, and the one with a log.
    let t = Trace::create(&TraceAttr::new())?;
    let log_file = File::create(&a.log).map_err(|e| format!("{}: {e}", a.log.display()))?;
    let mut la = TraceAttr::new();
    la.set_name("philosophers")?;
    let tl = Trace::create_with_log(&la, log_file)?;

    // Filter the system events, except START and STOP.
    let mut fltr = EventSet::empty();
    fltr.fill(FillWhat::System);
    fltr.del(EventId::START);
    fltr.del(EventId::STOP);
    t.set_filter(&fltr, FilterHow::Set)?;
    tl.set_filter(&fltr, FilterHow::Set)?;

    let ev = [
        trace::eventid_open("fork request")?,
        trace::eventid_open("fork grab")?,
        trace::eventid_open("fork release")?,
    ];
    t.start()?;
    tl.start()?;

    let n = a.philosophers as usize;
    let forks: Vec<Arc<Mutex<()>>> = (0..n).map(|_| Arc::new(Mutex::new(()))).collect();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            // The lower-numbered fork first: no deadlock.
            let (x, y) = (i, (i + 1) % n);
            let (lo, hi) = (x.min(y), x.max(y));
            let (l, r) = (Arc::clone(&forks[lo]), Arc::clone(&forks[hi]));
            let rounds = a.rounds;
            std::thread::spawn(move || dine(i as i32 + 1, l, r, rounds, ev))
        })
        .collect();
    for h in hs {
        h.join().map_err(|_| "a philosopher panicked")?;
    }

    t.stop()?;
    tl.stop()?;

    println!("Events with forks put in the trace stream:");
    let mut base = None;
    let mut count = 0;
    while let Some(e) = t.getnext()? {
        let t0 = *base.get_or_insert(e.timestamp);
        let name = t.eventid_name(e.id)?;
        match e.data_i32() {
            Some(no) if !e.id.is_system() => {
                println!(
                    "  {:>10.6} s  tid {:<7}   {name} {no}",
                    (e.timestamp - t0).as_secs_f64(),
                    e.tid
                );
                count += 1;
            }
            _ => println!(
                "  {:>10.6} s  tid {:<7} {name}",
                (e.timestamp - t0).as_secs_f64(),
                e.tid
            ),
        }
    }
    t.shutdown()?;
    tl.shutdown()?;
    println!(
        "{count} fork events from {} philosophers x {} rounds; log written to {} (read it with `rtrace dump {}`)",
        a.philosophers,
        a.rounds,
        a.log.display(),
        a.log.display()
    );
    Ok(())
}
