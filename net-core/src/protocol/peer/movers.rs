//! Players that leave their game to connect again, and the players they leave behind.
//!
//! A peer leaves its game by itself when another game's notice tells it to (a lost slot
//! conflict, "dropped by the other players", "not in the other players' game", the answer to a
//! probe): it goes to connect again, usually into the game that told it. Its game-mates saw only
//! a player leave. When every mate of a player left so, that player sat alone in a game of its
//! own for good, while the others played together elsewhere (four C games started together on
//! a loaded machine: the master and both others moved to a game a stalled peer had started,
//! and the rendezvous stayed alone in slot 1).
//!
//! Now the mover's DISCONNECT says it connects again: it carries an RE_CONNECTQUEUE with the
//! mover's own request. Each player that gets it probes the mover's node, as it probes a
//! player dropped for silence (see `probes`). The mover remembers the players of the game it
//! left; once seated elsewhere, it answers a probe of one of them, if its new game wins over
//! the prober's by the probes' rule (`wins_over`) and has room, with a CONNECT_REFUSED naming
//! the prober's token, the text [`NOTICE`] and its player list: the prober connects to the
//! mover, into its new game. A game that wins keeps its players; the probes stop when a player
//! is seated at the mover's node again (a slot-conflict loser that comes back) or the prober
//! leaves its game.

use std::time::Instant;

use super::probes::is_probe;
use super::PeerProtocol;
use crate::rmev::RemoteEvent;
use crate::wire::{PacketHeader, WireEvent};
use crate::Node;

/// What the invitation says (the prober's game gets it with its `NET_EVENT_DISCONNECTED`).
pub(super) const NOTICE: &str = "players of your game moved to another one; reconnecting";

/// A player of the game this peer left to connect again: its token and node there, and when
/// this peer last invited it.
#[derive(Debug, Clone, Copy)]
pub(super) struct LeftBehind {
    token: u32,
    node: Node,
    invited: Option<Instant>,
}

impl PeerProtocol {
    /// The players of this peer's game, kept before it leaves to connect again.
    pub(super) fn players_left_behind(&self) -> Vec<LeftBehind> {
        self.session
            .iter()
            .flat_map(|s| s.players().iter())
            .map(|p| LeftBehind {
                token: p.token,
                node: p.node,
                invited: None,
            })
            .collect()
    }

    /// The events of the DISCONNECT of a player that leaves to connect again: its own request.
    pub(super) fn moving_events(&self) -> Vec<RemoteEvent> {
        vec![RemoteEvent::ConnectQueue(vec![self.own_request()])]
    }

    /// Whether a DISCONNECT from the player holding `token` says it connects again.
    pub(super) fn says_it_moves(events: &[WireEvent], token: u32) -> bool {
        events.iter().any(|w| {
            matches!(&w.event, RemoteEvent::ConnectQueue(q) if q.iter().any(|r| r.token == token))
        })
    }

    /// A player of this game left it to connect again: probe its node, so that, seated in
    /// another game that wins over this one, it asks this peer over.
    pub(super) fn follow_mover(&mut self, now: Instant, node: Node) {
        self.stats.movers_probed += 1;
        self.start_probing(
            now,
            vec![node],
            "a player left to connect again (another game told it to)",
        );
    }

    /// A probe from a player this peer left behind when it moved: ask it over into this game if
    /// this game wins over the prober's and has room (at most every `reply_wait`). Never seats
    /// it: returns false.
    pub(super) fn invite_left_behind(
        &mut self,
        now: Instant,
        from: &Node,
        header: &PacketHeader,
        events: &[WireEvent],
    ) -> bool {
        if !is_probe(header) {
            return false;
        }
        let Some(at) = self
            .left_behind
            .iter()
            .position(|p| p.token == header.token && self.same_node(&p.node, from))
        else {
            return false;
        };
        let recent = self.left_behind[at]
            .invited
            .is_some_and(|t| now.saturating_duration_since(t) < self.timings.reply_wait);
        let full = self.player_list().len() >= usize::from(self.timings.max_players);
        if recent || full || !self.wins_over(from, events) {
            return false;
        }
        self.left_behind[at].invited = Some(now);
        self.stats.left_behind_invited += 1;
        log::info!("peer: a player of the game this peer left probes it; asking it over");
        self.send_leave_notice(*from, header.token, NOTICE);
        false
    }
}
