//! parsec-net IPX packet backend: IPX packets in Ethernet II frames (EtherType 0x8137) on a raw
//! packet socket bound to one interface, loaded by the core with dlopen and used only through
//! the vtable that [`parsec_net_backend_entry`] returns. Linux only (AF_PACKET); elsewhere it
//! builds and `open` fails with NET_BACKEND_ERR_UNSUPPORTED (PORTING.md says what a port needs).
//!
//! - Node: network (4) + the interface's MAC (6) + socket (2), text `NNNNNNNN:AABBCCDDEEFF:SSSS`
//!   (see `src/node.rs`); broadcast: node FF:FF:FF:FF:FF:FF on this socket's network.
//! - The open `port` is the IPX socket number; 0 means 0x869C (this project's "Parsec" socket),
//!   or the first free dynamic socket (0x4000-0x7FFF) when another program holds 0x869C.
//!   Like a UDP port, a socket number on an interface and network is open in one program of a
//!   host at a time: another program's `open` of it fails saying it is in use (`src/claim.rs`).
//! - Options (`key=value` lines, console variables `net.ipx.<key>`): `interface`, `network`
//!   (documented in `src/options.rs`).
//! - At most 546 bytes of payload; capabilities: broadcast, no client-server.
//! - Needs CAP_NET_RAW: without it `open` fails with NET_BACKEND_ERR_PERMISSION and says so.
//! - Receive filtering: only well-formed IPX frames for this network, socket and node (or
//!   broadcast) are delivered; everything else is counted in [`Stats`] (read with
//!   [`IpxSocket::stats`] through [`socket_from_handle`]) and dropped. Frames of other
//!   EtherTypes never reach the socket: the kernel filters them.
//! - A socket never receives its own frames, broadcasts included. Two programs on the same host
//!   and interface do not hear each other either: Linux does not loop raw frames back to other
//!   packet sockets. Use two hosts, or two network namespaces joined by a veth pair (the tests).
//!
//! This file only connects the backend to the ABI: it implements the [`Backend`] trait of
//! [`parsec_backend_abi::shim`] with `node` and [`IpxSocket`] (which implements
//! `BackendSocket` in `socket.rs`), and
//! [`parsec_backend_abi::export_backend!`] makes the static vtable, the entry symbol and the
//! `extern "C"` shims (pointer checks, panic boundary) from them. It must never contain
//! networking logic.

mod claim;
mod filter;
mod frame;
mod iface;
mod node;
mod options;
mod oserr;
mod raw;
mod socket;
mod stats;

use std::cmp::Ordering;
use std::ffi::CStr;

use parsec_backend_abi::shim::{Backend, BackendError};
use parsec_backend_abi::{NET_Node, NET_BACKEND_CAP_BROADCAST};

pub use frame::MAX_PAYLOAD;
pub use node::{IpxAddr, BROADCAST_MAC, DEFAULT_SOCKET};
pub use oserr::{OpenError, NEED_CAP_NET_RAW, NOT_SUPPORTED};
pub use socket::IpxSocket;
pub use stats::Stats;

/// The IPX backend as the ABI shim sees it.
pub struct Ipx;

impl Backend for Ipx {
    const NAME: &'static CStr = c"ipx";
    const MAX_PAYLOAD: usize = MAX_PAYLOAD;
    const CAPABILITIES: u32 = NET_BACKEND_CAP_BROADCAST;
    type Socket = IpxSocket;

    fn open(port: u16, options: &str) -> Result<IpxSocket, OpenError> {
        IpxSocket::open(port, options)
    }

    fn node_compare(a: &NET_Node, b: &NET_Node) -> Ordering {
        node::compare(a, b)
    }

    fn node_print(node: &NET_Node) -> Option<String> {
        node::print(node)
    }

    fn node_parse(text: &str, default_socket: u16) -> Result<NET_Node, BackendError> {
        node::parse(text, default_socket).map_err(BackendError::invalid)
    }
}

parsec_backend_abi::export_backend!(Ipx, unless feature = "without-entry-symbol");
