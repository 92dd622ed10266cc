//! The protocol layer: which game protocol is bound (peer-to-peer, slotserver, gameserver) and
//! the interface every client protocol module implements.
//!
//! A protocol module is a sans-IO state machine: the driver (the `Subsystem`) passes `now`, feeds
//! it game packets (`handle_datagram`), runs its timers (`handle_timeout` when `poll_timeout` has
//! come), and sends what `poll_transmit` yields; events for the game come from `poll_event`.
//! Until a protocol is selected with `net.subsys`, the "no protocol selected" answer is given.

pub mod held_updates;
pub mod peer;
pub mod renames;
pub mod server_client;

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::PlayerName;
use crate::session::{GameEvent, Session, SessionConfig};
use crate::Node;

/// The protocol modules that can be bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ProtocolKind {
    /// Nothing selected: every protocol call fails with `NoProtocol`.
    Unselected = 0,
    Peer = 1,
    SlotServer = 2,
    GameServer = 3,
}

impl ProtocolKind {
    /// The console name (`net.subsys NAME`).
    pub fn console_name(self) -> &'static str {
        match self {
            ProtocolKind::Unselected => "none",
            ProtocolKind::Peer => "peer",
            ProtocolKind::SlotServer => "slotserver",
            ProtocolKind::GameServer => "gameserver",
        }
    }

    /// Parse a `net.subsys` argument.
    pub fn from_console_name(name: &str) -> Option<ProtocolKind> {
        // Any letter case, as command names (`net.subsys GameServer`).
        match name.to_ascii_lowercase().as_str() {
            "peer" => Some(ProtocolKind::Peer),
            "slotserver" => Some(ProtocolKind::SlotServer),
            "gameserver" => Some(ProtocolKind::GameServer),
            _ => None,
        }
    }

    /// Whether the protocol needs a client-server capable backend.
    pub fn is_client_server(self) -> bool {
        matches!(self, ProtocolKind::SlotServer | ProtocolKind::GameServer)
    }
}

impl fmt::Display for ProtocolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.console_name())
    }
}

/// The error every protocol call gets while no protocol is selected.
pub fn no_protocol_error(call: &str) -> NetError {
    NetError::new(
        ErrorCode::NoProtocol,
        format!(
            "{call}: no protocol selected (choose one with net.subsys peer|slotserver|gameserver)"
        ),
    )
}

/// The error of a call that needs a game when there is none (`NET_ERR_NOT_CONNECTED`).
pub fn not_in_game_error(call: &str) -> NetError {
    NetError::new(
        ErrorCode::NotConnected,
        format!("{call}: not connected to a game"),
    )
}

/// What a connect still under way (no session yet) leaves for the next session: what it was
/// given by an earlier backend switch, with its own token as an earlier one, since a player may
/// have seated it before the reply came (see `ClientProtocol::resume_state_for_next`).
pub(crate) fn pending_resume(
    active: bool,
    params: Option<&ConnectParams>,
) -> Option<crate::session::ResumeState> {
    let params = params.filter(|_| active)?;
    let mut state = params.resume.as_deref().cloned().unwrap_or_default();
    state.note_my_token(params.token);
    Some(state)
}

/// Turns an IP address text and a port (as a server names another player) into a node of the
/// active backend.
pub type NodeResolver = Arc<dyn Fn(&str, u16) -> Option<Node> + Send + Sync>;

/// What a client-server protocol asks the driver to do with its TCP connection to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamCommand {
    /// Open the connection.
    Connect { host: String, port: u16 },
    /// Send one line (the driver appends "\n").
    SendLine(String),
    /// Close the connection after sending what is queued.
    Close,
}

/// What happened to the TCP connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// Connected; `peer` is the server's address.
    Connected { peer: std::net::SocketAddr },
    /// One line from the server (without its terminator).
    Line(String),
    /// The connection failed or was closed, and why.
    Closed { reason: String },
}

/// How a new local name reaches the other players (`ClientProtocol::update_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameUpdate {
    /// They are told now (RE_PLAYERNAME).
    Told,
    /// The server is asked first (names are unique on a server); they are told once it
    /// accepts. A refusal comes as an error event, and the name in use stays.
    AskedServer,
}

/// A new local name the server refused, and the name that stays in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameRefusal {
    pub refused: PlayerName,
    pub kept: PlayerName,
}

/// The backend's total order of nodes, shared by the protocol machines.
pub type NodeOrder = Arc<dyn Fn(&Node, &Node) -> Ordering + Send + Sync>;

/// What a protocol needs to start connecting.
#[derive(Clone)]
pub struct ConnectParams {
    /// Where to send connect requests: a known node (`connect HOST:PORT`), or None for broadcast.
    pub target: Option<Node>,
    /// The backend's broadcast node, if it has broadcast.
    pub broadcast: Option<Node>,
    /// This client's node as the others see it (towards the target or the broadcast).
    pub local_node: Node,
    pub name: PlayerName,
    /// A random non-zero session token for this connection.
    pub token: u32,
    pub order: NodeOrder,
    /// Whether two nodes are on the same host (another port, another IPX socket): a player
    /// of a mesh is followed only there (NAT rebinding, see `Session::set_same_host`).
    pub same_host: crate::session::NodeSameHost,
    pub session: SessionConfig,
    /// Client-server protocols: the server's host and TCP port.
    pub server: Option<(String, u16)>,
    /// This client's UDP game port (told to servers so others can reach it).
    pub game_port: u16,
    pub resolve: NodeResolver,
    /// What the session before a backend switch left for the next mesh session (see
    /// `session::resume`); taken by the first session made from these parameters.
    pub resume: Option<Arc<crate::session::ResumeState>>,
}

/// A client protocol module (sans-IO).
pub trait ClientProtocol: Send {
    fn kind(&self) -> ProtocolKind;

    /// One line for `status`: what the protocol is doing ("in game, slot 2", "connecting (try 3 of 10)").
    fn describe(&self) -> String;

    /// The game session, once this client has a slot.
    fn session(&self) -> Option<&Session>;
    fn session_mut(&mut self) -> Option<&mut Session>;

    /// Whether a connect is under way or done (a second `connect` is refused).
    fn is_active(&self) -> bool;

    /// The parameters of the connect under way or done (None while idle): a session the
    /// protocol starts by itself (a peer's rejoin) is made from them.
    fn connect_params_mut(&mut self) -> Option<&mut ConnectParams>;

    /// `net.sendfreq` / `net.rate` typed while connecting or in a game: the game in progress
    /// uses them from now on, and so does every session this connect makes later by itself
    /// (a peer reconnecting after a lost slot conflict or after the others dropped it), not the
    /// values of the moment `connect` was typed.
    fn set_rates(&mut self, send_interval: std::time::Duration, receive_rate: u32) {
        if let Some(params) = self.connect_params_mut() {
            params.session.send_interval = send_interval;
            params.session.receive_rate = receive_rate;
        }
        if let Some(session) = self.session_mut() {
            session.set_send_interval(send_interval);
            session.set_receive_rate(receive_rate);
        }
    }

    /// What the next session must pick up if this one ends now for a backend switch (see
    /// `session::resume`): the session's, or, while still connecting, what the connect was
    /// given (an earlier switch's) with this attempt's token among the earlier ones (a player
    /// may have seated it already). None while idle.
    fn resume_state_for_next(&self) -> Option<crate::session::ResumeState> {
        self.session().map(Session::resume_state_for_next)
    }

    /// Start connecting. Progress and the outcome arrive as events (Connected or Error).
    fn connect(&mut self, now: Instant, params: ConnectParams) -> NetResult<()>;

    /// Leave: tell the others, drop the session. Emits Disconnected.
    fn disconnect(&mut self, now: Instant, reason: &str) -> NetResult<()>;

    /// A game packet arrived from `from`.
    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]);

    /// The time `poll_timeout` returned has come.
    fn handle_timeout(&mut self, now: Instant);

    /// The next datagram to send, written into `buf`: destination and length.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(Node, usize)>;

    /// When `handle_timeout` should run next.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The next event for the game.
    fn poll_event(&mut self) -> Option<GameEvent>;

    /// Counters for `status`, as `name value` pairs.
    fn counters(&self) -> Vec<(&'static str, u64)>;

    /// The next thing to do with the TCP connection to a server (client-server protocols).
    fn poll_stream(&mut self) -> Option<StreamCommand> {
        None
    }

    /// Something happened on the TCP connection to the server.
    fn handle_stream(&mut self, _now: Instant, _event: StreamEvent) {}

    /// Tell the others the local name `name`: peer-to-peer at once; client-server protocols
    /// ask the server first (`my new name:`) and tell the others once it accepts. Like
    /// `set_rates`, the name holds for every session this connect makes later by itself (a
    /// peer's rejoin asks for its seat and greets under it), not the name `connect` was given.
    fn update_name(&mut self, name: PlayerName) -> NetResult<NameUpdate> {
        let session = self
            .session_mut()
            .ok_or_else(|| not_in_game_error("update name"))?;
        session.set_name(name)?;
        if let Some(params) = self.connect_params_mut() {
            params.name = name;
        }
        Ok(NameUpdate::Told)
    }

    /// The next new name the server refused (the game's name goes back to the kept one).
    fn poll_name_refusal(&mut self) -> Option<NameRefusal> {
        None
    }
}
