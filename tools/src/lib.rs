//! Shared helpers for the posixrt command-line tools (`tfp`, `rtrace`, `rtstat`).
//!
//! Each tool is one file in `src/bin/`; put code that two tools share here.

#![deny(unsafe_op_in_unsafe_fn)]

/// Quotes `s` as a JSON string literal (`"` and `\` escaped, `\n`, `\r`, `\t` short,
/// other control characters as `\u00XX`), so a thread or object name cannot break the
/// document. The library's own escaper, which the trace exports use too.
pub use posixrt::trace::export::json_str;

#[cfg(test)]
mod tests {
    use super::json_str;

    #[test]
    fn json_str_escapes() {
        assert_eq!(json_str("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json_str("x\ny\r\tz"), r#""x\ny\r\tz""#);
        assert_eq!(json_str("\u{1b}[2J"), r#""\u001b[2J""#);
        assert_eq!(json_str("héllo"), "\"héllo\"");
    }
}
