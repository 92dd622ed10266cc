//! `MasterCore`: the masterserver (design section 3) as a sans-IO state machine. It keeps the
//! list of registered slot- and gameservers, answers every line with the design's strings, and
//! answers the `list servers` extension; the server runtime (`server::runtime`) does the I/O
//! through the [`TextServerCore`] trait.
//!
//! Calling order, as in quinn-proto:
//! - inputs: [`accept`](MasterCore::accept), [`receive`](MasterCore::receive),
//!   [`closed`](MasterCore::closed); [`handle_timeout`](MasterCore::handle_timeout) once
//!   [`poll_timeout`](MasterCore::poll_timeout) has come;
//! - request: [`shutdown`](MasterCore::shutdown);
//! - output, drained after every input: [`poll_action`](MasterCore::poll_action);
//! - getters: [`servers`](MasterCore::servers), [`counters`](MasterCore::counters).
//!
//! A server stays listed while its connection lives and is not silent for the idle timeout.
//! Built for 10,000 and more connections: no input costs time in proportion to the number of
//! connections, except a timer sweep, which runs only when a deadline may have passed (and at
//! most every [`MIN_SWEEP_INTERVAL`]). It never touches a socket, never sleeps, and reads the
//! wall clock only for "listed since" (unless given one with
//! [`with_wall_clock`](MasterCore::with_wall_clock)).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::error::{NetError, NetResult};
use crate::server::clock::{deadline, WallClock};
use crate::server::expiry::{earliest, Expiry, ExpiryCounts};
use crate::server::http::Pages;
use crate::server::lines::{FramedLine, LineBuffer, LineFault};
use crate::server::slots::{ConnId, ServerAction};
use crate::server::text_core::TextServerCore;

use super::list_line::ListedServer;
use super::pages::MasterListing;
use super::protocol::{self as proto, MasterRequest, RequestError};

/// The shortest time between two timer sweeps over all connections.
pub const MIN_SWEEP_INTERVAL: Duration = Duration::from_millis(20);

/// What the admin configures.
#[derive(Clone, Debug)]
pub struct MasterConfig {
    /// The title of the HTML list.
    pub title: String,
    /// Servers listed at most; a join beyond it gets `masterserver full` (the design: 256).
    pub max_servers: usize,
    /// A listed server whose connection sends no line for this long is removed (zero: never).
    pub idle_timeout: Duration,
    /// A connection that is not listed must send a line within this long of its last one, and
    /// every line must be finished within this long of its first byte (zero: never).
    pub handshake_timeout: Duration,
    /// At most this many connections from one IP address at once.
    pub max_per_address: usize,
    /// At most this many connections at once.
    pub max_connections: usize,
}

impl Default for MasterConfig {
    fn default() -> Self {
        MasterConfig {
            title: "Parsec masterserver".to_string(),
            max_servers: 256,
            idle_timeout: Duration::from_secs(120),
            handshake_timeout: Duration::from_secs(30),
            max_per_address: 64,
            max_connections: 512,
        }
    }
}

impl MasterConfig {
    /// Check every field; the message says which one is wrong.
    pub fn validate(&self) -> NetResult<()> {
        if self.max_servers == 0 || self.max_per_address == 0 || self.max_connections == 0 {
            return Err(NetError::invalid(
                "the server and connection limits must be at least 1",
            ));
        }
        if self.title.is_empty()
            || self.title.len() > 127
            || self.title.chars().any(char::is_control)
        {
            return Err(NetError::invalid(
                "the title must be 1-127 bytes without control characters",
            ));
        }
        Ok(())
    }
}

/// One listed server and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedEntry {
    pub server: ListedServer,
    pub since: SystemTime,
}

#[derive(Debug)]
struct Connection {
    ip: IpAddr,
    lines: LineBuffer,
    /// When the first byte of the current unfinished line arrived.
    line_started: Option<Instant>,
    /// When the last complete line (or the connection) arrived.
    last_line: Instant,
    listed: bool,
}

#[derive(Clone, Debug, Default)]
struct Counters {
    connections_accepted: u64,
    connections_refused: u64,
    joins: u64,
    joins_refused_full: u64,
    joins_refused_version: u64,
    illegal_requests: u64,
    overlong_lines: u64,
    removes: u64,
    player_updates: u64,
    list_requests: u64,
    dropped_connections: u64,
    expired: ExpiryCounts,
}

/// The masterserver state machine (see the module documentation for the calling order).
#[derive(Debug)]
pub struct MasterCore {
    config: MasterConfig,
    conns: HashMap<ConnId, Connection>,
    per_address: HashMap<IpAddr, usize>,
    /// Listed servers by connection (connection ids grow, so this is the order they came in).
    servers: BTreeMap<ConnId, ListedEntry>,
    actions: VecDeque<ServerAction>,
    counters: Counters,
    /// The `list servers` reply, rendered once per version of the list.
    list_reply: Option<Arc<[u8]>>,
    /// No connection has a deadline before this (a lower bound; `None`: no deadlines).
    next_check: Option<Instant>,
    last_sweep: Option<Instant>,
    wall_clock: WallClock,
}

impl MasterCore {
    /// A masterserver with nothing listed. Out-of-range limits are raised to 1 (call
    /// [`MasterConfig::validate`] first to report them instead).
    pub fn new(mut config: MasterConfig) -> MasterCore {
        if let Err(e) = config.validate() {
            log::warn!("masterserver configuration: {e}; using the nearest valid value");
        }
        config.max_servers = config.max_servers.max(1);
        config.max_per_address = config.max_per_address.max(1);
        config.max_connections = config.max_connections.max(1);
        MasterCore {
            config,
            conns: HashMap::new(),
            per_address: HashMap::new(),
            servers: BTreeMap::new(),
            actions: VecDeque::new(),
            counters: Counters::default(),
            list_reply: None,
            next_check: None,
            last_sweep: None,
            wall_clock: WallClock::default(),
        }
    }

    /// Use `wall` as the wall-clock time at `instant` (for "listed since").
    pub fn with_wall_clock(mut self, instant: Instant, wall: SystemTime) -> Self {
        self.wall_clock = WallClock::starting_at(instant, wall);
        self
    }

    pub fn config(&self) -> &MasterConfig {
        &self.config
    }

    /// The listed servers, in the order they joined.
    pub fn servers(&self) -> impl Iterator<Item = &ListedEntry> {
        self.servers.values()
    }

    pub fn server_count(&self) -> usize {
        self.servers.len()
    }

    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Everything counted since the start, by name.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("connections_accepted", c.connections_accepted),
            ("connections_refused", c.connections_refused),
            ("joins", c.joins),
            ("joins_refused_full", c.joins_refused_full),
            ("joins_refused_version", c.joins_refused_version),
            ("illegal_requests", c.illegal_requests),
            ("overlong_lines", c.overlong_lines),
            ("removes", c.removes),
            ("player_updates", c.player_updates),
            ("list_requests", c.list_requests),
            ("dropped_connections", c.dropped_connections),
        ]
        .into_iter()
        .chain(c.expired.named())
        .collect()
    }

    /// A new TCP connection; `Err(reason)` when a connection limit refuses it.
    pub fn accept(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) -> Result<(), String> {
        let ip = peer.ip().to_canonical();
        let from_ip = self.per_address.get(&ip).copied().unwrap_or(0);
        let refusal = if self.conns.contains_key(&conn) {
            Some(format!("connection id {conn} is already in use"))
        } else if self.conns.len() >= self.config.max_connections {
            Some(format!(
                "too many connections ({} at most)",
                self.config.max_connections
            ))
        } else if from_ip >= self.config.max_per_address {
            Some(format!(
                "too many connections from {ip} ({} at most)",
                self.config.max_per_address
            ))
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.counters.connections_refused += 1;
            log::debug!("refused connection from {peer}: {reason}");
            return Err(reason);
        }
        self.counters.connections_accepted += 1;
        *self.per_address.entry(ip).or_insert(0) += 1;
        self.conns.insert(
            conn,
            Connection {
                ip,
                lines: LineBuffer::new(proto::MAX_MASTER_LINE_LEN),
                line_started: None,
                last_line: now,
                listed: false,
            },
        );
        self.note_deadline(conn);
        Ok(())
    }

    /// Bytes received on a connection.
    pub fn receive(&mut self, now: Instant, conn: ConnId, bytes: &[u8]) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let framed = c.lines.push(bytes);
        if !framed.is_empty() {
            c.last_line = now;
        }
        if !c.lines.has_unfinished_line() {
            c.line_started = None;
        } else if !framed.is_empty() || c.line_started.is_none() {
            c.line_started = Some(now);
        }
        for line in framed {
            if !self.conns.contains_key(&conn) {
                break; // closed by an earlier line of this read
            }
            self.handle_line(conn, line, now);
        }
        self.note_deadline(conn);
    }

    /// The connection is gone: its server, if listed, leaves the list.
    pub fn closed(&mut self, _now: Instant, conn: ConnId) {
        if let Some(c) = self.forget(conn) {
            if c.listed {
                self.counters.dropped_connections += 1;
                self.unlist(conn, "connection closed");
            }
        }
    }

    /// Run the timers: silent listed servers, connections that sent no request, unfinished lines.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.next_check.is_none_or(|t| t > now) {
            return;
        }
        self.last_sweep = Some(now);
        let mut expired = Vec::new();
        let mut next: Option<Instant> = None;
        for (&id, c) in &self.conns {
            match earliest(&self.deadlines_of(c)) {
                Some((at, expiry)) if at <= now => expired.push((id, expiry)),
                Some((at, _)) => next = Some(next.map_or(at, |n| n.min(at))),
                None => {}
            }
        }
        self.next_check = next;
        for (id, expiry) in expired {
            self.counters.expired.count(expiry);
            let reason = match expiry {
                Expiry::Line => "line not finished in time",
                Expiry::Idle => "silent for the idle timeout",
                Expiry::Handshake => "sent no request in time",
            };
            self.close(id, reason);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let next = self.next_check?;
        Some(match self.last_sweep {
            Some(last) => next.max(last + MIN_SWEEP_INTERVAL),
            None => next,
        })
    }

    /// The next thing for the driver to do.
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.actions.pop_front()
    }

    /// Graceful stop: every connection is closed after its queued lines; the list is emptied.
    pub fn shutdown(&mut self, reason: &str) {
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            self.forget(id);
            self.actions.push_back(ServerAction::Close {
                conn: id,
                reason: reason.to_string(),
            });
        }
        self.servers.clear();
        self.list_changed();
    }

    // ----- lines -----

    fn handle_line(&mut self, conn: ConnId, line: FramedLine, now: Instant) {
        let text = match line {
            Ok(text) => text,
            Err(fault) => {
                self.counters.illegal_requests += 1;
                log::debug!("connection {conn}: {}", fault.describe());
                self.send(conn, proto::ILLEGAL_REQUEST);
                if fault == LineFault::Overlong {
                    self.counters.overlong_lines += 1;
                    self.close(conn, fault.describe());
                }
                return;
            }
        };
        match proto::parse_request(&text) {
            Ok(MasterRequest::Join(join)) => self.join(conn, join, now),
            Ok(MasterRequest::RemoveMe) => self.remove_me(conn),
            Ok(MasterRequest::Players { players, max }) => self.players(conn, players, max),
            Ok(MasterRequest::ListServers) => self.list(conn),
            Err(error) => {
                if matches!(error, RequestError::Incompatible { .. }) {
                    self.counters.joins_refused_version += 1;
                } else {
                    self.counters.illegal_requests += 1;
                }
                log::debug!("connection {conn}: {error}");
                self.send(conn, error.reply());
            }
        }
    }

    fn join(&mut self, conn: ConnId, join: proto::JoinRequest, now: Instant) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        if c.listed {
            self.counters.illegal_requests += 1;
            self.send(conn, proto::ILLEGAL_REQUEST);
            return;
        }
        let ip = c.ip;
        if self.servers.len() >= self.config.max_servers {
            self.counters.joins_refused_full += 1;
            log::info!(
                "join of '{}' from {ip} refused: masterserver full",
                join.name
            );
            self.send(conn, proto::MASTERSERVER_FULL);
            return;
        }
        let server = ListedServer {
            name: join.name,
            os: join.os,
            url: join.url,
            ip,
            port: join.port,
            kind: join.kind,
            udp_port: join.udp_port,
            players: 0,
            max_players: join.max_players,
        };
        log::info!(
            "listed '{}' ({}, {}) from {}",
            server.name,
            server.kind,
            server.os,
            server.address()
        );
        if let Some(c) = self.conns.get_mut(&conn) {
            c.listed = true;
        }
        self.counters.joins += 1;
        let since = self.wall_clock.at(now);
        self.servers.insert(conn, ListedEntry { server, since });
        self.send(conn, proto::JOIN_ACCEPTED);
        self.list_changed();
    }

    fn remove_me(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if !c.listed {
            self.send(conn, proto::NOT_JOINED);
            return;
        }
        c.listed = false;
        self.counters.removes += 1;
        self.send(conn, proto::REMOVING_YOU);
        self.unlist(conn, "removed itself");
    }

    fn players(&mut self, conn: ConnId, players: u16, max: u16) {
        let Some(entry) = self.servers.get_mut(&conn) else {
            // The design's replies to a players line are the acknowledgement or this one.
            self.counters.illegal_requests += 1;
            self.send(conn, proto::ILLEGAL_REQUEST);
            return;
        };
        self.counters.player_updates += 1;
        let changed = (entry.server.players, entry.server.max_players) != (players, max);
        entry.server.players = players;
        entry.server.max_players = max;
        self.send(conn, proto::PLAYERS_ACKNOWLEDGED);
        if changed {
            self.list_changed();
        }
    }

    fn list(&mut self, conn: ConnId) {
        self.counters.list_requests += 1;
        let bytes = match &self.list_reply {
            Some(bytes) => Arc::clone(bytes),
            None => {
                let mut text = String::with_capacity(self.servers.len() * 160 + 16);
                for entry in self.servers.values() {
                    text.push_str(&entry.server.to_line());
                    text.push('\n');
                }
                text.push_str(proto::END_OF_LIST);
                text.push('\n');
                let bytes: Arc<[u8]> = Arc::from(text.into_bytes());
                self.list_reply = Some(Arc::clone(&bytes));
                bytes
            }
        };
        self.actions
            .push_back(ServerAction::SendShared { conn, bytes });
    }

    // ----- helpers -----

    fn send(&mut self, conn: ConnId, line: &str) {
        self.actions.push_back(ServerAction::SendLine {
            conn,
            line: line.to_string(),
        });
    }

    fn list_changed(&mut self) {
        self.list_reply = None;
        self.actions.push_back(ServerAction::ListChanged);
    }

    fn unlist(&mut self, conn: ConnId, reason: &str) {
        if let Some(entry) = self.servers.remove(&conn) {
            log::info!(
                "unlisted '{}' from {}: {reason}",
                entry.server.name,
                entry.server.address()
            );
            self.list_changed();
        }
    }

    /// Drop a connection's state and its per-address count.
    fn forget(&mut self, conn: ConnId) -> Option<Connection> {
        let c = self.conns.remove(&conn)?;
        if let Some(n) = self.per_address.get_mut(&c.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&c.ip);
            }
        }
        Some(c)
    }

    /// Forget a connection (unlisting its server) and ask the driver to close it.
    fn close(&mut self, conn: ConnId, reason: &str) {
        let Some(c) = self.forget(conn) else {
            return;
        };
        log::debug!("closing connection {conn} from {}: {reason}", c.ip);
        if c.listed {
            self.unlist(conn, reason);
        }
        self.actions.push_back(ServerAction::Close {
            conn,
            reason: reason.to_string(),
        });
    }

    /// When `c` is closed for silence (no request from an unlisted connection: a handshake
    /// timeout, as on the slot and game servers; no line from a listed server: idle) and when for
    /// an unfinished line. The first to come is the reason; an unlisted connection that started
    /// its request line still had to send it within the handshake time of its last line, so a
    /// tie goes to the silence.
    fn deadlines_of(&self, c: &Connection) -> [(Option<Instant>, Expiry); 2] {
        let handshake = self.config.handshake_timeout;
        let (silence, silent) = if c.listed {
            (self.config.idle_timeout, Expiry::Idle)
        } else {
            (handshake, Expiry::Handshake)
        };
        [
            (deadline(c.last_line, silence), silent),
            (
                c.line_started.and_then(|t| deadline(t, handshake)),
                Expiry::Line,
            ),
        ]
    }

    /// Keep `next_check` a lower bound after a connection's deadline may have moved earlier.
    fn note_deadline(&mut self, conn: ConnId) {
        let Some((d, _)) = self
            .conns
            .get(&conn)
            .and_then(|c| earliest(&self.deadlines_of(c)))
        else {
            return;
        };
        self.next_check = Some(self.next_check.map_or(d, |n| n.min(d)));
    }
}

impl TextServerCore for MasterCore {
    fn display_name(&self) -> String {
        self.config.title.clone()
    }
    fn accept(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) -> Result<(), String> {
        MasterCore::accept(self, now, conn, peer)
    }
    fn receive(&mut self, now: Instant, conn: ConnId, bytes: &[u8]) {
        MasterCore::receive(self, now, conn, bytes)
    }
    fn closed(&mut self, now: Instant, conn: ConnId) {
        MasterCore::closed(self, now, conn)
    }
    fn handle_timeout(&mut self, now: Instant) {
        MasterCore::handle_timeout(self, now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        MasterCore::poll_timeout(self)
    }
    fn poll_action(&mut self) -> Option<ServerAction> {
        MasterCore::poll_action(self)
    }
    fn shutdown(&mut self, reason: &str) {
        MasterCore::shutdown(self, reason)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        MasterCore::counters(self)
    }
    fn render_pages(&self, _kind: &str, _status: &[String], generated: SystemTime) -> Pages {
        let listing = MasterListing {
            title: &self.config.title,
            max_servers: self.config.max_servers,
            servers: self.servers.values().collect(),
            generated,
        };
        Pages {
            html: listing.to_html(),
            json: listing.to_json(),
            stem: "servers",
        }
    }
}
