//! The game loop every protocol shares once a client has its slot: the player table, one reliable
//! link per remote node, the local ship state, the outgoing remote events, and the events for the
//! game. Sans-IO: the owner passes `now`, feeds validated packets in and pulls datagrams out.
//!
//! Two shapes:
//! - **mesh** (peer-to-peer, slotserver): every remote player has its own link; state and events
//!   go unicast to each;
//! - **star** (gameserver): one link to the server; packets from the server carry the slot of the
//!   player they come from.
//!
//! Sending rules (the design's): while joined the ship state goes out at the send frequency and
//! only when it changed; a connected but unjoined node only keeps the link alive; remote events
//! go out with the next packet, which is sent at the next `poll_transmit` rather than waiting for
//! the state tick. Every link gets a keep-alive at least every `keepalive_interval`; a remote
//! silent for `peer_timeout` is dropped.
//!
//! This file holds the session's state, its constructors and what it tells its owner; the work
//! is split by direction and topic: `roster` (the player table's changes), `outgoing` (what the
//! local game sends), `receive` (packets in), `transmit` (packets out and timers),
//! `resume_steps` (RE_RESUME on a link) and `claims` (a newcomer's claim on earlier sessions).

mod claims;
pub mod early;
pub mod events;
pub mod link;
pub mod name_order;
mod outgoing;
pub mod parking;
pub mod players;
pub mod rate;
mod receive;
pub mod recent;
pub mod resume;
mod resume_steps;
mod roster;
mod transmit;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rmev::{PlayerName, RemoteEvent, ResumeStep, ShipState};
use crate::wire::PacketType;
use crate::Node;
pub use early::EarlyEvents;
pub use events::GameEvent;
pub use link::{
    Delivery, Link, LinkConfig, LinkStats, PacketMeta, PacketVerdict, RELIABLE_PACKET_WINDOW,
};
pub use players::{ObjectOwners, Player, PlayerTable};
pub use resume::{ParkedStream, ResumeState, ResumeStats};

/// How long a player's old address must have been silent before its packets may come from a
/// new one (NAT rebinding); while the old address is alive, a second source is an impostor.
pub const REBIND_SILENCE: Duration = Duration::from_millis(1000);

/// Whether a packet from an unknown address may move a known remote there: the token and slot
/// must be the remote's, the sequence newer than anything received, and the old address silent
/// for `REBIND_SILENCE`. A blind spoofer lacks the token; an on-path one still cannot take over
/// a live player.
pub fn may_rebind(
    link: &Link,
    token: u32,
    expected_token: u32,
    sequence: u32,
    last_heard: Instant,
    now: Instant,
) -> bool {
    expected_token != 0
        && token == expected_token
        && link.is_fresh(sequence)
        && now.saturating_duration_since(last_heard) >= REBIND_SILENCE
}

/// The longest gap between two calls into a session that counts as the process listening all
/// along (`Session::credit_own_stall`); a game frame is far shorter.
pub const OWN_STALL_ALLOWANCE: Duration = Duration::from_secs(1);

/// How long the link of a player displaced from its slot by another player's list is kept for
/// it to be seated again in another slot (`Session::add_player`); then it is parked.
pub const DISPLACED_KEEP: Duration = Duration::from_secs(5);

/// How many copies of what its links still owe a leaving player sends after its last packet
/// (`Session::farewell_copies`).
pub const FAREWELL_COPIES: usize = 2;

/// How far past the sequences of its earlier links a new link starts (more than the
/// acknowledgement window of 32 packets, see `LinkNumbering`).
const LINK_SEQUENCE_GAP: u32 = 64;

/// Where a sender's links start numbering: spread over the sequence space by the token, so two
/// sessions at one address (a player that reconnected with a new token) number their packets
/// far apart.
fn sequence_base(token: u32) -> u32 {
    let mut x = u64::from(token).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}

/// Where each new link of one sender (a session's mesh links, a star session's link to its
/// server, a relay's links to its clients) starts numbering its packets: past every sequence
/// the sender's links have used (by more than the acknowledgement window), from a base that
/// depends on the sender's token. So a packet someone wrote for an earlier session at the same
/// address acknowledges a sequence the new link never sent (and is refused, see
/// `Link::acks_this_link`), and a late packet of an earlier link of this sender is older than
/// the new link's by more than the window (dropped as stale).
#[derive(Clone, Copy, Debug)]
pub struct LinkNumbering {
    /// The sequences of the links so far end before this.
    floor: u32,
}

impl LinkNumbering {
    pub fn new(token: u32) -> LinkNumbering {
        LinkNumbering {
            floor: sequence_base(token),
        }
    }

    /// The first sequence of a new link, past the sender's `current` links and earlier ones.
    pub fn start<'a>(&mut self, current: impl IntoIterator<Item = &'a Link>) -> u32 {
        for link in current {
            self.retire(link);
        }
        let start = self.floor.wrapping_add(LINK_SEQUENCE_GAP).max(1);
        self.floor = start;
        start
    }

    /// A link ends: later links start past its sequences.
    pub fn retire(&mut self, link: &Link) {
        let next = link.next_sequence();
        if link::seq_before(self.floor, next) {
            self.floor = next;
        }
    }
}

/// Most earlier tokens of other players remembered (see `Session::retired_tokens`).
const MAX_RETIRED_TOKENS: usize = 64;

/// Most state updates kept for a tap that is not read.
const STATE_TAP_LIMIT: usize = 4096;
/// Star: how many ids of players the relay said left a session keeps (`left_in_band`).
const VACATED_KEPT: usize = 64;

/// How two nodes are compared for equality (the backend's comparison).
pub type NodeEq = Arc<dyn Fn(&Node, &Node) -> bool + Send + Sync>;

/// Whether two nodes are on the same host (another port or socket of one machine): the only
/// new address a mesh player is followed to (see `Session::set_same_host`).
pub type NodeSameHost = Arc<dyn Fn(&Node, &Node) -> bool + Send + Sync>;

/// Timing and size settings of a session.
#[derive(Clone, Copy, Debug)]
pub struct SessionConfig {
    /// 1 / state send frequency (`net.sendfreq`, 5-60 Hz; default 20 Hz).
    pub send_interval: Duration,
    /// Longest time a link goes without a packet (NODE_ALIVE while unjoined).
    pub keepalive_interval: Duration,
    /// A remote silent this long is dropped.
    pub peer_timeout: Duration,
    /// Largest packet (the backend's maximum payload).
    pub max_payload: usize,
    /// This client's receive rate in bytes per second (`net.rate`, 0: unlimited), told to
    /// every remote with RE_RATE.
    pub receive_rate: u32,
    pub link: LinkConfig,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            send_interval: Duration::from_millis(50),
            keepalive_interval: Duration::from_millis(500),
            peer_timeout: Duration::from_secs(20),
            max_payload: 1400,
            receive_rate: 0,
            link: LinkConfig {
                ack_with_next_frame: true,
                ..LinkConfig::default()
            },
        }
    }
}

/// Who this client is in the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalPlayer {
    pub slot: u8,
    /// This connection's session token (non-zero).
    pub token: u32,
    pub name: PlayerName,
}

/// Why an incoming packet was not taken by the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The sender is not a player (or not the server) of this session.
    UnknownSender,
    /// The sender's session token is not the one it connected with (spoofed or stale).
    WrongToken,
    /// The sender slot in the header is not the sender's slot.
    WrongSlot,
    /// A duplicate or stale packet (already handled or too old).
    Duplicate,
    /// A packet written for an earlier link with the sender (an earlier session of this client
    /// at the same address): it acknowledges a packet this link never sent (see
    /// `Link::acks_this_link`).
    OtherLink,
}

/// Counters of the session shown by `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    pub packets_sent: u64,
    pub packets_accepted: u64,
    pub packets_rejected: u64,
    pub events_sent: u64,
    pub events_received: u64,
    pub states_received: u64,
    pub players_timed_out: u64,
    /// Gaps between calls longer than the process's own stall allowance: the others' silence
    /// was counted without them (`Session::credit_own_stall`).
    pub own_stalls: u64,
    pub encode_errors: u64,
    /// Players whose packets moved to a new address (NAT rebinding).
    pub rebinds: u64,
    /// Packets from an unknown address claiming to be a player, refused.
    pub impostors: u64,
    /// RE_RESUME hellos that named a live player (heard from its own node all along) as the
    /// sender's earlier session: that player was not removed (see `handle_resume`).
    pub earlier_claims_refused: u64,
    /// Star: players removed on the relay's in-band word that they left (RE_VACATED).
    pub departures_in_band: u64,
}

/// One remote node the session exchanges packets with.
struct Remote {
    /// The player's slot (mesh), or None for the server (star).
    slot: Option<u8>,
    node: Node,
    token: u32,
    link: Link,
    last_sent: Option<Instant>,
    last_heard: Instant,
    /// The local state version last sent to this remote.
    state_version_sent: u64,
    /// When the local state last went to this remote: an unchanged state is sent again after
    /// `keepalive_interval` even while events keep packets flowing, so one lost packet never
    /// leaves a remote without the state.
    state_sent_at: Option<Instant>,
    /// The tick this remote last got a packet in.
    tick_served: u64,
    /// A JOIN/UNJOIN transition to announce with the next packet.
    pending_kind: Option<PacketType>,
    /// The RE_RESUME hello is still to be queued (with the first packet, when the session
    /// knows its earlier tokens).
    hello_due: bool,
    /// The game's events for this remote held back (and since when: its first packet, see
    /// `hold_ends_at`) until its answer says what to send again first (see `resume`).
    held: Option<(Vec<(u64, RemoteEvent)>, Instant)>,
    /// The parked streams with this remote found from its hello (oldest first), waiting for
    /// its answers.
    resuming: Vec<ParkedStream>,
    /// Its answers so far: (its token, this side's token, delivered id) per old link.
    answers: Vec<(u32, u32, u32)>,
    /// The session's serial when this remote was added (later events went to it).
    added_at_serial: u64,
    /// Its hello named a player still heard from at that player's own node as its earlier
    /// session: since when, and its RE_RESUME steps so far (the hello first), handled once that
    /// player has gone silent or left, or the claim is refused (see `settle_claims`).
    claim: Option<(Instant, Vec<ResumeStep>)>,
    /// The receive rate last told to this remote with RE_RATE (0: none told, unlimited).
    rate_told: u32,
    /// The receive rate this remote asked for (its RE_RATE) and what it has taken.
    budget: rate::RateBudget,
    /// Kept aside (displaced or removed) without ever hearing from its node, while no other
    /// player there had come on since: a new session seated at that node goes on with this
    /// link (see `Session::add_player`, `Session::node_moved_on`). Cleared for every link kept
    /// aside at a node once that node goes on with one of them.
    continues_at_node: bool,
}

/// The game loop of a connected client.
pub struct Session {
    config: SessionConfig,
    node_eq: NodeEq,
    /// Which new nodes a player may move to (NAT rebinding); None: none.
    same_host: Option<NodeSameHost>,
    my_slot: u8,
    my_token: u32,
    my_name: PlayerName,
    joined: bool,
    players: PlayerTable,
    remotes: Vec<Remote>,
    /// Links of players another player's list put someone else in the slot of, kept for
    /// [`DISPLACED_KEEP`] with when they were displaced (see `add_player`).
    displaced: Vec<(Remote, Instant)>,
    star: bool,
    owners: ObjectOwners,
    local_state: ShipState,
    state_version: u64,
    tick: u64,
    next_tick: Instant,
    next_remote: usize,
    events: VecDeque<GameEvent>,
    /// The removed players of the PlayerDisconnected events in `events`, in order (slot, token,
    /// name as the lookups showed it): the game's lookups still answer with them until the game
    /// polls that event (see `take_departure`).
    departures: VecDeque<(u8, u32, PlayerName)>,
    protocol_events: VecDeque<(u8, RemoteEvent)>,
    deliveries: Vec<Delivery>,
    /// Remote state updates, kept only while someone taps them (demo recording).
    state_tap: Option<VecDeque<(u8, ShipState)>>,
    /// Streams of links that ended, and this side's earlier tokens (mesh).
    resume: ResumeState,
    /// Events queued by `queue_event` so far, across the sessions of one backend switch chain
    /// (the serial of each, see `resume`).
    game_event_serial: u64,
    /// Tokens players left behind (their hellos listed them): never seated again.
    retired_tokens: VecDeque<u32>,
    /// Star: relayed events of players the client does not know yet (see `early`).
    early: EarlyEvents,
    /// Star: the ids of the latest players the relay said left (RE_VACATED), newest last.
    vacated_in_band: VecDeque<u32>,
    /// Slot and game servers: the others' names come only from the server's lines (see
    /// `take_names_from_server`).
    names_from_server: bool,
    /// Slot and game servers: the others' events after a rename wait for the server's line
    /// with the new name (see `name_order`).
    name_order: name_order::NameOrder,
    /// Slot and game servers: the game's events queued while a rename of this client waits
    /// for the server's answer, one group per rename asked (see `ask_rename`).
    rename_holds: VecDeque<Vec<RemoteEvent>>,
    /// Since when the oldest rename still held has waited for the server's answer: after
    /// [`name_order::NAME_HOLD`] the held events go out without waiting any longer (a server
    /// that never answers must not silence the player).
    rename_hold_since: Option<Instant>,
    /// The time of the last packet or timer handled (when a name wait began).
    clock: Instant,
    /// The latest time any call gave the session: a long gap before the next one is this
    /// process's own stall (see `credit_own_stall`).
    last_run: Instant,
    /// Where this session's next link starts numbering.
    numbering: LinkNumbering,
    stats: SessionStats,
    /// The counters sampled at frames, for `status`'s per-second figures.
    recent: recent::RecentRates,
}

impl Session {
    /// A mesh session (peer-to-peer, slotserver): remote players are added with their nodes.
    pub fn new_mesh(
        config: SessionConfig,
        node_eq: NodeEq,
        me: LocalPlayer,
        now: Instant,
    ) -> Session {
        Session::new(config, node_eq, me, now, false)
    }

    /// A star session (gameserver): all packets go to and come from `server`, which signs its
    /// packets with `server_token`.
    pub fn new_star(
        config: SessionConfig,
        node_eq: NodeEq,
        me: LocalPlayer,
        server: Node,
        server_token: u32,
        now: Instant,
    ) -> Session {
        let mut session = Session::new(config, node_eq, me, now, true);
        // Numbered from a point the token picks, as a mesh link: a packet the relay wrote for
        // an earlier session of this client at the same address acknowledges sequences this
        // link never sent, and is refused (see `accept_packet`).
        let start = session.link_start();
        let mut remote = Remote::new(None, server, server_token, config.link, now);
        remote.link = Link::starting_at(config.link, start);
        session.remotes.push(remote);
        session
    }

    fn new(
        config: SessionConfig,
        node_eq: NodeEq,
        me: LocalPlayer,
        now: Instant,
        star: bool,
    ) -> Session {
        let LocalPlayer { slot, token, name } = me;
        Session {
            config,
            node_eq,
            same_host: None,
            my_slot: slot,
            my_token: token,
            my_name: name,
            joined: false,
            players: PlayerTable::new(),
            remotes: Vec::new(),
            displaced: Vec::new(),
            star,
            owners: ObjectOwners::default(),
            local_state: ShipState::default(),
            state_version: 0,
            tick: 0,
            next_tick: now,
            next_remote: 0,
            events: VecDeque::new(),
            departures: VecDeque::new(),
            protocol_events: VecDeque::new(),
            deliveries: Vec::new(),
            state_tap: None,
            resume: ResumeState::default(),
            game_event_serial: 0,
            retired_tokens: VecDeque::new(),
            early: EarlyEvents::default(),
            vacated_in_band: VecDeque::new(),
            names_from_server: false,
            name_order: name_order::NameOrder::default(),
            rename_holds: VecDeque::new(),
            rename_hold_since: None,
            clock: now,
            last_run: now,
            numbering: LinkNumbering::new(token),
            stats: SessionStats::default(),
            recent: recent::RecentRates::new(now),
        }
    }

    /// The others' names come only from a server's lines from now on (`add ip:` seats a player
    /// with its name, `name ip:` renames it, see `rename_player`), not from their RE_PLAYERNAME.
    ///
    /// A slot or game server tells every client each accepted name in order on one TCP stream,
    /// while the player's own RE_PLAYERNAME (a rename, or the greeting of a newcomer with the
    /// name then in use) travels apart, over UDP, retransmitted when lost: whichever copy came
    /// last used to win, so an older name could come back (PLAYER_NAME new, old, new) and be
    /// what `NET_FetchPlayerName` returned. One source, in order, cannot go back.
    pub fn take_names_from_server(&mut self) {
        self.names_from_server = true;
    }

    // ----- getters ---------------------------------------------------------------------------

    pub fn my_slot(&self) -> u8 {
        self.my_slot
    }

    pub fn my_token(&self) -> u32 {
        self.my_token
    }

    pub fn my_name(&self) -> &PlayerName {
        &self.my_name
    }

    /// A star session (gameserver): one link, to the server.
    pub fn is_star(&self) -> bool {
        self.star
    }

    pub fn is_joined(&self) -> bool {
        self.joined
    }

    pub fn players(&self) -> &PlayerTable {
        &self.players
    }

    /// The player table's changes were read: collect them afresh (`PlayerTable::changes`).
    pub fn restart_player_changes(&mut self) {
        self.players.restart_changes();
    }

    pub fn local_state(&self) -> &ShipState {
        &self.local_state
    }

    pub fn owner_of(&self, object_id: u32) -> Option<u8> {
        self.owners.owner(object_id)
    }

    /// Which player (this client's slot included) created which live object.
    pub fn owners(&self) -> &ObjectOwners {
        &self.owners
    }

    pub fn stats(&self) -> &SessionStats {
        &self.stats
    }

    /// The places of renames through a server among the players' events (its counters).
    pub fn name_order(&self) -> &name_order::NameOrder {
        &self.name_order
    }

    /// A frame: sample the packet counters for `recent_rates` (kept at most every
    /// `recent::SAMPLE_EVERY`, no allocation).
    pub fn sample_rates(&mut self, now: Instant) {
        self.recent
            .sample(now, self.stats.packets_sent, self.stats.packets_accepted);
    }

    /// Packets sent and accepted per second over about the last `recent::RATE_WINDOW`.
    pub fn recent_rates(&self, now: Instant) -> (f64, f64) {
        self.recent
            .rates(now, self.stats.packets_sent, self.stats.packets_accepted)
    }

    /// Relayed events that came before their player was known (star), and their counters.
    pub fn early_events(&self) -> &EarlyEvents {
        &self.early
    }

    /// Parked streams and the resumption counters.
    pub fn resume_state(&self) -> &ResumeState {
        &self.resume
    }

    /// Hand the game every relayed event still waiting for its player to be seated (star): the
    /// session is about to end (a backend switch), and its link counted them as delivered.
    pub fn release_early_events(&mut self) {
        for (slot, event) in self.early.take_all() {
            self.apply_remote_event(slot, event);
        }
        for (slot, step) in self.name_order.take_all() {
            self.apply_name_step(slot, step);
        }
    }

    /// Which new nodes a mesh player may be followed to when its address changes (a NAT port
    /// change): `same_host(old, new)` must hold, besides `may_rebind`. Without it (the default)
    /// a player is never moved; a star never moves its server.
    pub fn set_same_host(&mut self, same_host: NodeSameHost) {
        self.same_host = Some(same_host);
    }

    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// `net.rate` in a game: the remotes are told the new receive rate with the next packets.
    pub fn set_receive_rate(&mut self, rate: u32) {
        self.config.receive_rate = rate;
    }

    /// `net.sendfreq` in a game: states go at the new interval from the next tick on.
    pub fn set_send_interval(&mut self, interval: Duration) {
        self.config.send_interval = interval;
    }

    /// The receive rate the remote in `slot` (mesh) or the server (star) asked for (0: none).
    pub fn remote_rate(&self, slot: Option<u8>) -> u32 {
        self.remotes
            .iter()
            .find(|r| r.slot == slot)
            .map_or(0, |r| r.budget.rate())
    }

    /// The link to the player in `slot` (mesh) or to the server (star, any slot).
    pub fn link(&self, slot: u8) -> Option<&Link> {
        self.remotes
            .iter()
            .find(|r| r.slot == Some(slot) || (self.star && r.slot.is_none()))
            .map(|r| &r.link)
    }

    /// Every link with its slot (None: the server).
    pub fn links(&self) -> impl Iterator<Item = (Option<u8>, &Link)> {
        self.remotes.iter().map(|r| (r.slot, &r.link))
    }

    /// Reliable events not yet acknowledged on any link.
    pub fn unacknowledged(&self) -> usize {
        self.remotes
            .iter()
            .map(|r| r.link.unacknowledged() + r.held.as_ref().map_or(0, |(h, _)| h.len()))
            .sum()
    }

    // ----- setup by the protocol -----------------------------------------------------------

    /// Queue an event for the game (used by protocols for Connected/Error/...).
    pub fn push_event(&mut self, event: GameEvent) {
        self.events.push_back(event);
    }

    /// Protocol-level events received in game packets (RE_PLAYERLIST, RE_CONNECTQUEUE), with the
    /// sender's slot, for the protocol to act on.
    pub fn poll_protocol_event(&mut self) -> Option<(u8, RemoteEvent)> {
        self.protocol_events.pop_front()
    }

    // ----- what the game asks -------------------------------------------------------------

    /// The next event for the game.
    pub fn poll_event(&mut self) -> Option<GameEvent> {
        self.events.pop_front()
    }

    /// The player a PlayerDisconnected for `slot` just polled from this session removed (its
    /// token and name as the lookups showed them), once per such event, in order.
    pub fn take_departure(&mut self, slot: u8) -> Option<(u32, PlayerName)> {
        let index = self.departures.iter().position(|d| d.0 == slot)?;
        self.departures
            .remove(index)
            .map(|(_, token, name)| (token, name))
    }

    /// Start or stop keeping remote state updates for `poll_state_update` (demo recording).
    pub fn set_state_tap(&mut self, on: bool) {
        self.state_tap = on.then(VecDeque::new);
    }

    pub fn is_state_tapped(&self) -> bool {
        self.state_tap.is_some()
    }

    /// The next remote state update, while the state tap is on.
    pub fn poll_state_update(&mut self) -> Option<(u8, ShipState)> {
        self.state_tap.as_mut()?.pop_front()
    }
}

impl Remote {
    fn new(slot: Option<u8>, node: Node, token: u32, config: LinkConfig, now: Instant) -> Remote {
        Remote {
            slot,
            node,
            token,
            link: Link::new(config),
            last_sent: None,
            last_heard: now,
            state_version_sent: 0,
            state_sent_at: None,
            tick_served: 0,
            pending_kind: None,
            // The server (star) gets a hello too, so it can tell this client is coming back.
            hello_due: true,
            // Any newcomer may be someone coming back under a new token: the game's events for
            // it wait for its answer, so what was parked for it goes first (see `resume`). The
            // server of a star never comes back under a new token: its link holds only what
            // this client carried (`set_resume_state`).
            held: slot.is_some().then(|| (Vec::new(), now)),
            resuming: Vec::new(),
            answers: Vec::new(),
            added_at_serial: 0,
            claim: None,
            rate_told: 0,
            budget: rate::RateBudget::default(),
            continues_at_node: false,
        }
    }

    /// Whether no packet from this remote was ever accepted on its link.
    fn never_heard(&self) -> bool {
        self.link.stats().packets_received == 0
    }

    /// When the wait for this remote's RE_RESUME answer ends and the game's events held for it
    /// go out anyway ([`resume::HOLD_LIMIT`] after its first packet). None while nothing is
    /// held, or nothing was heard from it yet: a player a list seated may be seconds from its
    /// own game (its slot request lost again and again), and until it speaks nothing sent would
    /// reach it anyway, while what was parked for its earlier session must still go first.
    fn hold_ends_at(&self) -> Option<Instant> {
        let (_, since) = self.held.as_ref()?;
        (!self.never_heard()).then(|| *since + resume::HOLD_LIMIT)
    }
}
