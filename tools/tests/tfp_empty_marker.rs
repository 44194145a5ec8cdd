//! tfp's text listing shows an empty marker as `""`: the line ended with the
//! separating space, as one of a marker of spaces does, and the two looked
//! alike. A marker that starts with a double quote has that quote shown
//! escaped (`\"`), so a `""` in the marker column always means an empty
//! marker. (Alone in its binary: the marks are this process's.)

use std::sync::{Arc, Barrier};

mod common;
use common::{me, stdout, tfp};

#[test]
fn an_empty_marker_is_shown_as_two_quotes() {
    let markers = ["", "   ", "\"\"", "\"quoted\" text", "plain"];
    let marked = Arc::new(Barrier::new(markers.len() + 1));
    let listed = Arc::new(Barrier::new(markers.len() + 1));
    let threads: Vec<_> = markers
        .iter()
        .map(|&m| {
            let (marked, listed) = (marked.clone(), listed.clone());
            std::thread::spawn(move || {
                posixrt::mark::set(m).unwrap();
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() };
                marked.wait();
                listed.wait();
                posixrt::mark::clear();
                tid
            })
        })
        .collect();
    marked.wait();
    let o = tfp(&["--no-self", "-p", &me().to_string()]);
    listed.wait();
    let tids: Vec<i32> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(o.status.success(), "{o:?}");
    let text = stdout(&o);
    // The marker column: what follows the CPU time.
    let shown = |tid: i32| -> String {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("TID {tid:>9} ")))
            .unwrap_or_else(|| panic!("thread {tid} not listed:\n{text}"));
        let cpu = line.split_whitespace().nth(9).unwrap();
        line.split_once(&format!(" {cpu} ")).unwrap().1.to_string()
    };
    let got: Vec<String> = tids.iter().map(|&t| shown(t)).collect();
    assert_eq!(
        got,
        ["\"\"", "   ", "\\\"\"", "\\\"quoted\" text", "plain"],
        "{text}"
    );
    // The help says so.
    let h = stdout(&tfp(&["--help"])).replace(char::is_whitespace, "");
    assert!(h.contains("anemptymarkerisshownas`\"\"`"), "{h}");
}
