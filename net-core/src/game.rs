//! The game-code interface layer's own state: the local player's name and ship state, the queue
//! of events the game polls (`NET_PollEvent`), the object-position callback for time-critical
//! events, and demo recording and playback.
//!
//! During playback the game sees the recorded stream through the same queue and the same
//! player views (`player_name`, `player_state`, `owner_of`) it uses live; nothing here knows
//! which protocol produced the events.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Instant;

use crate::demo::{DemoItem, DemoPlayer, DemoRecorder, DemoSummary};
use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::{PlayerName, RemoteEvent, ShipState, MAX_SLOTS};
use crate::session::{GameEvent, ObjectOwners};

/// Most events kept for a game that does not poll; the oldest are dropped (and counted).
const EVENT_QUEUE_LIMIT: usize = 65_536;

/// Asked for an object's current position right before a time-critical event is sent.
pub type PositionCallback = Box<dyn FnMut(u32) -> Option<[f32; 3]> + Send>;

/// What the game sees of the other players while a demo plays.
#[derive(Default)]
struct PlaybackWorld {
    names: [Option<PlayerName>; MAX_SLOTS],
    states: [Option<ShipState>; MAX_SLOTS],
    owners: ObjectOwners,
}

impl PlaybackWorld {
    fn apply(&mut self, item: &DemoItem) {
        match item {
            DemoItem::State { slot, state } => {
                if let Some(s) = self.states.get_mut(*slot as usize) {
                    *s = Some(*state);
                }
            }
            DemoItem::Event(event) => match event {
                GameEvent::PlayerConnected { slot, name }
                | GameEvent::PlayerName { slot, name } => {
                    if let Some(n) = self.names.get_mut(*slot as usize) {
                        *n = Some(*name);
                    }
                }
                GameEvent::PlayerDisconnected { slot, .. } => {
                    if let Some(n) = self.names.get_mut(*slot as usize) {
                        *n = None;
                    }
                    if let Some(s) = self.states.get_mut(*slot as usize) {
                        *s = None;
                    }
                    self.owners.forget_slot(*slot);
                }
                GameEvent::Remote { slot, event } => {
                    if let Some(id) = event.object_id() {
                        match event {
                            RemoteEvent::KillObject { .. } => self.owners.killed(id),
                            _ => self.owners.created(id, *slot),
                        }
                    }
                }
                _ => {}
            },
        }
    }
}

/// Counters of the game interface shown by `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameStats {
    pub events_queued: u64,
    pub events_polled: u64,
    pub events_dropped: u64,
}

/// The game interface of one subsystem.
pub struct GameInterface {
    name: PlayerName,
    local_state: ShipState,
    events: VecDeque<GameEvent>,
    position_callback: Option<PositionCallback>,
    recorder: Option<DemoRecorder>,
    player: Option<DemoPlayer>,
    playback: PlaybackWorld,
    /// Whether the game sees the demo's players (from `play` until `stop`, also after the
    /// demo ended, so the last events can still be looked up).
    playback_view: bool,
    stats: GameStats,
}

/// The name of a player who has not chosen one: `player-` and four hex digits, different in
/// every process, so two games that never set a name can still sit on one slot or game server
/// (which refuses a name already taken) and can be told apart in a peer game.
pub fn default_player_name(random: u32) -> PlayerName {
    let text = format!("player-{:04x}", random & 0xffff);
    PlayerName::new(text.as_bytes()).expect("a short ASCII name is valid")
}

impl Default for GameInterface {
    fn default() -> Self {
        GameInterface {
            name: default_player_name(crate::random::nonzero_u32()),
            local_state: ShipState::default(),
            events: VecDeque::new(),
            position_callback: None,
            recorder: None,
            player: None,
            playback: PlaybackWorld::default(),
            playback_view: false,
            stats: GameStats::default(),
        }
    }
}

impl GameInterface {
    pub fn name(&self) -> &PlayerName {
        &self.name
    }

    pub fn set_name(&mut self, name: PlayerName) {
        self.name = name;
    }

    pub fn local_state(&self) -> &ShipState {
        &self.local_state
    }

    pub fn set_local_state(&mut self, state: ShipState) {
        self.local_state = state;
    }

    pub fn stats(&self) -> &GameStats {
        &self.stats
    }

    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    pub fn set_position_callback(&mut self, callback: Option<PositionCallback>) {
        self.position_callback = callback;
    }

    /// The callback's answer for `object_id`, if a callback is set and knows the object.
    pub fn position_of(&mut self, object_id: u32) -> Option<[f32; 3]> {
        self.position_callback.as_mut()?(object_id)
    }

    pub fn has_position_callback(&self) -> bool {
        self.position_callback.is_some()
    }

    /// An event from the live protocol: recorded if recording, then queued for the game.
    /// Live events are not shown while a demo plays (the game sees the demo).
    pub fn deliver(&mut self, now: Instant, event: GameEvent) {
        if self.recorder.is_some() {
            self.record(now, DemoItem::Event(event.clone()));
        }
        if self.player.is_none() {
            self.queue(event);
        }
    }

    /// A live remote state update: recorded if recording.
    pub fn state_update(&mut self, now: Instant, slot: u8, state: ShipState) {
        self.record(now, DemoItem::State { slot, state });
    }

    fn queue(&mut self, event: GameEvent) {
        if self.events.len() >= EVENT_QUEUE_LIMIT {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(event);
        self.stats.events_queued += 1;
    }

    /// The next event for the game.
    pub fn poll_event(&mut self) -> Option<GameEvent> {
        let event = self.events.pop_front()?;
        self.stats.events_polled += 1;
        Some(event)
    }

    // ----- demo ------------------------------------------------------------------------------

    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    pub fn is_playing(&self) -> bool {
        self.player.is_some()
    }

    fn record(&mut self, now: Instant, item: DemoItem) {
        let Some(recorder) = self.recorder.as_mut() else {
            return;
        };
        if let Err(err) = recorder.record(now, &item) {
            if err.code == ErrorCode::Io {
                log::error!("demo recording stopped: {err}");
                let recorder = self.recorder.take().expect("recorder present");
                let _ = recorder.finish_at(now);
                self.queue(GameEvent::Error {
                    text: format!("demo recording stopped: {err}"),
                });
            } else {
                log::warn!("demo: an item was not recorded: {err}");
            }
        }
    }

    /// `record FILE`.
    pub fn start_recording(&mut self, path: &Path, now: Instant) -> NetResult<String> {
        if self.recorder.is_some() {
            return Err(NetError::new(
                ErrorCode::State,
                "already recording (stop first)",
            ));
        }
        if self.player.is_some() {
            return Err(NetError::new(
                ErrorCode::State,
                "a demo is playing (stop first)",
            ));
        }
        self.recorder = Some(DemoRecorder::create(path, now)?);
        Ok(format!("recording to {}", path.display()))
    }

    /// `play FILE`: the game sees the recorded events and states instead of live ones.
    pub fn start_playback(&mut self, path: &Path, now: Instant) -> NetResult<String> {
        if self.recorder.is_some() {
            return Err(NetError::new(ErrorCode::State, "recording (stop first)"));
        }
        if self.player.is_some() {
            return Err(NetError::new(
                ErrorCode::State,
                "a demo is already playing (stop first)",
            ));
        }
        let player = DemoPlayer::open(path, now)?;
        let mut line = format!(
            "playing {} ({} items, {:.1} s)",
            path.display(),
            player.items_total(),
            player.duration().as_secs_f64()
        );
        if let Some(broken) = player.broken() {
            line.push_str(&format!(
                "; the file is damaged at byte {}: {} (the part before it plays)",
                broken.offset, broken.reason
            ));
        }
        self.playback = PlaybackWorld::default();
        self.playback_view = true;
        self.player = Some(player);
        Ok(line)
    }

    /// `stop`: end recording or playback.
    pub fn stop(&mut self, now: Instant) -> NetResult<String> {
        if let Some(recorder) = self.recorder.take() {
            let summary: DemoSummary = recorder.finish_at(now)?;
            return Ok(format!(
                "recorded {} items ({} bytes, {:.1} s) to {}",
                summary.items,
                summary.bytes,
                summary.duration.as_secs_f64(),
                summary.path.display()
            ));
        }
        if self.playback_view && self.player.is_none() {
            self.playback_view = false;
            return Ok("playback had finished; showing the live game again".to_string());
        }
        if let Some(player) = self.player.take() {
            self.playback_view = false;
            return Ok(format!(
                "stopped playback after {} of {} items",
                player.items_played(),
                player.items_total()
            ));
        }
        Err(NetError::new(
            ErrorCode::State,
            "nothing is recording or playing",
        ))
    }

    /// Feed due playback items to the game. Returns true when playback just ended.
    pub fn advance_playback(&mut self, now: Instant) -> bool {
        let Some(player) = self.player.as_mut() else {
            return false;
        };
        let mut due = Vec::new();
        while let Some(item) = player.poll(now) {
            due.push(item);
        }
        let finished = player.is_finished();
        for item in due {
            self.playback.apply(&item);
            if let DemoItem::Event(event) = item {
                self.queue(event);
            }
        }
        if finished {
            self.player = None;
            log::info!("demo playback finished");
        }
        finished
    }

    /// Whether player lookups show the demo's players (see `playback_view`).
    pub fn shows_playback(&self) -> bool {
        self.playback_view
    }

    pub fn playback_timeout(&self) -> Option<Instant> {
        self.player.as_ref()?.poll_timeout()
    }

    /// A player's name as the demo being played shows it.
    pub fn playback_name(&self, slot: u8) -> Option<PlayerName> {
        self.playback.names.get(slot as usize).copied().flatten()
    }

    /// A player's state as the demo being played shows it.
    pub fn playback_state(&self, slot: u8) -> Option<ShipState> {
        self.playback.states.get(slot as usize).copied().flatten()
    }

    pub fn playback_owner(&self, object_id: u32) -> Option<u8> {
        self.playback.owners.owner(object_id)
    }
}
