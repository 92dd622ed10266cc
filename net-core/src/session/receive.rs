//! Packets in: a packet is taken from the node its player is known at (or, after a silence, a
//! new port of the player's host), checked by the player's link, and its events are applied in
//! order; RE_RESUME steps go to `resume_steps`.

use std::sync::Arc;
use std::time::Instant;

use super::{
    may_rebind, name_order, Delivery, GameEvent, PacketVerdict, Rejection, Session,
    STATE_TAP_LIMIT, VACATED_KEPT,
};
use crate::rmev::{PlayerName, RemoteEvent};
use crate::wire::{DecodedPacket, WireEvent};
use crate::Node;

impl Session {
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
        if remote.link.stats().packets_received == 1 {
            // The wait for its answer counts from here (see `Remote::hold_ends_at`).
            if let Some((_, since)) = remote.held.as_mut() {
                *since = now;
            }
        }
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
                // Star: the relay's word that the player in `origin` left, in order with what
                // it said; a mesh player cannot tell another's departure.
                Delivery::Event {
                    origin: Some(origin),
                    event: RemoteEvent::Vacated { told },
                } => {
                    if self.star {
                        self.take_vacated(origin, told);
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

    /// Star: the relay's word (RE_VACATED) that the player seated in `slot` under the id `told`
    /// (its `add ip:` line's; 0: whoever sits there) left. Everything that player said came
    /// before it, so the departure is told to the game here, and the server's `remove ip:`
    /// line finds the player gone. A word about an earlier occupant than the one seated changes
    /// nothing. With nobody seated (the word came before the player's `add ip:` line), what
    /// waits for the slot is that player's, and the player is removed as soon as its lines
    /// have seated it (`left_in_band`). What comes from the slot after the word is the next
    /// occupant's and waits for its `add ip:` line (`early`).
    fn take_vacated(&mut self, slot: u8, told: u32) {
        if told != 0 {
            if self.vacated_in_band.len() >= VACATED_KEPT {
                self.vacated_in_band.pop_front();
            }
            self.vacated_in_band.push_back(told);
        }
        match self.players.get(slot) {
            Some(player) if told != 0 && player.token != 0 && player.token != told => {
                log::debug!("session: slot {slot}'s departure word is about an earlier player");
            }
            Some(_) => {
                log::debug!("session: the relay says the player in slot {slot} left");
                self.stats.departures_in_band += 1;
                self.remove_player(slot, "left the server");
            }
            None => log::debug!(
                "session: the relay says the player in slot {slot} left before its line came"
            ),
        }
        for event in self.early.vacated(slot, told) {
            self.apply_in_order(slot, event);
        }
    }

    /// Star: whether the relay said that the player seated in `slot` left (RE_VACATED came
    /// before the server's lines seated it).
    pub fn left_in_band(&self, slot: u8) -> bool {
        self.players
            .get(slot)
            .is_some_and(|player| player.token != 0 && self.vacated_in_band.contains(&player.token))
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
        let shown = self
            .players
            .get(slot)
            .filter(|_| self.names_from_server)
            .map(|p| p.name);
        let event = match shown {
            Some(shown) => match self.name_order.gate(slot, event, shown, self.clock) {
                name_order::Gate::Pass(event) => event,
                name_order::Gate::Rename(name) => return self.show_name(slot, name),
                name_order::Gate::Held => return,
            },
            None => event,
        };
        self.apply_in_order(slot, event);
    }

    /// What `name_order` lets go on for the player in `slot`: a rename to show, or an event.
    pub(super) fn apply_name_step(&mut self, slot: u8, step: name_order::Step) {
        match step {
            name_order::Step::Rename(name) => self.show_name(slot, name),
            name_order::Step::Event(event) => self.apply_in_order(slot, event),
        }
    }

    /// Show the game the new name of the player in `slot` (PlayerName), if it is new.
    pub(super) fn show_name(&mut self, slot: u8, name: PlayerName) {
        if let Some(player) = self.players.get_mut(slot) {
            if player.name != name {
                player.name = name;
                self.events.push_back(GameEvent::PlayerName { slot, name });
            }
        }
    }

    /// Apply a remote event from `slot` that is in its place.
    pub(super) fn apply_in_order(&mut self, slot: u8, event: RemoteEvent) {
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
}
