//! `execl`, `execle` and `execlp`, interposed: each writes every trace log,
//! then jumps to the next definition, as [`super::exec_interpose`] does for
//! `execve` and the others. glibc's go to its own `execve` directly (not an
//! interposable call), so a program that traced to a log and then called one
//! of these lost the events its streams still held.
//!
//! They are variadic, which stable Rust cannot define, and they need not be
//! re-implemented: each is a naked trampoline that saves the argument
//! registers, calls [`flush_then_next`] (which flushes and returns the next
//! definition), restores the registers and jumps to it. The stack is left as
//! the caller made it, so every argument (the seventh and later ones, the
//! terminating null pointer, `execle`'s environment) reaches the next
//! definition as it was passed, and its return (a failed exec) goes straight
//! back to the caller.
//!
//! x86_64 only (System V ABI), and only when built by Rust 1.88 or later
//! (naked functions; the build script sets `exec_trampolines`). Elsewhere these
//! three are glibc's, and their logs miss the last events.
//!
//! The vector registers are not saved: the arguments of these functions are
//! all pointers, so `%al` (the count of vector registers a variadic call
//! used, saved here) is 0 in a correct call, and the next definition reads
//! none of them.

use std::ffi::{c_int, c_void};

use super::exec_interpose::{no_next, real, EXECL, EXECLE, EXECLP};

/// Writes every trace log, then returns the next definition of function `i`
/// of [`super::exec_interpose`]'s table, or [`enosys`] when there is none
/// (looked up now if the load-time resolution has not run yet, as for the
/// others). Called by the trampolines only, with the caller's arguments
/// saved on its stack.
extern "C" fn flush_then_next(i: usize) -> *const c_void {
    rt::trace::flush_before_exec();
    match real(i) {
        Some(p) => p,
        None => enosys as *const c_void,
    }
}

/// Where a trampoline goes when there is no next definition: sets `errno` to
/// `ENOSYS` and returns -1 to the caller, whatever its arguments.
extern "C" fn enosys() -> c_int {
    no_next()
}

/// Defines the trampoline `$name` (x86_64, System V): pushes the six integer
/// argument registers and `%rax` (`%al`: the vector register count of a
/// variadic call), seven words over the return address, which leaves `%rsp`
/// 16-byte aligned for the call; calls [`flush_then_next`] with index `$i`;
/// pops them back and jumps to the address it returned (in `%r11`, a scratch
/// register that carries no argument).
macro_rules! trampoline {
    ($(#[$doc:meta])* $name:ident, $i:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for glibc's: the C variadic signature, a null-terminated list
        /// of strings. Rust code does not call it.
        #[no_mangle]
        // SAFETY: the body is the whole function: it keeps the System V
        // contract (callee-saved registers untouched, the stack balanced
        // and aligned at the call), and hands the caller's arguments, stack
        // and return address on unchanged to a function of the same
        // signature (the next definition) or to `enosys`, which reads none.
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name() {
            std::arch::naked_asm!(
                "push rdi",
                "push rsi",
                "push rdx",
                "push rcx",
                "push r8",
                "push r9",
                "push rax",
                "mov edi, {i}",
                "call {next}",
                "mov r11, rax",
                "pop rax",
                "pop r9",
                "pop r8",
                "pop rcx",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                "jmp r11",
                i = const $i,
                next = sym flush_then_next,
            )
        }
    };
}

trampoline!(
    /// `int execl(const char *path, const char *arg, ... /* NULL */)`.
    execl,
    EXECL
);
trampoline!(
    /// `int execle(const char *path, const char *arg, ... /* NULL,
    /// char *const envp[] */)`.
    execle,
    EXECLE
);
trampoline!(
    /// `int execlp(const char *file, const char *arg, ... /* NULL */)`.
    execlp,
    EXECLP
);
