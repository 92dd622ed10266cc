//! parsec-net UDP packet backend: IPv4 and IPv6 datagrams through socket2, loaded by the core
//! with dlopen and used only through the vtable that [`parsec_net_backend_entry`] returns.
//!
//! This file only connects the backend to the ABI: it implements the Rust traits of
//! [`parsec_backend_abi::shim`] by delegating to [`UdpSocket`] and `node`, and
//! [`parsec_backend_abi::export_backend!`] makes the static vtable, the entry symbol and the
//! `extern "C"` shims (pointer checks, panic boundary) from them. It must never contain
//! networking logic.
//!
//! Options (`key=value` lines, console variables `net.udp.<key>`): `bind`, `bind6`,
//! `broadcast`, `ipv6`, `rcvbuf`, `sndbuf`, `recvmmsg` (documented in `src/options.rs`).

#[cfg(not(unix))]
compile_error!("parsec-backend-udp supports Unix-like systems only (it uses poll and getifaddrs)");

mod batch;
mod bind;
mod local;
mod node;
mod options;
mod oserr;
mod socket;
mod stats;

use std::cmp::Ordering;
use std::ffi::CStr;

use parsec_backend_abi::shim::{Backend, BackendError, BackendSocket};
use parsec_backend_abi::{NET_Node, NET_BACKEND_CAP_BROADCAST, NET_BACKEND_CAP_CLIENT_SERVER};

pub use bind::OpenError;
pub use socket::UdpSocket;
pub use stats::Stats;

/// Largest datagram payload this backend carries (fits a 1500-byte Ethernet MTU with room for
/// IPv6 and tunnel headers).
pub const MAX_PAYLOAD: usize = 1400;

/// The UDP backend as the ABI shim sees it.
pub struct Udp;

impl Backend for Udp {
    const NAME: &'static CStr = c"udp";
    const MAX_PAYLOAD: usize = MAX_PAYLOAD;
    const CAPABILITIES: u32 = NET_BACKEND_CAP_BROADCAST | NET_BACKEND_CAP_CLIENT_SERVER;
    type Socket = UdpSocket;

    fn open(port: u16, options: &str) -> Result<UdpSocket, OpenError> {
        UdpSocket::open(port, options)
    }

    fn node_compare(a: &NET_Node, b: &NET_Node) -> Ordering {
        node::compare(a, b)
    }

    fn node_print(node: &NET_Node) -> Option<String> {
        node::print(node)
    }

    fn node_parse(text: &str, default_port: u16) -> Result<NET_Node, BackendError> {
        node::parse(text, default_port).map_err(BackendError::invalid)
    }
}

impl BackendSocket for UdpSocket {
    fn check_send_len(&mut self, len: usize) -> Result<(), i32> {
        UdpSocket::check_send_len(self, len)
    }

    fn send(&mut self, to: &NET_Node, data: &[u8]) -> i32 {
        UdpSocket::send(self, to, data)
    }

    fn receive(&mut self, cap: usize) -> Result<Option<(NET_Node, &[u8])>, i32> {
        UdpSocket::receive(self, cap)
    }

    fn wait(&mut self, timeout_ms: u32) -> i32 {
        UdpSocket::wait(self, timeout_ms)
    }

    fn broadcast_node(&mut self, port: u16) -> Result<NET_Node, i32> {
        Ok(UdpSocket::broadcast_node(self, port))
    }

    fn local_node(&mut self, towards: Option<&NET_Node>) -> Result<NET_Node, i32> {
        UdpSocket::local_node(self, towards)
    }

    fn last_error(&self) -> &str {
        UdpSocket::last_error(self)
    }

    /// The port the IPv4 socket is bound to (the IPv6 socket shares it).
    fn bound_port(&self) -> u16 {
        self.ipv4_port()
    }

    fn describe(&self) -> String {
        UdpSocket::describe(self)
    }
}

parsec_backend_abi::export_backend!(Udp, unless feature = "without-entry-symbol");
