//! The client side of the slotserver and gameserver protocols (design 2.3.2, 2.3.3), sans-IO.
//!
//! Both join over TCP with the design's text lines (`version: 1.0 join me: NAME os: OS`, plus our
//! optional ` port: P token: T` so others can reach this client and check its packets), read the
//! accepted line and the admin's four message lines, then follow the client list updates
//! (`add ip:`, `remove ip:`, `name ip:`). The game itself:
//! - **slotserver**: peer to peer, exactly the peer protocol's game loop (a mesh session with a
//!   link to every player the server lists); the slotserver never sees a game packet;
//! - **gameserver**: every packet goes to the server's UDP port (a star session); the server
//!   relays.
//!
//! A refusal or a lost connection becomes an error or disconnect event with the server's words.
//! A new name is asked of the server and told to the others only once it accepts (`renames`).
//! The others' names are what the server's lines say (`add ip:`, `name ip:`), in their order;
//! their RE_PLAYERNAME copies change nothing here (`Session::take_names_from_server`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, NetError, NetResult};
use crate::protocol::held_updates::HeldUpdates;
use crate::protocol::renames::Renames;
use crate::protocol::{
    ClientProtocol, ConnectParams, NameRefusal, NameUpdate, ProtocolKind, StreamCommand,
    StreamEvent,
};
use crate::rmev::PlayerName;
use crate::server::text_protocol as text;
use crate::session::{GameEvent, LocalPlayer, NodeEq, Session};
use crate::wire::{decode_packet, WireEvent};
use crate::Node;

/// The design's default TCP ports.
pub const SLOTSERVER_PORT: u16 = 6582;
pub const GAMESERVER_TCP_PORT: u16 = 6581;
/// The design's gameserver UDP port (used when the server does not say).
pub const GAMESERVER_UDP_PORT: u16 = 6522;
/// The clients' UDP port in the design (assumed for players the server lists without a port).
const DESIGN_CLIENT_PORT: u16 = 6526;
/// How long the TCP connection to the server may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server may take to answer the join line, counted from the moment the
/// connection opened: a lossy path can cost TCP several seconds per lost segment, so this is as
/// long as the silence a joined session survives (the server itself waits 30 s for the line).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// The admin's message lines after an accepted join.
const MESSAGE_LINES: u8 = 4;
/// How long the join after a backend switch is sent again while the server says the player's
/// name is taken, and how often. The server may read the new connection's join before the old
/// connection's `remove me` (two TCP connections, no order between them): the name is then
/// still the player's own earlier seat's. After the window the refusal stands (someone else
/// took the name).
const SWITCH_NAME_RETRY_WINDOW: Duration = Duration::from_secs(5);
const SWITCH_NAME_RETRY_EVERY: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting { since: Instant },
    Joining { since: Instant },
    Joined,
}

/// Counters shown by `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerClientStats {
    pub lines_received: u64,
    pub lines_not_understood: u64,
    pub packets_rejected: u64,
    pub bad_packets: u64,
}

/// The slotserver or gameserver client module.
pub struct ServerClient {
    kind: ProtocolKind,
    phase: Phase,
    params: Option<ConnectParams>,
    server_peer: Option<SocketAddr>,
    server_name: String,
    messages_left: u8,
    session: Option<Session>,
    stream_out: VecDeque<StreamCommand>,
    events: VecDeque<GameEvent>,
    renames: Renames,
    scratch: Vec<WireEvent>,
    stats: ServerClientStats,
    /// Each listed player's address as the server's lines name it (slot, node). A player's own
    /// packets may move it elsewhere in the session (peer to peer, the slotserver never knows),
    /// so the server's `remove ip:` and `name ip:` lines are matched here first.
    announced: Vec<(u8, Node)>,
    /// A switch's join the server refused as "name already taken" (see
    /// `SWITCH_NAME_RETRY_WINDOW`): when the join goes out again (None: sent, waiting for the
    /// answer), and until when a refusal is retried.
    rejoin: Option<(Option<Instant>, Instant)>,
    /// Whether the server tells departures in band (a gameserver that gave our extension: its
    /// relay sends RE_VACATED), so its `remove ip:` lines wait for that word (`held_updates`).
    departures_in_band: bool,
    /// The player-list lines waiting behind such a departure.
    held: HeldUpdates,
}

/// The parts of `join from NAME accepted, slot: N, server name: S[ udp: U token: T]`.
#[derive(Debug, PartialEq, Eq)]
pub struct Accepted {
    pub slot: u8,
    pub server_name: String,
    pub udp_port: Option<u16>,
    pub server_token: Option<u32>,
}

/// Parse the accepted line of a join.
pub fn parse_accepted(line: &str) -> Option<Accepted> {
    const SLOT_MARK: &str = " accepted, slot: ";
    let rest = line.strip_prefix("join from ")?;
    // The player's name comes first and may hold the mark itself ("ace accepted, slot: 1"), or
    // end with all of it but its last space ("ace accepted, slot:"), so that it overlaps the
    // real one: the slot is after the first mark, overlapping ones included, that is followed
    // by a number and the server name's mark (a name of at most 31 bytes cannot hold both).
    let (slot, rest) = (0..rest.len())
        .filter(|&at| rest.as_bytes()[at..].starts_with(SLOT_MARK.as_bytes()))
        .find_map(|at| {
            // `at` starts with a space: a character boundary.
            let (slot, rest) = rest[at + SLOT_MARK.len()..].split_once(", server name: ")?;
            Some((slot.parse::<u8>().ok()?, rest))
        })?;
    // Our servers' extension; a design server's name that only looks like it is its name.
    let ext = rest.rsplit_once(" udp: ").and_then(|(name, ext)| {
        let (udp, token) = ext.split_once(" token: ")?;
        Some((name, udp.parse().ok()?, token.parse().ok()?))
    });
    let (server_name, udp_port, server_token) = match ext {
        Some((name, udp, token)) => (name, Some(udp), Some(token)),
        None => (rest, None, None),
    };
    Some(Accepted {
        slot,
        server_name: server_name.to_string(),
        udp_port,
        server_token,
    })
}

/// A client-list update line.
#[derive(Debug, PartialEq, Eq)]
pub enum Update {
    Add {
        ip: String,
        name: String,
        slot: u8,
        port: Option<u16>,
        token: Option<u32>,
    },
    Remove {
        ip: String,
        port: Option<u16>,
    },
    Name {
        ip: String,
        name: String,
        port: Option<u16>,
    },
}

/// Split off our ` port: P[ token: T]` extension.
fn split_extension(line: &str) -> Option<(&str, Option<u16>, Option<u32>)> {
    match line.rsplit_once(" port: ") {
        None => Some((line, None, None)),
        Some((core, ext)) => match ext.split_once(" token: ") {
            Some((port, token)) => {
                Some((core, Some(port.parse().ok()?), Some(token.parse().ok()?)))
            }
            None => Some((core, Some(ext.parse().ok()?), None)),
        },
    }
}

/// Parse `add ip:`, `remove ip:` and `name ip:` lines.
pub fn parse_update(line: &str) -> Option<Update> {
    let (core, port, token) = split_extension(line)?;
    if let Some(rest) = core.strip_prefix("add ip: ") {
        let (ip, rest) = rest.split_once(" name: ")?;
        let (name, slot) = rest.rsplit_once(" in ")?;
        return Some(Update::Add {
            ip: ip.to_string(),
            name: name.to_string(),
            slot: slot.parse().ok()?,
            port,
            token,
        });
    }
    if let Some(ip) = core.strip_prefix("remove ip: ") {
        return Some(Update::Remove {
            ip: ip.to_string(),
            port,
        });
    }
    if let Some(rest) = core.strip_prefix("name ip: ") {
        let (ip, name) = rest.split_once(" name: ")?;
        return Some(Update::Name {
            ip: ip.to_string(),
            name: name.to_string(),
            port,
        });
    }
    None
}

/// The server's refusals, as the design words them.
const REFUSALS: [&str; 5] = [
    text::SERVER_FULL,
    text::INVALID_REQUEST,
    text::VERSION_INCOMPATIBLE,
    text::BANNED,
    text::NAME_TAKEN,
];

impl ServerClient {
    /// Why the server could not take `name` as it is, or `None`: its text protocol carries
    /// 1-31 printable ASCII characters and drops spaces at either end, so a name with them
    /// would reach the others changed (" ace" as "ace") while the player's own stays as set.
    fn unusable_name(&self, name: &PlayerName) -> Option<String> {
        let name = name.to_string();
        if crate::server::text_fields::name(&name).as_deref() == Some(name.as_str()) {
            return None;
        }
        Some(format!(
            "the name '{}' cannot be used on a {}: names there are 1-31 printable ASCII characters, without a space at either end, and without \" os: \" (not even as \"os: \" at the start or \" os:\" at the end)",
            name.escape_debug(),
            self.kind
        ))
    }
    pub fn new(kind: ProtocolKind) -> ServerClient {
        debug_assert!(kind.is_client_server());
        ServerClient {
            kind,
            phase: Phase::Idle,
            params: None,
            server_peer: None,
            server_name: String::new(),
            messages_left: 0,
            session: None,
            stream_out: VecDeque::new(),
            events: VecDeque::new(),
            renames: Renames::default(),
            scratch: Vec::new(),
            stats: ServerClientStats::default(),
            announced: Vec::new(),
            rejoin: None,
            departures_in_band: false,
            held: HeldUpdates::default(),
        }
    }

    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    fn node_eq(&self) -> NodeEq {
        let order =
            std::sync::Arc::clone(&self.params.as_ref().expect("params while active").order);
        std::sync::Arc::new(move |a: &Node, b: &Node| order(a, b) == std::cmp::Ordering::Equal)
    }

    /// End the TCP connection: `remove me` first once the join line has gone out (a join the
    /// server accepted just as we gave up must end as a leave, not as a dropped connection;
    /// before the answer a server says "you're not even joined", which does no harm).
    fn close_stream(&mut self) {
        self.renames.clear();
        self.held.clear();
        if matches!(self.phase, Phase::Joined | Phase::Joining { .. }) {
            self.stream_out
                .push_back(StreamCommand::SendLine("remove me".to_string()));
        }
        self.stream_out.push_back(StreamCommand::Close);
    }

    /// Whether a join refused as "name already taken" goes out again (a backend switch's
    /// reconnect, within `SWITCH_NAME_RETRY_WINDOW` of the first refusal); if so, when.
    fn join_again_later(&mut self, now: Instant) -> bool {
        let switching = self.params.as_ref().is_some_and(|p| p.resume.is_some());
        let until = self
            .rejoin
            .map_or(now + SWITCH_NAME_RETRY_WINDOW, |(_, until)| until);
        if !switching || now >= until {
            return false;
        }
        self.rejoin = Some((Some(now + SWITCH_NAME_RETRY_EVERY), until));
        true
    }

    fn fail(&mut self, text: String) {
        log::warn!("{}: {text}", self.kind);
        let joined = self.phase == Phase::Joined;
        self.close_stream();
        self.phase = Phase::Idle;
        self.session = None;
        if joined {
            self.events
                .push_back(GameEvent::Disconnected { reason: text });
        } else {
            self.events.push_back(GameEvent::Error { text });
        }
    }

    /// The join line; the OS is the build's `ARCH-OS` (`x86_64-linux`), as the servers report
    /// their own to masterservers.
    fn join_line(&self) -> String {
        let params = self.params.as_ref().expect("params while active");
        text::join_request(
            &params.name.to_string(),
            &crate::server::master_links::default_os(),
            Some(params.game_port),
            Some(params.token),
        )
    }

    /// Why a server that accepted the join is of the other kind than this client's protocol,
    /// or `None`. Our servers tell an extended client their UDP game port (0 for a
    /// slotserver), and both kinds take the same join: without this check a gameserver client
    /// on a slotserver sent its packets to a port nobody relays from, and a slotserver client
    /// on a gameserver played peer to peer beside the relay until the gameserver dropped it,
    /// both "connected" without a word. A design server says no port: it is taken as asked.
    fn other_kind(&self, accepted: &Accepted) -> Option<String> {
        let udp = accepted.udp_port?;
        let at = self
            .server_peer
            .map_or_else(|| "the server".to_string(), |p| p.to_string());
        let (is, why, should) = match self.kind {
            ProtocolKind::GameServer if udp == 0 => (
                ProtocolKind::SlotServer,
                "it has no UDP port for game packets".to_string(),
                "slotserver",
            ),
            ProtocolKind::SlotServer if udp != 0 => (
                ProtocolKind::GameServer,
                format!("it takes the game packets on UDP port {udp}"),
                "gameserver",
            ),
            _ => return None,
        };
        Some(format!(
            "{at} is a {is}, not a {} ({why}); choose `net.subsys {should}`, then connect again",
            self.kind
        ))
    }

    fn take_accepted(&mut self, now: Instant, accepted: Accepted) -> NetResult<()> {
        if let Some(text) = self.other_kind(&accepted) {
            return Err(NetError::new(ErrorCode::Unsupported, text));
        }
        let params = self.params.clone().expect("params while active");
        let me = LocalPlayer {
            slot: accepted.slot,
            token: params.token,
            name: params.name,
        };
        let mut session = match self.kind {
            ProtocolKind::GameServer => {
                let peer = self
                    .server_peer
                    .ok_or_else(|| NetError::new(ErrorCode::State, "no server address"))?;
                let udp = accepted
                    .udp_port
                    .filter(|p| *p != 0)
                    .unwrap_or(GAMESERVER_UDP_PORT);
                let server = (params.resolve)(&peer.ip().to_string(), udp).ok_or_else(|| {
                    NetError::new(
                        ErrorCode::Parse,
                        format!(
                            "the server's address {} is not a node of this backend",
                            peer.ip()
                        ),
                    )
                })?;
                Session::new_star(
                    params.session,
                    self.node_eq(),
                    me,
                    server,
                    accepted.server_token.unwrap_or(0),
                    now,
                )
            }
            _ => {
                let mut session = Session::new_mesh(params.session, self.node_eq(), me, now);
                session.set_same_host(std::sync::Arc::clone(&params.same_host));
                session
            }
        };
        // The others' names as the server's lines tell them, in order (see
        // `Session::take_names_from_server`).
        session.take_names_from_server();
        // What the session before a backend switch left (see `session::resume`).
        if let Some(state) = self.params.as_mut().and_then(|p| p.resume.take()) {
            session.set_resume_state(std::sync::Arc::unwrap_or_clone(state));
        }
        self.session = Some(session);
        self.announced.clear();
        self.held.clear();
        self.departures_in_band =
            self.kind == ProtocolKind::GameServer && accepted.server_token.is_some();
        self.server_name = accepted.server_name;
        self.phase = Phase::Joined;
        self.messages_left = MESSAGE_LINES;
        self.events.push_back(GameEvent::Connected {
            slot: accepted.slot,
        });
        log::info!(
            "{}: joined '{}' in slot {}",
            self.kind,
            self.server_name,
            accepted.slot
        );
        Ok(())
    }

    /// The node a player-list line names (the design's client port when it names none).
    fn node_named(&self, ip: &str, port: Option<u16>) -> Option<Node> {
        let params = self.params.as_ref()?;
        (params.resolve)(ip, port.unwrap_or(DESIGN_CLIENT_PORT))
    }

    /// The slot the server means by a line naming `ip`/`port`: as it named the player, else
    /// where the player is now.
    fn slot_named(&self, ip: &str, port: Option<u16>) -> Option<u8> {
        let node = self.node_named(ip, port)?;
        let node_eq = self.node_eq();
        self.announced
            .iter()
            .find(|(_, n)| node_eq(n, &node))
            .map(|(slot, _)| *slot)
            .or_else(|| self.session.as_ref()?.slot_at(&node))
    }

    /// Take a player-list line now, or behind a departure still waiting for the relay's word.
    fn queue_update(&mut self, now: Instant, update: Update) {
        if !self.departures_in_band {
            self.take_update(now, update);
            return;
        }
        self.held.push(update);
        self.take_held_updates(now);
    }

    /// Apply the held player-list lines that may go now, in order: a `remove ip:` waits while
    /// its player is still seated (the relay's RE_VACATED, behind the player's last events,
    /// has not come), at most `held_updates::DEPARTURE_WAIT`.
    fn take_held_updates(&mut self, now: Instant) {
        loop {
            let front_waits = match self.held.front() {
                None => return,
                Some(Update::Remove { ip, port }) => {
                    let slot = self.slot_named(ip, *port);
                    let session = self.session.as_ref();
                    // Still seated, and the relay's word did not come before its lines did.
                    let seated = slot.filter(|slot| {
                        session.is_some_and(|s| {
                            s.players().get(*slot).is_some() && !s.left_in_band(*slot)
                        })
                    });
                    if let (Some(slot), None) = (seated, self.held.deadline()) {
                        log::debug!(
                            "gameserver: 'remove ip: {ip}' waits for the relay's word that the \
                             player in slot {slot} left"
                        );
                    }
                    seated.is_some()
                }
                Some(_) => false,
            };
            let Some(update) = self.held.next(now, front_waits) else {
                return;
            };
            self.take_update(now, update);
        }
    }

    fn take_update(&mut self, now: Instant, update: Update) {
        if self.session.is_none() {
            return;
        }
        match update {
            Update::Add {
                ip,
                name,
                slot,
                port,
                token,
            } => {
                let (Some(node), Ok(name)) =
                    (self.node_named(&ip, port), PlayerName::new(name.as_bytes()))
                else {
                    self.stats.lines_not_understood += 1;
                    return;
                };
                self.announced.retain(|(s, _)| *s != slot);
                self.announced.push((slot, node));
                let Some(session) = self.session.as_mut() else {
                    return;
                };
                // The same player again at another address: the gameserver followed it there.
                let moved = self.kind == ProtocolKind::GameServer
                    && session.player_moved(slot, token.unwrap_or(0), node);
                if !moved {
                    session.add_player(now, slot, node, token.unwrap_or(0), name, false);
                }
            }
            Update::Remove { ip, port } => {
                if let Some(slot) = self.slot_named(&ip, port) {
                    self.announced.retain(|(s, _)| *s != slot);
                    if let Some(session) = self.session.as_mut() {
                        session.remove_player(slot, "left the server");
                    }
                }
            }
            Update::Name { ip, name, port } => {
                let found = self.slot_named(&ip, port);
                if let (Some(slot), Ok(name), Some(session)) = (
                    found,
                    PlayerName::new(name.as_bytes()),
                    self.session.as_mut(),
                ) {
                    session.rename_player(now, slot, name);
                }
            }
        }
    }

    fn take_line(&mut self, now: Instant, line: String) {
        self.stats.lines_received += 1;
        match self.phase {
            Phase::Joining { .. } => {
                if let Some(accepted) = parse_accepted(&line) {
                    if let Err(err) = self.take_accepted(now, accepted) {
                        self.fail(err.message);
                    }
                } else if line == text::NAME_TAKEN && self.join_again_later(now) {
                    log::info!(
                        "{}: the name is still taken by this player's seat before the switch; joining again",
                        self.kind
                    );
                } else if REFUSALS.contains(&line.as_str()) {
                    self.fail(format!("the server refused: {line}"));
                } else {
                    self.stats.lines_not_understood += 1;
                }
            }
            Phase::Joined if self.messages_left > 0 => {
                self.messages_left -= 1;
                if !line.trim().is_empty() {
                    self.events
                        .push_back(GameEvent::ServerMessage { text: line });
                }
            }
            Phase::Joined => match parse_update(&line) {
                Some(update) => self.queue_update(now, update),
                None if line == text::NEW_NAME_ACCEPTED => {
                    if let Some(session) = self.session.as_mut() {
                        self.renames.accepted(session);
                    }
                }
                None if line == text::NAME_TAKEN => {
                    if let Some(session) = self.session.as_mut() {
                        let text = self.renames.refused(session, &line);
                        self.events.push_back(GameEvent::Error { text });
                    }
                }
                // Once seated, only a rename can draw these (a server that reads the name
                // otherwise than this client, or that lost the seat): it is refused, and what
                // the game queued after it goes out.
                None if self.renames.waiting()
                    && (line == text::INVALID_REQUEST || line == text::NOT_JOINED) =>
                {
                    if let Some(session) = self.session.as_mut() {
                        let text = self.renames.refused(session, &line);
                        self.events.push_back(GameEvent::Error { text });
                    }
                }
                None => self.stats.lines_not_understood += 1,
            },
            Phase::Idle | Phase::Connecting { .. } => {}
        }
    }
}

impl ClientProtocol for ServerClient {
    fn kind(&self) -> ProtocolKind {
        self.kind
    }

    fn describe(&self) -> String {
        let server = self
            .params
            .as_ref()
            .and_then(|p| p.server.clone())
            .map(|(h, p)| crate::master::resolve::join_host_port(&h, p))
            .unwrap_or_default();
        match self.phase {
            Phase::Idle => "not connected".to_string(),
            Phase::Connecting { .. } => format!("connecting to {server}"),
            Phase::Joining { .. } => format!("joining {server}"),
            Phase::Joined => {
                let session = self.session.as_ref().expect("session when joined");
                format!(
                    "on '{}' ({server}), slot {}, {}, {}",
                    self.server_name,
                    session.my_slot(),
                    crate::game::counted(session.players().len() as u64, "other player"),
                    if session.is_joined() {
                        "joined"
                    } else {
                        "not joined"
                    }
                )
            }
        }
    }

    fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    fn resume_state_for_next(&self) -> Option<crate::session::ResumeState> {
        if let Some(session) = &self.session {
            return Some(session.resume_state_for_next());
        }
        super::pending_resume(self.is_active(), self.params.as_ref())
    }

    fn session_mut(&mut self) -> Option<&mut Session> {
        self.session.as_mut()
    }

    fn connect_params_mut(&mut self) -> Option<&mut ConnectParams> {
        self.params.as_mut()
    }

    fn is_active(&self) -> bool {
        !matches!(self.phase, Phase::Idle)
    }

    fn connect(&mut self, now: Instant, params: ConnectParams) -> NetResult<()> {
        if self.phase != Phase::Idle {
            return Err(NetError::new(
                ErrorCode::State,
                "already connected or connecting (disconnect first)",
            ));
        }
        let Some((host, port)) = params.server.clone() else {
            return Err(NetError::invalid(
                "no server set (net.server HOST[:PORT] or connect HOST[:PORT])",
            ));
        };
        // The server would answer only "you sent an invalid request": say what is wrong.
        if let Some(problem) = self.unusable_name(&params.name) {
            return Err(NetError::invalid(format!(
                "{problem} (choose another with `name NAME`)"
            )));
        }
        self.params = Some(params);
        self.session = None;
        self.server_peer = None;
        self.rejoin = None;
        self.stream_out.clear();
        self.stream_out
            .push_back(StreamCommand::Connect { host, port });
        self.phase = Phase::Connecting { since: now };
        Ok(())
    }

    fn disconnect(&mut self, _now: Instant, reason: &str) -> NetResult<()> {
        if self.phase == Phase::Idle {
            return Err(crate::protocol::not_in_game_error("disconnect"));
        }
        self.close_stream();
        self.phase = Phase::Idle;
        self.session = None;
        self.events.push_back(GameEvent::Disconnected {
            reason: reason.to_string(),
        });
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let mut events = std::mem::take(&mut self.scratch);
        match decode_packet(data, &mut events) {
            Ok(packet) => {
                if session.handle_packet(now, &from, &packet, &events).is_err() {
                    self.stats.packets_rejected += 1;
                }
            }
            Err(_) => self.stats.bad_packets += 1,
        }
        self.scratch = events;
        // The relay's word that a player left may have come.
        self.take_held_updates(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Connecting { since } if now >= since + CONNECT_TIMEOUT => {
                self.fail(format!(
                    "could not connect to the {} within {} s",
                    self.kind,
                    CONNECT_TIMEOUT.as_secs()
                ));
            }
            Phase::Joining { since } if now >= since + ANSWER_TIMEOUT => {
                self.fail(format!(
                    "no answer from the {} to the join within {} s",
                    self.kind,
                    ANSWER_TIMEOUT.as_secs()
                ));
            }
            Phase::Joining { .. } => {
                if let Some((Some(at), until)) = self.rejoin {
                    if now >= at {
                        self.rejoin = Some((None, until));
                        let line = self.join_line();
                        self.stream_out.push_back(StreamCommand::SendLine(line));
                    }
                }
            }
            Phase::Joined => {
                self.take_held_updates(now);
                if let Some(session) = self.session.as_mut() {
                    let (_, server_silent) = session.handle_timeout(now);
                    if server_silent {
                        self.fail("the gameserver stopped sending (timed out)".to_string());
                    }
                }
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(Node, usize)> {
        self.session.as_mut()?.poll_transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::Connecting { since } => Some(since + CONNECT_TIMEOUT),
            Phase::Joining { since } => {
                let again = self.rejoin.and_then(|(at, _)| at);
                Some(again.map_or(since + ANSWER_TIMEOUT, |at| at.min(since + ANSWER_TIMEOUT)))
            }
            Phase::Joined => [
                self.session.as_ref().and_then(Session::poll_timeout),
                self.held.deadline(),
            ]
            .into_iter()
            .flatten()
            .min(),
            _ => None,
        }
    }

    fn poll_event(&mut self) -> Option<GameEvent> {
        self.events
            .pop_front()
            .or_else(|| self.session.as_mut()?.poll_event())
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let names = self.session.as_ref().map(Session::name_order);
        vec![
            ("server lines", self.stats.lines_received),
            (
                "server lines not understood",
                self.stats.lines_not_understood,
            ),
            ("packets rejected", self.stats.packets_rejected),
            ("bad packets", self.stats.bad_packets),
            (
                "departures told in band",
                self.session
                    .as_ref()
                    .map_or(0, |s| s.stats().departures_in_band),
            ),
            ("departure lines that waited for it", self.held.waited),
            ("departure lines taken without it", self.held.timed_out),
            (
                "events that waited for a rename's line",
                names.map_or(0, |n| n.held),
            ),
            (
                "rename waits for the line that ran out",
                names.map_or(0, |n| n.timed_out),
            ),
            (
                "rename lines that waited for the player's events",
                names.map_or(0, |n| n.names_held),
            ),
            (
                "rename lines shown without the player's events",
                names.map_or(0, |n| n.names_timed_out),
            ),
        ]
    }

    fn poll_stream(&mut self) -> Option<StreamCommand> {
        self.stream_out.pop_front()
    }

    fn handle_stream(&mut self, now: Instant, event: StreamEvent) {
        match event {
            StreamEvent::Connected { peer } => {
                if let Phase::Connecting { .. } = self.phase {
                    self.server_peer = Some(peer);
                    let line = self.join_line();
                    self.stream_out.push_back(StreamCommand::SendLine(line));
                    // The answer's time starts now: a slow connect does not shorten it.
                    self.phase = Phase::Joining { since: now };
                }
            }
            StreamEvent::Line(line) => self.take_line(now, line),
            StreamEvent::Closed { reason } => match self.phase {
                Phase::Idle => {}
                // It never opened: the server was not reached (refused, unreachable, no route).
                Phase::Connecting { .. } => {
                    self.fail(format!("could not reach the {}: {reason}", self.kind))
                }
                _ => self.fail(format!(
                    "the {} closed the connection ({reason})",
                    self.kind
                )),
            },
        }
    }

    fn update_name(&mut self, name: PlayerName) -> NetResult<NameUpdate> {
        if self.phase != Phase::Joined {
            return Err(crate::protocol::not_in_game_error("update name"));
        }
        let Some(session) = self.session.as_ref() else {
            return Err(crate::protocol::not_in_game_error("update name"));
        };
        // Asked anyway, the server would not answer with a refusal the player hears of: the
        // rename would be lost without a word.
        if let Some(problem) = self.unusable_name(&name) {
            return Err(NetError::invalid(format!(
                "update name: {problem}; your name stays '{}'",
                session.my_name().to_string().escape_debug()
            )));
        }
        self.stream_out
            .push_back(StreamCommand::SendLine(format!("my new name: {name}")));
        if let Some(session) = self.session.as_mut() {
            self.renames.asked(name, session);
        }
        Ok(NameUpdate::AskedServer)
    }

    fn poll_name_refusal(&mut self) -> Option<NameRefusal> {
        self.renames.poll_refusal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rmev::RemoteEvent;

    #[test]
    fn accepted_lines_parse_with_and_without_the_extension() {
        assert_eq!(
            parse_accepted("join from sid accepted, slot: 2, server name: TestServer"),
            Some(Accepted {
                slot: 2,
                server_name: "TestServer".into(),
                udp_port: None,
                server_token: None
            })
        );
        assert_eq!(
            parse_accepted(
                "join from a b accepted, slot: 15, server name: My Server udp: 6522 token: 77"
            ),
            Some(Accepted {
                slot: 15,
                server_name: "My Server".into(),
                udp_port: Some(6522),
                server_token: Some(77)
            })
        );
        assert_eq!(
            parse_accepted("join from x accepted, slot: 300, server name: s"),
            None
        );
        assert_eq!(parse_accepted("server full"), None);
    }

    /// Regression (fuzz: client_lines): a player named "q accepted, slot: 1" (a name the
    /// servers take) could not read its own accepted line, and a design server whose name held
    /// " udp: " was not understood at all.
    #[test]
    fn accepted_lines_parse_whatever_the_names_hold() {
        let accepted = |slot, name: &str, ext: Option<(u16, u32)>| Accepted {
            slot,
            server_name: name.into(),
            udp_port: ext.map(|e| e.0),
            server_token: ext.map(|e| e.1),
        };
        assert_eq!(
            parse_accepted("join from q accepted, slot: 1 accepted, slot: 5, server name: srv"),
            Some(accepted(5, "srv", None))
        );
        assert_eq!(
            parse_accepted("join from q accepted, slot: accepted, slot: 5, server name: 1"),
            Some(accepted(5, "1", None))
        );
        assert_eq!(
            parse_accepted(
                "join from a, server name: b accepted, slot: 3, server name: c udp: 1 token: 2"
            ),
            Some(accepted(3, "c", Some((1, 2))))
        );
        assert_eq!(
            parse_accepted("join from a accepted, slot: 0, server name: my udp: server"),
            Some(accepted(0, "my udp: server", None))
        );
    }

    #[test]
    fn update_lines_parse_as_the_design_writes_them_and_with_ports() {
        assert_eq!(
            parse_update("add ip: 192.168.1.1 name: msh in 0"),
            Some(Update::Add {
                ip: "192.168.1.1".into(),
                name: "msh".into(),
                slot: 0,
                port: None,
                token: None
            })
        );
        assert_eq!(
            parse_update("add ip: 127.0.0.1 name: big in 3 port: 7001 token: 9"),
            Some(Update::Add {
                ip: "127.0.0.1".into(),
                name: "big".into(),
                slot: 3,
                port: Some(7001),
                token: Some(9)
            })
        );
        assert_eq!(
            parse_update("remove ip: 192.168.1.1"),
            Some(Update::Remove {
                ip: "192.168.1.1".into(),
                port: None
            })
        );
        assert_eq!(
            parse_update("remove ip: 127.0.0.1 port: 7001"),
            Some(Update::Remove {
                ip: "127.0.0.1".into(),
                port: Some(7001)
            })
        );
        assert_eq!(
            parse_update("name ip: 192.168.1.1 name: maverick"),
            Some(Update::Name {
                ip: "192.168.1.1".into(),
                name: "maverick".into(),
                port: None
            })
        );
        assert_eq!(parse_update("add ip: 1.2.3.4 name: x in notaslot"), None);
        assert_eq!(parse_update("hello"), None);
    }

    /// A gameserver client that has asked to connect at `start`.
    fn connecting(start: Instant) -> ServerClient {
        let mut client = ServerClient::new(ProtocolKind::GameServer);
        client
            .connect(start, params_named("maverick"))
            .expect("connect starts");
        client
    }

    #[test]
    fn a_name_the_server_could_not_read_is_refused_before_connecting() {
        let mut client = ServerClient::new(ProtocolKind::SlotServer);
        let err = client
            .connect(Instant::now(), params_named("Jürgen"))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(
            err.message
                .starts_with("the name 'Jürgen' cannot be used on a slotserver: "),
            "{}",
            err.message
        );
        assert!(!client.is_active());
        assert!(client.poll_stream().is_none(), "nothing was sent");
        assert!(client
            .connect(Instant::now(), params_named("Juergen"))
            .is_ok());
    }

    fn params_named(name: &str) -> ConnectParams {
        ConnectParams {
            target: None,
            broadcast: None,
            local_node: Node::default(),
            name: PlayerName::new(name.as_bytes()).unwrap(),
            token: 7,
            order: std::sync::Arc::new(|a: &Node, b: &Node| a.bytes.cmp(&b.bytes)),
            same_host: std::sync::Arc::new(|a: &Node, b: &Node| a == b),
            session: crate::session::SessionConfig::default(),
            server: Some(("10.0.0.1".into(), GAMESERVER_TCP_PORT)),
            game_port: 6526,
            resolve: std::sync::Arc::new(|_, _| Some(Node::default())),
            resume: None,
        }
    }

    /// The client's TCP connection to the server opens at `at`; the stream commands it gave.
    fn opened(client: &mut ServerClient, at: Instant) -> Vec<StreamCommand> {
        let peer: SocketAddr = "10.0.0.1:6581".parse().unwrap();
        client.handle_stream(at, StreamEvent::Connected { peer });
        std::iter::from_fn(|| client.poll_stream()).collect()
    }

    fn errors(client: &mut ServerClient) -> Vec<String> {
        std::iter::from_fn(|| client.poll_event())
            .filter_map(|e| match e {
                GameEvent::Error { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    /// Run the client's timers at `at` (as the driver does when its timeout comes).
    fn tick(client: &mut ServerClient, at: Instant) {
        if client.poll_timeout().is_some_and(|t| t <= at) {
            client.handle_timeout(at);
        }
    }

    #[test]
    fn a_refused_connection_says_the_server_was_not_reached() {
        let start = Instant::now();
        let mut client = connecting(start);
        client.handle_stream(
            start,
            StreamEvent::Closed {
                reason: "cannot connect to 10.0.0.1:6581: Connection refused".into(),
            },
        );
        assert_eq!(
            errors(&mut client),
            ["could not reach the gameserver: cannot connect to 10.0.0.1:6581: Connection refused"]
        );
        assert!(!client.is_active());
    }

    #[test]
    fn a_connection_that_never_opens_fails_after_the_connect_time() {
        let start = Instant::now();
        let mut client = connecting(start);
        tick(
            &mut client,
            start + CONNECT_TIMEOUT - Duration::from_millis(1),
        );
        assert!(errors(&mut client).is_empty());
        tick(&mut client, start + CONNECT_TIMEOUT);
        assert_eq!(
            errors(&mut client),
            ["could not connect to the gameserver within 10 s"]
        );
        assert!(!client.is_active());
    }

    /// A connection that took most of the connect time to open (its SYN lost again and again)
    /// still gets the whole answer time for the join line; the answer then seats the player.
    #[test]
    fn a_slow_connect_does_not_shorten_the_wait_for_the_join_answer() {
        let start = Instant::now();
        let mut client = connecting(start);
        let at = start + Duration::from_secs(9);
        let sent = opened(&mut client, at);
        // The OS is the build's (`x86_64-linux`), not the library's name.
        let join = format!(
            "join me: maverick os: {}-{} ",
            std::env::consts::ARCH,
            std::env::consts::OS
        );
        assert!(
            matches!(&sent[..], [StreamCommand::Connect { .. }, StreamCommand::SendLine(l)] if l.contains(&join)),
            "{sent:?}"
        );
        let late = at + ANSWER_TIMEOUT - Duration::from_millis(1);
        tick(&mut client, late);
        assert!(errors(&mut client).is_empty());
        client.handle_stream(
            late,
            StreamEvent::Line(
                "join from maverick accepted, slot: 2, server name: s udp: 6522 token: 5".into(),
            ),
        );
        assert!(matches!(
            client.poll_event(),
            Some(GameEvent::Connected { slot: 2 })
        ));
        assert!(
            client.describe().starts_with("on 's'"),
            "{}",
            client.describe()
        );
    }

    fn stream_commands(client: &mut ServerClient) -> Vec<StreamCommand> {
        std::iter::from_fn(|| client.poll_stream()).collect()
    }

    /// What a client that leaves after its join line went out must say: `remove me`, then close.
    fn says_remove_me_and_closes(commands: &[StreamCommand]) -> bool {
        matches!(commands, [StreamCommand::SendLine(l), StreamCommand::Close] if l == "remove me")
    }

    /// A client whose join line went out at the returned time, unanswered (commands taken).
    fn joining() -> (ServerClient, Instant) {
        let start = Instant::now();
        let mut client = connecting(start);
        let at = start + Duration::from_secs(1);
        opened(&mut client, at);
        stream_commands(&mut client);
        (client, at)
    }

    /// A client reconnecting after a backend switch (it carries the session's resume state),
    /// its join line out at the returned time, and that line.
    fn joining_after_a_switch() -> (ServerClient, Instant, String) {
        let start = Instant::now();
        let mut client = ServerClient::new(ProtocolKind::GameServer);
        let mut params = params_named("maverick");
        params.resume = Some(std::sync::Arc::new(crate::session::ResumeState::default()));
        client.connect(start, params).expect("connect starts");
        let at = start + Duration::from_millis(10);
        let sent = opened(&mut client, at);
        let Some(StreamCommand::SendLine(join)) = sent.last() else {
            panic!("no join line: {sent:?}");
        };
        (client, at, join.clone())
    }

    /// The server read the new connection's join before the old connection's `remove me`: the
    /// name is this player's own, still seated. The join goes out again until the old seat is
    /// gone, and the switch ends in the game rather than outside it.
    #[test]
    fn a_switch_join_refused_for_its_own_earlier_seat_is_sent_again() {
        let (mut client, at, join) = joining_after_a_switch();
        client.handle_stream(at, StreamEvent::Line("name already taken".into()));
        assert!(errors(&mut client).is_empty());
        assert!(client.is_active());
        tick(
            &mut client,
            at + SWITCH_NAME_RETRY_EVERY - Duration::from_millis(1),
        );
        assert!(stream_commands(&mut client).is_empty());
        let again = at + SWITCH_NAME_RETRY_EVERY;
        assert_eq!(client.poll_timeout(), Some(again));
        tick(&mut client, again);
        assert_eq!(
            stream_commands(&mut client),
            [StreamCommand::SendLine(join)]
        );
        client.handle_stream(
            again,
            StreamEvent::Line(
                "join from maverick accepted, slot: 1, server name: s udp: 6522 token: 5".into(),
            ),
        );
        assert!(matches!(
            client.poll_event(),
            Some(GameEvent::Connected { slot: 1 })
        ));
    }

    /// Someone else has the name: after the retry window the refusal stands, as at once for a
    /// connect that is no switch.
    #[test]
    fn a_switch_join_whose_name_stays_taken_is_refused_after_the_retry_window() {
        let (mut client, at, join) = joining_after_a_switch();
        let mut now = at;
        loop {
            client.handle_stream(now, StreamEvent::Line("name already taken".into()));
            let errors = errors(&mut client);
            if !errors.is_empty() {
                assert_eq!(errors, ["the server refused: name already taken"]);
                break;
            }
            assert!(
                now < at + SWITCH_NAME_RETRY_WINDOW,
                "still retrying at {:?}",
                now - at
            );
            now = client.poll_timeout().expect("a retry is due");
            tick(&mut client, now);
            assert_eq!(
                stream_commands(&mut client),
                [StreamCommand::SendLine(join.clone())]
            );
        }
        assert!(now >= at + SWITCH_NAME_RETRY_WINDOW - SWITCH_NAME_RETRY_EVERY);
        assert!(!client.is_active());

        let (mut fresh, at) = joining();
        fresh.handle_stream(at, StreamEvent::Line("name already taken".into()));
        assert_eq!(
            errors(&mut fresh),
            ["the server refused: name already taken"]
        );
    }

    #[test]
    fn a_server_that_never_answers_the_join_fails_after_the_answer_time() {
        let (mut client, at) = joining();
        tick(&mut client, at + ANSWER_TIMEOUT);
        assert_eq!(
            errors(&mut client),
            ["no answer from the gameserver to the join within 20 s"]
        );
        // The server may accept the join just as the client gives up: it leaves properly.
        let closing = stream_commands(&mut client);
        assert!(says_remove_me_and_closes(&closing), "{closing:?}");
    }

    /// A client seated in slot 2 of a gameserver, with "goose" in slot 3 (events and commands
    /// so far taken).
    fn seated() -> (ServerClient, Instant) {
        let (mut client, at) = joining();
        let accepted = "join from maverick accepted, slot: 2, server name: s udp: 6522 token: 5";
        client.handle_stream(at, StreamEvent::Line(accepted.into()));
        meet_goose(&mut client, at);
        stream_commands(&mut client);
        (client, at)
    }

    /// The four message lines after an accepted join, then "goose" in slot 3 (the events taken).
    fn meet_goose(client: &mut ServerClient, at: Instant) {
        for line in [
            "",
            "",
            "",
            "",
            "add ip: 10.0.0.9 name: goose in 3 port: 7000 token: 9",
        ] {
            client.handle_stream(at, StreamEvent::Line(line.into()));
        }
        while client.poll_event().is_some() {}
    }

    /// The relay's packet to a seated client (`seated`: server token 5) relaying `events` from
    /// `slot`, the `sequence`th on the link; the events' reliable ids from `first_id` on.
    fn relayed(slot: u8, sequence: u32, first_id: u32, events: Vec<RemoteEvent>) -> Vec<u8> {
        let header = crate::wire::PacketHeader {
            kind: crate::wire::PacketType::GameState,
            sender_slot: Some(slot),
            joined: true,
            sequence,
            ack: None,
            token: 5,
        };
        let events: Vec<WireEvent> = events
            .into_iter()
            .enumerate()
            .map(|(i, event)| WireEvent {
                reliable_id: Some(first_id + i as u32),
                event,
            })
            .collect();
        let mut buf = [0u8; 1400];
        let len = crate::wire::encode_packet(&mut buf, &header, None, &events).unwrap();
        buf[..len].to_vec()
    }

    fn game_events(client: &mut ServerClient) -> Vec<GameEvent> {
        std::iter::from_fn(|| client.poll_event()).collect()
    }

    fn departure_then_newcomer(client: &mut ServerClient, at: Instant) {
        for line in [
            "remove ip: 10.0.0.9 port: 7000",
            "add ip: 10.0.0.10 name: iceman in 3 port: 7001 token: 11",
        ] {
            client.handle_stream(at, StreamEvent::Line(line.into()));
        }
    }

    #[test]
    fn a_gameserver_departure_line_waits_for_the_relays_word_at_most_the_departure_wait() {
        use crate::protocol::held_updates::DEPARTURE_WAIT;
        let (mut client, at) = seated();
        departure_then_newcomer(&mut client, at);
        // goose is still seated, and the newcomer's line waits behind its departure.
        assert_eq!(game_events(&mut client), vec![]);
        let later = at + DEPARTURE_WAIT - Duration::from_millis(1);
        client.handle_timeout(later);
        assert_eq!(game_events(&mut client), vec![]);
        assert!(client.poll_timeout().unwrap() <= at + DEPARTURE_WAIT);
        client.handle_timeout(at + DEPARTURE_WAIT);
        let events = game_events(&mut client);
        assert!(
            matches!(
                &events[..],
                [
                    GameEvent::PlayerDisconnected { slot: 3, .. },
                    GameEvent::PlayerConnected { slot: 3, name }
                ] if name.to_string() == "iceman"
            ),
            "{events:?}"
        );
        let counters = client.counters();
        assert!(counters.contains(&("departure lines taken without it", 1)));
    }

    #[test]
    fn the_relays_word_tells_the_departure_behind_the_players_events_and_frees_the_lines_after_it()
    {
        let (mut client, at) = seated();
        departure_then_newcomer(&mut client, at);
        let text =
            |t: &str| RemoteEvent::SendText(crate::rmev::ChatText::new(t.as_bytes()).unwrap());
        // A word about an earlier player of the slot than goose changes nothing.
        let stale = relayed(3, 1, 1, vec![RemoteEvent::Vacated { told: 1234 }]);
        client.handle_datagram(at, Node::default(), &stale);
        assert_eq!(game_events(&mut client), vec![]);
        // goose's last chat, then the relay's word that goose (told id 9) left.
        let last = relayed(3, 2, 2, vec![text("bye"), RemoteEvent::Vacated { told: 9 }]);
        client.handle_datagram(at, Node::default(), &last);
        let events = game_events(&mut client);
        assert!(
            matches!(
                &events[..],
                [
                    GameEvent::Remote { slot: 3, event },
                    GameEvent::PlayerDisconnected { slot: 3, .. },
                    GameEvent::PlayerConnected { slot: 3, name },
                ] if *event == text("bye") && name.to_string() == "iceman"
            ),
            "{events:?}"
        );
        let counters = client.counters();
        assert!(counters.contains(&("departures told in band", 1)));
        assert!(counters.contains(&("departure lines that waited for it", 1)));
        assert!(counters.contains(&("departure lines taken without it", 0)));
    }

    #[test]
    fn a_departure_word_before_the_players_lines_gives_it_its_events_and_the_next_one_the_rest() {
        // A client that was stopped reads its datagrams before its TCP lines: the relay's word
        // that goose left comes before the line that seats it.
        let (mut client, at) = joining();
        let accepted = "join from maverick accepted, slot: 2, server name: s udp: 6522 token: 5";
        for line in [accepted, "", "", "", ""] {
            client.handle_stream(at, StreamEvent::Line(line.into()));
        }
        game_events(&mut client);
        let text =
            |t: &str| RemoteEvent::SendText(crate::rmev::ChatText::new(t.as_bytes()).unwrap());
        let goose = relayed(3, 1, 1, vec![text("bye"), RemoteEvent::Vacated { told: 9 }]);
        client.handle_datagram(at, Node::default(), &goose);
        let next = relayed(3, 2, 3, vec![text("hi")]);
        client.handle_datagram(at, Node::default(), &next);
        assert_eq!(
            game_events(&mut client),
            vec![],
            "both wait for their players"
        );
        for line in [
            "add ip: 10.0.0.9 name: goose in 3 port: 7000 token: 9",
            "remove ip: 10.0.0.9 port: 7000",
            "add ip: 10.0.0.9 name: iceman in 3 port: 7000 token: 11",
        ] {
            client.handle_stream(at, StreamEvent::Line(line.into()));
        }
        let events = game_events(&mut client);
        assert!(
            matches!(
                &events[..],
                [
                    GameEvent::PlayerConnected { slot: 3, name: first },
                    GameEvent::Remote { slot: 3, event: bye },
                    GameEvent::PlayerDisconnected { slot: 3, .. },
                    GameEvent::PlayerConnected { slot: 3, name: second },
                    GameEvent::Remote { slot: 3, event: hi },
                ] if first.to_string() == "goose" && *bye == text("bye")
                    && second.to_string() == "iceman" && *hi == text("hi")
            ),
            "{events:?}"
        );
        assert!(client
            .counters()
            .contains(&("departure lines taken without it", 0)));
    }

    #[test]
    fn a_slotserver_departure_line_is_taken_at_once() {
        let (mut client, _) = answered(
            ProtocolKind::SlotServer,
            "join from maverick accepted, slot: 2, server name: s",
        );
        let at = Instant::now();
        meet_goose(&mut client, at);
        client.handle_stream(
            at,
            StreamEvent::Line("remove ip: 10.0.0.9 port: 7000".into()),
        );
        let events = game_events(&mut client);
        assert!(
            matches!(&events[..], [GameEvent::PlayerDisconnected { slot: 3, .. }]),
            "{events:?}"
        );
    }

    #[test]
    fn a_new_name_is_asked_of_the_server_and_told_to_the_others_once_accepted() {
        let (mut client, at) = seated();
        let told = |c: &ServerClient| c.session().unwrap().unacknowledged();
        let before = told(&client);
        let iceman = PlayerName::new(b"iceman").unwrap();
        let ask = |client: &mut ServerClient| {
            assert_eq!(client.update_name(iceman).unwrap(), NameUpdate::AskedServer);
            assert_eq!(
                stream_commands(client),
                [StreamCommand::SendLine("my new name: iceman".into())]
            );
        };
        ask(&mut client);
        assert_eq!(told(&client), before, "nobody is told before the answer");
        client.handle_stream(at, StreamEvent::Line("name already taken".into()));
        assert_eq!(
            client.poll_name_refusal(),
            Some(NameRefusal {
                refused: iceman,
                kept: PlayerName::new(b"maverick").unwrap()
            })
        );
        assert_eq!(
            errors(&mut client),
            ["the server refused the name 'iceman' (name already taken); your name stays 'maverick'"]
        );
        assert_eq!(told(&client), before, "a refused name is not told");
        ask(&mut client);
        client.handle_stream(at, StreamEvent::Line("new name accepted".into()));
        assert_eq!(told(&client), before + 1, "an accepted name is told");
        assert_eq!(client.session().unwrap().my_name(), &iceman);
        assert_eq!(client.poll_name_refusal(), None);
    }

    /// A seated client that asked for the name "iceman" and then queued a chat line; with how
    /// many events the others had been told before.
    fn renamed_then_chatted() -> (ServerClient, Instant, usize) {
        let (mut client, at) = seated();
        let before = client.session().unwrap().unacknowledged();
        client
            .update_name(PlayerName::new(b"iceman").unwrap())
            .unwrap();
        stream_commands(&mut client);
        let chat = crate::rmev::ChatText::new(b"after the rename").unwrap();
        client
            .session_mut()
            .unwrap()
            .queue_event(crate::rmev::RemoteEvent::SendText(chat))
            .unwrap();
        (client, at, before)
    }

    /// A rename the server answers with "you sent an invalid request" (it reads names otherwise
    /// than this client) is refused like a taken name, and the events the game queued after
    /// asking go out at once.
    #[test]
    fn a_rename_answered_as_an_invalid_request_is_refused_and_frees_the_events_after_it() {
        let (mut client, at, before) = renamed_then_chatted();
        let told = |c: &ServerClient| c.session().unwrap().unacknowledged();
        assert_eq!(told(&client), before, "the chat waits for the answer");
        client.handle_stream(at, StreamEvent::Line("you sent an invalid request".into()));
        assert_eq!(
            errors(&mut client),
            ["the server refused the name 'iceman' (you sent an invalid request); your name stays 'maverick'"]
        );
        assert_eq!(
            told(&client),
            before + 1,
            "the chat went out, without the name"
        );
        assert_eq!(client.session().unwrap().my_name().as_bytes(), b"maverick");
    }

    /// A server that never answers a rename holds the events queued after it for at most
    /// `NAME_HOLD` (5 s); then they go out without the name, and an answer coming later still
    /// tells the others the name.
    #[test]
    fn events_after_a_rename_the_server_never_answers_go_out_after_five_seconds() {
        let (mut client, at, before) = renamed_then_chatted();
        let told = |c: &ServerClient| c.session().unwrap().unacknowledged();
        let mut now = at;
        while now < at + Duration::from_millis(4900) {
            now += Duration::from_millis(50);
            tick(&mut client, now);
            assert_eq!(told(&client), before, "held at {:?}", now - at);
        }
        let deadline = client.poll_timeout().expect("a timer for the hold");
        assert!(
            deadline <= at + Duration::from_secs(5),
            "{:?}",
            deadline - at
        );
        tick(&mut client, at + Duration::from_secs(5));
        assert_eq!(told(&client), before + 1, "the chat went out after 5 s");
        client.handle_stream(now, StreamEvent::Line("new name accepted".into()));
        assert_eq!(
            told(&client),
            before + 2,
            "the late answer still tells the name"
        );
        assert_eq!(client.session().unwrap().my_name().as_bytes(), b"iceman");
    }

    #[test]
    fn leaving_while_the_join_is_unanswered_still_says_remove_me() {
        let (mut client, at) = joining();
        client.disconnect(at, "disconnected").unwrap();
        let closing = stream_commands(&mut client);
        assert!(says_remove_me_and_closes(&closing), "{closing:?}");
    }

    /// The client of one kind joined at 10.0.0.1:6581; the answer is `accepted`.
    fn answered(kind: ProtocolKind, accepted: &str) -> (ServerClient, Vec<GameEvent>) {
        let start = Instant::now();
        let mut client = ServerClient::new(kind);
        client.connect(start, params_named("maverick")).unwrap();
        opened(&mut client, start);
        stream_commands(&mut client);
        client.handle_stream(start, StreamEvent::Line(accepted.into()));
        let events = std::iter::from_fn(|| client.poll_event()).collect();
        (client, events)
    }

    #[test]
    fn a_server_of_the_other_kind_is_left_with_an_error_naming_it() {
        let (mut client, events) = answered(
            ProtocolKind::GameServer,
            "join from maverick accepted, slot: 0, server name: s udp: 0 token: 5",
        );
        assert!(
            matches!(&events[..], [GameEvent::Error { text }] if text == "10.0.0.1:6581 is a slotserver, not a gameserver (it has no UDP port for game packets); choose `net.subsys slotserver`, then connect again"),
            "{events:?}"
        );
        assert!(!client.is_active());
        assert!(says_remove_me_and_closes(&stream_commands(&mut client)));

        let (mut client, events) = answered(
            ProtocolKind::SlotServer,
            "join from maverick accepted, slot: 0, server name: s udp: 6522 token: 5",
        );
        assert!(
            matches!(&events[..], [GameEvent::Error { text }] if text == "10.0.0.1:6581 is a gameserver, not a slotserver (it takes the game packets on UDP port 6522); choose `net.subsys gameserver`, then connect again"),
            "{events:?}"
        );
        assert!(!client.is_active());
        assert!(says_remove_me_and_closes(&stream_commands(&mut client)));
    }

    #[test]
    fn a_server_of_the_same_kind_or_one_that_says_no_port_is_joined() {
        for (kind, line) in [
            (
                ProtocolKind::GameServer,
                "join from maverick accepted, slot: 0, server name: s udp: 6522 token: 5",
            ),
            (
                ProtocolKind::SlotServer,
                "join from maverick accepted, slot: 0, server name: s udp: 0 token: 5",
            ),
            (
                ProtocolKind::GameServer,
                "join from maverick accepted, slot: 0, server name: s",
            ),
            (
                ProtocolKind::SlotServer,
                "join from maverick accepted, slot: 0, server name: s",
            ),
        ] {
            let (client, events) = answered(kind, line);
            assert!(
                matches!(&events[..], [GameEvent::Connected { slot: 0 }]),
                "{kind} {line}: {events:?}"
            );
            assert!(client.is_active());
        }
    }
}
