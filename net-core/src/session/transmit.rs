//! Packets out and timers: which link is due a packet and writing it, the keep-alives and the
//! state tick, retransmissions, the peer timeout (with the process's own stalls not counted as
//! the others' silence), and the farewell copies of a player that is leaving.

use std::time::{Duration, Instant};

use super::{
    name_order, PacketMeta, Session, DISPLACED_KEEP, FAREWELL_COPIES, OWN_STALL_ALLOWANCE,
};
use crate::rmev::{RemoteEvent, ResumeStep};
use crate::wire::PacketType;
use crate::Node;

impl Session {
    /// The next datagram to send, written into `buf` (at least `max_payload` bytes): returns the
    /// destination and length. Call until it returns None.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(Node, usize)> {
        self.credit_own_stall(now);
        self.advance_tick(now);
        if self.remotes.iter().any(|r| r.hello_due) {
            self.queue_due_hellos();
        }
        // The receive rate goes to every remote after its hello, and again when it changes.
        let rate = self.config.receive_rate;
        for remote in self.remotes.iter_mut().filter(|r| r.rate_told != rate) {
            remote.rate_told = rate;
            remote.link.queue_event(RemoteEvent::Rate(rate));
        }
        let count = self.remotes.len();
        for step in 0..count {
            let index = (self.next_remote + step) % count;
            if !self.packet_due(index, now) {
                continue;
            }
            self.next_remote = (index + 1) % count;
            let joined = self.joined;
            let state_version = self.state_version;
            let tick = self.tick;
            let state = self.local_state;
            let max = self.config.max_payload.min(buf.len());
            let senders = count;
            let remote = &mut self.remotes[index];
            let kind = remote.pending_kind.take().unwrap_or(if joined {
                PacketType::GameState
            } else {
                PacketType::NodeAlive
            });
            let send_state = joined
                && remote.budget.allows_state(now, senders)
                && (remote.state_version_sent != state_version
                    || remote
                        .state_sent_at
                        .is_none_or(|t| now - t >= self.config.keepalive_interval));
            let before = remote.link.stats().reliable_sent + remote.link.stats().retransmissions;
            let meta = PacketMeta {
                relay: false,
                kind,
                sender_slot: Some(self.my_slot),
                joined,
                token: self.my_token,
            };
            let written =
                remote
                    .link
                    .write_packet(now, &mut buf[..max], meta, send_state.then_some(&state));
            remote.last_sent = Some(now);
            remote.tick_served = tick;
            if send_state {
                remote.state_version_sent = state_version;
                remote.state_sent_at = Some(now);
            }
            match written {
                Ok(len) => {
                    remote.budget.spend(now, senders, len);
                    let after =
                        remote.link.stats().reliable_sent + remote.link.stats().retransmissions;
                    self.stats.events_sent += after - before;
                    self.stats.packets_sent += 1;
                    return Some((remote.node, len));
                }
                Err(err) => {
                    self.stats.encode_errors += 1;
                    log::error!("could not encode a packet: {err}");
                }
            }
        }
        None
    }

    /// For a player that is leaving (`disconnect`, after the frame's last packets went out):
    /// [`FAREWELL_COPIES`] more packets to every remote whose link still owes reliable events,
    /// each carrying all of them again, handed to `send`. Nothing is retransmitted once the
    /// player has left, so one lost last packet used to cost its events (a "bye" said right
    /// before leaving); now only the loss of every copy does. The others deliver each event
    /// once (reliable events are deduplicated by id).
    pub fn farewell_copies(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        send: &mut dyn FnMut(Node, &[u8]),
    ) {
        let joined = self.joined;
        let state = self.local_state;
        let max = self.config.max_payload.min(buf.len());
        let meta = PacketMeta {
            relay: false,
            kind: if joined {
                PacketType::GameState
            } else {
                PacketType::NodeAlive
            },
            sender_slot: Some(self.my_slot),
            joined,
            token: self.my_token,
        };
        for remote in self.remotes.iter_mut() {
            for _ in 0..FAREWELL_COPIES {
                match remote.link.write_farewell(
                    now,
                    &mut buf[..max],
                    meta,
                    joined.then_some(&state),
                ) {
                    Ok(Some(len)) => {
                        self.stats.packets_sent += 1;
                        send(remote.node, &buf[..len]);
                    }
                    Ok(None) => break,
                    Err(err) => {
                        self.stats.encode_errors += 1;
                        log::error!("could not encode a farewell packet: {err}");
                        break;
                    }
                }
            }
        }
    }

    fn advance_tick(&mut self, now: Instant) {
        if now >= self.next_tick {
            self.tick += 1;
            self.next_tick = (self.next_tick + self.config.send_interval).max(now);
        }
    }

    fn packet_due(&self, index: usize, now: Instant) -> bool {
        let remote = &self.remotes[index];
        if remote.pending_kind.is_some() || remote.link.wants_to_send(now) {
            return true;
        }
        let keepalive_due = remote.last_sent.is_none_or(|t| {
            t.checked_add(self.config.keepalive_interval)
                .is_some_and(|due| due <= now)
        });
        if keepalive_due {
            return true;
        }
        self.joined
            && remote.tick_served < self.tick
            && remote.state_version_sent != self.state_version
            && remote.budget.allows_state(now, self.remotes.len())
    }

    /// When the session next needs `handle_timeout` / `poll_transmit`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut earliest = None::<Instant>;
        let mut consider = |t: Instant| earliest = Some(earliest.map_or(t, |e| e.min(t)));
        for remote in &self.remotes {
            consider(
                remote
                    .last_sent
                    .map_or(remote.last_heard, |t| t + self.config.keepalive_interval),
            );
            consider(remote.last_heard + self.config.peer_timeout);
            if let Some(t) = remote.link.next_retransmit(remote.last_heard) {
                consider(t);
            }
            if let Some(t) = remote.link.ack_due_at() {
                consider(t);
            }
            if let Some(t) = remote.hold_ends_at() {
                consider(t);
            }
            if remote.hello_due || remote.rate_told != self.config.receive_rate {
                consider(remote.last_heard);
            }
            // A state held back for the remote's receive rate goes when the budget refills.
            if self.joined && remote.state_version_sent != self.state_version {
                if let Some(t) = remote.budget.state_ready_at(self.remotes.len()) {
                    consider(t.max(self.next_tick));
                }
            }
            if let Some((since, steps)) = &remote.claim {
                let silence = self.earlier_session_silence();
                consider(*since + silence * 2);
                if let Some(ResumeStep::Hello(tokens)) = steps.first() {
                    for player in self.players.iter() {
                        if tokens.as_slice().contains(&player.token) {
                            consider(player.last_heard + silence);
                        }
                    }
                }
            }
        }
        if let Some(t) = self.resume.next_expiry() {
            consider(t);
        }
        for (_, at) in &self.displaced {
            consider(*at + DISPLACED_KEEP);
        }
        if let Some(t) = self.early.next_expiry() {
            consider(t);
        }
        if let Some(t) = self.name_order.next_expiry() {
            consider(t);
        }
        if let Some(since) = self.rename_hold_since {
            consider(since + name_order::NAME_HOLD);
        }
        if self.joined
            && self
                .remotes
                .iter()
                .any(|r| r.state_version_sent != self.state_version)
        {
            consider(self.next_tick);
        }
        earliest
    }

    /// Run timers: drop remotes silent for `peer_timeout`. Returns the slots dropped (mesh),
    /// each with the token and node the player had, and whether the server went silent (star).
    pub fn handle_timeout(&mut self, now: Instant) -> (Vec<(u8, u32, Node)>, bool) {
        self.credit_own_stall(now);
        self.advance_tick(now);
        self.park_displaced(now);
        self.settle_claims(now);
        self.resume.expire(now);
        self.clock = now;
        self.early.advance(now);
        for (slot, event) in self.early.expired(now) {
            log::warn!("session: events from slot {slot} came before the player; delivering them");
            self.apply_remote_event(slot, event);
        }
        if self
            .rename_hold_since
            .is_some_and(|since| now.saturating_duration_since(since) >= name_order::NAME_HOLD)
        {
            log::warn!(
                "session: the server has not answered a rename for {} s; sending the events queued after it",
                name_order::NAME_HOLD.as_secs()
            );
            if let Err(err) = self.release_rename_holds() {
                log::warn!("session: {err}");
            }
        }
        for (slot, step) in self.name_order.expired(now) {
            match &step {
                name_order::Step::Event(_) => log::warn!(
                    "session: slot {slot} renamed itself but the server's line did not come; delivering its events"
                ),
                name_order::Step::Rename(name) => log::warn!(
                    "session: slot {slot}'s stream did not reach the name {name} the server gave it; showing it"
                ),
            }
            self.apply_name_step(slot, step);
        }
        for remote in &mut self.remotes {
            if remote.hold_ends_at().is_some_and(|end| now >= end) {
                log::warn!(
                    "session: no RE_RESUME answer from slot {:?} in time; sending on",
                    remote.slot
                );
                for parked in std::mem::take(&mut remote.resuming) {
                    self.resume.stats_mut().count_dropped(parked.outgoing.len());
                }
                remote.answers.clear();
                self.resume.stats_mut().count_hold_timeout();
                Self::release_held(remote);
            }
        }
        let timeout = self.config.peer_timeout;
        let silent: Vec<(Option<u8>, usize)> = self
            .remotes
            .iter()
            .enumerate()
            .filter(|(_, r)| now.saturating_duration_since(r.last_heard) >= timeout)
            .map(|(i, r)| (r.slot, i))
            .collect();
        let mut dropped = Vec::new();
        let mut server_silent = false;
        for (slot, _) in silent {
            match slot {
                Some(slot) => {
                    self.stats.players_timed_out += 1;
                    let (token, node) = self
                        .players
                        .get(slot)
                        .map_or((0, Node::default()), |p| (p.token, p.node));
                    self.remove_player(slot, &format!("no packets for {} s", timeout.as_secs()));
                    dropped.push((slot, token, node));
                }
                None => server_silent = true,
            }
        }
        (dropped, server_silent)
    }

    /// Silence is counted only over time this process ran. A process stopped for a while (a
    /// debugger, SIGSTOP, a suspended machine, a frame that took seconds) heard nothing in that
    /// time because it did not listen; when it was stopped inside a frame, after the frame read
    /// the clock, that frame even reads what waited in the socket with the time from before the
    /// stop. So when the gap since the last call is longer than `own_stall_allowance`, every
    /// remote's and player's last-heard time moves forward by the excess (never past `now`):
    /// the others are not dropped for this process's own silence. A game that calls less often
    /// than the allowance only makes a dead peer's drop that much slower.
    pub(super) fn credit_own_stall(&mut self, now: Instant) {
        let last_run = self.last_run;
        if now <= last_run {
            return;
        }
        self.last_run = now;
        // Almost every call comes well within the allowance: one comparison decides it (this runs
        // in every frame, and subtracting instants costs several times more).
        let allowance = self.own_stall_allowance();
        if last_run
            .checked_add(allowance)
            .is_none_or(|limit| now <= limit)
            || self.remotes.is_empty()
        {
            return;
        }
        let gap = now - last_run;
        let credit = gap - allowance;
        self.stats.own_stalls += 1;
        log::info!(
            "session: this process did not run for {} ms; the others' silence is counted without it",
            gap.as_millis()
        );
        for remote in &mut self.remotes {
            remote.last_heard = (remote.last_heard + credit).min(now);
        }
        for player in self.players.iter_mut() {
            player.last_heard = (player.last_heard + credit).min(now);
        }
    }

    /// The longest gap between two calls that still counts as listening: a second, or half the
    /// silence that drops a player if that is shorter.
    fn own_stall_allowance(&self) -> Duration {
        OWN_STALL_ALLOWANCE.min(self.config.peer_timeout / 2)
    }
}
