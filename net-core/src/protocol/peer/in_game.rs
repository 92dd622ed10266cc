//! The game loop: game packets through the session, connect requests answered by rank unless
//! another peer's reply is snooped first, player lists merged, and players seated from their own
//! packets or from what the others say of them.

use std::collections::VecDeque;
use std::time::Instant;

use super::{strangers, Claim, PeerProtocol, QueuedRequest, Reply, MAX_DEFERRALS, MAX_DEPARTED};
use crate::rmev::{ConnectRequest, PlayerListEntry, RemoteEvent};
use crate::session::{Player, Rejection};
use crate::wire::{DecodedPacket, PacketHeader, PacketType, WireEvent};
use crate::Node;

impl PeerProtocol {
    pub(super) fn handle_in_game(
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
                    Some(slot) => {
                        self.remove_departed(slot, header.token, "left the game");
                        if Self::says_it_moves(events, header.token) {
                            self.follow_mover(now, from);
                        }
                    }
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
                            || self.invite_left_behind(now, &from, header, events)
                            || self.tell_stranger(now, &from, header)
                    }
                    Err(Rejection::WrongToken) => self.seat_new_session_at(now, &from, header),
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

    /// Packets from a listed player's node under another token, which a player list named as a
    /// player at that node: the node's player reconnected and was seated elsewhere, and its
    /// connect request never reached this peer. The list either seated the new session here
    /// already (its slot was free), where the old entry's link takes its packets first, or was
    /// remembered as hearsay (the slot was taken). Once the old entry has gone silent it is
    /// stale: it goes, and the new session is found or seated from the hearsay. Until then the
    /// packets are refused, as before. Returns true if the packet should be tried again.
    fn seat_new_session_at(&mut self, now: Instant, from: &Node, header: &PacketHeader) -> bool {
        let listed = self
            .session
            .as_ref()
            .is_some_and(|s| s.slot_of(from, header.token).is_some());
        let hearsay = self
            .hearsay
            .iter()
            .any(|h| h.token == header.token && self.same_node(&h.node, from));
        if !listed && !hearsay {
            return false;
        }
        self.forget_stale_player_at(now, from, header.token);
        if self.others_at(from, header.token).next().is_some() {
            return false;
        }
        let seated = listed || self.seat_from_hearsay(now, from, header);
        if seated {
            log::info!(
                "peer: slot {:?}: its player's node came back under a new token",
                header.sender_slot
            );
        }
        seated
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
    pub(super) fn others_at<'a>(
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
    pub(super) fn remove_departed(&mut self, slot: u8, token: u32, reason: &str) {
        if let Some(session) = self.session.as_mut() {
            session.remove_player(slot, reason);
        }
        self.note_departed(token);
    }

    /// Remember a token that left, so late packets carrying it cannot seat it again.
    pub(super) fn note_departed(&mut self, token: u32) {
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
            if list.iter().any(|e| e.token == my_token) && self.takes_offer(&from, list) {
                self.move_into_offer(now, from, packet, events);
                return;
            }
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
    pub(super) fn merge_player_list(
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
        let predecessors: Vec<u32> = placed
            .iter()
            .filter(|(token, node)| self.is_predecessor_entry(*token, node))
            .map(|(token, _)| *token)
            .collect();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let new_entries: Vec<&PlayerListEntry> = list
            .iter()
            .filter(|e| e.token != my_token && !self.departed.contains(&e.token))
            .filter(|e| !predecessors.contains(&e.token))
            .filter(|e| session.may_seat(e.token))
            .filter(|e| !session.players().iter().any(|p| p.token == e.token))
            .collect();
        // A holder this peer never heard from is hearsay too: an earlier list put it there. A
        // seated player's newer list has it right more often (the holder may have switched away
        // before this peer was seated), and while each of two players holds a ghost where the
        // other's list put the other, neither sends the first packet `seat_from_hearsay` waits
        // for. The holder is set aside as hearsay, so its own packets still claim a slot. A
        // seat this peer gave itself stays: it knows better than the list.
        let mut displaced = Vec::new();
        if sender.is_some() {
            for entry in &new_entries {
                let Some(holder) = session.players().get(entry.slot).filter(|h| {
                    let seated_here = self
                        .queue
                        .get(h.token)
                        .is_some_and(|q| q.assigned.is_some());
                    !h.confirmed && !seated_here
                }) else {
                    continue;
                };
                displaced.push(holder.list_entry());
                session.displace_player(now, entry.slot, "moved to another slot");
            }
        }
        let mut hearsay = Vec::new();
        for entry in new_entries {
            let node = match sender {
                Some((token, node)) if token == entry.token => node,
                _ => entry.node,
            };
            let taken =
                entry.slot == session.my_slot() || session.players().get(entry.slot).is_some();
            if taken {
                // Hearsay cannot evict a player heard from here: remember the entry until the
                // player's own packets say where it sits.
                hearsay.push(PlayerListEntry { node, ..*entry });
            } else {
                session.add_player(now, entry.slot, node, entry.token, entry.name, entry.joined);
            }
        }
        // Requests someone else answered are not ours to answer any more.
        self.queue
            .retain(|e| e.assigned.is_some() || !list.iter().any(|l| l.token == e.token));
        // A displaced holder this list seated again in another slot is no hearsay.
        if let Some(session) = self.session.as_ref() {
            displaced.retain(|e| !session.players().iter().any(|p| p.token == e.token));
        }
        for entry in displaced.into_iter().chain(hearsay) {
            self.remember_hearsay(entry);
        }
    }

    pub(super) fn remember_hearsay(&mut self, entry: PlayerListEntry) {
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

    /// Answer queued requests whose time has come: seat them (or refuse), or resend a reply.
    pub(super) fn answer_due_requests(&mut self, now: Instant) {
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
                // The player listed at the requester's own node is not one to wait for: it is
                // the requester's dead predecessor (the request would go back to the requester).
                let alive_higher: Vec<Node> = self
                    .live_higher_players(now, self.deference_window())
                    .into_iter()
                    .filter(|n| !self.same_node(n, &request.node))
                    .collect();
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
                // A dead process listed at the requester's node (its process died and a new one
                // started on the port) holds a seat until it has been silent for the deference
                // window; then the newcomer takes it. A refused newcomer asks on until its connect
                // loop ends, so in a full game it is seated once that seat is free.
                self.forget_stale_player_at(now, &request.node, request.token);
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
}
