//! What README.md, ARCHITECTURE.md and capi/README.md name exists: every
//! `--example`, `--bench` and `--test` target of a command line, and every
//! repository path written in backticks (`src/...`, `tests/...`, `capi/...`,
//! `benches/...`, `examples/...`, `tools/...`). A renamed file or target makes
//! a user's copied command fail; this catches it before a user does.

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The words that follow `flag ` in `text` (up to a space, backtick, `)` or `;`).
fn after(text: &str, flag: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(flag) {
        rest = &rest[i + flag.len()..];
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        if !word.is_empty() && !word.starts_with('-') {
            out.push(word);
        }
    }
    out
}

/// Backticked tokens that start with a top-level directory of the repository.
fn paths(text: &str) -> Vec<String> {
    const DIRS: [&str; 6] = ["src/", "tests/", "capi/", "benches/", "examples/", "tools/"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| DIRS.iter().any(|d| t.starts_with(d)))
        .filter(|t| !t.contains(['{', '*', ' ', '<', '[']))
        .map(|t| t.trim_end_matches(['.', ',', ':']).to_string())
        .collect()
}

#[test]
fn every_example_bench_and_test_target_named_in_the_readmes_exists() {
    let mut missing = Vec::new();
    for doc in ["README.md", "ARCHITECTURE.md", "capi/README.md"] {
        let text = read(doc);
        for name in after(&text, "--example ") {
            let ok = Path::new(ROOT).join(format!("examples/{name}.rs")).exists()
                || Path::new(ROOT)
                    .join(format!("examples/{name}/main.rs"))
                    .exists();
            if !ok {
                missing.push(format!("{doc}: --example {name}"));
            }
        }
        for name in after(&text, "--bench ") {
            if !Path::new(ROOT).join(format!("benches/{name}.rs")).exists() {
                missing.push(format!("{doc}: --bench {name}"));
            }
        }
        for name in after(&text, "--test ") {
            let ok = ["tests", "tools/tests", "capi/tests"]
                .iter()
                .any(|d| Path::new(ROOT).join(format!("{d}/{name}.rs")).exists());
            if !ok {
                missing.push(format!("{doc}: --test {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "named but missing: {missing:?}");
}

#[test]
fn every_repository_path_named_in_the_readmes_exists() {
    let mut missing = Vec::new();
    for doc in ["README.md", "ARCHITECTURE.md", "capi/README.md"] {
        let base = Path::new(ROOT).join(doc);
        let dir = base.parent().unwrap_or(Path::new(ROOT));
        for p in paths(&read(doc)) {
            // A path is written from the repository root, or (in capi/README.md)
            // from the document's own directory.
            if !Path::new(ROOT).join(&p).exists() && !dir.join(&p).exists() {
                missing.push(format!("{doc}: {p}"));
            }
        }
    }
    assert!(missing.is_empty(), "named but missing: {missing:?}");
}
