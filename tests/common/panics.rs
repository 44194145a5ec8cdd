//! Expected panics kept out of a passing run's output (`.ci/run` fails a run
//! that prints a panic backtrace).

/// Keeps an expected panic, whose message starts with `prefix`, out of the
/// output; other panics still reach the previous hook.
pub fn quiet_expected_panic(prefix: &'static str) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| p.downcast_ref::<String>().map(String::as_str));
        if !msg.is_some_and(|m| m.starts_with(prefix)) {
            previous(info);
        }
    }));
}
