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

pub mod early;
pub mod events;
pub mod link;
pub mod name_order;
pub mod parking;
pub mod players;
pub mod rate;
pub mod recent;
pub mod resume;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::{EarlierTokens, PlayerName, RemoteEvent, ResumeStep, ShipState};
use crate::wire::{DecodedPacket, PacketType, WireEvent};
use crate::Node;
pub use early::EarlyEvents;
pub use events::GameEvent;
pub use link::{
    Delivery, Link, LinkConfig, LinkStats, PacketMeta, PacketVerdict, RELIABLE_PACKET_WINDOW,
};
pub use players::{ObjectOwners, Player, PlayerTable};
use resume::{is_game_event, HOLD_LIMIT};
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
    /// The game's events for this remote held back (and since when) until its answer says
    /// what to send again first (see `resume`).
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

    /// What the next session should pick up after this one ends for a backend switch: the
    /// streams parked so far plus every current link's (the server's, in a star), this
    /// session's token as an earlier one, and whether the player had joined, with its ship.
    /// The session itself is left as it is (it still says goodbye).
    pub fn resume_state_for_next(&self) -> ResumeState {
        let mut state = self.resume.clone();
        let displaced = self.displaced.iter().map(|(remote, _)| remote);
        for remote in displaced.chain(&self.remotes) {
            Self::park_remote(&mut state, remote, self.my_token, self.game_event_serial);
        }
        state.note_my_token(self.my_token);
        state.next_serial = self.game_event_serial;
        state.departed_slots = self.early.departures();
        state.joined = self.joined;
        state.local_state = self.local_state;
        state
    }

    /// Hand the game every relayed event still waiting for its player to be seated (star): the
    /// session is about to end (a backend switch), and its link counted them as delivered.
    pub fn release_early_events(&mut self) {
        for (slot, event) in self.early.take_all() {
            self.apply_remote_event(slot, event);
        }
        for (slot, event) in self.name_order.take_all() {
            self.apply_in_order(slot, event);
        }
    }

    /// Which new nodes a mesh player may be followed to when its address changes (a NAT port
    /// change): `same_host(old, new)` must hold, besides `may_rebind`. Without it (the default)
    /// a player is never moved; a star never moves its server.
    pub fn set_same_host(&mut self, same_host: NodeSameHost) {
        self.same_host = Some(same_host);
    }

    /// Pick up what an earlier session left (see `resume_state_for_next`); call right after
    /// the session is created, before any player is added. A star session that parked a link
    /// with its server holds the game's events until the server's answer (carried events go
    /// first). A player that had joined joins again: the others are told after what was
    /// carried (a mesh greets every player it adds with the join; a star queues it for the
    /// server behind the resumption), and its ship flies on.
    pub fn set_resume_state(&mut self, mut state: ResumeState) {
        self.game_event_serial = self.game_event_serial.max(state.next_serial);
        self.early.inherit(&state.departed_slots);
        let joined = std::mem::take(&mut state.joined);
        self.set_local_state(state.local_state);
        self.resume = state;
        for remote in self.remotes.iter_mut().filter(|r| r.slot.is_none()) {
            remote.added_at_serial = self.game_event_serial;
            if self.resume.has_parked_with(remote.token) && remote.held.is_none() {
                remote.held = Some((Vec::new(), remote.last_heard));
            }
        }
        if joined && !self.joined {
            if let Err(err) = self.join() {
                log::warn!("session: could not join again after the switch: {err}");
            }
        }
    }

    /// Park what `remote` has not got: the streams of an unfinished resumption with it as they
    /// were, then its link's.
    fn park_remote(resume: &mut ResumeState, remote: &Remote, my_token: u32, serial: u64) {
        for parked in &remote.resuming {
            resume.park(parked.clone());
        }
        resume.park(Self::link_stream(remote, my_token, serial));
    }

    /// What `remote`'s link has not got through; `serial` is the session's serial now.
    fn link_stream(remote: &Remote, my_token: u32, serial: u64) -> ParkedStream {
        let held = remote.held.as_ref().map_or(&[][..], |(events, _)| events);
        let stream = remote.link.outgoing_stream(held);
        // Events the session numbered (tag 0: the session's own hello and answers) before the
        // oldest one not acknowledged in order were delivered.
        let delivered_below = stream
            .iter()
            .map(|(_, tag, _)| *tag)
            .find(|tag| *tag != 0)
            .unwrap_or(serial + 1);
        let outgoing = stream
            .into_iter()
            .filter(|(_, tag, event)| *tag != 0 && is_game_event(event))
            .collect();
        ParkedStream {
            my_token,
            peer_token: remote.token,
            outgoing,
            first_serial: remote.added_at_serial + 1,
            delivered_below,
            delivered: remote.link.delivered_id(),
            parked_at: remote.last_heard,
        }
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

    /// Seat a remote player (and, in a mesh, open a link to it). Emits PlayerConnected for a
    /// new player.
    ///
    /// A slot held by another player (another token: a new session of whoever sat there, or
    /// someone else) is emptied first as [`Session::remove_player`] empties it, so the game is
    /// told the old player left (PlayerDisconnected, "replaced by a new player") before it hears
    /// of the new one, and the old one's objects lose their owner. The same player listed again
    /// (same token) keeps what the game was shown of it (its ship state, its joined state);
    /// only its address follows the list, and a new name there is a rename (PlayerName).
    pub fn add_player(
        &mut self,
        now: Instant,
        slot: u8,
        node: Node,
        token: u32,
        name: PlayerName,
        joined: bool,
    ) {
        if slot == self.my_slot
            || self.resume.earlier_tokens().as_slice().contains(&token)
            || self.retired_tokens.contains(&token)
        {
            // Not a player: this client itself, its own earlier session, or another player's
            // earlier session (it said so in its hello), still listed by someone who has not
            // yet heard it leave.
            return;
        }
        if let Some(held) = self.players.get_mut(slot) {
            if held.token == token {
                held.node = node;
                held.last_heard = held.last_heard.max(now);
                if held.name != name {
                    self.rename_player(slot, name);
                }
                for event in self.early.seated(slot) {
                    self.apply_remote_event(slot, event);
                }
                return;
            }
            // The player it displaces may only be listed in the wrong slot here (two players
            // seated newcomers in the same slot, and this one is the other's): its link is kept
            // a moment, so if its own packets seat it in another slot it goes on with it, and
            // nothing queued for it is lost (peer_resume seed 74099).
            self.displace_player(now, slot, "replaced by a new player");
        }
        self.players.insert(Player {
            slot,
            name,
            node,
            token,
            joined,
            state: ShipState::default(),
            state_time: None,
            last_heard: now,
            confirmed: false,
        });
        if !self.star {
            self.remotes.retain(|r| r.slot != Some(slot));
            match self.displaced.iter().position(|(r, _)| r.token == token) {
                Some(index) => {
                    // Displaced a moment ago: the same session of the player, which never saw
                    // this peer leave; its link goes on in the new slot.
                    let (mut remote, _) = self.displaced.remove(index);
                    remote.slot = Some(slot);
                    remote.node = node;
                    remote.last_heard = remote.last_heard.max(now);
                    self.remotes.push(remote);
                }
                None => {
                    let start = self.link_start();
                    let mut remote = Remote::new(Some(slot), node, token, self.config.link, now);
                    remote.link = Link::starting_at(self.config.link, start);
                    remote.added_at_serial = self.game_event_serial;
                    self.remotes.push(remote);
                    // Everything this client already said (its name, its join) is repeated to
                    // a newcomer.
                    self.greet(slot);
                }
            }
        }
        if self.names_from_server {
            for event in self.name_order.departed(slot) {
                self.apply_in_order(slot, event);
            }
            self.name_order.seated(slot, name);
        }
        self.events
            .push_back(GameEvent::PlayerConnected { slot, name });
        if joined {
            self.events.push_back(GameEvent::PlayerJoined { slot });
        }
        for event in self.early.seated(slot) {
            self.apply_remote_event(slot, event);
        }
    }

    /// Where a new link of this session starts numbering its packets (see `LinkNumbering`).
    fn link_start(&mut self) -> u32 {
        self.numbering.start(self.remotes.iter().map(|r| &r.link))
    }

    fn greet(&mut self, slot: u8) {
        let name = self.my_name;
        let joined = self.joined;
        if let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == Some(slot)) {
            remote.link.queue_event(RemoteEvent::PlayerName(name));
            if joined {
                remote.link.queue_event(RemoteEvent::PlayerStatus {
                    joined: true,
                    flag: 0,
                });
            }
        }
    }

    /// Tokens another player's earlier sessions had (its hello, or its connect request, listed
    /// them): a player list naming one of them never seats it again.
    pub fn retire_tokens(&mut self, tokens: &[u32]) {
        for token in tokens {
            if !self.retired_tokens.contains(token) {
                if self.retired_tokens.len() == MAX_RETIRED_TOKENS {
                    self.retired_tokens.pop_front();
                }
                self.retired_tokens.push_back(*token);
            }
        }
    }

    /// Remove a remote player; emits PlayerDisconnected.
    pub fn remove_player(&mut self, slot: u8, reason: &str) {
        if let Some(remote) = self.take_player(slot, reason) {
            // It may come back (a backend switch, a dropout): keep what it has not got.
            self.park(&remote);
        }
    }

    /// Empty `slot` as `remove_player` does, but keep the player's link aside for
    /// [`DISPLACED_KEEP`]: a list may have put it in the wrong slot, and if it is seated again
    /// in another slot under the same token within that time, `add_player` goes on with that
    /// link (what was queued for it, what it acknowledged, an unfinished resumption); else it
    /// is parked as at `remove_player`.
    pub fn displace_player(&mut self, now: Instant, slot: u8, reason: &str) {
        if let Some(remote) = self.take_player(slot, reason) {
            self.displaced.push((remote, now));
        }
    }

    /// Empty `slot` as `remove_player` does, but hand back the player's link (mesh) instead of
    /// parking it.
    fn take_player(&mut self, slot: u8, reason: &str) -> Option<Remote> {
        // What it said before leaving and still waited for a name comes first.
        for event in self.name_order.departed(slot) {
            self.apply_in_order(slot, event);
        }
        let player = self.players.remove(slot)?;
        self.departures.push_back((slot, player.token, player.name));
        let remote = self
            .remotes
            .iter()
            .position(|r| r.slot == Some(slot))
            .map(|index| self.remotes.remove(index));
        if let Some(remote) = &remote {
            self.numbering.retire(&remote.link);
        }
        self.owners.forget_slot(slot);
        self.early.departed(slot);
        self.events.push_back(GameEvent::PlayerDisconnected {
            slot,
            reason: reason.to_string(),
        });
        remote
    }

    /// Park what `remote` has not got, in this session's parking lot.
    fn park(&mut self, remote: &Remote) {
        Self::park_remote(
            &mut self.resume,
            remote,
            self.my_token,
            self.game_event_serial,
        );
    }

    /// Links displaced longer than `DISPLACED_KEEP` ago are parked: their players were not seated
    /// again here.
    fn park_displaced(&mut self, now: Instant) {
        self.park_displaced_where(|_, at| now.saturating_duration_since(at) >= DISPLACED_KEEP);
    }

    /// Park the displaced links `which` picks (by token and when they were displaced).
    fn park_displaced_where(&mut self, which: impl Fn(u32, Instant) -> bool) {
        while let Some(index) = self
            .displaced
            .iter()
            .position(|(remote, at)| which(remote.token, *at))
        {
            let (remote, _) = self.displaced.remove(index);
            self.park(&remote);
        }
    }

    /// Move a remote player to another (free) slot, keeping its link: the player's own packets
    /// say where it sits. The game sees it leave the old slot and appear in the new one.
    pub fn move_player(&mut self, from: u8, to: u8) -> bool {
        if to == self.my_slot || self.players.get(to).is_some() {
            return false;
        }
        for event in self.name_order.departed(from) {
            self.apply_in_order(from, event);
        }
        let Some(mut player) = self.players.remove(from) else {
            return false;
        };
        self.departures.push_back((from, player.token, player.name));
        player.slot = to;
        let (name, joined) = (player.name, player.joined);
        self.players.insert(player);
        if let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == Some(from)) {
            remote.slot = Some(to);
        }
        self.owners.forget_slot(from);
        self.events.push_back(GameEvent::PlayerDisconnected {
            slot: from,
            reason: "moved to another slot".to_string(),
        });
        self.events
            .push_back(GameEvent::PlayerConnected { slot: to, name });
        if joined {
            self.events.push_back(GameEvent::PlayerJoined { slot: to });
        }
        true
    }

    /// A gameserver says the player in `slot` (with `token`) now plays from `node`: its table
    /// entry shows it there; nothing else changes (the server relays its packets). False if no
    /// such player is seated.
    pub fn player_moved(&mut self, slot: u8, token: u32, node: Node) -> bool {
        match self.players.get_mut(slot) {
            Some(player) if token != 0 && player.token == token => {
                player.node = node;
                true
            }
            _ => false,
        }
    }

    /// The slot of the remote player at `node`, if any.
    pub fn slot_at(&self, node: &Node) -> Option<u8> {
        self.players
            .iter()
            .find(|p| (self.node_eq)(&p.node, node))
            .map(|p| p.slot)
    }

    /// The slot of the remote player at `node` with `token`, if any.
    pub fn slot_of(&self, node: &Node, token: u32) -> Option<u8> {
        self.players
            .iter()
            .find(|p| p.token == token && (self.node_eq)(&p.node, node))
            .map(|p| p.slot)
    }

    /// Update a remote player's name (a slot or game server's `name ip:` line); emits PlayerName
    /// on change.
    /// The player's events that waited for this name (see `name_order`) follow it.
    pub fn rename_player(&mut self, slot: u8, name: PlayerName) {
        if let Some(player) = self.players.get_mut(slot) {
            if player.name != name {
                player.name = name;
                self.events.push_back(GameEvent::PlayerName { slot, name });
            }
            if self.names_from_server {
                for event in self.name_order.line(slot, name, name) {
                    self.apply_in_order(slot, event);
                }
            }
        }
    }

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

    /// Set the local ship state (sent every state tick while it changes).
    pub fn set_local_state(&mut self, state: ShipState) {
        if !state.same_bits(&self.local_state) {
            self.local_state = state;
            self.state_version += 1;
        }
    }

    /// Queue a remote event to every remote (or to the server). While a rename waits for the
    /// server's answer (`ask_rename`) it waits too, so it goes out after the new name.
    pub fn queue_event(&mut self, event: RemoteEvent) -> NetResult<()> {
        if let Some(id) = event.object_id() {
            match event {
                RemoteEvent::KillObject { .. } => self.owners.killed(id),
                _ => self.owners.created(id, self.my_slot),
            }
        }
        if self.rename_holds.is_empty() {
            return self.queue_to_links(event);
        }
        let held: usize = self.rename_holds.iter().map(Vec::len).sum();
        if held >= self.config.link.max_queued {
            return Err(NetError::new(
                ErrorCode::Full,
                "outgoing event queue full (waiting for the server to answer a rename)",
            ));
        }
        if let Some(group) = self.rename_holds.back_mut() {
            group.push(event);
        }
        Ok(())
    }

    /// A rename was asked of the server (slot and game servers): the events queued from now
    /// on wait for its answer (`rename_answered`), so the others get them after the new name
    /// (RE_PLAYERNAME marks its place in this client's stream; see `name_order`).
    pub fn ask_rename(&mut self) {
        self.rename_holds.push_back(Vec::new());
        self.rename_hold_since.get_or_insert(self.clock);
    }

    /// The server answered the oldest rename asked: `Some(name)` accepted (the others are told
    /// now), None refused. The events queued after asking it go out now (after the name).
    pub fn rename_answered(&mut self, accepted: Option<PlayerName>) -> NetResult<()> {
        let group = self.rename_holds.pop_front().unwrap_or_default();
        // The next rename still held (if any) waits from now.
        self.rename_hold_since = (!self.rename_holds.is_empty()).then_some(self.clock);
        let mut result = Ok(());
        if let Some(name) = accepted {
            self.my_name = name;
            result = self.queue_to_links(RemoteEvent::PlayerName(name));
        }
        // Queued before the next rename was asked (the server answers in order): they need
        // not wait for it.
        for event in group {
            let queued = self.queue_to_links(event);
            result = result.and(queued);
        }
        result
    }

    /// Every event waiting for a rename's answer goes out now, without the name (the session
    /// ends: the last packet of a disconnect, or a backend switch that carries them on).
    pub fn release_rename_holds(&mut self) -> NetResult<()> {
        self.rename_hold_since = None;
        let mut result = Ok(());
        while let Some(group) = self.rename_holds.pop_front() {
            for event in group {
                let queued = self.queue_to_links(event);
                result = result.and(queued);
            }
        }
        result
    }

    fn queue_to_links(&mut self, event: RemoteEvent) -> NetResult<()> {
        let full = || {
            NetError::new(
                ErrorCode::Full,
                "outgoing event queue full (the other side is not acknowledging)",
            )
        };
        let limit = self.config.link.max_queued;
        self.game_event_serial += 1;
        let serial = self.game_event_serial;
        // Each link gets a copy; the last one gets the event itself.
        let last = self.remotes.len().saturating_sub(1);
        let mut event = Some(event);
        for (index, remote) in self.remotes.iter_mut().enumerate() {
            let copy = if index == last {
                event.take()
            } else {
                event.clone()
            };
            let Some(copy) = copy else { break };
            match remote.held.as_mut() {
                Some((held, _)) if held.len() >= limit => return Err(full()),
                Some((held, _)) => held.push((serial, copy)),
                None if !remote.link.queue_tagged(serial, copy) => return Err(full()),
                None => {}
            }
        }
        Ok(())
    }

    /// Join the game: announced reliably to everyone.
    pub fn join(&mut self) -> NetResult<()> {
        if self.joined {
            return Err(NetError::new(ErrorCode::State, "already joined"));
        }
        self.joined = true;
        self.queue_event(RemoteEvent::PlayerStatus {
            joined: true,
            flag: 0,
        })?;
        for remote in &mut self.remotes {
            remote.pending_kind = Some(PacketType::Join);
        }
        Ok(())
    }

    /// Leave the game but stay connected; `flag` is passed to the others.
    pub fn unjoin(&mut self, flag: u8) -> NetResult<()> {
        if !self.joined {
            return Err(NetError::new(ErrorCode::State, "not joined"));
        }
        self.joined = false;
        self.queue_event(RemoteEvent::PlayerStatus {
            joined: false,
            flag,
        })?;
        for remote in &mut self.remotes {
            remote.pending_kind = Some(PacketType::Unjoin);
        }
        Ok(())
    }

    /// Change the local name and tell everyone (RE_PLAYERNAME).
    pub fn set_name(&mut self, name: PlayerName) -> NetResult<()> {
        self.my_name = name;
        self.queue_event(RemoteEvent::PlayerName(name))
    }

    /// Ask for the current position of time-critical events that have not been sent yet
    /// (called immediately before packets are written).
    pub fn refresh_positions(&mut self, position_of: &mut dyn FnMut(u32) -> Option<[f32; 3]>) {
        let mut cache: Vec<(u32, Option<[f32; 3]>)> = Vec::new();
        for remote in &mut self.remotes {
            for event in remote
                .link
                .queued_events_mut()
                .filter(|e| e.is_time_critical())
            {
                let Some(id) = event.object_id() else {
                    continue;
                };
                let pos = match cache.iter().find(|(i, _)| *i == id) {
                    Some((_, pos)) => *pos,
                    None => {
                        let pos = position_of(id).filter(|p| p.iter().all(|f| f.is_finite()));
                        cache.push((id, pos));
                        pos
                    }
                };
                if let Some(pos) = pos {
                    event.set_position(pos);
                }
            }
        }
    }

    // ----- what arrives ----------------------------------------------------------------------

    /// Take a validated game packet from `from`. Packets from unknown nodes, with a wrong token
    /// or slot, and duplicates are rejected (and counted).
    pub fn handle_packet(
        &mut self,
        now: Instant,
        from: &Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) -> Result<(), Rejection> {
        self.credit_own_stall(now);
        let result = self.accept_packet(now, from, packet, events);
        match result {
            Ok(()) => self.stats.packets_accepted += 1,
            Err(_) => self.stats.packets_rejected += 1,
        }
        result
    }

    fn accept_packet(
        &mut self,
        now: Instant,
        from: &Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) -> Result<(), Rejection> {
        let header = &packet.header;
        self.clock = now;
        self.early.advance(now);
        let node_eq = Arc::clone(&self.node_eq);
        let index = match self.remotes.iter().position(|r| node_eq(&r.node, from)) {
            Some(index) => index,
            None => self.rebind(now, from, header)?,
        };
        let remote = &mut self.remotes[index];
        if remote.token == 0 {
            // Listed by a server that did not know its token: the first packet sets it.
            remote.token = header.token;
            if let Some(player) = remote.slot.and_then(|slot| self.players.get_mut(slot)) {
                player.token = header.token;
            }
        }
        if header.token != remote.token {
            return Err(Rejection::WrongToken);
        }
        // Mesh: the packet must come from the remote's own slot. Star: packets from the server
        // carry the slot of the player whose state and events they relay (none: the server's
        // own, e.g. acknowledgements).
        if let Some(slot) = remote.slot {
            if header.sender_slot != Some(slot) {
                return Err(Rejection::WrongSlot);
            }
        }
        // Mesh and star alike: a packet written for an earlier session of this client at this
        // address (the server's token never changes, a player's may) acknowledges sequences
        // this link never sent.
        if !remote.link.acks_this_link(header.ack) {
            log::debug!(
                "session: {}: a packet written for an earlier link (ack {:?})",
                remote
                    .slot
                    .map_or_else(|| "server".to_string(), |slot| format!("slot {slot}")),
                header.ack
            );
            return Err(Rejection::OtherLink);
        }
        let mut deliveries = std::mem::take(&mut self.deliveries);
        deliveries.clear();
        let verdict =
            remote
                .link
                .handle_packet(now, header, packet.state.as_ref(), events, &mut |d| {
                    deliveries.push(d)
                });
        if verdict != PacketVerdict::Accepted {
            self.deliveries = deliveries;
            return Err(Rejection::Duplicate);
        }
        remote.last_heard = now;
        let mesh = remote.slot.is_some();
        if let Some(player) = header.sender_slot.and_then(|s| self.players.get_mut(s)) {
            player.last_heard = now;
            player.confirmed |= mesh;
        }
        for delivery in deliveries.drain(..) {
            match delivery {
                Delivery::State {
                    origin: Some(origin),
                    state,
                } => {
                    self.stats.states_received += 1;
                    if let Some(player) = self.players.get_mut(origin) {
                        player.state = state;
                        player.state_time = Some(now);
                        if let Some(tap) = self.state_tap.as_mut() {
                            if tap.len() < STATE_TAP_LIMIT {
                                tap.push_back((origin, state));
                            }
                        }
                    }
                }
                // Mesh: from the player; star: the server's own (no slot), never relayed.
                Delivery::Event {
                    origin,
                    event: RemoteEvent::Resume(step),
                } => {
                    if self.star == origin.is_none() {
                        self.handle_resume(now, origin, step);
                    }
                }
                // Between this client and the sender (mesh) or the server (star): never for
                // the game, never relayed.
                Delivery::Event {
                    origin,
                    event: RemoteEvent::Rate(rate),
                } => {
                    if self.star == origin.is_none() {
                        if let Some(remote) = self.remotes.get_mut(index) {
                            remote.budget.set_rate(rate);
                        }
                    }
                }
                Delivery::Event {
                    origin: Some(origin),
                    event,
                } => {
                    self.stats.events_received += 1;
                    if self.star
                        && self.players.get(origin).is_none()
                        && self.early.should_hold(origin, now)
                    {
                        if let Some((slot, event)) = self.early.push(origin, event, now) {
                            self.apply_remote_event(slot, event);
                        }
                    } else {
                        self.apply_remote_event(origin, event);
                    }
                }
                // Nothing of the server's own (no slot) is for the game.
                Delivery::State { origin: None, .. } | Delivery::Event { origin: None, .. } => {}
            }
        }
        self.deliveries = deliveries;
        self.settle_claims(now);
        Ok(())
    }

    /// How long a player must have been silent at its own node before another node's claim to
    /// be its next session (a RE_RESUME hello, or a connect request naming its token) removes
    /// it. A live player is heard from at least every `keepalive_interval`; a player that
    /// switched backend closed its old socket, so it went silent at once.
    pub fn earlier_session_silence(&self) -> Duration {
        self.config.keepalive_interval * 3
    }

    /// Whether `player` may be taken for an earlier session of whoever at `claimant` names its
    /// token: it is at that same node, or it has been silent there for
    /// `earlier_session_silence`. Every player is told the others' tokens, so a token alone
    /// proves nothing.
    pub fn may_retire(&self, player: &Player, claimant: &Node, now: Instant) -> bool {
        (self.node_eq)(&player.node, claimant)
            || now.saturating_duration_since(player.last_heard) >= self.earlier_session_silence()
    }

    /// Pending claims (see `Remote::claim`): once every player the hello named has left or gone
    /// silent, remove the silent ones and handle the steps; once the claim is two silences old
    /// and one of them still talks, refuse it (counted) and handle the steps without the live
    /// players' tokens.
    pub fn settle_claims(&mut self, now: Instant) {
        let limit = self.earlier_session_silence() * 2;
        loop {
            let mut decided = None;
            for remote in self.remotes.iter().filter(|r| r.claim.is_some()) {
                let Some((since, steps)) = &remote.claim else {
                    continue;
                };
                let Some(ResumeStep::Hello(tokens)) = steps.first() else {
                    decided = Some((remote.slot, None));
                    break;
                };
                let live = self.live_claimed(remote.slot, &remote.node, tokens.as_slice(), now);
                if live.is_empty() {
                    decided = Some((remote.slot, None));
                    break;
                }
                if now.saturating_duration_since(*since) >= limit {
                    decided = Some((remote.slot, Some(live)));
                    break;
                }
            }
            let Some((slot, refused)) = decided else {
                return;
            };
            let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == slot) else {
                return;
            };
            let (_, mut steps) = remote.claim.take().expect("a claim");
            if let Some(live) = refused {
                self.stats.earlier_claims_refused += 1;
                log::warn!(
                    "session: slot {slot:?} named a live player as its earlier session; refused"
                );
                if let Some(ResumeStep::Hello(tokens)) = steps.first_mut() {
                    *tokens = EarlierTokens::new(
                        tokens
                            .as_slice()
                            .iter()
                            .copied()
                            .filter(|t| !live.contains(t)),
                    );
                }
            }
            for step in steps {
                self.handle_resume(now, slot, step);
            }
        }
    }

    /// The tokens of the players (other than `slot`'s) named in `tokens` that may not be taken
    /// for an earlier session of the player at `claimant` yet (see `may_retire`).
    fn live_claimed(
        &self,
        slot: Option<u8>,
        claimant: &Node,
        tokens: &[u32],
        now: Instant,
    ) -> Vec<u32> {
        self.players
            .iter()
            .filter(|p| Some(p.slot) != slot && tokens.contains(&p.token))
            .filter(|p| !self.may_retire(p, claimant, now))
            .map(|p| p.token)
            .collect()
    }

    /// RE_RESUME from the player in `slot` (mesh) or from the server (star, `None`); see
    /// `resume`.
    fn handle_resume(&mut self, now: Instant, slot: Option<u8>, step: ResumeStep) {
        if let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == slot) {
            if let Some((_, steps)) = remote.claim.as_mut() {
                steps.push(step);
                return;
            }
        }
        if let ResumeStep::Hello(tokens) = step {
            // A displaced player that came back under a new token: what its link holds is
            // resumed like any parked stream.
            self.park_displaced_where(|token, _| tokens.as_slice().contains(&token));
        }
        if let (ResumeStep::Hello(tokens), Some(slot)) = (step, slot) {
            // A player still heard from at its own node is not taken for the sender's earlier
            // session at once: wait until it goes silent (a switched player's old socket is
            // closed) or the claim is refused (see `settle_claims`).
            let claimant = self
                .remotes
                .iter()
                .find(|r| r.slot == Some(slot))
                .map(|r| r.node);
            if let Some(claimant) = claimant {
                if !self
                    .live_claimed(Some(slot), &claimant, tokens.as_slice(), now)
                    .is_empty()
                {
                    if let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == Some(slot)) {
                        remote.claim = Some((now, vec![step]));
                    }
                    return;
                }
            }
            // The same player under an earlier token, still seated (its goodbye was lost, it
            // came back at a new address): it has left; what it was owed is parked for it now.
            let stale: Vec<(u8, u32)> = self
                .remotes
                .iter()
                .filter(|r| r.slot != Some(slot) && tokens.as_slice().contains(&r.token))
                .filter_map(|r| Some((r.slot?, r.token)))
                .collect();
            for (old, _) in stale {
                self.remove_player(old, "came back at a new address");
            }
            self.retire_tokens(tokens.as_slice());
        }
        let earlier = self.resume.earlier_tokens();
        let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == slot) else {
            return;
        };
        match step {
            ResumeStep::Hello(tokens) => {
                // Our hello goes first: the other side reads it before our answers.
                if std::mem::take(&mut remote.hello_due) {
                    remote
                        .link
                        .queue_event(RemoteEvent::Resume(ResumeStep::Hello(earlier)));
                }
                let mut candidates = vec![remote.token];
                candidates.extend_from_slice(tokens.as_slice());
                let mut answered = Vec::new();
                for parked in self.resume.take_all_matching(&candidates) {
                    remote
                        .link
                        .queue_event(RemoteEvent::Resume(ResumeStep::Answer {
                            yours: parked.peer_token,
                            mine: parked.my_token,
                            delivered: parked.delivered,
                        }));
                    answered.push((parked.peer_token, parked.my_token));
                    self.resume.remember_receipt(&parked);
                    remote.resuming.push(parked);
                }
                // Old links answered before to an identity that left before reading it.
                for receipt in self.resume.receipts_matching(&candidates) {
                    if !answered.contains(&(receipt.peer_token, receipt.my_token)) {
                        remote
                            .link
                            .queue_event(RemoteEvent::Resume(ResumeStep::Answer {
                                yours: receipt.peer_token,
                                mine: receipt.my_token,
                                delivered: receipt.delivered,
                            }));
                    }
                }
                remote
                    .link
                    .queue_event(RemoteEvent::Resume(ResumeStep::Done));
            }
            ResumeStep::Answer {
                yours,
                mine,
                delivered,
            } => remote.answers.push((yours, mine, delivered)),
            ResumeStep::Done => {
                // Every event owed over the old links and held for this one, each once, in the
                // order the game queued them (serial order); minus what one of the old links
                // delivered (the same event can sit in several of them: it was queued while
                // the player had two identities here).
                let mut owed = Vec::new();
                let mut delivered_ranges = Vec::new();
                let streams = std::mem::take(&mut remote.resuming);
                let count = streams.len();
                for parked in streams {
                    let answer = remote
                        .answers
                        .iter()
                        .find(|(yours, mine, _)| {
                            *yours == parked.my_token && *mine == parked.peer_token
                        })
                        .map(|(_, _, delivered)| *delivered);
                    // No answer: the other side kept nothing of that link, so it never had it
                    // (it parks every link it had for as long as this side does): it got none
                    // of it.
                    let first = parked.first_serial;
                    let watermark = parked.settle(answer.unwrap_or(0), &mut owed);
                    delivered_ranges.push((first, watermark));
                }
                let delivered = |serial: u64| {
                    delivered_ranges
                        .iter()
                        .any(|(first, last)| (*first..=*last).contains(&serial))
                };
                owed.retain(|(serial, _)| !delivered(*serial));
                let carried = owed.len();
                if let Some((held, _)) = remote.held.take() {
                    owed.extend(
                        held.into_iter()
                            .filter(|(serial, e)| !is_game_event(e) || !delivered(*serial)),
                    );
                }
                owed.sort_by_key(|(serial, _)| *serial);
                owed.dedup_by_key(|(serial, _)| *serial);
                for (serial, event) in owed {
                    // Bounded like the held queue.
                    let _ = remote.link.queue_tagged(serial, event);
                }
                if count > 0 {
                    log::info!(
                        "session: slot {:?} came back; {carried} events sent again",
                        remote.slot
                    );
                    self.resume.stats_mut().count_resumed(count, carried);
                }
                remote.answers.clear();
            }
        }
    }

    /// Send what was held back for `remote`, in order, after whatever was carried.
    fn release_held(remote: &mut Remote) {
        if let Some((held, _)) = remote.held.take() {
            for (serial, event) in held {
                // The held queue was bounded by the same limit.
                let _ = remote.link.queue_tagged(serial, event);
            }
        }
    }

    /// A packet from an unknown address: the player it claims to be moved there (NAT rebinding),
    /// if `may_rebind` allows; else it is an unknown sender.
    fn rebind(
        &mut self,
        now: Instant,
        from: &Node,
        header: &crate::wire::PacketHeader,
    ) -> Result<usize, Rejection> {
        let index = self
            .remotes
            .iter()
            .position(|r| r.slot.is_some() && r.slot == header.sender_slot)
            .ok_or(Rejection::UnknownSender)?;
        let remote = &mut self.remotes[index];
        // Only to another port of the player's own host: every player is told the others'
        // tokens, so the token alone does not tell the player from another one (a player of
        // the game sending from a second socket). A NAT keeps the host's address for its port
        // changes; a player at another address has to come back (a new connect, RE_RESUME).
        // Asked last: the backend prints both nodes.
        if !may_rebind(
            &remote.link,
            header.token,
            remote.token,
            header.sequence,
            remote.last_heard,
            now,
        ) || !self
            .same_host
            .as_ref()
            .is_some_and(|same_host| same_host(&remote.node, from))
        {
            self.stats.impostors += 1;
            return Err(Rejection::UnknownSender);
        }
        log::info!(
            "session: player in slot {:?} moved to a new address",
            remote.slot
        );
        remote.node = *from;
        if let Some(player) = remote.slot.and_then(|s| self.players.get_mut(s)) {
            player.node = *from;
        }
        self.stats.rebinds += 1;
        Ok(index)
    }

    /// Apply a remote event from `slot`: update the table, emit the game event.
    ///
    /// A name or join status is told to the game only when it changes what the game knows of
    /// the player: every newcomer is greeted with both, and a rename through a server also
    /// comes as the server's line, so most copies repeat what the game has (from the player
    /// list, the server's `add ip:` line, or the other copy). A player not seated (a late or
    /// early relayed event, delivered anyway) has nothing to compare with: its events pass.
    /// Through a slot or game server, names come from the server's lines only
    /// (`take_names_from_server`): a RE_PLAYERNAME changes nothing there.
    /// Through a slot or game server, the events a player sent after renaming itself wait
    /// for the server's line with the new name (`name_order`).
    pub fn apply_remote_event(&mut self, slot: u8, event: RemoteEvent) {
        let current = self
            .players
            .get(slot)
            .filter(|_| self.names_from_server)
            .map(|p| p.name);
        let event = match current {
            Some(current) => match self.name_order.gate(slot, event, current, self.clock) {
                name_order::Gate::Pass(event) => event,
                name_order::Gate::Held => return,
            },
            None => event,
        };
        self.apply_in_order(slot, event);
    }

    /// Apply a remote event from `slot` that is in its place.
    fn apply_in_order(&mut self, slot: u8, event: RemoteEvent) {
        match event {
            RemoteEvent::PlayerName(name) if self.names_from_server => {
                log::trace!(
                    "session: slot {slot} says its name is {name} (the server's lines tell names)"
                );
            }
            RemoteEvent::PlayerName(name) => {
                let changed = match self.players.get_mut(slot) {
                    Some(player) => std::mem::replace(&mut player.name, name) != name,
                    None => true,
                };
                if changed {
                    self.events.push_back(GameEvent::PlayerName { slot, name });
                }
            }
            RemoteEvent::PlayerStatus { joined, flag } => {
                let changed = match self.players.get_mut(slot) {
                    Some(player) => std::mem::replace(&mut player.joined, joined) != joined,
                    // Through a server only its lines seat players: the joined state of a
                    // slot nobody is seated in (a late retransmission of a player who left,
                    // or of one never seated) changes nothing the game knows.
                    None if self.star => {
                        log::debug!(
                            "session: a join status from slot {slot}, where nobody is seated; \
                             not for the game"
                        );
                        false
                    }
                    None => true,
                };
                if changed {
                    self.events.push_back(if joined {
                        GameEvent::PlayerJoined { slot }
                    } else {
                        GameEvent::PlayerUnjoined { slot, flag }
                    });
                }
            }
            RemoteEvent::PlayerList(_) | RemoteEvent::ConnectQueue(_) => {
                self.protocol_events.push_back((slot, event));
            }
            event => {
                if let Some(id) = event.object_id() {
                    match event {
                        RemoteEvent::KillObject { .. } => self.owners.killed(id),
                        _ => self.owners.created(id, slot),
                    }
                }
                self.events.push_back(GameEvent::Remote { slot, event });
            }
        }
    }

    // ----- what goes out -------------------------------------------------------------------

    /// The next datagram to send, written into `buf` (at least `max_payload` bytes): returns the
    /// destination and length. Call until it returns None.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(Node, usize)> {
        self.credit_own_stall(now);
        self.advance_tick(now);
        if self.remotes.iter().any(|r| r.hello_due) {
            self.queue_due_hellos();
        }
        // The receive rate goes to every remote after its hello, and again when it changes.
        let rate = self.config.receive_rate;
        for remote in self.remotes.iter_mut().filter(|r| r.rate_told != rate) {
            remote.rate_told = rate;
            remote.link.queue_event(RemoteEvent::Rate(rate));
        }
        let count = self.remotes.len();
        for step in 0..count {
            let index = (self.next_remote + step) % count;
            if !self.packet_due(index, now) {
                continue;
            }
            self.next_remote = (index + 1) % count;
            let joined = self.joined;
            let state_version = self.state_version;
            let tick = self.tick;
            let state = self.local_state;
            let max = self.config.max_payload.min(buf.len());
            let senders = count;
            let remote = &mut self.remotes[index];
            let kind = remote.pending_kind.take().unwrap_or(if joined {
                PacketType::GameState
            } else {
                PacketType::NodeAlive
            });
            let send_state = joined
                && remote.budget.allows_state(now, senders)
                && (remote.state_version_sent != state_version
                    || remote
                        .state_sent_at
                        .is_none_or(|t| now - t >= self.config.keepalive_interval));
            let before = remote.link.stats().reliable_sent + remote.link.stats().retransmissions;
            let meta = PacketMeta {
                relay: false,
                kind,
                sender_slot: Some(self.my_slot),
                joined,
                token: self.my_token,
            };
            let written =
                remote
                    .link
                    .write_packet(now, &mut buf[..max], meta, send_state.then_some(&state));
            remote.last_sent = Some(now);
            remote.tick_served = tick;
            if send_state {
                remote.state_version_sent = state_version;
                remote.state_sent_at = Some(now);
            }
            match written {
                Ok(len) => {
                    remote.budget.spend(now, senders, len);
                    let after =
                        remote.link.stats().reliable_sent + remote.link.stats().retransmissions;
                    self.stats.events_sent += after - before;
                    self.stats.packets_sent += 1;
                    return Some((remote.node, len));
                }
                Err(err) => {
                    self.stats.encode_errors += 1;
                    log::error!("could not encode a packet: {err}");
                }
            }
        }
        None
    }

    /// For a player that is leaving (`disconnect`, after the frame's last packets went out):
    /// [`FAREWELL_COPIES`] more packets to every remote whose link still owes reliable events,
    /// each carrying all of them again, handed to `send`. Nothing is retransmitted once the
    /// player has left, so one lost last packet used to cost its events (a "bye" said right
    /// before leaving); now only the loss of every copy does. The others deliver each event
    /// once (reliable events are deduplicated by id).
    pub fn farewell_copies(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        send: &mut dyn FnMut(Node, &[u8]),
    ) {
        let joined = self.joined;
        let state = self.local_state;
        let max = self.config.max_payload.min(buf.len());
        let meta = PacketMeta {
            relay: false,
            kind: if joined {
                PacketType::GameState
            } else {
                PacketType::NodeAlive
            },
            sender_slot: Some(self.my_slot),
            joined,
            token: self.my_token,
        };
        for remote in self.remotes.iter_mut() {
            for _ in 0..FAREWELL_COPIES {
                match remote.link.write_farewell(
                    now,
                    &mut buf[..max],
                    meta,
                    joined.then_some(&state),
                ) {
                    Ok(Some(len)) => {
                        self.stats.packets_sent += 1;
                        send(remote.node, &buf[..len]);
                    }
                    Ok(None) => break,
                    Err(err) => {
                        self.stats.encode_errors += 1;
                        log::error!("could not encode a farewell packet: {err}");
                        break;
                    }
                }
            }
        }
    }

    /// Queue a resume hello on every remote that owes one (rare: checked first by the caller,
    /// so a frame with none does not build the list of earlier tokens).
    fn queue_due_hellos(&mut self) {
        let earlier = self.resume.earlier_tokens();
        for remote in self.remotes.iter_mut().filter(|r| r.hello_due) {
            remote.hello_due = false;
            remote
                .link
                .queue_event(RemoteEvent::Resume(ResumeStep::Hello(earlier)));
        }
    }

    fn advance_tick(&mut self, now: Instant) {
        if now >= self.next_tick {
            self.tick += 1;
            self.next_tick = (self.next_tick + self.config.send_interval).max(now);
        }
    }

    fn packet_due(&self, index: usize, now: Instant) -> bool {
        let remote = &self.remotes[index];
        if remote.pending_kind.is_some() || remote.link.wants_to_send(now) {
            return true;
        }
        let keepalive_due = remote
            .last_sent
            .is_none_or(|t| now.saturating_duration_since(t) >= self.config.keepalive_interval);
        if keepalive_due {
            return true;
        }
        self.joined
            && remote.tick_served < self.tick
            && remote.state_version_sent != self.state_version
            && remote.budget.allows_state(now, self.remotes.len())
    }

    /// When the session next needs `handle_timeout` / `poll_transmit`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut earliest = None::<Instant>;
        let mut consider = |t: Instant| earliest = Some(earliest.map_or(t, |e| e.min(t)));
        for remote in &self.remotes {
            consider(
                remote
                    .last_sent
                    .map_or(remote.last_heard, |t| t + self.config.keepalive_interval),
            );
            consider(remote.last_heard + self.config.peer_timeout);
            if let Some(t) = remote.link.next_retransmit(remote.last_heard) {
                consider(t);
            }
            if let Some(t) = remote.link.ack_due_at() {
                consider(t);
            }
            if let Some((_, since)) = remote.held {
                consider(since + HOLD_LIMIT);
            }
            if remote.hello_due || remote.rate_told != self.config.receive_rate {
                consider(remote.last_heard);
            }
            // A state held back for the remote's receive rate goes when the budget refills.
            if self.joined && remote.state_version_sent != self.state_version {
                if let Some(t) = remote.budget.state_ready_at(self.remotes.len()) {
                    consider(t.max(self.next_tick));
                }
            }
            if let Some((since, steps)) = &remote.claim {
                let silence = self.earlier_session_silence();
                consider(*since + silence * 2);
                if let Some(ResumeStep::Hello(tokens)) = steps.first() {
                    for player in self.players.iter() {
                        if tokens.as_slice().contains(&player.token) {
                            consider(player.last_heard + silence);
                        }
                    }
                }
            }
        }
        if let Some(t) = self.resume.next_expiry() {
            consider(t);
        }
        for (_, at) in &self.displaced {
            consider(*at + DISPLACED_KEEP);
        }
        if let Some(t) = self.early.next_expiry() {
            consider(t);
        }
        if let Some(t) = self.name_order.next_expiry() {
            consider(t);
        }
        if let Some(since) = self.rename_hold_since {
            consider(since + name_order::NAME_HOLD);
        }
        if self.joined
            && self
                .remotes
                .iter()
                .any(|r| r.state_version_sent != self.state_version)
        {
            consider(self.next_tick);
        }
        earliest
    }

    /// Run timers: drop remotes silent for `peer_timeout`. Returns the slots dropped (mesh),
    /// each with the token and node the player had, and whether the server went silent (star).
    pub fn handle_timeout(&mut self, now: Instant) -> (Vec<(u8, u32, Node)>, bool) {
        self.credit_own_stall(now);
        self.advance_tick(now);
        self.park_displaced(now);
        self.settle_claims(now);
        self.resume.expire(now);
        self.clock = now;
        self.early.advance(now);
        for (slot, event) in self.early.expired(now) {
            log::warn!("session: events from slot {slot} came before the player; delivering them");
            self.apply_remote_event(slot, event);
        }
        if self
            .rename_hold_since
            .is_some_and(|since| now.saturating_duration_since(since) >= name_order::NAME_HOLD)
        {
            log::warn!(
                "session: the server has not answered a rename for {} s; sending the events queued after it",
                name_order::NAME_HOLD.as_secs()
            );
            if let Err(err) = self.release_rename_holds() {
                log::warn!("session: {err}");
            }
        }
        for (slot, event) in self.name_order.expired(now) {
            log::warn!(
                "session: slot {slot} renamed itself but the server's line did not come; delivering its events"
            );
            self.apply_in_order(slot, event);
        }
        for remote in &mut self.remotes {
            if remote
                .held
                .as_ref()
                .is_some_and(|(_, since)| now.saturating_duration_since(*since) >= HOLD_LIMIT)
            {
                log::warn!(
                    "session: no RE_RESUME answer from slot {:?} in time; sending on",
                    remote.slot
                );
                for parked in std::mem::take(&mut remote.resuming) {
                    self.resume.stats_mut().count_dropped(parked.outgoing.len());
                }
                remote.answers.clear();
                self.resume.stats_mut().count_hold_timeout();
                Self::release_held(remote);
            }
        }
        let timeout = self.config.peer_timeout;
        let silent: Vec<(Option<u8>, usize)> = self
            .remotes
            .iter()
            .enumerate()
            .filter(|(_, r)| now.saturating_duration_since(r.last_heard) >= timeout)
            .map(|(i, r)| (r.slot, i))
            .collect();
        let mut dropped = Vec::new();
        let mut server_silent = false;
        for (slot, _) in silent {
            match slot {
                Some(slot) => {
                    self.stats.players_timed_out += 1;
                    let (token, node) = self
                        .players
                        .get(slot)
                        .map_or((0, Node::default()), |p| (p.token, p.node));
                    self.remove_player(slot, &format!("no packets for {} s", timeout.as_secs()));
                    dropped.push((slot, token, node));
                }
                None => server_silent = true,
            }
        }
        (dropped, server_silent)
    }

    /// Silence is counted only over time this process ran. A process stopped for a while (a
    /// debugger, SIGSTOP, a suspended machine, a frame that took seconds) heard nothing in that
    /// time because it did not listen; when it was stopped inside a frame, after the frame read
    /// the clock, that frame even reads what waited in the socket with the time from before the
    /// stop. So when the gap since the last call is longer than `own_stall_allowance`, every
    /// remote's and player's last-heard time moves forward by the excess (never past `now`):
    /// the others are not dropped for this process's own silence. A game that calls less often
    /// than the allowance only makes a dead peer's drop that much slower.
    fn credit_own_stall(&mut self, now: Instant) {
        let gap = now.saturating_duration_since(self.last_run);
        self.last_run = self.last_run.max(now);
        let Some(credit) = gap.checked_sub(self.own_stall_allowance()) else {
            return;
        };
        if credit.is_zero() || self.remotes.is_empty() {
            return;
        }
        self.stats.own_stalls += 1;
        log::info!(
            "session: this process did not run for {} ms; the others' silence is counted without it",
            gap.as_millis()
        );
        for remote in &mut self.remotes {
            remote.last_heard = (remote.last_heard + credit).min(now);
        }
        for player in self.players.iter_mut() {
            player.last_heard = (player.last_heard + credit).min(now);
        }
    }

    /// The longest gap between two calls that still counts as listening: a second, or half the
    /// silence that drops a player if that is shorter.
    fn own_stall_allowance(&self) -> Duration {
        OWN_STALL_ALLOWANCE.min(self.config.peer_timeout / 2)
    }

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
        }
    }
}
