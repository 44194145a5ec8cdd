//! The command line of `aio_peers`: its options, defaults and engine names.

use crate::args;

/// The engines, in the order of the report.
pub const ENGINES: [&str; 13] = [
    "posixrt_suspend",
    "posixrt_await",
    "posixrt_await_request",
    "posixrt_await_join",
    "posixrt_await_mt",
    "io_uring",
    "tokio_bare_uring",
    "tokio_bare_uring_join",
    "tokio_bare_uring_mt",
    "tokio_uring",
    "monoio",
    "tokio_fs",
    "pread",
];

const USAGE: &str = "usage: aio_peers [--rounds N] [--ops N] [--qd32-ops N] [--file-size-mb N] [--only E1,E2,...] [--json]

Measures 4 KiB random reads of a cached file with posixrt (suspend and four .await forms),
with its Rust peers (raw io-uring, tokio-uring, monoio, tokio::fs, pread), and with the floor
for a tokio future (tokio_bare_uring; tokio_bare_uring_join for 32 futures in one task;
tokio_bare_uring_mt on a multi_thread runtime: a bare io_uring read future, no posixrt).

  --rounds N         interleaved rounds; figures are medians over them (3 to 99, default 21)
  --ops N            QD1 reads per engine per round (100 to 1000000, default 5000)
  --qd32-ops N       QD32 reads per engine per round (320 to 10000000, default 64000)
  --file-size-mb N   size of the test file in MiB (1 to 4096, default 256; it must fit
                     in the free space of the temp dir, $TMPDIR or /tmp)
  --only E1,E2,...   measure only these engines, comma-separated (ratios that need
                     another print n/a), from:
{engines}
  --json             one JSON line instead of the table

Build with `--features peers` (the peers are optional dependencies).";

/// [`USAGE`] with the engines `--only` takes listed under it, from [`ENGINES`]
/// (the list cannot go stale), in lines of at most 88 columns.
fn usage() -> String {
    const INDENT: &str = "                     ";
    let mut lines = vec![String::from(INDENT)];
    for (i, e) in ENGINES.iter().enumerate() {
        let word = if i + 1 < ENGINES.len() {
            format!("{e},")
        } else {
            e.to_string()
        };
        let line = lines.last_mut().expect("one line at least");
        if line.len() > INDENT.len() && line.len() + 1 + word.len() > 88 {
            lines.push(format!("{INDENT}{word}"));
        } else {
            if line.len() > INDENT.len() {
                line.push(' ');
            }
            line.push_str(&word);
        }
    }
    USAGE.replace("{engines}", &lines.join("\n"))
}

/// The command line.
pub struct Args {
    pub rounds: usize,
    pub ops: usize,
    pub qd32_ops: usize,
    pub size_mb: usize,
    pub only: Option<String>,
    pub json: bool,
}

/// The command line, or a usage error (one line on standard error, exit 2).
pub fn parse() -> Args {
    let mut a = Args {
        rounds: 21,
        ops: 5000,
        qd32_ops: 64_000,
        size_mb: 256,
        only: None,
        json: false,
    };
    let mut it = args::Args::new("aio_peers", &usage());
    while let Some(s) = it.next() {
        match s.as_str() {
            "--rounds" => a.rounds = it.value_in("--rounds", 3..=99),
            "--ops" => a.ops = it.value_in("--ops", 100..=1_000_000),
            "--qd32-ops" => a.qd32_ops = it.value_in("--qd32-ops", 320..=10_000_000),
            "--file-size-mb" => a.size_mb = it.value_in("--file-size-mb", 1..=4096),
            "--json" => a.json = true,
            "--only" => a.only = Some(it.engines("--only", &ENGINES)),
            other => it.unknown(other),
        }
    }
    it.check_temp_space("--file-size-mb", a.size_mb);
    a
}
