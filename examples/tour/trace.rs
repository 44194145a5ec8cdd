//! Tour section: `posixrt::trace`.

use posixrt::trace::{self, EventId, Trace, TraceAttr};

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let t = Trace::create(&TraceAttr::new())?;
    let a = t.attr();
    outln!(
        "   stream {:?}: {} bytes, {:?} when full, clock resolution {} ns ({})",
        a.name(),
        a.stream_size(),
        a.stream_full_policy(),
        a.clock_resolution().as_nanos(),
        if trace::clock_is_tsc() {
            "TSC"
        } else {
            "CLOCK_MONOTONIC"
        }
    );
    let tick = trace::eventid_open("tour tick")?;
    trace::event(tick, &0i32.to_le_bytes()); // suspended: costs a load and a branch
    t.start()?;
    for i in 1..=3i32 {
        trace::event(tick, &i.to_le_bytes());
    }
    t.stop()?;
    let mut base = None;
    for e in t.events() {
        let t0 = *base.get_or_insert(e.timestamp);
        let name = t.eventid_name(e.id)?;
        // START and STOP carry no data: their line ends with the name.
        let data = if e.id == EventId::START || e.id == EventId::STOP {
            String::new()
        } else {
            e.data_i32().map(|v| format!(" {v}")).unwrap_or_default()
        };
        outln!(
            "   +{:>8} ns  tid {:<7} {name}{data}",
            (e.timestamp - t0).as_nanos(),
            e.tid
        );
    }
    let st = t.status();
    outln!(
        "   status: running={} full={} overrun={}",
        st.running,
        st.full,
        st.overrun
    );
    t.shutdown()?;
    Ok(())
}
