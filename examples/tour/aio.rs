//! Tour section: `posixrt::aio`. Counts the lines of this crate's own `src/` files
//! with one `lio_listio`, then `aio_suspend` / `aio_error` / `aio_return` and
//! re-issued reads, as listing 7.7 does, and says which engine ran them.

use std::path::{Path, PathBuf};

use posixrt::aio::{Aio, ListMode, Notify, Op, Request};
use posixrt::ErrorKind;

const BUF: usize = 64 * 1024;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let aio = Aio::new()?;
    outln!("   engine: {}", aio.backend());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    if paths.is_empty() {
        outln!("   ({} not found: nothing to count)", src.display());
        return Ok(());
    }
    let files: Vec<std::fs::File> = paths
        .iter()
        .map(std::fs::File::open)
        .collect::<Result<_, _>>()?;
    // One lio_listio starts a read of every file.
    let list = aio.lio_listio(
        ListMode::NoWait,
        files.iter().map(|f| Some(Op::read(f, 0, vec![0u8; BUF]))),
        Notify::None,
    )?;
    let mut reqs: Vec<Option<(Request<Vec<u8>>, i64)>> = list
        .into_requests()
        .into_iter()
        .map(|r| r.map(|r| (r, 0)))
        .collect();
    let mut lines = vec![0usize; files.len()];
    while reqs.iter().any(Option::is_some) {
        aio.suspend(reqs.iter().map(|r| r.as_ref().map(|(r, _)| r)), None)?;
        for (i, slot) in reqs.iter_mut().enumerate() {
            let Some((r, off)) = slot else { continue };
            if matches!(r.error(), Err(e) if e.kind() == ErrorKind::InProgress) {
                continue;
            }
            let done = r.aio_return()?;
            let n = done.result?;
            if n == 0 {
                *slot = None;
                continue;
            }
            let buf = done.buf.unwrap_or_default();
            lines[i] += buf[..n].iter().filter(|&&b| b == b'\n').count();
            let next = *off + n as i64;
            *slot = Some((aio.read(&files[i], next, buf)?, next));
        }
    }
    let mut by_size: Vec<(usize, &PathBuf)> = lines.iter().copied().zip(&paths).collect();
    by_size.sort_by_key(|b| std::cmp::Reverse(b.0));
    for (n, p) in by_size.iter().take(5) {
        let shown = p.strip_prefix(&src).unwrap_or(p);
        outln!("   {n:>6}  src/{}", shown.display());
    }
    outln!(
        "   {:>6}  lines in {} files under src/ (read with posixrt::aio)",
        lines.iter().sum::<usize>(),
        paths.len()
    );
    Ok(())
}
