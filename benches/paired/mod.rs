//! The paired summary shared by the lock benches: a compact, load-robust comparison
//! printed after criterion. Variants run interleaved, pinned to one CPU, so every
//! variant sees the same load and per-round differences are fair.

/// Pins the calling thread to the last CPU it may run on (less migration noise).
pub fn pin_to_last_cpu() -> Option<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a writable cpu_set_t of `size` bytes; pid 0 = this thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads the set built above; the index is in range.
    let cpu = (0..libc::CPU_SETSIZE as usize)
        .rev()
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })?;
    // SAFETY: as above.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of `size` bytes.
    (unsafe { libc::sched_setaffinity(0, size, &one) } == 0).then_some(cpu)
}

/// One variant: a name and a body that runs `n` lock+unlock iterations.
pub type Variant<'a> = (&'a str, &'a mut dyn FnMut(u64));

/// Runs every variant `rounds` times, interleaved (A B C, A B C, ...), `iters`
/// iterations per run, and returns each variant's per-round ns/op. Interleaving
/// exposes all variants to the same load, so per-round differences are fair.
pub fn paired(rounds: usize, iters: u64, variants: &mut [Variant<'_>]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::with_capacity(rounds); variants.len()];
    for (_, f) in variants.iter_mut() {
        f(iters / 4); // warm-up
    }
    for _ in 0..rounds {
        for (i, (_, f)) in variants.iter_mut().enumerate() {
            let t = std::time::Instant::now();
            f(iters);
            out[i].push(t.elapsed().as_nanos() as f64 / iters as f64);
        }
    }
    out
}

pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
