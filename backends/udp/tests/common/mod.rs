//! Test harness: calls the backend only through its vtable function pointers, exactly as the
//! core does, on loopback addresses only.
#![allow(dead_code)]

use parsec_backend_abi::vtable_socket::{self, VtableSocket};
use parsec_backend_abi::{NET_BackendVTable, NET_Node};
use parsec_backend_udp::{vtable, Stats};

/// Options every IPv4-only test socket uses: loopback only.
pub const V4_ONLY: &str = "bind=127.0.0.1\nipv6=0";
/// Options of a dual-stack test socket: both halves on loopback, IPv6 required.
pub const DUAL: &str = "bind=127.0.0.1\nbind6=::1\nipv6=1";

pub fn vt() -> &'static NET_BackendVTable {
    vtable()
}

// Not every test file uses every helper.
#[allow(unused_imports)]
pub use parsec_backend_abi::conformance::c_text;

parsec_backend_abi::vtable_socket_wrapper!(
    /// An open UDP backend socket driven through the vtable, closed on drop.
    Sock
);

impl Sock {
    pub fn open(port: u16, options: &str) -> Result<Sock, (i32, String)> {
        VtableSocket::open(vt(), port, options).map(Sock)
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

pub fn parse(text: &str, default_port: u16) -> Result<NET_Node, i32> {
    vtable_socket::parse(vt(), text, default_port)
}

pub fn node(text: &str) -> NET_Node {
    parse(text, 0).unwrap_or_else(|rc| panic!("cannot parse {text}: {rc}"))
}

pub fn print(node: &NET_Node) -> Result<String, i32> {
    vtable_socket::print(vt(), node)
}

pub fn compare(a: &NET_Node, b: &NET_Node) -> i32 {
    vtable_socket::compare(vt(), a, b)
}
