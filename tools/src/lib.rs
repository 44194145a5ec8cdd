//! Shared helpers for the posixrt command-line tools (`tfp`, `rtrace`, `rtstat`).
//!
//! Each tool is one file in `src/bin/` (with its parts, if any, in a directory
//! of its name next to it: `src/bin/tfp/`); put code that two tools share here. JSON
//! output goes through `serde_json`, so every string is escaped whatever it holds.

#![deny(unsafe_op_in_unsafe_fn)]

use clap::error::ErrorKind;

/// Parses the command line as every posixrt program does: `--help` and `--version`
/// print to standard output and exit 0; a bad command line prints one line on
/// standard error (`PROG: unexpected argument '--x' found (see PROG --help)`) and
/// exits 2, a missing subcommand too (`PROG: a command is needed: dump, stats
/// (see PROG --help)`).
pub fn parse_args<T: clap::Parser>(prog: &str) -> T {
    match T::try_parse() {
        Ok(a) => a,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => e.exit(),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let cmd = <T as clap::CommandFactory>::command();
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .map(|c| c.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                usage_line(
                    prog,
                    format_args!("a command is needed: {}", names.join(", ")),
                );
                std::process::exit(2)
            }
            _ => {
                usage_line(prog, one_line(&e.render().to_string()));
                std::process::exit(2)
            }
        },
    }
}

/// `PROG: MSG (see PROG --help)` on standard error. A write error is ignored, not
/// a panic as in `eprintln!`: a tool that ignores SIGPIPE (`tfp`) may find its
/// standard error a closed pipe.
fn usage_line(prog: &str, msg: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{prog}: {msg} (see {prog} --help)");
}

/// One `PROG: MSG` line on standard error. A write error (a standard error on
/// a full disk, or a closed pipe where SIGPIPE is ignored) loses the line, but
/// is not a panic as in `eprintln!`, which would turn the tool's documented exit
/// status into 101.
pub fn warn(prog: &str, msg: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{prog}: {msg}");
}

/// An I/O error as `posixrt::Error` shows an errno: its text, then its name and
/// number (`Is a directory (EISDIR 21)`), where `io::Error` ends in `(os error
/// 21)`; so every message of the tools names an errno one way, whether the
/// library or the tool itself made the call. An error without an errno is shown
/// as it is.
pub fn os_error(e: &std::io::Error) -> String {
    posixrt::error::io_error_text(e)
}

/// A process id from the command line: a number from 1 to `i32::MAX`. (Negative
/// numbers reach this parser, with `allow_negative_numbers`, so `-1` is reported as
/// a bad pid, not as an unknown option.)
pub fn parse_pid(s: &str) -> Result<i32, String> {
    match s.parse::<i32>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!(
            "{s:?} is not a process id (a number from 1 to {})",
            i32::MAX
        )),
    }
}

/// The process that thread `tid` belongs to (its `Tgid` in /proc), when that is
/// another process: `/proc/<tid>` exists for every thread, but a thread is not a
/// process, and a tool given one as a pid would look for a registry under a name
/// no process uses. `None` for a process, or when /proc does not show `tid`.
pub fn process_of_thread(tid: i32) -> Option<i32> {
    let status = std::fs::read(format!("/proc/{tid}/status")).ok()?;
    String::from_utf8_lossy(&status)
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|&tgid| tgid != tid)
}

/// Why process `pid` has nothing to show although /proc lists it, if it has
/// exited: a zombie (its parent has not reaped it yet) keeps its /proc entry,
/// and "it has no registry" would send the user to its code. `None` for a
/// running process, or when /proc does not show `pid`.
pub fn exited_note(pid: i32) -> Option<String> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let st = posixrt::registry::TaskStat::parse(&String::from_utf8_lossy(&stat))?;
    posixrt::registry::process_ended(pid, &st).then(|| {
        format!(
            "process {pid} has exited (a zombie: its parent has not reaped it yet); hint: \
             run the tool while the process runs"
        )
    })
}

/// clap's error text as one line: the message and the items listed under it, without
/// the tips and the usage that follow.
fn one_line(text: &str) -> String {
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    let line = words.join(" ");
    match line.strip_prefix("error: ") {
        Some(rest) => rest.to_string(),
        None if line.is_empty() => "invalid command line".to_string(),
        None => line,
    }
}

/// Text for a terminal (`tfp`, `rtstat`, `rtrace`): control characters (newlines,
/// ESC sequences) in a marker, a path, a kernel name or a sync object's name are
/// shown escaped (`\n`, `\u{1b}`), so one thread or object is always one line and
/// a name cannot drive the terminal of whoever runs the tool. So are the
/// characters a terminal shows as nothing, or that reorder what follows them
/// (see `hides_text`): a name cannot pass for another (`worker 1` followed by a
/// right-to-left override that shows the rest backwards).
///
/// A backslash is shown doubled (`\\`), so a name holding a backslash and an `n`
/// is not taken for one holding a newline.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    escape_where(s, |c| c == '\\' || shown_escaped(c))
}

/// [`printable`] for a marker in `tfp`'s listing, the last field of its line,
/// not quoted: an empty marker is shown as `""`, where it would leave the line
/// ending with the separating space, alike one of spaces. So that `""` means an
/// empty marker only, a double quote that starts a marker is shown escaped
/// (`\"`).
pub fn printable_marker(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_empty() {
        return std::borrow::Cow::Borrowed("\"\"");
    }
    match s.strip_prefix('"') {
        Some(rest) => std::borrow::Cow::Owned(format!("\\\"{}", printable(rest))),
        None => printable(s),
    }
}

/// [`printable`] for text shown between double quotes (`tfp`'s `PID <pid>
/// "<path>"`): a double quote in it is shown escaped too (`\"`), so the field
/// ends at the first unescaped quote whatever the text holds.
pub fn printable_quoted(s: &str) -> std::borrow::Cow<'_, str> {
    escape_where(s, |c| c == '\\' || c == '"' || shown_escaped(c))
}

/// [`printable_quoted`] for bytes that need not be UTF-8 (a path): each byte
/// that is not part of a UTF-8 character shows as `\xHH` (two lowercase hex
/// digits), as `rtrace` shows such bytes, instead of U+FFFD, which would show
/// two paths alike and name no file. The text between has its backslashes
/// doubled, so the byte `\xff` and the four characters `\xff` (`\\xff`) differ.
pub fn printable_quoted_bytes(b: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return printable_quoted(s);
    }
    let mut o = String::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        o.push_str(&printable_quoted(chunk.valid()));
        for x in chunk.invalid() {
            o.push_str(&format!("\\x{x:02x}"));
        }
    }
    std::borrow::Cow::Owned(o)
}

/// [`printable`] for text whose backslashes already begin escapes (a payload
/// `rtrace` quoted, `\x..` for a byte): they are left as they are.
pub fn printable_escaped(s: &str) -> std::borrow::Cow<'_, str> {
    escape_where(s, shown_escaped)
}

fn escape_where(s: &str, escaped: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(&escaped) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escaped(c) {
            o.extend(c.escape_default());
        } else {
            o.push(c);
        }
    }
    std::borrow::Cow::Owned(o)
}

fn shown_escaped(c: char) -> bool {
    c.is_control() || hides_text(c)
}

/// The characters that change how text reads without showing, or that break a
/// line: Unicode's Default_Ignorable_Code_Point set (Unicode 15.1, below), which
/// a terminal shows as nothing, and the line and paragraph separators (U+2028,
/// U+2029) and interlinear annotation marks (U+FFF9..U+FFFB), which are not
/// controls (`char::is_control`) either.
///
/// The set holds the bidirectional controls (U+061C, U+200E, U+200F,
/// U+202A..U+202E embeddings and overrides, U+2066..U+2069 isolates), the
/// zero-width ones (U+200B space, U+200C/U+200D joiners, U+2060 word joiner,
/// U+FEFF byte order mark), the invisible operators and deprecated format
/// characters (U+2061..U+2064, U+206A..U+206F), the soft hyphen, the
/// combining grapheme joiner, the Hangul and Khmer fillers, the Mongolian and
/// other variation selectors, the tag characters (U+E0000..U+E007F) and the
/// code points Unicode keeps ignorable for later use.
fn hides_text(c: char) -> bool {
    let c = c as u32;
    // Sorted, disjoint, inclusive: a binary search finds the range at or
    // before `c`.
    let i = HIDDEN.partition_point(|&(lo, _)| lo <= c);
    i > 0 && c <= HIDDEN[i - 1].1
}

/// The ranges of [`hides_text`], sorted and disjoint.
const HIDDEN: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),   // soft hyphen
    (0x034F, 0x034F),   // combining grapheme joiner
    (0x061C, 0x061C),   // Arabic letter mark
    (0x115F, 0x1160),   // Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),   // Khmer inherent vowels
    (0x180B, 0x180F),   // Mongolian variation selectors, vowel separator
    (0x200B, 0x200F),   // zero-width space and joiners, LRM, RLM
    (0x2028, 0x2029),   // line and paragraph separators
    (0x202A, 0x202E),   // bidi embeddings and overrides
    (0x2060, 0x206F),   // word joiner, invisible operators, isolates, deprecated
    (0x3164, 0x3164),   // Hangul filler
    (0xFE00, 0xFE0F),   // variation selectors
    (0xFEFF, 0xFEFF),   // zero-width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),   // halfwidth Hangul filler
    (0xFFF0, 0xFFFB),   // unassigned ignorables, interlinear annotation marks
    (0x1BCA0, 0x1BCA3), // shorthand format controls
    (0x1D173, 0x1D17A), // musical symbol beam, tie, slur and phrase controls
    (0xE0000, 0xE0FFF), // tag characters, variation selectors supplement
];

#[cfg(test)]
mod tests {
    use super::{one_line, printable};

    #[test]
    fn a_backslash_is_doubled_so_it_is_not_taken_for_an_escape() {
        // A backslash and an `n` must not look like a newline shown escaped.
        assert_eq!(printable("a\\nb"), "a\\\\nb");
        assert_eq!(printable("a\nb"), "a\\nb");
        assert_ne!(printable("a\\nb"), printable("a\nb"));
        // Text escaped already keeps its backslashes.
        assert_eq!(super::printable_escaped("text=\"\\xff\""), "text=\"\\xff\"");
    }

    #[test]
    fn invisible_and_bidi_characters_are_escaped() {
        // A right-to-left override makes "worker 1\u{202e}0 pets" show as
        // "worker 1stpe 0": each must be shown as its escape, as a control is.
        for (name, shown) in [
            ("worker 1\u{202e}0 pets", "worker 1\\u{202e}0 pets"),
            (
                "a\u{202a}b\u{202b}c\u{202c}d\u{202d}e",
                "a\\u{202a}b\\u{202b}c\\u{202c}d\\u{202d}e",
            ),
            (
                "\u{2066}x\u{2067}y\u{2068}z\u{2069}",
                "\\u{2066}x\\u{2067}y\\u{2068}z\\u{2069}",
            ),
            (
                "l\u{200e}r\u{200f}a\u{61c}",
                "l\\u{200e}r\\u{200f}a\\u{61c}",
            ),
            ("ad\u{200b}min", "ad\\u{200b}min"),
            (
                "a\u{200c}b\u{200d}c\u{2060}d\u{feff}",
                "a\\u{200c}b\\u{200d}c\\u{2060}d\\u{feff}",
            ),
            ("nl\nesc\u{1b}[2J", "nl\\nesc\\u{1b}[2J"),
        ] {
            assert_eq!(printable(name), shown, "{name:?}");
        }
        // Visible text, other scripts included, is left as it is.
        for name in [
            "worker 1: step 17",
            "réseau",
            "שלום",
            "工作线程",
            "emoji 🦀",
        ] {
            assert!(
                matches!(printable(name), std::borrow::Cow::Borrowed(_)),
                "{name:?}"
            );
        }
    }

    #[test]
    fn an_empty_marker_is_two_quotes_and_no_other_is() {
        use super::printable_marker as m;
        assert_eq!(m(""), "\"\"");
        assert_eq!(m(" "), " ");
        assert_eq!(m("\"\""), "\\\"\"");
        assert_eq!(m("\"a\" b\\"), "\\\"a\" b\\\\");
        assert_eq!(m("a\"\""), "a\"\"");
        assert_eq!(m("\"\n"), "\\\"\\n");
    }

    #[test]
    fn the_hidden_ranges_are_sorted_and_disjoint() {
        for w in super::HIDDEN.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[0].1 < w[1].0, "{w:x?}");
        }
    }

    #[test]
    fn every_default_ignorable_character_and_separator_is_escaped() {
        // Each range's ends: a soft hyphen, a grapheme joiner, Hangul and
        // Khmer fillers, Mongolian selectors, the line and paragraph
        // separators, variation selectors, interlinear annotation marks, the
        // shorthand and musical format controls, tag characters and the
        // supplementary variation selectors show nothing on a terminal, or
        // break the line, and let one name pass for another.
        for c in [
            '\u{00AD}',
            '\u{034F}',
            '\u{115F}',
            '\u{1160}',
            '\u{17B4}',
            '\u{17B5}',
            '\u{180B}',
            '\u{180E}',
            '\u{180F}',
            '\u{2028}',
            '\u{2029}',
            '\u{2065}',
            '\u{3164}',
            '\u{FE00}',
            '\u{FE0F}',
            '\u{FFA0}',
            '\u{FFF0}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{1BCA0}',
            '\u{1BCA3}',
            '\u{1D173}',
            '\u{1D17A}',
            '\u{E0000}',
            '\u{E0001}',
            '\u{E0020}',
            '\u{E007F}',
            '\u{E0100}',
            '\u{E01EF}',
            '\u{E0FFF}',
        ] {
            let name = format!("ad{c}min");
            let shown = format!("ad\\u{{{:x}}}min", c as u32);
            assert_eq!(printable(&name), shown, "U+{:04X}", c as u32);
        }
        // Their neighbours are visible and stay as they are.
        for c in [
            '\u{00AC}',
            '\u{00AE}',
            '\u{034E}',
            '\u{1161}',
            '\u{17B6}',
            '\u{180A}',
            '\u{1810}',
            '\u{2027}',
            '\u{202F}',
            '\u{3165}',
            '\u{FE10}',
            '\u{FFA1}',
            '\u{FFFC}',
            '\u{FFFD}',
            '\u{1D172}',
            '\u{1D17B}',
            '\u{DFFFF}',
            '\u{F0000}',
        ] {
            let name = format!("ad{c}min");
            assert_eq!(printable(&name), name, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn clap_errors_become_one_line() {
        let text = "error: the following required arguments were not provided:\n  <LOG>\n\nUsage: rtrace dump <LOG>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "the following required arguments were not provided: <LOG>"
        );
        let text = "error: unexpected argument '-1' found\n\n  tip: to pass '-1' as a value, use '-- -1'\n\nUsage: rtstat [OPTIONS] [PID]\n";
        assert_eq!(one_line(text), "unexpected argument '-1' found");
    }
}
