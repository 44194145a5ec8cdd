//! Criterion benches of posixrt AIO: submit + complete of one 4 KiB read, and of a
//! 32-entry `lio_listio`, on io_uring and on the thread pool (cached file).

use std::hint::black_box;
use std::io::Write;

use criterion::{criterion_group, criterion_main, Criterion};
use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};

const BLOCK: usize = 4096;

/// A cached 1 MiB file on a real filesystem (memfd/tmpfs reads are not tried
/// inline by io_uring, so they would measure the kernel's worker hand-off).
fn file() -> std::fs::File {
    let path = std::env::temp_dir().join(format!("posixrt-aio-bench-{}", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&vec![0x5au8; 1 << 20]).unwrap();
    drop(f);
    let f = std::fs::File::open(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    f
}

fn bench(c: &mut Criterion) {
    let f = file();
    for backend in [Backend::Uring, Backend::Threads] {
        let Ok(aio) = Aio::builder().backend(backend).build() else {
            eprintln!("skipping {backend}: not available here");
            continue;
        };
        let mut g = c.benchmark_group(format!("aio_{backend}"));
        let mut buf = Some(vec![0u8; BLOCK]);
        let mut off = 0i64;
        g.bench_function("read_4k_submit_complete", |b| {
            b.iter(|| {
                off = (off + BLOCK as i64) % (1 << 20);
                let mut r = aio.read(&f, off, buf.take().unwrap()).unwrap();
                aio.suspend([&r], None).unwrap();
                let c = r.aio_return().unwrap();
                black_box(c.result.as_ref().unwrap());
                buf = c.buf;
            })
        });
        let mut bufs: Vec<Vec<u8>> = (0..32).map(|_| vec![0u8; BLOCK]).collect();
        g.bench_function("lio_listio_32x4k_wait", |b| {
            b.iter(|| {
                let list = aio
                    .lio_listio(
                        ListMode::Wait,
                        bufs.drain(..)
                            .enumerate()
                            .map(|(i, b)| Some(Op::read(&f, (i * BLOCK) as i64, b))),
                        Notify::None,
                    )
                    .unwrap();
                for c in list.take_all().unwrap().into_iter().flatten() {
                    black_box(c.result.as_ref().unwrap());
                    bufs.extend(c.buf);
                }
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
