//! One open IPX backend socket: its raw packet socket, the interface and IPX address it uses,
//! the counters and the last error, and the operations the vtable exposes on a socket (send,
//! receive, wait, broadcast_node, local_node: the `BackendSocket` trait, whose C side
//! `parsec_backend_abi::shim` provides). Opening is [`IpxSocket::open`]; closing is dropping it.
//!
//! This module must never panic on input from the network or the caller, never block except in
//! `wait`, and never deliver a frame that is not a well-formed IPX packet for this socket.

use std::time::Duration;

use parsec_backend_abi::shim::BackendSocket;
use parsec_backend_abi::{
    NET_Node, NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_ERR_TOO_LARGE,
    NET_BACKEND_ERR_UNREACHABLE, NET_BACKEND_OK, NET_BACKEND_WOULD_BLOCK,
};

use crate::claim::{self, Claim};
use crate::filter::{self, Rejection};
use crate::frame::{self, ETH_HEADER_LEN, IPX_HEADER_LEN, MAX_FRAME_LEN, MAX_PAYLOAD};
use crate::iface::{self, Interface};
use crate::node::{self, IpxAddr, BROADCAST_MAC, DEFAULT_SOCKET};
use crate::options;
use crate::oserr::{self, OpenError};
use crate::raw::RawSocket;
use crate::stats::Stats;

/// Receive buffer: a full standard Ethernet frame (with a VLAN tag) fits; longer ones are
/// counted as oversize.
const RECEIVE_BUFFER: usize = 2048;
/// Frames one `receive` call reads at most before answering "nothing yet", so that a flood of
/// foreign frames cannot keep the caller inside the backend.
const MAX_FRAMES_PER_RECEIVE: usize = 256;
/// IPX's dynamic socket numbers: where port 0 goes when the default socket is in use.
const DYNAMIC_SOCKETS: std::ops::RangeInclusive<u16> = 0x4000..=0x7FFF;
/// Where the payload starts in a received frame.
const PAYLOAD_AT: usize = ETH_HEADER_LEN + IPX_HEADER_LEN;

/// The state behind one backend socket handle.
pub struct IpxSocket {
    raw: RawSocket,
    interface: Interface,
    local: IpxAddr,
    last_error: String,
    stats: Stats,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
    /// This address claimed on the host, so no other program opens it (`claim.rs`).
    _claim: Claim,
}

fn mac_text(mac: &[u8]) -> String {
    let parts: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

impl IpxSocket {
    /// Open a socket for IPX socket number `port` (0: [`DEFAULT_SOCKET`], or the first free
    /// dynamic socket when another program holds that) with the given option lines. Errors carry an ABI result code and a one-line message.
    pub fn open(port: u16, options_text: &str) -> Result<IpxSocket, OpenError> {
        let options = options::parse(options_text)
            .map_err(|message| OpenError::new(NET_BACKEND_ERR_INVALID, message))?;
        // The socket first: without CAP_NET_RAW that is the error the user needs to see.
        let mut raw = RawSocket::create()?;
        let interfaces = iface::list().map_err(|e| {
            OpenError::new(
                NET_BACKEND_ERR_IO,
                format!(
                    "ipx: cannot list network interfaces: {}",
                    oserr::describe(&e)
                ),
            )
        })?;
        let interface = iface::choose(&interfaces, options.interface.as_deref())?;
        // Port 0: the default socket, or when another program holds it, the first free one of
        // IPX's dynamic range (0x4000-0x7FFF), as a real IPX stack hands out for socket 0.
        let candidates: Vec<u16> = if port == 0 {
            std::iter::once(DEFAULT_SOCKET)
                .chain(DYNAMIC_SOCKETS)
                .collect()
        } else {
            vec![port]
        };
        let mut claimed = None;
        for &candidate in &candidates {
            let name = claim::name(interface.index, options.network, candidate);
            if let Ok(claim) = claim::claim(name) {
                claimed = Some((candidate, claim));
                break;
            }
        }
        let socket = candidates[0];
        let (socket, claim) = claimed.ok_or_else(|| {
            OpenError::new(
                NET_BACKEND_ERR_IO,
                format!(
                    "ipx: socket {socket:04X} on {} (network {:08X}) is already in use by \
                         another program on this host; choose another socket number (net.port)",
                    interface.name,
                    u32::from_be_bytes(options.network)
                ),
            )
        })?;
        raw.bind(interface.index).map_err(|e| {
            let code = if oserr::is_interface_gone(&e) {
                NET_BACKEND_ERR_UNREACHABLE
            } else {
                NET_BACKEND_ERR_IO
            };
            let message = format!(
                "ipx: cannot bind to interface {}: {}",
                interface.name,
                oserr::describe(&e)
            );
            OpenError::new(code, message)
        })?;
        let local = IpxAddr {
            network: options.network,
            node: interface.mac,
            socket,
        };
        Ok(IpxSocket {
            raw,
            interface,
            local,
            last_error: String::new(),
            stats: Stats::default(),
            send_buf: Vec::with_capacity(MAX_FRAME_LEN),
            recv_buf: vec![0; RECEIVE_BUFFER],
            _claim: claim,
        })
    }

    /// Traffic counters since open.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Name of the interface the socket is bound to.
    pub fn interface_name(&self) -> &str {
        &self.interface.name
    }

    /// This socket's IPX address: network, the interface's MAC, socket number.
    pub fn local_addr(&self) -> IpxAddr {
        self.local
    }

    /// Add what the kernel dropped since the last look (its receive queue was full). Asked
    /// when the queue has been read empty, so once per drain, not once per frame.
    fn count_kernel_drops(&mut self) {
        if let Ok(n) = self.raw.take_kernel_drops() {
            self.stats.dropped_by_kernel = self.stats.dropped_by_kernel.wrapping_add(n);
        }
    }

    fn fail(&mut self, code: i32, message: String) -> i32 {
        self.last_error = message;
        code
    }

    /// Read frames until one is for this socket: `Ok(Some((sender, payload length)))`, or
    /// `Ok(None)` when the socket is empty or [`MAX_FRAMES_PER_RECEIVE`] were dropped.
    fn next_datagram(&mut self) -> Result<Option<(IpxAddr, usize)>, i32> {
        for _ in 0..MAX_FRAMES_PER_RECEIVE {
            let got = match self.raw.receive(&mut self.recv_buf) {
                Ok(Some(got)) => got,
                Ok(None) => {
                    self.count_kernel_drops();
                    return Ok(None);
                }
                Err(e) => {
                    let code = if oserr::is_interface_gone(&e) {
                        NET_BACKEND_ERR_UNREACHABLE
                    } else {
                        NET_BACKEND_ERR_IO
                    };
                    let msg = format!(
                        "ipx: receive on {} failed: {}",
                        self.interface.name,
                        oserr::describe(&e)
                    );
                    return Err(self.fail(code, msg));
                }
            };
            self.stats.frames_read = self.stats.frames_read.wrapping_add(1);
            if got.outgoing {
                self.stats.count_rejected(Rejection::Own);
                continue;
            }
            let Some(bytes) = self.recv_buf.get(..got.len) else {
                self.stats.dropped_oversize = self.stats.dropped_oversize.wrapping_add(1);
                self.last_error = format!(
                    "ipx: dropped a {}-byte frame on {}: larger than {RECEIVE_BUFFER} bytes",
                    got.len, self.interface.name
                );
                continue;
            };
            let parsed = match frame::parse(bytes) {
                Ok(parsed) => parsed,
                Err(why) => {
                    self.stats.count_malformed(&why);
                    let from = bytes.get(6..12).map(mac_text).unwrap_or_default();
                    self.last_error = format!(
                        "ipx: dropped a malformed frame from {from} on {}: {}",
                        self.interface.name,
                        why.describe()
                    );
                    continue;
                }
            };
            match filter::check(&parsed, &self.local) {
                Ok(()) => return Ok(Some((parsed.src, parsed.payload.len()))),
                Err(why) => {
                    self.stats.count_rejected(why);
                    if why == Rejection::Oversize {
                        self.last_error = format!(
                            "ipx: dropped a {}-byte datagram from {}: the limit is {MAX_PAYLOAD}",
                            parsed.payload.len(),
                            node::display(&parsed.src)
                        );
                    }
                }
            }
        }
        Ok(None)
    }
}

/// The operations the vtable exposes on a socket; `parsec_backend_abi::shim` checks the C side.
impl BackendSocket for IpxSocket {
    /// Check a payload length before any byte of it is touched: 1..=MAX_PAYLOAD.
    fn check_send_len(&mut self, len: usize) -> Result<(), i32> {
        if len == 0 {
            let msg = "ipx: cannot send an empty datagram".to_string();
            return Err(self.fail(NET_BACKEND_ERR_INVALID, msg));
        }
        if len > MAX_PAYLOAD {
            let msg = format!("ipx: cannot send {len} bytes: the limit is {MAX_PAYLOAD}");
            return Err(self.fail(NET_BACKEND_ERR_TOO_LARGE, msg));
        }
        Ok(())
    }

    /// Send one datagram of 1..=MAX_PAYLOAD bytes to `to` (a node, or the broadcast node).
    fn send(&mut self, to: &NET_Node, data: &[u8]) -> i32 {
        if let Err(code) = self.check_send_len(data.len()) {
            return code;
        }
        let Some(dst) = node::decode(to) else {
            let msg = "ipx: cannot send: invalid node".to_string();
            return self.fail(NET_BACKEND_ERR_INVALID, msg);
        };
        if dst.socket == 0 {
            let msg = format!("ipx: cannot send to {}: socket 0000", node::display(&dst));
            return self.fail(NET_BACKEND_ERR_INVALID, msg);
        }
        if dst == self.local {
            let msg = format!(
                "ipx: cannot send to {}: it is this socket (raw frames are not looped back)",
                node::display(&dst)
            );
            return self.fail(NET_BACKEND_ERR_UNREACHABLE, msg);
        }
        if let Err(frame::BuildError::TooLarge { len }) =
            frame::build(&dst, &self.local, data, &mut self.send_buf)
        {
            let msg = format!("ipx: cannot send {len} bytes: the limit is {MAX_PAYLOAD}");
            return self.fail(NET_BACKEND_ERR_TOO_LARGE, msg);
        }
        match self.raw.send(&self.send_buf, dst.node) {
            Ok(()) => {
                self.stats.traffic.count_sent(data.len());
                NET_BACKEND_OK
            }
            Err(e) if oserr::is_would_block(&e) => {
                self.stats.would_block = self.stats.would_block.wrapping_add(1);
                NET_BACKEND_WOULD_BLOCK
            }
            Err(e) => {
                let msg = format!(
                    "ipx: cannot send to {} on {}: {}",
                    node::display(&dst),
                    self.interface.name,
                    oserr::describe(&e)
                );
                self.fail(oserr::send_error_code(&e), msg)
            }
        }
    }

    /// The next datagram for this socket and its sender, `None` if nothing is waiting. A
    /// datagram longer than `cap` is dropped, counted and reported as
    /// `Err(NET_BACKEND_ERR_TOO_LARGE)`, never truncated.
    fn receive(&mut self, cap: usize) -> Result<Option<(NET_Node, &[u8])>, i32> {
        let Some((src, len)) = self.next_datagram()? else {
            return Ok(None);
        };
        if len > cap {
            self.stats.dropped_caller_too_small =
                self.stats.dropped_caller_too_small.wrapping_add(1);
            let msg = format!(
                "ipx: dropped a {len}-byte datagram from {}: the receive buffer holds {cap} bytes",
                node::display(&src)
            );
            return Err(self.fail(NET_BACKEND_ERR_TOO_LARGE, msg));
        }
        self.stats.traffic.count_received(len);
        match self.recv_buf.get(PAYLOAD_AT..PAYLOAD_AT + len) {
            Some(payload) => Ok(Some((node::encode(&src), payload))),
            None => Ok(None), // unreachable: `frame::parse` checked the bounds
        }
    }

    /// Wait up to `timeout_ms` for a frame: 1 ready, 0 timed out, < 0 error. "Ready" may be a
    /// foreign frame that `receive` then drops (answering 0).
    fn wait(&mut self, timeout_ms: u32) -> i32 {
        match self
            .raw
            .wait_readable(Duration::from_millis(u64::from(timeout_ms)))
        {
            Ok(true) => 1,
            Ok(false) => 0,
            Err(e) => {
                let msg = format!(
                    "ipx: wait on {} failed: {}",
                    self.interface.name,
                    oserr::describe(&e)
                );
                self.fail(NET_BACKEND_ERR_IO, msg)
            }
        }
    }

    /// The broadcast node of this socket's network for socket `port` (0: this socket's own).
    fn broadcast_node(&mut self, port: u16) -> Result<NET_Node, i32> {
        Ok(node::encode(&IpxAddr {
            network: self.local.network,
            node: BROADCAST_MAC,
            socket: if port == 0 { self.local.socket } else { port },
        }))
    }

    /// This socket's node; IPX has one address per socket whatever `towards` is, but an invalid
    /// `towards` is still refused.
    fn local_node(&mut self, towards: Option<&NET_Node>) -> Result<NET_Node, i32> {
        if towards.is_some_and(|n| node::decode(n).is_none()) {
            let msg = "ipx: local_node: invalid node".to_string();
            return Err(self.fail(NET_BACKEND_ERR_INVALID, msg));
        }
        Ok(node::encode(&self.local))
    }

    /// The most recent error as one line, "" if none.
    fn last_error(&self) -> &str {
        &self.last_error
    }

    /// The IPX socket number (what port 0 became).
    fn bound_port(&self) -> u16 {
        self.local.socket
    }

    /// The interface the raw socket is bound to: "interface veth0, MAC 02:00:00:00:00:01".
    fn describe(&self) -> String {
        format!(
            "interface {}, MAC {}{}",
            self.interface.name,
            mac_text(&self.interface.mac),
            self.stats.drops_note()
        )
    }
}
