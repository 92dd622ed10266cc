//! The player table: who sits in which slot (0-15), with name, node, token, join status, latest
//! ship state and when we last heard from them; plus which player owns which object (from the
//! creation events seen), for `NET_FetchOwner`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use crate::rmev::{PlayerName, ShipState, MAX_SLOTS};
use crate::Node;

/// One seat taken by a remote player.
#[derive(Clone, Debug)]
pub struct Player {
    pub slot: u8,
    pub name: PlayerName,
    pub node: Node,
    pub token: u32,
    pub joined: bool,
    pub state: ShipState,
    /// When the current `state` arrived (None until the first one).
    pub state_time: Option<Instant>,
    pub last_heard: Instant,
    /// Whether a packet of the player's own has been accepted (its slot is first-hand, not
    /// hearsay from a player list).
    pub confirmed: bool,
}

/// Remote players by slot.
#[derive(Clone, Debug, Default)]
pub struct PlayerTable {
    slots: Vec<Option<Player>>,
}

impl PlayerTable {
    pub fn new() -> Self {
        PlayerTable {
            slots: vec![None; MAX_SLOTS],
        }
    }

    pub fn get(&self, slot: u8) -> Option<&Player> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, slot: u8) -> Option<&mut Player> {
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    /// Put a player in its slot; returns the player that was there before, if any.
    pub fn insert(&mut self, player: Player) -> Option<Player> {
        let slot = player.slot as usize;
        if slot >= self.slots.len() {
            return None;
        }
        self.slots[slot].replace(player)
    }

    pub fn remove(&mut self, slot: u8) -> Option<Player> {
        self.slots.get_mut(slot as usize).and_then(Option::take)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Player> {
        self.slots.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Player> {
        self.slots.iter_mut().flatten()
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of the player at `node`, compared with `same` (the backend's comparison).
    pub fn slot_of(&self, node: &Node, same: impl Fn(&Node, &Node) -> bool) -> Option<u8> {
        self.iter().find(|p| same(&p.node, node)).map(|p| p.slot)
    }

    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = None);
    }
}

/// Most objects whose owner is remembered; the oldest are forgotten first.
const MAX_OWNED_OBJECTS: usize = 65_536;

/// Which slot created which object.
#[derive(Clone, Debug, Default)]
pub struct ObjectOwners {
    owner: HashMap<u32, u8>,
    order: VecDeque<u32>,
}

impl ObjectOwners {
    pub fn created(&mut self, object_id: u32, slot: u8) {
        if self.owner.insert(object_id, slot).is_none() {
            self.order.push_back(object_id);
            if self.order.len() > MAX_OWNED_OBJECTS {
                if let Some(old) = self.order.pop_front() {
                    self.owner.remove(&old);
                }
            }
        }
    }

    pub fn killed(&mut self, object_id: u32) {
        // The order queue keeps the id until it ages out; a re-created id is re-added there.
        self.owner.remove(&object_id);
    }

    pub fn owner(&self, object_id: u32) -> Option<u8> {
        self.owner.get(&object_id).copied()
    }

    /// Every object with its owner, the oldest creation first (a demo recording begun in a game
    /// starts with them).
    pub fn entries(&self) -> Vec<(u32, u8)> {
        // `order` may still hold killed ids, and holds an id created again after a kill twice:
        // its place is that of the last creation.
        let mut taken = HashSet::with_capacity(self.owner.len());
        let mut entries: Vec<(u32, u8)> = self
            .order
            .iter()
            .rev()
            .filter(|id| taken.insert(**id))
            .filter_map(|id| self.owner.get(id).map(|slot| (*id, *slot)))
            .collect();
        entries.reverse();
        entries
    }

    /// Forget every object of a slot (the player left).
    pub fn forget_slot(&mut self, slot: u8) {
        self.owner.retain(|_, s| *s != slot);
    }

    pub fn clear(&mut self) {
        self.owner.clear();
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_follow_creations_and_kills_and_stay_bounded() {
        let mut owners = ObjectOwners::default();
        owners.created(7, 2);
        assert_eq!(owners.owner(7), Some(2));
        owners.killed(7);
        assert_eq!(owners.owner(7), None);
        for id in 1..=(MAX_OWNED_OBJECTS as u32 + 10) {
            owners.created(id, 1);
        }
        assert!(owners.owner.len() <= MAX_OWNED_OBJECTS);
        assert_eq!(owners.owner(1), None, "oldest forgotten");
        assert_eq!(owners.owner(MAX_OWNED_OBJECTS as u32 + 10), Some(1));
    }

    #[test]
    fn entries_are_the_live_objects_oldest_first() {
        let mut owners = ObjectOwners::default();
        owners.created(7, 2);
        owners.created(8, 3);
        owners.created(9, 2);
        owners.killed(8);
        owners.killed(7);
        owners.created(7, 4);
        owners.created(10, 5);
        owners.forget_slot(5);
        assert_eq!(owners.entries(), vec![(9, 2), (7, 4)]);
        owners.clear();
        assert!(owners.entries().is_empty());
    }

    #[test]
    fn table_is_indexed_by_slot() {
        let mut table = PlayerTable::new();
        let now = Instant::now();
        let p = Player {
            slot: 3,
            name: PlayerName::new(b"sid").unwrap(),
            node: Node::default(),
            token: 9,
            joined: false,
            state: ShipState::default(),
            state_time: None,
            last_heard: now,
            confirmed: false,
        };
        assert!(table.insert(p.clone()).is_none());
        assert_eq!(table.get(3).unwrap().token, 9);
        assert_eq!(table.len(), 1);
        assert!(table.insert(Player { slot: 16, ..p }).is_none());
        assert_eq!(table.len(), 1, "slot 16 is out of range");
        assert!(table.remove(3).is_some());
        assert!(table.is_empty());
    }
}
