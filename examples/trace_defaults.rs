//! The default attributes of a trace stream (listings 8.17 and 8.18): create a
//! stream with default attributes, read them back with `get_attr`, print each.
//!
//! ```sh
//! cargo run --example trace_defaults
//! ```

use posixrt::trace::{Inheritance, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

fn main() {
    // A closed pipe (`trace_defaults | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("trace_defaults");
    args::Args::new(
        "trace_defaults",
        "usage: trace_defaults\n\nCreates a trace stream with default attributes and prints each of them.",
    )
    .none();
    // Errors in plain words on stderr (not Rust's Debug quoting), exit 1.
    if let Err(e) = run() {
        errln!("trace_defaults: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // posix_trace_create (0, NULL, &trid)
    let trid = Trace::create(&TraceAttr::new())?;
    // posix_trace_get_attr (trid, &attr)
    let attr = trid.attr();

    outln!("Trace system version: {}", attr.genversion());
    outln!("Trace stream name: {}", attr.name());
    match attr.create_time() {
        Some(t) => outln!("Trace stream creation time: {}", ctime(t.as_secs() as i64)),
        None => outln!("Trace stream creation time: unknown"),
    }
    outln!(
        "Trace stream clock resolution: {} ns",
        attr.clock_resolution().as_nanos()
    );
    let sp = match attr.stream_full_policy() {
        StreamFullPolicy::Loop => "POSIX_TRACE_LOOP",
        StreamFullPolicy::UntilFull => "POSIX_TRACE_UNTIL_FULL",
        StreamFullPolicy::Flush => "POSIX_TRACE_FLUSH",
    };
    outln!("Stream full policy: {sp}");
    let lp = match attr.log_full_policy() {
        LogFullPolicy::Loop => "POSIX_TRACE_LOOP",
        LogFullPolicy::UntilFull => "POSIX_TRACE_UNTIL_FULL",
        LogFullPolicy::Append => "POSIX_TRACE_APPEND",
    };
    outln!("Log full policy: {lp}");
    let mdatsz = attr.max_data_size();
    outln!("Maximum user event data size: {mdatsz}");
    outln!(
        "Maximum user event size: {}",
        attr.max_user_event_size(mdatsz)
    );
    outln!(
        "Maximum system event size: {}",
        attr.max_system_event_size()
    );
    outln!("Trace stream size: {}", attr.stream_size());
    // Beyond listing 8.18: the remaining attributes.
    outln!("Log size: {}", attr.log_size());
    outln!(
        "Inheritance: {}",
        match attr.inheritance() {
            Inheritance::CloseForChild => "POSIX_TRACE_CLOSE_FOR_CHILD",
            Inheritance::Inherited => "POSIX_TRACE_INHERITED",
        }
    );
    outln!(
        "Memory per recording thread (sub-buffer): {}",
        trid.sub_buffer_bytes()
    );
    outln!(
        "Events of maximum size the stream holds without loss: {}",
        attr.stream_size() / attr.max_user_event_size(mdatsz)
    );
    trid.shutdown()?;
    Ok(())
}

/// `strftime("%c", localtime(t))`.
fn ctime(t: i64) -> String {
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    let mut buf = [0u8; 128];
    let tt: libc::time_t = t as libc::time_t;
    // SAFETY: `tt` and `tm` are valid for the call; localtime_r fills `tm`.
    let ok = unsafe { !libc::localtime_r(&tt, tm.as_mut_ptr()).is_null() };
    if !ok {
        return format!("{t} s since the epoch");
    }
    // SAFETY: `buf` has room for 128 bytes, the format is NUL-terminated and `tm`
    // was initialised by localtime_r.
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%c".as_ptr(),
            tm.as_ptr(),
        )
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
