//! The player table: who sits in which slot (0-15), with name, node, token, join status, latest
//! ship state and when we last heard from them; plus which player owns which object (from the
//! creation events seen), for `NET_FetchOwner`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::rmev::{PlayerListEntry, PlayerName, ShipState, MAX_SLOTS};
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

impl Player {
    /// The player as an entry of a RE_PLAYERLIST.
    pub fn list_entry(&self) -> PlayerListEntry {
        PlayerListEntry {
            slot: self.slot,
            joined: self.joined,
            token: self.token,
            node: self.node,
            name: self.name,
        }
    }
}

/// Remote players by slot.
#[derive(Clone, Debug, Default)]
pub struct PlayerTable {
    slots: Vec<Option<Player>>,
    /// Changes whenever the table may have changed (any mutable access), to a value no other
    /// table state of this process had: two equal generations mean equal contents.
    generation: u64,
    /// The generation at which `changed` began to collect (see [`PlayerTable::changes`]).
    changes_since: u64,
    /// Bit `s` set: slot `s` may have changed since `changes_since`.
    changed: u16,
}

// A change mask has a bit per slot.
const _: () = assert!(MAX_SLOTS <= u16::BITS as usize);

/// Where every table's next generation comes from (0 is left to empty default tables).
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

impl PlayerTable {
    pub fn new() -> Self {
        PlayerTable {
            slots: vec![None; MAX_SLOTS],
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
            changes_since: 0,
            changed: 0,
        }
    }

    /// A value that differs from every earlier one of this table (and of any other table)
    /// whenever a player may have been seated, changed or removed since: a reader that kept a
    /// copy of what the table showed can skip copying it again while this stays the same.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Which slots may have changed since the generation `since`: `(since, bits)`, bit `s` for
    /// slot `s`. A reader whose copy is of generation `since` need only copy those slots again;
    /// one with a copy of any other generation copies them all. [`PlayerTable::restart_changes`]
    /// starts a new collection at the current generation.
    pub fn changes(&self) -> (u64, u16) {
        (self.changes_since, self.changed)
    }

    /// Start collecting changes afresh from the current generation (the reader copied what it
    /// needed). The contents do not change, so neither does the generation.
    pub fn restart_changes(&mut self) {
        self.changes_since = self.generation;
        self.changed = 0;
    }

    /// A mutable access to the slots in `bits` (`u16::MAX`: any slot).
    fn touched(&mut self, bits: u16) {
        self.generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        self.changed |= bits;
    }

    /// The bit of `slot` in a change mask (none for a slot past the table).
    fn slot_bit(slot: u8) -> u16 {
        1u16.checked_shl(u32::from(slot)).unwrap_or(0)
    }

    pub fn get(&self, slot: u8) -> Option<&Player> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, slot: u8) -> Option<&mut Player> {
        self.touched(Self::slot_bit(slot));
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    /// Put a player in its slot; returns the player that was there before, if any.
    pub fn insert(&mut self, player: Player) -> Option<Player> {
        self.touched(Self::slot_bit(player.slot));
        let slot = player.slot as usize;
        if slot >= self.slots.len() {
            return None;
        }
        self.slots[slot].replace(player)
    }

    pub fn remove(&mut self, slot: u8) -> Option<Player> {
        self.touched(Self::slot_bit(slot));
        self.slots.get_mut(slot as usize).and_then(Option::take)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Player> {
        self.slots.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Player> {
        self.touched(u16::MAX);
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
        self.touched(u16::MAX);
        self.slots.iter_mut().for_each(|s| *s = None);
    }
}

/// Most live objects whose owner is remembered; past that, the oldest are forgotten first.
const MAX_OWNED_OBJECTS: usize = 65_536;

/// Which slot created which object.
///
/// Objects are forgotten when killed, when their player leaves, or (the oldest first) when more
/// than [`MAX_OWNED_OBJECTS`] are alive. A space game creates and kills lasers all the time, so
/// the limit counts live objects only: a station created first keeps its owner however many
/// shots came after it.
#[derive(Clone, Debug, Default)]
pub struct ObjectOwners {
    /// Live object -> (owner slot, creation number).
    owner: HashMap<u32, (u8, u64)>,
    /// Creations in order, (object id, creation number); an entry whose number no longer
    /// matches `owner` is dead (killed, forgotten, or the id created again since).
    order: VecDeque<(u32, u64)>,
    next_creation: u64,
}

impl ObjectOwners {
    pub fn created(&mut self, object_id: u32, slot: u8) {
        if let Some((owner, _)) = self.owner.get_mut(&object_id) {
            *owner = slot; // created again without a kill: same place in the order
            return;
        }
        let creation = self.next_creation;
        self.next_creation += 1;
        self.owner.insert(object_id, (slot, creation));
        self.order.push_back((object_id, creation));
        while self.owner.len() > MAX_OWNED_OBJECTS {
            let Some((old, number)) = self.order.pop_front() else {
                break;
            };
            if self.is_live(old, number) {
                self.owner.remove(&old);
            }
        }
        // Dead entries are dropped once they outnumber the live ones (amortised: each entry
        // is looked at once per doubling).
        if self.order.len() > 2 * self.owner.len() + 64 {
            let owner = &self.owner;
            self.order
                .retain(|(id, number)| owner.get(id).is_some_and(|(_, n)| n == number));
        }
    }

    fn is_live(&self, object_id: u32, creation: u64) -> bool {
        self.owner
            .get(&object_id)
            .is_some_and(|(_, number)| *number == creation)
    }

    pub fn killed(&mut self, object_id: u32) {
        // Its entry in `order` is dead from now on and is dropped later.
        self.owner.remove(&object_id);
    }

    pub fn owner(&self, object_id: u32) -> Option<u8> {
        self.owner.get(&object_id).map(|(slot, _)| *slot)
    }

    /// Every object with its owner, the oldest creation first (a demo recording begun in a game
    /// starts with them).
    pub fn entries(&self) -> Vec<(u32, u8)> {
        self.order
            .iter()
            .filter(|(id, number)| self.is_live(*id, *number))
            .filter_map(|(id, _)| self.owner(*id).map(|slot| (*id, slot)))
            .collect()
    }

    /// Forget every object of a slot (the player left).
    pub fn forget_slot(&mut self, slot: u8) {
        self.owner.retain(|_, (s, _)| *s != slot);
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
    fn a_long_lived_object_keeps_its_owner_however_many_objects_come_and_go() {
        let mut owners = ObjectOwners::default();
        owners.created(1, 3); // a station
        owners.created(2, 1);
        owners.killed(2);
        for shot in 0..(3 * MAX_OWNED_OBJECTS as u32) {
            let id = 1000 + shot % 5000;
            owners.created(id, 2);
            owners.killed(id);
        }
        // Object 2 again: its first creation's entry ages out later and must not take it.
        owners.created(2, 0);
        for shot in 0..(3 * MAX_OWNED_OBJECTS as u32) {
            owners.created(10_000 + shot, 2);
            owners.killed(10_000 + shot);
        }
        assert_eq!(owners.owner(1), Some(3), "the station keeps its owner");
        assert_eq!(
            owners.owner(2),
            Some(0),
            "the re-created object keeps its owner"
        );
        assert_eq!(owners.entries(), vec![(1, 3), (2, 0)]);
        assert!(
            owners.order.len() <= 2 * owners.owner.len() + 64,
            "dead entries are dropped"
        );
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

    #[test]
    fn the_generation_changes_with_every_mutable_access_and_only_then() {
        let mut table = PlayerTable::new();
        let other = PlayerTable::new();
        assert_ne!(
            table.generation(),
            other.generation(),
            "tables never share one"
        );
        let p = Player {
            slot: 2,
            name: PlayerName::new(b"ann").unwrap(),
            node: Node::default(),
            token: 5,
            joined: false,
            state: ShipState::default(),
            state_time: None,
            last_heard: Instant::now(),
            confirmed: false,
        };
        let mut seen = vec![table.generation()];
        let mut changed = |table: &PlayerTable, what: &str| {
            assert!(
                !seen.contains(&table.generation()),
                "{what} kept an earlier generation"
            );
            seen.push(table.generation());
        };
        table.insert(p);
        changed(&table, "insert");
        let before = table.generation();
        let _ = (
            table.get(2),
            table.iter().count(),
            table.len(),
            table.is_empty(),
        );
        assert_eq!(table.generation(), before, "reading changes nothing");
        table.get_mut(2).unwrap().state.pos[0] = 1.0;
        changed(&table, "get_mut");
        table.iter_mut().for_each(|p| p.joined = true);
        changed(&table, "iter_mut");
        table.remove(2);
        changed(&table, "remove");
        table.clear();
        changed(&table, "clear");
    }

    #[test]
    fn changes_name_the_slots_touched_since_the_last_restart() {
        let mut table = PlayerTable::new();
        let player = |slot: u8| Player {
            slot,
            name: PlayerName::new(b"bo").unwrap(),
            node: Node::default(),
            token: u32::from(slot),
            joined: false,
            state: ShipState::default(),
            state_time: None,
            last_heard: Instant::now(),
            confirmed: false,
        };
        let (since, _) = table.changes();
        assert_ne!(
            since,
            table.generation(),
            "a new table's changes start nowhere"
        );
        table.insert(player(1));
        table.insert(player(15));
        table.restart_changes();
        assert_eq!(table.changes(), (table.generation(), 0));
        let copied_at = table.generation();
        table.get_mut(15).unwrap().state.pos[0] = 2.0;
        let _ = (table.get(1), table.iter().count());
        table.insert(player(4));
        assert_eq!(table.changes(), (copied_at, 1 << 15 | 1 << 4));
        table.remove(1);
        assert_eq!(table.changes().1, 1 << 15 | 1 << 4 | 1 << 1);
        let _ = table.get_mut(16);
        assert_eq!(table.changes().1, 1 << 15 | 1 << 4 | 1 << 1, "no slot 16");
        table.restart_changes();
        table.iter_mut().for_each(|p| p.joined = true);
        assert_eq!(table.changes().1, u16::MAX, "any slot");
        table.restart_changes();
        table.clear();
        assert_eq!(table.changes().1, u16::MAX, "every slot");
        let clone = table.clone();
        assert_eq!(
            clone.changes(),
            table.changes(),
            "a copy carries its changes"
        );
    }
}
