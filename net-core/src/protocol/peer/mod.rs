//! The peer-to-peer protocol with its startup election (design section 2.3.1), as a sans-IO
//! state machine.
//!
//! - **Connect loop**: broadcast (or send to one known node) a CONNECT every `connect_interval`,
//!   `connect_tries` times. A CONNECT from a lower node makes this peer its temporary master: the
//!   request is queued and the sender is told SUBDUE_SLAVE. A CONNECT from a higher node, or a
//!   SUBDUE_SLAVE, makes this peer a slave.
//! - **Slot-request loop**: a slave sends SLOT_REQUEST (carrying its whole queue, so no request
//!   is lost) to its master every `slot_interval`, `slot_tries` times, until a CONNECT_REPLY
//!   gives it a slot; then it enters the game. If the master stops answering, it gives up with an
//!   error event. A CONNECT that reaches a slave (sent to its address only), or a queue its own
//!   slave forwards, is queued too and passed on to the master at once (`pass_on_to_master`); a
//!   master still in its connect loop tells each requester a forwarded queue names what its
//!   broadcast would have (`greet_relayed`). A master that leaves the game holding a slave's
//!   request sends it its DISCONNECT too, and the slave starts its connect loop over at once.
//! - **Temporary master**: a peer whose connect loop ends without yielding assigns slots to
//!   itself and every queued request, sends each a CONNECT_REPLY with RE_PLAYERLIST, and enters
//!   the game. After that all peers are equal.
//! - **Game loop**: a CONNECT or SLOT_REQUEST is answered by the peer of rank r (its position in
//!   the node order of the players, highest first) after r x `reply_wait`, unless it snoops
//!   another peer's reply first (every reply is copied to all players). An assigned request is
//!   kept, and its reply resent, until the newcomer's first game packet confirms it. A full game
//!   answers CONNECT_REFUSED. A request forwarded to a higher player carries the requester's
//!   RE_RESUME hello, and no request is answered while a claim on a seat is undecided (see
//!   `retire_earlier_sessions`).
//! - **Withdrawal**: a player that gives up while still connecting has no slot to leave, but a
//!   peer may have seated it already: it sends a DISCONNECT without a sender slot naming its own
//!   request, and a peer that frees the seat passes it on to its players (`take_withdrawal`;
//!   `docs/wire-format.md` has the rules).
//!
//! Packets of the startup (CONNECT, SUBDUE_SLAVE, SLOT_REQUEST, CONNECT_REPLY, CONNECT_REFUSED,
//! DISCONNECT) are single datagrams outside any link; game packets go through the `Session`.

mod requests;
mod strangers;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, NetError, NetResult};
use crate::protocol::{ClientProtocol, ConnectParams, NodeOrder, ProtocolKind};
use crate::rmev::{
    ChatText, ConnectRequest, EarlierTokens, PlayerListEntry, RemoteEvent, ResumeStep,
};
use crate::session::{GameEvent, LocalPlayer, NodeEq, Player, Rejection, Session};
use crate::wire::{
    decode_packet, encode_packet, DecodedPacket, PacketHeader, PacketType, WireEvent,
};
use crate::Node;
pub use requests::{QueuedRequest, Reply, RequestQueue};

/// How many times a game-loop peer lets a live higher-ranked player answer a request first.
const MAX_DEFERRALS: u32 = 6;
/// How many departed tokens a peer remembers.
const MAX_DEPARTED: usize = 64;
/// How many times a peer reconnects by itself after losing a slot conflict.
const MAX_REJOINS: u32 = 3;
/// How often a peer probes the players it dropped for silence at first (see `Probe`).
const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// How long it probes them every `PROBE_INTERVAL`.
const PROBE_FAST_PERIOD: Duration = Duration::from_secs(5 * 60);
/// How often it probes them after that, for as long as it stays in its game.
const PROBE_SLOW_INTERVAL: Duration = Duration::from_secs(10);

/// Timings and limits of the peer-to-peer protocol (console variables `net.peer.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerTimings {
    pub connect_tries: u32,
    pub connect_interval: Duration,
    pub slot_tries: u32,
    pub slot_interval: Duration,
    /// Wait per rank before a game-loop peer answers a connect request itself.
    pub reply_wait: Duration,
    /// Most players in one game.
    pub max_players: u8,
}

impl Default for PeerTimings {
    /// The defaults measured from Parsec's own source (SPEC section 6).
    fn default() -> Self {
        PeerTimings {
            connect_tries: 10,
            connect_interval: Duration::from_millis(330),
            slot_tries: 20,
            slot_interval: Duration::from_millis(670),
            reply_wait: Duration::from_millis(170),
            max_players: 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting {
        tries: u32,
        next: Instant,
    },
    SlotRequest {
        master: Node,
        tries: u32,
        next: Instant,
    },
    InGame,
}

/// A slave that was told to connect to an address other than its master's keeps asking there
/// (see `PeerProtocol::become_slave`).
#[derive(Clone, Debug)]
struct TargetAsk {
    /// The `connect` address.
    target: Node,
    /// When its connect loop would have ended: it asks there until then.
    until: Instant,
    /// The requests the CONNECT it yielded to carried (its master's), for a higher peer at
    /// the target that subdues it (so that peer greets the master).
    master_requests: Vec<ConnectRequest>,
}

/// What a slot claim that found the slot taken comes to (see `PeerProtocol::clear_slot_for`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// The slot is free for the claimant now.
    Free,
    /// A live player holds it; a later packet of the claimant's decides.
    Undecided,
    /// The claimant lost (it was told), or this peer's own session ended.
    Lost,
}

/// A time kept per player token, for the last `MAX_DEPARTED` tokens (the oldest goes first).
#[derive(Debug, Default)]
struct TokenTimes(Vec<(u32, Instant)>);

impl TokenTimes {
    fn get(&self, token: u32) -> Option<Instant> {
        self.0.iter().find(|(t, _)| *t == token).map(|(_, at)| *at)
    }

    fn set(&mut self, token: u32, at: Instant) {
        match self.0.iter_mut().find(|(t, _)| *t == token) {
            Some(entry) => entry.1 = at,
            None => {
                if self.0.len() >= MAX_DEPARTED {
                    self.0.remove(0);
                }
                self.0.push((token, at));
            }
        }
    }

    fn remove(&mut self, token: u32) {
        self.0.retain(|(t, _)| *t != token);
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// A peer sends a probe to the node of each player it dropped for silence (its own network,
/// or that player's, or only the path between them was cut), every `PROBE_INTERVAL` for
/// `PROBE_FAST_PERIOD`, then every `PROBE_SLOW_INTERVAL`: a NODE_ALIVE without a sender slot,
/// carrying this peer's player list, which no session accepts (so it keeps nobody's entry
/// alive). A player that dropped this peer and whose game wins over the prober's (`wins_over`)
/// answers it with its "you were dropped" notice (`tell_dropped_player`), so the prober
/// reconnects into that game once the network is back. A node is probed until a player is
/// seated at it again or this peer leaves the game (a dead port and a new process there that
/// never knew this peer both stay silent: nothing tells them apart from a cut that lasts).
#[derive(Debug)]
struct Probe {
    node: Node,
    /// When the player there was dropped (the first probe).
    since: Instant,
    /// When the next probe to it goes out.
    next: Instant,
}

impl Probe {
    /// The wait after a probe sent at `now`: short at first, then slower.
    fn interval(&self, now: Instant) -> Duration {
        if now.saturating_duration_since(self.since) < PROBE_FAST_PERIOD {
            PROBE_INTERVAL
        } else {
            PROBE_SLOW_INTERVAL
        }
    }
}

/// Counters shown by `status` and checked by tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerStats {
    pub connects_sent: u64,
    pub subdues_sent: u64,
    pub slot_requests_sent: u64,
    pub replies_sent: u64,
    pub snoop_copies_sent: u64,
    pub refusals_sent: u64,
    pub replies_snooped: u64,
    pub requests_forwarded: u64,
    pub slots_followed: u64,
    pub replies_deferred: u64,
    pub slot_conflicts: u64,
    pub packets_ignored: u64,
    pub packets_rejected: u64,
    pub times_master: u64,
    /// Slots taken over from a player that had gone silent (its DISCONNECT was lost).
    pub silent_holders_replaced: u64,
    /// Slot-conflict notices said again because the loser kept sending.
    pub conflict_notices_repeated: u64,
    /// Notices to players dropped here for silence whose packets came again.
    pub dropped_notices_sent: u64,
    /// "You were dropped" notices ignored: the teller was dropped here too and this game wins
    /// (stale packets crossing; the teller is told instead).
    pub dropped_notices_ignored: u64,
    /// Probes sent to players this peer dropped for silence (see `Probe`).
    pub probes_sent: u64,
    /// Connect loops sent to another player of the game that answered a probe, because the
    /// one that answered did not (it died or left meanwhile; see `fallbacks`).
    pub fallback_targets_tried: u64,
    /// Notices to senders of game packets this peer never seated: they think they are in its
    /// game (see `strangers`).
    pub stranger_notices_sent: u64,
    /// Players dropped because a "not in the other players' game" notice came from their
    /// address under another token: a new process answers there (see `strangers`).
    pub replaced_players_dropped: u64,
    /// Refusals received while connecting (the connect loop went on; see `take_refusal`).
    pub refusals_received: u64,
    /// Players removed because a connect request named them as the sender's earlier session.
    pub earlier_sessions_retired: u64,
    /// Connect requests that named a player (or a connecting player's queued request) still
    /// heard from at its own node as the sender's earlier session: it was not removed (see
    /// `retire_earlier_sessions`).
    pub earlier_claims_refused: u64,
    /// Connect requests (and the seats given to them) dropped because the requester gave up
    /// connecting (its own withdrawal, or one passed on by a player).
    pub requests_withdrawn: u64,
}

/// The peer-to-peer protocol module.
pub struct PeerProtocol {
    timings: PeerTimings,
    phase: Phase,
    params: Option<ConnectParams>,
    /// This peer's node as the others see it (refined by the player list).
    my_node: Node,
    queue: RequestQueue,
    session: Option<Session>,
    out: VecDeque<(Node, Vec<u8>)>,
    events: VecDeque<GameEvent>,
    oob_sequence: u32,
    scratch: Vec<WireEvent>,
    decode_errors: BTreeMap<&'static str, u64>,
    /// Tokens of players that left (disconnected, replaced, lost a slot conflict).
    departed: VecDeque<u32>,
    /// Withdrawals that came before the request they withdraw (a datagram overtaken by the
    /// next), by token, with the node they came from: a request for that token from that node
    /// is not answered.
    early_withdrawals: VecDeque<(u32, Node)>,
    /// Players a list named for a slot that is taken here, until their own packets place them.
    hearsay: Vec<PlayerListEntry>,
    /// Claimants of a slot a live player holds here, by token, with when the claim was first
    /// seen (see `clear_slot_for`).
    contests: TokenTimes,
    /// Players told they lost a slot conflict, by token, with when they were last told: their
    /// packets keep coming until a notice arrives, so each one that comes is answered again
    /// (at most every `reply_wait`).
    conflict_losers: TokenTimes,
    /// Players this peer dropped after `net.timeout` of silence, by token, with when they were
    /// dropped or last told: one whose packets come again (its process was stopped, its
    /// machine suspended) is told it was dropped (at most every `reply_wait`), so it connects
    /// again instead of playing on with players that refuse its packets.
    silenced: TokenTimes,
    /// The nodes of players dropped here for silence that are being probed (see `Probe`).
    probes: Vec<Probe>,
    /// When the next probes go out (none while nobody is probed).
    next_probe: Option<Instant>,
    /// Told it was dropped in answer to a probe, this peer connects to the player that told it.
    /// If that one never answers (it died or left in between), the connect loop goes on to the
    /// other players of the list the notice carried (highest node first), then to where it
    /// connected before (its `connect` target, or the broadcast): the next of these.
    fallbacks: VecDeque<Option<Node>>,
    /// Senders of game packets this peer never seated (see `strangers`).
    strangers: strangers::Strangers,
    /// Seated players (or queued requests) a connect request named as the sender's earlier
    /// session while they were still heard from at their own nodes: (their token, the sender's
    /// token, when first claimed). See `retire_earlier_sessions`.
    claims: Vec<(u32, u32, Instant)>,
    /// Tokens a connect request named as the sender's earlier session while this peer knew
    /// them neither as players nor as queued requests (a stranger's packet may overtake a
    /// newcomer's first request): (their token, the sender's token, the sender's node or None
    /// for a forwarded hello, when first named). Retired if nothing of theirs shows up within the silence; claimed as usual
    /// if something does. The claimant does not wait for them. See `retire_earlier_sessions`.
    watches: Vec<(u32, u32, Option<Node>, Instant)>,
    /// Why a peer refused this one while it was connecting (see `take_refusal`).
    refusal: Option<String>,
    /// Automatic reconnects left after losing a slot conflict (a refusal retries instead of
    /// giving up while this is non-zero).
    rejoins_left: u32,
    /// A slave's `connect` address that is not its master's (see `become_slave`).
    target_ask: Option<TargetAsk>,
    /// The time of the latest input (for decisions made while handling a packet).
    last_now: Instant,
    stats: PeerStats,
}

impl PeerProtocol {
    pub fn new(timings: PeerTimings) -> PeerProtocol {
        PeerProtocol {
            timings,
            phase: Phase::Idle,
            params: None,
            my_node: Node::default(),
            queue: RequestQueue::default(),
            session: None,
            out: VecDeque::new(),
            events: VecDeque::new(),
            oob_sequence: 0,
            scratch: Vec::new(),
            decode_errors: BTreeMap::new(),
            departed: VecDeque::new(),
            early_withdrawals: VecDeque::new(),
            hearsay: Vec::new(),
            contests: TokenTimes::default(),
            conflict_losers: TokenTimes::default(),
            silenced: TokenTimes::default(),
            probes: Vec::new(),
            next_probe: None,
            fallbacks: VecDeque::new(),
            strangers: Default::default(),
            claims: Vec::new(),
            watches: Vec::new(),
            refusal: None,
            rejoins_left: 0,
            target_ask: None,
            last_now: Instant::now(),
            stats: PeerStats::default(),
        }
    }

    pub fn timings(&self) -> &PeerTimings {
        &self.timings
    }

    pub fn set_timings(&mut self, timings: PeerTimings) {
        self.timings = timings;
    }

    pub fn stats(&self) -> &PeerStats {
        &self.stats
    }

    pub fn queue(&self) -> &RequestQueue {
        &self.queue
    }

    pub fn is_in_game(&self) -> bool {
        self.phase == Phase::InGame
    }

    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// Decode failures by reason.
    pub fn decode_errors(&self) -> &BTreeMap<&'static str, u64> {
        &self.decode_errors
    }

    fn order(&self) -> &NodeOrder {
        &self.params.as_ref().expect("params while active").order
    }

    fn same_node(&self, a: &Node, b: &Node) -> bool {
        (self.order())(a, b) == std::cmp::Ordering::Equal
    }

    fn my_token(&self) -> u32 {
        self.params.as_ref().map_or(0, |p| p.token)
    }

    fn own_request(&self) -> ConnectRequest {
        let params = self.params.as_ref().expect("params while active");
        ConnectRequest {
            token: params.token,
            node: self.my_node,
            name: params.name,
        }
    }

    /// This player's tokens of earlier sessions (a backend switch carries them), if any.
    fn earlier_tokens(&self) -> Option<EarlierTokens> {
        let resume = self.params.as_ref()?.resume.as_ref()?;
        let tokens = resume.earlier_tokens();
        (!tokens.as_slice().is_empty()).then_some(tokens)
    }

    /// This peer's rank among the players: how many have a higher node.
    fn rank(&self) -> u32 {
        let Some(session) = &self.session else {
            return 0;
        };
        let order = Arc::clone(self.order());
        session
            .players()
            .iter()
            .filter(|p| order(&p.node, &self.my_node) == std::cmp::Ordering::Greater)
            .count() as u32
    }

    /// Players with a higher node than this peer's that were heard from within `window`: while
    /// one of them is alive, it answers connect requests, not this peer. A player whose own
    /// packets never reached this peer (a newcomer seated here, or listed by a reply, whose first
    /// game packet has not come) does not count: it may not be in the game yet, and a newcomer
    /// holds the requests it knows for the deference window after it gets in, so waiting for its
    /// answer could outlast the requester's connect loop.
    fn live_higher_players(&self, now: Instant, window: Duration) -> Vec<Node> {
        let Some(session) = &self.session else {
            return Vec::new();
        };
        let order = Arc::clone(self.order());
        session
            .players()
            .iter()
            .filter(|p| order(&p.node, &self.my_node) == std::cmp::Ordering::Greater)
            .filter(|p| p.confirmed && now.saturating_duration_since(p.last_heard) < window)
            .map(|p| p.node)
            .collect()
    }

    /// Forward connect requests to the higher-ranked players (a request sent to one node, or
    /// a broadcast one of them missed, still reaches the peer that should answer it).
    fn forward_to_higher(&mut self, now: Instant, requests: Vec<ConnectRequest>) {
        if requests.is_empty() {
            return;
        }
        let window = self.deference_window();
        // A request that came with a hello goes in a packet of its own, followed by that hello
        // (see `hello_owner`): without it, the higher player could find the game full because
        // it still seats the requester's earlier session, and refuse it.
        let (with_hello, plain): (Vec<ConnectRequest>, Vec<ConnectRequest>) = requests
            .into_iter()
            .partition(|r| self.queue.get(r.token).is_some_and(|e| e.earlier.is_some()));
        let mut packets: Vec<Vec<RemoteEvent>> = with_hello
            .iter()
            .map(|r| {
                let earlier = self.queue.get(r.token).and_then(|e| e.earlier);
                let mut events = vec![RemoteEvent::ConnectQueue(vec![*r])];
                events.extend(earlier.map(|t| RemoteEvent::Resume(ResumeStep::Hello(t))));
                events
            })
            .collect();
        if !plain.is_empty() {
            packets.push(vec![RemoteEvent::ConnectQueue(plain)]);
        }
        for node in self.live_higher_players(now, window) {
            for events in &packets {
                self.send_oob(node, PacketType::SlotRequest, events.clone());
            }
            self.stats.requests_forwarded += 1;
        }
    }

    /// How recently a higher-ranked player must have been heard from to be trusted to answer.
    fn deference_window(&self) -> Duration {
        let keepalive = self
            .params
            .as_ref()
            .map_or(Duration::from_secs(1), |p| p.session.keepalive_interval);
        keepalive * 2 + self.timings.reply_wait * 2
    }

    // ----- sending ---------------------------------------------------------------------------

    /// Queue one out-of-band packet (a single datagram outside any link).
    fn send_oob(&mut self, to: Node, kind: PacketType, events: Vec<RemoteEvent>) {
        let slot = self.session.as_ref().map(|s| s.my_slot());
        self.send_oob_as(to, kind, slot, events);
    }

    /// Queue one out-of-band packet with the given sender slot.
    fn send_oob_as(
        &mut self,
        to: Node,
        kind: PacketType,
        sender_slot: Option<u8>,
        events: Vec<RemoteEvent>,
    ) {
        let Some(params) = &self.params else { return };
        self.oob_sequence = self.oob_sequence.wrapping_add(1).max(1);
        let header = PacketHeader {
            kind,
            sender_slot,
            joined: false,
            sequence: self.oob_sequence,
            ack: None,
            token: params.token,
        };
        let wire: Vec<WireEvent> = events
            .into_iter()
            .map(|event| WireEvent {
                reliable_id: event.is_reliable().then_some(1),
                event,
            })
            .collect();
        let mut buf = vec![0u8; params.session.max_payload];
        match encode_packet(&mut buf, &header, None, &wire) {
            Ok(len) => {
                buf.truncate(len);
                self.out.push_back((to, buf));
            }
            Err(err) => log::error!("peer: cannot encode a {kind:?} packet: {err}"),
        }
    }

    fn connect_target(&self) -> Option<Node> {
        let params = self.params.as_ref()?;
        params.target.or(params.broadcast)
    }

    /// The current player list (this peer included), as RE_PLAYERLIST entries.
    fn player_list(&self) -> Vec<PlayerListEntry> {
        let Some(session) = &self.session else {
            return Vec::new();
        };
        let mut list = vec![PlayerListEntry {
            slot: session.my_slot(),
            joined: session.is_joined(),
            token: session.my_token(),
            node: self.my_node,
            name: *session.my_name(),
        }];
        list.extend(session.players().iter().map(|p| PlayerListEntry {
            slot: p.slot,
            joined: p.joined,
            token: p.token,
            node: p.node,
            name: p.name,
        }));
        list.sort_by_key(|e| e.slot);
        list
    }

    /// Send a CONNECT_REPLY to a requester, and copies to every other player so they can snoop it.
    fn send_reply(&mut self, requester: &QueuedRequest, copies: bool) {
        let list = RemoteEvent::PlayerList(self.player_list());
        self.send_oob(requester.node, PacketType::ConnectReply, vec![list.clone()]);
        self.stats.replies_sent += 1;
        if copies {
            let others: Vec<Node> = self
                .session
                .iter()
                .flat_map(|s| s.players().iter())
                .filter(|p| p.token != requester.token)
                .map(|p| p.node)
                .collect();
            for node in others {
                self.send_oob(node, PacketType::ConnectReply, vec![list.clone()]);
                self.stats.snoop_copies_sent += 1;
            }
        }
    }

    fn send_refusal(&mut self, requester: &QueuedRequest) {
        let reason = format!(
            "game full: the peer-to-peer protocol seats at most {} players",
            self.timings.max_players
        );
        let events = vec![
            RemoteEvent::ConnectQueue(vec![ConnectRequest {
                token: requester.token,
                node: requester.node,
                name: requester.name,
            }]),
            RemoteEvent::SendText(ChatText::new(reason.as_bytes()).unwrap_or_default()),
        ];
        self.send_oob(requester.node, PacketType::ConnectRefused, events.clone());
        self.stats.refusals_sent += 1;
        let others: Vec<Node> = self
            .session
            .iter()
            .flat_map(|s| s.players().iter())
            .map(|p| p.node)
            .collect();
        for node in others {
            self.send_oob(node, PacketType::ConnectRefused, events.clone());
        }
    }

    // ----- receiving -------------------------------------------------------------------------

    /// The connect requests a packet carries; the sender's own request gets the node it was
    /// seen from.
    fn requests_in(events: &[WireEvent], from: &Node, sender_token: u32) -> Vec<ConnectRequest> {
        let mut out = Vec::new();
        for wire in events {
            if let RemoteEvent::ConnectQueue(requests) = &wire.event {
                for r in requests {
                    let node = if r.token == sender_token {
                        *from
                    } else {
                        r.node
                    };
                    out.push(ConnectRequest {
                        token: r.token,
                        node,
                        name: r.name,
                    });
                }
            }
        }
        out
    }

    fn player_list_in(events: &[WireEvent]) -> Option<&Vec<PlayerListEntry>> {
        events.iter().find_map(|w| match &w.event {
            RemoteEvent::PlayerList(list) => Some(list),
            _ => None,
        })
    }

    fn refusal_text(events: &[WireEvent]) -> String {
        events
            .iter()
            .find_map(|w| match &w.event {
                RemoteEvent::SendText(text) => Some(text.to_string_lossy()),
                _ => None,
            })
            .unwrap_or_else(|| "connection refused".to_string())
    }

    fn handle_connecting(
        &mut self,
        now: Instant,
        from: Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) {
        let header = &packet.header;
        match header.kind {
            PacketType::Connect => {
                if header.token == self.my_token() || self.same_node(&from, &self.my_node) {
                    return; // our own broadcast came back
                }
                let requests = Self::requests_in(events, &from, header.token);
                match (self.order())(&from, &self.my_node) {
                    std::cmp::Ordering::Less => {
                        // We outrank the sender: it is our slave; keep its request.
                        for r in &requests {
                            self.queue_for_startup(r);
                        }
                        self.send_subdue(from);
                        self.stats.subdues_sent += 1;
                    }
                    _ => self.become_slave(now, from, requests),
                }
            }
            PacketType::SubdueSlave => {
                let requests = Self::requests_in(events, &from, header.token);
                self.become_slave(now, from, requests)
            }
            PacketType::SlotRequest => {
                let requests = Self::requests_in(events, &from, header.token);
                let my_token = self.my_token();
                for r in requests.iter().filter(|r| r.token != my_token) {
                    self.queue_for_startup(r);
                }
                self.greet_relayed(from, header.token, &requests);
            }
            PacketType::ConnectReply => self.take_reply(now, from, packet, events),
            PacketType::ConnectRefused => self.take_refusal(events),
            PacketType::Disconnect if header.sender_slot.is_none() => {
                self.take_withdrawal(from, header, events)
            }
            _ => self.stats.packets_ignored += 1,
        }
    }

    fn handle_slot_request(
        &mut self,
        now: Instant,
        from: Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) {
        match packet.header.kind {
            PacketType::SubdueSlave => self.introduce_master(from),
            PacketType::SlotRequest => {
                // A slave of this slave (a lower peer that met it first) forwards its queue:
                // pass it on at once too, or the master's greetings to the requesters in it
                // wait for this peer's next scheduled SLOT_REQUEST.
                self.queue_and_pass_on(from, packet.header.token, events);
            }
            PacketType::Connect => {
                // A request sent to this slave's address only (`connect HOST:PORT`): its sender
                // hears nobody else. Keep it and pass it on to the master at once, which tells
                // the sender (`greet_relayed`). Dropped, the sender would end its connect loop
                // alone and start a game of its own.
                let Phase::SlotRequest { master, .. } = self.phase else {
                    return;
                };
                if packet.header.token == self.my_token()
                    || self.same_node(&from, &self.my_node)
                    || self.same_node(&from, &master)
                {
                    self.stats.packets_ignored += 1;
                    return;
                }
                self.queue_and_pass_on(from, packet.header.token, events);
                // A higher node is still looking for players: it wins the election over this
                // slave's master, which yields to it when it hears it too. Ask it for the slot
                // from now on: the master may be gone without a word (it was seated elsewhere
                // before this slave's request reached it, then left), and would leave this slave
                // to wait out `slot_tries` while the others start a game without it.
                if (self.order())(&from, &master) == std::cmp::Ordering::Greater {
                    log::debug!("peer: a higher node is connecting; asking it for the slot");
                    // It is this slave's master now, not a requester this slave holds; the old
                    // master, alive, yields to it with its own request (dead, it has none).
                    let order = Arc::clone(self.order());
                    self.queue.retain(|r| {
                        r.token != packet.header.token
                            && order(&r.node, &master) != std::cmp::Ordering::Equal
                    });
                    self.phase = Phase::SlotRequest {
                        master: from,
                        tries: 0,
                        next: now,
                    };
                }
            }
            PacketType::ConnectReply => self.take_reply(now, from, packet, events),
            PacketType::ConnectRefused => self.take_refusal(events),
            PacketType::Disconnect if packet.header.sender_slot.is_none() => {
                self.take_withdrawal(from, &packet.header, events)
            }
            PacketType::Disconnect => {
                // The master left the game before it seated this slave: nobody will answer the
                // slot requests. Start over at once (the players still in the game answer a
                // new request) instead of waiting out `slot_tries`.
                let Phase::SlotRequest { master, .. } = self.phase else {
                    return;
                };
                if !self.same_node(&from, &master) {
                    self.stats.packets_ignored += 1;
                    return;
                }
                log::info!("peer: the temporary master left; connecting again");
                self.phase = Phase::Connecting {
                    tries: 0,
                    next: now,
                };
            }
            _ => self.stats.packets_ignored += 1,
        }
    }

    /// A peer at this slave's own `connect` address outranks it and would make it its slave
    /// too (see `become_slave`): pass it the master's request as a slave passes a queue on
    /// (SLOT_REQUEST), so it greets the master, and one of the two yields to the other.
    fn introduce_master(&mut self, from: Node) {
        let Phase::SlotRequest { master, .. } = self.phase else {
            return;
        };
        let Some(ask) = self.target_ask.as_ref() else {
            self.stats.packets_ignored += 1;
            return;
        };
        if self.same_node(&from, &master) || ask.master_requests.is_empty() {
            self.stats.packets_ignored += 1;
            return;
        }
        let mut requests = vec![self.own_request()];
        requests.extend(ask.master_requests.iter().copied());
        self.send_oob(
            from,
            PacketType::SlotRequest,
            vec![RemoteEvent::ConnectQueue(requests)],
        );
        self.stats.requests_forwarded += 1;
    }

    /// A slave passes requests that reached it (a CONNECT sent to its address, or a queue its
    /// own slave forwarded) on to its master at once, in an extra SLOT_REQUEST with its own
    /// request (not counted as one of its `slot_tries`), not only with its next scheduled one:
    /// the master greets the requesters only when a forwarded queue names them
    /// (`greet_relayed`), and their connect loops are short. Passing on each repetition gives
    /// the greeting as many chances as the requester has requests left.
    fn pass_on_to_master(&mut self, requests: Vec<ConnectRequest>) {
        let Phase::SlotRequest { master, .. } = self.phase else {
            return;
        };
        let mut forwarded = vec![self.own_request()];
        forwarded.extend(
            requests
                .into_iter()
                .filter(|r| !self.departed.contains(&r.token) && !self.same_node(&r.node, &master)),
        );
        if forwarded.len() > 1 {
            self.send_oob(
                master,
                PacketType::SlotRequest,
                vec![RemoteEvent::ConnectQueue(forwarded)],
            );
            self.stats.requests_forwarded += 1;
        }
    }

    /// A waiting slave got connect requests (a CONNECT sent to it, or its own slave's queue):
    /// keep them for its own SLOT_REQUESTs and pass them on to its master at once.
    fn queue_and_pass_on(&mut self, from: Node, sender_token: u32, events: &[WireEvent]) {
        let my_token = self.my_token();
        let master = match self.phase {
            Phase::SlotRequest { master, .. } => Some(master),
            _ => None,
        };
        let requests: Vec<ConnectRequest> = Self::requests_in(events, &from, sender_token)
            .into_iter()
            .filter(|r| r.token != my_token)
            .collect();
        // The master's own request (passed down by a slave that heard it) is not one to hold.
        for r in &requests {
            if !master.is_some_and(|m| self.same_node(&r.node, &m)) {
                self.queue_for_startup(r);
            }
        }
        self.pass_on_to_master(requests);
    }

    /// A slave forwarded requests of peers this one may never have heard (they sent their
    /// connect requests to the slave's address only, not by broadcast): tell each what this
    /// peer's broadcast would have told it. A lower one is told SUBDUE_SLAVE, so it waits for
    /// its slot instead of ending its connect loop alone; a higher one gets this peer's CONNECT,
    /// so it subdues this peer and the election ends with one master.
    fn greet_relayed(&mut self, from: Node, sender_token: u32, requests: &[ConnectRequest]) {
        let my_token = self.my_token();
        let order = Arc::clone(self.order());
        for r in requests {
            if r.token == sender_token
                || r.token == my_token
                || order(&r.node, &from) == std::cmp::Ordering::Equal
                || order(&r.node, &self.my_node) == std::cmp::Ordering::Equal
                || self.departed.contains(&r.token)
            {
                continue;
            }
            if order(&r.node, &self.my_node) == std::cmp::Ordering::Greater {
                self.send_connect(r.node);
            } else {
                self.send_subdue(r.node);
                self.stats.subdues_sent += 1;
            }
        }
    }

    /// Send this peer's CONNECT (its own request, and the resume hello naming its earlier
    /// sessions if it has any) to `to`.
    fn send_connect(&mut self, to: Node) {
        let mut events = vec![RemoteEvent::ConnectQueue(vec![self.own_request()])];
        if let Some(earlier) = self.earlier_tokens() {
            events.push(RemoteEvent::Resume(ResumeStep::Hello(earlier)));
        }
        self.send_oob(to, PacketType::Connect, events);
        self.stats.connects_sent += 1;
    }

    /// Tell a lower starting peer it is this one's slave. The SUBDUE_SLAVE carries this peer's
    /// own request, as its CONNECT would: a slave that meets a higher peer at its own `connect`
    /// address passes it on (`introduce_master`).
    fn send_subdue(&mut self, to: Node) {
        let events = vec![RemoteEvent::ConnectQueue(vec![self.own_request()])];
        self.send_oob(to, PacketType::SubdueSlave, events);
    }

    /// Keep a request for the end of the connect loop, unless its requester gave up.
    fn queue_for_startup(&mut self, request: &ConnectRequest) {
        self.settle_early_withdrawals(&[(request.token, request.node)]);
        if !self.departed.contains(&request.token) {
            self.queue
                .merge(request, Reply::AtStartupEnd, self.last_now);
        }
    }

    /// Yield to `master` (a higher node whose CONNECT, carrying `master_requests`, or
    /// SUBDUE_SLAVE came) and wait for a slot. A peer told a `connect` address other than the
    /// master's keeps sending its requests there for as long as its connect loop would have:
    /// a game started there a little later (after this peer's first requests) hears of this
    /// one only so. Before, it heard nothing more and ran a game of its own beside the
    /// master's (`c/peer_game.c`s on one host, each given the address of another).
    fn become_slave(&mut self, now: Instant, master: Node, master_requests: Vec<ConnectRequest>) {
        if let Phase::Connecting { tries, next } = self.phase {
            let target = self.params.as_ref().and_then(|p| p.target);
            self.target_ask = target
                .filter(|t| !self.same_node(t, &master) && !self.same_node(t, &self.my_node))
                .map(|target| TargetAsk {
                    target,
                    until: next
                        + self.timings.connect_interval
                            * self.timings.connect_tries.saturating_sub(tries),
                    master_requests,
                });
            log::debug!("peer: yielding to a higher node; requesting a slot");
            self.phase = Phase::SlotRequest {
                master,
                tries: 0,
                next: now,
            };
        }
    }

    /// A CONNECT_REPLY while starting: if it seats us, enter the game.
    fn take_reply(
        &mut self,
        now: Instant,
        from: Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) {
        let Some(list) = Self::player_list_in(events) else {
            self.stats.packets_rejected += 1;
            return;
        };
        let my_token = self.my_token();
        let Some(me) = list.iter().find(|e| e.token == my_token).copied() else {
            self.stats.packets_ignored += 1;
            return;
        };
        let resume = self.params.as_mut().and_then(|p| p.resume.take());
        let params = self.params.clone().expect("params while active");
        self.my_node = me.node;
        let node_eq = node_eq_of(&params.order);
        let mut session = Session::new_mesh(
            params.session,
            node_eq,
            LocalPlayer {
                slot: me.slot,
                token: my_token,
                name: params.name,
            },
            now,
        );
        session.set_same_host(Arc::clone(&params.same_host));
        if let Some(state) = resume {
            session.set_resume_state(Arc::unwrap_or_clone(state));
        }
        let placed: Vec<(u32, Node)> = list
            .iter()
            .map(|e| {
                let node = if e.token == packet.header.token {
                    from
                } else {
                    e.node
                };
                (e.token, node)
            })
            .collect();
        self.settle_early_withdrawals(&placed);
        let departed = self.departed.clone();
        for entry in list
            .iter()
            .filter(|e| e.token != my_token && !departed.contains(&e.token))
        {
            let node = if entry.token == packet.header.token {
                from
            } else {
                entry.node
            };
            session.add_player(now, entry.slot, node, entry.token, entry.name, entry.joined);
        }
        self.session = Some(session);
        self.phase = Phase::InGame;
        self.events
            .push_back(GameEvent::Connected { slot: me.slot });
        log::info!("peer: connected in slot {}", me.slot);
        // Requests we held that the list does not seat are ours to answer too, but the peers
        // already in the game may be seating them right now: give their replies (snooped, or
        // their player lists through the links) time to arrive first.
        let seated: Vec<u32> = list.iter().map(|e| e.token).collect();
        self.queue.retain(|e| !seated.contains(&e.token));
        let due = now + self.deference_window() + self.timings.reply_wait * self.rank();
        for entry in self.queue.iter_mut() {
            entry.reply = Reply::At(due);
        }
    }

    fn take_refusal(&mut self, events: &[WireEvent]) {
        let my_token = self.my_token();
        let for_us = events.iter().any(|w| {
            matches!(&w.event, RemoteEvent::ConnectQueue(q) if q.iter().any(|r| r.token == my_token))
        });
        if !for_us {
            self.stats.packets_ignored += 1;
            return;
        }
        let text = Self::refusal_text(events);
        if self.rejoins_left > 0 {
            // Reconnecting after a slot conflict: the others may still list our old entry for a
            // moment (and so look full). Try again a little later instead of giving up.
            log::info!("peer: refused while reconnecting ({text}); trying again");
            self.rejoins_left -= 1;
            self.queue.clear();
            self.phase = Phase::Connecting {
                tries: 0,
                next: self.last_now + self.timings.slot_interval,
            };
            return;
        }
        // A peer whose view is stale (it still seats this player's earlier session, or a player
        // that left a moment ago) can find the game full while the others would seat this one.
        // Go on asking everyone (a slave whose master refused asks everyone again); the refusal
        // stands only if the connect loop ends without a reply, and then no game of our own is
        // started.
        self.stats.refusals_received += 1;
        let refused_before = self.refusal.replace(text.clone()).is_some();
        if let Phase::SlotRequest { .. } = self.phase {
            if refused_before {
                self.give_up_refused(&text);
                return;
            }
            self.phase = Phase::Connecting {
                tries: 0,
                next: self.last_now,
            };
        }
        log::info!("peer: refused while connecting ({text}); asking on");
    }

    fn give_up_refused(&mut self, text: &str) {
        log::warn!("peer: connect refused: {text}");
        self.withdraw_own_request();
        self.reset();
        self.events.push_back(GameEvent::Error {
            text: format!("connect refused: {text}"),
        });
    }

    /// A connect request may say which sessions the sender had before (it switched packet
    /// backend, or reconnects): those players are gone, whether or not their DISCONNECT came
    /// (before this request, or at all). Without this a full game refuses a player that comes
    /// back at once, because it still seats the player's earlier session.
    ///
    /// Every player is told the others' tokens, so the claim alone proves nothing: a seated
    /// player, or a queued request of a player still connecting, is removed at once only if the
    /// request comes from its own node or it has been silent for
    /// `Session::earlier_session_silence` (a switched player's old socket is closed; a
    /// connecting player repeats its request every connect or slot-request interval). One still
    /// heard from is only claimed: it is removed once it goes silent, and the claim is refused
    /// (counted) if it still talks two silences later. The claimant's request waits for the
    /// decision (`answer_due_requests`). A token known here neither as a player nor as a
    /// request (a stranger's packet may overtake a newcomer's first request) is only watched:
    /// the claimant does not wait for it, and it is retired if nothing of it shows up within the
    /// silence; if its request or a seat does show up, the claim is decided as above
    /// (`review_watches`). A token that already left is retired at once. While a claim on a
    /// seated player is undecided, no request is answered here (`seat_claimed`).
    ///
    /// `from` is the node the claim came from, or None for a hello a player forwarded with the
    /// claimant's request (`hello_owner`): such a claim is decided by silence alone.
    fn retire_earlier_sessions(
        &mut self,
        now: Instant,
        from: Option<&Node>,
        sender_token: u32,
        tokens: EarlierTokens,
    ) {
        let my_token = self.my_token();
        let earlier: Vec<u32> = tokens
            .as_slice()
            .iter()
            .copied()
            .filter(|t| *t != sender_token && *t != my_token)
            .collect();
        let Some(silence) = self.session.as_ref().map(|s| s.earlier_session_silence()) else {
            return;
        };
        let mut retire = Vec::new();
        for token in earlier {
            if self.last_heard_of(token).is_none() && !self.departed.contains(&token) {
                if !self
                    .watches
                    .iter()
                    .any(|w| w.0 == token && w.1 == sender_token)
                {
                    if self.watches.len() >= MAX_DEPARTED {
                        // Many unknown tokens named (a forger): forget the oldest rather than
                        // retire it unseen.
                        self.watches.remove(0);
                    }
                    self.watches.push((token, sender_token, from.copied(), now));
                }
                continue;
            }
            let settled = self
                .last_heard_of(token)
                .is_none_or(|heard| self.claim_holds_at_once(token, heard, from, now, silence));
            if settled {
                retire.push(token);
            } else {
                self.add_claim(token, sender_token, now);
            }
        }
        self.retire_tokens_now(&mut retire);
    }

    /// Whether a claim on `token`, last heard from at `heard`, made from `from`, is honoured
    /// at once: it came from the token's own node, or the token has been silent long enough.
    fn claim_holds_at_once(
        &self,
        token: u32,
        heard: Instant,
        from: Option<&Node>,
        now: Instant,
        silence: Duration,
    ) -> bool {
        now.saturating_duration_since(heard) >= silence
            || from.is_some_and(|from| self.placed_at(token, from))
    }

    /// The hello a CONNECT or SLOT_REQUEST carries, if any.
    fn hello_in(events: &[WireEvent]) -> Option<EarlierTokens> {
        events.iter().find_map(|w| match &w.event {
            RemoteEvent::Resume(ResumeStep::Hello(tokens)) => Some(*tokens),
            _ => None,
        })
    }

    /// Whose earlier sessions a packet's hello names, and the node the claim counts as coming
    /// from: the sender's, from its node, as a rule. A SLOT_REQUEST that a player of this game
    /// sends from its own node with one request that is not its own forwards that request
    /// (`forward_to_higher`), and the hello is the requester's; the forwarder's node proves
    /// nothing about the tokens named, so that claim is decided by silence alone.
    fn hello_owner(
        &self,
        from: &Node,
        header: &PacketHeader,
        requests: &[ConnectRequest],
    ) -> (u32, Option<Node>) {
        let forwarded = match requests {
            [only] if header.kind == PacketType::SlotRequest && only.token != header.token => self
                .session
                .as_ref()
                .is_some_and(|s| s.slot_of(from, header.token).is_some()),
            _ => false,
        };
        if forwarded {
            (requests[0].token, None)
        } else {
            (header.token, Some(*from))
        }
    }

    /// Whether a claim that a seated player is someone's earlier session is undecided here.
    fn seat_claimed(&self) -> bool {
        let Some(session) = &self.session else {
            return false;
        };
        self.claims
            .iter()
            .any(|c| session.players().iter().any(|p| p.token == c.0))
    }

    /// Keep a pending claim on `token` by `sender_token`, made at `since` (once per pair).
    fn add_claim(&mut self, token: u32, sender_token: u32, since: Instant) {
        if !self
            .claims
            .iter()
            .any(|c| c.0 == token && c.1 == sender_token)
        {
            self.claims.push((token, sender_token, since));
        }
    }

    /// Decide the watched tokens (see `retire_earlier_sessions`): one that now has a seat or a
    /// queued request here is claimed by the rule for known tokens (retired at once if the claim
    /// came from its node or it has been silent long enough, else claimed from when it was
    /// first named); one still unknown a silence after it was named is retired.
    fn review_watches(&mut self, now: Instant) {
        if self.watches.is_empty() {
            return;
        }
        let Some(silence) = self.session.as_ref().map(|s| s.earlier_session_silence()) else {
            self.watches.clear();
            return;
        };
        let mut retire = Vec::new();
        let mut claims = Vec::new();
        let mut watches = std::mem::take(&mut self.watches);
        watches.retain(|&(token, sender_token, from, since)| {
            if self.departed.contains(&token) {
                return false;
            }
            match self.last_heard_of(token) {
                None if now.saturating_duration_since(since) >= silence => {
                    retire.push(token);
                    false
                }
                None => true,
                Some(heard) => {
                    if self.claim_holds_at_once(token, heard, from.as_ref(), now, silence) {
                        retire.push(token);
                    } else {
                        claims.push((token, sender_token, since));
                    }
                    false
                }
            }
        });
        self.watches = watches;
        for (token, sender_token, since) in claims {
            self.add_claim(token, sender_token, since);
        }
        self.retire_tokens_now(&mut retire);
    }

    /// When the player or connecting requester holding `token` was last heard from here: the
    /// later of its seat's last packet and its queued request's (a seat given to a newcomer
    /// whose reply was lost hears only its requests). None if it is neither seated nor queued.
    fn last_heard_of(&self, token: u32) -> Option<Instant> {
        let seated = self
            .session
            .as_ref()
            .and_then(|s| s.players().iter().find(|p| p.token == token))
            .map(|p| p.last_heard);
        let queued = self.queue.get(token).map(|e| e.heard);
        seated.max(queued)
    }

    /// Whether this peer seats `token`, or has its request queued, at `node`.
    fn placed_at(&self, token: u32, node: &Node) -> bool {
        let seated = self
            .session
            .as_ref()
            .and_then(|s| s.players().iter().find(|p| p.token == token))
            .map(|p| p.node);
        let queued = self.queue.get(token).map(|e| e.node);
        [seated, queued]
            .into_iter()
            .flatten()
            .any(|n| self.same_node(&n, node))
    }

    /// Remove the players holding `tokens` (earlier sessions of a player that came back; each
    /// once, whatever the order given) and forget their requests and seats.
    fn retire_tokens_now(&mut self, tokens: &mut Vec<u32>) {
        if tokens.is_empty() {
            return;
        }
        tokens.sort_unstable();
        tokens.dedup();
        let tokens: &[u32] = tokens;
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let seated: Vec<u8> = session
            .players()
            .iter()
            .filter(|p| tokens.contains(&p.token))
            .map(|p| p.slot)
            .collect();
        for slot in seated {
            session.remove_player(slot, "came back at a new address");
            self.stats.earlier_sessions_retired += 1;
        }
        session.retire_tokens(tokens);
        self.claims.retain(|c| !tokens.contains(&c.0));
        self.watches.retain(|w| !tokens.contains(&w.0));
        for &token in tokens {
            // A seat given to an earlier session that never confirmed it: stop resending it.
            self.queue.remove(token);
            self.note_departed(token);
        }
        if let Some(session) = self.session.as_mut() {
            session.settle_claims(self.last_now);
        }
    }

    /// Decide the pending claims (see `retire_earlier_sessions`): a claimed player that left or
    /// went silent is retired; one still heard from two silences after the claim stays, and the
    /// claim is refused.
    fn settle_earlier_claims(&mut self, now: Instant) {
        self.review_watches(now);
        if self.claims.is_empty() {
            return;
        }
        let Some(session) = self.session.as_ref() else {
            self.claims.clear();
            return;
        };
        let silence = session.earlier_session_silence();
        let mut retire = Vec::new();
        let mut refused = 0;
        let mut claims = std::mem::take(&mut self.claims);
        claims.retain(|&(token, _, since)| match self.last_heard_of(token) {
            None => {
                retire.push(token);
                false
            }
            Some(heard) if now.saturating_duration_since(heard) >= silence => {
                retire.push(token);
                false
            }
            Some(_) if now.saturating_duration_since(since) >= silence * 2 => {
                refused += 1;
                false
            }
            Some(_) => true,
        });
        self.claims = claims;
        if refused > 0 {
            log::warn!(
                "peer: a connect request named a live player as its earlier session; refused"
            );
            self.stats.earlier_claims_refused += refused;
        }
        self.retire_tokens_now(&mut retire);
    }

    /// When the next pending claim may be decided.
    fn next_claim_decision(&self) -> Option<Instant> {
        let session = self.session.as_ref()?;
        let silence = session.earlier_session_silence();
        let claims = self.claims.iter().map(|&(token, _, since)| {
            let silent_at = self
                .last_heard_of(token)
                .map_or(since, |heard| heard + silence);
            silent_at.min(since + silence * 2)
        });
        let watches = self.watches.iter().map(|w| w.3 + silence);
        claims.chain(watches).min()
    }

    // ----- withdrawn connect requests ------------------------------------------------------

    /// Tell the peers that may have seated this player while it was still connecting (its reply
    /// lost or on its way) that it gives up: a DISCONNECT without a sender slot naming its own
    /// request, sent where its requests went (the connect target or broadcast, and its
    /// temporary master), twice like a DISCONNECT. Without it, such a seat stayed for the
    /// silence timeout, and the other players saw a player that was not there.
    fn withdraw_own_request(&mut self) {
        let mut targets: Vec<Node> = Vec::new();
        match self.phase {
            Phase::Connecting { tries, .. } if tries > 0 => {}
            Phase::SlotRequest { master, .. } => targets.push(master),
            _ => return,
        }
        if let Some(target) = self.connect_target() {
            if !targets.iter().any(|t| self.same_node(t, &target)) {
                targets.push(target);
            }
        }
        let events = vec![RemoteEvent::ConnectQueue(vec![self.own_request()])];
        for _ in 0..2 {
            for to in &targets {
                self.send_oob_as(*to, PacketType::Disconnect, None, events.clone());
            }
        }
    }

    /// Whether a request, a seat or a player list here places `token` at `node`.
    fn requested_from(&self, token: u32, node: &Node) -> bool {
        self.placed_at(token, node)
            || self
                .hearsay
                .iter()
                .find(|h| h.token == token)
                .is_some_and(|h| self.same_node(&h.node, node))
    }

    /// Whether this peer has a request, seat or listing of `token`.
    fn knows_request(&self, token: u32) -> bool {
        self.last_heard_of(token).is_some() || self.hearsay.iter().any(|h| h.token == token)
    }

    /// Requests or listings that place a token at a node: those withdrawn before they came
    /// are gone now (see `early_withdrawals`).
    fn settle_early_withdrawals(&mut self, placed: &[(u32, Node)]) {
        if self.early_withdrawals.is_empty() {
            return;
        }
        for (token, node) in placed {
            let matched = self
                .early_withdrawals
                .iter()
                .position(|(t, n)| t == token && self.same_node(n, node));
            if let Some(at) = matched {
                self.early_withdrawals.remove(at);
                self.queue.remove(*token);
                self.note_departed(*token);
                if let Some(session) = self.session.as_mut() {
                    session.retire_tokens(&[*token]);
                }
                self.stats.requests_withdrawn += 1;
            }
        }
    }

    /// Whether `token` is seated here and its own packets confirmed the seat.
    fn seat_confirmed(&self, token: u32) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.players().iter().any(|p| p.token == token && p.confirmed))
    }

    /// A DISCONNECT without a sender slot: a player that was still connecting gave up, and its
    /// RE_CONNECTQUEUE names the requests withdrawn. A request is withdrawn by its own sender
    /// (the header token), from the node this peer has its request, seat or listing from; or
    /// passed on by a player of this game from that player's node (in the slot-request loop, by
    /// the temporary master), for a seat whose holder never sent a packet of its own. A
    /// withdrawal from its own sender is passed on to every player here, which may have seated
    /// it from a player list without ever hearing from it.
    fn take_withdrawal(&mut self, from: Node, header: &PacketHeader, events: &[WireEvent]) {
        let named: Vec<ConnectRequest> = events
            .iter()
            .filter_map(|w| match &w.event {
                RemoteEvent::ConnectQueue(requests) => Some(requests.iter().copied()),
                _ => None,
            })
            .flatten()
            .collect();
        let passer = match self.phase {
            Phase::SlotRequest { master, .. } => self.same_node(&master, &from),
            Phase::InGame => self
                .session
                .as_ref()
                .is_some_and(|s| s.slot_of(&from, header.token).is_some()),
            _ => false,
        };
        let my_token = self.my_token();
        let mut withdrawn: Vec<ConnectRequest> = Vec::new();
        let mut early = false;
        for r in named {
            if r.token == my_token || withdrawn.iter().any(|w| w.token == r.token) {
                continue;
            }
            let accepted = if r.token == header.token {
                if !self.knows_request(r.token) {
                    // Its request has not come yet (overtaken, or passed on by another peer):
                    // refuse it when it comes from this node.
                    self.early_withdrawals.retain(|(t, _)| *t != r.token);
                    if self.early_withdrawals.len() >= MAX_DEPARTED {
                        self.early_withdrawals.pop_front();
                    }
                    self.early_withdrawals.push_back((r.token, from));
                    early = true;
                    continue;
                }
                self.requested_from(r.token, &from)
            } else {
                passer && !self.seat_confirmed(r.token)
            };
            if accepted {
                let node = if r.token == header.token {
                    from
                } else {
                    r.node
                };
                withdrawn.push(ConnectRequest { node, ..r });
            }
        }
        if withdrawn.is_empty() {
            if !early {
                self.stats.packets_rejected += 1;
            }
            return;
        }
        let own = withdrawn.iter().any(|r| r.token == header.token);
        for r in &withdrawn {
            self.withdraw(r.token);
        }
        if own && self.phase == Phase::InGame {
            let players: Vec<Node> = self
                .session
                .iter()
                .flat_map(|s| s.players().iter())
                .map(|p| p.node)
                .collect();
            let events = vec![RemoteEvent::ConnectQueue(withdrawn)];
            for _ in 0..2 {
                for node in &players {
                    self.send_oob_as(*node, PacketType::Disconnect, None, events.clone());
                }
            }
        }
    }

    /// Forget everything about a requester that gave up connecting: its seat, its request, and
    /// any later request or player list that names it.
    fn withdraw(&mut self, token: u32) {
        if let Some(session) = self.session.as_mut() {
            let seat = session
                .players()
                .iter()
                .find(|p| p.token == token)
                .map(|p| p.slot);
            if let Some(slot) = seat {
                session.remove_player(slot, "stopped connecting");
            }
            session.retire_tokens(&[token]);
        }
        self.queue.remove(token);
        self.hearsay.retain(|h| h.token != token);
        self.contests.remove(token);
        self.note_departed(token);
        self.stats.requests_withdrawn += 1;
    }

    fn handle_in_game(
        &mut self,
        now: Instant,
        from: Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) {
        let header = &packet.header;
        match header.kind {
            PacketType::Connect | PacketType::SlotRequest => {
                let requests = Self::requests_in(events, &from, header.token);
                let hello = Self::hello_in(events);
                let owner = hello.map(|_| self.hello_owner(&from, header, &requests));
                if let (Some(tokens), Some((claimant, node))) = (hello, owner) {
                    self.retire_earlier_sessions(now, node.as_ref(), claimant, tokens);
                }
                let new = self.schedule_requests(now, header.token, &requests);
                if let (Some(tokens), Some((claimant, _))) = (hello, owner) {
                    if let Some(entry) = self.queue.get_mut(claimant) {
                        entry.earlier = Some(tokens);
                    }
                }
                self.forward_to_higher(now, new);
            }
            PacketType::ConnectReply => self.snoop_reply(now, from, packet, events),
            PacketType::ConnectRefused => {
                let my_token = self.my_token();
                let requests = Self::requests_in(events, &from, 0);
                if requests.iter().any(|r| r.token == my_token) {
                    // A "you were dropped" notice from a player this peer dropped for silence
                    // too: packets sent before the cut and held on the way (a neighbour table's
                    // queue, a stalled process) reach each side after both dropped the other,
                    // and each tells the other. Only the losing game may leave, so the notice
                    // carries the teller's player list and the same rule as for probes decides
                    // (`wins_over`); the winner's own answer then tells the loser.
                    if self.is_probing(&from)
                        && Self::player_list_in(events).is_some()
                        && self.wins_over(&from, events)
                    {
                        self.stats.dropped_notices_ignored += 1;
                        return;
                    }
                    // A notice says the player reconnects; a game-full refusal of this
                    // player's own connect request, arriving after a short connect loop ended
                    // unanswered and it started a game of its own, does not: the game must
                    // still be told that the library connects again by itself.
                    let mut text = Self::refusal_text(events);
                    let stranger = text == strangers::NOTICE;
                    // From the address of a player listed under another token: that process is
                    // gone, a new one answers there; this game plays on without it.
                    if stranger && self.drop_replaced_player(&from, header.token) {
                        return;
                    }
                    if !text.ends_with("reconnecting") {
                        text.push_str("; reconnecting");
                    }
                    // The answer to a probe: connect to the player that answered, into its game
                    // (a broadcast could be answered first by a player of the game being left,
                    // which is about to leave it too); should it not answer, to the other
                    // players of its game. Likewise a player that says this peer is not in its
                    // game (see `strangers`), unless its list says that game is full.
                    let room = Self::player_list_in(events)
                        .is_none_or(|list| list.len() < usize::from(self.timings.max_players));
                    let target = ((stranger && room) || self.is_probing(&from)).then_some(from);
                    let fallbacks = match target {
                        Some(_) => self.fallbacks_from(&from, header.token, events),
                        None => VecDeque::new(),
                    };
                    self.rejoin(now, &text, target);
                    if target.is_some() && !self.is_idle() {
                        self.fallbacks = fallbacks;
                    }
                    return;
                }
                for r in requests {
                    self.queue.remove(r.token);
                }
            }
            PacketType::Disconnect if header.sender_slot.is_none() => {
                self.take_withdrawal(from, header, events)
            }
            PacketType::Disconnect => {
                // Only from the player's own node: every player is told the others' tokens
                // and slots, so those alone prove nothing. The slot it says it leaves may not be
                // the one it is listed in here (a list put it in a slot someone else held, and
                // its own packets moved it): its token at its node is the player.
                let slot = self
                    .session
                    .as_ref()
                    .and_then(|s| s.slot_of(&from, header.token));
                match slot {
                    Some(slot) => self.remove_departed(slot, header.token, "left the game"),
                    None => self.stats.packets_rejected += 1,
                }
            }
            PacketType::GameState
            | PacketType::NodeAlive
            | PacketType::Join
            | PacketType::Unjoin => {
                let Some(session) = self.session.as_mut() else {
                    return;
                };
                let mut result = session.handle_packet(now, &from, packet, events);
                let retry = match result {
                    Err(Rejection::WrongSlot) => {
                        self.follow_claimed_slot(now, &from, &packet.header)
                    }
                    Err(Rejection::UnknownSender) => {
                        self.seat_from_hearsay(now, &from, &packet.header)
                            || self.remind_conflict_loser(now, &from, header.token)
                            || self.tell_dropped_player(now, &from, header, events)
                            || self.tell_stranger(now, &from, header)
                    }
                    _ => false,
                };
                if retry {
                    let session = self.session.as_mut().expect("in game");
                    result = session.handle_packet(now, &from, packet, events);
                }
                match result {
                    Ok(()) => {
                        // The newcomer talks to us: our reply arrived.
                        self.queue.remove(header.token);
                        self.take_protocol_events(now);
                    }
                    Err(_) => self.stats.packets_rejected += 1,
                }
            }
            PacketType::SubdueSlave => self.stats.packets_ignored += 1,
        }
    }

    /// Connect requests seen in the game loop: answer by rank. Returns the requests that were
    /// new here.
    fn schedule_requests(
        &mut self,
        now: Instant,
        sender_token: u32,
        requests: &[ConnectRequest],
    ) -> Vec<ConnectRequest> {
        let mut new = Vec::new();
        if let Some(own) = requests.iter().find(|r| r.token == sender_token) {
            self.forget_stale_player_at(now, &own.node, own.token);
            // The requester is heard at its own node (a claim on its request waits for silence).
            let (token, node) = (own.token, own.node);
            if self
                .queue
                .get(token)
                .is_some_and(|e| self.same_node(&e.node, &node))
            {
                if let Some(entry) = self.queue.get_mut(token) {
                    entry.heard = now;
                }
            }
        }
        let placed: Vec<(u32, Node)> = requests.iter().map(|r| (r.token, r.node)).collect();
        self.settle_early_withdrawals(&placed);
        let departed = self.departed.clone();
        let requests: Vec<ConnectRequest> = requests
            .iter()
            .filter(|r| !departed.contains(&r.token))
            .copied()
            .collect();
        let requests = &requests[..];
        let due = now + self.timings.reply_wait * self.rank();
        let my_token = self.my_token();
        for r in requests.iter().filter(|r| r.token != my_token) {
            let seated = self.session.as_ref().and_then(|s| {
                s.players()
                    .iter()
                    .find(|p| p.token == r.token)
                    .map(|p| p.slot)
            });
            match self.queue.get_mut(r.token) {
                // We seated it and it asks again: our reply was lost, resend now.
                Some(entry) if entry.assigned.is_some() => entry.reply = Reply::At(now),
                Some(_) => {}
                None => {
                    self.queue.merge(r, Reply::At(due), now);
                    if seated.is_none() {
                        new.push(*r);
                    }
                    if let (Some(slot), Some(entry)) = (seated, self.queue.get_mut(r.token)) {
                        // Seated by someone else and still asking: resend the reply by rank.
                        entry.assigned = Some(slot);
                        entry.replies_sent = 0;
                    }
                }
            }
        }
        new
    }

    /// A known player's packet claims another slot than the one listed here (two peers seated it
    /// at once, and it took the other reply): its own claim wins. Move it there if that slot is
    /// free, or settle the conflict with the player holding it. Returns true if it was moved.
    fn follow_claimed_slot(&mut self, now: Instant, from: &Node, header: &PacketHeader) -> bool {
        let Some(claimed) = header.sender_slot else {
            return false;
        };
        let Some(session) = self.session.as_mut() else {
            return false;
        };
        let Some(listed) = session.slot_of(from, header.token) else {
            return false;
        };
        if claimed >= self.timings.max_players {
            return false;
        }
        if session.move_player(listed, claimed) {
            self.stats.slots_followed += 1;
            return true;
        }
        let Some(player) = session.players().get(listed).cloned() else {
            return false;
        };
        // The slot it claims is taken here: clear it if the claim wins, then move the player
        // there with its link (a new link would restart the sequence and reliable ids the
        // player's side is already past, and everything on it would be dropped as old).
        let claimant = PlayerListEntry {
            slot: claimed,
            joined: player.joined,
            token: player.token,
            node: *from,
            name: player.name,
        };
        match self.clear_slot_for(now, &claimant) {
            Claim::Free => {
                let moved = self
                    .session
                    .as_mut()
                    .is_some_and(|s| s.move_player(listed, claimed));
                if moved {
                    self.stats.slots_followed += 1;
                }
                moved
            }
            Claim::Undecided => false,
            Claim::Lost => {
                if let Some(session) = self.session.as_mut() {
                    if session.slot_of(from, header.token) == Some(listed) {
                        session.remove_player(listed, "slot conflict");
                    }
                }
                false
            }
        }
    }

    /// A node asks to connect with a new token while a player with another token is listed at
    /// that node and has gone silent: that player reconnected, and the old entry is stale.
    fn forget_stale_player_at(&mut self, now: Instant, node: &Node, token: u32) {
        let silent_for = self.deference_window();
        let stale = self
            .others_at(node, token)
            .find(|p| now.saturating_duration_since(p.last_heard) >= silent_for)
            .map(|p| (p.slot, p.token));
        if let Some((slot, old_token)) = stale {
            self.remove_departed(slot, old_token, "reconnected");
        }
    }

    /// The players listed at `node` under another token than `token`.
    fn others_at<'a>(
        &'a self,
        node: &'a Node,
        token: u32,
    ) -> impl Iterator<Item = &'a Player> + 'a {
        self.session
            .iter()
            .flat_map(|s| s.players().iter())
            .filter(move |p| p.token != token && self.same_node(&p.node, node))
    }

    /// The player in `slot` (its token `token`) has left: remove it from the table (the game
    /// hears PLAYER_DISCONNECTED with `reason`) and remember its token as departed.
    fn remove_departed(&mut self, slot: u8, token: u32, reason: &str) {
        if let Some(session) = self.session.as_mut() {
            session.remove_player(slot, reason);
        }
        self.note_departed(token);
    }

    /// Remember a token that left, so late packets carrying it cannot seat it again.
    fn note_departed(&mut self, token: u32) {
        if self.departed.contains(&token) {
            return;
        }
        if self.departed.len() >= MAX_DEPARTED {
            self.departed.pop_front();
        }
        self.departed.push_back(token);
    }

    /// Another peer answered a request: take the new player(s) from its list and stand down.
    fn snoop_reply(
        &mut self,
        now: Instant,
        from: Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) {
        let Some(list) = Self::player_list_in(events) else {
            self.stats.packets_rejected += 1;
            return;
        };
        // Only a player of this game speaks for it. A reply from someone else is either
        // - an offer of another game that seats this peer: the answer of its own `connect`
        //   address, asked while a master was seating it elsewhere, which the sender drops when
        //   the seat is never confirmed; or
        // - a copy meant for a player the sender still lists at this peer's node: its earlier
        //   session, or a dead process that had this port (chaos seed 3101).
        // Merged, its players would sit in this peer's table though they and the rest of this
        // game never meet (they list someone else at this node).
        let my_token = self.my_token();
        let sender_seated = self
            .session
            .as_ref()
            .is_some_and(|s| s.players().iter().any(|p| p.token == packet.header.token));
        if !sender_seated {
            if list.iter().any(|e| e.token == my_token) {
                log::debug!(
                    "peer: an offer of a seat in another game came after this one; not taken"
                );
            } else {
                log::debug!("peer: a reply copy from another game, for this node's earlier player; not merged");
            }
            self.stats.packets_ignored += 1;
            return;
        }
        self.stats.replies_snooped += 1;
        let list = list.clone();
        self.merge_player_list(now, Some((packet.header.token, from)), &list);
    }

    /// Seat the players of a list (from a snooped reply, or sent reliably by the peer that seated
    /// them) that this peer does not know yet, and stop answering their requests. The entry of
    /// `sender` (token, node) is reached at the node its packet came from.
    fn merge_player_list(
        &mut self,
        now: Instant,
        sender: Option<(u32, Node)>,
        list: &[PlayerListEntry],
    ) {
        let my_token = self.my_token();
        let placed: Vec<(u32, Node)> = list
            .iter()
            .map(|e| match sender {
                Some((token, node)) if token == e.token => (e.token, node),
                _ => (e.token, e.node),
            })
            .collect();
        self.settle_early_withdrawals(&placed);
        let mut hearsay = Vec::new();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        for entry in list.iter().filter(|e| e.token != my_token) {
            if session.players().iter().any(|p| p.token == entry.token) {
                continue;
            }
            let node = match sender {
                Some((token, node)) if token == entry.token => node,
                _ => entry.node,
            };
            if self.departed.contains(&entry.token) {
                continue;
            }
            let taken =
                entry.slot == session.my_slot() || session.players().get(entry.slot).is_some();
            if taken {
                // Hearsay cannot evict anyone: remember the entry until the player's own
                // packets say where it sits.
                hearsay.push(PlayerListEntry { node, ..*entry });
            } else {
                session.add_player(now, entry.slot, node, entry.token, entry.name, entry.joined);
            }
        }
        // Requests someone else answered are not ours to answer any more.
        self.queue
            .retain(|e| e.assigned.is_some() || !list.iter().any(|l| l.token == e.token));
        for entry in hearsay {
            self.remember_hearsay(entry);
        }
    }

    fn remember_hearsay(&mut self, entry: PlayerListEntry) {
        self.hearsay.retain(|h| h.token != entry.token);
        if self.hearsay.len() >= MAX_DEPARTED {
            self.hearsay.remove(0);
        }
        self.hearsay.push(entry);
    }

    /// A packet from a node not in the table: if a player list told us about this player but
    /// its slot was taken here, its own packet now claims a slot; seat it there if that slot is
    /// free or held only by hearsay, or settle a real conflict. Returns true if it was seated.
    fn seat_from_hearsay(&mut self, now: Instant, from: &Node, header: &PacketHeader) -> bool {
        let Some(claimed) = header.sender_slot else {
            return false;
        };
        let Some(at) = self.hearsay.iter().position(|h| h.token == header.token) else {
            return false;
        };
        let entry = self.hearsay.remove(at);
        if claimed >= self.timings.max_players || self.departed.contains(&entry.token) {
            return false;
        }
        let claimant = PlayerListEntry {
            slot: claimed,
            node: *from,
            ..entry
        };
        match self.clear_slot_for(now, &claimant) {
            Claim::Free => {
                let Some(session) = self.session.as_mut() else {
                    return false;
                };
                session.add_player(
                    now,
                    claimant.slot,
                    claimant.node,
                    claimant.token,
                    claimant.name,
                    claimant.joined,
                );
                // The players this peer told of the slot's earlier holder (a newcomer it seated
                // meanwhile was given a list with it) may never hear of this one otherwise:
                // only a seater sends lists, and this one was seated elsewhere. Tell them all.
                let list = RemoteEvent::PlayerList(self.player_list());
                if let Some(session) = self.session.as_mut() {
                    if let Err(err) = session.queue_event(list) {
                        log::warn!("peer: cannot send the player list: {err}");
                    }
                }
                true
            }
            Claim::Undecided => {
                self.remember_hearsay(claimant);
                false
            }
            Claim::Lost => false,
        }
    }

    /// Make `claimant.slot` free for a player whose own packet claims it, if the claim wins.
    /// The slot may be free already, or held by an unconfirmed entry (moved aside to hearsay),
    /// or by this peer or a confirmed player.
    ///
    /// A confirmed holder that has gone silent for the deference window while the claimant
    /// talks has left (its DISCONNECT was lost; a player that switched backend is often seated
    /// again in its old slot): the claim wins. A holder heard within the window is not judged at
    /// once, because a ghost is silent only from its last packet on: the claim stays undecided
    /// until a later packet of the claimant's finds the holder silent, or, once the claim is a
    /// window old and both still talk, it is a real conflict (two answers seated two players in
    /// one slot), settled by token, the same way at every peer. A claim on this peer's own slot
    /// is a real conflict at once.
    fn clear_slot_for(&mut self, now: Instant, claimant: &PlayerListEntry) -> Claim {
        let window = self.deference_window();
        let (my_token, my_node) = (self.my_token(), self.my_node);
        let Some(session) = self.session.as_mut() else {
            return Claim::Lost;
        };
        let slot = claimant.slot;
        let is_me = slot == session.my_slot();
        let (token, node, heard) = if is_me {
            (my_token, my_node, now)
        } else {
            match session.players().get(slot).cloned() {
                None => return self.end_contest(claimant.token, Claim::Free),
                Some(p) if !p.confirmed => {
                    // Hearsay placed someone here; it will claim its own slot when it talks,
                    // and goes on with its link there.
                    session.displace_player(now, slot, "moved to another slot");
                    self.remember_hearsay(PlayerListEntry {
                        slot: p.slot,
                        joined: p.joined,
                        token: p.token,
                        node: p.node,
                        name: p.name,
                    });
                    return self.end_contest(claimant.token, Claim::Free);
                }
                Some(p) => (p.token, p.node, p.last_heard),
            }
        };
        if !is_me && now.saturating_duration_since(heard) >= window {
            self.remove_departed(slot, token, "went silent; its slot was taken");
            self.stats.silent_holders_replaced += 1;
            return self.end_contest(claimant.token, Claim::Free);
        }
        if !is_me {
            let first = self.contests.get(claimant.token).unwrap_or(now);
            if now.saturating_duration_since(first) < window {
                self.contests.set(claimant.token, first);
                return Claim::Undecided;
            }
        }
        let outcome = if self.settle_slot_conflict(now, claimant, (token, node)) {
            Claim::Free
        } else {
            Claim::Lost
        };
        self.end_contest(claimant.token, outcome)
    }

    /// Forget `token`'s contest (it was decided) and pass the decision on.
    fn end_contest(&mut self, token: u32, outcome: Claim) -> Claim {
        self.contests.remove(token);
        outcome
    }

    /// Two players were seated in one slot (possible only when peers answering at the same
    /// time lost each other's replies). Every peer applies the same rule: the lower token keeps
    /// the slot; the other is told so and reconnects. Returns true if the claimant keeps it
    /// (the holder is gone from the table; the caller seats the claimant).
    fn settle_slot_conflict(
        &mut self,
        now: Instant,
        claimant: &PlayerListEntry,
        holder: (u32, Node),
    ) -> bool {
        self.stats.slot_conflicts += 1;
        let (holder_token, holder_node) = holder;
        log::warn!(
            "peer: slot {} claimed twice; the lower token keeps it",
            claimant.slot
        );
        if claimant.token < holder_token {
            if holder_token == self.my_token() {
                self.rejoin(
                    now,
                    "slot conflict: another player holds this slot; reconnecting",
                    None,
                );
                return false;
            }
            self.remove_departed(claimant.slot, holder_token, "slot conflict");
            self.send_conflict_notice(holder_token, holder_node);
            true
        } else {
            self.note_departed(claimant.token);
            self.send_conflict_notice(claimant.token, claimant.node);
            false
        }
    }

    /// A packet of a player that lost a slot conflict here: its notice was lost, so say it again
    /// (at most every `reply_wait`). Returns false: the packet is not accepted.
    fn remind_conflict_loser(&mut self, now: Instant, from: &Node, token: u32) -> bool {
        let Some(told) = self.conflict_losers.get(token) else {
            return false;
        };
        if now.saturating_duration_since(told) >= self.timings.reply_wait {
            self.stats.conflict_notices_repeated += 1;
            self.send_conflict_notice(token, *from);
        }
        false
    }

    /// A player dropped here for silence talks again: tell it (a conflict notice naming its
    /// token, with its own text), so it leaves and connects again. Never seats it: returns
    /// false.
    ///
    /// Two peers that dropped each other probe each other: only the one whose game wins
    /// (`wins_over`) answers the other's probe, so only the other one reconnects (if both
    /// answered, probes crossing on the wire would make both leave).
    fn tell_dropped_player(
        &mut self,
        now: Instant,
        from: &Node,
        header: &PacketHeader,
        events: &[WireEvent],
    ) -> bool {
        let token = header.token;
        let Some(told) = self.silenced.get(token) else {
            return false;
        };
        if is_probe(header) && self.is_probing(from) && !self.wins_over(from, events) {
            return false;
        }
        if now.saturating_duration_since(told) < self.timings.reply_wait {
            return false;
        }
        self.silenced.set(token, now);
        self.stats.dropped_notices_sent += 1;
        let secs = self
            .session
            .as_ref()
            .map_or(0, |s| s.config().peer_timeout.as_secs());
        let text = format!(
            "dropped by the other players: they heard nothing from you for {secs} s; reconnecting"
        );
        let events = vec![
            RemoteEvent::ConnectQueue(vec![ConnectRequest {
                token,
                node: *from,
                name: Default::default(),
            }]),
            RemoteEvent::SendText(ChatText::new(text.as_bytes()).unwrap_or_default()),
            // The teller's game, for a told player that dropped the teller too (see the
            // CONNECT_REFUSED handling in the game loop).
            RemoteEvent::PlayerList(self.player_list()),
        ];
        self.send_oob(*from, PacketType::ConnectRefused, events);
        false
    }

    /// Where to connect if the player at `from` (token `teller`) that answered a probe does not
    /// answer the connect requests: the other players of the list its notice carried, highest
    /// node first, then where this peer connected before (see `fallbacks`).
    fn fallbacks_from(
        &self,
        from: &Node,
        teller: u32,
        events: &[WireEvent],
    ) -> VecDeque<Option<Node>> {
        let order = Arc::clone(self.order());
        let mut nodes: Vec<Node> = Self::player_list_in(events)
            .into_iter()
            .flatten()
            .filter(|e| e.token != teller && e.token != self.my_token())
            .map(|e| e.node)
            .filter(|n| !self.same_node(n, from) && !self.same_node(n, &self.my_node))
            .collect();
        nodes.sort_by(|a, b| order(b, a));
        nodes.dedup_by(|a, b| order(a, b) == std::cmp::Ordering::Equal);
        let mut out: VecDeque<Option<Node>> = nodes.into_iter().map(Some).collect();
        let before = self.params.as_ref().and_then(|p| p.target);
        if before.is_none_or(|t| !self.same_node(&t, from)) {
            out.push_back(before);
        }
        out
    }

    /// Whether `node` is probed here (a player there was dropped for silence).
    fn is_probing(&self, node: &Node) -> bool {
        self.probes.iter().any(|p| self.same_node(&p.node, node))
    }

    /// Two players that dropped each other for silence and probe each other: does this peer's
    /// game win over the game of the prober at `from` (its player list is in the probe; a probe
    /// without one is a lone peer's)? If the two games share a player (the two lost only each
    /// other) the higher node wins: the lower one reconnects and gets the whole list. Otherwise
    /// (a split) the game with more players wins, and of two as big the one with the highest
    /// node. Both sides judge alike, so exactly one answers.
    fn wins_over(&self, from: &Node, events: &[WireEvent]) -> bool {
        let order = Arc::clone(self.order());
        let theirs: Vec<PlayerListEntry> =
            Self::player_list_in(events).cloned().unwrap_or_default();
        let mine = self.player_list();
        let shared = theirs
            .iter()
            .any(|t| mine.iter().any(|m| m.token == t.token));
        if shared {
            return order(&self.my_node, from) == std::cmp::Ordering::Greater;
        }
        let their_count = theirs.len().max(1);
        if mine.len() != their_count {
            return mine.len() > their_count;
        }
        let highest = |nodes: &mut dyn Iterator<Item = Node>| {
            nodes.max_by(|a, b| order(a, b)).unwrap_or_default()
        };
        let my_top = highest(&mut mine.iter().map(|e| e.node));
        let their_top = highest(&mut theirs.iter().map(|e| e.node).chain(std::iter::once(*from)));
        order(&my_top, &their_top) == std::cmp::Ordering::Greater
    }

    /// Players were dropped here for silence: probe their nodes (see `Probe`).
    fn start_probing(&mut self, now: Instant, nodes: Vec<Node>) {
        for node in nodes {
            if self.same_node(&node, &self.my_node) || self.is_probing(&node) {
                continue;
            }
            log::info!(
                "peer: a player went silent; probing its address every {} s for {} s, then every {} s while in this game",
                PROBE_INTERVAL.as_secs(),
                PROBE_FAST_PERIOD.as_secs(),
                PROBE_SLOW_INTERVAL.as_secs()
            );
            self.probes.push(Probe {
                node,
                since: now,
                next: now,
            });
            self.next_probe = Some(self.next_probe.map_or(now, |t| t.min(now)));
        }
    }

    /// Send the probes that are due; stop probing a node once a player is seated there again.
    fn probe_silenced_players(&mut self, now: Instant) {
        let Some(next) = self.next_probe else {
            return;
        };
        let mut probes = std::mem::take(&mut self.probes);
        probes.retain(|p| {
            !self.session.as_ref().is_some_and(|s| {
                s.players()
                    .iter()
                    .any(|pl| self.same_node(&pl.node, &p.node))
            })
        });
        self.probes = probes;
        if self.probes.is_empty() {
            log::info!("peer: probing the silent players ends");
            self.next_probe = None;
            return;
        }
        if now < next {
            return;
        }
        let mut targets: Vec<Node> = Vec::new();
        for probe in self.probes.iter_mut().filter(|p| p.next <= now) {
            targets.push(probe.node);
            probe.next = now + probe.interval(now);
        }
        self.next_probe = self.probes.iter().map(|p| p.next).min();
        let list = self.player_list();
        for node in targets {
            self.send_oob_as(
                node,
                PacketType::NodeAlive,
                None,
                vec![RemoteEvent::PlayerList(list.clone())],
            );
            self.stats.probes_sent += 1;
        }
    }

    fn send_conflict_notice(&mut self, token: u32, node: Node) {
        self.conflict_losers.set(token, self.last_now);
        let events = vec![
            RemoteEvent::ConnectQueue(vec![ConnectRequest {
                token,
                node,
                name: Default::default(),
            }]),
            RemoteEvent::SendText(
                ChatText::new(b"slot conflict: another player holds this slot; reconnecting")
                    .unwrap_or_default(),
            ),
        ];
        self.send_oob(node, PacketType::ConnectRefused, events);
    }

    /// Leave the game and connect again (after losing a slot conflict, or told it was dropped),
    /// to `target` if given (the player that answered a probe), else as before.
    fn rejoin(&mut self, now: Instant, reason: &str, target: Option<Node>) {
        let Some(mut params) = self.params.clone() else {
            return;
        };
        let left = if self.rejoins_left == 0 {
            MAX_REJOINS
        } else {
            self.rejoins_left - 1
        };
        // What the session owed the others, and its token as an earlier one, go on to the next
        // session (see `session::resume`).
        if let Some(session) = self.session.as_ref() {
            params.resume = Some(Arc::new(session.resume_state_for_next()));
        }
        let _ = self.disconnect(now, reason);
        // A fresh token, derived so it differs from the old one.
        params.token = params.token.rotate_left(13) ^ 0x9E37_79B9;
        if params.token == 0 {
            params.token = 1;
        }
        params.local_node = self.my_node;
        if target.is_some() {
            params.target = target;
        }
        if self.connect(now, params).is_ok() {
            self.rejoins_left = left;
        }
    }

    /// RE_PLAYERLIST events that arrived reliably through the game links.
    fn take_protocol_events(&mut self, now: Instant) {
        while let Some((slot, event)) = self.session.as_mut().and_then(Session::poll_protocol_event)
        {
            if let RemoteEvent::PlayerList(list) = event {
                let sender = self
                    .session
                    .as_ref()
                    .and_then(|s| s.players().get(slot).map(|p| (p.token, p.node)));
                self.merge_player_list(now, sender, &list);
            }
        }
    }

    // ----- timers ----------------------------------------------------------------------------

    fn become_master(&mut self, now: Instant) {
        let resume = self.params.as_mut().and_then(|p| p.resume.take());
        let params = self.params.clone().expect("params while active");
        self.stats.times_master += 1;
        let node_eq = node_eq_of(&params.order);
        let mut session = Session::new_mesh(
            params.session,
            node_eq,
            LocalPlayer {
                slot: 0,
                token: params.token,
                name: params.name,
            },
            now,
        );
        session.set_same_host(Arc::clone(&params.same_host));
        if let Some(state) = resume {
            session.set_resume_state(Arc::unwrap_or_clone(state));
        }
        let mut next_slot = 1u8;
        let mut refused = Vec::new();
        for entry in self.queue.iter_mut() {
            if next_slot < self.timings.max_players {
                session.add_player(now, next_slot, entry.node, entry.token, entry.name, false);
                entry.assigned = Some(next_slot);
                entry.reply = Reply::At(now);
                next_slot += 1;
            } else {
                refused.push(entry.clone());
            }
        }
        self.session = Some(session);
        self.phase = Phase::InGame;
        self.events.push_back(GameEvent::Connected { slot: 0 });
        log::info!(
            "peer: connected as temporary master in slot 0 with {} others",
            next_slot - 1
        );
        for entry in refused {
            self.queue.remove(entry.token);
            self.send_refusal(&entry);
        }
        self.answer_due_requests(now);
    }

    /// Answer queued requests whose time has come: seat them (or refuse), or resend a reply.
    fn answer_due_requests(&mut self, now: Instant) {
        let due: Vec<QueuedRequest> = self
            .queue
            .iter()
            .filter(|e| matches!(e.reply, Reply::At(t) if t <= now))
            .cloned()
            .collect();
        for request in due {
            if let Some(slot) = request.assigned {
                if request.replies_sent >= self.timings.slot_tries {
                    log::debug!(
                        "peer: giving up on a newcomer in slot {slot} that never confirmed"
                    );
                    self.queue.remove(request.token);
                    continue;
                }
                // A resend (or the first reply of a seat given at startup).
                let copies = request.replies_sent == 0;
                self.send_reply(&request, copies);
            } else if self.claims.iter().any(|c| c.1 == request.token) || self.seat_claimed() {
                // Its earlier session is still seated (or queued) here and not yet decided: seat
                // it once that is settled (it comes back to the same slot, or the game is not
                // full). Likewise while another player's claim on a seat is undecided: this
                // peer's list still shows that seat's holder, who has most likely left, and not
                // the claimant, whom the others may have seated there; a newcomer given that list
                // would keep a player that is gone and never learn of the claimant (nor it of
                // the newcomer, as the copies of the reply go to the players seated here).
                if let Some(entry) = self.queue.get_mut(request.token) {
                    entry.reply = Reply::At(now + self.timings.reply_wait);
                }
                continue;
            } else {
                let alive_higher = self.live_higher_players(now, self.deference_window());
                if !alive_higher.is_empty() && request.deferrals < MAX_DEFERRALS {
                    // A higher-ranked player seems alive: it should answer. Make sure it knows
                    // and look again shortly; if its reply is not snooped by then, it may have
                    // died and this peer answers.
                    let forwarded = ConnectRequest {
                        token: request.token,
                        node: request.node,
                        name: request.name,
                    };
                    self.forward_to_higher(now, vec![forwarded]);
                    self.stats.replies_deferred += 1;
                    if let Some(entry) = self.queue.get_mut(request.token) {
                        entry.deferrals += 1;
                        entry.reply = Reply::At(now + self.timings.reply_wait * 2);
                    }
                    continue;
                }
                let Some(session) = self.session.as_mut() else {
                    return;
                };
                let max = self.timings.max_players;
                let taken =
                    |slot: u8| slot == session.my_slot() || session.players().get(slot).is_some();
                match (0..max).find(|&s| !taken(s)) {
                    None => {
                        self.queue.remove(request.token);
                        self.send_refusal(&request);
                        continue;
                    }
                    Some(slot) => {
                        session.add_player(
                            now,
                            slot,
                            request.node,
                            request.token,
                            request.name,
                            false,
                        );
                        if let Some(entry) = self.queue.get_mut(request.token) {
                            entry.assigned = Some(slot);
                        }
                        let seated = QueuedRequest {
                            assigned: Some(slot),
                            ..request.clone()
                        };
                        self.send_reply(&seated, true);
                        // The copies are single datagrams; the list also goes reliably through
                        // the links, so every player learns of the newcomer even if they are lost.
                        let list = RemoteEvent::PlayerList(self.player_list());
                        if let Some(session) = self.session.as_mut() {
                            if let Err(err) = session.queue_event(list) {
                                log::warn!("peer: cannot send the player list: {err}");
                            }
                        }
                    }
                }
            }
            if let Some(entry) = self.queue.get_mut(request.token) {
                entry.replies_sent += 1;
                entry.reply = Reply::At(now + self.timings.slot_interval);
            }
        }
    }

    fn reset(&mut self) {
        self.phase = Phase::Idle;
        self.session = None;
        self.queue.clear();
        self.contests.clear();
        self.conflict_losers.clear();
        self.silenced.clear();
        self.probes.clear();
        self.next_probe = None;
        self.fallbacks.clear();
        self.strangers.clear();
        self.claims.clear();
        self.watches.clear();
        self.refusal = None;
        self.target_ask = None;
    }
}

/// Whether a packet is a probe of a peer left alone by silence (see `Probe`): a NODE_ALIVE
/// without a sender slot, which no player of a peer game sends otherwise.
fn is_probe(header: &PacketHeader) -> bool {
    header.kind == PacketType::NodeAlive && header.sender_slot.is_none()
}

/// Node equality from the node order.
fn node_eq_of(order: &NodeOrder) -> NodeEq {
    let order = Arc::clone(order);
    Arc::new(move |a: &Node, b: &Node| order(a, b) == std::cmp::Ordering::Equal)
}

impl ClientProtocol for PeerProtocol {
    fn kind(&self) -> ProtocolKind {
        ProtocolKind::Peer
    }

    fn describe(&self) -> String {
        match self.phase {
            Phase::Idle => "not connected".to_string(),
            Phase::Connecting { tries, .. } => {
                format!(
                    "looking for other players (connect request {tries} of {})",
                    self.timings.connect_tries
                )
            }
            Phase::SlotRequest { tries, .. } => {
                format!(
                    "waiting for a slot from the temporary master (request {tries} of {})",
                    self.timings.slot_tries
                )
            }
            Phase::InGame => {
                let session = self.session.as_ref().expect("session in game");
                format!(
                    "in game, slot {}, {} of {} players, {}",
                    session.my_slot(),
                    session.players().len() + 1,
                    self.timings.max_players,
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

    fn session_mut(&mut self) -> Option<&mut Session> {
        self.session.as_mut()
    }

    fn connect_params_mut(&mut self) -> Option<&mut ConnectParams> {
        self.params.as_mut()
    }

    fn is_active(&self) -> bool {
        self.phase != Phase::Idle
    }

    fn resume_state_for_next(&self) -> Option<crate::session::ResumeState> {
        if let Some(session) = &self.session {
            return Some(session.resume_state_for_next());
        }
        crate::protocol::pending_resume(self.is_active(), self.params.as_ref())
    }

    fn connect(&mut self, now: Instant, params: ConnectParams) -> NetResult<()> {
        if self.phase != Phase::Idle {
            return Err(NetError::new(
                ErrorCode::State,
                "already connected or connecting (disconnect first)",
            ));
        }
        if params.target.is_none() && params.broadcast.is_none() {
            return Err(NetError::new(
                ErrorCode::Unsupported,
                "this backend has no broadcast: give the node of a player to connect to (connect HOST:PORT)",
            ));
        }
        if params.token == 0 {
            return Err(NetError::invalid("session token must not be 0"));
        }
        self.my_node = params.local_node;
        self.params = Some(params);
        self.queue.clear();
        self.session = None;
        self.refusal = None;
        self.phase = Phase::Connecting {
            tries: 0,
            next: now,
        };
        Ok(())
    }

    fn disconnect(&mut self, _now: Instant, reason: &str) -> NetResult<()> {
        self.rejoins_left = 0;
        if self.phase == Phase::Idle {
            return Err(crate::protocol::not_in_game_error("disconnect"));
        }
        if self.phase == Phase::InGame {
            let mut nodes: Vec<Node> = self
                .session
                .iter()
                .flat_map(|s| s.players().iter())
                .map(|p| p.node)
                .collect();
            // The requesters this peer still holds: one may be its slave from the startup,
            // waiting for the slot this peer was to give (it starts over at once when told).
            for entry in self.queue.iter() {
                if !nodes.iter().any(|n| self.same_node(n, &entry.node)) {
                    nodes.push(entry.node);
                }
            }
            // Twice: a lost DISCONNECT only costs the others the silence timeout.
            for _ in 0..2 {
                for node in &nodes {
                    self.send_oob(*node, PacketType::Disconnect, Vec::new());
                }
            }
        } else {
            self.withdraw_own_request();
        }
        self.reset();
        self.events.push_back(GameEvent::Disconnected {
            reason: reason.to_string(),
        });
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]) {
        self.last_now = now;
        if self.phase == Phase::Idle {
            self.stats.packets_ignored += 1;
            return;
        }
        let mut events = std::mem::take(&mut self.scratch);
        match decode_packet(data, &mut events) {
            Ok(packet) => match self.phase {
                Phase::Idle => {}
                Phase::Connecting { .. } => self.handle_connecting(now, from, &packet, &events),
                Phase::SlotRequest { .. } => self.handle_slot_request(now, from, &packet, &events),
                Phase::InGame => {
                    self.handle_in_game(now, from, &packet, &events);
                    // A watched token's request or seat may have just shown up: claim it now,
                    // so its claimant's request waits for the decision.
                    self.review_watches(now);
                }
            },
            Err(err) => {
                log::debug!("peer: dropped a bad packet: {err}");
                *self.decode_errors.entry(err.problem.label()).or_default() += 1;
            }
        }
        self.scratch = events;
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Idle => {}
            Phase::Connecting { tries, next } if now >= next => {
                if tries < self.timings.connect_tries {
                    if let Some(target) = self.connect_target() {
                        self.send_connect(target);
                    }
                    self.phase = Phase::Connecting {
                        tries: tries + 1,
                        next: next + self.timings.connect_interval,
                    };
                } else if let Some(text) = self.refusal.take() {
                    self.give_up_refused(&text);
                } else if let Some(target) = self.fallbacks.pop_front() {
                    // The player that answered a probe did not answer: try the next.
                    log::info!("peer: the player that told this one to reconnect is silent; trying another");
                    self.stats.fallback_targets_tried += 1;
                    if let Some(params) = self.params.as_mut() {
                        params.target = target;
                    }
                    self.phase = Phase::Connecting {
                        tries: 0,
                        next: now,
                    };
                } else {
                    self.become_master(now);
                }
            }
            Phase::SlotRequest {
                master,
                tries,
                next,
            } if now >= next => {
                if tries < self.timings.slot_tries {
                    let queue =
                        RemoteEvent::ConnectQueue(self.queue.to_wire(Some(self.own_request())));
                    let mut events = vec![queue];
                    if let Some(earlier) = self.earlier_tokens() {
                        events.push(RemoteEvent::Resume(ResumeStep::Hello(earlier)));
                    }
                    self.send_oob(master, PacketType::SlotRequest, events);
                    self.stats.slot_requests_sent += 1;
                    if let Some(target) = self
                        .target_ask
                        .as_ref()
                        .filter(|ask| now < ask.until)
                        .map(|ask| ask.target)
                    {
                        self.send_connect(target);
                    }
                    self.phase = Phase::SlotRequest {
                        master,
                        tries: tries + 1,
                        next: next + self.timings.slot_interval,
                    };
                } else {
                    log::warn!("peer: the temporary master stopped answering");
                    self.withdraw_own_request();
                    self.reset();
                    self.events.push_back(GameEvent::Error {
                        text: format!(
                            "no slot: the temporary master did not answer {} slot requests; connect again",
                            self.timings.slot_tries
                        ),
                    });
                }
            }
            Phase::InGame => {
                self.settle_earlier_claims(now);
                self.answer_due_requests(now);
                if let Some(session) = self.session.as_mut() {
                    let (dropped, _) = session.handle_timeout(now);
                    let mut nodes = Vec::new();
                    for (_, token, node) in dropped {
                        self.silenced.set(token, now);
                        nodes.push(node);
                    }
                    self.start_probing(now, nodes);
                }
                self.probe_silenced_players(now);
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(Node, usize)> {
        if let Some((to, data)) = self.out.pop_front() {
            let len = data.len().min(buf.len());
            buf[..len].copy_from_slice(&data[..len]);
            return Some((to, len));
        }
        self.session.as_mut()?.poll_transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let phase = match self.phase {
            Phase::Idle => None,
            Phase::Connecting { next, .. } | Phase::SlotRequest { next, .. } => Some(next),
            Phase::InGame => None,
        };
        let queue = self
            .queue
            .iter()
            .filter_map(|e| match e.reply {
                Reply::At(t) if self.phase == Phase::InGame => Some(t),
                _ => None,
            })
            .min();
        let session = self.session.as_ref().and_then(Session::poll_timeout);
        let claims = self.next_claim_decision();
        [phase, queue, session, claims, self.next_probe]
            .into_iter()
            .flatten()
            .min()
    }

    fn poll_event(&mut self) -> Option<GameEvent> {
        self.events
            .pop_front()
            .or_else(|| self.session.as_mut()?.poll_event())
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut out = vec![
            ("connect requests sent", s.connects_sent),
            ("subdue sent", s.subdues_sent),
            ("slot requests sent", s.slot_requests_sent),
            ("replies sent", s.replies_sent),
            ("refusals sent", s.refusals_sent),
            ("replies snooped", s.replies_snooped),
            ("slot conflicts", s.slot_conflicts),
            ("silent players replaced", s.silent_holders_replaced),
            ("conflict notices repeated", s.conflict_notices_repeated),
            ("dropped players told", s.dropped_notices_sent),
            (
                "dropped notices ignored (this game wins)",
                s.dropped_notices_ignored,
            ),
            ("probes of silent players sent", s.probes_sent),
            (
                "reconnects to another player of the game",
                s.fallback_targets_tried,
            ),
            ("unknown players told", s.stranger_notices_sent),
            (
                "players replaced at their address",
                s.replaced_players_dropped,
            ),
            ("refusals received", s.refusals_received),
            ("earlier sessions retired", s.earlier_sessions_retired),
            ("earlier-session claims refused", s.earlier_claims_refused),
            ("connect requests withdrawn", s.requests_withdrawn),
            ("packets ignored", s.packets_ignored),
            ("packets rejected", s.packets_rejected),
        ];
        out.extend(self.decode_errors.iter().map(|(k, v)| (*k, *v)));
        out
    }
}
