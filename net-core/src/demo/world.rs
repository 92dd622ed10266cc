//! What a demo shows the game's lookups while it plays (`NET_FetchPlayerName`,
//! `NET_GetPlayerState`, `NET_FetchOwner`): the players and objects the recording game knew at
//! the same point of the stream, rebuilt from the played items as the live session built them.
//!
//! The answers must be the live game's: its own slot with its name and ship state, every player
//! seated by PlayerConnected with a default state until its first state, nobody and "not
//! connected" outside a game. A file from before the own-player records (kinds 14, 15) still
//! plays: what it cannot say is filled in as described at [`PlaybackWorld::name`]. A recording
//! begun in a game starts with the players and objects known then (see [`DemoItem`]), which
//! build this world as the events and records that made them did.

use super::{DemoItem, OwnPlayer};
use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::{PlayerName, RemoteEvent, ShipState, MAX_SLOTS};
use crate::session::{GameEvent, ObjectOwners};

/// The recording game's world as the played items have built it so far.
#[derive(Default)]
pub struct PlaybackWorld {
    /// Whether the recording game was in a game; `None` until the file says (a file from before
    /// kind 14 that began in a game, or before its first Connected).
    in_game: Option<bool>,
    /// The recording game's own slot while in a game.
    own_slot: Option<u8>,
    /// Names of the seated players (the own one's from kind 14).
    names: [Option<PlayerName>; MAX_SLOTS],
    /// States of the seated players, the own one included: `Some` marks a seated slot.
    states: [Option<ShipState>; MAX_SLOTS],
    owners: ObjectOwners,
}

impl PlaybackWorld {
    /// Take in one played item, as the live session took in what it stands for.
    pub fn apply(&mut self, item: &DemoItem) {
        match item {
            DemoItem::State { slot, state } => {
                if let Some(s) = self.states.get_mut(usize::from(*slot)) {
                    *s = Some(*state);
                }
            }
            DemoItem::OwnPlayer(Some(OwnPlayer { slot, name })) => {
                if self.own_slot != Some(*slot) {
                    self.enter_game(*slot);
                }
                if let Some(n) = self.names.get_mut(usize::from(*slot)) {
                    *n = Some(*name);
                }
            }
            DemoItem::OwnPlayer(None) => self.leave_game(),
            DemoItem::OwnObject { object_id, created } => match (created, self.own_slot) {
                (true, Some(slot)) => self.owners.created(*object_id, slot),
                (true, None) => {}
                (false, _) => self.owners.killed(*object_id),
            },
            // Live, objects have owners only in a game.
            DemoItem::ObjectOwner { object_id, slot } if self.own_slot.is_some() => {
                self.owners.created(*object_id, *slot);
            }
            DemoItem::ObjectOwner { .. } => {}
            DemoItem::Event(event) => self.apply_event(event),
        }
    }

    fn apply_event(&mut self, event: &GameEvent) {
        match event {
            GameEvent::Connected { slot } => self.enter_game(*slot),
            GameEvent::Disconnected { .. } => self.leave_game(),
            GameEvent::PlayerConnected { slot, name } => {
                // Seated with the state every new player has until its first one arrives.
                self.seat(*slot, Some(*name));
            }
            // Live, a name changes only for a seated player.
            GameEvent::PlayerName { slot, name } if self.is_seated(*slot) => {
                self.seat_name(*slot, *name);
            }
            GameEvent::PlayerDisconnected { slot, .. } => {
                self.unseat(*slot);
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
        }
    }

    /// A new session: only the own player is seated, with a default state until the file gives
    /// one (its name comes with kind 14).
    fn enter_game(&mut self, slot: u8) {
        self.clear();
        self.in_game = Some(true);
        self.own_slot = Some(slot);
        self.seat(slot, None);
    }

    /// The session ended: nobody is left, no object has an owner.
    fn leave_game(&mut self) {
        self.clear();
        self.in_game = Some(false);
    }

    fn clear(&mut self) {
        self.own_slot = None;
        self.names = Default::default();
        self.states = Default::default();
        self.owners.clear();
    }

    fn seat(&mut self, slot: u8, name: Option<PlayerName>) {
        let i = usize::from(slot);
        if let (Some(n), Some(s)) = (self.names.get_mut(i), self.states.get_mut(i)) {
            *n = name;
            *s = Some(ShipState::default());
        }
    }

    fn seat_name(&mut self, slot: u8, name: PlayerName) {
        if let Some(n) = self.names.get_mut(usize::from(slot)) {
            *n = Some(name);
        }
    }

    fn unseat(&mut self, slot: u8) {
        let i = usize::from(slot);
        if let (Some(n), Some(s)) = (self.names.get_mut(i), self.states.get_mut(i)) {
            *n = None;
            *s = None;
        }
    }

    fn is_seated(&self, slot: u8) -> bool {
        // A file that began in the middle of a game (before kind 14) seats players only by
        // their states, if at all: their names are taken as they come.
        self.in_game.is_none()
            || self
                .states
                .get(usize::from(slot))
                .is_some_and(Option::is_some)
    }

    /// The name of the player in `slot`. The own slot of a file from before kind 14 has no
    /// recorded name: `own_name` (the playing game's own) stands in, as live the own slot
    /// always shows the game's own name.
    pub fn name(&self, slot: u8, own_name: &PlayerName) -> Option<PlayerName> {
        let recorded = self.names.get(usize::from(slot)).copied().flatten();
        match recorded {
            None if self.own_slot == Some(slot) => Some(*own_name),
            other => other,
        }
    }

    /// The ship state of the player in `slot` (0-15): errors as live, `NotConnected` outside a
    /// game, `InvalidArgument` for a slot nobody sits in.
    pub fn state(&self, slot: u8) -> NetResult<ShipState> {
        if self.in_game == Some(false) {
            return Err(NetError::new(
                ErrorCode::NotConnected,
                "not connected to a game",
            ));
        }
        self.states
            .get(usize::from(slot))
            .copied()
            .flatten()
            .ok_or_else(|| {
                NetError::new(
                    ErrorCode::InvalidArgument,
                    format!("no player in slot {slot}"),
                )
            })
    }

    /// The slot of the player that created `object_id`, while it lives.
    pub fn owner(&self, object_id: u32) -> Option<u8> {
        self.owners.owner(object_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> PlayerName {
        PlayerName::new(s.as_bytes()).expect("test name")
    }

    #[test]
    fn object_owners_of_a_snapshot_hold_in_a_game_only() {
        let mut world = PlaybackWorld::default();
        let owner = DemoItem::ObjectOwner {
            object_id: 5,
            slot: 3,
        };
        world.apply(&DemoItem::OwnPlayer(None));
        world.apply(&owner);
        assert_eq!(
            world.owner(5),
            None,
            "outside a game no object has an owner"
        );

        world.apply(&DemoItem::Event(GameEvent::Connected { slot: 1 }));
        world.apply(&DemoItem::OwnPlayer(Some(OwnPlayer {
            slot: 1,
            name: name("own"),
        })));
        world.apply(&DemoItem::Event(GameEvent::PlayerConnected {
            slot: 3,
            name: name("bob"),
        }));
        world.apply(&owner);
        world.apply(&DemoItem::ObjectOwner {
            object_id: 6,
            slot: 3,
        });
        assert_eq!(world.owner(5), Some(3));
        world.apply(&DemoItem::Event(GameEvent::Remote {
            slot: 1,
            event: RemoteEvent::KillObject {
                object_id: 6,
                list_id: 1,
            },
        }));
        assert_eq!(world.owner(6), None, "killed");
        world.apply(&DemoItem::Event(GameEvent::PlayerDisconnected {
            slot: 3,
            reason: "left".into(),
        }));
        assert_eq!(world.owner(5), None, "forgotten with its player");
    }
}
