//! The packet API layer: one active backend socket, switched at run time without losing what was
//! already handed to it or received by it.
//!
//! - Sends go straight to the backend; a datagram the backend cannot take yet (would block) waits
//!   in the outgoing queue and is retried by `flush`.
//! - A switch (`net.api`, `net.port`) first flushes the outgoing queue through the old socket,
//!   then drains the old socket's receive queue into `incoming`, then closes it and opens the new
//!   one. If the new one fails, the old backend is reopened and stays active.
//! - The socket is opened lazily on first use, so `net.port` can be set after `NET_Init`.
//!
//! This layer never interprets payloads; the subsystem decides which datagrams belong to the game
//! protocol.

pub mod backend;
pub mod conditioner;
pub mod loader;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parsec_backend_abi::NET_Node;

use crate::error::{ErrorCode, NetError, NetResult};
pub use backend::{Backend, BackendOrigin, BackendSocket, SendOutcome};
pub use conditioner::{Conditioner, ConditionerStats, Conditions};
pub use loader::BackendSpec;

/// Default local port for clients (the design's UDP port).
pub const DEFAULT_CLIENT_PORT: u16 = 6526;
/// Most datagrams kept waiting for a backend that would block.
const OUTGOING_LIMIT: usize = 4096;
/// Most datagrams kept for the game that it has not read yet.
const INCOMING_LIMIT: usize = 4096;
/// How long a switch may wait for the old backend to take queued datagrams.
const SWITCH_FLUSH_BUDGET: Duration = Duration::from_millis(500);
/// Most datagrams drained from a socket that is being closed.
const SWITCH_DRAIN_LIMIT: usize = 65_536;

/// A datagram with its peer node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub node: NET_Node,
    pub data: Vec<u8>,
}

/// Counters shown by `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketStats {
    pub datagrams_sent: u64,
    pub bytes_sent: u64,
    pub datagrams_received: u64,
    pub bytes_received: u64,
    /// Datagrams the backend would not take at once (queued, sent later).
    pub send_deferred: u64,
    pub send_errors: u64,
    pub oversize_rejected: u64,
    pub receive_errors: u64,
    /// Datagrams lost because the outgoing or incoming queue was full.
    pub queue_overflow: u64,
    /// Datagrams read from a socket being closed by a switch (kept, delivered later).
    pub drained_on_switch: u64,
    /// Queued datagrams sent through the old socket during a switch.
    pub flushed_on_switch: u64,
    /// Queued datagrams the old socket would not take within the switch budget.
    pub lost_on_switch: u64,
    pub switches: u64,
    pub failed_switches: u64,
    /// The message of the latest send error counted in `send_errors` (the backend's
    /// `last_error`, or what the core found wrong), one line; `None` until there was one.
    pub last_send_error: Option<String>,
    /// The same for `receive_errors`.
    pub last_receive_error: Option<String>,
}

impl PacketStats {
    fn count_sent(&mut self, len: usize) {
        self.datagrams_sent += 1;
        self.bytes_sent += len as u64;
    }

    fn count_send_error(&mut self, err: &NetError) {
        self.send_errors += 1;
        self.last_send_error = Some(backend::one_line(&err.message));
    }

    fn count_receive_error(&mut self, err: &NetError) {
        self.receive_errors += 1;
        self.last_receive_error = Some(backend::one_line(&err.message));
    }
}

/// Send queued datagrams in order until the socket would block (and, with a deadline, keep
/// retrying until then). A datagram the backend refuses with an error is dropped and counted.
/// Returns how many were sent.
fn send_queued(
    outgoing: &mut VecDeque<Datagram>,
    socket: &mut BackendSocket,
    stats: &mut PacketStats,
    deadline: Option<Instant>,
) -> u64 {
    let mut sent = 0;
    while let Some(datagram) = outgoing.front() {
        match socket.send(&datagram.node, &datagram.data) {
            Ok(SendOutcome::Sent) => {
                stats.count_sent(datagram.data.len());
                sent += 1;
                outgoing.pop_front();
            }
            Ok(SendOutcome::WouldBlock) => match deadline {
                Some(deadline) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                _ => break,
            },
            Err(err) => {
                stats.count_send_error(&err);
                outgoing.pop_front();
            }
        }
    }
    sent
}

/// The active backend, its socket and the queues around it.
pub struct PacketLayer {
    backend: Option<Arc<Backend>>,
    socket: Option<BackendSocket>,
    /// The options the open socket was opened with (a rollback reopens with these).
    socket_options: String,
    /// Port the socket is (or will be) bound to (0: any free port).
    port: u16,
    /// The port the open socket actually got (what 0 became).
    bound_port: Option<u16>,
    /// What the open socket's `bound_port` returned when that was no port (-1, 70000).
    bad_bound_port: Option<i32>,
    outgoing: VecDeque<Datagram>,
    incoming: VecDeque<Datagram>,
    /// `net.sim`: the link conditioner on the send and the receive path.
    send_sim: Conditioner,
    receive_sim: Conditioner,
    /// Receive buffers given back after use (see [`PacketLayer::recycle`]), so the steady
    /// receive path does not allocate.
    spare_buffers: Vec<Vec<u8>>,
    /// What the backend writes a datagram into, kept at the backend's maximum payload so an
    /// empty receive touches no buffer; a datagram is then copied into a spare buffer.
    receive_scratch: Vec<u8>,
    stats: PacketStats,
}

/// At most this many spare receive buffers are kept.
const MAX_SPARE_BUFFERS: usize = 64;

impl Default for PacketLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl PacketLayer {
    pub fn new() -> Self {
        PacketLayer {
            backend: None,
            socket: None,
            socket_options: String::new(),
            port: DEFAULT_CLIENT_PORT,
            bound_port: None,
            bad_bound_port: None,
            outgoing: VecDeque::new(),
            incoming: VecDeque::new(),
            send_sim: Conditioner::new(0x5E_4D),
            receive_sim: Conditioner::new(0x4E_C5),
            spare_buffers: Vec::new(),
            receive_scratch: Vec::new(),
            stats: PacketStats::default(),
        }
    }

    pub fn stats(&self) -> &PacketStats {
        &self.stats
    }

    pub fn backend(&self) -> Option<&Arc<Backend>> {
        self.backend.as_ref()
    }

    pub fn is_open(&self) -> bool {
        self.socket.is_some()
    }

    /// The configured port (0: any free port).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port the open socket is bound to, if open and its backend reported a valid one.
    pub fn bound_port(&self) -> Option<u16> {
        self.bound_port
    }

    /// Where the open socket is bound, to follow "open" or "active" in `status` and the
    /// `net.api` reply: ` on port N`, for the IPX backend ` on IPX socket XXXX (port N)` (the
    /// socket number in hex, as its nodes print it), or, when its backend's `bound_port` gave
    /// no port, a phrase saying so with what it gave.
    pub fn port_text(&self) -> String {
        let ipx = self.backend.as_ref().is_some_and(|b| b.name() == "ipx");
        match (self.bound_port, self.bad_bound_port) {
            (Some(port), _) => on_port(port, ipx),
            (None, Some(raw)) => {
                format!(", but the backend reported no valid port (its bound_port returned {raw})")
            }
            (None, None) => on_port(self.port, ipx),
        }
    }

    /// What the open socket is bound to, as its backend describes it (see
    /// `BackendSocket::description`); `None` when closed or the backend says nothing.
    pub fn socket_description(&self) -> Option<String> {
        self.socket.as_ref().and_then(BackendSocket::description)
    }

    /// Count a switch that failed before reaching the packet layer (a library that was refused).
    pub fn note_failed_switch(&mut self) {
        self.stats.failed_switches += 1;
    }

    fn install_socket(&mut self, socket: BackendSocket, options: String) {
        (self.bound_port, self.bad_bound_port) = match socket.bound_port() {
            Ok(port) => (Some(port), None),
            Err(raw) => {
                log::warn!(
                    "{}: bound_port returned {raw}, which is no port",
                    socket.backend().name()
                );
                (None, Some(raw))
            }
        };
        self.socket = Some(socket);
        self.socket_options = options;
    }

    pub fn outgoing_len(&self) -> usize {
        self.outgoing.len()
    }

    pub fn incoming_len(&self) -> usize {
        self.incoming.len()
    }

    /// Select a backend without opening it (used at init; opened on first use).
    pub fn select(&mut self, backend: Arc<Backend>) {
        self.close_socket();
        self.backend = Some(backend);
    }

    /// The open socket, opening it now if needed.
    pub fn socket(&mut self, options: &str) -> NetResult<&mut BackendSocket> {
        if self.socket.is_none() {
            let backend = self.backend.clone().ok_or_else(|| {
                NetError::new(
                    ErrorCode::NoBackend,
                    "no packet backend selected (use net.api udp)",
                )
            })?;
            let socket = backend.open(self.port, options)?;
            self.install_socket(socket, options.to_string());
        }
        Ok(self.socket.as_mut().expect("socket just opened"))
    }

    /// Switch to `new_backend` on `port`: flush, drain, close, open; on failure reopen the old
    /// backend with the options it had. Returns what happened as one line.
    pub fn switch(
        &mut self,
        new_backend: Arc<Backend>,
        port: u16,
        new_options: &str,
    ) -> NetResult<String> {
        let old_backend = self.backend.clone();
        // A rollback rebinds the port the old socket really had, so peers still reach it.
        let old_port = self.bound_port.unwrap_or(self.port);
        let old_options = std::mem::take(&mut self.socket_options);
        let (flushed, lost, drained) = self.retire_socket();
        match new_backend.open(port, new_options) {
            Ok(socket) => {
                self.install_socket(socket, new_options.to_string());
                self.backend = Some(new_backend);
                self.port = port;
                self.stats.switches += 1;
                let mut line = format!(
                    "packet backend {} active{}",
                    self.backend.as_ref().map_or("?", |b| b.name()),
                    self.port_text()
                );
                if flushed + lost + drained > 0 {
                    line.push_str(&format!(
                        " ({flushed} queued datagrams sent before the switch, {drained} received datagrams kept{})",
                        if lost > 0 { format!(", {lost} could not be sent") } else { String::new() }
                    ));
                }
                Ok(line)
            }
            Err(err) => {
                self.stats.failed_switches += 1;
                let kept = match old_backend {
                    Some(old) => match old.open(old_port, &old_options) {
                        Ok(socket) => {
                            let name = old.name().to_string();
                            self.install_socket(socket, old_options);
                            self.backend = Some(old);
                            format!("keeping {name}")
                        }
                        Err(reopen) => {
                            // The old socket was closed for the switch and cannot come back:
                            // keep it selected so the next use retries, and say so.
                            let name = old.name().to_string();
                            self.backend = Some(old);
                            format!("{name} stays selected but could not be reopened: {reopen}")
                        }
                    },
                    None => "no backend active".to_string(),
                };
                Err(NetError::new(err.code, format!("{}; {kept}", err.message)))
            }
        }
    }

    /// Flush the outgoing queue into the current socket, drain its receive queue into
    /// `incoming`, and close it. Returns (flushed, lost, drained).
    fn retire_socket(&mut self) -> (u64, u64, u64) {
        let Some(mut socket) = self.socket.take() else {
            return (0, 0, 0);
        };
        // What the conditioner holds is queued or received already: nothing of it is dropped.
        for (node, data) in self.send_sim.drain_all() {
            self.outgoing.push_back(Datagram { node, data });
        }
        for (node, data) in self.receive_sim.drain_all() {
            self.incoming.push_back(Datagram { node, data });
        }
        let deadline = Instant::now() + SWITCH_FLUSH_BUDGET;
        let flushed = send_queued(
            &mut self.outgoing,
            &mut socket,
            &mut self.stats,
            Some(deadline),
        );
        let lost = self.outgoing.len() as u64;
        if lost > 0 {
            log::warn!(
                "backend switch: {lost} queued datagrams could not be sent by the old backend"
            );
            self.outgoing.clear();
        }
        let mut drained = 0;
        let mut buf = vec![0u8; socket.backend().max_payload()];
        while drained < SWITCH_DRAIN_LIMIT as u64 {
            match socket.receive(&mut buf) {
                Ok(Some((node, len))) => {
                    self.count_received(len);
                    self.push_incoming(Datagram {
                        node,
                        data: buf[..len].to_vec(),
                    });
                    drained += 1;
                }
                Ok(None) => break,
                Err(err) => {
                    self.stats.count_receive_error(&err);
                    break;
                }
            }
        }
        self.stats.flushed_on_switch += flushed;
        self.stats.lost_on_switch += lost;
        self.stats.drained_on_switch += drained;
        self.bound_port = None;
        self.bad_bound_port = None;
        drop(socket);
        (flushed, lost, drained)
    }

    /// Close the socket (flushing and draining it first). The backend stays selected.
    pub fn close(&mut self) {
        self.retire_socket();
    }

    fn close_socket(&mut self) {
        self.socket = None;
        self.bound_port = None;
        self.bad_bound_port = None;
    }

    /// Set the port; an open socket is reopened on it (with the same switch guarantees).
    pub fn set_port(&mut self, port: u16, options: &str) -> NetResult<String> {
        match (&self.socket, self.backend.clone()) {
            (Some(_), Some(backend)) => self.switch(backend, port, options),
            _ => {
                self.port = port;
                Ok(format!(
                    "local port set to {port} (used when the backend opens)"
                ))
            }
        }
    }

    /// Send a datagram now, or queue it if the backend would block.
    pub fn send(&mut self, to: &NET_Node, data: &[u8], options: &str) -> NetResult<()> {
        if data.is_empty() {
            return Err(NetError::invalid("cannot send an empty datagram"));
        }
        let max = self
            .backend
            .as_ref()
            .map_or(usize::MAX, |b| b.max_payload());
        if data.len() > max {
            self.stats.oversize_rejected += 1;
            return Err(NetError::new(
                ErrorCode::TooLarge,
                format!(
                    "datagram of {} bytes exceeds the backend's maximum payload of {max} bytes",
                    data.len()
                ),
            ));
        }
        if !self.send_sim.conditions().is_off() {
            self.send_sim.push(Instant::now(), *to, data.to_vec());
            return self.release_conditioned(options);
        }
        self.transmit(to, data, options)
    }

    /// Send datagrams the conditioner has held long enough.
    fn release_conditioned(&mut self, options: &str) -> NetResult<()> {
        let now = Instant::now();
        while let Some((to, data)) = self.send_sim.pop_due(now) {
            // A failure here concerns one delayed datagram, not the caller's current send.
            if let Err(err) = self.transmit(&to, &data, options) {
                log::debug!("net.sim: a delayed datagram could not be sent: {err}");
            }
        }
        Ok(())
    }

    /// `net.sim`: set the conditions of both paths.
    pub fn set_conditions(&mut self, conditions: Conditions) {
        self.send_sim.set(conditions);
        self.receive_sim.set(conditions);
    }

    pub fn conditions(&self) -> Conditions {
        self.send_sim.conditions()
    }

    /// When every datagram `net.sim` holds on the send path now has left (None: it holds
    /// none). The game's TCP lines wait for it, as a real path would delay them with the
    /// datagrams sent before them.
    pub fn send_path_clear_at(&self) -> Option<Instant> {
        self.send_sim.last_release()
    }

    /// When every datagram `net.sim` holds on the receive path now has been handed on (None: it
    /// holds none).
    pub fn receive_path_clear_at(&self) -> Option<Instant> {
        self.receive_sim.last_release()
    }

    /// The conditioner's counters (send path, receive path).
    pub fn conditioner_stats(&self) -> (&ConditionerStats, &ConditionerStats) {
        (self.send_sim.stats(), self.receive_sim.stats())
    }

    /// Send now, or queue behind datagrams the backend has not taken yet.
    fn transmit(&mut self, to: &NET_Node, data: &[u8], options: &str) -> NetResult<()> {
        // Keep order: while older datagrams wait, newer ones queue behind them.
        if !self.outgoing.is_empty() {
            self.flush_outgoing(options)?;
            if !self.outgoing.is_empty() {
                return self.queue_outgoing(to, data);
            }
        }
        let socket = self.socket(options)?;
        match socket.send(to, data) {
            Ok(SendOutcome::Sent) => {
                self.count_sent(data.len());
                Ok(())
            }
            Ok(SendOutcome::WouldBlock) => self.queue_outgoing(to, data),
            Err(err) => {
                if err.code == ErrorCode::TooLarge {
                    self.stats.oversize_rejected += 1;
                } else {
                    self.stats.count_send_error(&err);
                }
                Err(err)
            }
        }
    }

    fn queue_outgoing(&mut self, to: &NET_Node, data: &[u8]) -> NetResult<()> {
        if self.outgoing.len() >= OUTGOING_LIMIT {
            self.stats.queue_overflow += 1;
            return Err(NetError::new(
                ErrorCode::Full,
                format!("send queue full ({OUTGOING_LIMIT} datagrams waiting for the backend)"),
            ));
        }
        self.stats.send_deferred += 1;
        self.outgoing.push_back(Datagram {
            node: *to,
            data: data.to_vec(),
        });
        Ok(())
    }

    /// Send what the conditioner released and retry queued datagrams until the backend would
    /// block again.
    pub fn flush(&mut self, options: &str) -> NetResult<()> {
        if self.send_sim.held() > 0 {
            self.release_conditioned(options)?;
        }
        self.flush_outgoing(options)
    }

    fn flush_outgoing(&mut self, options: &str) -> NetResult<()> {
        if self.outgoing.is_empty() {
            return Ok(());
        }
        self.socket(options)?;
        let socket = self.socket.as_mut().expect("socket opened above");
        send_queued(&mut self.outgoing, socket, &mut self.stats, None);
        Ok(())
    }

    /// The next datagram: first one kept from before (a switch or a too-small read), then the
    /// backend. `buf` must hold the backend's maximum payload.
    pub fn receive(&mut self, options: &str) -> NetResult<Option<Datagram>> {
        if let Some(datagram) = self.incoming.pop_front() {
            return Ok(Some(datagram));
        }
        self.receive_new(options)
    }

    /// The next datagram from the backend itself, bypassing the datagrams kept for the game.
    pub fn receive_new(&mut self, options: &str) -> NetResult<Option<Datagram>> {
        if self.receive_sim.is_off() {
            return self.receive_from_socket(options);
        }
        // Conditioned: everything the socket has goes through the conditioner first.
        let now = Instant::now();
        while let Some(datagram) = self.receive_from_socket(options)? {
            self.receive_sim.push(now, datagram.node, datagram.data);
        }
        Ok(self
            .receive_sim
            .pop_due(now)
            .map(|(node, data)| Datagram { node, data }))
    }

    /// The next datagram from the backend (as [`PacketLayer::receive_new`]), offered to `take`
    /// in place: a datagram `take` returns true for is handled; any other is kept for the game
    /// to read (`push_incoming`). Straight from the socket, the datagram is offered from the
    /// layer's receive buffer, so a handled one is never copied. Returns whether it was taken,
    /// or None when nothing was waiting.
    pub fn receive_offered(
        &mut self,
        options: &str,
        take: &mut impl FnMut(NET_Node, &[u8]) -> bool,
    ) -> NetResult<Option<bool>> {
        if !self.receive_sim.is_off() {
            return self.receive_conditioned_offered(options, take);
        }
        let Some((node, len)) = self.receive_into_scratch(options)? else {
            return Ok(None);
        };
        let taken = take(node, &self.receive_scratch[..len]);
        if !taken {
            let datagram = self.scratch_datagram(node, len);
            self.push_incoming(datagram);
        }
        Ok(Some(taken))
    }

    /// [`PacketLayer::receive_offered`] through the link conditioner (`net.sim`).
    #[inline(never)]
    fn receive_conditioned_offered(
        &mut self,
        options: &str,
        take: &mut dyn FnMut(NET_Node, &[u8]) -> bool,
    ) -> NetResult<Option<bool>> {
        let Some(datagram) = self.receive_new(options)? else {
            return Ok(None);
        };
        let taken = take(datagram.node, &datagram.data);
        if taken {
            self.recycle(datagram.data);
        } else {
            self.push_incoming(datagram);
        }
        Ok(Some(taken))
    }

    fn receive_from_socket(&mut self, options: &str) -> NetResult<Option<Datagram>> {
        let Some((node, len)) = self.receive_into_scratch(options)? else {
            return Ok(None);
        };
        Ok(Some(self.scratch_datagram(node, len)))
    }

    /// The first `len` bytes of `receive_scratch` as a datagram of its own (in a spare buffer).
    fn scratch_datagram(&mut self, node: NET_Node, len: usize) -> Datagram {
        let mut data = self.spare_buffers.pop().unwrap_or_default();
        data.extend_from_slice(&self.receive_scratch[..len]);
        Datagram { node, data }
    }

    /// Receive one datagram from the socket into `receive_scratch`: its sender and length.
    fn receive_into_scratch(&mut self, options: &str) -> NetResult<Option<(NET_Node, usize)>> {
        self.socket(options)?;
        let socket = self.socket.as_mut().expect("socket opened above");
        let max = socket.backend().max_payload();
        if self.receive_scratch.len() < max {
            self.receive_scratch.resize(max, 0);
        }
        match socket.receive(&mut self.receive_scratch[..max]) {
            Ok(Some((node, len))) => {
                self.count_received(len);
                Ok(Some((node, len)))
            }
            Ok(None) => Ok(None),
            Err(err) => {
                self.stats.count_receive_error(&err);
                Err(err)
            }
        }
    }

    /// Give back the buffer of a datagram that was handled, for a later receive to reuse.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.spare_buffers.len() < MAX_SPARE_BUFFERS {
            buf.clear();
            self.spare_buffers.push(buf);
        }
    }

    /// Put a datagram back at the front (the game's buffer was too small; nothing is lost).
    pub fn unreceive(&mut self, datagram: Datagram) {
        self.incoming.push_front(datagram);
    }

    /// Keep a datagram for the game to read later.
    pub fn push_incoming(&mut self, datagram: Datagram) {
        if self.incoming.len() >= INCOMING_LIMIT {
            self.incoming.pop_front();
            self.stats.queue_overflow += 1;
        }
        self.incoming.push_back(datagram);
    }

    /// Wait up to `timeout` for something to receive.
    pub fn wait(&mut self, timeout: Duration, options: &str) -> NetResult<bool> {
        if !self.incoming.is_empty() {
            return Ok(true);
        }
        let mut timeout = timeout;
        if let Some(release) = self.receive_sim.next_release() {
            let now = Instant::now();
            if release <= now {
                return Ok(true);
            }
            timeout = timeout.min(release - now);
        }
        let ms = timeout.as_millis().min(u32::MAX as u128) as u32;
        self.socket(options)?.wait(ms)
    }

    fn count_sent(&mut self, len: usize) {
        self.stats.count_sent(len);
    }

    fn count_received(&mut self, len: usize) {
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += len as u64;
    }
}

/// ` on port N`, or for IPX ` on IPX socket XXXX (port N)`: the socket number in hex as IPX
/// nodes print it (`0000ABCD:02005E1020FF:869C`), with the decimal `net.port` that gives it.
fn on_port(port: u16, ipx: bool) -> String {
    if ipx {
        format!(" on IPX socket {port:04X} (port {port})")
    } else {
        format!(" on port {port}")
    }
}
