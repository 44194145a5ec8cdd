//! `posixrt::advise::sync_file_range`: the write-back it starts and waits for
//! (the range's page-cache pages are clean afterwards, as `/proc/kpageflags`
//! shows), the range it checks before the call, the files it refuses, and the
//! `streaming_write` example that shows its usual pattern.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use posixrt::advise::{page_size, sync_file_range, SyncRangeFlags};
use posixrt::ErrorKind;

#[allow(unused_macros, unused_imports)]
mod common;
use common::disk_temp_file;

#[path = "common/example_bin.rs"]
mod example_bin;

/// `KPF_DIRTY` and `KPF_WRITEBACK` of `<linux/kernel-page-flags.h>`.
const KPF_DIRTY: u64 = 1 << 4;
const KPF_WRITEBACK: u64 = 1 << 8;

/// The `/proc/kpageflags` word of each page-cache page of `f` in
/// `first..first + n` (page indexes), through a shared read-only mapping;
/// `None` where the kernel hides page frame numbers (no CAP_SYS_ADMIN).
fn page_flags(f: &File, first: usize, n: usize) -> Option<Vec<u64>> {
    let page = page_size();
    // SAFETY: a fresh read-only shared mapping of the file, unmapped below;
    // nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n * page,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            (first * page) as libc::off_t,
        )
    };
    assert_ne!(
        base,
        libc::MAP_FAILED,
        "{}",
        std::io::Error::last_os_error()
    );
    let pagemap = File::open("/proc/self/pagemap").expect("open pagemap");
    let kpageflags = File::open("/proc/kpageflags").ok();
    let mut out = Some(Vec::with_capacity(n));
    for i in 0..n {
        let addr = base as usize + i * page;
        // SAFETY: `addr` lies inside the mapping, which covers file data (the
        // caller wrote these pages); reading faults the page in.
        unsafe { std::ptr::read_volatile(addr as *const u8) };
        let mut entry = [0u8; 8];
        pagemap
            .read_exact_at(&mut entry, (addr / page * 8) as u64)
            .expect("read pagemap");
        let entry = u64::from_ne_bytes(entry);
        let pfn = entry & ((1 << 55) - 1);
        assert!(entry & (1 << 63) != 0, "page {i} is not mapped");
        let (Some(kpf), true) = (&kpageflags, pfn != 0) else {
            out = None;
            break;
        };
        let mut flags = [0u8; 8];
        kpf.read_exact_at(&mut flags, pfn * 8)
            .expect("read kpageflags");
        if let Some(v) = out.as_mut() {
            v.push(u64::from_ne_bytes(flags));
        }
    }
    // SAFETY: the mapping made above, unmapped once.
    unsafe { libc::munmap(base, n * page) };
    out
}

/// Writes `data` at 0 and, where page flags can be read, checks that the
/// first `n` pages are dirty: rewrites up to three times if the kernel's
/// flusher cleaned them in between (it runs every few seconds).
fn write_dirty(f: &File, data: &[u8], n: usize) -> bool {
    /// `TMPFS_MAGIC` and `RAMFS_MAGIC` of `<linux/magic.h>`.
    const NO_WRITEBACK: [i64; 2] = [0x0102_1994, 0x8584_58f6];
    #[allow(clippy::unnecessary_cast)]
    let f_type = rustix::fs::fstatfs(f).unwrap().f_type as i64;
    if NO_WRITEBACK.contains(&f_type) {
        // Memory filesystems have no write-back: their pages stay dirty.
        f.write_all_at(data, 0).expect("write");
        println!("the temp dir is on a memory filesystem: only the data is checked");
        return false;
    }
    for _ in 0..3 {
        f.write_all_at(data, 0).expect("write");
        match page_flags(f, 0, n) {
            None => return false,
            Some(flags) if flags.iter().all(|&w| w & KPF_DIRTY != 0) => return true,
            Some(_) => continue,
        }
    }
    panic!("the pages written did not stay dirty long enough to be looked at");
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 + 1).collect()
}

#[test]
fn write_and_wait_after_leaves_the_range_clean() {
    let page = page_size();
    let f = disk_temp_file(&[]);
    let data = pattern(4 * page);
    let seen = write_dirty(&f, &data, 4);
    let flags = SyncRangeFlags::WRITE | SyncRangeFlags::WAIT_AFTER;
    sync_file_range(&f, 0, 2 * page as i64, flags).unwrap();
    if seen {
        let after = page_flags(&f, 0, 2).unwrap();
        for (i, w) in after.iter().enumerate() {
            assert_eq!(w & (KPF_DIRTY | KPF_WRITEBACK), 0, "page {i}: {w:#x}");
        }
    } else {
        println!("page flags hidden (no CAP_SYS_ADMIN): only the data is checked");
    }
    let mut back = vec![0u8; data.len()];
    f.read_exact_at(&mut back, 0).unwrap();
    assert_eq!(back, data);
}

#[test]
fn zero_nbytes_reaches_the_end_of_the_file() {
    let page = page_size();
    let f = disk_temp_file(&[]);
    let data = pattern(4 * page);
    let seen = write_dirty(&f, &data, 4);
    sync_file_range(&f, page as i64, 0, SyncRangeFlags::WRITE_AND_WAIT).unwrap();
    if seen {
        let after = page_flags(&f, 1, 3).unwrap();
        for (i, w) in after.iter().enumerate() {
            assert_eq!(w & (KPF_DIRTY | KPF_WRITEBACK), 0, "page {}: {w:#x}", i + 1);
        }
    }
    let mut back = vec![0u8; data.len()];
    f.read_exact_at(&mut back, 0).unwrap();
    assert_eq!(back, data);
}

#[test]
fn bad_ranges_are_refused_before_the_call() {
    let f = disk_temp_file(b"data");
    let w = SyncRangeFlags::WRITE;
    for (offset, nbytes, words) in [
        (-1, 0, "offset -1 is negative"),
        (0, -4096, "length -4096 is negative"),
        (i64::MAX, 1, "overflows off_t"),
        (1, i64::MAX, "overflows off_t"),
    ] {
        let e = sync_file_range(&f, offset, nbytes, w).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
        assert_eq!(e.call(), "sync_file_range");
        assert!(e.to_string().contains(words), "{e}");
    }
    // Checked before the kernel sees the descriptor: a pipe's bad range is
    // still a bad range.
    let (r, _w) = rustix::pipe::pipe().unwrap();
    let e = sync_file_range(&r, -1, 0, w).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // Past the end of the file, and up to the largest off_t, is no error.
    sync_file_range(&f, 1 << 40, 0, w).unwrap();
    sync_file_range(&f, i64::MAX, 0, SyncRangeFlags::WRITE_AND_WAIT).unwrap();
    sync_file_range(&f, 0, i64::MAX, w).unwrap();
}

#[test]
fn pipes_and_sockets_are_espipe_with_a_hint() {
    let (r, w) = rustix::pipe::pipe().unwrap();
    let (s1, _s2) = std::os::unix::net::UnixStream::pair().unwrap();
    let fds: [(&str, std::os::fd::BorrowedFd<'_>); 3] = [
        ("read end", std::os::fd::AsFd::as_fd(&r)),
        ("write end", std::os::fd::AsFd::as_fd(&w)),
        ("socket", std::os::fd::AsFd::as_fd(&s1)),
    ];
    for (what, fd) in fds {
        let e = sync_file_range(fd, 0, 0, SyncRangeFlags::WRITE).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ESPIPE), "{what}: {e}");
        assert_eq!(e.kind(), ErrorKind::Other, "{what}: {e}");
        let hint = e.hint().unwrap_or_default();
        assert!(hint.contains("pipes"), "{what}: {e}");
        assert!(
            e.to_string().contains("SYNC_FILE_RANGE_WRITE on 0+0"),
            "{e}"
        );
    }
}

#[test]
fn o_path_is_badfd_and_read_only_or_directory_is_accepted() {
    let dir = std::env::temp_dir();
    let o_path = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(&dir)
        .unwrap();
    let e = sync_file_range(&o_path, 0, 0, SyncRangeFlags::WRITE).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd, "{e}");
    assert!(e.hint().unwrap_or_default().contains("O_PATH"), "{e}");
    // Write-back needs no write access to the descriptor.
    let d = File::open(&dir).unwrap();
    sync_file_range(&d, 0, 0, SyncRangeFlags::WRITE_AND_WAIT).unwrap();
    let f = disk_temp_file(b"some bytes");
    let ro = File::open(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap();
    sync_file_range(&ro, 0, 0, SyncRangeFlags::WRITE_AND_WAIT).unwrap();
}

#[test]
fn flags_combine_name_and_round_trip() {
    let all = SyncRangeFlags::WAIT_BEFORE | SyncRangeFlags::WRITE | SyncRangeFlags::WAIT_AFTER;
    assert_eq!(all, SyncRangeFlags::WRITE_AND_WAIT);
    assert_eq!(all.bits(), 7);
    assert!(all.contains(SyncRangeFlags::WRITE));
    assert!(!SyncRangeFlags::WRITE.contains(SyncRangeFlags::WAIT_AFTER));
    assert_eq!(SyncRangeFlags::from_bits(2), Some(SyncRangeFlags::WRITE));
    assert_eq!(SyncRangeFlags::from_bits(8), None);
    assert_eq!(SyncRangeFlags::default(), SyncRangeFlags::NONE);
    assert_eq!(
        format!("{:?}", SyncRangeFlags::WRITE | SyncRangeFlags::WAIT_AFTER),
        "SYNC_FILE_RANGE_WRITE|SYNC_FILE_RANGE_WAIT_AFTER"
    );
    assert_eq!(format!("{:?}", SyncRangeFlags::NONE), "0");
}

#[test]
fn the_streaming_write_example_writes_every_chunk() {
    let bin = example_bin::example_bin("streaming_write");
    let path = std::env::temp_dir().join(format!("posixrt-streaming-{}", std::process::id()));
    let out = std::process::Command::new(&bin)
        .args(["--mib", "3", "--chunk-kib", "192", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    let data = std::fs::read(&path);
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("space: 3 MiB reserved"), "{stdout}");
    assert!(
        stdout.contains("wrote 3 MiB in 16 chunks of 192 KiB"),
        "{stdout}"
    );
    assert!(stdout.contains("fdatasync"), "{stdout}");
    let data = data.unwrap();
    assert_eq!(data.len(), 3 << 20);
    for (i, c) in data.chunks(192 << 10).enumerate() {
        let want = (i % 251) as u8 + 1;
        assert!(c.iter().all(|&b| b == want), "chunk {i}");
    }
    // A usage error is exit 2 with one line; --help is exit 0.
    let bad = std::process::Command::new(&bin)
        .args(["--mib", "0"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--mib"));
    let help = std::process::Command::new(&bin)
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("Usage: streaming_write"));
}
