//! `open` as C sees it: check `out_socket` and `params`, read the versioned open parameters
//! only within the `size` the caller declared, report failures as one line in the caller's error
//! buffer, and hand the new socket over as a [`Handle`].
//!
//! Must never read a parameter field beyond the declared `size`, and must leave `*out_socket`
//! NULL whenever it returns an error.

use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};
use std::ptr;

use super::{guard, Handle, OpenError};
use crate::helpers::{read_c_str, write_c_string};
use crate::{NET_BackendOpenParams, NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_OK};

/// Read `port` and `options` from the open parameters, looking only at fields that lie within
/// the `size` the caller declared. `name` starts the error message. Options that the declared
/// size does not cover, or a NULL options pointer, read as "".
///
/// # Safety
/// `params` must be non-NULL and readable for `params.size` bytes (at least the `size` field);
/// a non-NULL `options` must be NUL-terminated and stay valid for `'a`.
pub unsafe fn read_open_params<'a>(
    params: *const NET_BackendOpenParams,
    name: &str,
) -> Result<(u16, &'a str), String> {
    // SAFETY: `size` is the first field and always present.
    let size = unsafe { ptr::addr_of!((*params).size).read_unaligned() } as usize;
    let port_end = offset_of!(NET_BackendOpenParams, port) + size_of::<u16>();
    if size < port_end {
        return Err(format!("{name}: open parameters too small ({size} bytes)"));
    }
    // SAFETY: the declared size covers `port`.
    let port = unsafe { ptr::addr_of!((*params).port).read_unaligned() };
    let options_end = offset_of!(NET_BackendOpenParams, options) + size_of::<*const c_char>();
    let options = if size >= options_end {
        // SAFETY: the declared size covers `options`.
        unsafe { ptr::addr_of!((*params).options).read_unaligned() }
    } else {
        ptr::null()
    };
    if options.is_null() {
        return Ok((port, "")); // the ABI promises non-NULL; treat a NULL as "no options"
    }
    // SAFETY: a non-NULL `options` is NUL-terminated and valid for `'a`, per the contract.
    match unsafe { read_c_str(options) } {
        Some(text) => Ok((port, text)),
        None => Err(format!("{name}: the options are not valid UTF-8")),
    }
}

/// The whole of a C `open` function around `open`, which gets the port and the options text:
/// NULL checks (`"<name>: open: out_socket is NULL"`, `"<name>: open: params is NULL"`), the
/// parameter read, the error line written into `err` (also "" on success), the new socket stored
/// in `*out_socket` under `tag`. A panic returns `NET_BACKEND_ERR_IO` with `*out_socket` NULL.
///
/// # Safety
/// The arguments are those of the vtable's `open`: `params` NULL or readable for its declared
/// size, `out_socket` NULL or writable, `err` NULL or writable for `err_len` bytes.
pub unsafe fn open_socket<S>(
    name: &str,
    tag: u64,
    params: *const NET_BackendOpenParams,
    out_socket: *mut *mut c_void,
    err: *mut c_char,
    err_len: usize,
    open: impl FnOnce(u16, &str) -> Result<S, OpenError>,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        let report = |code: i32, message: &str| {
            // SAFETY: `err` is NULL or valid for `err_len` bytes of writes, per the ABI.
            unsafe { write_c_string(message, err, err_len) };
            code
        };
        if out_socket.is_null() {
            let message = format!("{name}: open: out_socket is NULL");
            return report(NET_BACKEND_ERR_INVALID, &message);
        }
        // SAFETY: `out_socket` is non-NULL and points to a handle slot the caller owns.
        unsafe { out_socket.write(ptr::null_mut()) };
        if params.is_null() {
            return report(
                NET_BACKEND_ERR_INVALID,
                &format!("{name}: open: params is NULL"),
            );
        }
        // SAFETY: `params` is non-NULL and, per the ABI, readable for its declared size; the
        // options text is used only during this call.
        let (port, options) = match unsafe { read_open_params(params, name) } {
            Ok(read) => read,
            Err(message) => return report(NET_BACKEND_ERR_INVALID, &message),
        };
        match open(port, options) {
            Ok(socket) => {
                // SAFETY: as above; ownership of the box passes to the caller until `close`.
                unsafe { out_socket.write(Handle::into_raw(socket, tag)) };
                report(NET_BACKEND_OK, "")
            }
            Err(e) => {
                // A failure must never read as success: the caller would use the NULL handle.
                let code = if e.code < 0 {
                    e.code
                } else {
                    NET_BACKEND_ERR_IO
                };
                report(code, &e.message)
            }
        }
    })
}
