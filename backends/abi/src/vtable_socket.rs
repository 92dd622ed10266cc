//! A backend socket driven only through a vtable's function pointers, exactly as the core
//! drives it, for the backends' own tests (feature `test-support`): each backend's test harness
//! wraps it with what only that backend has (its counters, its options) instead of carrying its
//! own copy of every call. A call the backend answers wrongly (a message without a NUL, a length
//! that does not match the text) panics.

use std::ffi::{c_char, c_void, CString};
use std::time::{Duration, Instant};

use crate::conformance::c_text;
use crate::{
    NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_OK, NET_BACKEND_WOULD_BLOCK,
};

/// An open backend socket of `vt`, closed on drop.
#[derive(Debug)]
pub struct VtableSocket {
    pub vt: &'static NET_BackendVTable,
    pub handle: *mut c_void,
}

// SAFETY: a backend needs calls to one socket serialized, not made from one thread; a test uses
// a socket from one thread at a time (at most moving it out of the thread that opened it).
unsafe impl Send for VtableSocket {}

impl VtableSocket {
    /// Open with `options` (one `key=value` per line): the socket, or the error code and the
    /// message, which must be one non-empty line (and empty on success).
    pub fn open(
        vt: &'static NET_BackendVTable,
        port: u16,
        options: &str,
    ) -> Result<VtableSocket, (i32, String)> {
        let options = CString::new(options).expect("test options contain no NUL");
        let params = NET_BackendOpenParams {
            size: std::mem::size_of::<NET_BackendOpenParams>() as u32,
            port,
            reserved: 0,
            options: options.as_ptr(),
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut err = [0 as c_char; 1024];
        // SAFETY: all pointers are valid for the duration of the call.
        let rc = unsafe { (vt.open.unwrap())(&params, &mut handle, err.as_mut_ptr(), err.len()) };
        let message = c_text(&err);
        if rc == NET_BACKEND_OK {
            assert!(!handle.is_null());
            assert_eq!(message, "", "a successful open leaves no message");
            Ok(VtableSocket { vt, handle })
        } else {
            assert!(handle.is_null());
            assert!(
                !message.is_empty() && !message.contains('\n'),
                "an open error is one line: {message:?}"
            );
            Err((rc, message))
        }
    }

    pub fn send(&self, to: &NET_Node, data: &[u8]) -> i32 {
        // SAFETY: valid handle, node and buffer.
        unsafe { (self.vt.send.unwrap())(self.handle, to, data.as_ptr(), data.len()) }
    }

    /// Send, retrying briefly while the backend says WOULD_BLOCK.
    pub fn send_ok(&self, to: &NET_Node, data: &[u8]) {
        for _ in 0..1000 {
            match self.send(to, data) {
                NET_BACKEND_OK => return,
                NET_BACKEND_WOULD_BLOCK => std::thread::sleep(Duration::from_millis(1)),
                rc => panic!("send failed: {rc} {}", self.last_error()),
            }
        }
        panic!("send kept blocking");
    }

    /// One non-blocking receive with a buffer of `cap` bytes (0 allowed: the backend must
    /// refuse it).
    pub fn receive(&self, cap: usize) -> Result<Option<(NET_Node, Vec<u8>)>, i32> {
        let mut buf = vec![0u8; cap.max(1)];
        let mut from = NET_Node::default();
        // SAFETY: valid handle, node and a buffer of at least `cap` bytes.
        let rc =
            unsafe { (self.vt.receive.unwrap())(self.handle, &mut from, buf.as_mut_ptr(), cap) };
        match rc {
            0 => Ok(None),
            n if n > 0 => {
                buf.truncate(n as usize);
                Ok(Some((from, buf)))
            }
            err => Err(err),
        }
    }

    /// Wait and receive until a datagram arrives or `timeout` passes.
    pub fn receive_within(&self, timeout: Duration) -> Option<(NET_Node, Vec<u8>)> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(got) = self.receive(2048).expect("receive") {
                return Some(got);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            assert!(self.wait(left.as_millis() as u32 + 1) >= 0);
        }
    }

    pub fn wait(&self, timeout_ms: u32) -> i32 {
        // SAFETY: valid handle.
        unsafe { (self.vt.wait.unwrap())(self.handle, timeout_ms) }
    }

    /// This socket's node as seen from `towards` (None: the primary network).
    pub fn local_node_towards(&self, towards: Option<&NET_Node>) -> Result<NET_Node, i32> {
        let mut out = NET_Node::default();
        let towards = towards.map_or(std::ptr::null(), |n| n as *const NET_Node);
        // SAFETY: valid handle; `towards` NULL or valid; `out` valid.
        let rc = unsafe { (self.vt.local_node.unwrap())(self.handle, towards, &mut out) };
        if rc == NET_BACKEND_OK {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    /// This socket's node on the primary network (the backend must know it).
    pub fn local_node(&self) -> NET_Node {
        self.local_node_towards(None)
            .unwrap_or_else(|rc| panic!("local_node: {rc} {}", self.last_error()))
    }

    pub fn broadcast_node(&self, port: u16) -> Result<NET_Node, i32> {
        let mut out = NET_Node::default();
        // SAFETY: valid handle and output.
        let rc = unsafe { (self.vt.broadcast_node.unwrap())(self.handle, port, &mut out) };
        if rc == NET_BACKEND_OK {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    pub fn bound_port(&self) -> i32 {
        // SAFETY: valid handle.
        unsafe { (self.vt.bound_port.unwrap())(self.handle) }
    }

    pub fn last_error(&self) -> String {
        let mut buf = [0 as c_char; 512];
        // SAFETY: valid handle and buffer.
        let n = unsafe { (self.vt.last_error.unwrap())(self.handle, buf.as_mut_ptr(), buf.len()) };
        assert!(n >= 0);
        let text = c_text(&buf);
        assert_eq!(text.len(), n as usize);
        text
    }
}

impl Drop for VtableSocket {
    fn drop(&mut self) {
        // SAFETY: the handle came from `open` and is closed exactly once.
        unsafe { (self.vt.close.unwrap())(self.handle) };
    }
}

/// `vt`'s node for `text` (`default_port` where the text has none), or the error code.
pub fn parse(vt: &NET_BackendVTable, text: &str, default_port: u16) -> Result<NET_Node, i32> {
    let text = CString::new(text).expect("no NUL in test text");
    let mut out = NET_Node::default();
    // SAFETY: valid string and output.
    let rc = unsafe { (vt.node_parse.unwrap())(text.as_ptr(), default_port, &mut out) };
    if rc == NET_BACKEND_OK {
        Ok(out)
    } else {
        Err(rc)
    }
}

/// `vt`'s text for `node`, or the error code.
pub fn print(vt: &NET_BackendVTable, node: &NET_Node) -> Result<String, i32> {
    let mut buf = [0 as c_char; 128];
    // SAFETY: valid node and buffer.
    let rc = unsafe { (vt.node_print.unwrap())(node, buf.as_mut_ptr(), buf.len()) };
    if rc >= 0 {
        let text = c_text(&buf);
        assert_eq!(text.len(), rc as usize);
        Ok(text)
    } else {
        Err(rc)
    }
}

pub fn compare(vt: &NET_BackendVTable, a: &NET_Node, b: &NET_Node) -> i32 {
    // SAFETY: valid nodes.
    unsafe { (vt.node_compare.unwrap())(a, b) }
}

/// Declare a harness's own socket type, `pub struct NAME(pub VtableSocket)`, that derefs to the
/// [`VtableSocket`] it wraps, so a backend's tests add their own methods (counters, options,
/// constructors) to every call the socket has.
#[macro_export]
macro_rules! vtable_socket_wrapper {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name(pub $crate::vtable_socket::VtableSocket);

        impl ::std::ops::Deref for $name {
            type Target = $crate::vtable_socket::VtableSocket;
            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }
    };
}
