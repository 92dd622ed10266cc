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
//!
//! This file holds the state and the `ClientProtocol` entry points; each part of the protocol
//! has its own file: `startup` (the election), `in_game` (the game loop), `requests` (the queue
//! of connect requests), `earlier_sessions` (claims of a player's earlier sessions),
//! `withdrawal`, `slot_conflicts`, `probes` (players dropped for silence), `movers` (players
//! that leave to connect again, and those they leave behind), `knocks` (a lone peer asking at
//! its `connect` address again) and `strangers` (players this peer never seated).

mod earlier_sessions;
mod in_game;
mod knocks;
mod movers;
mod probes;
mod requests;
mod slot_conflicts;
mod startup;
mod strangers;
mod withdrawal;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, NetError, NetResult};
use crate::protocol::{ClientProtocol, ConnectParams, NodeOrder, ProtocolKind};
use crate::rmev::{
    ChatText, ConnectRequest, EarlierTokens, PlayerListEntry, RemoteEvent, ResumeStep,
};
use crate::session::{GameEvent, NodeEq, Player, Session};
use crate::wire::{decode_packet, encode_packet, PacketHeader, PacketType, WireEvent};
use crate::Node;
use probes::Probe;
pub use requests::{QueuedRequest, Reply, RequestQueue};

/// How many times a game-loop peer lets a live higher-ranked player answer a request first.
const MAX_DEFERRALS: u32 = 6;
/// How many departed tokens a peer remembers.
const MAX_DEPARTED: usize = 64;
/// How many times a peer reconnects by itself after losing a slot conflict.
const MAX_REJOINS: u32 = 3;

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
    /// Probes sent to players this peer dropped for silence or that left it to connect again
    /// (see `Probe`).
    pub probes_sent: u64,
    /// Players of this game that left it to connect again, whose nodes were probed since (see
    /// `movers`).
    pub movers_probed: u64,
    /// Players of the game this peer left to connect again, asked over into its new game when
    /// they probed it (see `movers`).
    pub left_behind_invited: u64,
    /// CONNECTs a lone peer sent to its `connect` address again (see `knocks`).
    pub knocks_sent: u64,
    /// Offers of a seat at the `connect` address that a lone peer took (see `knocks`).
    pub knocks_answered: u64,
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
    /// The players of the game this peer last left to connect again (see `movers`); kept
    /// across that reconnect, cleared by `disconnect`.
    left_behind: Vec<movers::LeftBehind>,
    /// While alone in its game with a `connect` address: since when it knocks there, and when
    /// next (see `knocks`).
    knocks: Option<(Instant, Instant)>,
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
            left_behind: Vec::new(),
            knocks: None,
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

    /// A list entry under another token at this peer's own address is its dead predecessor (a
    /// process that died on this port before this one started), never a player: no two live
    /// processes share an address. The players that list it drop it once it is silent.
    fn is_predecessor_entry(&self, token: u32, node: &Node) -> bool {
        token != self.my_token() && self.same_node(node, &self.my_node)
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
        list.extend(session.players().iter().map(Player::list_entry));
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

    /// Tell the player `token` at `to` to leave its game and connect again: a CONNECT_REFUSED
    /// naming its token, with `text` (the game shows it with `NET_EVENT_DISCONNECTED`) and this
    /// peer's player list (the told player judges this game by it, and falls back on its
    /// players). The notices of `probes`, `strangers` and `movers`.
    fn send_leave_notice(&mut self, to: Node, token: u32, text: &str) {
        let events = vec![
            RemoteEvent::ConnectQueue(vec![ConnectRequest {
                token,
                node: to,
                name: Default::default(),
            }]),
            RemoteEvent::SendText(ChatText::new(text.as_bytes()).unwrap_or_default()),
            RemoteEvent::PlayerList(self.player_list()),
        ];
        self.send_oob(to, PacketType::ConnectRefused, events);
    }

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
        let left_behind = self.players_left_behind();
        let _ = self.leave(reason, true);
        self.left_behind = left_behind;
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

    /// Leave the game (or stop connecting), telling the others; `moving`: to connect again at
    /// once (see `movers`), not because the game asked.
    fn leave(&mut self, reason: &str, moving: bool) -> NetResult<()> {
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
            // A player that moves on says so: the others probe its node (see `movers`).
            let events = if moving {
                self.moving_events()
            } else {
                Vec::new()
            };
            // Twice: a lost DISCONNECT only costs the others the silence timeout.
            for _ in 0..2 {
                for node in &nodes {
                    self.send_oob(*node, PacketType::Disconnect, events.clone());
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
        self.knocks = None;
    }
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
        self.left_behind.clear();
        self.leave(reason, false)
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
                    self.start_probing(now, nodes, "a player went silent");
                }
                self.probe_silenced_players(now);
                self.knock_at_target(now);
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
        [
            phase,
            queue,
            session,
            claims,
            self.next_probe,
            self.next_knock(),
        ]
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
            ("probes sent (silent or moved players)", s.probes_sent),
            ("players that moved probed", s.movers_probed),
            ("players left behind asked over", s.left_behind_invited),
            ("knocks at the connect address", s.knocks_sent),
            ("knocks answered (moved in)", s.knocks_answered),
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
