//! parsec-net IPX packet backend: IPX packets in Ethernet II frames (EtherType 0x8137) on a raw
//! packet socket bound to one interface, loaded by the core with dlopen and used only through
//! the vtable that [`parsec_net_backend_entry`] returns. Linux only (AF_PACKET); elsewhere it
//! builds and `open` fails with NET_BACKEND_ERR_UNSUPPORTED (PORTING.md says what a port needs).
//!
//! - Node: network (4) + the interface's MAC (6) + socket (2), text `NNNNNNNN:AABBCCDDEEFF:SSSS`
//!   (see `src/node.rs`); broadcast: node FF:FF:FF:FF:FF:FF on this socket's network.
//! - The open `port` is the IPX socket number; 0 means 0x869C (this project's "Parsec" socket).
//! - Options (`key=value` lines, console variables `net.ipx.<key>`): `interface`, `network`
//!   (documented in `src/options.rs`).
//! - At most 546 bytes of payload; capabilities: broadcast, no client-server.
//! - Needs CAP_NET_RAW: without it `open` fails with NET_BACKEND_ERR_PERMISSION and says so.
//! - Receive filtering: only well-formed IPX frames for this network, socket and node (or
//!   broadcast) are delivered; everything else is counted in [`Stats`] (read with
//!   [`IpxSocket::stats`] through [`socket_from_handle`]) and dropped. Frames of other
//!   EtherTypes never reach the socket: the kernel filters them.
//! - A socket never receives its own frames, broadcasts included. Two programs on the same host
//!   and interface do not hear each other either: Linux does not loop raw frames back to other
//!   packet sockets. Use two hosts, or two network namespaces joined by a veth pair (the tests).
//!
//! This file holds only the exported entry point, the static vtable and the `extern "C"` shims
//! that check pointers and convert between C and Rust. It must never contain networking logic,
//! and no panic may ever unwind out of it: every shim runs its body under `catch_unwind`.

mod filter;
mod frame;
mod iface;
mod node;
mod options;
mod oserr;
mod raw;
mod socket;
mod stats;

use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use parsec_backend_abi::helpers::{read_c_str, write_c_string};
use parsec_backend_abi::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_CAP_BROADCAST, NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_OK,
};

pub use frame::MAX_PAYLOAD;
pub use node::{IpxAddr, BROADCAST_MAC, DEFAULT_SOCKET};
pub use oserr::{OpenError, NEED_CAP_NET_RAW, NOT_SUPPORTED};
pub use socket::IpxSocket;
pub use stats::Stats;

static VTABLE: NET_BackendVTable = NET_BackendVTable {
    abi_version: NET_BACKEND_ABI_VERSION,
    size: size_of::<NET_BackendVTable>() as u32,
    name: c"ipx".as_ptr(),
    max_payload: MAX_PAYLOAD as u32,
    capabilities: NET_BACKEND_CAP_BROADCAST,
    open: Some(ipx_open),
    close: Some(ipx_close),
    send: Some(ipx_send),
    receive: Some(ipx_receive),
    wait: Some(ipx_wait),
    node_compare: Some(ipx_node_compare),
    node_print: Some(ipx_node_print),
    node_parse: Some(ipx_node_parse),
    broadcast_node: Some(ipx_broadcast_node),
    local_node: Some(ipx_local_node),
    last_error: Some(ipx_last_error),
    bound_port: Some(ipx_bound_port),
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
pub unsafe fn socket_from_handle<'a>(handle: *mut c_void) -> Option<&'a mut IpxSocket> {
    // SAFETY: per the contract, a non-NULL handle points to an IpxSocket boxed by `ipx_open`.
    let socket = unsafe { handle.cast::<IpxSocket>().as_mut()? };
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
        return Err(format!("ipx: open parameters too small ({size} bytes)"));
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
        None => Err("ipx: the options are not valid UTF-8".to_string()),
    }
}

unsafe extern "C" fn ipx_open(
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
            return report(NET_BACKEND_ERR_INVALID, "ipx: open: out_socket is NULL");
        }
        // SAFETY: `out_socket` is non-NULL and points to a handle slot the core owns.
        unsafe { out_socket.write(ptr::null_mut()) };
        if params.is_null() {
            return report(NET_BACKEND_ERR_INVALID, "ipx: open: params is NULL");
        }
        // SAFETY: `params` is non-NULL and, per the ABI, readable for its declared size.
        let (port, options) = match unsafe { read_params(params) } {
            Ok(read) => read,
            Err(message) => return report(NET_BACKEND_ERR_INVALID, &message),
        };
        match IpxSocket::open(port, options) {
            Ok(socket) => {
                // SAFETY: as above; ownership of the box passes to the core until `close`.
                unsafe { out_socket.write(Box::into_raw(socket).cast()) };
                report(NET_BACKEND_OK, "")
            }
            Err(e) => report(e.code, &e.message),
        }
    })
}

unsafe extern "C" fn ipx_close(socket: *mut c_void) {
    guard((), || {
        // SAFETY: `socket` is NULL or a handle from `open`, never used again after this call.
        if let Some(live) = unsafe { socket_from_handle(socket) } {
            live.retire();
            // SAFETY: the handle is the pointer `Box::into_raw` produced in `ipx_open`.
            drop(unsafe { Box::from_raw(socket.cast::<IpxSocket>()) });
        }
    })
}

unsafe extern "C" fn ipx_send(
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

unsafe extern "C" fn ipx_receive(
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

unsafe extern "C" fn ipx_wait(socket: *mut c_void, timeout_ms: u32) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: `socket` is NULL or a live handle from `open`.
        match unsafe { socket_from_handle(socket) } {
            Some(socket) => socket.wait(timeout_ms),
            None => NET_BACKEND_ERR_INVALID,
        }
    })
}

unsafe extern "C" fn ipx_node_compare(a: *const NET_Node, b: *const NET_Node) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        if a.is_null() || b.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: both are non-NULL and point to nodes.
        let (a, b) = unsafe { (a.read_unaligned(), b.read_unaligned()) };
        node::compare(&a, &b) as i32
    })
}

unsafe extern "C" fn ipx_node_print(
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

unsafe extern "C" fn ipx_node_parse(
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

unsafe extern "C" fn ipx_broadcast_node(socket: *mut c_void, port: u16, out: *mut NET_Node) -> i32 {
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

unsafe extern "C" fn ipx_local_node(
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

unsafe extern "C" fn ipx_last_error(socket: *mut c_void, out: *mut c_char, out_len: usize) -> i32 {
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

/// The IPX socket number the socket uses (what port 0 became).
unsafe extern "C" fn ipx_bound_port(socket: *mut c_void) -> i32 {
    guard(NET_BACKEND_ERR_IO, || {
        // SAFETY: a non-NULL handle came from ipx_open and is live until ipx_close.
        match unsafe { socket_from_handle(socket) } {
            Some(socket) => i32::from(socket.socket_number()),
            None => NET_BACKEND_ERR_INVALID,
        }
    })
}
