//! `SlotServerCore`: the TCP side of the slotserver and the gameserver as a sans-IO state
//! machine. It owns the player slots, the connections' line framing and the protocol replies;
//! a driver (see `runtime.rs`) feeds it what happens on the sockets and carries out what it asks.
//!
//! Calling order, as in quinn-proto:
//! - inputs: [`accept`](SlotServerCore::accept), [`receive`](SlotServerCore::receive),
//!   [`closed`](SlotServerCore::closed) for the sockets, [`handle_timeout`](SlotServerCore::handle_timeout)
//!   when [`poll_timeout`](SlotServerCore::poll_timeout) has come;
//! - requests: [`remove_slot`](SlotServerCore::remove_slot) (e.g. the gameserver's alive
//!   counter ran out), [`shutdown`](SlotServerCore::shutdown);
//! - outputs, drained after every input: [`poll_action`](SlotServerCore::poll_action) (lines to
//!   send, connections to close, "the list changed") and
//!   [`poll_roster_change`](SlotServerCore::poll_roster_change) (for a UDP service);
//! - getters: [`players`](SlotServerCore::players), [`counters`](SlotServerCore::counters).
//!
//! It never touches a socket or sleeps; it reads the wall clock once (for "connected since")
//! unless given one with [`with_wall_clock`](SlotServerCore::with_wall_clock), and stats the
//! ban file when the ban list has one.

use std::collections::VecDeque;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

use log::Level::{self, Debug, Info};

use crate::error::{NetError, NetResult};
use crate::rmev::MAX_SLOTS;
use crate::server::clock::{deadline, WallClock};

use super::bans::{BanList, ReloadOutcome};
use super::connections::{Connection, ConnectionLimits, Connections};
use super::expiry::{Expiry, ExpiryCounts};
use super::lines::{FramedLine, MAX_LINE_LEN};
use super::refusal_log::RefusalLog;
use super::text_protocol::{self as text, ClientLine, LineError};

/// The runtime's name for one TCP connection.
pub type ConnId = u64;

/// Everything the admin configures about the TCP side.
#[derive(Clone, Debug)]
pub struct SlotServerConfig {
    /// Sent in every accepted line (1-31 printable ASCII bytes).
    pub server_name: String,
    /// Slots 0..max_players-1 (1-16).
    pub max_players: u8,
    /// The four lines sent after every accepted join.
    pub messages: [String; 4],
    /// The server's UDP game port told to extended clients (0: none, a slotserver).
    pub udp_port: u16,
    /// A joined client that sends nothing for this long is removed (zero: never).
    pub idle_timeout: Duration,
    /// A connection must join within this long of connecting, and every line must be finished
    /// within this long of its first byte (zero: never).
    pub handshake_timeout: Duration,
    /// At most this many connections from one IP address at once.
    pub max_per_address: usize,
    /// At most this many connections at once.
    pub max_connections: usize,
    /// This server run's session token (non-zero), told to extended clients.
    pub server_token: u32,
}

impl Default for SlotServerConfig {
    fn default() -> Self {
        SlotServerConfig {
            server_name: "parsec".to_string(),
            max_players: 16,
            messages: [
                "Welcome to this Parsec server.".to_string(),
                "Be fair and have fun.".to_string(),
                String::new(),
                String::new(),
            ],
            udp_port: 0,
            idle_timeout: Duration::ZERO,
            handshake_timeout: Duration::from_secs(30),
            max_per_address: 20,
            max_connections: 256,
            server_token: random_token(),
        }
    }
}

impl SlotServerConfig {
    /// Check every field; the message says which one is wrong and why.
    pub fn validate(&self) -> NetResult<()> {
        text::validate_name(&self.server_name).map_err(|_| {
            NetError::invalid(format!(
                "server name '{}' must be 1-{} printable ASCII characters (and not contain \" os: \")",
                self.server_name,
                text::MAX_NAME_LEN
            ))
        })?;
        if self.max_players == 0 || usize::from(self.max_players) > MAX_SLOTS {
            return Err(NetError::invalid(format!(
                "max players {} is not 1-{MAX_SLOTS}",
                self.max_players
            )));
        }
        for (i, message) in self.messages.iter().enumerate() {
            if message.len() > MAX_LINE_LEN || message.chars().any(char::is_control) {
                return Err(NetError::invalid(format!(
                    "message line {} must be at most {MAX_LINE_LEN} bytes without control characters",
                    i + 1
                )));
            }
        }
        if self.max_per_address == 0 || self.max_connections == 0 {
            return Err(NetError::invalid("connection limits must be at least 1"));
        }
        if self.server_token == 0 {
            return Err(NetError::invalid("the server token must not be 0"));
        }
        Ok(())
    }
}

/// A random non-zero token for one server run.
pub fn random_token() -> u32 {
    crate::random::nonzero_u32()
}

/// One joined player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayerRecord {
    pub slot: u8,
    pub name: String,
    pub os: String,
    /// The address of its TCP connection (IPv4-mapped IPv6 shown as IPv4).
    pub addr: IpAddr,
    /// Its UDP game port (from the ` port:` extension; 6526 otherwise).
    pub game_port: u16,
    /// Where its game packets come from now, once the gameserver followed it away from
    /// `addr`:`game_port` (a `net.port` change or NAT rebinding); the extended lines name it.
    pub moved_to: Option<SocketAddr>,
    /// Its session token (0: it gave none).
    pub token: u32,
    /// The token the others are told in extended `add` lines. On a slotserver it is `token`:
    /// game packets go peer to peer and each player checks the others'. On a gameserver only
    /// the server checks a client's packets, so the others get a random id instead and the
    /// token stays a secret between the client and the server.
    pub told_token: u32,
    /// It joined with the ` token:` extension and gets the extended lines.
    pub extended: bool,
    pub conn: ConnId,
    pub since: SystemTime,
}

impl PlayerRecord {
    /// The address the extended lines name it by: where its game packets come from now.
    pub fn game_addr(&self) -> (IpAddr, u16) {
        match self.moved_to {
            Some(to) => (to.ip().to_canonical(), to.port()),
            None => (self.addr, self.game_port),
        }
    }
}

/// What the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerAction {
    /// Send one line (the driver appends "\n").
    SendLine { conn: ConnId, line: String },
    /// Send a block of ready lines (each ending in "\n") shared with other connections, e.g. the
    /// masterserver's whole list; not counted against the connection's output limit.
    SendShared {
        conn: ConnId,
        bytes: std::sync::Arc<[u8]>,
    },
    /// Close the connection after sending what is queued for it; read nothing more from it.
    Close { conn: ConnId, reason: String },
    /// The player list changed (rewrite the HTML/JSON lists).
    ListChanged,
}

/// A change of the player list, for a UDP service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RosterChange {
    Joined(PlayerRecord),
    Left { slot: u8, reason: String },
    Renamed { slot: u8, name: String },
}

/// What the core keeps about a connection besides its lines and clocks.
#[derive(Debug)]
struct Seat {
    /// Until a join is accepted: when the connection is closed for not joining.
    join_deadline: Option<Instant>,
    slot: Option<u8>,
}

/// What is counted; see [`SlotServerCore::counters`].
#[derive(Clone, Debug, Default)]
struct Counters {
    joins: u64,
    joins_refused_full: u64,
    joins_refused_name_taken: u64,
    joins_refused_version: u64,
    banned_refusals: u64,
    invalid_requests: u64,
    removes: u64,
    renames: u64,
    renames_refused: u64,
    dropped_connections: u64,
    expired: ExpiryCounts,
    players_removed_by_server: u64,
    ban_reloads: u64,
    ban_reload_failures: u64,
    kicked_by_ban: u64,
}

/// The TCP-side state machine (see the module documentation for the calling order).
#[derive(Debug)]
pub struct SlotServerCore {
    config: SlotServerConfig,
    bans: BanList,
    slots: Vec<Option<PlayerRecord>>,
    conns: Connections<Seat>,
    roster: VecDeque<RosterChange>,
    counters: Counters,
    wall_clock: WallClock,
}

impl SlotServerCore {
    /// A server with no connections. Out-of-range settings are brought into range (call
    /// [`SlotServerConfig::validate`] first to report them instead).
    pub fn new(mut config: SlotServerConfig, bans: BanList) -> Self {
        if let Err(e) = config.validate() {
            log::warn!("server configuration: {e}; using the nearest valid value");
        }
        config.max_players = config.max_players.clamp(1, MAX_SLOTS as u8);
        config.max_per_address = config.max_per_address.max(1);
        config.max_connections = config.max_connections.max(1);
        if config.server_token == 0 {
            config.server_token = random_token();
        }
        if text::validate_name(&config.server_name).is_err() {
            config.server_name = sanitize(&config.server_name, text::MAX_NAME_LEN);
            if config.server_name.is_empty() {
                config.server_name = "parsec".to_string();
            }
        }
        for message in config.messages.iter_mut() {
            *message = sanitize(message, MAX_LINE_LEN);
        }
        let slots = vec![None; usize::from(config.max_players)];
        let conns = Connections::new(ConnectionLimits {
            max_connections: config.max_connections,
            max_per_address: config.max_per_address,
            max_line_len: MAX_LINE_LEN,
        });
        SlotServerCore {
            config,
            bans,
            slots,
            conns,
            roster: VecDeque::new(),
            counters: Counters::default(),
            wall_clock: WallClock::default(),
        }
    }

    /// Use `wall` as the wall-clock time at `instant` (for "connected since"); without this
    /// the clock is read once, at the first join.
    pub fn with_wall_clock(mut self, instant: Instant, wall: SystemTime) -> Self {
        self.wall_clock = WallClock::starting_at(instant, wall);
        self
    }

    /// The configuration in force.
    pub fn config(&self) -> &SlotServerConfig {
        &self.config
    }

    /// Set the UDP game port told to extended clients (the driver knows it once bound).
    pub fn set_udp_port(&mut self, port: u16) {
        self.config.udp_port = port;
    }

    /// The ban list (to add entries or reload it).
    pub fn bans_mut(&mut self) -> &mut BanList {
        &mut self.bans
    }

    /// The joined players, by slot.
    pub fn players(&self) -> impl Iterator<Item = &PlayerRecord> {
        self.slots.iter().flatten()
    }

    /// How many connections are open (joined or not).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// The limiter the core's refusal lines go through (the runtime logs its own refusals,
    /// connections dropped over a rate limit, through it too).
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
            ("joins_refused_name_taken", c.joins_refused_name_taken),
            ("joins_refused_version", c.joins_refused_version),
            ("banned_refusals", c.banned_refusals),
            ("invalid_requests", c.invalid_requests),
            overlong,
            ("removes", c.removes),
            ("renames", c.renames),
            ("renames_refused", c.renames_refused),
            ("dropped_connections", c.dropped_connections),
        ]
        .into_iter()
        .chain(c.expired.named())
        .chain([
            ("players_removed_by_server", c.players_removed_by_server),
            ("ban_reloads", c.ban_reloads),
            ("ban_reload_failures", c.ban_reload_failures),
            ("kicked_by_ban", c.kicked_by_ban),
        ])
        .collect()
    }

    /// A new TCP connection. `Err(reason)`: refused by the connection limits; the driver closes
    /// it without reading. The ban file is checked for changes first.
    pub fn accept(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) -> Result<(), String> {
        self.check_bans(now, true);
        let seat = Seat {
            join_deadline: deadline(now, self.config.handshake_timeout),
            slot: None,
        };
        self.conns.accept(now, conn, peer, seat)
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
            self.handle_line(now, conn, line);
        }
    }

    /// The connection is gone (the peer closed it or it failed): free its slot and tell the
    /// others. Harmless for a connection the core already closed.
    pub fn closed(&mut self, now: Instant, conn: ConnId) {
        let _ = now;
        if let Some(c) = self.conns.remove(conn) {
            if let Some(slot) = c.state.slot {
                self.counters.dropped_connections += 1;
                self.free_slot(slot, "connection closed");
            }
            log::debug!("connection {conn} closed");
        }
    }

    /// The peer closed its sending side: a last line it did not end is taken as a line, then
    /// the connection is gone as in [`closed`](Self::closed). The driver still delivers the
    /// replies queued for it.
    pub fn input_ended(&mut self, now: Instant, conn: ConnId) {
        if let Some(line) = self.conns.finish_line(conn) {
            self.handle_line(now, conn, line);
        }
        self.closed(now, conn);
    }

    /// Remove the player in `slot` (e.g. its alive counter ran out on the UDP side): the others
    /// are told, and its connection is closed.
    pub fn remove_slot(&mut self, now: Instant, slot: u8, reason: &str) {
        let _ = now;
        let Some(conn) = self.player(slot).map(|p| p.conn) else {
            return;
        };
        self.counters.players_removed_by_server += 1;
        self.close(conn, reason);
    }

    /// Run the timers: unjoined connections past their deadline, unfinished lines, idle
    /// players, and the periodic ban file check.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.check_bans(now, false);
        self.conns.refusals().handle_timeout(now);
        let expired: Vec<(ConnId, Expiry)> = self
            .conns
            .first_deadlines(|c| self.deadlines_of(c))
            .filter(|&(_, at, _)| at <= now)
            .map(|(id, _, expiry)| (id, expiry))
            .collect();
        for (id, expiry) in expired {
            self.counters.expired.count(expiry);
            let reason = match expiry {
                Expiry::Handshake => "did not join in time",
                Expiry::Line => "line not finished in time",
                Expiry::Idle => "idle timeout",
            };
            self.close(id, reason);
        }
    }

    /// The next time [`handle_timeout`](Self::handle_timeout) has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.conns
            .first_deadlines(|c| self.deadlines_of(c))
            .map(|(_, at, _)| at)
            .chain(self.bans.next_check())
            .chain(self.conns.refusals_timeout())
            .min()
    }

    /// A connection's deadlines: to join, to finish a started line, and (joined) to say
    /// anything before the idle timeout.
    fn deadlines_of(&self, c: &Connection<Seat>) -> [(Option<Instant>, Expiry); 3] {
        let handshake = self.config.handshake_timeout;
        let idle = self.config.idle_timeout;
        [
            (c.state.join_deadline, Expiry::Handshake),
            (
                c.line_started.and_then(|t| deadline(t, handshake)),
                Expiry::Line,
            ),
            (
                c.state.slot.and_then(|_| deadline(c.last_bytes, idle)),
                Expiry::Idle,
            ),
        ]
    }

    /// The next thing for the driver to do.
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.conns.poll_action()
    }

    /// The next change of the player list (for a UDP service).
    pub fn poll_roster_change(&mut self) -> Option<RosterChange> {
        self.roster.pop_front()
    }

    /// Graceful stop: every connection is closed after what is queued for it is sent (the
    /// design has no line for this), and the list is emptied.
    pub fn shutdown(&mut self, reason: &str) {
        for slot in 0..self.slots.len() {
            if let Some(player) = self.slots[slot].take() {
                self.roster.push_back(RosterChange::Left {
                    slot: player.slot,
                    reason: reason.to_string(),
                });
            }
        }
        self.conns.close_all(reason);
        self.conns.push(ServerAction::ListChanged);
    }

    // ----- lines -----

    fn handle_line(&mut self, now: Instant, conn: ConnId, line: FramedLine) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        let (ip, joined) = (c.ip, c.state.slot.is_some());
        if !joined && self.bans.is_banned(ip) {
            self.counters.banned_refusals += 1;
            self.log_refusal(now, ip, Info, format_args!("refused banned address {ip}"));
            self.send(conn, text::BANNED);
            self.close(conn, "banned");
            return;
        }
        let text = match line {
            Ok(text) => text,
            Err(fault) => {
                self.counters.invalid_requests += 1;
                let what = fault.describe();
                self.log_refusal(
                    now,
                    ip,
                    Debug,
                    format_args!("connection {conn} from {ip}: {what}"),
                );
                if self.conns.refuse_line(conn, fault, text::INVALID_REQUEST) {
                    self.close(conn, fault.describe());
                }
                return;
            }
        };
        match text::parse_client_line(&text) {
            Ok(ClientLine::Join {
                name,
                os,
                port,
                token,
                ..
            }) => self.join(now, conn, name, os, port, token),
            Ok(ClientLine::RemoveMe) => self.remove_me(now, conn),
            Ok(ClientLine::NewName(name)) => self.rename(conn, name),
            Err(LineError::Incompatible { major, minor }) => {
                self.counters.joins_refused_version += 1;
                self.log_refusal(
                    now,
                    ip,
                    Info,
                    format_args!(
                        "join from {ip} refused: server version incompatible (the client \
                         speaks version {major}.{minor})"
                    ),
                );
                self.send(conn, text::VERSION_INCOMPATIBLE);
            }
            Err(error) => {
                self.counters.invalid_requests += 1;
                self.log_refusal(
                    now,
                    ip,
                    Debug,
                    format_args!("connection {conn} from {ip}: {error}"),
                );
                self.send(conn, error.reply());
            }
        }
    }

    fn join(
        &mut self,
        now: Instant,
        conn: ConnId,
        name: String,
        os: String,
        port: Option<u16>,
        token: Option<u32>,
    ) {
        let Some(c) = self.conns.get(conn) else {
            return;
        };
        if c.state.slot.is_some() {
            self.counters.invalid_requests += 1;
            self.send(conn, text::INVALID_REQUEST);
            return;
        }
        let ip = c.ip;
        let Some(slot) = self.slots.iter().position(Option::is_none) else {
            self.counters.joins_refused_full += 1;
            let why = format!("join of '{name}' from {ip} refused: server full");
            self.log_refusal(now, ip, Info, format_args!("{why}"));
            self.send(conn, text::SERVER_FULL);
            return;
        };
        if self.players().any(|p| p.name == name) {
            self.counters.joins_refused_name_taken += 1;
            let why = format!("join of '{name}' from {ip} refused: name already taken");
            self.log_refusal(now, ip, Info, format_args!("{why}"));
            self.send(conn, text::NAME_TAKEN);
            return;
        }
        let slot = slot as u8;
        let record = PlayerRecord {
            slot,
            name,
            os,
            addr: ip,
            game_port: port.unwrap_or(text::DEFAULT_CLIENT_PORT),
            moved_to: None,
            token: token.unwrap_or(0),
            told_token: told_token(self.config.udp_port, token.unwrap_or(0)),
            extended: token.is_some(),
            conn,
            since: self.wall_clock.at(now),
        };
        if let Some(c) = self.conns.get_mut(conn) {
            c.state.slot = Some(slot);
            c.state.join_deadline = None;
        }
        self.counters.joins += 1;
        log::info!(
            "'{}' joined from {ip} ({}) in slot {slot}",
            record.name,
            record.os
        );
        let server_ext = record.extended.then_some(text::ServerExtension {
            udp_port: self.config.udp_port,
            token: self.config.server_token,
        });
        let accepted =
            text::join_accepted(&record.name, slot, &self.config.server_name, server_ext);
        self.send(conn, &accepted);
        for message in self.config.messages.clone() {
            self.send(conn, &message);
        }
        let existing: Vec<String> = self
            .players()
            .map(|p| add_line(p, record.extended))
            .collect();
        for line in existing {
            self.send(conn, &line);
        }
        self.broadcast_except(slot, |receiver_extended| {
            add_line(&record, receiver_extended)
        });
        self.slots[usize::from(slot)] = Some(record.clone());
        self.roster.push_back(RosterChange::Joined(record));
        self.conns.push(ServerAction::ListChanged);
    }

    /// The gameserver's relay now hears the player in `slot` at `to` (it changed its local port,
    /// or a NAT rebound it): from now on the extended lines name it there, and the others with
    /// the extension are told with its `add ip:` line again (same slot and token: a client
    /// takes it as a move, not a new player). Design clients keep its join address.
    pub fn player_moved(&mut self, slot: u8, to: SocketAddr) {
        let Some(player) = self
            .slots
            .get_mut(usize::from(slot))
            .and_then(Option::as_mut)
        else {
            return;
        };
        let to = SocketAddr::new(to.ip().to_canonical(), to.port());
        if player.game_addr() == (to.ip(), to.port()) {
            return;
        }
        log::info!("'{}' in slot {slot} now plays from {to}", player.name);
        player.moved_to =
            Some(to).filter(|to| (to.ip(), to.port()) != (player.addr, player.game_port));
        let line = add_line(player, true);
        let receivers: Vec<ConnId> = self
            .players()
            .filter(|p| p.slot != slot && p.extended)
            .map(|p| p.conn)
            .collect();
        for conn in receivers {
            self.send(conn, &line);
        }
    }

    fn remove_me(&mut self, now: Instant, conn: ConnId) {
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        let Some(slot) = c.state.slot.take() else {
            self.send(conn, text::NOT_JOINED);
            return;
        };
        // Connected but no longer joined: it must join again (or go) in time.
        c.state.join_deadline = deadline(now, self.config.handshake_timeout);
        self.counters.removes += 1;
        self.send(conn, text::REMOVING_YOU);
        self.free_slot(slot, "removed itself");
    }

    fn rename(&mut self, conn: ConnId, name: String) {
        let Some(slot) = self.conns.get(conn).and_then(|c| c.state.slot) else {
            self.counters.renames_refused += 1;
            self.send(conn, text::NOT_JOINED);
            return;
        };
        if self.players().any(|p| p.name == name && p.slot != slot) {
            self.counters.renames_refused += 1;
            self.send(conn, text::NAME_TAKEN);
            return;
        }
        let Some(player) = self.slots[usize::from(slot)].as_mut() else {
            return;
        };
        if player.name == name {
            self.send(conn, text::NEW_NAME_ACCEPTED);
            return;
        }
        log::info!("'{}' in slot {slot} is now '{name}'", player.name);
        player.name = name.clone();
        let (design_ip, (ip, port)) = (player.addr, player.game_addr());
        self.counters.renames += 1;
        self.send(conn, text::NEW_NAME_ACCEPTED);
        self.broadcast_except(slot, |ext| match ext {
            true => text::rename_player(ip, &name, Some(port)),
            false => text::rename_player(design_ip, &name, None),
        });
        self.roster.push_back(RosterChange::Renamed { slot, name });
        self.conns.push(ServerAction::ListChanged);
    }

    // ----- helpers -----

    fn player(&self, slot: u8) -> Option<&PlayerRecord> {
        self.slots.get(usize::from(slot)).and_then(Option::as_ref)
    }

    /// Log a refusal from `ip` (at most a few lines per address and period; counted by the
    /// caller whether logged or not).
    fn log_refusal(&mut self, now: Instant, ip: IpAddr, level: Level, message: fmt::Arguments<'_>) {
        self.conns.refusals().refused(now, ip, level, message);
    }

    fn send(&mut self, conn: ConnId, line: &str) {
        self.conns.send(conn, line);
    }

    /// Send a line (formatted per receiver: `true` = extended) to every joined player but `slot`.
    fn broadcast_except(&mut self, slot: u8, line_for: impl Fn(bool) -> String) {
        let receivers: Vec<(ConnId, bool)> = self
            .players()
            .filter(|p| p.slot != slot)
            .map(|p| (p.conn, p.extended))
            .collect();
        for (conn, extended) in receivers {
            let line = line_for(extended);
            self.send(conn, &line);
        }
    }

    /// Empty a slot and tell the others (the connection itself is not touched).
    fn free_slot(&mut self, slot: u8, reason: &str) {
        let Some(player) = self.slots.get_mut(usize::from(slot)).and_then(Option::take) else {
            return;
        };
        log::info!(
            "'{}' left slot {slot} ({}): {reason}",
            player.name,
            player.addr
        );
        let (design_ip, (ip, port)) = (player.addr, player.game_addr());
        self.broadcast_except(slot, |ext| match ext {
            true => text::remove_player(ip, Some(port)),
            false => text::remove_player(design_ip, None),
        });
        self.roster.push_back(RosterChange::Left {
            slot,
            reason: reason.to_string(),
        });
        self.conns.push(ServerAction::ListChanged);
    }

    /// Forget a connection (freeing its slot) and ask the driver to close it.
    fn close(&mut self, conn: ConnId, reason: &str) {
        if let Some(slot) = self.conns.close(conn, reason).and_then(|c| c.state.slot) {
            self.free_slot(slot, reason);
        }
    }

    /// Reload the ban file if it changed; then close every connection from a newly banned
    /// address with the banned reply.
    fn check_bans(&mut self, now: Instant, force: bool) {
        match self.bans.reload_if_changed(now, force) {
            ReloadOutcome::Reloaded { .. } => self.counters.ban_reloads += 1,
            ReloadOutcome::Failed(_) => {
                self.counters.ban_reload_failures += 1;
                return;
            }
            ReloadOutcome::NotDue | ReloadOutcome::Unchanged => return,
        }
        let banned: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| self.bans.is_banned(c.ip))
            .map(|(id, _)| id)
            .collect();
        for conn in banned {
            self.counters.kicked_by_ban += 1;
            self.send(conn, text::BANNED);
            self.close(conn, "banned");
        }
    }
}

/// What the other players are told as the token of a player who joined with `token`: the token
/// itself on a slotserver (`udp_port` 0), where peers check each other's packets; on a
/// gameserver, a random id that is not the token. Only the relay checks a gameserver client's
/// packets, so no other player needs the token, and one that knew it could send as that player
/// from the same address (players behind one NAT) or a forged one.
fn told_token(udp_port: u16, token: u32) -> u32 {
    if udp_port == 0 {
        return token;
    }
    loop {
        let id = random_token();
        if id != token {
            return id;
        }
    }
}

/// The `add` line about `player` for a receiver.
fn add_line(player: &PlayerRecord, receiver_extended: bool) -> String {
    if !receiver_extended {
        return text::add_player(player.addr, &player.name, player.slot, None);
    }
    let (ip, port) = player.game_addr();
    let ext = text::PlayerExtension {
        port,
        token: player.told_token,
    };
    text::add_player(ip, &player.name, player.slot, Some(ext))
}

/// Replace control characters by spaces and cut to `max` bytes (on a character boundary).
fn sanitize(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .map(|ch| if ch.is_control() { ' ' } else { ch })
        .collect();
    let mut cut = out.len().min(max);
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out
}
