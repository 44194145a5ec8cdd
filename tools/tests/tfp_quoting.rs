//! tfp's quoted fields (the executable path, the kernel name) read back as
//! they are, whatever they hold.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

mod common;
use common::stdout;

/// Reads a `"..."` field starting at the opening quote of `s`, undoing the
/// `\"` and `\\` escapes; returns the text and what follows the closing quote.
fn quoted(s: &str) -> (String, &str) {
    let s = s.strip_prefix('"').expect("a quoted field");
    let mut text = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (text, &s[i + 1..]),
            '\\' => text.push(chars.next().expect("an escaped character").1),
            c => text.push(c),
        }
    }
    panic!("no closing quote in {s:?}");
}

#[test]
fn a_quote_in_a_path_or_kernel_name_is_escaped() {
    let dir = std::env::temp_dir().join(format!("tfp-quote-{}/a\" b", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("q\"x");
    std::fs::copy(env!("CARGO_BIN_EXE_tfp"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = common::output_when_free(Command::new(&bin).args(["-v", "q\"x"]));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let pid_line = text
        .lines()
        .find(|l| l.starts_with("PID "))
        .unwrap_or_else(|| panic!("tfp lists itself:\n{text}"));
    let (path, rest) = quoted(&pid_line[pid_line.find('"').unwrap()..]);
    assert_eq!(path, bin.to_str().unwrap(), "{pid_line}");
    assert_eq!(rest, "", "{pid_line}");
    let detail = text
        .lines()
        .find(|l| l.contains("kernel name "))
        .unwrap_or_else(|| panic!("-v details:\n{text}"));
    let at = detail.find("kernel name ").unwrap() + "kernel name ".len();
    let (name, rest) = quoted(&detail[at..]);
    assert_eq!((name.as_str(), rest), ("q\"x", ""), "{detail}");
}
