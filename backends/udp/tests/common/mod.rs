//! Test harness: calls the backend only through its vtable function pointers, exactly as the
//! core does, on loopback addresses only.
#![allow(dead_code)]

use std::ffi::{c_char, c_void, CString};
use std::time::{Duration, Instant};

use parsec_backend_abi::{NET_BackendOpenParams, NET_BackendVTable, NET_Node, NET_BACKEND_OK};
use parsec_backend_udp::{vtable, Stats};

/// Options every IPv4-only test socket uses: loopback only.
pub const V4_ONLY: &str = "bind=127.0.0.1\nipv6=0";
/// Options of a dual-stack test socket: both halves on loopback, IPv6 required.
pub const DUAL: &str = "bind=127.0.0.1\nbind6=::1\nipv6=1";

pub fn vt() -> &'static NET_BackendVTable {
    vtable()
}

pub use parsec_backend_abi::conformance::c_text;

/// An open backend socket, closed on drop.
pub struct Sock {
    pub handle: *mut c_void,
}

impl Sock {
    pub fn open(port: u16, options: &str) -> Result<Sock, (i32, String)> {
        let options = CString::new(options).expect("test options contain no NUL");
        let params = NET_BackendOpenParams {
            size: std::mem::size_of::<NET_BackendOpenParams>() as u32,
            port,
            reserved: 0,
            options: options.as_ptr(),
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: all pointers are valid for the duration of the call.
        let rc = unsafe { (vt().open.unwrap())(&params, &mut handle, err.as_mut_ptr(), err.len()) };
        if rc == NET_BACKEND_OK {
            assert!(!handle.is_null());
            Ok(Sock { handle })
        } else {
            assert!(handle.is_null());
            Err((rc, c_text(&err)))
        }
    }

    pub fn v4() -> Sock {
        Sock::open(0, V4_ONLY).expect("IPv4 loopback socket")
    }

    /// A dual-stack loopback socket, or None (after printing SKIPPED) without IPv6 loopback.
    pub fn dual() -> Option<Sock> {
        match Sock::open(0, DUAL) {
            Ok(s) => Some(s),
            Err(e) => {
                println!("SKIPPED: no IPv6 loopback ({e:?})");
                None
            }
        }
    }

    pub fn send(&self, to: &NET_Node, data: &[u8]) -> i32 {
        // SAFETY: valid handle, node and buffer.
        unsafe { (vt().send.unwrap())(self.handle, to, data.as_ptr(), data.len()) }
    }

    /// Send, retrying briefly while the backend says WOULD_BLOCK.
    pub fn send_ok(&self, to: &NET_Node, data: &[u8]) {
        for _ in 0..1000 {
            match self.send(to, data) {
                NET_BACKEND_OK => return,
                parsec_backend_abi::NET_BACKEND_WOULD_BLOCK => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                rc => panic!("send failed: {rc} {}", self.last_error()),
            }
        }
        panic!("send kept blocking");
    }

    /// One non-blocking receive with a buffer of `cap` bytes.
    pub fn receive(&self, cap: usize) -> Result<Option<(NET_Node, Vec<u8>)>, i32> {
        let mut buf = vec![0u8; cap];
        let mut from = NET_Node::default();
        // SAFETY: valid handle, node and buffer of `cap` bytes.
        let rc = unsafe { (vt().receive.unwrap())(self.handle, &mut from, buf.as_mut_ptr(), cap) };
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
            assert!(self.wait(left.as_millis() as u32) >= 0);
        }
    }

    pub fn wait(&self, timeout_ms: u32) -> i32 {
        // SAFETY: valid handle.
        unsafe { (vt().wait.unwrap())(self.handle, timeout_ms) }
    }

    pub fn local_node(&self, towards: Option<&NET_Node>) -> Result<NET_Node, i32> {
        let mut out = NET_Node::default();
        let towards = towards.map_or(std::ptr::null(), |n| n as *const NET_Node);
        // SAFETY: valid handle; `towards` NULL or valid; `out` valid.
        let rc = unsafe { (vt().local_node.unwrap())(self.handle, towards, &mut out) };
        if rc == NET_BACKEND_OK {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    pub fn broadcast_node(&self, port: u16) -> Result<NET_Node, i32> {
        let mut out = NET_Node::default();
        // SAFETY: valid handle and output.
        let rc = unsafe { (vt().broadcast_node.unwrap())(self.handle, port, &mut out) };
        if rc == NET_BACKEND_OK {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    pub fn last_error(&self) -> String {
        let mut buf = [0 as c_char; 512];
        // SAFETY: valid handle and buffer.
        let n = unsafe { (vt().last_error.unwrap())(self.handle, buf.as_mut_ptr(), buf.len()) };
        assert!(n >= 0);
        let text = c_text(&buf);
        assert_eq!(text.len(), n as usize);
        text
    }

    /// Counters (Rust-only API, not part of the ABI).
    pub fn stats(&self) -> Stats {
        // SAFETY: the handle came from `open` and is still open.
        unsafe { parsec_backend_udp::socket_from_handle(self.handle) }
            .expect("live")
            .stats()
    }

    pub fn uses_recvmmsg(&self) -> bool {
        // SAFETY: as above.
        unsafe { parsec_backend_udp::socket_from_handle(self.handle) }
            .expect("live")
            .uses_recvmmsg()
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        // SAFETY: the handle came from `open` and is closed exactly once.
        unsafe { (vt().close.unwrap())(self.handle) };
    }
}

pub fn parse(text: &str, default_port: u16) -> Result<NET_Node, i32> {
    let text = CString::new(text).expect("no NUL in test text");
    let mut out = NET_Node::default();
    // SAFETY: valid string and output.
    let rc = unsafe { (vt().node_parse.unwrap())(text.as_ptr(), default_port, &mut out) };
    if rc == NET_BACKEND_OK {
        Ok(out)
    } else {
        Err(rc)
    }
}

pub fn node(text: &str) -> NET_Node {
    parse(text, 0).unwrap_or_else(|rc| panic!("cannot parse {text}: {rc}"))
}

pub fn print(node: &NET_Node) -> Result<String, i32> {
    let mut buf = [0 as c_char; 128];
    // SAFETY: valid node and buffer.
    let rc = unsafe { (vt().node_print.unwrap())(node, buf.as_mut_ptr(), buf.len()) };
    if rc >= 0 {
        let text = c_text(&buf);
        assert_eq!(text.len(), rc as usize);
        Ok(text)
    } else {
        Err(rc)
    }
}

pub fn compare(a: &NET_Node, b: &NET_Node) -> i32 {
    // SAFETY: valid nodes.
    unsafe { (vt().node_compare.unwrap())(a, b) }
}
