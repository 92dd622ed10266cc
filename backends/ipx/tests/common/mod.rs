//! Test harness: calls the backend only through its vtable function pointers, exactly as the
//! core does. `netns` builds the two-namespace veth lab the real-traffic tests run in, `wire`
//! builds and injects frames independently of the backend's own encoder.
#![allow(dead_code)]

#[cfg(target_os = "linux")]
pub mod netns;
#[cfg(target_os = "linux")]
pub mod wire;

use parsec_backend_abi::vtable_socket::{self, VtableSocket};
use parsec_backend_abi::{NET_BackendVTable, NET_Node};
use parsec_backend_ipx::{vtable, IpxSocket, Stats};

pub fn vt() -> &'static NET_BackendVTable {
    vtable()
}

// Not every test file uses every helper.
#[allow(unused_imports)]
pub use parsec_backend_abi::conformance::c_text;

/// Open through the vtable: the socket, or the error code and message.
pub fn open_raw(port: u16, options: &str) -> Result<VtableSocket, (i32, String)> {
    VtableSocket::open(vt(), port, options)
}

parsec_backend_abi::vtable_socket_wrapper!(
    /// An open IPX backend socket driven through the vtable, closed on drop.
    Sock
);

impl Sock {
    pub fn open(port: u16, options: &str) -> Result<Sock, (i32, String)> {
        open_raw(port, options).map(Sock)
    }

    fn socket(&self) -> &IpxSocket {
        // SAFETY: the handle came from `open` and is still open.
        unsafe { parsec_backend_ipx::socket_from_handle(self.handle) }.expect("live")
    }

    /// Counters (Rust-only API, not part of the ABI).
    pub fn stats(&self) -> Stats {
        self.socket().stats()
    }

    pub fn interface_name(&self) -> String {
        self.socket().interface_name().to_string()
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

/// `NNNNNNNN:AABBCCDDEEFF:SSSS` written out by the test itself (not by the backend).
pub fn node_text(network: u32, mac: [u8; 6], socket: u16) -> String {
    let mac: String = mac.iter().map(|b| format!("{b:02X}")).collect();
    format!("{network:08X}:{mac}:{socket:04X}")
}

impl Sock {
    /// What `describe_socket` says (the `binding:` line of `status`), through the vtable.
    pub fn describe(&self) -> String {
        let describe = vt()
            .describe_socket
            .expect("the IPX backend has describe_socket");
        let mut out = [0 as std::ffi::c_char; 512];
        // SAFETY: the handle is open and `out` is writable for its length.
        let n = unsafe { describe(self.handle, out.as_mut_ptr(), out.len()) };
        assert!(n >= 0, "describe_socket returned {n}");
        c_text(&out)
    }
}

/// The set-up of the tests that inject frames by hand: our socket `socket` on `network`, opened
/// in namespace B on its veth; a raw injector on the veth of namespace A; our address there
/// (MAC B) and a peer's (MAC A, socket 0x7777) on the same network.
#[cfg(target_os = "linux")]
pub fn injection_lab(
    lab: &netns::Lab,
    network: u32,
    socket: u16,
) -> (Sock, wire::Injector, wire::Addr, wire::Addr) {
    let options = format!("interface={}\nnetwork={network:08X}", netns::VETH_B);
    let b = lab.b.run(|| Sock::open(socket, &options)).expect("open b");
    let injector = lab.a.run(|| wire::Injector::open(netns::VETH_A));
    let me = wire::Addr {
        network,
        node: netns::MAC_B,
        socket,
    };
    let peer = wire::Addr {
        network,
        node: netns::MAC_A,
        socket: 0x7777,
    };
    (b, injector, me, peer)
}
