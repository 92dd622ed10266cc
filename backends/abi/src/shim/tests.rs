//! The generic shims of `parsec_backend_abi::shim`, driven through the vtable exactly as the core
//! drives a backend, with a small backend defined here whose sockets keep what they send in a
//! queue for themselves. It misbehaves on request (panics, an over-long receive, a failure with
//! a success code) so the shims' defences can be seen working; the real backends (UDP, IPX,
//! trace) run the same conformance checks in their own tests.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::{offset_of, size_of};
use std::ptr::{null, null_mut};

use crate::conformance::{self, c_text};
use crate::shim::{self, Backend, BackendError, BackendSocket, OpenError};
use crate::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_ABI_VERSION,
    NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_ERR_TOO_LARGE,
    NET_BACKEND_ERR_UNSUPPORTED, NET_BACKEND_OK,
};

/// The backend under test: nodes are `loop:<port>`, sockets loop datagrams back to themselves.
/// `LoopBackend<true>` is the same backend under another name, to show that handles are told
/// apart by backend.
pub struct LoopBackend<const OTHER: bool>;
type Loop = LoopBackend<false>;
type OtherLoop = LoopBackend<true>;

#[derive(Default)]
pub struct LoopSocket {
    port: u16,
    options: String,
    queue: VecDeque<(NET_Node, Vec<u8>)>,
    /// The datagram `receive` returned last (the slice it returned borrows it).
    delivered: Vec<u8>,
    last_error: String,
    /// Option `receive_lies=1`: `receive` returns more bytes than the caller's buffer holds.
    receive_lies: bool,
    /// Option `send_panics=1`.
    send_panics: bool,
}

fn loop_node(port: u16) -> NET_Node {
    let mut node = NET_Node::default();
    node.bytes[..2].copy_from_slice(&port.to_be_bytes());
    node
}

impl<const OTHER: bool> Backend for LoopBackend<OTHER> {
    const NAME: &'static CStr = if OTHER { c"otherloop" } else { c"loop" };
    const MAX_PAYLOAD: usize = 16;
    const CAPABILITIES: u32 = 0;
    type Socket = LoopSocket;

    fn open(port: u16, options: &str) -> Result<LoopSocket, OpenError> {
        if options.contains("open_panics=1") {
            panic!("open panics on request");
        }
        if options.contains("fail_with_ok=1") {
            return Err(OpenError::new(NET_BACKEND_OK, "loop: failed, but said OK"));
        }
        if options.contains("fail=1") {
            return Err(OpenError::new(
                NET_BACKEND_ERR_UNSUPPORTED,
                "loop: cannot open: asked to fail",
            ));
        }
        Ok(LoopSocket {
            port: if port == 0 { 4000 } else { port },
            options: options.to_string(),
            receive_lies: options.contains("receive_lies=1"),
            send_panics: options.contains("send_panics=1"),
            ..LoopSocket::default()
        })
    }

    fn node_compare(a: &NET_Node, b: &NET_Node) -> Ordering {
        a.bytes.cmp(&b.bytes)
    }

    fn node_print(node: &NET_Node) -> Option<String> {
        if node.bytes[2..].iter().any(|&b| b != 0) {
            return None;
        }
        Some(format!(
            "loop:{}",
            u16::from_be_bytes([node.bytes[0], node.bytes[1]])
        ))
    }

    fn node_parse(text: &str, default_port: u16) -> Result<NET_Node, BackendError> {
        match text.strip_prefix("loop:") {
            Some("") => Ok(loop_node(default_port)),
            Some("panic") => panic!("node_parse panics on request"),
            Some(port) => port
                .parse()
                .map(loop_node)
                .map_err(|_| BackendError::invalid(format!("port '{port}' is not a number"))),
            None => Err(BackendError::invalid("does not start with 'loop:'")),
        }
    }
}

impl BackendSocket for LoopSocket {
    fn check_send_len(&mut self, len: usize) -> Result<(), i32> {
        if len == 0 || len > Loop::MAX_PAYLOAD {
            self.last_error = format!("loop: cannot send {len} bytes");
            return Err(if len == 0 {
                NET_BACKEND_ERR_INVALID
            } else {
                NET_BACKEND_ERR_TOO_LARGE
            });
        }
        Ok(())
    }

    fn send(&mut self, _to: &NET_Node, data: &[u8]) -> i32 {
        if self.send_panics {
            panic!("send panics on request");
        }
        self.queue.push_back((loop_node(self.port), data.to_vec()));
        NET_BACKEND_OK
    }

    fn receive(&mut self, cap: usize) -> Result<Option<(NET_Node, &[u8])>, i32> {
        let Some((from, data)) = self.queue.pop_front() else {
            return Ok(None);
        };
        if data.len() > cap && !self.receive_lies {
            self.last_error = "loop: dropped a datagram too long for the buffer".to_string();
            return Err(NET_BACKEND_ERR_TOO_LARGE);
        }
        self.delivered = data;
        Ok(Some((from, &self.delivered)))
    }

    fn wait(&mut self, _timeout_ms: u32) -> i32 {
        i32::from(!self.queue.is_empty())
    }

    fn local_node(&mut self, _towards: Option<&NET_Node>) -> Result<NET_Node, i32> {
        Ok(loop_node(self.port))
    }

    fn last_error(&self) -> &str {
        &self.last_error
    }

    fn bound_port(&self) -> u16 {
        self.port
    }

    fn describe(&self) -> String {
        format!("loop port {}", self.port)
    }
}

crate::export_backend!(Loop);

static OTHER_VTABLE: NET_BackendVTable = shim::vtable::<OtherLoop>();

/// Open through `table`: the handle, or the code and the message.
fn open(table: &NET_BackendVTable, port: u16, options: &str) -> Result<*mut c_void, (i32, String)> {
    let options = CString::new(options).unwrap();
    let params = NET_BackendOpenParams {
        size: size_of::<NET_BackendOpenParams>() as u32,
        port,
        reserved: 0,
        options: options.as_ptr(),
    };
    open_with(table, &params)
}

fn open_with(
    table: &NET_BackendVTable,
    params: &NET_BackendOpenParams,
) -> Result<*mut c_void, (i32, String)> {
    let mut handle = std::ptr::dangling_mut::<c_void>(); // must be overwritten either way
    let mut err = [0 as c_char; 128];
    // SAFETY: valid pointers for the call.
    let rc = unsafe { (table.open.unwrap())(params, &mut handle, err.as_mut_ptr(), err.len()) };
    if rc == NET_BACKEND_OK {
        assert!(!handle.is_null());
        assert_eq!(c_text(&err), "");
        Ok(handle)
    } else {
        assert!(handle.is_null(), "a failed open leaves the handle NULL");
        Err((rc, c_text(&err)))
    }
}

fn close(table: &NET_BackendVTable, handle: *mut c_void) {
    // SAFETY: an open handle of this table, closed once.
    unsafe { (table.close.unwrap())(handle) };
}

fn last_error(handle: *mut c_void) -> String {
    let mut buf = [0 as c_char; 128];
    // SAFETY: an open handle and a valid buffer.
    let n = unsafe { (vtable().last_error.unwrap())(handle, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(n as usize, c_text(&buf).len());
    c_text(&buf)
}

#[test]
fn the_vtable_carries_the_backends_constants_and_every_function() {
    let t = vtable();
    assert_eq!(t.abi_version, NET_BACKEND_ABI_VERSION);
    assert_eq!(t.size as usize, size_of::<NET_BackendVTable>());
    // SAFETY: a static NUL-terminated name.
    assert_eq!(unsafe { CStr::from_ptr(t.name) }, c"loop");
    assert_eq!((t.max_payload, t.capabilities), (16, 0));
    assert!(t.open.is_some() && t.close.is_some() && t.send.is_some() && t.receive.is_some());
    assert!(t.wait.is_some() && t.node_compare.is_some() && t.node_print.is_some());
    assert!(t.node_parse.is_some() && t.broadcast_node.is_some() && t.local_node.is_some());
    assert!(t.last_error.is_some() && t.bound_port.is_some());
    assert!(t.node_parse_error.is_some() && t.describe_socket.is_some());
    // SAFETY: the entry accepts any version.
    unsafe {
        assert!(parsec_net_backend_entry(0).is_null());
        assert_eq!(
            parsec_net_backend_entry(NET_BACKEND_ABI_VERSION),
            t as *const _
        );
        assert_eq!(
            parsec_net_backend_entry(NET_BACKEND_ABI_VERSION + 1),
            t as *const _
        );
    }
}

#[test]
fn the_conformance_checks_pass() {
    conformance::functions_without_a_socket_reject_null(vtable(), loop_node(9), "loop:9");
    conformance::open_rejects_params_that_do_not_reach_the_port(vtable());
    let handle = open(vtable(), 0, "").unwrap();
    // SAFETY: an open handle of this backend.
    unsafe { conformance::functions_with_a_socket_reject_null(vtable(), handle, loop_node(9)) };
    close(vtable(), handle);
}

#[test]
fn a_datagram_goes_through_send_and_receive_unchanged() {
    let handle = open(vtable(), 7, "").unwrap();
    let t = vtable();
    let to = loop_node(7);
    let mut from = NET_Node::default();
    let mut buf = [0u8; 32];
    // SAFETY: an open handle and valid buffers.
    unsafe {
        assert_eq!(
            (t.send.unwrap())(handle, &to, b"hello".as_ptr(), 5),
            NET_BACKEND_OK
        );
        assert_eq!((t.wait.unwrap())(handle, 0), 1);
        let n = (t.receive.unwrap())(handle, &mut from, buf.as_mut_ptr(), buf.len());
        assert_eq!(n, 5);
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(from, to);
        assert_eq!((t.bound_port.unwrap())(handle), 7);
        // Too long for MAX_PAYLOAD: refused before a byte is read (the pointer is only 1 byte).
        let one = [1u8];
        assert_eq!(
            (t.send.unwrap())(handle, &to, one.as_ptr(), 17),
            NET_BACKEND_ERR_TOO_LARGE
        );
    }
    assert_eq!(last_error(handle), "loop: cannot send 17 bytes");
    // SAFETY: the handle is open.
    let socket = unsafe { socket_from_handle(handle) }.expect("open handle");
    assert!(socket.queue.is_empty());
    close(vtable(), handle);
}

#[test]
fn a_receive_longer_than_the_buffer_is_refused_and_nothing_is_written_past_it() {
    let handle = open(vtable(), 0, "receive_lies=1").unwrap();
    let t = vtable();
    let mut from = NET_Node::default();
    let mut buf = [0xAAu8; 16];
    // SAFETY: an open handle; the buffer holds 16 bytes, of which the callee is offered 4.
    unsafe {
        let data = [7u8; 10];
        assert_eq!(
            (t.send.unwrap())(handle, &from, data.as_ptr(), 10),
            NET_BACKEND_OK
        );
        let rc = (t.receive.unwrap())(handle, &mut from, buf.as_mut_ptr(), 4);
        assert_eq!(rc, NET_BACKEND_ERR_TOO_LARGE);
    }
    assert_eq!(buf, [0xAA; 16], "not one byte written");
    assert_eq!(from, NET_Node::default(), "no sender written");
    close(vtable(), handle);
}

#[test]
fn a_panic_in_the_backend_becomes_an_io_error_and_never_unwinds() {
    let t = vtable();
    assert_eq!(
        open(t, 0, "open_panics=1"),
        Err((NET_BACKEND_ERR_IO, String::new()))
    );
    let handle = open(t, 0, "send_panics=1").unwrap();
    let to = loop_node(1);
    // SAFETY: an open handle and valid buffers.
    unsafe {
        assert_eq!(
            (t.send.unwrap())(handle, &to, b"x".as_ptr(), 1),
            NET_BACKEND_ERR_IO
        );
        // The socket is still there and answers.
        assert_eq!((t.wait.unwrap())(handle, 0), 0);
        let text = CString::new("loop:panic").unwrap();
        let mut node = NET_Node::default();
        assert_eq!(
            (t.node_parse.unwrap())(text.as_ptr(), 0, &mut node),
            NET_BACKEND_ERR_IO
        );
    }
    close(t, handle);
}

#[test]
fn open_failures_report_their_code_and_message_and_never_look_like_success() {
    let t = vtable();
    assert_eq!(
        open(t, 0, "fail=1"),
        Err((
            NET_BACKEND_ERR_UNSUPPORTED,
            "loop: cannot open: asked to fail".to_string()
        ))
    );
    assert_eq!(
        open(t, 0, "fail_with_ok=1"),
        Err((NET_BACKEND_ERR_IO, "loop: failed, but said OK".to_string()))
    );
    // The message is cut to the buffer, NUL-terminated; no buffer at all is fine too.
    let options = CString::new("fail=1").unwrap();
    let params = NET_BackendOpenParams {
        size: size_of::<NET_BackendOpenParams>() as u32,
        port: 0,
        reserved: 0,
        options: options.as_ptr(),
    };
    let mut handle: *mut c_void = null_mut();
    let mut small = [0x55 as c_char; 6];
    // SAFETY: valid pointers; a 6-byte error buffer, then none.
    unsafe {
        let open = t.open.unwrap();
        let rc = open(&params, &mut handle, small.as_mut_ptr(), small.len());
        assert_eq!(rc, NET_BACKEND_ERR_UNSUPPORTED);
        assert_eq!(c_text(&small), "loop:");
        let rc = open(&params, &mut handle, null_mut(), 0);
        assert_eq!(rc, NET_BACKEND_ERR_UNSUPPORTED);
    }
}

#[test]
fn open_reads_options_only_within_the_declared_size() {
    let options = CString::new("wanted=1").unwrap();
    let full = NET_BackendOpenParams {
        size: size_of::<NET_BackendOpenParams>() as u32,
        port: 5,
        reserved: 0,
        options: options.as_ptr(),
    };
    let options_of = |params: &NET_BackendOpenParams| {
        let handle = open_with(vtable(), params).unwrap();
        // SAFETY: the handle is open.
        let socket = unsafe { socket_from_handle(handle) }.unwrap();
        let seen = (socket.port, socket.options.clone());
        close(vtable(), handle);
        seen
    };
    assert_eq!(options_of(&full), (5, "wanted=1".to_string()));
    // A caller that knows only `size` and `port`: the options pointer is not read.
    let short = NET_BackendOpenParams {
        size: offset_of!(NET_BackendOpenParams, options) as u32,
        ..full
    };
    assert_eq!(options_of(&short), (5, String::new()));
    let no_options = NET_BackendOpenParams {
        options: null(),
        ..full
    };
    assert_eq!(options_of(&no_options), (5, String::new()));
    let bad = [0xffu8 as c_char, 0];
    let not_utf8 = NET_BackendOpenParams {
        options: bad.as_ptr(),
        ..full
    };
    assert_eq!(
        open_with(vtable(), &not_utf8),
        Err((
            NET_BACKEND_ERR_INVALID,
            "loop: the options are not valid UTF-8".to_string()
        ))
    );
}

#[test]
fn a_handle_of_another_backend_is_refused() {
    let ours = open(vtable(), 0, "").unwrap();
    let theirs = open(&OTHER_VTABLE, 0, "").unwrap();
    // SAFETY: both handles are open; each is passed to the other backend, which must refuse it.
    unsafe {
        assert!(socket_from_handle(theirs).is_none());
        assert_eq!((vtable().wait.unwrap())(theirs, 0), NET_BACKEND_ERR_INVALID);
        assert_eq!(
            (OTHER_VTABLE.bound_port.unwrap())(ours),
            NET_BACKEND_ERR_INVALID
        );
        (OTHER_VTABLE.close.unwrap())(ours); // not its handle: left open
        assert!(socket_from_handle(ours).is_some());
    }
    close(vtable(), ours);
    close(&OTHER_VTABLE, theirs);
}

#[test]
fn describe_socket_writes_the_sockets_line_within_the_buffer_and_checks_its_arguments() {
    let t = vtable();
    let describe = t.describe_socket.unwrap();
    let handle = open(t, 9, "").unwrap();
    let mut buf = [0x55 as c_char; 32];
    // SAFETY: an open handle; buffers of the sizes given, or NULL where the test says so.
    unsafe {
        assert_eq!(describe(handle, buf.as_mut_ptr(), buf.len()), 11);
        assert_eq!(c_text(&buf), "loop port 9");
        // Cut to the buffer, still terminated, nothing written past it.
        let mut small = [0x55 as c_char; 6];
        let n = describe(handle, small.as_mut_ptr(), 5);
        assert_eq!((n, c_text(&small[..5]).as_str()), (4, "loop"));
        assert_eq!(small[5], 0x55);
        assert_eq!(
            describe(handle, std::ptr::null_mut(), 8),
            NET_BACKEND_ERR_INVALID
        );
        assert_eq!(
            describe(handle, buf.as_mut_ptr(), 0),
            NET_BACKEND_ERR_INVALID
        );
        assert_eq!(
            describe(std::ptr::null_mut(), buf.as_mut_ptr(), 8),
            NET_BACKEND_ERR_INVALID
        );
    }
    // A handle of another backend is refused, not read.
    let theirs = open(&OTHER_VTABLE, 0, "").unwrap();
    // SAFETY: an open handle of the other backend and a valid buffer.
    let rc = unsafe { describe(theirs, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(rc, NET_BACKEND_ERR_INVALID);
    close(&OTHER_VTABLE, theirs);
    close(t, handle);
}

/// `node_parse_error` as the core calls it: right after `node_parse`, on the same thread.
fn parse_and_explain(t: &NET_BackendVTable, text: &str) -> (i32, i32, String) {
    let text = CString::new(text).unwrap();
    let mut node = NET_Node::default();
    let mut buf = [0 as c_char; 64];
    // SAFETY: valid pointers throughout.
    unsafe {
        let rc = (t.node_parse.unwrap())(text.as_ptr(), 7, &mut node);
        let len = (t.node_parse_error.unwrap())(buf.as_mut_ptr(), buf.len());
        (rc, len, c_text(&buf))
    }
}

#[test]
fn a_refused_node_text_is_explained_and_a_parsed_one_clears_the_explanation() {
    let t = vtable();
    let (rc, len, why) = parse_and_explain(t, "loop:x");
    assert_eq!(rc, NET_BACKEND_ERR_INVALID);
    assert_eq!(why, "port 'x' is not a number");
    assert_eq!(len as usize, why.len());
    assert_eq!(
        parse_and_explain(t, "elsewhere").2,
        "does not start with 'loop:'"
    );
    assert_eq!(
        parse_and_explain(t, "loop:9"),
        (NET_BACKEND_OK, 0, String::new())
    );
    let (rc, _, why) = parse_and_explain(t, "loop:panic");
    assert_eq!(rc, NET_BACKEND_ERR_IO);
    assert_eq!(why, "the backend failed while parsing the text");
    // Another thread has its own explanation: none yet.
    let other = std::thread::spawn(|| {
        let mut buf = [0 as c_char; 8];
        // SAFETY: a valid buffer.
        let len = unsafe { (vtable().node_parse_error.unwrap())(buf.as_mut_ptr(), buf.len()) };
        (len, c_text(&buf))
    });
    assert_eq!(other.join().unwrap(), (0, String::new()));
    // SAFETY: NULL and zero-length buffers are refused, not written.
    unsafe {
        assert_eq!(
            (t.node_parse_error.unwrap())(null_mut(), 8),
            NET_BACKEND_ERR_INVALID
        );
        let mut one = [0 as c_char; 1];
        assert_eq!(
            (t.node_parse_error.unwrap())(one.as_mut_ptr(), 0),
            NET_BACKEND_ERR_INVALID
        );
    }
}

#[test]
fn node_functions_and_the_default_broadcast() {
    let t = vtable();
    let mut buf = [0 as c_char; 16];
    let mut node = NET_Node::default();
    let text = CString::new("loop:").unwrap();
    // SAFETY: valid pointers throughout.
    unsafe {
        assert_eq!(
            (t.node_parse.unwrap())(text.as_ptr(), 42, &mut node),
            NET_BACKEND_OK
        );
        assert_eq!(node, loop_node(42));
        assert_eq!(
            (t.node_print.unwrap())(&node, buf.as_mut_ptr(), buf.len()),
            7
        );
        assert_eq!(c_text(&buf), "loop:42");
        // Too small for the text: an error, still NUL-terminated.
        assert_eq!(
            (t.node_print.unwrap())(&node, buf.as_mut_ptr(), 4),
            NET_BACKEND_ERR_INVALID
        );
        assert_eq!(c_text(&buf), "loo");
        let other = loop_node(43);
        assert_eq!((t.node_compare.unwrap())(&node, &other), -1);
        assert_eq!((t.node_compare.unwrap())(&other, &node), 1);
        assert_eq!((t.node_compare.unwrap())(&node, &node), 0);
        let handle = open(t, 0, "").unwrap();
        let rc = (t.broadcast_node.unwrap())(handle, 5, &mut node);
        assert_eq!(rc, NET_BACKEND_ERR_UNSUPPORTED);
        assert_eq!(node, loop_node(42), "nothing written");
        close(t, handle);
    }
}
