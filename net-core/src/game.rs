//! The game-code interface layer's own state: the local player's name and ship state, the queue
//! of events the game polls (`NET_PollEvent`), the object-position callback for time-critical
//! events, and demo recording and playback.
//!
//! During playback the game sees the recorded stream through the same queue and the same
//! player views (`player_name`, `player_state`, `owner_of`) it uses live; nothing here knows
//! which protocol produced the events. So that the views of its own slot and objects play back
//! too, a recording also holds the game's own player (slot, name), its own ship state and the
//! objects it created and killed, each once per frame as of the frame's start (see
//! `record_own_changes`). A recording begun in a game starts with what the game knew of it, so
//! its playback shows the game as it was (see `record_snapshot`).

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::demo::{DemoItem, DemoPlayer, DemoRecorder, DemoSummary, OwnPlayer, PlaybackWorld};
use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::{PlayerName, ShipState};
use crate::session::{GameEvent, Session};

/// Most events kept for a game that does not poll; the oldest are dropped (and counted).
const EVENT_QUEUE_LIMIT: usize = 65_536;

/// Most own object creations and kills kept for the next frame's records (a game that queues
/// more between two frames loses the oldest from its recording, with a warning).
const OWN_OBJECTS_LIMIT: usize = 65_536;

/// The Disconnected of a `stop` that leaves a demo's game for a live game not connected.
const DEMO_STOPPED: &str = "demo stopped: back to the live game, where you are not connected";

/// The same, when a demo is played while another one that ended is still shown.
const DEMO_REPLACED: &str = "demo ended: another one is played, and you are not in a live game";

/// Asked for an object's current position right before a time-critical event is sent.
pub type PositionCallback = Box<dyn FnMut(u32) -> Option<[f32; 3]> + Send>;

/// A player whose PlayerDisconnected is queued for the game but not polled yet, as the lookups
/// showed it just before it left: `NET_FetchPlayerName` and `NET_GetPlayerState` of its slot
/// answer with it until the game polls that event, so the game can still name the player of
/// the events queued before it (its last chat line). `None` where nothing was shown (the lookup
/// answers as if it were gone), both `None` once the own game left (see `queue_departing`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Departing {
    pub slot: u8,
    pub name: Option<PlayerName>,
    pub state: Option<ShipState>,
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
    /// One per PlayerDisconnected in `events` (and in that order): the departing players the
    /// lookups still show (see [`Departing`]).
    departing: VecDeque<Departing>,
    position_callback: Option<PositionCallback>,
    recorder: Option<DemoRecorder>,
    player: Option<DemoPlayer>,
    playback: PlaybackWorld,
    /// Items the demo handed out (due) that the world has not taken in yet, with their recorded
    /// times: the game's lookups answer as of the event it polls (see `take_fed_events`).
    fed: VecDeque<(Duration, DemoItem)>,
    /// Whether the game sees the demo's players (from `play` until `stop`, also after the
    /// demo ended, so the last events can still be looked up). The demo's world is empty until
    /// the game has polled what was queued before the demo (it takes in fed items only then:
    /// `advance_playback`), so those events are looked up as after a live Disconnected.
    playback_view: bool,
    /// The live game's own slot, from its Connected event to its Disconnected event.
    own_slot: Option<u8>,
    /// A live game's Disconnected that came while a demo played: given to the game when the
    /// live events show again, so it learns it is out of the live game. `play` leaves the game
    /// before the demo starts (its Disconnected is queued ahead of the demo) and no game can be
    /// joined while a demo is shown, so this only keeps a late one from being lost.
    held_disconnect: Option<GameEvent>,
    /// Whether the last own Connected/Disconnected queued for the game (live or from a demo)
    /// was a Connected: the game then believes it is in a game, and a `stop` that leaves a
    /// demo's game for a live one that is not connected tells it so (`end_playback_view`).
    told_in_game: bool,
    /// The own name and ship state as the recording holds them last (while in a game).
    recorded_own: Option<(PlayerName, ShipState)>,
    /// Objects the game created (true) or killed since the frame started, for the recording.
    own_objects: VecDeque<(u32, bool)>,
    /// Of those, how many were dropped (over `OWN_OBJECTS_LIMIT`).
    own_objects_dropped: u64,
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
            departing: VecDeque::new(),
            position_callback: None,
            recorder: None,
            player: None,
            playback: PlaybackWorld::default(),
            fed: VecDeque::new(),
            playback_view: false,
            own_slot: None,
            held_disconnect: None,
            told_in_game: false,
            recorded_own: None,
            own_objects: VecDeque::new(),
            own_objects_dropped: 0,
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
        self.events.len() + self.fed.iter().filter(|(_, i)| is_event(i)).count()
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
        self.deliver_departing(now, event, None);
    }

    /// [`deliver`](Self::deliver), for a PlayerDisconnected with the departing player as the
    /// live lookups showed it.
    pub fn deliver_departing(
        &mut self,
        now: Instant,
        event: GameEvent,
        departing: Option<Departing>,
    ) {
        match event {
            GameEvent::Connected { slot } => self.own_slot = Some(slot),
            GameEvent::Disconnected { .. } => {
                self.own_slot = None;
                self.own_objects.clear();
            }
            _ => {}
        }
        if self.recorder.is_some() {
            self.record(now, DemoItem::Event(event.clone()));
            match event {
                GameEvent::Connected { .. } => self.record_own_player(now),
                GameEvent::Disconnected { .. } => self.recorded_own = None,
                _ => {}
            }
        }
        let disconnect = matches!(event, GameEvent::Disconnected { .. });
        if self.player.is_some() || (disconnect && !self.fed.is_empty()) {
            // Given after the demo's last event (`apply_fed_before_events`).
            if disconnect {
                self.held_disconnect = Some(event);
            }
        } else {
            self.queue_departing(event, departing);
            if disconnect {
                // A game told it is out of a game is shown nobody: an ended demo's view ends.
                self.playback_view = false;
            }
        }
    }

    /// The live events show again (the demo ended or was stopped): the live game's
    /// Disconnected that came meanwhile is the game's first.
    fn live_events_resume(&mut self) {
        if let Some(event) = self.held_disconnect.take() {
            self.queue(event);
        }
    }

    /// The game created (`created`) or killed an object through the live session; recorded with
    /// the next frame (`record_own_changes`).
    pub fn note_own_object(&mut self, object_id: u32, created: bool) {
        if self.recorder.is_none() || self.own_slot.is_none() {
            return;
        }
        if self.own_objects.len() >= OWN_OBJECTS_LIMIT {
            self.own_objects.pop_front();
            self.own_objects_dropped += 1;
        }
        self.own_objects.push_back((object_id, created));
    }

    /// At the start of every frame, while recording in a game: record what the game changed of
    /// its own since the last frame (the objects it created and killed, its name, its ship
    /// state), so the played frame's lookups answer as the live ones did. A game polls the
    /// frame's events after these changes, so they are recorded at the frame's time, before
    /// its events.
    pub fn record_own_changes(&mut self, now: Instant) {
        let slot = match self.own_slot {
            Some(slot) if self.recorder.is_some() => slot,
            _ => {
                self.own_objects.clear();
                self.own_objects_dropped = 0;
                return;
            }
        };
        if self.own_objects_dropped > 0 {
            log::warn!(
                "demo: {} objects created or killed in one frame were not recorded (at most {OWN_OBJECTS_LIMIT})",
                std::mem::take(&mut self.own_objects_dropped)
            );
        }
        while let Some((object_id, created)) = self.own_objects.pop_front() {
            self.record(now, DemoItem::OwnObject { object_id, created });
        }
        let (name, state) = self.recorded_own.map_or((true, true), |(name, state)| {
            (name != self.name, !state.same_bits(&self.local_state))
        });
        self.record_own(now, slot, name, state);
    }

    /// Record the own player as it is: out of a game, or its slot, name and ship state.
    fn record_own_player(&mut self, now: Instant) {
        match self.own_slot {
            Some(slot) => self.record_own(now, slot, true, true),
            None => {
                self.record(now, DemoItem::OwnPlayer(None));
                self.recorded_own = None;
            }
        }
    }

    /// Record the own name and/or ship state in `slot`, and remember both as recorded.
    fn record_own(&mut self, now: Instant, slot: u8, name: bool, state: bool) {
        if name {
            self.record(now, own_player(slot, self.name));
        }
        if state {
            let state = self.local_state;
            self.record(now, DemoItem::State { slot, state });
        }
        self.recorded_own = Some((self.name, self.local_state));
    }

    /// A live remote state update: recorded if recording.
    pub fn state_update(&mut self, now: Instant, slot: u8, state: ShipState) {
        self.record(now, DemoItem::State { slot, state });
    }

    fn queue(&mut self, event: GameEvent) {
        self.queue_departing(event, None);
    }

    /// Queue `event` for the game; a PlayerDisconnected keeps its departing player shown until
    /// the game polls it (`departing`, an unseated slot's if `None`). The own game's
    /// Disconnected ends that: out of a game nobody is shown.
    fn queue_departing(&mut self, event: GameEvent, departing: Option<Departing>) {
        if self.events.len() >= EVENT_QUEUE_LIMIT {
            if let Some(dropped) = self.events.pop_front() {
                self.forget_departing(&dropped);
            }
            self.stats.events_dropped += 1;
        }
        match &event {
            GameEvent::Connected { .. } => self.told_in_game = true,
            GameEvent::Disconnected { .. } => {
                self.told_in_game = false;
                for d in self.departing.iter_mut() {
                    (d.name, d.state) = (None, None);
                }
            }
            GameEvent::PlayerDisconnected { slot, .. } => {
                let slot = *slot;
                self.departing.push_back(departing.unwrap_or(Departing {
                    slot,
                    name: None,
                    state: None,
                }));
            }
            _ => {}
        }
        self.events.push_back(event);
        self.stats.events_queued += 1;
    }

    /// The game has polled (or lost) `event`: a PlayerDisconnected's player is no longer shown.
    fn forget_departing(&mut self, event: &GameEvent) {
        if let GameEvent::PlayerDisconnected { slot, .. } = event {
            if let Some(index) = self.departing.iter().position(|d| d.slot == *slot) {
                self.departing.remove(index);
            }
        }
    }

    /// The player in `slot` whose PlayerDisconnected the game has not polled yet (the earliest
    /// such one): lookups of the slot answer with it, live and in playback alike.
    pub fn departing(&self, slot: u8) -> Option<&Departing> {
        self.departing
            .iter()
            .find(|d| d.slot == slot)
            .filter(|d| d.name.is_some() || d.state.is_some())
    }

    /// The next event for the game.
    pub fn poll_event(&mut self) -> Option<GameEvent> {
        if self.events.is_empty() {
            self.take_fed_events();
        }
        let event = self.events.pop_front()?;
        self.forget_departing(&event);
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

    /// The demo part of `status`: `recording to FILE (N items, S s)`, `playing FILE (N of M
    /// items)`, `finished playing (...)` while the ended demo is still shown, or `off`.
    pub fn demo_status(&self) -> String {
        if let Some(recorder) = &self.recorder {
            return format!(
                "recording to {} ({}, {:.1} s)",
                recorder.path().display(),
                counted(recorder.items(), "item"),
                recorder.elapsed().as_secs_f64()
            );
        }
        if let Some(player) = &self.player {
            let file = player
                .path()
                .map_or_else(|| "a demo".to_string(), |p| p.display().to_string());
            return format!(
                "playing {file} ({} of {})",
                player.items_played(),
                counted(player.items_total() as u64, "item")
            );
        }
        if self.playback_view {
            return "finished playing (its players are shown until `stop`)".to_string();
        }
        "off".to_string()
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

    /// At the end of every frame while recording: what the frame recorded goes to the file (see
    /// [`DemoRecorder::flush`]). An I/O error stops recording as when writing a record.
    pub fn flush_recording(&mut self) {
        let Some(recorder) = self.recorder.as_mut() else {
            return;
        };
        if let Err(err) = recorder.flush() {
            log::error!("demo recording stopped: {err}");
            self.recorder = None;
            self.queue(GameEvent::Error {
                text: format!("demo recording stopped: {err}"),
            });
        }
    }

    /// `record FILE`. `session` is the game's session, if it has one: a recording begun in a
    /// game starts with what the game knows of it (see `record_snapshot`).
    pub fn start_recording(
        &mut self,
        path: &Path,
        now: Instant,
        session: Option<&Session>,
    ) -> NetResult<String> {
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
        if self.playback_view {
            // As `connect`: until `stop` the game sees the ended demo, not the live game a
            // recording would hold, and one `stop` ends one thing.
            return Err(NetError::new(
                ErrorCode::State,
                "a finished demo is still shown (stop first: until then the game sees only the demo)",
            ));
        }
        // A file already there is replaced (as a game's quick-save slot would be): the reply
        // says so, so a player who typed an old demo's name knows it is gone.
        let replaces = path.is_file();
        self.recorder = Some(DemoRecorder::create(path, now)?);
        self.own_objects.clear();
        match session {
            Some(session) if self.own_slot == Some(session.my_slot()) => {
                self.record_snapshot(now, session)
            }
            _ => self.record_own_player(now),
        }
        Ok(format!(
            "recording to {}{}",
            path.display(),
            if replaces {
                " (replacing the file that was there)"
            } else {
                ""
            }
        ))
    }

    /// The start of a recording begun in a game: what the game knows of it, as the records that
    /// made it known (SPEC section 8: played back, the game sees what it saw live). Connected
    /// with the own player and ship state, as with every Connected; each remote player seated
    /// as the session seats one (PlayerConnected with its name, PlayerJoined when joined) and
    /// its ship state once one has arrived; the owners of the live objects, the game's own as it
    /// records them (kind 15), the others' as kind 16. All at time zero, before anything else.
    fn record_snapshot(&mut self, now: Instant, session: &Session) {
        let own = session.my_slot();
        self.record(now, DemoItem::Event(GameEvent::Connected { slot: own }));
        self.record_own_player(now);
        for player in session.players().iter() {
            let slot = player.slot;
            let name = player.name;
            self.record(
                now,
                DemoItem::Event(GameEvent::PlayerConnected { slot, name }),
            );
            if player.joined {
                self.record(now, DemoItem::Event(GameEvent::PlayerJoined { slot }));
            }
            if player.state_time.is_some() {
                let state = player.state;
                self.record(now, DemoItem::State { slot, state });
            }
        }
        for (object_id, slot) in session.owners().entries() {
            let item = if slot == own {
                DemoItem::OwnObject {
                    object_id,
                    created: true,
                }
            } else {
                DemoItem::ObjectOwner { object_id, slot }
            };
            self.record(now, item);
        }
    }

    /// `play FILE`, first half: open the demo, so a file that cannot be played is refused
    /// before anything changes (the live game is still there to stay in).
    pub fn open_playback(&self, path: &Path, now: Instant) -> NetResult<(DemoPlayer, String)> {
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
            "playing {} ({}, {:.1} s)",
            path.display(),
            counted(player.items_total() as u64, "item"),
            player.duration().as_secs_f64()
        );
        if let Some(broken) = player.broken() {
            line.push_str(&format!(
                "; the file is damaged at byte {}: {} (the part before it plays)",
                broken.offset, broken.reason
            ));
        }
        Ok((player, line))
    }

    /// `play FILE`, second half: the game sees the recorded events and states instead of live
    /// ones. What is queued already (the live game's last events and, when `play` left a game,
    /// its Disconnected; what an ended demo fed) is polled first; the demo's world fills from
    /// its first event on (see `playback_view`).
    pub fn begin_playback(&mut self, player: DemoPlayer) {
        // A finished demo still shown ends as at `stop`, so a game the last demo left in its
        // game is told it is out of it before the next one starts.
        self.end_playback_view(DEMO_REPLACED);
        self.playback = PlaybackWorld::default();
        self.playback_view = true;
        self.player = Some(player);
    }

    /// `stop`: end recording or playback.
    pub fn stop(&mut self, now: Instant) -> NetResult<String> {
        if let Some(recorder) = self.recorder.take() {
            let summary: DemoSummary = recorder.finish_at(now)?;
            return Ok(format!(
                "recorded {} ({}, {:.1} s) to {}",
                counted(summary.items, "item"),
                counted(summary.bytes, "byte"),
                summary.duration.as_secs_f64(),
                summary.path.display()
            ));
        }
        if self.playback_view && self.player.is_none() {
            self.end_playback_view(DEMO_STOPPED);
            return Ok("playback had finished; showing the live game again".to_string());
        }
        if let Some(player) = self.player.take() {
            self.end_playback_view(DEMO_STOPPED);
            return Ok(format!(
                "stopped playback after {} of {}",
                player.items_played(),
                counted(player.items_total() as u64, "item")
            ));
        }
        Err(NetError::new(
            ErrorCode::State,
            "nothing is recording or playing",
        ))
    }

    /// `stop` of a shown demo: the lookups show the live game again. What the demo fed goes to
    /// the game first, then the live Disconnected that came meanwhile; when there is none and
    /// the demo left the game in its game (a demo played outside a live game), a Disconnected
    /// of its own, so the game never keeps the demo's players seated in its own view while the
    /// lookups no longer know them.
    fn end_playback_view(&mut self, reason: &str) {
        self.playback_view = false;
        self.take_all_fed();
        self.live_events_resume();
        if self.told_in_game && self.own_slot.is_none() {
            self.queue(GameEvent::Disconnected {
                reason: reason.to_string(),
            });
        }
    }

    /// Feed due playback items to the game. Returns true when playback just ended.
    ///
    /// Live, a game polls a frame's events with the lookups as of that frame, before its next
    /// frame (or a console command such as `net.api`) changes them. A playback frame may feed
    /// items of several recorded frames: so the world takes in the fed items only up to the
    /// time of the event the game polls (`take_fed_events`), and here only up to the first
    /// event not polled yet (everything when there is none).
    pub fn advance_playback(&mut self, now: Instant) -> bool {
        let Some(player) = self.player.as_mut() else {
            return false;
        };
        while let Some(timed) = player.poll_timed(now) {
            self.fed.push_back(timed);
        }
        let finished = player.is_finished();
        if finished {
            self.player = None;
            log::info!("demo playback finished");
        }
        if self.events.is_empty() {
            self.apply_fed_before_events();
        }
        finished
    }

    /// Take in the fed items before the first fed event (all of them when none is left), as
    /// the live world had them before the game polled that event; once the whole demo has been
    /// taken in, show the live events again.
    fn apply_fed_before_events(&mut self) {
        while self.fed.front().is_some_and(|(_, item)| !is_event(item)) {
            let (_, item) = self.fed.pop_front().expect("a fed item");
            self.playback.apply(&item);
        }
        if self.fed.is_empty() && self.player.is_none() && self.held_disconnect.is_some() {
            // The demo has ended in a live game that was left meanwhile (for it, or by itself):
            // the game is told it is out of a game, and the lookups follow that event as they do
            // live, so the demo's view ends with it (its players are not shown to a game that was
            // told it left).
            self.live_events_resume();
            self.playback_view = false;
        }
    }

    /// The game polls and nothing is queued: take in the fed items up to the time of the first
    /// fed event, every item recorded at that time included (the live frame had them all when
    /// the game polled), and queue their events. Items of later times wait for the game to poll
    /// on, as the live ones came after it had polled these.
    fn take_fed_events(&mut self) {
        self.apply_fed_before_events();
        let Some(&(time, _)) = self.fed.front() else {
            return;
        };
        while self.fed.front().is_some_and(|(t, _)| *t <= time) {
            let (_, item) = self.fed.pop_front().expect("a fed item");
            self.take_in_fed(item);
        }
    }

    /// Hand every fed item to the game at once (`stop`).
    fn take_all_fed(&mut self) {
        while let Some((_, item)) = self.fed.pop_front() {
            self.take_in_fed(item);
        }
    }

    /// Take in one fed item and queue its event; a departing player stays shown as the world
    /// showed it until the game polls its PlayerDisconnected, as live.
    fn take_in_fed(&mut self, item: DemoItem) {
        let departing = match &item {
            DemoItem::Event(GameEvent::PlayerDisconnected { slot, .. }) => Some(Departing {
                slot: *slot,
                name: self.playback_name(*slot),
                state: self.playback_state(*slot).ok(),
            }),
            _ => None,
        };
        self.playback.apply(&item);
        if let DemoItem::Event(event) = item {
            self.queue_departing(event, departing);
        }
    }

    /// Whether player lookups show the demo's players (see `playback_view`).
    pub fn shows_playback(&self) -> bool {
        self.playback_view
    }

    pub fn playback_timeout(&self) -> Option<Instant> {
        self.player.as_ref()?.poll_timeout()
    }

    /// A player's name as the demo being played shows it (this game's own name stands in for
    /// the recording game's in a file that does not hold it).
    pub fn playback_name(&self, slot: u8) -> Option<PlayerName> {
        self.playback.name(slot, &self.name)
    }

    /// A player's state as the demo being played shows it (errors as live: see
    /// [`PlaybackWorld::state`]).
    pub fn playback_state(&self, slot: u8) -> NetResult<ShipState> {
        self.playback.state(slot)
    }

    pub fn playback_owner(&self, object_id: u32) -> Option<u8> {
        self.playback.owner(object_id)
    }
}

fn is_event(item: &DemoItem) -> bool {
    matches!(item, DemoItem::Event(_))
}

fn own_player(slot: u8, name: PlayerName) -> DemoItem {
    DemoItem::OwnPlayer(Some(OwnPlayer { slot, name }))
}

/// `N NOUNs`, or `1 NOUN`: "recorded 1 item", "recorded 2 items" (`stop`, `play`, `status`).
pub(crate) fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rmev::{ChatText, RemoteEvent};

    fn name(s: &str) -> PlayerName {
        PlayerName::new(s.as_bytes()).expect("test name")
    }

    fn departing(slot: u8, who: &str, x: f32) -> Option<Departing> {
        let mut state = ShipState::default();
        state.pos[0] = x;
        Some(Departing {
            slot,
            name: Some(name(who)),
            state: Some(state),
        })
    }

    fn text(slot: u8) -> GameEvent {
        GameEvent::Remote {
            slot,
            event: RemoteEvent::SendText(ChatText::new(b"bye").expect("text")),
        }
    }

    fn left(slot: u8) -> GameEvent {
        GameEvent::PlayerDisconnected {
            slot,
            reason: "left".into(),
        }
    }

    fn shown(game: &GameInterface, slot: u8) -> Option<String> {
        game.departing(slot)
            .and_then(|d| d.name)
            .map(|n| n.to_string())
    }

    /// Two players leave slot 3 one after the other before the game polls (the second seated
    /// in between): each is shown until the game polls its own departure, then nobody.
    #[test]
    fn each_departing_player_is_shown_until_its_departure_is_polled() {
        let mut game = GameInterface::default();
        let now = Instant::now();
        game.deliver(now, GameEvent::Connected { slot: 0 });
        game.deliver(now, text(3));
        game.deliver_departing(now, left(3), departing(3, "ann", 1.0));
        let carl = name("carl");
        game.deliver(
            now,
            GameEvent::PlayerConnected {
                slot: 3,
                name: carl,
            },
        );
        game.deliver(now, text(3));
        game.deliver_departing(now, left(3), departing(3, "carl", 2.0));
        assert_eq!(game.poll_event(), Some(GameEvent::Connected { slot: 0 }));
        assert_eq!(game.poll_event(), Some(text(3)));
        assert_eq!(shown(&game, 3).as_deref(), Some("ann"));
        assert_eq!(
            game.departing(3).and_then(|d| d.state).map(|s| s.pos[0]),
            Some(1.0)
        );
        assert_eq!(game.poll_event(), Some(left(3)));
        assert_eq!(shown(&game, 3).as_deref(), Some("carl"));
        assert!(matches!(
            game.poll_event(),
            Some(GameEvent::PlayerConnected { .. })
        ));
        assert_eq!(game.poll_event(), Some(text(3)));
        assert_eq!(shown(&game, 3).as_deref(), Some("carl"));
        assert_eq!(game.poll_event(), Some(left(3)));
        assert_eq!(game.departing(3), None);
        assert_eq!(game.poll_event(), None);
    }

    /// The own game's DISCONNECTED ends it: out of a game nobody is shown, and a departure
    /// polled afterwards does not take a later game's departing player with it.
    #[test]
    fn the_own_disconnect_ends_what_departing_players_show() {
        let mut game = GameInterface::default();
        let now = Instant::now();
        game.deliver(now, GameEvent::Connected { slot: 0 });
        game.deliver(now, text(3));
        game.deliver_departing(now, left(3), departing(3, "ann", 1.0));
        game.deliver(
            now,
            GameEvent::Disconnected {
                reason: "bye".into(),
            },
        );
        assert_eq!(game.departing(3), None);
        game.deliver(now, GameEvent::Connected { slot: 0 });
        game.deliver_departing(now, left(3), departing(3, "bob", 2.0));
        assert_eq!(
            game.departing(3),
            None,
            "the earliest departure of slot 3 is over"
        );
        for _ in 0..3 {
            game.poll_event();
        }
        assert_eq!(shown(&game, 3).as_deref(), Some("bob"));
        assert!(matches!(
            game.poll_event(),
            Some(GameEvent::Disconnected { .. })
        ));
        assert_eq!(game.poll_event(), Some(GameEvent::Connected { slot: 0 }));
        assert_eq!(game.poll_event(), Some(left(3)));
        assert_eq!(game.departing(3), None);
    }
}
