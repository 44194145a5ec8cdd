//! `trace_attr_t` and the `posix_trace_attr_*` functions.
//!
//! The C object is a plain value (no allocation), so `posix_trace_get_attr` can fill
//! one the caller never initialised, as listing 8.17 does.

use std::ffi::{c_char, c_int};
use std::time::Duration;

use rt::trace::{Inheritance, LogFullPolicy, StreamFullPolicy, TraceAttr, GEN_VERSION};

/// Bytes of a name buffer, NUL included (`TRACE_NAME_MAX` in trace.h).
pub(crate) const C_NAME_MAX: usize = 65;
const MAGIC: u32 = 0x7074_6174; // "ptat"

pub(crate) const LOOP: c_int = 0;
pub(crate) const UNTIL_FULL: c_int = 1;
pub(crate) const FLUSH: c_int = 2;
pub(crate) const APPEND: c_int = 3;
const CLOSE_FOR_CHILD: c_int = 0;
const INHERITED: c_int = 1;
/// `__stream_full` when not set: the policy then depends on whether there is a log.
const UNSET: c_int = -1;

/// `trace_attr_t` (the layout in trace.h).
#[repr(C)]
pub struct CAttr {
    magic: u32,
    stream_full: c_int,
    log_full: c_int,
    inherit: c_int,
    create_time_ns: u64,
    clock_res_ns: u64,
    stream_size: u64,
    log_size: u64,
    max_data: u64,
    name: [c_char; C_NAME_MAX],
    pad: [c_char; 7],
}

const _: () = assert!(std::mem::size_of::<CAttr>() == 128);

impl CAttr {
    pub(crate) fn set_name(&mut self, name: &[u8]) {
        let n = name.len().min(C_NAME_MAX - 1);
        self.name = [0; C_NAME_MAX];
        for (d, s) in self.name.iter_mut().zip(&name[..n]) {
            *d = *s as c_char;
        }
    }

    pub(crate) fn name_bytes(&self) -> Vec<u8> {
        self.name
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect()
    }

    /// The C value of a Rust attribute object.
    pub(crate) fn from_rust(a: &TraceAttr) -> CAttr {
        let mut c = CAttr {
            magic: MAGIC,
            stream_full: match a.stream_full_policy() {
                StreamFullPolicy::Loop => LOOP,
                StreamFullPolicy::UntilFull => UNTIL_FULL,
                StreamFullPolicy::Flush => FLUSH,
            },
            log_full: match a.log_full_policy() {
                LogFullPolicy::Loop => LOOP,
                LogFullPolicy::UntilFull => UNTIL_FULL,
                LogFullPolicy::Append => APPEND,
            },
            inherit: match a.inheritance() {
                Inheritance::CloseForChild => CLOSE_FOR_CHILD,
                Inheritance::Inherited => INHERITED,
            },
            create_time_ns: a.create_time().map_or(0, |d| d.as_nanos() as u64),
            clock_res_ns: a.clock_resolution().as_nanos() as u64,
            stream_size: a.stream_size() as u64,
            log_size: a.log_size(),
            max_data: a.max_data_size() as u64,
            name: [0; C_NAME_MAX],
            pad: [0; 7],
        };
        c.set_name(a.name_bytes());
        c
    }

    /// The Rust attribute object (`EINVAL` for one no init filled).
    pub(crate) fn to_rust(&self) -> Result<TraceAttr, c_int> {
        if self.magic != MAGIC {
            return Err(libc::EINVAL);
        }
        let mut a = TraceAttr::new();
        // A name need not be UTF-8: the stream, and its log, keep the C
        // bytes (it was kept as text, each byte that is not UTF-8 as U+FFFD,
        // so a log gave back other bytes than the stream's name).
        let e = |_| libc::EINVAL;
        a.set_name_bytes(&self.name_bytes()).map_err(e)?;
        a.set_stream_size(self.stream_size as usize).map_err(e)?;
        a.set_log_size(self.log_size).map_err(e)?;
        a.set_max_data_size(self.max_data as usize).map_err(e)?;
        a.set_log_full_policy(match self.log_full {
            UNTIL_FULL => LogFullPolicy::UntilFull,
            APPEND => LogFullPolicy::Append,
            _ => LogFullPolicy::Loop,
        });
        match self.stream_full {
            LOOP => {
                a.set_stream_full_policy(StreamFullPolicy::Loop);
            }
            UNTIL_FULL => {
                a.set_stream_full_policy(StreamFullPolicy::UntilFull);
            }
            FLUSH => {
                a.set_stream_full_policy(StreamFullPolicy::Flush);
            }
            _ => {}
        }
        if self.inherit == INHERITED {
            a.set_inheritance(Inheritance::Inherited);
        }
        Ok(a)
    }
}

/// The attribute object behind `p`, if initialised.
fn attr_ref<'a>(p: *const CAttr) -> Result<&'a CAttr, c_int> {
    // SAFETY: a non-null `trace_attr_t *` points to a `trace_attr_t` (caller's contract).
    let a = unsafe { p.as_ref() }.ok_or(libc::EINVAL)?;
    if a.magic != MAGIC {
        return Err(libc::EINVAL);
    }
    Ok(a)
}

fn attr_mut<'a>(p: *mut CAttr) -> Result<&'a mut CAttr, c_int> {
    // SAFETY: as in `attr_ref`; the caller does not share it during the call.
    let a = unsafe { p.as_mut() }.ok_or(libc::EINVAL)?;
    if a.magic != MAGIC {
        return Err(libc::EINVAL);
    }
    Ok(a)
}

/// Writes `v` through an out-pointer (`EINVAL` if null).
pub(crate) fn out<T>(p: *mut T, v: T) -> Result<(), c_int> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: non-null out-pointers point to writable storage (caller's contract).
    unsafe { p.write(v) };
    Ok(())
}

/// Copies `s` and a NUL to a caller's buffer of `cap` bytes (`s` is shorter).
pub(crate) fn out_str(p: *mut c_char, s: &[u8], cap: usize) -> Result<(), c_int> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    let n = s.len().min(cap - 1);
    // SAFETY: the buffer holds `cap` bytes (trace.h's documented size) and `n < cap`.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), p, n);
        p.add(n).write(0);
    }
    Ok(())
}

fn ts(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

use super::ret;

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_init(attr: *mut CAttr) -> c_int {
    ret(out(attr, CAttr::from_rust(&TraceAttr::new())).map(|()| {
        // An init'd object has no creation time, and its stream full policy
        // follows whether the stream gets a log (FLUSH with one, LOOP without).
        // SAFETY: `out` checked it for null and wrote it.
        let a = unsafe { &mut *attr };
        a.create_time_ns = 0;
        a.stream_full = UNSET;
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_destroy(attr: *mut CAttr) -> c_int {
    ret(attr_mut(attr).map(|a| a.magic = 0))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getgenversion(
    attr: *const CAttr,
    genversion: *mut c_char,
) -> c_int {
    ret(attr_ref(attr).and_then(|_| out_str(genversion, GEN_VERSION.as_bytes(), C_NAME_MAX)))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getname(
    attr: *const CAttr,
    tracename: *mut c_char,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out_str(tracename, &a.name_bytes(), C_NAME_MAX)))
}

/// Names longer than `TRACE_NAME_MAX - 1` bytes are truncated, as POSIX says.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setname(
    attr: *mut CAttr,
    tracename: *const c_char,
) -> c_int {
    ret(attr_mut(attr).and_then(|a| {
        if tracename.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: a non-null name is a NUL-terminated string (caller's contract).
        let s = unsafe { std::ffi::CStr::from_ptr(tracename) }.to_bytes();
        let mut n = s.len().min(C_NAME_MAX - 1);
        // A name cut short is cut before a UTF-8 continuation byte, so UTF-8
        // text stays valid; other bytes are kept as given (a name need not be
        // UTF-8: checking the whole prefix emptied a Latin-1 name).
        let mut back = 0;
        while n < s.len() && n > 0 && back < 3 && s[n] & 0xc0 == 0x80 {
            n -= 1;
            back += 1;
        }
        a.set_name(&s[..n]);
        Ok(())
    }))
}

/// The creation time of a stream's attributes; `{0, 0}` for an object from
/// `posix_trace_attr_init`.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getcreatetime(
    attr: *const CAttr,
    createtime: *mut libc::timespec,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(createtime, ts(Duration::from_nanos(a.create_time_ns)))))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getclockres(
    attr: *const CAttr,
    resolution: *mut libc::timespec,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(resolution, ts(Duration::from_nanos(a.clock_res_ns)))))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getinherited(
    attr: *const CAttr,
    inheritancepolicy: *mut c_int,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(inheritancepolicy, a.inherit)))
}

/// `POSIX_TRACE_INHERITED` is not supported: `EINVAL`.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setinherited(
    attr: *mut CAttr,
    inheritancepolicy: c_int,
) -> c_int {
    ret(attr_mut(attr).and_then(|a| match inheritancepolicy {
        CLOSE_FOR_CHILD => {
            a.inherit = CLOSE_FOR_CHILD;
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }))
}

/// `POSIX_TRACE_LOOP` unless set (a stream with a log reports `POSIX_TRACE_FLUSH`).
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getstreamfullpolicy(
    attr: *const CAttr,
    streampolicy: *mut c_int,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| {
        out(
            streampolicy,
            if a.stream_full == UNSET {
                LOOP
            } else {
                a.stream_full
            },
        )
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setstreamfullpolicy(
    attr: *mut CAttr,
    streampolicy: c_int,
) -> c_int {
    ret(attr_mut(attr).and_then(|a| match streampolicy {
        LOOP | UNTIL_FULL | FLUSH => {
            a.stream_full = streampolicy;
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getlogfullpolicy(
    attr: *const CAttr,
    logpolicy: *mut c_int,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(logpolicy, a.log_full)))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setlogfullpolicy(
    attr: *mut CAttr,
    logpolicy: c_int,
) -> c_int {
    ret(attr_mut(attr).and_then(|a| match logpolicy {
        LOOP | UNTIL_FULL | APPEND => {
            a.log_full = logpolicy;
            Ok(())
        }
        _ => Err(libc::EINVAL),
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getmaxdatasize(
    attr: *const CAttr,
    maxdatasize: *mut usize,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(maxdatasize, a.max_data as usize)))
}

/// `EINVAL` above 4096 bytes.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setmaxdatasize(
    attr: *mut CAttr,
    maxdatasize: usize,
) -> c_int {
    ret(attr_mut(attr).and_then(|a| {
        TraceAttr::new()
            .set_max_data_size(maxdatasize)
            .map_err(|_| libc::EINVAL)?;
        a.max_data = maxdatasize as u64;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getmaxsystemeventsize(
    attr: *const CAttr,
    eventsize: *mut usize,
) -> c_int {
    ret(attr_ref(attr).and_then(|_| out(eventsize, TraceAttr::new().max_system_event_size())))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getmaxusereventsize(
    attr: *const CAttr,
    data_len: usize,
    eventsize: *mut usize,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| {
        let r = a.to_rust()?;
        out(eventsize, r.max_user_event_size(data_len))
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getstreamsize(
    attr: *const CAttr,
    streamsize: *mut usize,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(streamsize, a.stream_size as usize)))
}

/// `EINVAL` below 4096 bytes or above 1 GiB.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setstreamsize(
    attr: *mut CAttr,
    streamsize: usize,
) -> c_int {
    ret(attr_mut(attr).and_then(|a| {
        TraceAttr::new()
            .set_stream_size(streamsize)
            .map_err(|_| libc::EINVAL)?;
        a.stream_size = streamsize as u64;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getlogsize(
    attr: *const CAttr,
    logsize: *mut usize,
) -> c_int {
    ret(attr_ref(attr).and_then(|a| out(logsize, a.log_size as usize)))
}

/// `EINVAL` below 1024 bytes.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setlogsize(attr: *mut CAttr, logsize: usize) -> c_int {
    ret(attr_mut(attr).and_then(|a| {
        TraceAttr::new()
            .set_log_size(logsize as u64)
            .map_err(|_| libc::EINVAL)?;
        a.log_size = logsize as u64;
        Ok(())
    }))
}
