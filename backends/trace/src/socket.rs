//! One open trace socket: the inner backend's socket it wraps, the trace file, the counters and
//! the trace backend's own last error. Every operation is the inner backend's; this module only
//! watches what passes (and never changes a result code, a datagram or a node on the way).
//!
//! Recording is secondary to traffic: when the trace file cannot be written, the datagram still
//! goes through, recording stops, and `last_error` reports the file error until the inner backend
//! reports a newer one.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::time::Instant;

use parsec_backend_abi::helpers::write_c_string;
pub use parsec_backend_abi::shim::OpenError;
use parsec_backend_abi::{
    NET_BackendOpenParams, NET_Node, NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO,
    NET_BACKEND_ERR_UNSUPPORTED, NET_BACKEND_OK, NET_BACKEND_WOULD_BLOCK,
};

use crate::inner::{self, Inner, Spec};
use crate::options::{self, INNER_KEY};
use crate::record::{self, Direction, Recorder, SHOWN_BYTES};

/// Traffic counted by one trace socket since it was opened (with or without a trace file):
/// what the inner backend accepted from `send` and delivered from `receive`.
pub type Counters = parsec_backend_abi::traffic::Traffic;

/// The state behind one trace socket handle.
#[derive(Debug)]
pub struct TraceSocket {
    inner: &'static Inner,
    /// The inner backend's socket handle; owned, closed on drop.
    handle: *mut c_void,
    opened: Instant,
    recorder: Option<Recorder>,
    counters: Counters,
    own_error: String,
    /// `own_error` is newer than any error the inner backend reported.
    own_error_is_latest: bool,
}

impl TraceSocket {
    /// Open an inner socket on `port` with the non-trace lines of `options_text`, using the
    /// backend `inner=` names or else `default`, and open the trace file `file=` names.
    pub fn open(
        default: &'static Inner,
        port: u16,
        options_text: &str,
    ) -> Result<TraceSocket, OpenError> {
        let options = options::split(options_text);
        let inner = match options.inner {
            Some(text) => choose_inner(default, text)?,
            None => default,
        };
        let passed_on = CString::new(options.passed_on).map_err(|_| {
            OpenError::new(
                NET_BACKEND_ERR_INVALID,
                "trace: the options contain a NUL byte".to_string(),
            )
        })?;
        let params = NET_BackendOpenParams {
            size: std::mem::size_of::<NET_BackendOpenParams>() as u32,
            port,
            reserved: 0,
            options: passed_on.as_ptr(),
        };
        let mut handle: *mut c_void = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: every pointer is valid for the call: `params` and the options string it points
        // to live until it returns, `handle` is a writable slot, `err` is writable for its length.
        let rc = unsafe { (inner.f.open)(&params, &mut handle, err.as_mut_ptr(), err.len()) };
        if rc != NET_BACKEND_OK {
            // The inner backend names its own console variables (`net.udp.bind`), but through
            // the trace backend the user sets them as `net.trace.*`.
            let mut message =
                c_buffer_text(&mut err).replace(&format!("net.{}.", inner.name), "net.trace.");
            if message.is_empty() {
                message = format!(
                    "trace: inner backend '{}' could not open a socket (code {rc})",
                    inner.name
                );
            }
            let code = if rc < 0 { rc } else { NET_BACKEND_ERR_IO };
            return Err(OpenError::new(code, message));
        }
        if handle.is_null() {
            return Err(OpenError::new(
                NET_BACKEND_ERR_IO,
                format!(
                    "trace: inner backend '{}' reported success but returned no socket",
                    inner.name
                ),
            ));
        }
        let recorder = match options.file.map(|file| Recorder::open(Path::new(file))) {
            None => None,
            Some(Ok(recorder)) => Some(recorder),
            Some(Err(message)) => {
                // SAFETY: `handle` came from this inner backend's `open` and is closed once.
                unsafe { (inner.f.close)(handle) };
                return Err(OpenError::new(NET_BACKEND_ERR_IO, message));
            }
        };
        Ok(TraceSocket {
            inner,
            handle,
            opened: Instant::now(),
            recorder,
            counters: Counters::default(),
            own_error: String::new(),
            own_error_is_latest: false,
        })
    }

    /// Traffic counted since open.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Name of the inner backend this socket passes calls to (its vtable name).
    pub fn inner_name(&self) -> &str {
        &self.inner.name
    }

    /// The library file of the inner backend.
    pub fn inner_path(&self) -> &Path {
        &self.inner.path
    }

    /// The trace file being written, if any (None without `file=` or after a write error).
    pub fn trace_file(&self) -> Option<&Path> {
        self.recorder.as_ref().map(Recorder::path)
    }

    /// Pass `send` on; count and record the datagram if the inner backend accepted it.
    ///
    /// # Safety
    /// `to` must point to a node and `data` must be readable for `len` bytes (both non-NULL).
    pub unsafe fn send(&mut self, to: *const NET_Node, data: *const u8, len: usize) -> i32 {
        // SAFETY: the caller's pointers are passed on unchanged with the same guarantees.
        let rc = unsafe { (self.inner.f.send)(self.handle, to, data, len) };
        if rc == NET_BACKEND_OK {
            self.counters.count_sent(len);
            if self.recorder.is_some() {
                // SAFETY: `to` points to a node; `data` is readable for `len` >= the bytes read.
                let (to, head) = unsafe {
                    (
                        to.read_unaligned(),
                        std::slice::from_raw_parts(data, len.min(SHOWN_BYTES)),
                    )
                };
                self.record(Direction::Send, &to, len, head);
            }
        } else {
            self.note_inner_result(rc);
        }
        rc
    }

    /// Pass `receive` on; count and record a delivered datagram.
    ///
    /// # Safety
    /// `from` must be writable and `buf` writable for `cap` bytes (both non-NULL).
    pub unsafe fn receive(&mut self, from: *mut NET_Node, buf: *mut u8, cap: usize) -> i32 {
        // SAFETY: the caller's pointers are passed on unchanged with the same guarantees.
        let rc = unsafe { (self.inner.f.receive)(self.handle, from, buf, cap) };
        if rc <= 0 {
            self.note_inner_result(rc);
            return rc;
        }
        let len = rc as usize;
        if len > cap {
            self.set_own_error(format!(
                "trace: inner backend '{}' reported a {len}-byte datagram for a {cap}-byte buffer",
                self.inner.name
            ));
            return NET_BACKEND_ERR_IO;
        }
        self.counters.count_received(len);
        if self.recorder.is_some() {
            // SAFETY: the inner backend wrote the sender into `from` and `len` <= `cap` bytes
            // into `buf`, both of which the caller made available.
            let (sender, head) = unsafe {
                (
                    from.read_unaligned(),
                    std::slice::from_raw_parts(buf, len.min(SHOWN_BYTES)),
                )
            };
            self.record(Direction::Receive, &sender, len, head);
        }
        rc
    }

    /// Pass `wait` on.
    pub fn wait(&mut self, timeout_ms: u32) -> i32 {
        // SAFETY: `handle` is this socket's live inner handle.
        let rc = unsafe { (self.inner.f.wait)(self.handle, timeout_ms) };
        self.note_inner_result(rc);
        rc
    }

    /// Pass `broadcast_node` on.
    ///
    /// # Safety
    /// `out` must be non-NULL and writable.
    pub unsafe fn broadcast_node(&mut self, port: u16, out: *mut NET_Node) -> i32 {
        // SAFETY: live inner handle; `out` as the caller guarantees.
        let rc = unsafe { (self.inner.f.broadcast_node)(self.handle, port, out) };
        self.note_inner_result(rc);
        rc
    }

    /// Pass `local_node` on.
    ///
    /// # Safety
    /// `towards` must be NULL or point to a node; `out` must be non-NULL and writable.
    pub unsafe fn local_node(&mut self, towards: *const NET_Node, out: *mut NET_Node) -> i32 {
        // SAFETY: live inner handle; the pointers as the caller guarantees.
        let rc = unsafe { (self.inner.f.local_node)(self.handle, towards, out) };
        self.note_inner_result(rc);
        rc
    }

    /// Pass `bound_port` on.
    pub fn bound_port(&mut self) -> i32 {
        // SAFETY: live inner handle.
        let rc = unsafe { (self.inner.f.bound_port)(self.handle) };
        self.note_inner_result(rc);
        rc
    }

    /// What this socket is, for `status`: the inner backend, what it says of its socket, and
    /// the trace file: "trace of udp: IPv4 0.0.0.0:6526, ..., writing /tmp/t.trace".
    pub fn describe(&self) -> String {
        let mut line = format!("trace of {}", self.inner.name);
        if let Some(describe) = self.inner.f.describe_socket {
            let mut buf = [0 as c_char; 256];
            // SAFETY: live inner handle; the inner backend writes at most buf.len() bytes.
            let rc = unsafe { describe(self.handle, buf.as_mut_ptr(), buf.len()) };
            buf[buf.len() - 1] = 0;
            // SAFETY: buf is NUL-terminated.
            let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
            if rc > 0 && !text.trim().is_empty() {
                line.push_str(&format!(": {}", text.trim()));
            }
        }
        match &self.recorder {
            Some(recorder) => line.push_str(&format!(", writing {}", recorder.path().display())),
            None => line.push_str(", not writing a file"),
        }
        line
    }

    /// The trace backend's own error if it is the most recent, else the inner backend's.
    ///
    /// # Safety
    /// `out` must be non-NULL and writable for `out_len` (> 0) bytes.
    pub unsafe fn last_error(&self, out: *mut c_char, out_len: usize) -> i32 {
        if self.own_error_is_latest {
            // SAFETY: as the caller guarantees.
            let written = unsafe { write_c_string(&self.own_error, out, out_len) };
            return i32::try_from(written).unwrap_or(i32::MAX);
        }
        // SAFETY: live inner handle; `out` as the caller guarantees.
        unsafe { (self.inner.f.last_error)(self.handle, out, out_len) }
    }

    /// Write buffered trace lines to the file now.
    pub fn flush(&mut self) {
        if let Some(Err(message)) = self.recorder.as_mut().map(Recorder::flush) {
            self.recorder = None;
            self.set_own_error(message);
        }
    }

    fn set_own_error(&mut self, message: String) {
        self.own_error = message;
        self.own_error_is_latest = true;
    }

    /// After an inner call: an error result makes the inner backend's message the latest one.
    fn note_inner_result(&mut self, rc: i32) {
        if rc < 0 && rc != NET_BACKEND_WOULD_BLOCK {
            self.own_error_is_latest = false;
        }
    }

    fn record(&mut self, direction: Direction, node: &NET_Node, len: usize, head: &[u8]) {
        let node_text = self.node_text(node);
        let ms = self.opened.elapsed().as_millis();
        let Some(recorder) = self.recorder.as_mut() else {
            return;
        };
        if let Err(message) = recorder.record(ms, direction, &node_text, len, head) {
            self.recorder = None;
            self.set_own_error(message);
        }
    }

    /// The node as the inner backend prints it, as one field; `raw:<hex>` if it cannot.
    fn node_text(&self, node: &NET_Node) -> String {
        let mut buf = [0 as c_char; 256];
        // SAFETY: `node` is a valid node and `buf` is writable for its length.
        let rc = unsafe { (self.inner.f.node_print)(node, buf.as_mut_ptr(), buf.len()) };
        let text = if rc >= 0 {
            c_buffer_text(&mut buf)
        } else {
            String::new()
        };
        if text.is_empty() {
            let mut raw = "raw:".to_string();
            record::push_hex(&mut raw, &node.bytes);
            raw
        } else {
            record::field(&text)
        }
    }
}

impl Drop for TraceSocket {
    /// Write the remaining trace lines, then close the inner socket.
    fn drop(&mut self) {
        if let Some(recorder) = self.recorder.as_mut() {
            // Nowhere to report a failure: the handle is gone after close.
            let _ = recorder.flush();
        }
        // SAFETY: `handle` came from the inner backend's `open` and is closed exactly once, here.
        unsafe { (self.inner.f.close)(self.handle) };
    }
}

/// Load the inner backend `inner=` names and check that it can stand in for the default one.
fn choose_inner(default: &'static Inner, text: &str) -> Result<&'static Inner, OpenError> {
    let invalid = |detail: String| {
        OpenError::new(
            NET_BACKEND_ERR_INVALID,
            format!("trace: invalid net.trace.{INNER_KEY} '{text}': {detail}"),
        )
    };
    let spec = Spec::parse(text).map_err(invalid)?;
    let inner = inner::load(&spec).map_err(invalid)?;
    // The core gives `open` a 256-byte error buffer: the reason comes first, the path last.
    let unsupported = |why: String| {
        OpenError::new(
            NET_BACKEND_ERR_UNSUPPORTED,
            format!(
                "trace: inner backend '{}' refused: {why} ({})",
                inner.name,
                inner.path.display()
            ),
        )
    };
    if inner.name == "trace" {
        return Err(unsupported(
            "it is a trace backend itself; the inner one must be the backend to trace".to_string(),
        ));
    }
    if inner.name != default.name {
        return Err(unsupported(format!(
            "node functions have no socket, so nodes always go to the default inner backend \
             '{0}' and the inner one must be a '{0}' backend too; use net.api {1} instead",
            default.name, inner.name
        )));
    }
    if inner.max_payload < default.max_payload {
        return Err(unsupported(format!(
            "it carries at most {} bytes, less than the {} bytes announced for the default inner \
             backend '{}'",
            inner.max_payload, default.max_payload, default.name
        )));
    }
    if default.capabilities & !inner.capabilities != 0 {
        return Err(unsupported(format!(
            "it lacks capabilities 0x{:x} announced for the default inner backend '{}'",
            default.capabilities & !inner.capabilities,
            default.name
        )));
    }
    Ok(inner)
}

/// The text a backend wrote into a C buffer, up to its NUL (the last byte is forced to NUL).
fn c_buffer_text(buf: &mut [c_char]) -> String {
    let Some(last) = buf.last_mut() else {
        return String::new();
    };
    *last = 0;
    // SAFETY: the buffer is NUL-terminated (its last byte at least) and lives for this call.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}
