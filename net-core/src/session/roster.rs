//! Changes to the player table: players seated, renamed, moved to another slot or followed to
//! another node, and removed, each with its link. A removed player's link is parked for its
//! next session (see `resume`); a player moved out of a slot it was wrongly listed in keeps its
//! link aside for a while, in case it is seated again elsewhere.

use std::sync::Arc;
use std::time::Instant;

use super::{
    name_order, GameEvent, Link, Player, Remote, Session, DISPLACED_KEEP, MAX_RETIRED_TOKENS,
};
use crate::rmev::{PlayerName, RemoteEvent, ShipState};
use crate::Node;

impl Session {
    /// Whether `token` may be seated: not this client's own earlier session, nor another
    /// player's earlier session (it said so in its hello).
    pub fn may_seat(&self, token: u32) -> bool {
        !self.resume.earlier_tokens().as_slice().contains(&token)
            && !self.retired_tokens.contains(&token)
    }

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
        if slot == self.my_slot || !self.may_seat(token) {
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
                    self.rename_player(now, slot, name);
                }
                for event in self.early.seated(slot, token) {
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
            let node_eq = Arc::clone(&self.node_eq);
            let same_link = |r: &Remote| {
                r.token == token
                    || (r.continues_at_node && r.never_heard() && node_eq(&r.node, &node))
            };
            match self.displaced.iter().position(|(r, _)| same_link(r)) {
                Some(index) => {
                    // Displaced a moment ago: the same session of the player, which never saw
                    // this peer leave; its link goes on in the new slot. Or a link that never
                    // heard from its node, to a session that left: the new session there may
                    // have taken its packets, so it goes on with that link (a new one would
                    // number its reliable events from the start again, and the new session
                    // would drop them as ones it had: a rename in them was lost, peer_chaos
                    // seed 3452). Its reliable events were all unacknowledged, so they are all
                    // sent again in order either way.
                    let (mut remote, _) = self.displaced.remove(index);
                    remote.continues_at_node = false;
                    // The node went on with this link: any other link kept aside for it stays
                    // aside only for its own token (`peer_chaos` seed 3883: a dead session's
                    // link, never heard, was continued by the node's next session after a
                    // backend switch, which then got the dead session's events).
                    for (other, _) in &mut self.displaced {
                        if node_eq(&other.node, &node) {
                            other.continues_at_node = false;
                        }
                    }
                    remote.token = token;
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
            // Left over from an earlier occupant: its events, not its names (the slot's player
            // is the new one now).
            for step in self.name_order.departed(slot) {
                if let name_order::Step::Event(event) = step {
                    self.apply_in_order(slot, event);
                }
            }
            self.name_order.seated(slot, name);
        }
        self.events
            .push_back(GameEvent::PlayerConnected { slot, name });
        if joined {
            self.events.push_back(GameEvent::PlayerJoined { slot });
        }
        for event in self.early.seated(slot, token) {
            self.apply_remote_event(slot, event);
        }
    }

    /// Where a new link of this session starts numbering its packets (see `LinkNumbering`).
    pub(super) fn link_start(&mut self) -> u32 {
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
        let Some(mut remote) = self.take_player(slot, reason) else {
            return;
        };
        remote.continues_at_node = self.may_continue_at_node(&remote);
        if remote.continues_at_node {
            // Nothing came back on its link, so whatever session is at its node now may have
            // taken its packets as its own link's (a packet names only its sender's token): kept
            // aside like a displaced link, a new session seated at that node goes on with it.
            self.displaced.push((remote, self.clock));
        } else {
            // It may come back (a backend switch, a dropout): keep what it has not got.
            self.park(&remote);
        }
    }

    /// Whether a new session seated at `remote`'s node may go on with its link: the link of a
    /// seated player that never heard from its node, unless that node went on to a session of
    /// its own here meanwhile.
    fn may_continue_at_node(&self, remote: &Remote) -> bool {
        remote.slot.is_some() && remote.never_heard() && !self.node_moved_on(remote)
    }

    /// Whether the process at `remote`'s node went on to a session of its own here while
    /// `remote`'s link never heard from it: another player is seated at that node, seated or
    /// heard from since `remote` was (`last_heard` of a link that never heard is when it was
    /// made). That session has its own link, and a session that comes to the node later must
    /// not go on with `remote`'s: its events went to that node's process already, on the
    /// other link (`peer_chaos` seed 3740: a player that left and came back got them again).
    fn node_moved_on(&self, remote: &Remote) -> bool {
        self.remotes.iter().any(|other| {
            other.slot.is_some()
                && other.last_heard >= remote.last_heard
                && (self.node_eq)(&other.node, &remote.node)
        })
    }

    /// Empty `slot` as `remove_player` does, but keep the player's link aside for
    /// [`DISPLACED_KEEP`]: a list may have put it in the wrong slot, and if it is seated again
    /// in another slot under the same token within that time, `add_player` goes on with that
    /// link (what was queued for it, what it acknowledged, an unfinished resumption); else it
    /// is parked as at `remove_player`.
    pub fn displace_player(&mut self, now: Instant, slot: u8, reason: &str) {
        if let Some(mut remote) = self.take_player(slot, reason) {
            remote.continues_at_node = self.may_continue_at_node(&remote);
            self.displaced.push((remote, now));
        }
    }

    /// Empty `slot` as `remove_player` does, but hand back the player's link (mesh) instead of
    /// parking it.
    fn take_player(&mut self, slot: u8, reason: &str) -> Option<Remote> {
        // What it said before leaving and still waited for a name comes first, and a name the
        // server gave it that its stream had not reached.
        for step in self.name_order.departed(slot) {
            self.apply_name_step(slot, step);
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
    pub(super) fn park(&mut self, remote: &Remote) {
        Self::park_remote(
            &mut self.resume,
            remote,
            self.my_token,
            self.game_event_serial,
        );
    }

    /// Links displaced longer than `DISPLACED_KEEP` ago are parked: their players were not seated
    /// again here.
    pub(super) fn park_displaced(&mut self, now: Instant) {
        self.park_displaced_where(|_, at| now.saturating_duration_since(at) >= DISPLACED_KEEP);
    }

    /// Park the displaced links `which` picks (by token and when they were displaced).
    pub(super) fn park_displaced_where(&mut self, which: impl Fn(u32, Instant) -> bool) {
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
        for step in self.name_order.departed(from) {
            self.apply_name_step(from, step);
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
    /// on change. Through a server the game is shown it in its place among the player's events
    /// (see `name_order`): once the player's stream reaches the rename, and the events that
    /// waited for this name follow it.
    pub fn rename_player(&mut self, now: Instant, slot: u8, name: PlayerName) {
        let Some(shown) = self.players.get(slot).map(|player| player.name) else {
            return;
        };
        if !self.names_from_server {
            return self.show_name(slot, name);
        }
        for step in self.name_order.line(slot, name, shown, now) {
            self.apply_name_step(slot, step);
        }
    }
}
