//! The generic `extern "C"` functions of a [`Backend`]'s vtable, monomorphised per backend, and
//! the const fn that builds the vtable from them. Each one checks every pointer, finds the socket
//! behind the handle, converts to Rust types and calls the trait; none of them allocates or
//! dispatches dynamically on the send/receive path.
//!
//! Must never let a panic unwind into C, never dereference a pointer it has not checked, and
//! never write more than the caller's buffer holds.

use std::ffi::{c_char, c_void, CStr};
use std::mem::size_of;
use std::ptr;

use super::{guard, open_socket, with_socket, Backend, BackendSocket, Handle};
use crate::helpers::{read_c_str, write_c_string};
use crate::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_ERR_TOO_LARGE, NET_BACKEND_OK,
};

/// Largest `max_payload` the core accepts (the largest UDP payload over IPv4).
const LARGEST_ANNOUNCED_PAYLOAD: usize = 65507;
/// Longest vtable name the core accepts.
const LONGEST_NAME: usize = 31;

/// The vtable of backend `B`, for a `static` (the [`export_backend!`](crate::export_backend)
/// macro makes it). Refuses to compile a backend whose name or payload limit the core would
/// refuse to load.
pub const fn vtable<B: Backend>() -> NET_BackendVTable {
    assert!(
        name_is_acceptable(B::NAME),
        "Backend::NAME must be 1-31 printable ASCII characters"
    );
    assert!(
        B::MAX_PAYLOAD >= 1 && B::MAX_PAYLOAD <= LARGEST_ANNOUNCED_PAYLOAD,
        "Backend::MAX_PAYLOAD must be 1-65507"
    );
    NET_BackendVTable {
        abi_version: NET_BACKEND_ABI_VERSION,
        size: size_of::<NET_BackendVTable>() as u32,
        name: B::NAME.as_ptr(),
        max_payload: B::MAX_PAYLOAD as u32,
        capabilities: B::CAPABILITIES,
        open: Some(open::<B>),
        close: Some(close::<B>),
        send: Some(send::<B>),
        receive: Some(receive::<B>),
        wait: Some(wait::<B>),
        node_compare: Some(node_compare::<B>),
        node_print: Some(node_print::<B>),
        node_parse: Some(node_parse::<B>),
        broadcast_node: Some(broadcast_node::<B>),
        local_node: Some(local_node::<B>),
        last_error: Some(last_error::<B>),
        bound_port: Some(bound_port::<B>),
        node_parse_error: Some(node_parse_error),
        describe_socket: Some(describe_socket::<B>),
    }
}

const fn name_is_acceptable(name: &CStr) -> bool {
    let bytes = name.to_bytes();
    if bytes.is_empty() || bytes.len() > LONGEST_NAME {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_graphic() {
            return false;
        }
        i += 1;
    }
    true
}

/// The body of the entry symbol: `table`, or NULL for a core older than this ABI.
pub fn entry(core_abi_version: u32, table: &'static NET_BackendVTable) -> *const NET_BackendVTable {
    guard(ptr::null(), || {
        if core_abi_version < NET_BACKEND_ABI_VERSION {
            ptr::null()
        } else {
            table
        }
    })
}

/// The socket behind a handle of backend `B`, or `None` for NULL or a closed handle.
///
/// # Safety
/// `handle` must be NULL or a handle returned by `B`'s `open`, not used concurrently.
pub unsafe fn socket_from_handle<'a, B: Backend>(handle: *mut c_void) -> Option<&'a mut B::Socket> {
    // SAFETY: as the caller guarantees.
    unsafe { Handle::socket(handle, tag::<B>()) }
}

/// The handle tag of backend `B`, computed at compile time.
#[inline(always)]
const fn tag<B: Backend>() -> u64 {
    const { super::handle_tag(B::NAME) }
}

/// The vtable name as text (checked to be ASCII when the vtable was built).
fn name<B: Backend>() -> &'static str {
    B::NAME.to_str().unwrap_or("backend")
}

/// Store a node result for C: the node into `*out` and `NET_BACKEND_OK`, or the error code
/// (`*out` untouched).
///
/// # Safety
/// `out` must be non-NULL and writable.
unsafe fn write_node(result: Result<NET_Node, i32>, out: *mut NET_Node) -> i32 {
    match result {
        Ok(node) => {
            // SAFETY: as the caller guarantees.
            unsafe { out.write_unaligned(node) };
            NET_BACKEND_OK
        }
        Err(code) => code,
    }
}

unsafe extern "C" fn open<B: Backend>(
    params: *const NET_BackendOpenParams,
    out_socket: *mut *mut c_void,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    // SAFETY: the arguments are the vtable's, with its guarantees.
    unsafe {
        open_socket(
            name::<B>(),
            tag::<B>(),
            params,
            out_socket,
            err,
            err_len,
            B::open,
        )
    }
}

unsafe extern "C" fn close<B: Backend>(socket: *mut c_void) {
    // SAFETY: `socket` is NULL or a handle from `open`, never used again after this call.
    guard((), || unsafe {
        Handle::<B::Socket>::close(socket, tag::<B>())
    })
}

unsafe extern "C" fn send<B: Backend>(
    socket: *mut c_void,
    to: *const NET_Node,
    data: *const u8,
    len: usize,
) -> i32 {
    let body = |socket: &mut B::Socket| {
        if to.is_null() || data.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        if let Err(code) = socket.check_send_len(len) {
            return code;
        }
        // SAFETY: `to` is non-NULL and points to a node (any 32 bytes are a valid NET_Node).
        let to = unsafe { to.read_unaligned() };
        // SAFETY: `data` is non-NULL and readable for `len` bytes, a length the backend has
        // just accepted.
        let data = unsafe { std::slice::from_raw_parts(data, len) };
        socket.send(&to, data)
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, tag::<B>(), body) }
}

unsafe extern "C" fn receive<B: Backend>(
    socket: *mut c_void,
    from: *mut NET_Node,
    buf: *mut u8,
    cap: usize,
) -> i32 {
    let body = |socket: &mut B::Socket| {
        if from.is_null() || buf.is_null() || cap == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        match socket.receive(cap) {
            Ok(Some((sender, data))) => {
                // A correct backend never gets here with a longer slice; the check keeps the
                // copy inside the caller's buffer and the length inside the return type.
                if data.len() > cap.min(i32::MAX as usize) {
                    return NET_BACKEND_ERR_TOO_LARGE;
                }
                // SAFETY: `buf` is writable for `cap >= data.len()` bytes and `from` is
                // non-NULL and writable; neither overlaps the backend's own storage.
                unsafe {
                    ptr::copy_nonoverlapping(data.as_ptr(), buf, data.len());
                    from.write_unaligned(sender);
                }
                data.len() as i32
            }
            Ok(None) => 0,
            Err(code) => code,
        }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, tag::<B>(), body) }
}

unsafe extern "C" fn wait<B: Backend>(socket: *mut c_void, timeout_ms: u32) -> i32 {
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe {
        with_socket(socket, tag::<B>(), |socket: &mut B::Socket| {
            socket.wait(timeout_ms)
        })
    }
}

unsafe extern "C" fn node_compare<B: Backend>(a: *const NET_Node, b: *const NET_Node) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if a.is_null() || b.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: both are non-NULL and point to nodes.
        let (a, b) = unsafe { (a.read_unaligned(), b.read_unaligned()) };
        B::node_compare(&a, &b) as i32
    })
}

unsafe extern "C" fn node_print<B: Backend>(
    node: *const NET_Node,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if node.is_null() || out.is_null() || out_len == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `node` is non-NULL and points to a node.
        let node = unsafe { node.read_unaligned() };
        let text = B::node_print(&node);
        // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
        let written = unsafe { write_c_string(text.as_deref().unwrap_or(""), out, out_len) };
        match text {
            Some(text) if written == text.len() => i32::try_from(written).unwrap_or(i32::MAX),
            _ => NET_BACKEND_ERR_INVALID, // invalid node, or truncated (still NUL-terminated)
        }
    })
}

unsafe extern "C" fn node_parse<B: Backend>(
    text: *const c_char,
    default_port: u16,
    out: *mut NET_Node,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if text.is_null() || out.is_null() {
            keep_parse_error("the text or the output node is NULL");
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `text` is non-NULL and NUL-terminated per the ABI.
        let Some(text) = (unsafe { read_c_str(text) }) else {
            keep_parse_error("the text is not UTF-8");
            return NET_BACKEND_ERR_INVALID;
        };
        // Stays if the backend panics (the guard answers NET_BACKEND_ERR_IO).
        keep_parse_error("the backend failed while parsing the text");
        let result = B::node_parse(text, default_port).map_err(|err| {
            keep_parse_error(&err.message);
            err.code
        });
        if result.is_ok() {
            keep_parse_error("");
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { write_node(result, out) }
    })
}

thread_local! {
    /// Why this thread's most recent `node_parse` failed ("" after a success). Per thread, as the
    /// ABI says: the core asks right after the failed call, on the same thread.
    static LAST_PARSE_ERROR: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn keep_parse_error(message: &str) {
    LAST_PARSE_ERROR.with(|last| {
        let mut last = last.borrow_mut();
        last.clear();
        last.push_str(message);
    });
}

unsafe extern "C" fn node_parse_error(out: *mut c_char, out_len: usize) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if out.is_null() || out_len == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        LAST_PARSE_ERROR.with(|last| {
            // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
            let written = unsafe { write_c_string(&last.borrow(), out, out_len) };
            i32::try_from(written).unwrap_or(i32::MAX)
        })
    })
}

unsafe extern "C" fn broadcast_node<B: Backend>(
    socket: *mut c_void,
    port: u16,
    out: *mut NET_Node,
) -> i32 {
    let body = |socket: &mut B::Socket| {
        if out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { write_node(socket.broadcast_node(port), out) }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, tag::<B>(), body) }
}

unsafe extern "C" fn local_node<B: Backend>(
    socket: *mut c_void,
    towards: *const NET_Node,
    out: *mut NET_Node,
) -> i32 {
    let body = |socket: &mut B::Socket| {
        if out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `towards` may be NULL (primary network); otherwise it points to a node.
        let towards = unsafe { towards.as_ref() }.copied();
        // SAFETY: `out` is non-NULL and writable.
        unsafe { write_node(socket.local_node(towards.as_ref()), out) }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, tag::<B>(), body) }
}

unsafe extern "C" fn last_error<B: Backend>(
    socket: *mut c_void,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    // SAFETY: `socket` is NULL or a handle from `open`; `out` is checked before the write.
    unsafe { write_socket_line::<B, _>(socket, out, out_len, |s| s.last_error().to_string()) }
}

unsafe extern "C" fn describe_socket<B: Backend>(
    socket: *mut c_void,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    // SAFETY: as for `last_error`.
    unsafe { write_socket_line::<B, _>(socket, out, out_len, BackendSocket::describe) }
}

/// Write one line about a socket (`line` of it) into `out`: the length written, or
/// `NET_BACKEND_ERR_INVALID` for a NULL or empty buffer or a bad handle.
///
/// # Safety
/// `socket` is NULL or a handle from `open`; `out` is NULL or writable for `out_len` bytes.
unsafe fn write_socket_line<B: Backend, F: FnOnce(&B::Socket) -> String>(
    socket: *mut c_void,
    out: *mut c_char,
    out_len: usize,
    line: F,
) -> i32 {
    let body = |socket: &mut B::Socket| {
        if out.is_null() || out_len == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
        let written = unsafe { write_c_string(&line(socket), out, out_len) };
        i32::try_from(written).unwrap_or(i32::MAX)
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, tag::<B>(), body) }
}

unsafe extern "C" fn bound_port<B: Backend>(socket: *mut c_void) -> i32 {
    let body = |socket: &mut B::Socket| i32::from(socket.bound_port());
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, tag::<B>(), body) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_core_accepts_are_exactly_1_to_31_printable_ascii_characters() {
        assert!(name_is_acceptable(c"udp"));
        assert!(name_is_acceptable(c"a"));
        assert!(name_is_acceptable(c"abcdefghijklmnopqrstuvwxyz01234")); // 31
        assert!(!name_is_acceptable(c"abcdefghijklmnopqrstuvwxyz012345")); // 32
        assert!(!name_is_acceptable(c""));
        assert!(!name_is_acceptable(c"two words"));
        assert!(!name_is_acceptable(c"tab\there"));
        assert!(!name_is_acceptable(c"caf\xc3\xa9"));
    }
}
