//! Socket handles: what the `void *` a backend's `open` hands the core points to. The socket
//! lives in a box behind a tag that marks it open for this backend; `close` clears the tag and
//! frees the box, so a handle used after `close` (or a handle of another backend) is refused
//! with `NET_BACKEND_ERR_INVALID` as long as the memory still shows the cleared tag.
//!
//! Must never hand out a socket whose tag does not match, and never free a box twice.

use std::ffi::{c_void, CStr};

use super::guard;
use crate::{NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO};

/// What a handle points to: the tag, then the socket itself (one allocation, one pointer hop
/// from handle to socket).
pub struct Handle<S> {
    tag: u64,
    socket: S,
}

/// The tag that marks an open socket of the backend called `name`: a hash of the name (FNV-1a),
/// never 0, which is what `close` leaves behind. Compute it in a `const`.
pub const fn handle_tag(name: &CStr) -> u64 {
    let bytes = name.to_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash | 1
}

impl<S> Handle<S> {
    /// Box `socket` under `tag` and give up ownership: the pointer `open` stores for the core.
    pub fn into_raw(socket: S, tag: u64) -> *mut c_void {
        Box::into_raw(Box::new(Handle { tag, socket })).cast()
    }

    /// The socket behind `handle`, or `None` for NULL or a handle whose tag is not `tag`.
    ///
    /// # Safety
    /// `handle` must be NULL or a pointer [`Handle::into_raw`] returned for this `S` (open, or
    /// closed but not yet reused), and the socket must not be borrowed elsewhere for `'a`.
    #[inline(always)]
    pub unsafe fn socket<'a>(handle: *mut c_void, tag: u64) -> Option<&'a mut S> {
        // SAFETY: per the contract, a non-NULL handle points to a `Handle<S>`.
        let boxed = unsafe { handle.cast::<Handle<S>>().as_mut()? };
        if boxed.tag == tag {
            Some(&mut boxed.socket)
        } else {
            None
        }
    }

    /// Close: clear the tag and drop the socket. NULL and handles whose tag is not `tag` are
    /// left alone.
    ///
    /// # Safety
    /// As for [`Handle::socket`]; the handle is never used again after this call.
    pub unsafe fn close(handle: *mut c_void, tag: u64) {
        let boxed = handle.cast::<Handle<S>>();
        // SAFETY: per the contract, a non-NULL handle points to a `Handle<S>`.
        match unsafe { boxed.as_mut() } {
            Some(open) if open.tag == tag => open.tag = 0,
            _ => return,
        }
        // SAFETY: the tag matched, so this is the pointer `into_raw` produced and it was not
        // freed yet (freeing clears the tag first); nothing else uses it from now on.
        drop(unsafe { Box::from_raw(boxed) });
    }
}

/// The prologue of every socket function: under the panic boundary, find the open socket behind
/// `handle` and run `body` with it; `NET_BACKEND_ERR_INVALID` for NULL or a closed handle,
/// `NET_BACKEND_ERR_IO` if `body` panics.
///
/// # Safety
/// As for [`Handle::socket`].
#[inline(always)]
pub unsafe fn with_socket<S>(
    handle: *mut c_void,
    tag: u64,
    body: impl FnOnce(&mut S) -> i32,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: as the caller guarantees.
        match unsafe { Handle::<S>::socket(handle, tag) } {
            Some(socket) => body(socket),
            None => NET_BACKEND_ERR_INVALID,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_differ_by_name_and_are_never_zero() {
        assert_ne!(handle_tag(c"udp"), handle_tag(c"ipx"));
        assert_ne!(handle_tag(c""), 0);
        assert_eq!(handle_tag(c"udp"), handle_tag(c"udp"));
    }

    #[test]
    fn a_handle_is_refused_under_another_tag_and_after_close() {
        let tag = handle_tag(c"one");
        let handle = Handle::into_raw(7u32, tag);
        // SAFETY: `handle` came from `into_raw` for `u32` and is open.
        unsafe {
            assert_eq!(Handle::<u32>::socket(handle, tag).copied(), Some(7));
            assert!(Handle::<u32>::socket(handle, handle_tag(c"two")).is_none());
            Handle::<u32>::close(handle, handle_tag(c"two")); // another backend's: left alone
            assert_eq!(Handle::<u32>::socket(handle, tag).copied(), Some(7));
            assert!(Handle::<u32>::socket(std::ptr::null_mut(), tag).is_none());
            Handle::<u32>::close(std::ptr::null_mut(), tag);
            Handle::<u32>::close(handle, tag);
        }
    }

    #[test]
    fn a_panicking_body_becomes_an_io_error() {
        let tag = handle_tag(c"panics");
        let handle = Handle::into_raw(0u8, tag);
        // SAFETY: `handle` came from `into_raw` for `u8` and is open until the close below.
        unsafe {
            let rc = with_socket::<u8>(handle, tag, |_| panic!("backend bug"));
            assert_eq!(rc, NET_BACKEND_ERR_IO);
            assert_eq!(with_socket::<u8>(handle, tag, |n| i32::from(*n) + 1), 1);
            Handle::<u8>::close(handle, tag);
        }
    }
}
