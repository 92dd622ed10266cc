//! One open UDP backend socket: its IPv4 and optional IPv6 OS sockets, their receive queues, the
//! counters and the last error, and the operations the vtable exposes on a socket (send, receive,
//! wait, broadcast_node, local_node). Opening is `UdpSocket::open`; closing is dropping it.
//!
//! This module must never panic on input from the network or the caller, never block except in
//! `wait`, and never deliver a datagram it cannot deliver whole.

use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use parsec_backend_abi::{
    NET_Node, NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_ERR_TOO_LARGE,
    NET_BACKEND_ERR_UNREACHABLE, NET_BACKEND_OK, NET_BACKEND_WOULD_BLOCK,
};
use socket2::{SockAddr, Socket};

use crate::batch::Batch;
use crate::bind::OpenError;
use crate::node::{self, display};
use crate::options::{self, Options};
use crate::stats::Stats;
use crate::{bind, local, oserr, MAX_PAYLOAD};

/// One OS socket of a backend socket.
struct Endpoint {
    socket: Socket,
    port: u16,
    batch: Batch,
}

impl Endpoint {
    fn new(socket: Socket, port: u16, use_recvmmsg: bool) -> Endpoint {
        Endpoint {
            socket,
            port,
            batch: Batch::new(use_recvmmsg),
        }
    }
}

/// The state behind one backend socket handle.
pub struct UdpSocket {
    v4: Endpoint,
    v6: Option<Endpoint>,
    options: Options,
    /// Which OS socket the next refill reads first, so IPv4 and IPv6 take turns.
    refill_v6_next: bool,
    /// The last refill drained the only OS socket: once its datagrams are taken, the next
    /// receive answers "nothing" without a system call (the caller's receive loop ends there;
    /// the call after that reads the socket again). Saves one `recvmmsg` per busy frame.
    skip_next_refill: bool,
    last_error: String,
    stats: Stats,
}

impl UdpSocket {
    /// Open a socket on `port` (0: ephemeral) with the given option lines. Errors carry an ABI
    /// result code and a one-line message.
    pub fn open(port: u16, options_text: &str) -> Result<UdpSocket, OpenError> {
        let options = options::parse(options_text).map_err(|message| OpenError {
            code: NET_BACKEND_ERR_INVALID,
            message,
        })?;
        let pair = bind::bind_pair(&options, port)?;
        let use_recvmmsg = options.recvmmsg;
        Ok(UdpSocket {
            v4: Endpoint::new(pair.v4, pair.v4_port, use_recvmmsg),
            v6: pair
                .v6
                .map(|(socket, port)| Endpoint::new(socket, port, use_recvmmsg)),
            options,
            refill_v6_next: false,
            skip_next_refill: false,
            last_error: pair.v6_note.unwrap_or_default(),
            stats: Stats::default(),
        })
    }

    /// Traffic counters since open.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The most recent error as one line, "" if none.
    pub fn last_error(&self) -> &str {
        &self.last_error
    }

    /// Port of the IPv4 socket.
    /// What the socket is bound to, for the console's `status`: "IPv4 0.0.0.0:6526, IPv6
    /// [::]:6526, broadcast 255.255.255.255".
    pub fn describe(&self) -> String {
        let mut line = format!(
            "IPv4 {}",
            SocketAddrV4::new(self.options.bind, self.v4.port)
        );
        if let Some(v6) = &self.v6 {
            line.push_str(&format!(", IPv6 [{}]:{}", self.options.bind6, v6.port));
        }
        line.push_str(&format!(", broadcast {}", self.options.broadcast));
        line
    }

    pub fn ipv4_port(&self) -> u16 {
        self.v4.port
    }

    /// Port of the IPv6 socket, if one is open.
    pub fn ipv6_port(&self) -> Option<u16> {
        self.v6.as_ref().map(|e| e.port)
    }

    /// The address the kernel has the IPv6 socket bound to (`getsockname`), if one is open.
    pub fn ipv6_bound_address(&self) -> Option<SocketAddr> {
        let v6 = self.v6.as_ref()?;
        v6.socket.local_addr().ok()?.as_socket()
    }

    /// Receives are still batched with `recvmmsg` (false when stepped down or disabled).
    pub fn uses_recvmmsg(&self) -> bool {
        self.v4.batch.uses_recvmmsg()
    }

    fn fail(&mut self, code: i32, message: String) -> i32 {
        self.last_error = message;
        code
    }

    fn has_queued(&self) -> bool {
        !self.v4.batch.is_empty() || self.v6.as_ref().is_some_and(|e| !e.batch.is_empty())
    }

    /// Check a payload length before any byte of it is touched: 1..=MAX_PAYLOAD.
    pub fn check_send_len(&mut self, len: usize) -> Result<(), i32> {
        if len == 0 {
            let msg = "udp: cannot send an empty datagram".to_string();
            return Err(self.fail(NET_BACKEND_ERR_INVALID, msg));
        }
        if len > MAX_PAYLOAD {
            let msg = format!("udp: cannot send {len} bytes: the limit is {MAX_PAYLOAD}");
            return Err(self.fail(NET_BACKEND_ERR_TOO_LARGE, msg));
        }
        Ok(())
    }

    /// Send one datagram of 1..=MAX_PAYLOAD bytes to `to`.
    pub fn send(&mut self, to: &NET_Node, data: &[u8]) -> i32 {
        if let Err(code) = self.check_send_len(data.len()) {
            return code;
        }
        let Some(addr) = node::decode(to) else {
            return self.fail(
                NET_BACKEND_ERR_INVALID,
                "udp: cannot send: invalid node".into(),
            );
        };
        if addr.port() == 0 {
            let msg = format!("udp: cannot send to {}: port 0", display(addr));
            return self.fail(NET_BACKEND_ERR_INVALID, msg);
        }
        let socket = match (addr, &self.v6) {
            (SocketAddr::V4(_), _) => &self.v4.socket,
            (SocketAddr::V6(_), Some(v6)) => &v6.socket,
            (SocketAddr::V6(_), None) => {
                let msg = format!(
                    "udp: cannot send to {}: no IPv6 socket is open (net.udp.ipv6=0 or no IPv6 here)",
                    display(addr)
                );
                return self.fail(NET_BACKEND_ERR_UNREACHABLE, msg);
            }
        };
        let target = SockAddr::from(addr);
        let mut retried_icmp = false;
        loop {
            match socket.send_to(data, &target) {
                Ok(_) => {
                    self.stats.traffic.count_sent(data.len());
                    return NET_BACKEND_OK;
                }
                Err(e) if oserr::is_interrupted(&e) => {}
                Err(e) if oserr::is_would_block(&e) => {
                    self.stats.would_block += 1;
                    return NET_BACKEND_WOULD_BLOCK;
                }
                // A late ICMP error belongs to an earlier datagram: retry once, then treat the
                // datagram as sent (UDP gives no delivery guarantee anyway).
                Err(e) if oserr::is_stale_icmp(&e) => {
                    self.stats.icmp_errors_ignored += 1;
                    if retried_icmp {
                        return NET_BACKEND_OK;
                    }
                    retried_icmp = true;
                }
                Err(e) => {
                    let code = if oserr::is_unreachable(&e) {
                        NET_BACKEND_ERR_UNREACHABLE
                    } else {
                        NET_BACKEND_ERR_IO
                    };
                    let msg = format!(
                        "udp: cannot send to {}: {}",
                        display(addr),
                        oserr::describe(&e)
                    );
                    return self.fail(code, msg);
                }
            }
        }
    }

    /// Read from the OS sockets into the empty queues: at most one system call per OS socket,
    /// starting with the one whose turn it is.
    fn refill(&mut self) -> Result<(), i32> {
        // Each OS socket once (an IPv4-only socket is not read twice).
        let sockets = 1 + usize::from(self.v6.is_some());
        for _ in 0..sockets {
            let use_v6 = self.refill_v6_next && self.v6.is_some();
            self.refill_v6_next = !use_v6 && self.v6.is_some();
            let endpoint = match (use_v6, self.v6.as_mut()) {
                (true, Some(v6)) => v6,
                _ => &mut self.v4,
            };
            match endpoint
                .batch
                .refill(endpoint.socket.as_raw_fd(), &mut self.stats)
            {
                Ok(0) => {}
                Ok(_) => return Ok(()),
                Err(e) => {
                    let family = if use_v6 { "IPv6" } else { "IPv4" };
                    let msg = format!(
                        "udp: receive on {family} port {} failed: {}",
                        endpoint.port,
                        oserr::describe(&e)
                    );
                    return Err(self.fail(NET_BACKEND_ERR_IO, msg));
                }
            }
        }
        Ok(())
    }

    /// The next datagram and its sender, `None` if nothing is waiting. A datagram longer than
    /// `cap` is dropped, counted and reported as `Err(NET_BACKEND_ERR_TOO_LARGE)`: keeping it
    /// queued would block every later datagram behind one the caller can never take, and
    /// truncating it would deliver corrupt data.
    pub fn receive(&mut self, cap: usize) -> Result<Option<(NET_Node, &[u8])>, i32> {
        if !self.has_queued() {
            if std::mem::take(&mut self.skip_next_refill) {
                return Ok(None);
            }
            self.refill()?;
            self.skip_next_refill =
                self.v6.is_none() && self.has_queued() && self.v4.batch.emptied_socket();
        }
        let batch = if !self.v4.batch.is_empty() {
            &mut self.v4.batch
        } else if let Some(v6) = self.v6.as_mut().filter(|e| !e.batch.is_empty()) {
            &mut v6.batch
        } else {
            return Ok(None);
        };
        let Some((from, data)) = batch.pop() else {
            return Ok(None);
        };
        if data.len() > cap {
            self.stats.dropped_caller_too_small += 1;
            self.last_error = format!(
                "udp: dropped a {}-byte datagram from {}: the receive buffer holds {cap} bytes",
                data.len(),
                node::print(&from).unwrap_or_default()
            );
            return Err(NET_BACKEND_ERR_TOO_LARGE);
        }
        self.stats.traffic.count_received(data.len());
        Ok(Some((from, data)))
    }

    /// Wait up to `timeout_ms` for a datagram: 1 ready, 0 timed out, < 0 error.
    pub fn wait(&mut self, timeout_ms: u32) -> i32 {
        // Whoever waits wants the socket read again afterwards.
        self.skip_next_refill = false;
        if self.has_queued() {
            return 1;
        }
        let idle = libc::pollfd {
            fd: -1,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [idle; 2];
        fds[0].fd = self.v4.socket.as_raw_fd();
        let mut count = 1;
        if let Some(v6) = &self.v6 {
            fds[1].fd = v6.socket.as_raw_fd();
            count = 2;
        }
        let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
        let mut timeout = poll_timeout(Duration::from_millis(u64::from(timeout_ms)));
        loop {
            // SAFETY: `fds` holds `count` (<= 2) initialised pollfd entries that outlive the call.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), count as libc::nfds_t, timeout) };
            if ready > 0 {
                if fds[..count].iter().any(|f| f.revents & libc::POLLNVAL != 0) {
                    let msg = "udp: wait: the socket descriptor is no longer valid".to_string();
                    return self.fail(NET_BACKEND_ERR_IO, msg);
                }
                return 1;
            }
            if ready == 0 {
                return 0;
            }
            let err = std::io::Error::last_os_error();
            if !oserr::is_interrupted(&err) {
                let msg = format!("udp: wait failed: {}", oserr::describe(&err));
                return self.fail(NET_BACKEND_ERR_IO, msg);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return 0;
            }
            timeout = poll_timeout(left);
        }
    }

    /// The configured broadcast address with `port` (0: this socket's own port).
    pub fn broadcast_node(&self, port: u16) -> NET_Node {
        let port = if port == 0 { self.v4.port } else { port };
        node::encode(SocketAddr::V4(SocketAddrV4::new(
            self.options.broadcast,
            port,
        )))
    }

    /// The node by which `towards` (None: the primary network) sees this socket.
    pub fn local_node(&mut self, towards: Option<&NET_Node>) -> Result<NET_Node, i32> {
        let dest = match towards.map(node::decode) {
            None => None,
            Some(Some(addr)) => Some(addr),
            Some(None) => {
                let msg = "udp: local_node: invalid node".to_string();
                return Err(self.fail(NET_BACKEND_ERR_INVALID, msg));
            }
        };
        let (configured, port) = match dest {
            Some(SocketAddr::V6(_)) => match &self.v6 {
                Some(v6) => (IpAddr::V6(self.options.bind6), v6.port),
                None => {
                    let msg = "udp: local_node: no IPv6 socket is open".to_string();
                    return Err(self.fail(NET_BACKEND_ERR_UNREACHABLE, msg));
                }
            },
            _ => (IpAddr::V4(self.options.bind), self.v4.port),
        };
        let mut addr = if !configured.is_unspecified() {
            SocketAddr::new(configured, port)
        } else if let Some(dest) = dest {
            match local::source_towards(dest) {
                Ok(source) => source,
                Err(e) => {
                    // Discovery on a host without a default route: say what to do.
                    let hint = if dest.ip() == IpAddr::V4(std::net::Ipv4Addr::BROADCAST) {
                        " (no default route for broadcast discovery: set net.udp.broadcast to the subnet's broadcast address, e.g. 10.0.0.255, or connect HOST:PORT)"
                    } else {
                        ""
                    };
                    let msg = format!(
                        "udp: no route to {}: {}{hint}",
                        display(dest),
                        oserr::describe(&e)
                    );
                    return Err(self.fail(NET_BACKEND_ERR_UNREACHABLE, msg));
                }
            }
        } else {
            SocketAddr::new(local::primary_ipv4_or_loopback(), port)
        };
        addr.set_port(port); // the route lookup's throwaway port is not ours
        Ok(node::encode(addr))
    }
}

/// A poll(2) timeout in milliseconds, rounded up so that short waits do not become busy loops.
fn poll_timeout(left: Duration) -> libc::c_int {
    let ms = left.as_micros().div_ceil(1000);
    ms.min(libc::c_int::MAX as u128) as libc::c_int
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket as StdUdpSocket;

    fn wait_for_data(socket: &mut UdpSocket) {
        assert_eq!(socket.wait(2000), 1, "nothing arrived in 2 s");
    }

    #[test]
    fn a_drained_batch_ends_the_receive_loop_without_another_system_call() {
        let mut socket = UdpSocket::open(0, "bind=127.0.0.1\nipv6=0").expect("open");
        let sender = StdUdpSocket::bind("127.0.0.1:0").unwrap();
        let to = ("127.0.0.1", socket.ipv4_port());
        for round in 0..3u8 {
            for i in 0..3u8 {
                sender.send_to(&[round, i], to).unwrap();
            }
            // All three are waiting before the loop starts.
            for _ in 0..200 {
                wait_for_data(&mut socket);
                std::thread::sleep(std::time::Duration::from_millis(5));
                let before = socket.stats().receive_syscalls;
                let mut got = Vec::new();
                while let Some((_, data)) = socket.receive(1400).expect("receive") {
                    got.push(data.to_vec());
                }
                let calls = socket.stats().receive_syscalls - before;
                if got.len() == 3 {
                    // The socket reads singly until two datagrams come back to back; the batch
                    // that took the third read fewer than it asked for, so the loop ended
                    // without a fourth call.
                    assert_eq!(calls, 3, "two recvfrom, one recvmmsg that ended the loop");
                    break;
                }
                assert!(got.len() < 3, "more than was sent: {got:?}");
            }
            // The next loop (the next frame) reads the socket again.
            let before = socket.stats().receive_syscalls;
            assert!(socket.receive(1400).expect("receive").is_none());
            assert_eq!(socket.stats().receive_syscalls - before, 1);
        }
    }

    #[test]
    fn a_wait_after_a_drained_batch_reads_the_socket_again() {
        let mut socket = UdpSocket::open(0, "bind=127.0.0.1\nipv6=0").expect("open");
        let sender = StdUdpSocket::bind("127.0.0.1:0").unwrap();
        let to = ("127.0.0.1", socket.ipv4_port());
        sender.send_to(b"first", to).unwrap();
        wait_for_data(&mut socket);
        assert_eq!(socket.receive(1400).unwrap().unwrap().1, b"first");
        sender.send_to(b"second", to).unwrap();
        wait_for_data(&mut socket);
        let (_, data) = socket
            .receive(1400)
            .unwrap()
            .expect("the waited-for datagram");
        assert_eq!(data, b"second");
    }
}
