//! A peer alone in a game of its own keeps knocking at the `connect` address it was given.
//!
//! A peer told `connect HOST:PORT` whose connect loop ends unanswered starts a game of its
//! own (design section 2.3.1), and stayed there alone for good even when a game came up at that
//! address a moment later: the process there was stopped for longer than the loop (a loaded
//! machine: stops of up to 1.2 s split 90 of 10,000 simulated four-peer startups with a 0.5 s
//! loop), or started later, or had been restarted. Now, for as long as it is in a game with no
//! other player, it sends its CONNECT to that address again, every `PROBE_INTERVAL` for
//! `PROBE_FAST_PERIOD`, then every `PROBE_SLOW_INTERVAL` (as probes go, see `probes`). A game there answers it like any
//! newcomer, with an offer of a seat; the lone peer takes it (`NET_EVENT_DISCONNECTED`
//! [`NOTICE`], then `NET_EVENT_CONNECTED` in the new slot, staying joined if it was) when that
//! game has a player besides it. Two lone peers knocking at each other need no rule of their
//! own: each seats the other when it answers the other's knock, so the offer that comes back is
//! from a player of its own game, and the slot-conflict rule sends one of them to connect again
//! (`peer_movers.rs`). A peer that has requests of its own to answer does not move.
//! A peer that connected by broadcast has no address to knock at: it is the game the others
//! find. Nor does a peer that probes the players it lost (see `probes`, `movers`).

use std::sync::Arc;
use std::time::Instant;

use super::probes::{retry_interval, PROBE_INTERVAL};
use super::{PeerProtocol, Phase};
use crate::rmev::PlayerListEntry;
use crate::session::GameEvent;
use crate::wire::{DecodedPacket, WireEvent};
use crate::Node;

/// What a peer that moves into the game at its `connect` address tells its game.
pub(super) const NOTICE: &str = "the game at your connect address answered at last; reconnecting";

impl PeerProtocol {
    /// Where a lone peer knocks: its `connect` address, while it is in a game with no other
    /// player (and that address is not its own node). Not while it probes players it dropped
    /// for silence or that moved (see `probes`, `movers`): those probes bring the game
    /// together, and a knock racing them would pull this peer out of the game they come back to.
    fn knock_target(&self) -> Option<Node> {
        if self.phase != Phase::InGame || !self.probes.is_empty() {
            return None;
        }
        if !self.session.as_ref()?.players().is_empty() {
            return None;
        }
        let target = self.params.as_ref()?.target?;
        (!self.same_node(&target, &self.my_node)).then_some(target)
    }

    /// Knock if one is due; start or stop the series as the peer becomes alone or not.
    pub(super) fn knock_at_target(&mut self, now: Instant) {
        let Some(target) = self.knock_target() else {
            self.knocks = None;
            return;
        };
        let (since, next) = *self.knocks.get_or_insert((now, now + PROBE_INTERVAL));
        if now < next {
            return;
        }
        self.send_connect(target);
        self.stats.knocks_sent += 1;
        self.knocks = Some((since, now + retry_interval(since, now)));
    }

    /// When the next knock is due (None while the peer does not knock). A peer that has just
    /// become alone has no series yet: its timers run at once to start one (a lone session has
    /// no timers of its own to wake it).
    pub(super) fn next_knock(&self) -> Option<Instant> {
        match self.knocks {
            Some((_, next)) => Some(next),
            None => self.knock_target().map(|_| self.last_now),
        }
    }

    /// Whether this lone peer moves into the game whose player at `from` offers it a seat
    /// (`list` seats it): the game holds this peer's `connect` address and a player besides
    /// it.
    pub(super) fn takes_offer(&self, from: &Node, list: &[PlayerListEntry]) -> bool {
        let Some(target) = self.knock_target() else {
            return false;
        };
        if !self.queue.is_empty() {
            return false;
        }
        let my_token = self.my_token();
        let others: Vec<&PlayerListEntry> = list.iter().filter(|e| e.token != my_token).collect();
        let holds_target = self.same_node(from, &target)
            || others.iter().any(|e| self.same_node(&e.node, &target));
        holds_target && !others.is_empty()
    }

    /// Leave this peer's game of one for the game that offered it a seat (see `takes_offer`):
    /// what the session owed goes on, as after a rejoin, and the offer seats it.
    pub(super) fn move_into_offer(
        &mut self,
        now: Instant,
        from: Node,
        packet: &DecodedPacket,
        events: &[WireEvent],
    ) {
        log::info!("peer: the game at the connect address answered a knock; moving into it");
        self.stats.knocks_answered += 1;
        let resume = self
            .session
            .as_ref()
            .map(|s| Arc::new(s.resume_state_for_next()));
        self.reset();
        if let Some(params) = self.params.as_mut() {
            params.resume = resume;
        }
        self.events.push_back(GameEvent::Disconnected {
            reason: NOTICE.to_string(),
        });
        self.take_reply(now, from, packet, events);
    }
}
