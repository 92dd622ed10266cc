//! parsec-net UDP packet backend: IPv4 and IPv6 datagrams through socket2, loaded by the core
//! with dlopen and used only through the vtable that [`parsec_net_backend_entry`] returns.
//!
//! This file holds only the exported entry point, the static vtable and the `extern "C"` shims
//! that check pointers and convert between C and Rust. It must never contain networking logic,
//! and no panic may ever unwind out of it: every shim runs its body under `catch_unwind`.
//!
//! Options (`key=value` lines, console variables `net.udp.<key>`): `bind`, `bind6`,
//! `broadcast`, `ipv6`, `rcvbuf`, `sndbuf`, `recvmmsg` (documented in `src/options.rs`).

#[cfg(not(unix))]
compile_error!("parsec-backend-udp supports Unix-like systems only (it uses poll and getifaddrs)");

mod batch;
mod bind;
mod local;
mod node;
mod options;
mod oserr;
mod socket;
mod stats;

use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use parsec_backend_abi::helpers::{read_c_str, write_c_string};
use parsec_backend_abi::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_CAP_BROADCAST, NET_BACKEND_CAP_CLIENT_SERVER, NET_BACKEND_ERR_INVALID,
    NET_BACKEND_ERR_IO, NET_BACKEND_OK,
};

pub use bind::OpenError;
pub use socket::UdpSocket;
pub use stats::Stats;

/// Largest datagram payload this backend carries (fits a 1500-byte Ethernet MTU with room for
/// IPv6 and tunnel headers).
pub const MAX_PAYLOAD: usize = 1400;

static VTABLE: NET_BackendVTable = NET_BackendVTable {
    abi_version: NET_BACKEND_ABI_VERSION,
    size: size_of::<NET_BackendVTable>() as u32,
    name: c"udp".as_ptr(),
    max_payload: MAX_PAYLOAD as u32,
    capabilities: NET_BACKEND_CAP_BROADCAST | NET_BACKEND_CAP_CLIENT_SERVER,
    open: Some(udp_open),
    close: Some(udp_close),
    send: Some(udp_send),
    receive: Some(udp_receive),
    wait: Some(udp_wait),
    node_compare: Some(udp_node_compare),
    node_print: Some(udp_node_print),
    node_parse: Some(udp_node_parse),
    broadcast_node: Some(udp_broadcast_node),
    local_node: Some(udp_local_node),
    last_error: Some(udp_last_error),
    bound_port: Some(udp_bound_port),
};

/// The backend's vtable, for in-process (Rust) users and tests.
pub fn vtable() -> &'static NET_BackendVTable {
    &VTABLE
}

/// The single exported symbol ([`parsec_backend_abi::NET_BACKEND_ENTRY_SYMBOL`]): the vtable, or
/// NULL when the core speaks an older ABI than this backend implements.
///
/// # Safety
/// Callable from any thread with any value; it only returns a pointer to a static.
#[cfg_attr(not(feature = "without-entry-symbol"), no_mangle)]
pub unsafe extern "C" fn parsec_net_backend_entry(
    core_abi_version: u32,
) -> *const NET_BackendVTable {
    guard(ptr::null(), || {
        if core_abi_version < NET_BACKEND_ABI_VERSION {
            ptr::null()
        } else {
            &VTABLE as *const NET_BackendVTable
        }
    })
}

/// Run a shim body, turning a panic into `on_panic` instead of unwinding into C.
fn guard<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}

/// The socket behind a handle, or `None` for NULL or a handle that was closed (when the memory
/// still shows it; a freed handle is a caller bug this cannot always catch).
///
/// # Safety
/// `handle` must be NULL or a handle returned by this backend's `open`.
pub unsafe fn socket_from_handle<'a>(handle: *mut c_void) -> Option<&'a mut UdpSocket> {
    // SAFETY: per the contract, a non-NULL handle points to a UdpSocket boxed by `udp_open`.
    let socket = unsafe { handle.cast::<UdpSocket>().as_mut()? };
    socket.is_live().then_some(socket)
}

/// Read `port` and `options` from the open parameters, looking only at fields that lie within
/// the `size` the core declared.
///
/// # Safety
/// `params` must be non-NULL and readable for `params.size` bytes (at least the `size` field).
unsafe fn read_params<'a>(params: *const NET_BackendOpenParams) -> Result<(u16, &'a str), String> {
    // SAFETY: `size` is the first field and always present.
    let size = unsafe { ptr::addr_of!((*params).size).read_unaligned() } as usize;
    let port_end = offset_of!(NET_BackendOpenParams, port) + size_of::<u16>();
    if size < port_end {
        return Err(format!("udp: open parameters too small ({size} bytes)"));
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
    // SAFETY: a non-NULL `options` is a NUL-terminated string per the ABI that stays valid for
    // the whole `open` call, which is as long as the caller uses the returned text.
    match unsafe { read_c_str(options) } {
        Some(text) => Ok((port, text)),
        None => Err("udp: the options are not valid UTF-8".to_string()),
    }
}

unsafe extern "C" fn udp_open(
    params: *const NET_BackendOpenParams,
    out_socket: *mut *mut c_void,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        let report = |code: i32, message: &str| {
            // SAFETY: `err` is NULL or valid for `err_len` bytes of writes, per the ABI.
            unsafe { write_c_string(message, err, err_len) };
            code
        };
        if out_socket.is_null() {
            return report(NET_BACKEND_ERR_INVALID, "udp: open: out_socket is NULL");
        }
        // SAFETY: `out_socket` is non-NULL and points to a handle slot the core owns.
        unsafe { out_socket.write(ptr::null_mut()) };
        if params.is_null() {
            return report(NET_BACKEND_ERR_INVALID, "udp: open: params is NULL");
        }
        // SAFETY: `params` is non-NULL and, per the ABI, readable for its declared size.
        let (port, options) = match unsafe { read_params(params) } {
            Ok(read) => read,
            Err(message) => return report(NET_BACKEND_ERR_INVALID, &message),
        };
        match UdpSocket::open(port, options) {
            Ok(socket) => {
                // SAFETY: as above; ownership of the box passes to the core until `close`.
                unsafe { out_socket.write(Box::into_raw(socket).cast()) };
                report(NET_BACKEND_OK, "")
            }
            Err(e) => report(e.code, &e.message),
        }
    })
}

unsafe extern "C" fn udp_close(socket: *mut c_void) {
    guard((), || {
        // SAFETY: `socket` is NULL or a handle from `open`, never used again after this call.
        if let Some(live) = unsafe { socket_from_handle(socket) } {
            live.retire();
            // SAFETY: the handle is the pointer `Box::into_raw` produced in `udp_open`.
            drop(unsafe { Box::from_raw(socket.cast::<UdpSocket>()) });
        }
    })
}

unsafe extern "C" fn udp_send(
    socket: *mut c_void,
    to: *const NET_Node,
    data: *const u8,
    len: usize,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        let Some(socket) = (unsafe { socket_from_handle(socket) }) else {
            return NET_BACKEND_ERR_INVALID;
        };
        if to.is_null() || data.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        if let Err(code) = socket.check_send_len(len) {
            return code;
        }
        // SAFETY: `to` is non-NULL and points to a node (any 32 bytes are a valid NET_Node).
        let to = unsafe { to.read_unaligned() };
        // SAFETY: `data` is non-NULL and readable for `len` bytes, and `len` was just checked to be
        // at most MAX_PAYLOAD.
        let data = unsafe { std::slice::from_raw_parts(data, len) };
        socket.send(&to, data)
    })
}

unsafe extern "C" fn udp_receive(
    socket: *mut c_void,
    from: *mut NET_Node,
    buf: *mut u8,
    cap: usize,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        let Some(socket) = (unsafe { socket_from_handle(socket) }) else {
            return NET_BACKEND_ERR_INVALID;
        };
        if from.is_null() || buf.is_null() || cap == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        match socket.receive(cap) {
            Ok(Some((sender, data))) => {
                // SAFETY: `buf` is writable for `cap` bytes and `data.len() <= cap` (checked by
                // `receive`); `from` is non-NULL and writable. The regions do not overlap ours.
                unsafe {
                    ptr::copy_nonoverlapping(data.as_ptr(), buf, data.len());
                    from.write_unaligned(sender);
                }
                data.len() as i32 // at most MAX_PAYLOAD
            }
            Ok(None) => 0,
            Err(code) => code,
        }
    })
}

unsafe extern "C" fn udp_wait(socket: *mut c_void, timeout_ms: u32) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        match unsafe { socket_from_handle(socket) } {
            Some(socket) => socket.wait(timeout_ms),
            None => NET_BACKEND_ERR_INVALID,
        }
    })
}

unsafe extern "C" fn udp_node_compare(a: *const NET_Node, b: *const NET_Node) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if a.is_null() || b.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: both are non-NULL and point to nodes.
        let (a, b) = unsafe { (a.read_unaligned(), b.read_unaligned()) };
        node::compare(&a, &b) as i32
    })
}

unsafe extern "C" fn udp_node_print(
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
        let text = node::print(&node);
        // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
        let written = unsafe { write_c_string(text.as_deref().unwrap_or(""), out, out_len) };
        match text {
            Some(text) if written == text.len() => written as i32,
            _ => NET_BACKEND_ERR_INVALID, // invalid node, or truncated (still NUL-terminated)
        }
    })
}

unsafe extern "C" fn udp_node_parse(
    text: *const c_char,
    default_port: u16,
    out: *mut NET_Node,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if text.is_null() || out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `text` is non-NULL and NUL-terminated per the ABI.
        let Some(text) = (unsafe { read_c_str(text) }) else {
            return NET_BACKEND_ERR_INVALID;
        };
        match node::parse(text, default_port) {
            Ok(node) => {
                // SAFETY: `out` is non-NULL and writable.
                unsafe { out.write_unaligned(node) };
                NET_BACKEND_OK
            }
            Err(_) => NET_BACKEND_ERR_INVALID,
        }
    })
}

unsafe extern "C" fn udp_broadcast_node(socket: *mut c_void, port: u16, out: *mut NET_Node) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        let Some(socket) = (unsafe { socket_from_handle(socket) }) else {
            return NET_BACKEND_ERR_INVALID;
        };
        if out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write_unaligned(socket.broadcast_node(port)) };
        NET_BACKEND_OK
    })
}

unsafe extern "C" fn udp_local_node(
    socket: *mut c_void,
    towards: *const NET_Node,
    out: *mut NET_Node,
) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        let Some(socket) = (unsafe { socket_from_handle(socket) }) else {
            return NET_BACKEND_ERR_INVALID;
        };
        if out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `towards` may be NULL (primary network); otherwise it points to a node.
        let towards = unsafe { towards.as_ref() }.copied();
        match socket.local_node(towards.as_ref()) {
            Ok(node) => {
                // SAFETY: `out` is non-NULL and writable.
                unsafe { out.write_unaligned(node) };
                NET_BACKEND_OK
            }
            Err(code) => code,
        }
    })
}

unsafe extern "C" fn udp_last_error(socket: *mut c_void, out: *mut c_char, out_len: usize) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        let Some(socket) = (unsafe { socket_from_handle(socket) }) else {
            return NET_BACKEND_ERR_INVALID;
        };
        if out.is_null() || out_len == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
        let written = unsafe { write_c_string(socket.last_error(), out, out_len) };
        i32::try_from(written).unwrap_or(i32::MAX)
    })
}

/// The port the IPv4 socket is bound to (the IPv6 socket shares it).
unsafe extern "C" fn udp_bound_port(socket: *mut c_void) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: a non-NULL handle came from udp_open and is live until udp_close.
        match unsafe { socket_from_handle(socket) } {
            Some(socket) => i32::from(socket.ipv4_port()),
            None => NET_BACKEND_ERR_INVALID,
        }
    })
}
