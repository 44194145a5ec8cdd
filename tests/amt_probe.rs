use posixrt::advise::*;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

fn show<T: std::fmt::Debug>(what: &str, r: posixrt::Result<T>) {
    match r {
        Ok(v) => println!("{what}: Ok({v:?})"),
        Err(e) => println!(
            "{what}: Err kind={:?} errno={:?} call={} msg={:?} hint={:?}",
            e.kind(),
            e.errno(),
            e.call(),
            e.message(),
            e.hint()
        ),
    }
}

#[test]
fn probe() {
    let p = "/tmp/wt-amt/scratch/probe.dat";
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(p)
        .unwrap();
    show("fallocate neg len", fallocate(&f, 0, -1));
    show("fallocate zero", fallocate(&f, 0, 0));
    show("fallocate neg off", fallocate(&f, -5, 10));
    show("fadvise max 1", fadvise(&f, i64::MAX, 1, Advice::WillNeed));
    show("fadvise max 0", fadvise(&f, i64::MAX, 0, Advice::DontNeed));
    show("fadvise -1", fadvise(&f, 0, -1, Advice::DontNeed));
    let d = File::open("/tmp/wt-amt/scratch").unwrap();
    show("fallocate dir", fallocate(&d, 0, 10));
    show("fsync dir", fsync(&d));
    show("fadvise dir", fadvise(&d, 0, 0, Advice::WillNeed));
    let null = OpenOptions::new().write(true).open("/dev/null").unwrap();
    show("fsync null", fsync(&null));
    show("fadvise null", fadvise(&null, 0, 0, Advice::WillNeed));
    show("fallocate null", fallocate(&null, 0, 10));
    show("dio null", direct_io_alignment(&null));
    show("dio file", direct_io_alignment(&f));
    show("dio dir", direct_io_alignment(&d));
    let shm = "/dev/shm/amt-probe";
    let g = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(shm)
        .unwrap();
    show("dio shm file", direct_io_alignment(&g));
    show(
        "dio shm dir",
        direct_io_alignment(File::open("/dev/shm").unwrap()),
    );
    show(
        "fallocate shm punch",
        fallocate_mode(&g, FallocateMode::PunchHole, 0, 4096),
    );
    show("fallocate shm big", fallocate(&g, 0, i64::MAX));
    let wo = OpenOptions::new().write(true).open(shm).unwrap();
    show("dio shm wo", direct_io_alignment(&wo));
    let op = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(shm)
        .unwrap();
    show("dio shm opath", direct_io_alignment(&op));
    std::fs::remove_file(shm).unwrap();
    show("buf max", AlignedBuf::new(usize::MAX, 8).map(|b| b.len()));
    show(
        "buf isize max",
        AlignedBuf::new(isize::MAX as usize - 4095, 4096).map(|b| b.len()),
    );
    show(
        "buf 1<<62 align",
        AlignedBuf::new(0, 1 << 62).map(|b| b.len()),
    );
    show(
        "buf big align",
        AlignedBuf::new(1, 1 << 40).map(|b| b.len()),
    );
    show(
        "pages max",
        AlignedBuf::with_pages(usize::MAX / 4096).map(|b| b.len()),
    );
    show("buf 64G", AlignedBuf::new(1 << 46, 4096).map(|b| b.len()));
    let a = DirectIoAlignment {
        mem_align: 512,
        offset_align: 512,
        source: AlignmentSource::Statx,
    };
    show("alloc 0", a.alloc(0).map(|b| b.len()));
    println!("round_up max {:?}", a.round_up(usize::MAX));
    let mut b = AlignedBuf::new(8192, 4096).unwrap();
    show("advise huge", b.advise(MemAdvice::HugePage));
    show(
        "advise unaligned buf",
        AlignedBuf::new(100, 4096)
            .unwrap()
            .advise(MemAdvice::WillNeed),
    );
    show("madvise huge len", unsafe {
        madvise(b.as_mut_ptr(), usize::MAX - 100, MemAdvice::WillNeed)
    });
    show("madvise posixdontneed", unsafe {
        madvise(b.as_mut_ptr(), 8192, MemAdvice::PosixDontNeed)
    });
    let _ = std::fs::remove_file(p);
}
