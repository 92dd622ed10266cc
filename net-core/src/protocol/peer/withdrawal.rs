//! Withdrawals: a player that gives up while still connecting has no slot to leave, but a peer
//! may have seated it already. It sends a DISCONNECT without a sender slot naming its own
//! request; a peer that accepts it (from the request's own node) frees the seat and passes the
//! withdrawal on to its players.

use super::{PeerProtocol, Phase, MAX_DEPARTED};
use crate::rmev::{ConnectRequest, RemoteEvent};
use crate::wire::{PacketHeader, PacketType, WireEvent};
use crate::Node;

impl PeerProtocol {
    /// Tell the peers that may have seated this player while it was still connecting (its reply
    /// lost or on its way) that it gives up: a DISCONNECT without a sender slot naming its own
    /// request, sent where its requests went (the connect target or broadcast, and its
    /// temporary master), twice like a DISCONNECT. Without it, such a seat stayed for the
    /// silence timeout, and the other players saw a player that was not there.
    pub(super) fn withdraw_own_request(&mut self) {
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
    pub(super) fn settle_early_withdrawals(&mut self, placed: &[(u32, Node)]) {
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
    pub(super) fn take_withdrawal(
        &mut self,
        from: Node,
        header: &PacketHeader,
        events: &[WireEvent],
    ) {
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
}
