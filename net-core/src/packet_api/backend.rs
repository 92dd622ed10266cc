//! A validated packet backend and its open sockets: the only place that calls through a
//! backend's vtable. Everything here is safe to call; the unsafety of the C boundary stays inside.
//!
//! A `Backend` owns the library it came from (if any) behind an `Arc`, and every `BackendSocket`
//! holds that `Arc`, so a library is never unloaded while a socket opened through it lives.

use std::cmp::Ordering;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::Arc;

use parsec_backend_abi as abi;
use parsec_backend_abi::{NET_BackendVTable, NET_Node};

use crate::error::{ErrorCode, NetError, NetResult};

/// Where a backend's code came from, for `status` and error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendOrigin {
    /// Loaded from a library file.
    Library(PathBuf),
    /// A vtable handed over in-process (tests, embedders).
    InProcess,
}

/// The function pointers of a backend: those of version 1 checked to be present, the appended
/// ones `None` where the backend's table does not have them.
#[derive(Clone, Copy)]
struct Functions {
    open: unsafe extern "C" fn(
        *const abi::NET_BackendOpenParams,
        *mut *mut c_void,
        *mut c_char,
        usize,
    ) -> i32,
    close: unsafe extern "C" fn(*mut c_void),
    send: unsafe extern "C" fn(*mut c_void, *const NET_Node, *const u8, usize) -> i32,
    receive: unsafe extern "C" fn(*mut c_void, *mut NET_Node, *mut u8, usize) -> i32,
    wait: unsafe extern "C" fn(*mut c_void, u32) -> i32,
    node_compare: unsafe extern "C" fn(*const NET_Node, *const NET_Node) -> i32,
    node_print: unsafe extern "C" fn(*const NET_Node, *mut c_char, usize) -> i32,
    node_parse: unsafe extern "C" fn(*const c_char, u16, *mut NET_Node) -> i32,
    broadcast_node: unsafe extern "C" fn(*mut c_void, u16, *mut NET_Node) -> i32,
    local_node: unsafe extern "C" fn(*mut c_void, *const NET_Node, *mut NET_Node) -> i32,
    last_error: LineFn,
    bound_port: unsafe extern "C" fn(*mut c_void) -> i32,
    node_parse_error: Option<unsafe extern "C" fn(*mut c_char, usize) -> i32>,
    describe_socket: Option<LineFn>,
}

/// A backend function that writes one line about a socket (`last_error`, `describe_socket`).
type LineFn = unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> i32;

/// A backend whose vtable passed validation.
pub struct Backend {
    name: String,
    max_payload: usize,
    capabilities: u32,
    functions: Functions,
    origin: BackendOrigin,
    // Declared last so it is dropped after everything that may point into it.
    _library: Option<libloading::Library>,
}

/// Largest payload any backend may announce (a UDP datagram's limit).
const MAX_ANNOUNCED_PAYLOAD: u32 = 65_507;
/// Longest backend name accepted from a vtable.
const MAX_NAME_LEN: usize = 31;

impl Backend {
    /// Validate a vtable pointer returned by a backend's entry function.
    ///
    /// # Safety
    /// `table` must be NULL or point to memory readable for at least the 8-byte prefix and then
    /// for as many bytes as its `size` field claims (a backend's static vtable).
    pub unsafe fn from_vtable(
        table: *const NET_BackendVTable,
        label: &str,
        origin: BackendOrigin,
        library: Option<libloading::Library>,
    ) -> NetResult<Arc<Backend>> {
        let load_error = |message: String| NetError::new(ErrorCode::BackendLoad, message);
        if table.is_null() {
            return Err(load_error(format!(
                "{label} refused backend ABI version {} (its entry function returned NULL)",
                abi::NET_BACKEND_ABI_VERSION
            )));
        }
        // Read the version and size before trusting anything else.
        let prefix = table.cast::<u32>();
        let version = prefix.read_unaligned();
        let size = prefix.add(1).read_unaligned() as usize;
        if version > abi::NET_BACKEND_ABI_VERSION {
            return Err(load_error(format!(
                "{label} implements backend ABI version {version}, newer than this core's version {}",
                abi::NET_BACKEND_ABI_VERSION
            )));
        }
        if version == 0 {
            return Err(load_error(format!(
                "{label} reports backend ABI version 0, which does not exist"
            )));
        }
        if size < abi::NET_BACKEND_VTABLE_V1_SIZE {
            return Err(load_error(format!(
                "{label} has a {size}-byte vtable, smaller than the {} bytes backend ABI version {version} requires",
                abi::NET_BACKEND_VTABLE_V1_SIZE
            )));
        }
        // No more than the declared size is read; fields beyond it stay NULL.
        let table: NET_BackendVTable = abi::read_vtable(table);
        let name = if table.name.is_null() {
            return Err(load_error(format!("{label} vtable has no name")));
        } else {
            match CStr::from_ptr(table.name).to_str() {
                Ok(n)
                    if !n.is_empty()
                        && n.len() <= MAX_NAME_LEN
                        && n.chars().all(|c| c.is_ascii_graphic()) =>
                {
                    n.to_string()
                }
                _ => {
                    return Err(load_error(format!(
                        "{label} vtable name is not 1-{MAX_NAME_LEN} printable ASCII characters"
                    )))
                }
            }
        };
        if table.max_payload == 0 || table.max_payload > MAX_ANNOUNCED_PAYLOAD {
            return Err(load_error(format!(
                "{label} announces a maximum payload of {} bytes (must be 1-{MAX_ANNOUNCED_PAYLOAD})",
                table.max_payload
            )));
        }
        macro_rules! required {
            ($field:ident) => {
                table.$field.ok_or_else(|| {
                    load_error(format!(
                        "{label} vtable has no '{}' function",
                        stringify!($field)
                    ))
                })?
            };
        }
        let functions = Functions {
            open: required!(open),
            close: required!(close),
            send: required!(send),
            receive: required!(receive),
            wait: required!(wait),
            node_compare: required!(node_compare),
            node_print: required!(node_print),
            node_parse: required!(node_parse),
            broadcast_node: required!(broadcast_node),
            local_node: required!(local_node),
            last_error: required!(last_error),
            bound_port: required!(bound_port),
            node_parse_error: table.node_parse_error,
            describe_socket: table.describe_socket,
        };
        Ok(Arc::new(Backend {
            name,
            max_payload: table.max_payload as usize,
            capabilities: table.capabilities,
            functions,
            origin,
            _library: library,
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    pub fn origin(&self) -> &BackendOrigin {
        &self.origin
    }

    pub fn supports_broadcast(&self) -> bool {
        self.capabilities & abi::NET_BACKEND_CAP_BROADCAST != 0
    }

    pub fn supports_client_server(&self) -> bool {
        self.capabilities & abi::NET_BACKEND_CAP_CLIENT_SERVER != 0
    }

    /// Open a socket on `port` with `options` (`key=value` lines).
    pub fn open(self: &Arc<Self>, port: u16, options: &str) -> NetResult<BackendSocket> {
        let options = CString::new(options.replace('\0', ""))
            .map_err(|_| NetError::invalid("backend options contain a NUL byte"))?;
        let params = abi::NET_BackendOpenParams {
            size: std::mem::size_of::<abi::NET_BackendOpenParams>() as u32,
            port,
            reserved: 0,
            options: options.as_ptr(),
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut err = [0 as c_char; 256];
        // SAFETY: all pointers are valid for the call; the backend writes at most err.len() bytes.
        let rc =
            unsafe { (self.functions.open)(&params, &mut handle, err.as_mut_ptr(), err.len()) };
        if rc != abi::NET_BACKEND_OK || handle.is_null() {
            err[err.len() - 1] = 0;
            // SAFETY: err is NUL-terminated (forced above).
            let reason = unsafe { CStr::from_ptr(err.as_ptr()) }
                .to_string_lossy()
                .trim()
                .to_string();
            let reason = if rc == abi::NET_BACKEND_OK {
                "its open said OK but gave no socket (a bug in the backend)".to_string()
            } else if reason.is_empty() {
                describe_backend_code(rc).to_string()
            } else {
                reason
            };
            return Err(NetError::new(
                ErrorCode::BackendLoad,
                with_name_prefix(&self.name, &reason),
            ));
        }
        Ok(BackendSocket {
            backend: Arc::clone(self),
            handle,
        })
    }

    /// Parse a node from text.
    pub fn parse_node(&self, text: &str, default_port: u16) -> NetResult<NET_Node> {
        let c_text = CString::new(text)
            .map_err(|_| NetError::new(ErrorCode::Parse, "node text contains a NUL byte"))?;
        let mut node = NET_Node::default();
        // SAFETY: c_text is NUL-terminated, node is a valid out pointer.
        let rc = unsafe { (self.functions.node_parse)(c_text.as_ptr(), default_port, &mut node) };
        if rc != abi::NET_BACKEND_OK {
            let mut message = format!(
                "'{}' is not an address for the {} backend",
                text.escape_debug(),
                self.name
            );
            if let Some(why) = self.parse_error_text() {
                message.push_str(": ");
                message.push_str(&why);
            }
            return Err(NetError::new(ErrorCode::Parse, message));
        }
        Ok(node)
    }

    /// The backend's explanation of the `node_parse` that just failed on this thread, if its
    /// vtable has `node_parse_error` and it has one to give.
    fn parse_error_text(&self) -> Option<String> {
        let explain = self.functions.node_parse_error?;
        let mut buf = [0 as c_char; 160];
        // SAFETY: a valid buffer of buf.len() bytes; the backend writes at most that many.
        let rc = unsafe { explain(buf.as_mut_ptr(), buf.len()) };
        if rc <= 0 {
            return None;
        }
        // The backend's NUL terminator is trusted only within the buffer.
        buf[buf.len() - 1] = 0;
        // SAFETY: the buffer is NUL-terminated (just ensured).
        let line = one_line(&unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy());
        (!line.is_empty()).then_some(line)
    }

    /// Print a node as text, as one line (see [`one_line`]): what the game gets from
    /// `NETs_PrintNode` and what `status` and `players` show.
    pub fn print_node(&self, node: &NET_Node) -> NetResult<String> {
        let mut buf = [0 as c_char; 128];
        // SAFETY: valid pointers; the backend writes at most buf.len() bytes.
        let rc = unsafe { (self.functions.node_print)(node, buf.as_mut_ptr(), buf.len()) };
        if rc < 0 {
            return Err(NetError::new(
                ErrorCode::Parse,
                format!("{} cannot print this node", self.name),
            ));
        }
        buf[buf.len() - 1] = 0;
        // SAFETY: buf is NUL-terminated.
        Ok(one_line(
            &unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy(),
        ))
    }

    /// Whether two nodes are on the same host: their printed forms agree up to the last `:`,
    /// and the text after it (the port, the IPX socket) may differ. `1.2.3.4:6526` and
    /// `1.2.3.4:40000` are; `[::1]:6526` and `[::1]:7000` are; IPX `00000001:020000000001:869c`
    /// and `00000001:020000000001:4000` (same network and node, another socket) are. A node
    /// whose printed form has no `:` is on a host of its own (a plugin backend that prints
    /// nodes otherwise: its players are never followed to a new node). The backend ABI has no
    /// call for this; the core still reads nodes only as the backend prints them.
    pub fn same_host(&self, a: &NET_Node, b: &NET_Node) -> bool {
        if a == b {
            return true;
        }
        let (Ok(a), Ok(b)) = (self.print_node(a), self.print_node(b)) else {
            return false;
        };
        match (a.rsplit_once(':'), b.rsplit_once(':')) {
            (Some((host_a, _)), Some((host_b, _))) => !host_a.is_empty() && host_a == host_b,
            _ => false,
        }
    }

    /// Compare two nodes by the backend's total order.
    pub fn compare_nodes(&self, a: &NET_Node, b: &NET_Node) -> Ordering {
        // SAFETY: both pointers are valid for the call.
        let rc = unsafe { (self.functions.node_compare)(a, b) };
        rc.cmp(&0)
    }
}

/// A text a backend wrote, as one line: every control character (a line break, a terminal
/// escape) becomes a space, and surrounding spaces are removed. Backend texts reach `status`,
/// error messages and the game only through this.
pub fn one_line(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.trim().to_string()
}

/// `name: reason`, unless the backend already started its message with its name.
fn with_name_prefix(name: &str, reason: &str) -> String {
    if reason.starts_with(&format!("{name}:")) {
        reason.to_string()
    } else {
        format!("{name}: {reason}")
    }
}

/// Text for a backend result code when the backend gave no message.
pub fn describe_backend_code(rc: i32) -> &'static str {
    match rc {
        abi::NET_BACKEND_WOULD_BLOCK => "would block",
        abi::NET_BACKEND_ERR_INVALID => "invalid argument",
        abi::NET_BACKEND_ERR_TOO_LARGE => "datagram too large",
        abi::NET_BACKEND_ERR_IO => "I/O error",
        abi::NET_BACKEND_ERR_UNREACHABLE => "destination unreachable",
        abi::NET_BACKEND_ERR_PERMISSION => "permission denied",
        abi::NET_BACKEND_ERR_UNSUPPORTED => "not supported",
        _ => "unknown error",
    }
}

/// What a send did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    Sent,
    WouldBlock,
}

/// An open socket of a backend; closed when dropped.
pub struct BackendSocket {
    backend: Arc<Backend>,
    handle: *mut c_void,
}

// SAFETY: the core never calls one backend from two threads at once (the Subsystem that owns a
// socket is used behind a lock); backends are documented to accept calls from changing threads.
unsafe impl Send for BackendSocket {}

impl BackendSocket {
    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }

    pub fn send(&mut self, to: &NET_Node, data: &[u8]) -> NetResult<SendOutcome> {
        if data.len() > self.backend.max_payload {
            return Err(NetError::new(
                ErrorCode::TooLarge,
                format!(
                    "datagram of {} bytes exceeds the {} backend's maximum payload of {} bytes",
                    data.len(),
                    self.backend.name,
                    self.backend.max_payload
                ),
            ));
        }
        // SAFETY: handle is live (we own it); pointers are valid for the call.
        let rc =
            unsafe { (self.backend.functions.send)(self.handle, to, data.as_ptr(), data.len()) };
        match rc {
            abi::NET_BACKEND_OK => Ok(SendOutcome::Sent),
            abi::NET_BACKEND_WOULD_BLOCK => Ok(SendOutcome::WouldBlock),
            _ => Err(self.error_for(rc, "send")),
        }
    }

    /// Receive one datagram into `buf` if one is waiting.
    pub fn receive(&mut self, buf: &mut [u8]) -> NetResult<Option<(NET_Node, usize)>> {
        let mut from = NET_Node::default();
        // SAFETY: handle is live; buf is valid for buf.len() bytes.
        let rc = unsafe {
            (self.backend.functions.receive)(self.handle, &mut from, buf.as_mut_ptr(), buf.len())
        };
        match rc {
            0 => Ok(None),
            n if n > 0 => {
                let n = n as usize;
                if n > buf.len() {
                    return Err(NetError::new(
                        ErrorCode::Io,
                        format!(
                            "{} returned {n} bytes into a {}-byte buffer",
                            self.backend.name,
                            buf.len()
                        ),
                    ));
                }
                Ok(Some((from, n)))
            }
            abi::NET_BACKEND_WOULD_BLOCK => Ok(None),
            _ => Err(self.error_for(rc, "receive")),
        }
    }

    /// Wait up to `timeout_ms` for a datagram; true if one can be received.
    pub fn wait(&mut self, timeout_ms: u32) -> NetResult<bool> {
        // SAFETY: handle is live.
        let rc = unsafe { (self.backend.functions.wait)(self.handle, timeout_ms) };
        if rc < 0 {
            return Err(self.error_for(rc, "wait"));
        }
        Ok(rc > 0)
    }

    pub fn broadcast_node(&mut self, port: u16) -> NetResult<NET_Node> {
        let mut node = NET_Node::default();
        // SAFETY: handle is live; node is a valid out pointer.
        let rc = unsafe { (self.backend.functions.broadcast_node)(self.handle, port, &mut node) };
        if rc != abi::NET_BACKEND_OK {
            return Err(self.error_for(rc, "broadcast"));
        }
        Ok(node)
    }

    /// The node by which `towards` (or the primary network) sees this socket.
    pub fn local_node(&mut self, towards: Option<&NET_Node>) -> NetResult<NET_Node> {
        let mut node = NET_Node::default();
        let towards_ptr = towards.map_or(std::ptr::null(), |n| n as *const NET_Node);
        // SAFETY: handle is live; pointers valid or NULL as the ABI allows.
        let rc =
            unsafe { (self.backend.functions.local_node)(self.handle, towards_ptr, &mut node) };
        if rc != abi::NET_BACKEND_OK {
            return Err(self.error_for(rc, "local node"));
        }
        Ok(node)
    }

    /// The backend's description of this socket's last error.
    pub fn last_error(&self) -> String {
        self.read_line(self.backend.functions.last_error).1
    }

    /// What the socket is bound to, as the backend says it (an interface, an address), for
    /// `status`; `None` when the backend's table has no `describe_socket` or it says nothing.
    pub fn description(&self) -> Option<String> {
        let describe = self.backend.functions.describe_socket?;
        let (rc, line) = self.read_line(describe);
        (rc > 0 && !line.is_empty()).then_some(line)
    }

    /// Call one of the backend's line writers on this socket: its result and the line.
    fn read_line(&self, write: LineFn) -> (i32, String) {
        let mut buf = [0 as c_char; 256];
        // SAFETY: handle is live; the backend writes at most buf.len() bytes.
        let rc = unsafe { write(self.handle, buf.as_mut_ptr(), buf.len()) };
        buf[buf.len() - 1] = 0;
        // SAFETY: buf is NUL-terminated.
        let line = one_line(&unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy());
        (rc, line)
    }

    /// The port (or IPX socket number) the socket is bound to (what port 0 became), or, as
    /// `Err`, what the backend returned when that is no port (negative, 0, above 65535).
    pub fn bound_port(&self) -> Result<u16, i32> {
        // SAFETY: handle is live.
        let rc = unsafe { (self.backend.functions.bound_port)(self.handle) };
        u16::try_from(rc).ok().filter(|&port| port != 0).ok_or(rc)
    }

    fn error_for(&self, rc: i32, what: &str) -> NetError {
        let detail = self.last_error();
        let detail = if detail.is_empty() {
            describe_backend_code(rc).to_string()
        } else {
            detail
        };
        let prefix = format!("{}: ", self.backend.name);
        let detail = detail.strip_prefix(&prefix).unwrap_or(&detail).to_string();
        let code = match rc {
            abi::NET_BACKEND_ERR_TOO_LARGE => ErrorCode::TooLarge,
            abi::NET_BACKEND_ERR_INVALID => ErrorCode::InvalidArgument,
            abi::NET_BACKEND_ERR_UNSUPPORTED | abi::NET_BACKEND_ERR_PERMISSION => {
                ErrorCode::Unsupported
            }
            _ => ErrorCode::Io,
        };
        NetError::new(code, format!("{} {what}: {detail}", self.backend.name))
    }
}

impl Drop for BackendSocket {
    fn drop(&mut self) {
        // SAFETY: handle came from open and is closed exactly once; the Arc keeps the library.
        unsafe { (self.backend.functions.close)(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use crate::packet_api::loader::{load, BackendSpec};

    /// Whether the nodes printed `a` and `b` are on one host, for the built-in backend `name`.
    fn same_host(name: &str, a: &str, b: &str) -> bool {
        let backend = load(&BackendSpec::Name(name.into())).expect("the backend is built");
        let a = backend.parse_node(a, 1).unwrap();
        let b = backend.parse_node(b, 1).unwrap();
        backend.same_host(&a, &b)
    }

    #[test]
    fn same_host_is_the_same_ip_address_or_ipx_network_and_node() {
        assert!(same_host("udp", "10.0.0.1:6526", "10.0.0.1:40000"));
        assert!(same_host("udp", "10.0.0.1:6526", "10.0.0.1:6526"));
        assert!(!same_host("udp", "10.0.0.1:6526", "10.0.0.2:6526"));
        assert!(same_host("udp", "[::1]:6526", "[::1]:7000"));
        assert!(!same_host("udp", "[::1]:6526", "[::2]:6526"));
        assert!(!same_host("udp", "[::1]:6526", "127.0.0.1:6526"));
        assert!(same_host(
            "ipx",
            "00000001:020000000001:869c",
            "00000001:020000000001:4000"
        ));
        assert!(!same_host(
            "ipx",
            "00000001:020000000001:869c",
            "00000001:020000000002:869c"
        ));
        assert!(!same_host(
            "ipx",
            "00000001:020000000001:869c",
            "00000002:020000000001:869c"
        ));
    }
}
