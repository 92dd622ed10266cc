//! The packet-backend ABI: the only types that cross between the parsec-net core and a packet
//! backend library (UDP, IPX, or anyone's plugin written in C or Rust).
//!
//! A backend library exports exactly one symbol, [`NET_BACKEND_ENTRY_SYMBOL`], of type
//! [`NET_BackendEntryFn`]. The core calls it with the ABI version it speaks; the backend returns
//! a pointer to a static [`NET_BackendVTable`] (or NULL if it cannot serve that version). The
//! core checks `abi_version` and `size`, copies the table, and keeps the library loaded while any
//! socket opened through it lives.
//!
//! Rules this crate must never break:
//! - only C types cross the boundary (no Rust types, no panics, no ownership transfer of memory);
//! - fields are only ever appended to the vtable and the open parameters; the order is ABI law;
//! - numbers of result codes are never reused.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

/// The backend ABI version this crate describes. Incremented only when the meaning of an existing
/// field changes; appending fields is signalled by `size` instead.
pub const NET_BACKEND_ABI_VERSION: u32 = 1;

/// Name of the single symbol every backend library exports (type `NET_BackendEntryFn`).
pub const NET_BACKEND_ENTRY_SYMBOL: &str = "parsec_net_backend_entry";

/// Size in bytes of a node address.
pub const NET_NODE_SIZE: usize = 32;

/// An opaque, fixed-size, copyable network address. Only the backend that produced it knows
/// what the bytes mean (IPv4/IPv6 + port for UDP; network + MAC + socket for IPX).
///
/// A backend must keep nodes canonical: one address has exactly one byte form, and bytes the
/// address does not use are zero. The core compares and prints nodes only through the backend.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NET_Node {
    pub bytes: [u8; NET_NODE_SIZE],
}

/// Capability: the backend can send to a broadcast node (peer-to-peer discovery needs it).
pub const NET_BACKEND_CAP_BROADCAST: u32 = 1 << 0;
/// Capability: the backend can carry the client-server protocols (slotserver, gameserver), which
/// also need TCP/IP connections to the server.
pub const NET_BACKEND_CAP_CLIENT_SERVER: u32 = 1 << 1;

/// Backend call succeeded.
pub const NET_BACKEND_OK: i32 = 0;
/// The operation would block (send buffer full); try again later. Never an error.
pub const NET_BACKEND_WOULD_BLOCK: i32 = -1;
/// An argument was invalid (NULL pointer, malformed node, bad option).
pub const NET_BACKEND_ERR_INVALID: i32 = -2;
/// The datagram is larger than `max_payload`.
pub const NET_BACKEND_ERR_TOO_LARGE: i32 = -3;
/// An operating-system I/O error; `last_error` describes it.
pub const NET_BACKEND_ERR_IO: i32 = -4;
/// The destination cannot be reached from this socket (wrong address family, no route).
pub const NET_BACKEND_ERR_UNREACHABLE: i32 = -5;
/// The process lacks a privilege the backend needs (for example CAP_NET_RAW).
pub const NET_BACKEND_ERR_PERMISSION: i32 = -6;
/// The backend cannot work on this system or cannot do what was asked.
pub const NET_BACKEND_ERR_UNSUPPORTED: i32 = -7;

/// Parameters the core passes to `open`. Append-only; `size` says how much of it the core filled.
#[repr(C)]
#[derive(Debug)]
pub struct NET_BackendOpenParams {
    /// `sizeof(NET_BackendOpenParams)` as the core knows it.
    pub size: u32,
    /// Local port (or IPX socket number) to bind; 0 lets the backend pick a free one.
    pub port: u16,
    /// Always 0.
    pub reserved: u16,
    /// Backend options as `key=value` lines separated by '\n' (from the console variables
    /// `net.<backend>.<key>`); never NULL, may be empty. Unknown keys must be ignored.
    pub options: *const c_char,
}

/// The function table a backend returns. Every function pointer of version 1 (up to
/// `bound_port`) must be non-NULL; the ones appended later may be NULL.
///
/// Calls into one backend are serialized by the core; a backend need not be thread-safe.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NET_BackendVTable {
    /// The ABI version the backend implements; must be <= the version the core asked for.
    pub abi_version: u32,
    /// `sizeof(NET_BackendVTable)` as the backend knows it.
    pub size: u32,
    /// Short name shown by `status`, e.g. "udp"; a static NUL-terminated string.
    pub name: *const c_char,
    /// Largest datagram payload in bytes the backend carries.
    pub max_payload: u32,
    /// `NET_BACKEND_CAP_*` bits.
    pub capabilities: u32,
    /// Open a socket. On success stores a handle in `*out_socket` and returns NET_BACKEND_OK; on
    /// failure writes a one-line NUL-terminated reason into `err` (capacity `err_len`).
    pub open: Option<
        unsafe extern "C" fn(
            params: *const NET_BackendOpenParams,
            out_socket: *mut *mut c_void,
            err: *mut c_char,
            err_len: usize,
        ) -> i32,
    >,
    /// Close a socket opened by `open`. The handle is never used again.
    pub close: Option<unsafe extern "C" fn(socket: *mut c_void)>,
    /// Send one datagram. Returns NET_BACKEND_OK, NET_BACKEND_WOULD_BLOCK or an error.
    pub send: Option<
        unsafe extern "C" fn(
            socket: *mut c_void,
            to: *const NET_Node,
            data: *const u8,
            len: usize,
        ) -> i32,
    >,
    /// Receive one datagram without blocking: returns its length (> 0) and writes the sender
    /// into `*from`, 0 if none is waiting, or an error (< 0). A datagram longer than `cap` is
    /// dropped and counted by the backend, never truncated silently.
    pub receive: Option<
        unsafe extern "C" fn(
            socket: *mut c_void,
            from: *mut NET_Node,
            buf: *mut u8,
            cap: usize,
        ) -> i32,
    >,
    /// Wait up to `timeout_ms` until a datagram can be received: 1 readable, 0 timed out, < 0 error.
    pub wait: Option<unsafe extern "C" fn(socket: *mut c_void, timeout_ms: u32) -> i32>,
    /// Total order of nodes: < 0, 0 or > 0.
    pub node_compare: Option<unsafe extern "C" fn(a: *const NET_Node, b: *const NET_Node) -> i32>,
    /// Print a node as text into `out`; returns the length written (without the NUL) or < 0.
    pub node_print: Option<
        unsafe extern "C" fn(node: *const NET_Node, out: *mut c_char, out_len: usize) -> i32,
    >,
    /// Parse text (as printed, or a host name) into a node; `default_port` is used when the text
    /// names no port. Returns NET_BACKEND_OK or an error.
    pub node_parse: Option<
        unsafe extern "C" fn(text: *const c_char, default_port: u16, out: *mut NET_Node) -> i32,
    >,
    /// The broadcast node for `port` on this socket's network; NET_BACKEND_ERR_UNSUPPORTED if
    /// the backend has no broadcast.
    pub broadcast_node:
        Option<unsafe extern "C" fn(socket: *mut c_void, port: u16, out: *mut NET_Node) -> i32>,
    /// The node by which `towards` (may be NULL: the primary network) sees this socket.
    pub local_node: Option<
        unsafe extern "C" fn(
            socket: *mut c_void,
            towards: *const NET_Node,
            out: *mut NET_Node,
        ) -> i32,
    >,
    /// Describe the socket's most recent error as one NUL-terminated line; returns its length.
    pub last_error:
        Option<unsafe extern "C" fn(socket: *mut c_void, out: *mut c_char, out_len: usize) -> i32>,
    /// The port (or IPX socket number) the socket is actually bound to (what port 0 became),
    /// or < 0 on error. The core reopens this port when a switch away fails.
    pub bound_port: Option<unsafe extern "C" fn(socket: *mut c_void) -> i32>,
    /// Appended to version 1 (present when `size` covers it; may be NULL): why the calling
    /// thread's most recent `node_parse` failed, as one NUL-terminated line written into `out`
    /// (capacity `out_len`), e.g. "port 99999 is not 1-65535". Returns the line's length, 0 if
    /// that parse succeeded or there was none, < 0 on a bad argument. The core calls it right
    /// after a failed `node_parse`, on the same thread, to tell the user more than the code.
    pub node_parse_error: Option<unsafe extern "C" fn(out: *mut c_char, out_len: usize) -> i32>,
    /// Appended to version 1 (present when `size` covers it; may be NULL): what the open socket
    /// is bound to, as one NUL-terminated line for the console's `status`, written into `out`
    /// (capacity `out_len`), e.g. "interface veth0, MAC 02:00:00:00:00:01" or "IPv4 127.0.0.1:6526".
    /// Returns the line's length (0: nothing to say), < 0 on a bad argument or handle.
    pub describe_socket:
        Option<unsafe extern "C" fn(socket: *mut c_void, out: *mut c_char, out_len: usize) -> i32>,
}

/// Size of the first (version 1) vtable: the smallest table the core accepts. Fields after it
/// were appended later; a table whose `size` ends before a field does not have it.
pub const NET_BACKEND_VTABLE_V1_SIZE: usize =
    std::mem::offset_of!(NET_BackendVTable, node_parse_error);

/// Copy a backend's vtable, reading no more than the `size` it declares (at most this crate's
/// `sizeof(NET_BackendVTable)`); fields the backend's table does not have stay NULL.
///
/// # Safety
/// `table` must be non-NULL and readable for its first 8 bytes and then for as many bytes as
/// its `size` field declares (a backend's static vtable).
pub unsafe fn read_vtable(table: *const NET_BackendVTable) -> NET_BackendVTable {
    // SAFETY: the caller guarantees the 8-byte prefix is readable.
    let declared = unsafe { table.cast::<u32>().add(1).read_unaligned() } as usize;
    let len = declared.min(std::mem::size_of::<NET_BackendVTable>());
    let mut copy = std::mem::MaybeUninit::<NET_BackendVTable>::zeroed();
    // SAFETY: `len` bytes are readable at `table` (the caller's guarantee, capped by our size)
    // and writable in `copy`; an all-zero vtable is valid (integers, NULL pointers, `None`s).
    unsafe {
        std::ptr::copy_nonoverlapping(table.cast::<u8>(), copy.as_mut_ptr().cast::<u8>(), len);
        copy.assume_init()
    }
}

// SAFETY: the vtable holds only function pointers and a pointer to a static string.
unsafe impl Sync for NET_BackendVTable {}
unsafe impl Send for NET_BackendVTable {}

/// Type of the entry symbol: given the core's ABI version, return the backend's vtable or NULL.
pub type NET_BackendEntryFn =
    unsafe extern "C" fn(core_abi_version: u32) -> *const NET_BackendVTable;

pub mod helpers;
pub mod os_error;
pub mod shim;
pub mod traffic;

#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod conformance;

#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod vtable_socket;

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn explain(_out: *mut c_char, _out_len: usize) -> i32 {
        0
    }

    fn table(size: usize) -> NET_BackendVTable {
        let mut table = shim::vtable::<shim::tests::LoopBackend<false>>();
        table.size = size as u32;
        table.node_parse_error = Some(explain);
        table
    }

    #[test]
    fn a_version_1_table_has_none_of_the_appended_functions() {
        let v1 = table(NET_BACKEND_VTABLE_V1_SIZE);
        // SAFETY: a complete table, of which only the declared size is read.
        let copy = unsafe { read_vtable(&v1) };
        assert!(
            copy.node_parse_error.is_none(),
            "read beyond the declared size"
        );
        assert!(copy.bound_port.is_some() && copy.open.is_some());
        assert_eq!(copy.size as usize, NET_BACKEND_VTABLE_V1_SIZE);
    }

    #[test]
    fn a_current_or_larger_table_is_read_up_to_this_crates_size() {
        for size in [
            size_of::<NET_BackendVTable>(),
            size_of::<NET_BackendVTable>() + 64,
        ] {
            let t = table(size);
            // SAFETY: for the larger size only this crate's size is read, which `t` covers.
            let copy = unsafe { read_vtable(&t) };
            assert!(copy.node_parse_error.is_some(), "size {size}");
        }
    }

    #[test]
    fn version_1_ends_where_the_first_appended_field_starts() {
        assert_eq!(
            NET_BACKEND_VTABLE_V1_SIZE,
            std::mem::offset_of!(NET_BackendVTable, bound_port) + size_of::<usize>()
        );
    }
}
