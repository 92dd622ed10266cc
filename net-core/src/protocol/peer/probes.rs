//! Probes of the players this peer dropped for silence, and the notice that answers one: a cut
//! that heals brings a dropped player back into the game that dropped it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::PeerProtocol;
use crate::rmev::{PlayerListEntry, RemoteEvent};
use crate::wire::{PacketHeader, PacketType, WireEvent};
use crate::Node;

/// How often a peer probes the players it dropped for silence at first (see `Probe`).
pub(super) const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// How long it probes them every `PROBE_INTERVAL`.
const PROBE_FAST_PERIOD: Duration = Duration::from_secs(5 * 60);
/// How often it probes them after that, for as long as it stays in its game.
const PROBE_SLOW_INTERVAL: Duration = Duration::from_secs(10);

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
pub(super) struct Probe {
    pub(super) node: Node,
    /// When the player there was dropped (the first probe).
    pub(super) since: Instant,
    /// When the next probe to it goes out.
    pub(super) next: Instant,
}

impl Probe {
    /// The wait after a probe sent at `now`.
    fn interval(&self, now: Instant) -> Duration {
        retry_interval(self.since, now)
    }
}

/// The wait after a probe (or a knock, see `knocks`) sent at `now` in a series begun at
/// `since`: `PROBE_INTERVAL` for `PROBE_FAST_PERIOD`, then `PROBE_SLOW_INTERVAL`.
pub(super) fn retry_interval(since: Instant, now: Instant) -> Duration {
    if now.saturating_duration_since(since) < PROBE_FAST_PERIOD {
        PROBE_INTERVAL
    } else {
        PROBE_SLOW_INTERVAL
    }
}

impl PeerProtocol {
    /// A player dropped here for silence talks again: tell it (a conflict notice naming its
    /// token, with its own text), so it leaves and connects again. Never seats it: returns
    /// false.
    ///
    /// Two peers that dropped each other probe each other: only the one whose game wins
    /// (`wins_over`) answers the other's probe, so only the other one reconnects (if both
    /// answered, probes crossing on the wire would make both leave).
    pub(super) fn tell_dropped_player(
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
        // The list is the teller's game, for a told player that dropped the teller too (see
        // the CONNECT_REFUSED handling in the game loop).
        self.send_leave_notice(*from, token, &text);
        false
    }

    /// Where to connect if the player at `from` (token `teller`) that answered a probe does not
    /// answer the connect requests: the other players of the list its notice carried, highest
    /// node first, then where this peer connected before (see `fallbacks`).
    pub(super) fn fallbacks_from(
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
    pub(super) fn is_probing(&self, node: &Node) -> bool {
        self.probes.iter().any(|p| self.same_node(&p.node, node))
    }

    /// Two players that dropped each other for silence and probe each other: does this peer's
    /// game win over the game of the prober at `from` (its player list is in the probe; a probe
    /// without one is a lone peer's)? If the two games share a player (the two lost only each
    /// other) the higher node wins: the lower one reconnects and gets the whole list. Otherwise
    /// (a split) the game with more players wins, and of two as big the one with the highest
    /// node. Both sides judge alike, so exactly one answers.
    pub(super) fn wins_over(&self, from: &Node, events: &[WireEvent]) -> bool {
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

    /// Players were dropped here for silence, or left to connect again (`why` says which):
    /// probe their nodes (see `Probe`).
    pub(super) fn start_probing(&mut self, now: Instant, nodes: Vec<Node>, why: &str) {
        for node in nodes {
            if self.same_node(&node, &self.my_node) || self.is_probing(&node) {
                continue;
            }
            log::info!(
                "peer: {why}; probing its address every {} s for {} s, then every {} s while in this game",
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
    pub(super) fn probe_silenced_players(&mut self, now: Instant) {
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
}

/// Whether a packet is a probe of a peer left alone by silence (see `Probe`): a NODE_ALIVE
/// without a sender slot, which no player of a peer game sends otherwise.
pub(super) fn is_probe(header: &PacketHeader) -> bool {
    header.kind == PacketType::NodeAlive && header.sender_slot.is_none()
}
