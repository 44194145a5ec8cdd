//! The dining philosophers with tracing (listings 8.22 and 8.23).
//!
//! As in the listing, each philosopher is a thread that asks a waiter thread for its
//! two forks and gives them back through it (the listing's requests are the values
//! of real-time signals; here they are channel messages). The waiter records three
//! user events with the philosopher's number as data: "fork request" when a request
//! arrives, "fork grab" when it grants both forks, "fork release" when they come
//! back. Two streams record at once: one without a log, read back after the dinner
//! and printed as in listing 8.23, and one with a log for `rtrace`:
//!
//! ```sh
//! cargo run --release --example philosophers -- --rounds 3
//! cargo run --release -p posixrt-tools --bin rtrace -- dump philosophers.trace
//! ```
//!
//! As in listing 8.22, the filter drops the system events but those the report
//! shows: the listing keeps its signal events, which have no Rust counterpart (the
//! requests are no signals here; `capi/examples/philosophers.c` traces them); this
//! program keeps START and STOP.

use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use posixrt::trace::{self, EventId, EventSet, FillWhat, FilterHow, Trace, TraceAttr};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

struct Args {
    rounds: u32,
    philosophers: u32,
    log: PathBuf,
}

const USAGE: &str = "\
usage: philosophers [--rounds N] [--philosophers N] [--log PATH]

The dining philosophers with tracing (seed listings 8.22-8.23): a waiter thread
grants the forks and records \"fork request\", \"fork grab\" and \"fork release\"
events. The events are printed as in listing 8.23, and written to a log for
`rtrace dump PATH`.

  --rounds N         meals per philosopher (1 to 1000, default 3)
  --philosophers N   philosophers at the table (2 to 32, default 5)
  --log PATH         the trace log (default philosophers.trace; replaced if it exists)";

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
            "--log" => {
                let v = it.value::<String>("--log");
                if v.is_empty() {
                    it.fail("--log needs a file path, not an empty one");
                }
                a.log = PathBuf::from(v);
            }
            _ => it.unknown(&x),
        }
    }
    a
}

/// Listing 8.22's waiter: it serves the philosophers' requests one at a time and
/// records the three fork events. A request is a philosopher's number, `no > 0` to
/// ask for both forks, `-no` to give them back, `0` to end the dinner (the listing
/// sends it as the value of a real-time signal; here it is a channel message).
/// Philosopher `no` eats with forks `no - 1` and `no % n`.
fn start_waiter(requests: Receiver<i32>, grants: Vec<Sender<()>>, ev: [EventId; 3]) {
    let n = grants.len();
    let mut phil_req = vec![false; n]; // a request not granted yet
    let mut fork_busy = vec![false; n];
    // Grants philosopher `no`'s request if there is one and both forks are free.
    let fork_lock = |no: usize, phil_req: &mut [bool], fork_busy: &mut [bool]| {
        if !phil_req[no - 1] || fork_busy[no - 1] || fork_busy[no % n] {
            return;
        }
        fork_busy[no - 1] = true;
        fork_busy[no % n] = true;
        phil_req[no - 1] = false;
        trace::event(ev[1], &(no as i32).to_le_bytes()); // fork grab
        let _ = grants[no - 1].send(());
    };
    while let Ok(v) = requests.recv() {
        let no = v.unsigned_abs() as usize;
        if v == 0 {
            break;
        } else if v > 0 {
            phil_req[no - 1] = true;
            trace::event(ev[0], &v.to_le_bytes()); // fork request
            fork_lock(no, &mut phil_req, &mut fork_busy);
        } else {
            fork_busy[no - 1] = false;
            fork_busy[no % n] = false;
            // Fork release; the neighbours may have been waiting for these forks.
            trace::event(ev[2], &(no as i32).to_le_bytes());
            fork_lock(
                if no == 1 { n } else { no - 1 },
                &mut phil_req,
                &mut fork_busy,
            );
            fork_lock(no % n + 1, &mut phil_req, &mut fork_busy);
        }
    }
}

/// A philosopher: think, ask the waiter for the forks, eat once granted, give them
/// back.
fn philosopher(no: i32, waiter: Sender<i32>, granted: Receiver<()>, rounds: u32) {
    for _ in 0..rounds {
        std::thread::sleep(Duration::from_micros(300 * no as u64)); // think
        if waiter.send(no).is_err() || granted.recv().is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1)); // eat
        if waiter.send(-no).is_err() {
            return;
        }
    }
}

fn main() {
    // A closed pipe (`philosophers | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("philosophers");
    // Errors in plain words on stderr (not Rust's Debug quoting): 2 for bad
    // arguments, 1 for a failed run.
    let a = args();
    if let Err(e) = run(a) {
        errln!("philosophers: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    // The stream we read back, and the one with a log.
    // The waiter records every event (three per meal) into its one sub-buffer: the
    // stream is made large enough to hold them all.
    let mut attr = TraceAttr::new();
    let need = 3 * a.philosophers as usize * a.rounds as usize * attr.max_user_event_size(4);
    if need > attr.stream_size() {
        attr.set_stream_size(need)?;
    }
    let t = Trace::create(&attr)?;
    let log_file =
        File::create(&a.log).map_err(|e| format!("{}: {}", a.log.display(), out::os_error(&e)))?;
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

    // The dinner: a waiter thread and one thread per philosopher.
    let n = a.philosophers as usize;
    let (to_waiter, requests) = channel::<i32>();
    let (grants, granted): (Vec<_>, Vec<_>) = (0..n).map(|_| channel::<()>()).unzip();
    let waiter = std::thread::spawn(move || start_waiter(requests, grants, ev));
    let hs: Vec<_> = granted
        .into_iter()
        .enumerate()
        .map(|(i, granted)| {
            let (to_waiter, rounds) = (to_waiter.clone(), a.rounds);
            std::thread::spawn(move || philosopher(i as i32 + 1, to_waiter, granted, rounds))
        })
        .collect();
    for h in hs {
        h.join().map_err(|_| "a philosopher panicked")?;
    }
    let _ = to_waiter.send(0); // the dinner is over
    waiter.join().map_err(|_| "the waiter panicked")?;

    t.stop()?;
    tl.stop()?;

    outln!("Events with forks put in the trace stream:");
    let mut base = None;
    let mut count = 0;
    while let Some(e) = t.getnext()? {
        let t0 = *base.get_or_insert(e.timestamp);
        let name = t.eventid_name(e.id)?;
        match e.data_i32() {
            Some(no) if !e.id.is_system() => {
                outln!(
                    "  {:>10.6} s  tid {:<7}   {name} {no}",
                    (e.timestamp - t0).as_secs_f64(),
                    e.tid
                );
                count += 1;
            }
            _ => outln!(
                "  {:>10.6} s  tid {:<7} {name}",
                (e.timestamp - t0).as_secs_f64(),
                e.tid
            ),
        }
    }
    t.shutdown()?;
    tl.shutdown()?;
    outln!(
        "{count} fork events from {} philosophers x {} rounds; log written to {} (read it with `rtrace dump {}`)",
        a.philosophers,
        a.rounds,
        a.log.display(),
        a.log.display()
    );
    Ok(())
}
