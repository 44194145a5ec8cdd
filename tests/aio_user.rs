//! A user porting POSIX AIO C code checks the Rust API's edges: `Builder`
//! options and the errors that tell the fix.

use posixrt::aio::{Aio, Backend};
use posixrt::ErrorKind;

#[allow(unused_macros, unused_imports)]
mod common;

/// A notification stack larger than any object can be (`isize::MAX`) is
/// refused when the context is built, with a hint naming the option, not by
/// the first `SIGEV_THREAD` request with a bare `pthread_create` EINVAL.
#[test]
fn notify_stack_size_past_isize_max_is_refused_at_build() {
    for size in [(isize::MAX as usize) + 1, usize::MAX - 100, usize::MAX] {
        let e = Aio::builder()
            .backend(Backend::Threads)
            .notify_stack_size(size)
            .build()
            .expect_err("a stack larger than isize::MAX bytes");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{e:?}");
        let hint = e.hint().unwrap_or_default();
        assert!(hint.contains("notify_stack_size"), "{e:?}");
    }
    // 0 is valid: the smallest stack the system allows.
    Aio::builder()
        .backend(Backend::Threads)
        .notify_stack_size(0)
        .build()
        .expect("notify_stack_size(0)");
}
