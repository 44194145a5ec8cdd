//! A copy of a `SIGEV_THREAD` notification's `sigev_notify_attributes`,
//! taken when the request is submitted: the program may destroy or reuse its
//! attribute object once the submitting call returned.
//!
//! glibc reads the program's object when the notification fires, before
//! `aio_suspend` can see the request done, so a glibc program may destroy it
//! once `aio_suspend` returned. The library creates the thread after the
//! waiters are woken (and tries again later where it cannot be created): it
//! reads its own copy instead. The copy has every attribute `pthread_create`
//! uses: scheduling inheritance, policy, parameters and scope, stack (size,
//! or the program's own stack) and guard size, and CPU set. Not the detach
//! state: the copy makes a detached thread, since nobody joins it (detaching
//! it once created would race with a function that detaches its own thread,
//! the usual way for a glibc program not to leak it: once that thread ended,
//! glibc gives its handle to the next thread made on its stack). Not the
//! signal mask: the function's thread starts with every signal unblocked, as
//! glibc's does. A leaf module.

use std::ffi::c_void;

extern "C" {
    // Not in the libc crate, or not for every target it builds.
    fn pthread_attr_getinheritsched(
        attr: *const libc::pthread_attr_t,
        inherit: *mut libc::c_int,
    ) -> libc::c_int;
    fn pthread_attr_setinheritsched(
        attr: *mut libc::pthread_attr_t,
        inherit: libc::c_int,
    ) -> libc::c_int;
    fn pthread_attr_getschedpolicy(
        attr: *const libc::pthread_attr_t,
        policy: *mut libc::c_int,
    ) -> libc::c_int;
    fn pthread_attr_setschedpolicy(
        attr: *mut libc::pthread_attr_t,
        policy: libc::c_int,
    ) -> libc::c_int;
    fn pthread_attr_getschedparam(
        attr: *const libc::pthread_attr_t,
        param: *mut libc::sched_param,
    ) -> libc::c_int;
    fn pthread_attr_setschedparam(
        attr: *mut libc::pthread_attr_t,
        param: *const libc::sched_param,
    ) -> libc::c_int;
    fn pthread_attr_getscope(
        attr: *const libc::pthread_attr_t,
        scope: *mut libc::c_int,
    ) -> libc::c_int;
    fn pthread_attr_setscope(attr: *mut libc::pthread_attr_t, scope: libc::c_int) -> libc::c_int;
    // Deprecated in the header, kept in the ABI: the one call that tells an
    // object with the program's own stack (non-null) from one without.
    fn pthread_attr_getstackaddr(
        attr: *const libc::pthread_attr_t,
        addr: *mut *mut c_void,
    ) -> libc::c_int;
    // Deprecated too: the one call that gives an object the top of the
    // program's own stack without its size (see `AttrCopy::fill`).
    fn pthread_attr_setstackaddr(attr: *mut libc::pthread_attr_t, addr: *mut c_void)
        -> libc::c_int;
    fn pthread_attr_getaffinity_np(
        attr: *const libc::pthread_attr_t,
        size: libc::size_t,
        set: *mut u64,
    ) -> libc::c_int;
    fn pthread_attr_setaffinity_np(
        attr: *mut libc::pthread_attr_t,
        size: libc::size_t,
        set: *const u64,
    ) -> libc::c_int;
}

/// The library's own attribute object, destroyed when dropped.
pub(crate) struct AttrCopy {
    attr: Box<libc::pthread_attr_t>,
    /// The copied object says `PTHREAD_INHERIT_SCHED`.
    inherits_class: bool,
    /// The copied object names a CPU set.
    names_cpus: bool,
    /// See [`AttrCopy::lacks_priority`].
    lacks_priority: bool,
}

impl AttrCopy {
    /// Copies the program's attribute object `src`; the errno if it cannot be
    /// (ENOMEM, or EINVAL for an object the calls refuse).
    ///
    /// # Safety
    /// `src` is a valid initialized attribute object.
    pub(crate) unsafe fn new(src: *const libc::pthread_attr_t) -> Result<AttrCopy, i32> {
        // SAFETY: an all-zero pthread_attr_t is plain bytes, initialized by
        // pthread_attr_init before any other use.
        let mut attr: Box<libc::pthread_attr_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `attr` has room for an attribute object.
        ok(unsafe { libc::pthread_attr_init(&mut *attr) })?;
        let mut copy = AttrCopy {
            attr,
            inherits_class: true,
            names_cpus: false,
            lacks_priority: false,
        };
        // SAFETY: `src` is valid (contract); `copy.attr` is initialized.
        unsafe { copy.fill(src) }?;
        Ok(copy)
    }

    /// Copies every attribute of `src` into `self.attr`.
    ///
    /// # Safety
    /// As [`AttrCopy::new`]'s; `self.attr` is initialized.
    unsafe fn fill(&mut self, src: *const libc::pthread_attr_t) -> Result<(), i32> {
        let dst: *mut libc::pthread_attr_t = &mut *self.attr;
        let (mut inherit, mut policy, mut scope) = (0, 0, 0);
        let mut param = libc::sched_param { sched_priority: 0 };
        let mut guard: libc::size_t = 0;
        let mut stackaddr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `src` and `dst` are valid attribute objects; every out
        // pointer is a local with room for its value.
        unsafe {
            // Detached whatever the program's says (see the module's
            // documentation).
            ok(libc::pthread_attr_setdetachstate(
                dst,
                libc::PTHREAD_CREATE_DETACHED,
            ))?;
            ok(pthread_attr_getinheritsched(src, &mut inherit))?;
            ok(pthread_attr_setinheritsched(dst, inherit))?;
            ok(pthread_attr_getschedpolicy(src, &mut policy))?;
            ok(pthread_attr_getschedparam(src, &mut param))?;
            if is_rt(policy) && param.sched_priority == 0 {
                // A real-time policy and no priority (none given, or one
                // given under another policy): set as the program did,
                // the priority first (see `lacks_priority`).
                ok(pthread_attr_setschedparam(dst, &param))?;
                ok(pthread_attr_setschedpolicy(dst, policy))?;
            } else {
                ok(pthread_attr_setschedpolicy(dst, policy))?;
                ok(pthread_attr_setschedparam(dst, &param))?;
            }
            ok(pthread_attr_getscope(src, &mut scope))?;
            ok(pthread_attr_setscope(dst, scope))?;
            ok(libc::pthread_attr_getguardsize(src, &mut guard))?;
            ok(libc::pthread_attr_setguardsize(dst, guard))?;
            ok(pthread_attr_getstackaddr(src, &mut stackaddr))?;
            if stackaddr.is_null() {
                let mut size: libc::size_t = 0;
                ok(libc::pthread_attr_getstacksize(src, &mut size))?;
                ok(libc::pthread_attr_setstacksize(dst, size))?;
            } else {
                // The program's own stack: the same memory (its to keep).
                let mut addr: *mut c_void = std::ptr::null_mut();
                let mut size: libc::size_t = 0;
                ok(libc::pthread_attr_getstack(src, &mut addr, &mut size))?;
                if size == 0 {
                    // Its top alone (`pthread_attr_setstackaddr` without a
                    // size): `pthread_create` puts the default size below
                    // it, and so does it for the copy.
                    ok(pthread_attr_setstackaddr(dst, stackaddr))?;
                } else {
                    ok(libc::pthread_attr_setstack(dst, addr, size))?;
                }
            }
        }
        // SAFETY: as above.
        self.names_cpus = unsafe { copy_affinity(src, dst) }?;
        self.inherits_class = inherit == libc::PTHREAD_INHERIT_SCHED;
        self.lacks_priority = !self.inherits_class && is_rt(policy) && param.sched_priority == 0;
        Ok(())
    }

    /// The copied object says `PTHREAD_EXPLICIT_SCHED` and a real-time
    /// policy, but no priority: `pthread_create` takes the priority of the
    /// thread that creates (where the program never set one), which for
    /// glibc's notification thread is its AIO helper's, the submitter's. See
    /// [`AttrCopy::set_priority`].
    #[inline]
    pub(crate) fn lacks_priority(&self) -> bool {
        self.lacks_priority
    }

    /// Gives the copy priority `priority` (valid for its policy), for one
    /// that [`lacks_priority`](AttrCopy::lacks_priority).
    pub(crate) fn set_priority(&mut self, priority: i32) -> Result<(), i32> {
        let p = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: `self.attr` is an initialized attribute object; `p` is
        // only read.
        ok(unsafe { pthread_attr_setschedparam(&mut *self.attr, &p) })?;
        self.lacks_priority = false;
        Ok(())
    }

    /// The copy, for `pthread_create`.
    #[inline]
    pub(crate) fn as_ptr(&self) -> *const libc::pthread_attr_t {
        &*self.attr
    }

    /// The copied object lets the thread take its creator's class
    /// (`PTHREAD_INHERIT_SCHED`).
    #[inline]
    pub(crate) fn inherits_class(&self) -> bool {
        self.inherits_class
    }

    /// The copied object names the thread's CPU set (else it would take its
    /// creator's).
    #[inline]
    pub(crate) fn names_cpus(&self) -> bool {
        self.names_cpus
    }
}

impl Drop for AttrCopy {
    fn drop(&mut self) {
        // SAFETY: initialized in `new`, destroyed once, here.
        unsafe { libc::pthread_attr_destroy(&mut *self.attr) };
    }
}

/// Copies the CPU set of `src`, if it has one, into `dst`; true if it has
/// one. An object without one is copied without one, so that the function
/// runs on the CPU set it would have had without attributes (its
/// submitter's, see `notify`).
///
/// glibc reports an object without a set as having every CPU (every byte of
/// the buffer 0xff), which an object whose set names every CPU it can hold
/// (all 1024 of a `cpu_set_t`) reports too: the two are told apart by asking
/// once more with one word more than the set needs, which glibc fills with
/// zeros past a set and with ones where there is none. A set larger than
/// `cpu_set_t` (`CPU_ALLOC`) is read with a larger buffer.
///
/// # Safety
/// `src` and `dst` are valid initialized attribute objects.
unsafe fn copy_affinity(
    src: *const libc::pthread_attr_t,
    dst: *mut libc::pthread_attr_t,
) -> Result<bool, i32> {
    let mut words = std::mem::size_of::<libc::cpu_set_t>() / 8;
    loop {
        // One word more than is asked for: see above.
        let mut set = vec![0u64; words + 1];
        // SAFETY: `set` has room for `words * 8` bytes; `src` is valid.
        let r = unsafe { pthread_attr_getaffinity_np(src, words * 8, set.as_mut_ptr()) };
        if r == libc::EINVAL && words < 1024 {
            // The object's set names CPUs beyond this size.
            words *= 4;
            continue;
        }
        ok(r)?;
        if set[..words].iter().all(|&w| w == u64::MAX) {
            // Every CPU, or no set: the word past the set tells.
            // SAFETY: `set` has room for `(words + 1) * 8` bytes.
            ok(unsafe { pthread_attr_getaffinity_np(src, (words + 1) * 8, set.as_mut_ptr()) })?;
            if set[words] == u64::MAX {
                return Ok(false);
            }
        }
        // SAFETY: `set` holds at least `words * 8` bytes; `dst` is valid.
        ok(unsafe { pthread_attr_setaffinity_np(dst, words * 8, set.as_ptr()) })?;
        return Ok(true);
    }
}

fn is_rt(policy: i32) -> bool {
    matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR)
}

fn ok(r: libc::c_int) -> Result<(), i32> {
    if r == 0 {
        Ok(())
    } else {
        Err(r)
    }
}
