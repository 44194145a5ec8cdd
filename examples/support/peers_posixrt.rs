//! The posixrt engines of `aio_peers`: `posixrt_suspend` and the four `.await`
//! forms (`posixrt_await`, `_request`, `_join`, `_mt`).

use std::fs::File;
use std::sync::Arc;
use std::time::Instant;

use posixrt::advise::AlignedBuf;
use posixrt::aio::{Aio, Backend, ListMode, Notify, Op, RegisteredFd};

use crate::common::{block, check, err, file_len, join_in_flight, runtime, Engine, Offsets, QD};

struct PosixrtSuspend {
    /// The file registered with `aio` (see [`register`]).
    _reg: RegisteredFd<'static>,
    aio: Aio,
    file: Arc<File>,
    offs: Offsets,
    bufs: Vec<AlignedBuf>,
}

impl Engine for PosixrtSuspend {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        let mut buf = match self.bufs.pop() {
            Some(b) => b,
            None => block()?,
        };
        for _ in 0..ops {
            let t = Instant::now();
            let mut r = self
                .aio
                .read(&*self.file, self.offs.next() as i64, buf)
                .map_err(err)?;
            self.aio.suspend([&r], None).map_err(err)?;
            let c = r.aio_return().map_err(err)?;
            check(c.result.map_err(err)?)?;
            buf = c.buf.ok_or("the buffer did not come back")?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        self.bufs.push(buf);
        Ok(())
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        while self.bufs.len() < QD {
            self.bufs.push(block()?);
        }
        let t = Instant::now();
        for _ in 0..ops / QD {
            let file = &*self.file;
            let offs = &mut self.offs;
            let list = self
                .aio
                .lio_listio(
                    ListMode::Wait,
                    self.bufs
                        .drain(..)
                        .map(|b| Some(Op::read(file, offs.next() as i64, b))),
                    Notify::None,
                )
                .map_err(err)?;
            for c in list.take_all().map_err(err)?.into_iter().flatten() {
                check(c.result.map_err(err)?)?;
                self.bufs.extend(c.buf);
            }
        }
        Ok(Some((ops / QD * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

struct PosixrtAwait {
    rt: tokio::runtime::Runtime,
    /// The file, registered with `aio`: the futures borrow the guard (no
    /// reference count per read, as an `Arc<File>` clone would take).
    reg: Arc<RegisteredFd<'static>>,
    aio: Aio,
    file: Arc<File>,
    seed: u64,
    /// `aio.read_async(..).await` (submitted when polled) rather than
    /// `aio.read(..)?.await` (submitted by the call).
    submit_on_poll: bool,
    /// QD32 in one task (see [`join_reads`]) rather than 32 tasks.
    one_task: bool,
    /// QD1 in a spawned task (on a `multi_thread` runtime's worker) rather
    /// than in `block_on`'s body.
    spawn_qd1: bool,
}

/// `n` reads of `BLOCK` bytes at `offs` with 32 futures in flight in the calling
/// task (see [`join_in_flight`](crate::common::join_in_flight)).
pub async fn join_reads(
    aio: &Aio,
    reg: &RegisteredFd<'_>,
    offs: &mut Offsets,
    n: usize,
) -> Result<(), String> {
    join_in_flight(
        n,
        |buf| aio.read_async(reg, offs.next() as i64, buf),
        |c| {
            let c = c.map_err(err)?;
            check(c.result.map_err(err)?)?;
            c.buf
                .ok_or_else(|| "the buffer did not come back".to_string())
        },
    )
    .await
}

impl Engine for PosixrtAwait {
    fn qd1(&mut self, ops: usize, lat: &mut Vec<u64>) -> Result<(), String> {
        self.seed += 1;
        let mut offs = Offsets::new(file_len(&self.file), self.seed);
        if self.spawn_qd1 {
            let (aio, reg) = (self.aio.clone(), Arc::clone(&self.reg));
            let got = self.rt.block_on(async move {
                tokio::spawn(async move {
                    let mut buf = block()?;
                    let mut lat = Vec::with_capacity(ops);
                    for _ in 0..ops {
                        let t = Instant::now();
                        let c = aio
                            .read_async(&*reg, offs.next() as i64, buf)
                            .await
                            .map_err(err)?;
                        check(c.result.map_err(err)?)?;
                        buf = c.buf.ok_or("the buffer did not come back")?;
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    Ok::<_, String>(lat)
                })
                .await
                .map_err(err)?
            })?;
            lat.extend(got);
            return Ok(());
        }
        let (aio, file, reg) = (&self.aio, &self.file, &*self.reg);
        self.rt.block_on(async {
            let mut buf = block()?;
            for _ in 0..ops {
                let t = Instant::now();
                let c = if self.submit_on_poll {
                    aio.read_async(reg, offs.next() as i64, buf).await
                } else {
                    aio.read(&**file, offs.next() as i64, buf)
                        .map_err(err)?
                        .await
                }
                .map_err(err)?;
                check(c.result.map_err(err)?)?;
                buf = c.buf.ok_or("the buffer did not come back")?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
            Ok(())
        })
    }

    fn qd32(&mut self, ops: usize) -> Result<Option<f64>, String> {
        let per = ops / QD;
        let size = file_len(&self.file);
        self.seed += 1;
        let seed = self.seed;
        let submit_on_poll = self.submit_on_poll;
        let t = Instant::now();
        if self.one_task {
            let (aio, reg) = (&self.aio, &*self.reg);
            let mut offs = Offsets::new(size, seed * 64);
            self.rt
                .block_on(join_reads(aio, reg, &mut offs, per * QD))?;
            return Ok(Some((per * QD) as f64 / t.elapsed().as_secs_f64()));
        }
        self.rt.block_on(async {
            let tasks: Vec<_> = (0..QD)
                .map(|k| {
                    let (aio, file) = (self.aio.clone(), Arc::clone(&self.file));
                    let reg = Arc::clone(&self.reg);
                    tokio::spawn(async move {
                        let mut offs = Offsets::new(size, seed * 64 + k as u64);
                        let mut buf = block()?;
                        for _ in 0..per {
                            let c = if submit_on_poll {
                                aio.read_async(&*reg, offs.next() as i64, buf).await
                            } else {
                                aio.read(&*file, offs.next() as i64, buf)
                                    .map_err(err)?
                                    .await
                            }
                            .map_err(err)?;
                            check(c.result.map_err(err)?)?;
                            buf = c.buf.ok_or("the buffer did not come back")?;
                        }
                        Ok::<_, String>(())
                    })
                })
                .collect();
            for t in tasks {
                t.await.map_err(err)??;
            }
            Ok::<_, String>(())
        })?;
        Ok(Some((per * QD) as f64 / t.elapsed().as_secs_f64()))
    }
}

/// Registers the test file with `aio` (`Aio::register_fd`), as a program with
/// one busy file would. The guard borrows the file for as long as the engine
/// lives: a handle to it is leaked for that (one `Arc` for the process).
fn register(aio: &Aio, file: &Arc<File>) -> Result<RegisteredFd<'static>, String> {
    let file: &'static File = Box::leak(Box::new(Arc::clone(file)));
    aio.register_fd(file).map_err(err)
}

/// The posixrt engine `name`, reading `file` (of `size` bytes).
pub fn build(name: &str, file: &Arc<File>, size: usize) -> Result<Box<dyn Engine>, String> {
    Ok(match name {
        "posixrt_suspend" => {
            let aio = Aio::builder()
                .backend(Backend::Uring)
                .build()
                .map_err(err)?;
            Box::new(PosixrtSuspend {
                _reg: register(&aio, file)?,
                aio,
                file: Arc::clone(file),
                offs: Offsets::new(size, 1),
                bufs: Vec::new(),
            })
        }
        "posixrt_await" | "posixrt_await_request" | "posixrt_await_join" | "posixrt_await_mt" => {
            let aio = Aio::builder()
                .backend(Backend::Uring)
                .build()
                .map_err(err)?;
            Box::new(PosixrtAwait {
                rt: runtime(name.ends_with("_mt"))?,
                reg: Arc::new(register(&aio, file)?),
                aio,
                file: Arc::clone(file),
                seed: match name {
                    "posixrt_await" => 2,
                    "posixrt_await_request" => 8,
                    "posixrt_await_mt" => 11,
                    _ => 9,
                },
                submit_on_poll: name != "posixrt_await_request",
                one_task: name == "posixrt_await_join",
                spawn_qd1: name == "posixrt_await_mt",
            })
        }
        other => return Err(format!("unknown engine {other}")),
    })
}
