//! A periodic timer on absolute `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, with
//! wake-up latency statistics recorded the way `cyclictest` does.
//!
//! Each period's wake-up time is computed from the start time (`start + k·interval`),
//! never from "now", so the loop does not drift. Right after each wake-up the timer
//! reads `CLOCK_MONOTONIC` once (and once before the sleep, to see a late call);
//! the **latency** is `now − expected wake-up`. If a
//! wake-up comes later than a whole period, the periods missed are counted as
//! *overruns* and skipped (the next wake-up is the next one still in the future).
//! A loop body that runs past its period calls [`Periodic::wait`] after the
//! wake-up was due: it does not sleep, and [`Wakeup::late_call_ns`] says how late
//! the call came (the latency then measures the loop's overrun, not the kernel).
//!
//! ```
//! use std::time::Duration;
//! use posixrt::sched::periodic::{LatencyStats, Periodic};
//!
//! let mut timer = Periodic::new(Duration::from_micros(500))?;
//! let mut stats = LatencyStats::new(1000); // 1 µs buckets up to 1 ms
//! for _ in 0..20 {
//!     let w = timer.wait()?;
//!     stats.record(&w);
//! }
//! assert_eq!(stats.count(), 20);
//! println!("min {:.1} avg {:.1} max {:.1} µs", stats.min_us(), stats.avg_us(), stats.max_us());
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! Run it as `SCHED_FIFO` with memory locked ([`rt::setup`](super::rt::setup)) for
//! real-time figures; the `cyclic` example is a `cyclictest` work-alike.
//!
//! # References
//!  - [`clock_nanosleep(2)`](https://man7.org/linux/man-pages/man2/clock_nanosleep.2.html)
//!  - [`cyclictest(8)`](https://man7.org/linux/man-pages/man8/cyclictest.8.html)

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::thread::clock_nanosleep_absolute;
use rustix::time::{clock_gettime, ClockId, Timespec};

use crate::{Error, Result};

const NS: i64 = 1_000_000_000;

#[inline(always)]
fn now_ns() -> i64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec * NS + t.tv_nsec
}

/// One wake-up of a [`Periodic`] timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wakeup {
    /// When the wake-up was due, in `CLOCK_MONOTONIC` nanoseconds.
    pub expected_ns: i64,
    /// How late it came: `now − expected`, in nanoseconds (never negative with an
    /// absolute sleep; kept signed so a broken clock would show).
    pub latency_ns: i64,
    /// Whole periods missed before this wake-up (0 normally).
    pub overruns: u64,
    /// How long after the due time `wait` was called (or resumed after a signal
    /// handler), in nanoseconds; 0 when it was called in time and slept. Nonzero
    /// means the loop body ran past its period: there was no sleep, and
    /// `latency_ns` is mostly this lateness of the caller, not the kernel's
    /// wake-up latency (`latency_ns - late_call_ns` is the part after the call).
    pub late_call_ns: i64,
}

impl Wakeup {
    /// The latency as a `Duration` (0 if it were negative).
    pub fn latency(&self) -> Duration {
        Duration::from_nanos(self.latency_ns.max(0) as u64)
    }
}

/// A periodic timer: absolute sleeps on `CLOCK_MONOTONIC`, one `interval` apart.
///
/// # References
///  - [`clock_nanosleep(2)`](https://man7.org/linux/man-pages/man2/clock_nanosleep.2.html)
#[derive(Debug, Clone)]
pub struct Periodic {
    interval_ns: i64,
    next_ns: i64,
}

impl Periodic {
    /// A timer whose first wake-up is one `interval` from now. A zero interval is
    /// `InvalidInput`.
    ///
    /// Any other interval is valid: one longer than `i64::MAX` nanoseconds (about 292
    /// years; `Duration::MAX`, or `i64::MAX` seconds as in the largest C `timespec`)
    /// counts as `i64::MAX` ns, and wake-up times saturate at the end of
    /// `CLOCK_MONOTONIC`'s range: such a timer never fires, it never panics and never
    /// wraps to a time in the past.
    pub fn new(interval: Duration) -> Result<Periodic> {
        if interval.is_zero() {
            return Err(Error::invalid(
                "clock_nanosleep",
                format!("period {interval:?} must be > 0"),
            )
            .with_hint(
                "give the time between wake-ups (e.g. Duration::from_micros(1000)); \
                 Duration::MAX makes a timer that never fires",
            ));
        }
        let interval_ns = i64::try_from(interval.as_nanos()).unwrap_or(i64::MAX);
        Ok(Periodic {
            interval_ns,
            next_ns: now_ns().saturating_add(interval_ns),
        })
    }

    /// The period.
    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns as u64)
    }

    /// The next wake-up time, `CLOCK_MONOTONIC` nanoseconds.
    pub fn next_ns(&self) -> i64 {
        self.next_ns
    }

    /// Sleeps until the next period starts, then measures how late the wake-up was.
    ///
    /// Retries on EINTR (the absolute deadline stays the same).
    ///
    /// # References
    ///  - [`clock_nanosleep(2)`](https://man7.org/linux/man-pages/man2/clock_nanosleep.2.html)
    ///  - [`clock_gettime(2)`](https://man7.org/linux/man-pages/man2/clock_gettime.2.html)
    #[inline]
    #[doc(alias = "clock_nanosleep")]
    pub fn wait(&mut self) -> Result<Wakeup> {
        loop {
            if let Some(w) = self.wait_once()? {
                return Ok(w);
            }
        }
    }

    /// Like [`wait`](Self::wait), but gives up when `stop` is set: it is checked
    /// before sleeping and whenever a signal handler interrupts the sleep (EINTR), so
    /// a handler that sets `stop` ends the wait promptly. Returns `Ok(None)` when
    /// stopped; the deadline is kept, so a later call waits for the same period.
    ///
    /// The signal must be delivered to the sleeping thread (block it in the others
    /// with `pthread_sigmask`) for the sleep to be interrupted.
    ///
    /// # References
    ///  - [`clock_nanosleep(2)`](https://man7.org/linux/man-pages/man2/clock_nanosleep.2.html)
    ///  - [`signal(7)`](https://man7.org/linux/man-pages/man7/signal.7.html)
    #[inline]
    #[doc(alias = "clock_nanosleep")]
    pub fn wait_unless(&mut self, stop: &AtomicBool) -> Result<Option<Wakeup>> {
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if let Some(w) = self.wait_once()? {
                return Ok(Some(w));
            }
        }
    }

    /// One absolute sleep to the deadline: `None` when a signal interrupted it.
    #[inline(always)]
    fn wait_once(&mut self) -> Result<Option<Wakeup>> {
        let expected = self.next_ns;
        // Past the due time already: the loop body overran its period.
        let late_call_ns = (now_ns() - expected).max(0);
        let ts = Timespec {
            tv_sec: expected / NS,
            tv_nsec: expected % NS,
        };
        match clock_nanosleep_absolute(ClockId::Monotonic, &ts) {
            Ok(()) => {}
            Err(rustix::io::Errno::INTR) => return Ok(None),
            Err(e) => return Err(Error::from_errno("clock_nanosleep", e.raw_os_error())),
        }
        let now = now_ns();
        let latency_ns = now - expected;
        let (next, overruns) = next_wakeup(expected, now, self.interval_ns);
        self.next_ns = next;
        Ok(Some(Wakeup {
            expected_ns: expected,
            latency_ns,
            overruns,
            late_call_ns,
        }))
    }
}

/// The wake-up after one due at `expected` and seen at `now`, `interval` ns apart,
/// and the whole periods missed on the way. Saturates at `i64::MAX` ns (a time that
/// never comes) instead of overflowing.
fn next_wakeup(expected: i64, now: i64, interval: i64) -> (i64, u64) {
    let next = expected.saturating_add(interval);
    // A deadline is missed only once `now` is past it (cyclictest's rule): one
    // that is due exactly now is the next wake-up, not an overrun.
    if next >= now || next == i64::MAX {
        return (next, 0);
    }
    // The deadlines in (next, now) are missed too: ceil((now - next) / interval).
    let missed = (now - next - 1) / interval + 1;
    (
        next.saturating_add(missed.saturating_mul(interval)),
        missed as u64,
    )
}

/// Wake-up latency statistics, as `cyclictest` keeps them: count, min, average, max,
/// the last value ("Act"), overruns and a histogram of 1 µs buckets.
///
/// The accessors (`min_us`, `avg_us`, ...) are exact (nanosecond sums). `Display`
/// prints the `cyclictest` line with cyclictest's own arithmetic, which truncates
/// each latency to whole microseconds before summing and truncates the average, so
/// the two lines can be compared digit for digit (cyclictest's `Avg` is therefore
/// about 0.5–1 µs below the exact mean).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyStats {
    count: u64,
    min_ns: i64,
    max_ns: i64,
    max_index: u64,
    sum_ns: i128,
    sum_whole_us: i128,
    last_ns: i64,
    overruns: u64,
    late_calls: u64,
    histogram: Vec<u64>,
    beyond: u64,
}

impl LatencyStats {
    /// The most histogram buckets [`new`](Self::new) allocates: 1 s of 1 µs
    /// buckets (8 MB). A wake-up later than that is counted in
    /// [`beyond`](Self::beyond).
    pub const MAX_BUCKETS: usize = 1_000_000;

    /// Empty statistics with `buckets` histogram buckets of 1 µs each (bucket *i*
    /// counts latencies in `[i, i+1)` µs); later latencies are counted in
    /// [`beyond`](Self::beyond). The histogram is allocated here, never while recording.
    ///
    /// `buckets` is capped at [`MAX_BUCKETS`](Self::MAX_BUCKETS), so any value
    /// (even `usize::MAX`) gives a histogram that fits in memory;
    /// [`histogram`](Self::histogram)`().len()` is the number allocated.
    /// [`try_new`](Self::try_new) refuses a larger count instead.
    ///
    /// # Panics
    ///
    /// If the histogram (8 bytes a bucket, at most 8 MB) cannot be allocated,
    /// which only a tight address-space limit (`RLIMIT_AS`) causes: the message
    /// starts with `LatencyStats::new`. [`try_new`](Self::try_new) returns that
    /// failure as an error. (Before, the process aborted.)
    pub fn new(buckets: usize) -> LatencyStats {
        match Self::try_new(buckets.min(Self::MAX_BUCKETS)) {
            Ok(s) => s,
            Err(e) => panic!("LatencyStats::new: {e} (LatencyStats::try_new returns this error)"),
        }
    }

    /// [`new`](Self::new) that reports what it cannot do: more than
    /// [`MAX_BUCKETS`](Self::MAX_BUCKETS) buckets is `InvalidInput` (nothing is
    /// allocated), a histogram that cannot be allocated is `OutOfResources`.
    pub fn try_new(buckets: usize) -> Result<LatencyStats> {
        if buckets > Self::MAX_BUCKETS {
            return Err(Error::invalid(
                "LatencyStats::try_new",
                format!(
                    "{buckets} histogram buckets is more than MAX_BUCKETS ({}: 1 s of 1 us buckets)",
                    Self::MAX_BUCKETS
                ),
            )
            .with_hint(
                "ask for at most LatencyStats::MAX_BUCKETS buckets; later wake-ups are \
                 counted in beyond()",
            ));
        }
        let mut histogram: Vec<u64> = Vec::new();
        if histogram.try_reserve_exact(buckets).is_err() {
            return Err(Error::new(
                crate::ErrorKind::OutOfResources,
                "LatencyStats::try_new",
                format!(
                    "cannot allocate a histogram of {buckets} buckets ({} bytes)",
                    buckets.saturating_mul(std::mem::size_of::<u64>())
                ),
            )
            .with_hint(
                "raise the address-space limit (RLIMIT_AS, ulimit -v) or ask for fewer buckets",
            ));
        }
        // Written, not only reserved: every page is touched now, not in the loop.
        histogram.resize(buckets, 0);
        Ok(LatencyStats {
            count: 0,
            min_ns: i64::MAX,
            max_ns: i64::MIN,
            max_index: 0,
            sum_ns: 0,
            sum_whole_us: 0,
            last_ns: 0,
            overruns: 0,
            late_calls: 0,
            histogram,
            beyond: 0,
        })
    }

    /// Adds one wake-up.
    #[inline]
    pub fn record(&mut self, w: &Wakeup) {
        let l = w.latency_ns;
        if l < self.min_ns {
            self.min_ns = l;
        }
        if l > self.max_ns {
            self.max_ns = l;
            self.max_index = self.count;
        }
        self.count += 1;
        self.sum_ns += i128::from(l);
        self.sum_whole_us += i128::from(l / 1000);
        self.last_ns = l;
        self.overruns += w.overruns;
        self.late_calls += u64::from(w.late_call_ns > 0);
        let b = (l.max(0) / 1000) as usize;
        match self.histogram.get_mut(b) {
            Some(c) => *c += 1,
            None => self.beyond += 1,
        }
    }

    /// Number of wake-ups recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Smallest latency, µs (0 when empty).
    pub fn min_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.min_ns as f64 / 1000.0
        }
    }

    /// Largest latency, µs (0 when empty).
    pub fn max_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.max_ns as f64 / 1000.0
        }
    }

    /// Mean latency, µs (0 when empty).
    pub fn avg_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 / 1000.0
        }
    }

    /// Which wake-up (0-based, in recording order) had the largest latency: a maximum
    /// at index 0 or 1 points at a cold start rather than at the system.
    pub fn max_index(&self) -> u64 {
        self.max_index
    }

    /// The latency below which a fraction `q` (0.0..=1.0) of the wake-ups fell, µs,
    /// read from the histogram (so to 1 µs: the upper edge of the bucket that holds
    /// it). `None` when empty, when `q` is outside 0..=1, or when that wake-up lies
    /// beyond the histogram.
    pub fn percentile_us(&self, q: f64) -> Option<f64> {
        if self.count == 0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        // The rank of the wake-up asked for, 1-based, at least 1.
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (us, n) in self.histogram.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some((us + 1) as f64);
            }
        }
        None
    }

    /// The last latency recorded, µs (cyclictest's "Act").
    pub fn last_us(&self) -> f64 {
        self.last_ns as f64 / 1000.0
    }

    /// Periods missed in total.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Wake-ups whose `wait` was called after they were due
    /// ([`Wakeup::late_call_ns`] > 0): the loop body overran its period, and
    /// their latencies are the loop's lateness rather than the kernel's.
    pub fn late_calls(&self) -> u64 {
        self.late_calls
    }

    /// The histogram: element *i* counts latencies in `[i, i+1)` µs.
    pub fn histogram(&self) -> &[u64] {
        &self.histogram
    }

    /// Latencies beyond the last bucket.
    pub fn beyond(&self) -> u64 {
        self.beyond
    }
}

impl fmt::Display for LatencyStats {
    /// `C: N Min: a Act: b Avg: c Max: d` in whole µs, with cyclictest's arithmetic
    /// (each latency truncated to µs, the average of those truncated).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (min, max) = if self.count == 0 {
            (0, 0)
        } else {
            (self.min_ns / 1000, self.max_ns / 1000)
        };
        let avg = if self.count == 0 {
            0
        } else {
            self.sum_whole_us / i128::from(self.count)
        };
        write!(
            f,
            "C:{:>8} Min:{:>7} Act:{:>5} Avg:{:>5} Max:{:>8}",
            self.count,
            min,
            self.last_ns / 1000,
            avg,
            max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_math() {
        let mut s = LatencyStats::new(3);
        for l in [500, 1500, 2500, 9000] {
            s.record(&Wakeup {
                expected_ns: 0,
                latency_ns: l,
                overruns: 0,
                late_call_ns: 0,
            });
        }
        assert_eq!(s.count(), 4);
        assert_eq!(s.min_us(), 0.5);
        assert_eq!(s.max_us(), 9.0);
        assert_eq!(s.avg_us(), 3.375);
        assert_eq!(s.histogram(), &[1, 1, 1]);
        assert_eq!(s.beyond(), 1);
        assert_eq!(s.last_us(), 9.0);
        assert_eq!(s.max_index(), 3);
        // cyclictest arithmetic: 0+1+2+9 whole µs = 12, / 4 = 3.
        assert_eq!(
            s.to_string(),
            "C:       4 Min:      0 Act:    9 Avg:    3 Max:       9"
        );
        // Ranks 1..=3 are in the histogram, the 4th (9 µs) is beyond it.
        assert_eq!(s.percentile_us(0.25), Some(1.0));
        assert_eq!(s.percentile_us(0.5), Some(2.0));
        assert_eq!(s.percentile_us(0.75), Some(3.0));
        assert_eq!(s.percentile_us(1.0), None);
        assert_eq!(s.percentile_us(1.5), None);
        assert_eq!(LatencyStats::new(3).percentile_us(0.5), None);
    }

    /// `new(usize::MAX)` used to panic (capacity overflow), and a large count
    /// that did not overflow aborted the process when the allocation failed.
    #[test]
    fn bucket_count_is_capped() {
        let mut s = LatencyStats::new(usize::MAX);
        assert_eq!(s.histogram().len(), LatencyStats::MAX_BUCKETS);
        let last_us = LatencyStats::MAX_BUCKETS as i64 - 1;
        for l in [last_us * 1000, (last_us + 1) * 1000] {
            s.record(&Wakeup {
                expected_ns: 0,
                latency_ns: l,
                overruns: 0,
                late_call_ns: 0,
            });
        }
        assert_eq!(s.histogram()[LatencyStats::MAX_BUCKETS - 1], 1);
        assert_eq!(s.beyond(), 1);
        assert_eq!(
            LatencyStats::new(LatencyStats::MAX_BUCKETS + 1)
                .histogram()
                .len(),
            LatencyStats::MAX_BUCKETS
        );
        assert_eq!(LatencyStats::new(0).histogram().len(), 0);
    }

    /// `try_new` refuses more than MAX_BUCKETS (allocating nothing) instead of
    /// capping, and gives what `new` gives otherwise.
    #[test]
    fn try_new_refuses_more_than_max_buckets() {
        for n in [LatencyStats::MAX_BUCKETS + 1, usize::MAX] {
            let e = LatencyStats::try_new(n).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains("MAX_BUCKETS"), "{e}");
        }
        let s = LatencyStats::try_new(LatencyStats::MAX_BUCKETS).unwrap();
        assert_eq!(s.histogram().len(), LatencyStats::MAX_BUCKETS);
        assert!(s.histogram().iter().all(|&n| n == 0));
        assert_eq!(LatencyStats::try_new(3).unwrap(), LatencyStats::new(3));
        assert_eq!(LatencyStats::try_new(0).unwrap().histogram().len(), 0);
    }

    #[test]
    fn next_wakeup_steps_one_period_and_counts_missed_ones() {
        assert_eq!(next_wakeup(1_000, 1_100, 500), (1_500, 0));
        // Seen at 2_700: 1_500, 2_000 and 2_500 passed; the next is 3_000.
        assert_eq!(next_wakeup(1_000, 2_700, 500), (3_000, 3));
    }

    #[test]
    fn a_wakeup_exactly_on_a_later_deadline_misses_only_the_periods_before_it() {
        // Seen exactly when the next period starts: nothing missed (cyclictest
        // counts an overrun only when now is past the next deadline).
        assert_eq!(next_wakeup(1_000, 1_500, 500), (1_500, 0));
        // Seen exactly at 2_500: 1_500 and 2_000 passed; 2_500 is due now.
        assert_eq!(next_wakeup(1_000, 2_500, 500), (2_500, 2));
    }

    #[test]
    fn next_wakeup_saturates_instead_of_overflowing() {
        let big = i64::MAX - 10;
        assert_eq!(next_wakeup(big, big + 1, 1 << 62), (i64::MAX, 0));
        assert_eq!(next_wakeup(i64::MAX, i64::MAX, i64::MAX), (i64::MAX, 0));
        // A late wake-up whose catch-up would pass the end of the range.
        assert_eq!(next_wakeup(2, i64::MAX - 1, i64::MAX / 2), (i64::MAX, 1));
    }
}
