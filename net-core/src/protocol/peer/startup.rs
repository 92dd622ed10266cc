//! The startup election (design section 2.3.1): the connect loop, a slave's slot-request loop
//! and the queue it forwards, and the temporary master that seats itself and every request it
//! queued. See the module above for the whole protocol.

use std::sync::Arc;
use std::time::Instant;

use super::{node_eq_of, PeerProtocol, Phase, Reply, TargetAsk};
use crate::rmev::{ConnectRequest, RemoteEvent, ResumeStep};
use crate::session::{GameEvent, LocalPlayer, Session};
use crate::wire::{DecodedPacket, PacketType, WireEvent};
use crate::Node;

impl PeerProtocol {
    pub(super) fn handle_connecting(
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

    pub(super) fn handle_slot_request(
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
    pub(super) fn send_connect(&mut self, to: Node) {
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
    pub(super) fn become_slave(
        &mut self,
        now: Instant,
        master: Node,
        master_requests: Vec<ConnectRequest>,
    ) {
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

    /// A CONNECT_REPLY while starting (or an offer a lone peer takes, see `knocks`): if it
    /// seats us, enter the game.
    pub(super) fn take_reply(
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
            if self.is_predecessor_entry(entry.token, &node) {
                continue;
            }
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

    pub(super) fn give_up_refused(&mut self, text: &str) {
        log::warn!("peer: connect refused: {text}");
        self.withdraw_own_request();
        self.reset();
        self.events.push_back(GameEvent::Error {
            text: format!("connect refused: {text}"),
        });
    }

    pub(super) fn become_master(&mut self, now: Instant) {
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
}
