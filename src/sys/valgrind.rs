//! Valgrind client requests: no-ops (a few register rotations) when the
//! program does not run under valgrind.
//!
//! - An aiocb's private tag (`__glibc_reserved[0]`) is read at submission, to
//!   refuse an aiocb already in flight, before the library ever wrote it: in an
//!   aiocb from `malloc` it is uninitialised, and memcheck reported a
//!   conditional jump on it in every program that submits such an aiocb (the
//!   seed's listings 7.7 and 7.8), where glibc gives none. Any value there is
//!   handled (only the library's own tag for this address and process matches),
//!   so the word is declared defined first.
//! - memcheck does not see the kernel fill a read's buffer through io_uring's
//!   shared rings (it sees a `pread` of the thread engine): every use of bytes
//!   read that way was reported as uninitialised. The reap declares the bytes
//!   a read completion moved defined.

/// memcheck's `VG_USERREQ__MAKE_MEM_DEFINED` (`VG_USERREQ_TOOL_BASE('M','C') + 2`).
const MAKE_MEM_DEFINED: usize = 0x4d43_0002;

/// valgrind.h's `VG_USERREQ__RUNNING_ON_VALGRIND`.
const RUNNING_ON_VALGRIND: usize = 0x1001;

/// Whether the program runs under valgrind: 0 not asked yet, 1 no, 2 yes.
static UNDER: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// True if the program runs under valgrind (`RUNNING_ON_VALGRIND`, asked
/// once): natively one load and a branch per call after the first.
#[inline]
pub(crate) fn running() -> bool {
    match UNDER.load(std::sync::atomic::Ordering::Relaxed) {
        0 => ask_running(),
        v => v == 2,
    }
}

#[cold]
fn ask_running() -> bool {
    let yes = client_request(&[RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0]) != 0;
    UNDER.store(
        if yes { 2 } else { 1 },
        std::sync::atomic::Ordering::Relaxed,
    );
    yes
}

/// Tells memcheck that `len` bytes at `addr` are defined (valgrind.h's
/// `VALGRIND_MAKE_MEM_DEFINED`). Nothing is read or written.
#[inline]
pub fn make_mem_defined(addr: *const u8, len: usize) {
    let args: [usize; 6] = [MAKE_MEM_DEFINED, addr as usize, len, 0, 0, 0];
    client_request(&args);
}

/// valgrind.h's `VALGRIND_DO_CLIENT_REQUEST_EXPR` with default 0: the special
/// instruction sequence valgrind recognises; natively, rotations of a
/// register by a multiple of 64 bits in total and an exchange of a register
/// with itself, which change nothing.
#[cfg(target_arch = "x86_64")]
#[inline]
fn client_request(args: &[usize; 6]) -> usize {
    let mut out = 0usize;
    // SAFETY: the instructions leave every register as it was (rdi is rotated
    // by 128 bits in all, rbx exchanged with itself; both declared clobbered
    // or untouched); under valgrind the request reads `args` and writes rdx
    // (the answer; natively it keeps its 0).
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdx") out,
            in("rax") args.as_ptr(),
            out("rdi") _,
            options(nostack),
        );
    }
    out
}

#[cfg(target_arch = "aarch64")]
#[inline]
fn client_request(args: &[usize; 6]) -> usize {
    let mut out = 0usize;
    // SAFETY: as on x86_64: x12 rotated by 128 bits in all, x10 or-ed with
    // itself; under valgrind the request reads `args` (x4) and writes x3.
    unsafe {
        std::arch::asm!(
            "ror x12, x12, #3",
            "ror x12, x12, #13",
            "ror x12, x12, #51",
            "ror x12, x12, #61",
            "orr x10, x10, x10",
            inout("x3") out,
            in("x4") args.as_ptr(),
            out("x12") _,
            options(nostack),
        );
    }
    out
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline]
fn client_request(_args: &[usize; 6]) -> usize {
    0
}

#[cfg(test)]
mod tests {
    /// Natively the request sequence changes nothing and answers its default:
    /// not under valgrind (the test suite does not run under it).
    #[test]
    fn natively_not_running_on_valgrind() {
        assert!(!super::running());
        assert!(!super::running(), "the cached answer");
        super::make_mem_defined([0u8; 4].as_ptr(), 4);
    }
}
