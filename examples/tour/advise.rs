//! Tour section: `posixrt::advise`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use posixrt::advise::{self, Advice, AlignedBuf, FallocateMode, MemAdvice};

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("posixrt-tour-advise-{}", std::process::id()));
    let result = show(&path);
    let _ = std::fs::remove_file(&path);
    result
}

fn show(path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        // A bare "No such file or directory" would not say which file, nor that
        // the temp dir is the caller's to choose.
        .map_err(|e| {
            format!(
                "cannot create {}: {e}; set TMPDIR to a writable directory",
                path.display()
            )
        })?;
    advise::fallocate(&f, 0, 1 << 20)?;
    outln!("   posix_fallocate: {} reserved 1 MiB", path.display());
    advise::fallocate_mode(&f, FallocateMode::KeepSize, 1 << 20, 1 << 20)?;
    outln!(
        "   fallocate(KEEP_SIZE): 1 MiB more preallocated, size still {}",
        f.metadata()?.len()
    );
    f.write_all(&[1u8; 4096])?;
    advise::fdatasync(&f)?;
    outln!("   fdatasync: data on stable storage");
    for a in [Advice::Sequential, Advice::NoReuse, Advice::WillNeed] {
        advise::fadvise(&f, 0, 0, a)?;
        outln!("   posix_fadvise({})", a.name());
    }
    match advise::fadvise(&f, 0, -1, Advice::Random) {
        Err(e) => outln!("   a negative length is refused: {e}"),
        Ok(()) => outln!("   (a negative length was accepted?)"),
    }

    match advise::direct_io_alignment(&f) {
        Ok(a) => {
            outln!(
                "   O_DIRECT here needs buffers aligned to {} and offsets/lengths to {} (from {:?})",
                a.mem_align, a.offset_align, a.source
            );
            let direct = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path);
            match direct {
                Ok(d) => {
                    let mut buf = a.alloc(a.round_up(4096).unwrap_or(4096))?;
                    let n = rustix::io::pread(&d, &mut buf[..], 0)?;
                    outln!(
                        "   O_DIRECT read of {n} bytes into an AlignedBuf: first byte {}",
                        buf[0]
                    );
                }
                Err(e) => outln!("   O_DIRECT open refused here: {e}"),
            }
        }
        Err(e) => outln!("   no O_DIRECT on this filesystem: {e}"),
    }

    let mut buf = AlignedBuf::with_pages(4)?;
    buf.fill(0xAA);
    buf.advise(MemAdvice::WillNeed)?;
    buf.advise(MemAdvice::DontNeed)?;
    outln!(
        "   madvise(MADV_DONTNEED) on an owned {}-byte AlignedBuf: it reads back as {:#x}",
        buf.len(),
        buf[0]
    );
    match AlignedBuf::new(64, 24) {
        Err(e) => outln!("   alignment 24 is refused: {e}"),
        Ok(_) => outln!("   (alignment 24 was accepted?)"),
    }
    Ok(())
}
