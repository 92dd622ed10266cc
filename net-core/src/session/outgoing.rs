//! What the local game sends: its ship state, remote events queued on every link, a rename held
//! until the server answers, joining and unjoining, and the positions of time-critical events
//! asked for just before they leave.

use super::Session;
use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::{PlayerName, RemoteEvent, ShipState};
use crate::wire::PacketType;

impl Session {
    /// Set the local ship state (sent every state tick while it changes).
    pub fn set_local_state(&mut self, state: ShipState) {
        if !state.same_bits(&self.local_state) {
            self.local_state = state;
            self.state_version += 1;
        }
    }

    /// Queue a remote event to every remote (or to the server). While a rename waits for the
    /// server's answer (`ask_rename`) it waits too, so it goes out after the new name.
    pub fn queue_event(&mut self, event: RemoteEvent) -> NetResult<()> {
        if let Some(id) = event.object_id() {
            match event {
                RemoteEvent::KillObject { .. } => self.owners.killed(id),
                _ => self.owners.created(id, self.my_slot),
            }
        }
        if self.rename_holds.is_empty() {
            return self.queue_to_links(event);
        }
        let held: usize = self.rename_holds.iter().map(Vec::len).sum();
        if held >= self.config.link.max_queued {
            return Err(NetError::new(
                ErrorCode::Full,
                "outgoing event queue full (waiting for the server to answer a rename)",
            ));
        }
        if let Some(group) = self.rename_holds.back_mut() {
            group.push(event);
        }
        Ok(())
    }

    /// A rename was asked of the server (slot and game servers): the events queued from now
    /// on wait for its answer (`rename_answered`), so the others get them after the new name
    /// (RE_PLAYERNAME marks its place in this client's stream; see `name_order`).
    pub fn ask_rename(&mut self) {
        self.rename_holds.push_back(Vec::new());
        self.rename_hold_since.get_or_insert(self.clock);
    }

    /// The server answered the oldest rename asked: `Some(name)` accepted (the others are told
    /// now), None refused. The events queued after asking it go out now (after the name).
    pub fn rename_answered(&mut self, accepted: Option<PlayerName>) -> NetResult<()> {
        let group = self.rename_holds.pop_front().unwrap_or_default();
        // The next rename still held (if any) waits from now.
        self.rename_hold_since = (!self.rename_holds.is_empty()).then_some(self.clock);
        let mut result = Ok(());
        if let Some(name) = accepted {
            self.my_name = name;
            result = self.queue_to_links(RemoteEvent::PlayerName(name));
        }
        // Queued before the next rename was asked (the server answers in order): they need
        // not wait for it.
        for event in group {
            let queued = self.queue_to_links(event);
            result = result.and(queued);
        }
        result
    }

    /// Every event waiting for a rename's answer goes out now, without the name (the session
    /// ends: the last packet of a disconnect, or a backend switch that carries them on).
    pub fn release_rename_holds(&mut self) -> NetResult<()> {
        self.rename_hold_since = None;
        let mut result = Ok(());
        while let Some(group) = self.rename_holds.pop_front() {
            for event in group {
                let queued = self.queue_to_links(event);
                result = result.and(queued);
            }
        }
        result
    }

    fn queue_to_links(&mut self, event: RemoteEvent) -> NetResult<()> {
        let full = || {
            NetError::new(
                ErrorCode::Full,
                "outgoing event queue full (the other side is not acknowledging)",
            )
        };
        let limit = self.config.link.max_queued;
        self.game_event_serial += 1;
        let serial = self.game_event_serial;
        // Each link gets a copy; the last one gets the event itself. A link displaced a moment
        // ago gets it too (not sent while displaced): if its player is seated again in another
        // slot the link goes on with nothing missing, and if it is parked its stream says
        // truly what that player has not got.
        let last = (self.remotes.len() + self.displaced.len()).saturating_sub(1);
        let displaced = self.displaced.iter_mut().map(|(remote, _)| remote);
        let mut event = Some(event);
        for (index, remote) in self.remotes.iter_mut().chain(displaced).enumerate() {
            let copy = if index == last {
                event.take()
            } else {
                event.clone()
            };
            let Some(copy) = copy else { break };
            match remote.held.as_mut() {
                Some((held, _)) if held.len() >= limit => return Err(full()),
                Some((held, _)) => held.push((serial, copy)),
                None if !remote.link.queue_tagged(serial, copy) => return Err(full()),
                None => {}
            }
        }
        Ok(())
    }

    /// Join the game: announced reliably to everyone.
    pub fn join(&mut self) -> NetResult<()> {
        if self.joined {
            return Err(NetError::new(ErrorCode::State, "already joined"));
        }
        self.joined = true;
        self.queue_event(RemoteEvent::PlayerStatus {
            joined: true,
            flag: 0,
        })?;
        for remote in &mut self.remotes {
            remote.pending_kind = Some(PacketType::Join);
        }
        Ok(())
    }

    /// Leave the game but stay connected; `flag` is passed to the others.
    pub fn unjoin(&mut self, flag: u8) -> NetResult<()> {
        if !self.joined {
            return Err(NetError::new(ErrorCode::State, "not joined"));
        }
        self.joined = false;
        self.queue_event(RemoteEvent::PlayerStatus {
            joined: false,
            flag,
        })?;
        for remote in &mut self.remotes {
            remote.pending_kind = Some(PacketType::Unjoin);
        }
        Ok(())
    }

    /// Change the local name and tell everyone (RE_PLAYERNAME).
    pub fn set_name(&mut self, name: PlayerName) -> NetResult<()> {
        self.my_name = name;
        self.queue_event(RemoteEvent::PlayerName(name))
    }

    /// Ask for the current position of time-critical events that have not been sent yet
    /// (called immediately before packets are written).
    pub fn refresh_positions(&mut self, position_of: &mut dyn FnMut(u32) -> Option<[f32; 3]>) {
        let mut cache: Vec<(u32, Option<[f32; 3]>)> = Vec::new();
        for remote in &mut self.remotes {
            for event in remote
                .link
                .queued_events_mut()
                .filter(|e| e.is_time_critical())
            {
                let Some(id) = event.object_id() else {
                    continue;
                };
                let pos = match cache.iter().find(|(i, _)| *i == id) {
                    Some((_, pos)) => *pos,
                    None => {
                        let pos = position_of(id).filter(|p| p.iter().all(|f| f.is_finite()));
                        cache.push((id, pos));
                        pos
                    }
                };
                if let Some(pos) = pos {
                    event.set_position(pos);
                }
            }
        }
    }

    // ----- what arrives ----------------------------------------------------------------------
}
