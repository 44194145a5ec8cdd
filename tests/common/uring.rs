//! Whether io_uring is refused here (a seccomp profile, as Docker's default
//! one, or `kernel.io_uring_disabled`): a test of the io_uring engine then
//! checks that the refusal is the documented one, says so, and returns.
//! `#[path = "common/uring.rs"] mod uring;` (or `common::uring`).

/// True where io_uring is refused. Asked once per test binary; the refusal
/// must be `PermissionDenied` or `Unsupported`, with a hint.
pub fn uring_refused() -> bool {
    static REFUSED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let refused = *REFUSED.get_or_init(|| {
        match posixrt::aio::Aio::builder()
            .backend(posixrt::aio::Backend::Uring)
            .build()
        {
            Ok(_) => false,
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        posixrt::ErrorKind::PermissionDenied | posixrt::ErrorKind::Unsupported
                    ) && e.hint().is_some(),
                    "io_uring refused, but not as documented: {e}"
                );
                eprintln!("io_uring is refused here: {e}");
                true
            }
        }
    });
    if refused {
        eprintln!("skipped: this test needs io_uring");
    }
    refused
}
