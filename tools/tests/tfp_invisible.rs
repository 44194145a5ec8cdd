//! tfp's text listing shows every character a terminal shows as nothing (a
//! soft hyphen, a variation selector, a tag character, a Hangul filler, ...)
//! or that breaks the line (U+2028, U+2029) escaped, as it shows the bidi
//! controls and zero-width characters: `admin` and `ad<soft hyphen>min` must
//! not look alike. (Alone in its binary: the marks are this process's.)

mod common;
use common::{me, stdout, tfp};

#[test]
fn invisible_characters_in_a_marker_are_shown_escaped() {
    let marker = "ad\u{ad}m\u{fe0f}i\u{e0041}n\u{3164}x\u{2028}y\u{e0100}";
    std::thread::spawn(move || {
        posixrt::mark::set(marker).unwrap();
        let o = tfp(&["--no-self", "-p", &me().to_string()]);
        posixrt::mark::clear();
        assert!(o.status.success(), "{o:?}");
        let text = stdout(&o);
        let line = text
            .lines()
            .find(|l| l.starts_with("TID "))
            .unwrap_or_else(|| panic!("no thread listed:\n{text}"));
        assert!(
            line.ends_with(" ad\\u{ad}m\\u{fe0f}i\\u{e0041}n\\u{3164}x\\u{2028}y\\u{e0100}"),
            "{line:?}"
        );
    })
    .join()
    .unwrap();
}
