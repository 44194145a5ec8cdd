//! The engines of `aio_peers` that are not posixrt: the raw `io-uring` crate, the
//! floor under a tokio future (`tokio_bare_uring`, `_join`, `_mt`), tokio-uring,
//! monoio, `tokio::fs` and `pread`.

use std::cell::RefCell;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use posixrt::advise::AlignedBuf;

use crate::bare_uring;
use crate::common::{
    block, check, err, file_len, join_in_flight, runtime, Engine, Offsets, BLOCK, QD,
};

/// [`block`] for tokio-uring and monoio, whose reads take buffer types of their
/// own.
struct PeerBlock(AlignedBuf);

// SAFETY (the four impls below): the `AlignedBuf` owns its heap block, which
// does not move when the value moves, and all of it is initialised (zeroed when
// allocated), so its whole length is both initialised and writable.
unsafe impl monoio::buf::IoBuf for PeerBlock {
    fn read_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.0.len()
    }
}
// SAFETY: see above.
unsafe impl monoio::buf::IoBufMut for PeerBlock {
    fn write_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.0.len()
    }
    unsafe fn set_init(&mut self, _pos: usize) {}
}
// SAFETY: see above.
unsafe impl tokio_uring::buf::IoBuf for PeerBlock {
    fn stable_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.0.len()
    }
    fn bytes_total(&self) -> usize {
        self.0.len()
    }
}
// SAFETY: see above.
unsafe impl tokio_uring::buf::IoBufMut for PeerBlock {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, _pos: usize) {}
}

// ------------------------------------------------------------------ raw io_uring

struct RawUring {
    ring: io_uring::IoUring,
    file: Arc<File>,
    offs: Offsets,
    bufs: AlignedBuf,
}

impl Engine for RawUring {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        use io_uring::{opcode, types};
        let fd = types::Fd(self.file.as_raw_fd());
        for _ in 0..ops {
            let t = Instant::now();
            let e = opcode::Read::new(fd, self.bufs.as_mut_ptr(), BLOCK as u32)
                .offset(self.offs.next())
                .build()
                .user_data(1);
            // SAFETY: the buffer outlives the request: we wait for its completion below.
            unsafe { self.ring.submission().push(&e).map_err(err)? };
            self.ring.submit_and_wait(1).map_err(err)?;
            let cqe = self.ring.completion().next().ok_or("no completion")?;
            check(cqe.result().max(0) as usize)?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        use io_uring::{opcode, types};
        let fd = types::Fd(self.file.as_raw_fd());
        let t = Instant::now();
        for _ in 0..ops / QD {
            for i in 0..QD {
                let e = opcode::Read::new(fd, self.bufs[i * BLOCK..].as_mut_ptr(), BLOCK as u32)
                    .offset(self.offs.next())
                    .build()
                    .user_data(i as u64);
                // SAFETY: the buffers outlive the batch: we wait for every completion.
                unsafe { self.ring.submission().push(&e).map_err(err)? };
            }
            let mut n = 0;
            while n < QD {
                self.ring.submit_and_wait(QD - n).map_err(err)?;
                for cqe in self.ring.completion() {
                    check(cqe.result().max(0) as usize)?;
                    n += 1;
                }
            }
        }
        Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

// ------------------------------------------------------------------ the floor under tokio

/// Reads through [`bare_uring`]: what `posixrt_await` (or, with `one_task`,
/// `posixrt_await_join`) would cost if posixrt's own work cost nothing (same
/// runtime, same tasks, same loop).
struct BareUring {
    rt: tokio::runtime::Runtime,
    file: Arc<File>,
    seed: u64,
    /// QD32 as `posixrt_await_join`: 32 futures in one task.
    one_task: bool,
}

impl BareUring {
    /// Runs `tasks` reading tasks of `per` reads each beside a flusher; each
    /// task pushes its latencies (ns) to `lat` if given.
    fn run(
        &mut self,
        tasks: usize,
        per: usize,
        mut lat: Option<&mut Vec<u64>>,
    ) -> Result<(), String> {
        let ring = bare_uring::BareRing::new(256, self.file.as_raw_fd()).map_err(err)?;
        let size = file_len(&self.file);
        self.seed += 1;
        let seed = self.seed;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let timed = lat.is_some();
        let got = self.rt.block_on(async {
            let flusher = tokio::spawn(Arc::clone(&ring).flusher(Arc::clone(&stop)));
            let readers: Vec<_> = (0..tasks)
                .map(|k| {
                    let ring = Arc::clone(&ring);
                    tokio::spawn(async move {
                        let mut offs = Offsets::new(size, seed * 64 + k as u64);
                        let mut buf = block()?;
                        let mut lat = Vec::with_capacity(if timed { per } else { 0 });
                        for _ in 0..per {
                            // (The clock is read only when timed: QD32 reads it
                            // once per run, as the other engines do.)
                            let t = timed.then(Instant::now);
                            let (r, b) = ring.read(offs.next(), buf).await;
                            check(r.max(0) as usize)?;
                            buf = b;
                            if let Some(t) = t {
                                lat.push(t.elapsed().as_nanos() as u64);
                            }
                        }
                        Ok::<_, String>(lat)
                    })
                })
                .collect();
            let mut all = Vec::new();
            for r in readers {
                all.extend(r.await.map_err(err)??);
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
            // (Woken by hand: nothing else would wake it now.)
            let _ = ring.read(0, block()?).await;
            flusher.await.map_err(err)?.map_err(err)?;
            Ok::<_, String>(all)
        })?;
        if let Some(l) = lat.as_mut() {
            l.extend(got);
        }
        Ok(())
    }
}

impl BareUring {
    /// `n` reads by one task that keeps 32 in flight (as
    /// [`join_reads`](crate::posixrt_engines::join_reads)),
    /// beside a flusher.
    fn run_join(&mut self, n: usize) -> Result<(), String> {
        let ring = bare_uring::BareRing::new(256, self.file.as_raw_fd()).map_err(err)?;
        let size = file_len(&self.file);
        self.seed += 1;
        let mut offs = Offsets::new(size, self.seed * 64);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.rt.block_on(async {
            let flusher = tokio::spawn(Arc::clone(&ring).flusher(Arc::clone(&stop)));
            join_in_flight(
                n,
                |buf| ring.read(offs.next(), buf),
                |(r, buf)| check(r.max(0) as usize).map(|()| buf),
            )
            .await?;
            stop.store(true, std::sync::atomic::Ordering::Release);
            let _ = ring.read(0, block()?).await;
            flusher.await.map_err(err)?.map_err(err)
        })
    }
}

impl Engine for BareUring {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        self.run(1, ops, Some(lat))
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        let t = Instant::now();
        if self.one_task {
            self.run_join(ops / QD * QD)?;
            return Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()));
        }
        self.run(QD, ops / QD, None)?;
        Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

// ------------------------------------------------------------------ tokio-uring, monoio

/// An engine over a completion-based runtime whose file reads take and give back
/// an owned buffer (`read_at(buf, pos) -> (Result<usize>, buf)`): tokio-uring and
/// monoio have the same shape, and differ in their runtime, file and spawn.
macro_rules! owned_buf_engine {
    ($name:ident, $rt:ty, $file:ty, $spawn:path, |$t:ident| $join:expr) => {
        struct $name {
            rt: $rt,
            file: Rc<$file>,
            size: usize,
            seed: u64,
        }

        impl Engine for $name {
            fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
                self.seed += 1;
                let mut offs = Offsets::new(self.size, self.seed);
                let file = Rc::clone(&self.file);
                self.rt.block_on(async move {
                    let mut buf = PeerBlock(block()?);
                    for _ in 0..ops {
                        let t = Instant::now();
                        let (r, b) = file.read_at(buf, offs.next()).await;
                        check(r.map_err(err)?)?;
                        buf = b;
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok(())
                })
            }

            fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
                let per = ops / QD;
                self.seed += 1;
                let (seed, size) = (self.seed, self.size);
                let file = Rc::clone(&self.file);
                let t = Instant::now();
                self.rt.block_on(async move {
                    let tasks: Vec<_> = (0..QD)
                        .map(|k| {
                            let file = Rc::clone(&file);
                            $spawn(async move {
                                let mut offs = Offsets::new(size, seed * 64 + k as u64);
                                let mut buf = PeerBlock(block()?);
                                for _ in 0..per {
                                    let (r, b) = file.read_at(buf, offs.next()).await;
                                    check(r.map_err(err)?)?;
                                    buf = b;
                                }
                                Ok::<_, String>(())
                            })
                        })
                        .collect();
                    for $t in tasks {
                        $join?;
                    }
                    Ok::<_, String>(())
                })?;
                Ok(Some((per * QD) as f64 / t.elapsed().as_secs_f64()))
            }
        }
    };
}

owned_buf_engine!(
    TokioUring,
    tokio_uring::Runtime,
    tokio_uring::fs::File,
    tokio_uring::spawn,
    |t| t.await.map_err(err)?
);
owned_buf_engine!(
    Monoio,
    monoio::Runtime<monoio::time::TimeDriver<monoio::IoUringDriver>>,
    monoio::fs::File,
    monoio::spawn,
    |t| t.await
);

// ------------------------------------------------------------------ tokio::fs

struct TokioFs {
    rt: tokio::runtime::Runtime,
    /// One handle per task: a `tokio::fs::File` has one cursor (seek + read).
    files: Vec<Rc<RefCell<Option<tokio::fs::File>>>>,
    size: usize,
    seed: u64,
}

async fn seek_read(f: &mut tokio::fs::File, off: u64, buf: &mut [u8]) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    f.seek(std::io::SeekFrom::Start(off)).await.map_err(err)?;
    f.read_exact(buf).await.map_err(err)?;
    Ok(())
}

impl Engine for TokioFs {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        self.seed += 1;
        let mut offs = Offsets::new(self.size, self.seed);
        let mut f = self.files[0].borrow_mut().take().ok_or("file lost")?;
        let r = self.rt.block_on(async {
            let mut buf = block()?;
            for _ in 0..ops {
                let t = Instant::now();
                seek_read(&mut f, offs.next(), &mut buf).await?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
            Ok(())
        });
        *self.files[0].borrow_mut() = Some(f);
        r
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        let per = ops / QD;
        self.seed += 1;
        let (seed, size) = (self.seed, self.size);
        let mut files = Vec::with_capacity(QD);
        for f in &self.files {
            files.push(f.borrow_mut().take().ok_or("file lost")?);
        }
        let t = Instant::now();
        let back = self.rt.block_on(async move {
            let tasks: Vec<_> = files
                .into_iter()
                .enumerate()
                .map(|(k, mut f)| {
                    tokio::spawn(async move {
                        let mut offs = Offsets::new(size, seed * 64 + k as u64);
                        let mut buf = block()?;
                        for _ in 0..per {
                            seek_read(&mut f, offs.next(), &mut buf).await?;
                        }
                        Ok::<_, String>(f)
                    })
                })
                .collect();
            let mut back = Vec::with_capacity(QD);
            for t in tasks {
                back.push(t.await.map_err(err)??);
            }
            Ok::<_, String>(back)
        })?;
        let rate = (per * QD) as f64 / t.elapsed().as_secs_f64();
        for (slot, f) in self.files.iter().zip(back) {
            *slot.borrow_mut() = Some(f);
        }
        Ok(Some(rate))
    }
}

// ------------------------------------------------------------------ pread

struct Pread {
    file: Arc<File>,
    offs: Offsets,
    buf: AlignedBuf,
}

impl Engine for Pread {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        use std::os::unix::fs::FileExt;
        for _ in 0..ops {
            let t = Instant::now();
            check(
                self.file
                    .read_at(&mut self.buf, self.offs.next())
                    .map_err(err)?,
            )?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    fn qd32(&mut self, _ops: usize) -> Result<Option<f64>, String> {
        Ok(None)
    }
}

// ------------------------------------------------------------------ build

/// The engine `name` other than posixrt's, reading `file` (of `size` bytes;
/// `path` opens it again, for the peers that open a file by path: it is
/// unlinked, so that path is its descriptor's, under /proc/self/fd).
pub fn build(
    name: &str,
    file: &Arc<File>,
    path: &std::path::Path,
    size: usize,
) -> Result<Box<dyn Engine>, String> {
    Ok(match name {
        "io_uring" => Box::new(RawUring {
            ring: io_uring::IoUring::new(256).map_err(err)?,
            file: Arc::clone(file),
            offs: Offsets::new(size, 3),
            bufs: AlignedBuf::new(BLOCK * QD, BLOCK).map_err(err)?,
        }),
        "tokio_bare_uring" | "tokio_bare_uring_join" | "tokio_bare_uring_mt" => {
            Box::new(BareUring {
                rt: runtime(name.ends_with("_mt"))?,
                file: Arc::clone(file),
                seed: match name {
                    "tokio_bare_uring" => 0,
                    "tokio_bare_uring_mt" => 12,
                    _ => 10,
                },
                one_task: name == "tokio_bare_uring_join",
            })
        }
        "tokio_uring" => {
            let rt = tokio_uring::Runtime::new(&tokio_uring::builder()).map_err(err)?;
            let f = rt
                .block_on(tokio_uring::fs::File::open(path))
                .map_err(err)?;
            Box::new(TokioUring {
                rt,
                file: Rc::new(f),
                size,
                seed: 4,
            })
        }
        "monoio" => {
            let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                .enable_timer()
                .build()
                .map_err(err)?;
            let f = rt.block_on(monoio::fs::File::open(path)).map_err(err)?;
            Box::new(Monoio {
                rt,
                file: Rc::new(f),
                size,
                seed: 5,
            })
        }
        "tokio_fs" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(err)?;
            let files = rt.block_on(async {
                let mut v = Vec::with_capacity(QD);
                for _ in 0..QD {
                    let f = tokio::fs::File::open(path).await.map_err(err)?;
                    v.push(Rc::new(RefCell::new(Some(f))));
                }
                Ok::<_, String>(v)
            })?;
            Box::new(TokioFs {
                rt,
                files,
                size,
                seed: 6,
            })
        }
        "pread" => Box::new(Pread {
            file: Arc::clone(file),
            offs: Offsets::new(size, 7),
            buf: block()?,
        }),
        other => return Err(format!("unknown engine {other}")),
    })
}
