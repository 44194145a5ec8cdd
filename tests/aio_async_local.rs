//! AIO futures in a tokio `LocalSet` (`spawn_local`: tasks that are not
//! `Send`, as programs with `Rc` state or thread-bound handles have): every
//! read completes with its bytes, on both engines and both runtime flavours,
//! and the reads of one turn of local tasks enter the ring together.
#![cfg(feature = "tokio")]

use std::cell::Cell;
use std::fs::File;
use std::rc::Rc;
use std::sync::Arc;

use posixrt::aio::{Aio, Backend};

#[allow(unused_macros, unused_imports)]
mod common;
use common::{both, ctx, pattern};

const BLOCK: usize = 4096;
const BLOCKS: usize = 32;
const TASKS: usize = 32;
const READS: usize = 24;

/// `TASKS` local tasks, each reading `READS` blocks of `file` (the two future
/// kinds in turn) and checking their bytes; they count their reads in one
/// `Rc` (so the tasks are not `Send`). Returns the count.
async fn local_reads(aio: &Aio, file: &Arc<File>) -> usize {
    let data = Rc::new(pattern(BLOCK * BLOCKS));
    let done = Rc::new(Cell::new(0usize));
    let tasks: Vec<_> = (0..TASKS)
        .map(|k| {
            let (aio, file) = (aio.clone(), Arc::clone(file));
            let (data, done) = (Rc::clone(&data), Rc::clone(&done));
            tokio::task::spawn_local(async move {
                for i in 0..READS {
                    let at = (k * 5 + i * 3) % BLOCKS * BLOCK;
                    let buf = vec![0u8; BLOCK];
                    let c = if i % 2 == 0 {
                        aio.read_async(Arc::clone(&file), at as i64, buf).await
                    } else {
                        aio.read(&*file, at as i64, buf).unwrap().await
                    }
                    .unwrap();
                    assert_eq!(c.result.as_ref().copied().unwrap(), BLOCK);
                    assert_eq!(c.data(), &data[at..at + BLOCK], "task {k} read {i}");
                    done.set(done.get() + 1);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    done.get()
}

/// A memory file (its io_uring reads go to the kernel's workers, so the
/// futures wait for the reactor) and a cached disk file (its reads complete
/// inline).
fn files() -> [Arc<File>; 2] {
    let data = pattern(BLOCK * BLOCKS);
    let memfd = rustix::fs::memfd_create("aio_local", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::io::pwrite(&memfd, &data, 0).unwrap();
    [
        Arc::new(File::from(memfd)),
        Arc::new(common::disk_temp_file(&data)),
    ]
}

fn local_set_current_thread(b: Backend) {
    let aio = ctx(b);
    let rt = common::current_rt();
    for f in files() {
        let local = tokio::task::LocalSet::new();
        let n = rt.block_on(local.run_until(local_reads(&aio, &f)));
        assert_eq!(n, TASKS * READS);
    }
}
both!(local_set_on_current_thread, local_set_current_thread);

fn local_set_multi_thread(b: Backend) {
    let aio = ctx(b);
    let rt = common::multi_rt();
    for f in files() {
        let local = tokio::task::LocalSet::new();
        let n = local.block_on(&rt, local_reads(&aio, &f));
        assert_eq!(n, TASKS * READS);
    }
}
both!(local_set_on_multi_thread, local_set_multi_thread);

/// Once local tasks have read a while, the reads that `TASKS` local tasks make
/// in one turn reach the kernel together: every `aio_submit` of the file comes
/// before its first `aio_complete`. (tokio counts a `LocalSet`'s tasks apart
/// from the runtime's, so the first reads look like a lone task's and enter
/// at once: in the first turn, 16 one by one, then the rest together, as the
/// thread learns that waiting for the turn's end gathers others.)
#[test]
fn uring_local_tasks_of_one_turn_enter_together() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::fd::AsRawFd;
    let aio = ctx(Backend::Uring);
    let [_, f] = files();
    let fd = f.as_raw_fd();
    let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let rt = common::current_rt();
    let local = tokio::task::LocalSet::new();
    let one_turn = || async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|k| {
                let (aio, f) = (aio.clone(), Arc::clone(&f));
                tokio::task::spawn_local(async move {
                    let at = (k % BLOCKS * BLOCK) as i64;
                    let c = aio.read_async(f, at, vec![0u8; BLOCK]).await.unwrap();
                    assert_eq!(c.result.as_ref().copied().unwrap(), BLOCK);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    };
    rt.block_on(local.run_until(async {
        for _ in 0..3 {
            one_turn().await;
        }
    }));
    let t = posixrt::trace::Trace::create(&posixrt::trace::TraceAttr::new()).unwrap();
    t.start().unwrap();
    rt.block_on(local.run_until(one_turn()));
    assert_eq!(
        common::submit_complete_order(t, me, fd),
        format!("{}{}", "s".repeat(TASKS), "c".repeat(TASKS))
    );
}
