//! Shared helpers for the posixrt command-line tools (`tfp`, `rtrace`, `rtstat`).
//!
//! Each tool is one file in `src/bin/`; put code that two tools share here.

#![deny(unsafe_op_in_unsafe_fn)]

/// Quotes `s` as a JSON string literal: `"` and `\` are escaped, `\n`, `\r` and
/// `\t` get their short escapes and every other control character below U+0020
/// becomes `\u00XX`, so a thread or object name cannot break the document.
pub fn json_str(s: &str) -> String {
    use std::fmt::Write as _;
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

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
