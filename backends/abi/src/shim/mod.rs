//! The easy way to write a packet backend in Rust: implement [`Backend`] (what the library does
//! without a socket) and [`BackendSocket`] (one open socket) in Rust types, then call
//! [`export_backend!`](crate::export_backend) once. That builds the static
//! [`NET_BackendVTable`](crate::NET_BackendVTable) and exports `parsec_net_backend_entry`.
//!
//! The `extern "C"` functions in that vtable are generic and monomorphised per backend, so the
//! C-side work is written once, here: the panic boundary, every pointer and length check, the
//! handle check, reading the versioned open parameters within their declared `size`, and writing
//! error text into the caller's buffer. A backend's Rust code never sees a raw pointer.
//!
//! Nothing here changes the ABI: a backend written in C still fills the vtable by hand.
//! The pieces the generic shims are made of ([`guard`], [`Handle`], [`open_socket`],
//! [`with_socket`]) are public too, for a backend that forwards raw pointers and so cannot use
//! the traits (the trace decorator).

mod calls;
mod guard;
mod handle;
mod open;
#[cfg(test)]
pub(crate) mod tests;

use std::cmp::Ordering;
use std::ffi::CStr;

use crate::{NET_Node, NET_BACKEND_ERR_UNSUPPORTED};

pub use calls::{entry, socket_from_handle, vtable};
pub use guard::guard;
pub use handle::{handle_tag, with_socket, Handle};
pub use open::{open_socket, read_open_params};

/// Why a call failed: a `NET_BACKEND_ERR_*` code and one line for the user. Messages of `open`
/// start with the backend's name by convention (`"udp: cannot bind ..."`); those of `node_parse`
/// say what is wrong with the text (`"port 99999 is not 1-65535"`), since the core adds the
/// text and the backend's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError {
    /// A `NET_BACKEND_ERR_*` code (negative).
    pub code: i32,
    /// One line, no newline.
    pub message: String,
}

impl BackendError {
    /// An error with the given code and message.
    pub fn new(code: i32, message: impl Into<String>) -> BackendError {
        BackendError {
            code,
            message: message.into(),
        }
    }

    /// A node text that is not an address of this backend (`NET_BACKEND_ERR_INVALID`).
    pub fn invalid(message: impl Into<String>) -> BackendError {
        BackendError::new(crate::NET_BACKEND_ERR_INVALID, message)
    }
}

/// Why `open` failed.
pub type OpenError = BackendError;

/// A packet backend written in Rust: its vtable constants, how it opens a socket, and its node
/// functions (which have no socket). The generic shims check every pointer before calling these.
pub trait Backend: 'static {
    /// The vtable name: 1-31 printable ASCII characters (checked when the vtable is built, so a
    /// bad name does not compile). It also starts the shim's own error messages.
    const NAME: &'static CStr;
    /// Largest payload in bytes, 1-65507 (checked when the vtable is built).
    const MAX_PAYLOAD: usize;
    /// `NET_BACKEND_CAP_*` bits.
    const CAPABILITIES: u32;
    /// One open socket.
    type Socket: BackendSocket;

    /// Open a socket on `port` (0: the backend's choice) with the `key=value` option lines
    /// (never NULL here: a missing options field or pointer arrives as "").
    fn open(port: u16, options: &str) -> Result<Self::Socket, OpenError>;
    /// A total order of nodes.
    fn node_compare(a: &NET_Node, b: &NET_Node) -> Ordering;
    /// The text of a node; `None` for a node this backend never produces.
    fn node_print(node: &NET_Node) -> Option<String>;
    /// Parse text as `node_print` writes it; `default_port` when the text names none. `Err` holds
    /// a `NET_BACKEND_ERR_*` code, usually `NET_BACKEND_ERR_INVALID` ([`BackendError::invalid`]),
    /// and what is wrong with the text, which the shim keeps for the vtable's
    /// `node_parse_error`.
    fn node_parse(text: &str, default_port: u16) -> Result<NET_Node, BackendError>;
}

/// One open socket of a [`Backend`]. Calls are serialized by the core but may come from
/// different threads, hence `Send`. Error results are `NET_BACKEND_ERR_*` codes; a method that
/// fails records a one-line message that [`last_error`](BackendSocket::last_error) returns.
pub trait BackendSocket: Send {
    /// Accept or refuse a payload length before the shim touches a byte of the datagram:
    /// refuse 0 (`NET_BACKEND_ERR_INVALID`) and more than `MAX_PAYLOAD`
    /// (`NET_BACKEND_ERR_TOO_LARGE`).
    fn check_send_len(&mut self, len: usize) -> Result<(), i32>;
    /// Send one datagram (its length already accepted by `check_send_len`): `NET_BACKEND_OK`,
    /// `NET_BACKEND_WOULD_BLOCK` or an error.
    fn send(&mut self, to: &NET_Node, data: &[u8]) -> i32;
    /// The next datagram and its sender without blocking, `None` if nothing waits. The shim
    /// copies the bytes into the caller's buffer of `cap` bytes: drop (and count) a longer
    /// datagram and return `Err(NET_BACKEND_ERR_TOO_LARGE)`, never truncate it. (Should a longer
    /// slice come back anyway, the shim refuses it the same way rather than overrun the buffer.)
    fn receive(&mut self, cap: usize) -> Result<Option<(NET_Node, &[u8])>, i32>;
    /// Wait up to `timeout_ms` until `receive` may have data: 1 ready, 0 timed out, < 0 error.
    fn wait(&mut self, timeout_ms: u32) -> i32;
    /// The broadcast node for `port` (0: this socket's own) on this socket's network. Without
    /// broadcast, keep the default: `NET_BACKEND_ERR_UNSUPPORTED`.
    fn broadcast_node(&mut self, port: u16) -> Result<NET_Node, i32> {
        let _ = port;
        Err(NET_BACKEND_ERR_UNSUPPORTED)
    }
    /// The node by which `towards` (`None`: the primary network) reaches this socket.
    fn local_node(&mut self, towards: Option<&NET_Node>) -> Result<NET_Node, i32>;
    /// The most recent error as one line, "" if none.
    fn last_error(&self) -> &str;
    /// The port actually bound (what port 0 became).
    fn bound_port(&self) -> u16;
    /// What the socket is bound to, one line for the console's `status` (the vtable's
    /// `describe_socket`), e.g. "interface veth0"; "" (the default) says nothing.
    fn describe(&self) -> String {
        String::new()
    }
}

/// Build the static vtable of a [`Backend`] and export it. Expands, in the calling crate, to:
///
/// - `pub fn vtable() -> &'static NET_BackendVTable`, for in-process (Rust) users and tests;
/// - `pub unsafe extern "C" fn parsec_net_backend_entry(u32) -> *const NET_BackendVTable`, the
///   entry symbol: the vtable, or NULL for a core older than this ABI. It is exported unmangled;
///   with `unless feature = "NAME"` it is not while the calling crate's feature NAME is on (so
///   that several backends can be linked into one program, as the fuzz targets do);
/// - `pub unsafe fn socket_from_handle(handle) -> Option<&mut Socket>`: the socket behind a
///   handle from this backend's `open`, `None` for NULL or a closed handle.
///
/// ```ignore
/// pub struct Udp;
/// impl parsec_backend_abi::shim::Backend for Udp { /* ... */ }
/// parsec_backend_abi::export_backend!(Udp);
/// // or: parsec_backend_abi::export_backend!(Udp, unless feature = "without-entry-symbol");
/// ```
#[macro_export]
macro_rules! export_backend {
    (@with_entry_attribute $backend:ty, [$($entry_attribute:tt)*]) => {
        static PARSEC_BACKEND_VTABLE: $crate::NET_BackendVTable =
            $crate::shim::vtable::<$backend>();

        /// The backend's vtable, for in-process (Rust) users and tests.
        pub fn vtable() -> &'static $crate::NET_BackendVTable {
            &PARSEC_BACKEND_VTABLE
        }

        /// The single exported symbol ([`parsec_backend_abi::NET_BACKEND_ENTRY_SYMBOL`]): the
        /// vtable, or NULL when the core speaks an older ABI than this backend implements.
        ///
        /// # Safety
        /// Callable from any thread with any value; it only returns a pointer to a static.
        #[$($entry_attribute)*]
        pub unsafe extern "C" fn parsec_net_backend_entry(
            core_abi_version: u32,
        ) -> *const $crate::NET_BackendVTable {
            $crate::shim::entry(core_abi_version, &PARSEC_BACKEND_VTABLE)
        }

        /// The socket behind a handle, or `None` for NULL or a handle that was closed (when the
        /// memory still shows it; a freed handle is a caller bug this cannot always catch).
        ///
        /// # Safety
        /// `handle` must be NULL or a handle returned by this backend's `open`, not used
        /// concurrently.
        pub unsafe fn socket_from_handle<'a>(
            handle: *mut ::std::ffi::c_void,
        ) -> ::std::option::Option<&'a mut <$backend as $crate::shim::Backend>::Socket> {
            // SAFETY: as the caller guarantees.
            unsafe { $crate::shim::socket_from_handle::<$backend>(handle) }
        }
    };
    ($backend:ty, unless feature = $feature:literal) => {
        $crate::export_backend!(
            @with_entry_attribute $backend, [cfg_attr(not(feature = $feature), no_mangle)]
        );
    };
    ($backend:ty) => {
        $crate::export_backend!(@with_entry_attribute $backend, [no_mangle]);
    };
}
