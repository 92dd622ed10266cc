//! parsec-net trace packet backend: a decorator that loads another backend library (the *inner*
//! backend), passes every call through to it, and records every datagram that goes through. Select
//! it with `net.api trace` (or its path) to see what a game sends and receives without a packet
//! capture.
//!
//! This file holds the exported entry point, the vtable and the `extern "C"` shims; no panic may
//! unwind out of it. The shims pass raw pointers on to the inner backend unchanged, so they cannot
//! use the Rust traits of [`parsec_backend_abi::shim`]; they are built from the same pieces
//! instead (panic boundary, socket handles, reading the open parameters). Loading inner backends
//! is `inner.rs`, one socket is `socket.rs`, the trace file is `record.rs`, the options are
//! `options.rs`.
//!
//! # Options (console variables `net.trace.<key>`)
//!
//! The core passes a backend the variables named after it, so a trace socket gets every
//! `net.trace.*` variable. Two are the trace backend's own:
//!
//! - `inner=NAME|PATH` (`net.trace.inner`): the inner backend of sockets opened while it is set.
//!   A NAME is looked up as `libparsec_backend_NAME.so` (the platform's prefix and suffix) in the
//!   directories of `PARSEC_NET_BACKEND_PATH`, then beside the trace library; a PATH is used as
//!   given. Default: `udp`.
//! - `file=PATH` (`net.trace.file`): append one line per datagram to this file (format in
//!   `record.rs`: `<ms since open> send|recv <node> <length> <first 32 bytes in hex>`). Without it
//!   only the counters are kept ([`TraceSocket::counters`]).
//!
//! Every other variable is passed to the inner backend's `open` unchanged: set
//! `net.trace.bind 127.0.0.1` (not `net.udp.bind`) to bind the traced UDP socket.
//!
//! # The default inner backend, and why `inner=` is limited
//!
//! `node_parse`, `node_print` and `node_compare` have no socket argument, so the trace backend
//! cannot know which inner backend a node belongs to: they always go to the *default* inner
//! backend, `udp`, which [`parsec_net_backend_entry`] loads from beside the trace library (or from
//! `PARSEC_NET_BACKEND_PATH`) the first time it is called. If that fails the entry returns NULL
//! (the core then reports "refused backend ABI version") and the reason is written to stderr once,
//! as one line. The vtable's `max_payload` and `capabilities` are the default inner backend's.
//!
//! Therefore `inner=` may only name a backend whose nodes are the default's: its vtable name must
//! be the same (`udp`: for example another build of the UDP backend), it must carry at least as
//! much and offer every capability the trace backend announced. Any other backend is refused at
//! open with a message explaining this.
//!
//! Inner libraries are loaded once and never unloaded (see `inner.rs`).

#[cfg(not(unix))]
compile_error!("parsec-backend-trace supports Unix-like systems only (it uses dladdr)");

mod inner;
mod options;
mod record;
mod socket;

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::io::Write as _;
use std::mem::size_of;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use parsec_backend_abi::helpers::write_c_string;
use parsec_backend_abi::shim::{guard, handle_tag, open_socket, with_socket, Handle};
use parsec_backend_abi::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_ERR_UNSUPPORTED,
};

pub use inner::{library_file_name, BACKEND_PATH_ENV};
pub use record::{FLUSH_LINES, SHOWN_BYTES};
pub use socket::{Counters, OpenError, TraceSocket};

/// The inner backend used when `inner=` is not set, and for every node function.
pub const DEFAULT_INNER: &str = "udp";

/// The tag that marks an open trace socket handle.
const TAG: u64 = handle_tag(c"trace");

/// The default inner backend and the trace vtable built from it, once per process.
struct State {
    /// The `inner` text the default was chosen with (`DEFAULT_INNER` unless a Rust caller chose).
    spec: String,
    inner: &'static inner::Inner,
    vtable: NET_BackendVTable,
}

static STATE: OnceLock<Result<State, String>> = OnceLock::new();
/// The reason the default inner backend is missing has been written to stderr.
static REPORTED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread is loading the default inner backend (a library that calls back into this
    /// entry while being loaded would otherwise deadlock on `STATE`).
    static LOADING: Cell<bool> = const { Cell::new(false) };
}

/// Clears [`LOADING`] even if loading panics.
struct LoadingFlag;

impl Drop for LoadingFlag {
    fn drop(&mut self) {
        LOADING.with(|flag| flag.set(false));
    }
}

/// The state, loading the default inner backend from `spec` if nothing is loaded yet.
fn state(spec: &str) -> Result<&'static State, String> {
    if let Some(done) = STATE.get() {
        return done.as_ref().map_err(Clone::clone);
    }
    if LOADING.with(Cell::get) {
        return Err("the default inner backend asked for the trace backend while loading".into());
    }
    LOADING.with(|flag| flag.set(true));
    let _clear = LoadingFlag;
    STATE
        .get_or_init(|| load_default(spec))
        .as_ref()
        .map_err(Clone::clone)
}

fn load_default(spec: &str) -> Result<State, String> {
    let loaded = inner::Spec::parse(spec).and_then(|parsed| inner::load(&parsed));
    let inner =
        loaded.map_err(|e| format!("cannot load the default inner backend '{spec}': {e}"))?;
    Ok(State {
        spec: spec.to_string(),
        inner,
        vtable: build_vtable(inner),
    })
}

fn build_vtable(inner: &inner::Inner) -> NET_BackendVTable {
    NET_BackendVTable {
        abi_version: NET_BACKEND_ABI_VERSION,
        size: size_of::<NET_BackendVTable>() as u32,
        name: c"trace".as_ptr(),
        max_payload: inner.max_payload,
        capabilities: inner.capabilities,
        open: Some(trace_open),
        close: Some(trace_close),
        send: Some(trace_send),
        receive: Some(trace_receive),
        wait: Some(trace_wait),
        node_compare: Some(trace_node_compare),
        node_print: Some(trace_node_print),
        node_parse: Some(trace_node_parse),
        broadcast_node: Some(trace_broadcast_node),
        local_node: Some(trace_local_node),
        last_error: Some(trace_last_error),
        bound_port: Some(trace_bound_port),
        node_parse_error: Some(trace_node_parse_error),
        describe_socket: Some(trace_describe_socket),
    }
}

/// The default inner backend, if it is loaded.
fn default_inner() -> Option<&'static inner::Inner> {
    STATE.get()?.as_ref().ok().map(|state| state.inner)
}

/// The trace vtable for in-process (Rust) users and tests, loading the default inner backend
/// (`udp`, see the crate documentation) on first use; the error is one line.
pub fn vtable() -> Result<&'static NET_BackendVTable, String> {
    state(DEFAULT_INNER).map(|state| &state.vtable)
}

/// Like [`vtable`], but the default inner backend is `spec` (a NAME or PATH, as for `inner=`).
/// Only the first choice in a process counts: asking again with different text is an error.
pub fn vtable_with_default_inner(spec: &str) -> Result<&'static NET_BackendVTable, String> {
    let state = state(spec)?;
    if state.spec != spec {
        return Err(format!(
            "the default inner backend is already '{}' ({})",
            state.spec,
            state.inner.path.display()
        ));
    }
    Ok(&state.vtable)
}

/// The library file of the default inner backend, once it is loaded.
pub fn default_inner_path() -> Option<&'static Path> {
    default_inner().map(|inner| inner.path.as_path())
}

/// The single exported symbol ([`parsec_backend_abi::NET_BACKEND_ENTRY_SYMBOL`]): loads the
/// default inner backend on the first call and returns the trace vtable, or NULL when the core
/// speaks an older ABI or the default inner backend cannot be loaded (reported once on stderr).
///
/// # Safety
/// Callable from any thread with any value.
#[no_mangle]
pub unsafe extern "C" fn parsec_net_backend_entry(
    core_abi_version: u32,
) -> *const NET_BackendVTable {
    guard(ptr::null(), || {
        if core_abi_version < NET_BACKEND_ABI_VERSION {
            return ptr::null();
        }
        match vtable() {
            Ok(table) => table as *const NET_BackendVTable,
            Err(reason) => {
                // A plugin has no other channel at this point; the core only sees NULL.
                if !REPORTED.swap(true, Ordering::Relaxed) {
                    let line = inner::one_line(&reason);
                    let _ = writeln!(std::io::stderr(), "parsec-backend-trace: {line}");
                }
                ptr::null()
            }
        }
    })
}

/// The socket behind a handle, or `None` for NULL or a handle that was closed (when the memory
/// still shows it; a freed handle is a caller bug this cannot always catch). Gives Rust callers
/// the [`TraceSocket::counters`].
///
/// # Safety
/// `handle` must be NULL or a handle returned by this backend's `open`, not used concurrently.
pub unsafe fn socket_from_handle<'a>(handle: *mut c_void) -> Option<&'a mut TraceSocket> {
    // SAFETY: as the caller guarantees.
    unsafe { Handle::socket(handle, TAG) }
}

/// The counters of an open trace socket (None for NULL or a closed handle).
///
/// # Safety
/// As for [`socket_from_handle`].
pub unsafe fn counters(handle: *mut c_void) -> Option<Counters> {
    // SAFETY: as the caller guarantees.
    unsafe { socket_from_handle(handle) }.map(|socket| socket.counters())
}

unsafe extern "C" fn trace_open(
    params: *const NET_BackendOpenParams,
    out_socket: *mut *mut c_void,
    err: *mut c_char,
    err_len: usize,
) -> i32 {
    let open = |port: u16, options: &str| {
        let Some(default) = default_inner() else {
            return Err(OpenError::new(
                NET_BACKEND_ERR_UNSUPPORTED,
                "trace: the default inner backend is not loaded (call the entry function first)",
            ));
        };
        TraceSocket::open(default, port, options)
    };
    // SAFETY: the arguments are the vtable's, with its guarantees.
    unsafe { open_socket("trace", TAG, params, out_socket, err, err_len, open) }
}

unsafe extern "C" fn trace_close(socket: *mut c_void) {
    // SAFETY: `socket` is NULL or a handle from `open`, never used again after this call;
    // dropping the socket flushes the trace file and closes the inner socket.
    guard((), || unsafe { Handle::<TraceSocket>::close(socket, TAG) })
}

unsafe extern "C" fn trace_send(
    socket: *mut c_void,
    to: *const NET_Node,
    data: *const u8,
    len: usize,
) -> i32 {
    let body = |socket: &mut TraceSocket| {
        if to.is_null() || data.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: both are non-NULL; per the ABI `to` is a node and `data` holds `len` bytes.
        unsafe { socket.send(to, data, len) }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, TAG, body) }
}

unsafe extern "C" fn trace_receive(
    socket: *mut c_void,
    from: *mut NET_Node,
    buf: *mut u8,
    cap: usize,
) -> i32 {
    let body = |socket: &mut TraceSocket| {
        if from.is_null() || buf.is_null() || cap == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: both are non-NULL; per the ABI `from` is writable and `buf` holds `cap` bytes.
        unsafe { socket.receive(from, buf, cap) }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, TAG, body) }
}

unsafe extern "C" fn trace_wait(socket: *mut c_void, timeout_ms: u32) -> i32 {
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe {
        with_socket(socket, TAG, |socket: &mut TraceSocket| {
            socket.wait(timeout_ms)
        })
    }
}

/// Run a node function of the default inner backend (its pointer arguments already checked):
/// `NET_BACKEND_ERR_UNSUPPORTED` while none is loaded.
fn with_default_inner(call: impl FnOnce(&inner::Functions) -> i32) -> i32 {
    guard(NET_BACKEND_ERR_IO, || match default_inner() {
        Some(inner) => call(&inner.f),
        None => NET_BACKEND_ERR_UNSUPPORTED,
    })
}

unsafe extern "C" fn trace_node_compare(a: *const NET_Node, b: *const NET_Node) -> i32 {
    if a.is_null() || b.is_null() {
        return NET_BACKEND_ERR_INVALID;
    }
    // SAFETY: both are non-NULL nodes, passed on unchanged.
    with_default_inner(|f| unsafe { (f.node_compare)(a, b) })
}

unsafe extern "C" fn trace_node_print(
    node: *const NET_Node,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    if node.is_null() || out.is_null() || out_len == 0 {
        return NET_BACKEND_ERR_INVALID;
    }
    // SAFETY: `node` is a non-NULL node and `out` is writable for `out_len` bytes.
    with_default_inner(|f| unsafe { (f.node_print)(node, out, out_len) })
}

unsafe extern "C" fn trace_node_parse(
    text: *const c_char,
    default_port: u16,
    out: *mut NET_Node,
) -> i32 {
    let refused = text.is_null() || out.is_null();
    REFUSED_NULL_PARSE.with(|flag| flag.set(refused));
    if refused {
        return NET_BACKEND_ERR_INVALID;
    }
    // SAFETY: `text` is a non-NULL NUL-terminated string and `out` a writable node.
    with_default_inner(|f| unsafe { (f.node_parse)(text, default_port, out) })
}

thread_local! {
    /// This thread's last `node_parse` was refused here, before the inner backend saw it (so
    /// the inner backend's explanation would be about an older call).
    static REFUSED_NULL_PARSE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The inner backend's explanation of the failed parse just forwarded to it ("" when it has
/// none to give).
unsafe extern "C" fn trace_node_parse_error(out: *mut c_char, out_len: usize) -> i32 {
    if out.is_null() || out_len == 0 {
        return NET_BACKEND_ERR_INVALID;
    }
    if REFUSED_NULL_PARSE.with(std::cell::Cell::get) {
        // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
        let written =
            unsafe { write_c_string("the text or the output node is NULL", out, out_len) };
        return i32::try_from(written).unwrap_or(i32::MAX);
    }
    with_default_inner(|f| match f.node_parse_error {
        // SAFETY: `out` is non-NULL and writable for `out_len` bytes.
        Some(explain) => unsafe { explain(out, out_len) },
        None => {
            // SAFETY: as above; `out_len` is at least 1.
            unsafe { out.write(0) };
            0
        }
    })
}

unsafe extern "C" fn trace_broadcast_node(
    socket: *mut c_void,
    port: u16,
    out: *mut NET_Node,
) -> i32 {
    let body = |socket: &mut TraceSocket| {
        if out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `out` is a non-NULL writable node.
        unsafe { socket.broadcast_node(port, out) }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, TAG, body) }
}

unsafe extern "C" fn trace_local_node(
    socket: *mut c_void,
    towards: *const NET_Node,
    out: *mut NET_Node,
) -> i32 {
    let body = |socket: &mut TraceSocket| {
        if out.is_null() {
            return NET_BACKEND_ERR_INVALID;
        }
        // SAFETY: `towards` is NULL (primary network) or a node; `out` is a non-NULL node.
        unsafe { socket.local_node(towards, out) }
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, TAG, body) }
}

unsafe extern "C" fn trace_last_error(
    socket: *mut c_void,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    // SAFETY: `socket` is NULL or a handle from `open`; `write` runs only once `out` is a
    // non-NULL buffer of `out_len` (> 0) writable bytes.
    unsafe {
        write_socket_line(socket, out, out_len, |socket| {
            socket.last_error(out, out_len)
        })
    }
}

unsafe extern "C" fn trace_describe_socket(
    socket: *mut c_void,
    out: *mut c_char,
    out_len: usize,
) -> i32 {
    // SAFETY: as for `trace_last_error`.
    unsafe {
        write_socket_line(socket, out, out_len, |socket| {
            let written = write_c_string(&socket.describe(), out, out_len);
            i32::try_from(written).unwrap_or(i32::MAX)
        })
    }
}

/// Run `write` (which writes one line about the socket into `out`) on the socket behind
/// `socket`, once `out` is known to be a non-empty buffer; `NET_BACKEND_ERR_INVALID` otherwise.
///
/// # Safety
/// `socket` is NULL or a handle from `open`; `out` is NULL or writable for `out_len` bytes.
unsafe fn write_socket_line(
    socket: *mut c_void,
    out: *mut c_char,
    out_len: usize,
    write: impl FnOnce(&mut TraceSocket) -> i32,
) -> i32 {
    let body = |socket: &mut TraceSocket| {
        if out.is_null() || out_len == 0 {
            return NET_BACKEND_ERR_INVALID;
        }
        write(socket)
    };
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, TAG, body) }
}

unsafe extern "C" fn trace_bound_port(socket: *mut c_void) -> i32 {
    // SAFETY: `socket` is NULL or a handle from `open`.
    unsafe { with_socket(socket, TAG, |socket: &mut TraceSocket| socket.bound_port()) }
}
