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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use log::Level::{self, Debug, Info};

use crate::error::{NetError, NetResult};
use crate::server::clock::{deadline, WallClock};
use crate::server::connections::{Connection, ConnectionLimits, Connections};
use crate::server::expiry::{earliest, Expiry, ExpiryCounts};
use crate::server::http::Pages;
use crate::server::lines::FramedLine;
use crate::server::refusal_log::RefusalLog;
use crate::server::slots::{ConnId, ServerAction};
use crate::server::text_core::TextServerCore;

use super::list_line::ListedServer;
use super::pages::MasterListing;
use super::protocol::{self as proto, MasterRequest, RequestError};

/// The shortest time between two timer sweeps over all connections.
pub const MIN_SWEEP_INTERVAL: Duration = Duration::from_millis(20);
/// The design's list limit, the default of [`MasterConfig::max_servers`].
pub const DEFAULT_MAX_SERVERS: usize = 256;
/// Connections one address may hold beyond the list limit by default: so many servers from one
/// address (a test host, a hosting provider's NAT) can fill the list and still read it.
pub const EXTRA_PER_ADDRESS: usize = 64;
/// Connections beyond the list limit by default (list readers, refused joins, servers
/// reconnecting). It exceeds [`EXTRA_PER_ADDRESS`], so one address never holds them all.
pub const EXTRA_CONNECTIONS: usize = 256;

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
    /// At most this many connections from one IP address at once (a guard against one host
    /// taking every connection; by default above the list limit, see [`EXTRA_PER_ADDRESS`]).
    pub max_per_address: usize,
    /// At most this many connections at once.
    pub max_connections: usize,
}

impl Default for MasterConfig {
    fn default() -> Self {
        MasterConfig {
            title: "Parsec masterserver".to_string(),
            max_servers: DEFAULT_MAX_SERVERS,
            idle_timeout: Duration::from_secs(120),
            handshake_timeout: Duration::from_secs(30),
            max_per_address: DEFAULT_MAX_SERVERS + EXTRA_PER_ADDRESS,
            max_connections: DEFAULT_MAX_SERVERS + EXTRA_CONNECTIONS,
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
        if !title_is_valid(&self.title) {
            return Err(NetError::invalid(
                "the title must be 1-127 bytes without control characters",
            ));
        }
        Ok(())
    }
}

/// Whether `title` can be the list's title: 1-127 bytes without control characters.
pub fn title_is_valid(title: &str) -> bool {
    !title.is_empty() && title.len() <= 127 && !title.chars().any(char::is_control)
}

/// One listed server and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedEntry {
    pub server: ListedServer,
    pub since: SystemTime,
}

/// What the masterserver keeps about a connection: whether its server is listed.
#[derive(Debug, Default)]
struct Registration {
    listed: bool,
}

#[derive(Clone, Debug, Default)]
struct Counters {
    joins: u64,
    joins_refused_full: u64,
    joins_refused_version: u64,
    illegal_requests: u64,
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
    conns: Connections<Registration>,
    /// Listed servers by join number (numbers grow, so this is the order they joined; a
    /// connection that joins after others came in later, or again after `remove me`, is last).
    servers: BTreeMap<u64, ListedEntry>,
    /// The join number of each listed connection.
    listed_as: HashMap<ConnId, u64>,
    /// The join number the next listed server gets.
    next_join: u64,
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
        let conns = Connections::new(ConnectionLimits {
            max_connections: config.max_connections,
            max_per_address: config.max_per_address,
            max_line_len: proto::MAX_MASTER_LINE_LEN,
        });
        MasterCore {
            config,
            conns,
            servers: BTreeMap::new(),
            listed_as: HashMap::new(),
            next_join: 0,
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

    /// The limiter the core's refusal lines go through (the runtime logs its own refusals
    /// through it too).
    pub fn refusal_log(&mut self) -> &mut RefusalLog {
        self.conns.refusals()
    }

    /// Everything counted since the start, by name.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        let [accepted, refused, overlong] = self.conns.named_counts();
        vec![
            accepted,
            refused,
            ("joins", c.joins),
            ("joins_refused_full", c.joins_refused_full),
            ("joins_refused_version", c.joins_refused_version),
            ("illegal_requests", c.illegal_requests),
            overlong,
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
        self.conns
            .accept(now, conn, peer, Registration::default())?;
        self.note_deadline(conn);
        Ok(())
    }

    /// Bytes received on a connection.
    pub fn receive(&mut self, now: Instant, conn: ConnId, bytes: &[u8]) {
        let Some(framed) = self.conns.receive(now, conn, bytes) else {
            return;
        };
        for line in framed {
            if !self.conns.contains(conn) {
                break; // closed by an earlier line of this read
            }
            self.handle_line(conn, line, now);
        }
        self.note_deadline(conn);
    }

    /// The connection is gone: its server, if listed, leaves the list.
    pub fn closed(&mut self, _now: Instant, conn: ConnId) {
        if let Some(c) = self.conns.remove(conn) {
            if c.state.listed {
                self.counters.dropped_connections += 1;
                self.unlist(conn, "connection closed");
            }
        }
    }

    /// The peer closed its sending side: a last line it did not end is taken as a line, then
    /// the connection is gone as in [`closed`](Self::closed). The driver still delivers the
    /// replies queued for it.
    pub fn input_ended(&mut self, now: Instant, conn: ConnId) {
        if let Some(line) = self.conns.finish_line(conn) {
            self.handle_line(conn, line, now);
        }
        self.closed(now, conn);
    }

    /// Run the timers: silent listed servers, connections that sent no request, unfinished lines.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.conns.refusals().handle_timeout(now);
        if self.next_check.is_none_or(|t| t > now) {
            return;
        }
        self.last_sweep = Some(now);
        let mut expired = Vec::new();
        let mut next: Option<Instant> = None;
        for (id, at, expiry) in self.conns.first_deadlines(|c| self.deadlines_of(c)) {
            if at <= now {
                expired.push((id, expiry));
            } else {
                next = Some(next.map_or(at, |n| n.min(at)));
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
        let sweep = self.next_check.map(|next| match self.last_sweep {
            Some(last) => next.max(last + MIN_SWEEP_INTERVAL),
            None => next,
        });
        let summary = self.conns.refusals_timeout();
        sweep.into_iter().chain(summary).min()
    }

    /// The next thing for the driver to do.
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.conns.poll_action()
    }

    /// Graceful stop: every connection is closed after its queued lines; the list is emptied.
    pub fn shutdown(&mut self, reason: &str) {
        self.conns.close_all(reason);
        self.servers.clear();
        self.listed_as.clear();
        self.list_changed();
    }

    // ----- lines -----

    fn handle_line(&mut self, conn: ConnId, line: FramedLine, now: Instant) {
        let text = match line {
            Ok(text) => text,
            Err(fault) => {
                self.counters.illegal_requests += 1;
                let what = fault.describe();
                self.log_refusal(now, conn, Debug, format_args!("connection {conn}: {what}"));
                if self.conns.refuse_line(conn, fault, proto::ILLEGAL_REQUEST) {
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
            Err(RequestError::Incompatible { major, minor }) => {
                self.counters.joins_refused_version += 1;
                let ip = self.conns.get(conn).map(|c| c.ip);
                if let Some(ip) = ip {
                    self.log_refusal(
                        now,
                        conn,
                        Info,
                        format_args!(
                            "join from {ip} refused: masterserver version incompatible (the \
                             server speaks version {major}.{minor})"
                        ),
                    );
                }
                self.send(conn, proto::VERSION_INCOMPATIBLE);
            }
            Err(error) => {
                self.counters.illegal_requests += 1;
                self.log_refusal(now, conn, Debug, format_args!("connection {conn}: {error}"));
                self.send(conn, error.reply());
            }
        }
    }

    fn join(&mut self, conn: ConnId, join: proto::JoinRequest, now: Instant) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        if c.state.listed {
            self.counters.illegal_requests += 1;
            self.send(conn, proto::ILLEGAL_REQUEST);
            return;
        }
        let ip = c.ip;
        if self.servers.len() >= self.config.max_servers {
            self.counters.joins_refused_full += 1;
            let why = format!(
                "join of '{}' from {ip} refused: masterserver full",
                join.name
            );
            self.log_refusal(now, conn, Info, format_args!("{why}"));
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
        if let Some(c) = self.conns.get_mut(conn) {
            c.state.listed = true;
        }
        self.counters.joins += 1;
        let since = self.wall_clock.at(now);
        let number = self.next_join;
        self.next_join += 1;
        self.listed_as.insert(conn, number);
        self.servers.insert(number, ListedEntry { server, since });
        self.send(conn, proto::JOIN_ACCEPTED);
        self.list_changed();
    }

    fn remove_me(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        if !c.state.listed {
            self.send(conn, proto::NOT_JOINED);
            return;
        }
        c.state.listed = false;
        self.counters.removes += 1;
        self.send(conn, proto::REMOVING_YOU);
        self.unlist(conn, "removed itself");
    }

    fn players(&mut self, conn: ConnId, players: u16, max: u16) {
        let entry = self
            .listed_as
            .get(&conn)
            .and_then(|number| self.servers.get_mut(number));
        let Some(entry) = entry else {
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
        self.conns.send_shared(conn, bytes);
    }

    // ----- helpers -----

    /// Log a refusal on `conn` (at most a few lines per address and period; counted by the
    /// caller whether logged or not).
    fn log_refusal(
        &mut self,
        now: Instant,
        conn: ConnId,
        level: Level,
        message: fmt::Arguments<'_>,
    ) {
        if let Some(ip) = self.conns.get(conn).map(|c| c.ip) {
            self.conns.refusals().refused(now, ip, level, message);
        }
    }

    fn send(&mut self, conn: ConnId, line: &str) {
        self.conns.send(conn, line);
    }

    fn list_changed(&mut self) {
        self.list_reply = None;
        self.conns.push(ServerAction::ListChanged);
    }

    fn unlist(&mut self, conn: ConnId, reason: &str) {
        let number = self.listed_as.remove(&conn);
        if let Some(entry) = number.and_then(|number| self.servers.remove(&number)) {
            log::info!(
                "unlisted '{}' from {}: {reason}",
                entry.server.name,
                entry.server.address()
            );
            self.list_changed();
        }
    }

    /// Forget a connection (unlisting its server) and ask the driver to close it.
    fn close(&mut self, conn: ConnId, reason: &str) {
        if self
            .conns
            .close(conn, reason)
            .is_some_and(|c| c.state.listed)
        {
            self.unlist(conn, reason);
        }
    }

    /// When `c` is closed for silence (no request from an unlisted connection: a handshake
    /// timeout, as on the slot and game servers; no line from a listed server: idle) and when for
    /// an unfinished line. The first to come is the reason; an unlisted connection that started
    /// its request line still had to send it within the handshake time of its last line, so a
    /// tie goes to the silence.
    fn deadlines_of(&self, c: &Connection<Registration>) -> [(Option<Instant>, Expiry); 2] {
        let handshake = self.config.handshake_timeout;
        let (silence, silent) = if c.state.listed {
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
            .get(conn)
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
    fn input_ended(&mut self, now: Instant, conn: ConnId) {
        MasterCore::input_ended(self, now, conn)
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
    /// A connection over a connection limit hears the design's "no room" reply: a registering
    /// server handles it as a refusal and tries again later, a list client can say why.
    fn refusal_line(&self) -> Option<&'static str> {
        Some(proto::MASTERSERVER_FULL)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        MasterCore::counters(self)
    }
    fn refusal_log(&mut self) -> &mut RefusalLog {
        MasterCore::refusal_log(self)
    }
    fn render_pages(
        &self,
        _kind: &str,
        _status: &[String],
        generated: SystemTime,
        running: bool,
    ) -> Pages {
        let listing = MasterListing {
            title: &self.config.title,
            max_servers: self.config.max_servers,
            servers: self.servers.values().collect(),
            generated,
            running,
        };
        Pages {
            html: listing.to_html(),
            json: listing.to_json(),
            stem: "servers",
        }
    }
}
