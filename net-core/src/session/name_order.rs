//! Through a slot or game server, a player's names come from the server's lines (TCP: `add ip:`
//! with the name in use, then each accepted `name ip:`), its other events over UDP. A renaming
//! client holds the events it queues after the rename until the server answers, so its
//! RE_PLAYERNAME marks the rename's place in its reliable stream (see `Session::ask_rename`).
//! Here the receiving side keeps that place both ways, so the game sees a rename between what
//! the player said before it and what it said after:
//! - the player's RE_PLAYERNAME comes before the server's line with that name: the player's
//!   following events wait for the line;
//! - the line comes first (through a gameserver it nearly always does: the relay holds a text a
//!   moment to batch it, the line goes at once): the game is shown the new name only when the
//!   player's stream reaches its RE_PLAYERNAME, after what the player said before renaming.
//!
//! The name itself comes from the lines only (one ordered source: the server may refuse a name,
//! and an older name never comes back). Every name a line gave that the player's stream has
//! not reached yet is kept (`told`, the `add ip:` name first), with whether the game was shown
//! it. Bounded: a wait longer than [`NAME_HOLD`] ends either way (the events go on; a line's
//! name is shown), a departure shows what waited before the player leaves, and at most
//! [`MAX_TOLD`] names are kept per player.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::{PlayerName, RemoteEvent};

/// How long a player's events wait for the server's line with the name it renamed itself to,
/// and a line's name for the player's stream to reach it.
pub const NAME_HOLD: Duration = Duration::from_secs(5);
/// At most this many names told by lines are kept per player.
const MAX_TOLD: usize = 32;
/// At most this many events wait per player (then the wait ends).
const MAX_WAITING: usize = 1024;

/// A name a server's line gave.
#[derive(Debug, Clone, Copy)]
struct Told {
    name: PlayerName,
    /// The game was shown it (the seat's name, or a wait that ended).
    shown: bool,
}

#[derive(Debug)]
struct SlotNames {
    slot: u8,
    /// Names the server's lines gave that the player's stream has not reached yet, oldest
    /// first.
    told: VecDeque<Told>,
    /// The player's events from a RE_PLAYERNAME not told yet on (that event first).
    waiting: VecDeque<RemoteEvent>,
    /// When the events' wait began.
    since: Option<Instant>,
    /// Since when a line's name waits to be shown (some `told` entry is not shown).
    line_since: Option<Instant>,
}

/// Per player: the names told by the server's lines, and the events waiting for one.
#[derive(Debug, Default)]
pub struct NameOrder {
    slots: Vec<SlotNames>,
    /// Events that waited here at all.
    pub held: u64,
    /// Waits that ended without the server's line.
    pub timed_out: u64,
    /// Lines whose name waited for the player's stream.
    pub names_held: u64,
    /// Line names shown without the player's stream reaching them in time.
    pub names_timed_out: u64,
}

/// What to do with a player's event.
#[derive(Debug, PartialEq)]
pub enum Gate {
    /// Apply it now.
    Pass(RemoteEvent),
    /// The player's stream reached a name a line gave: show the game that name now.
    Rename(PlayerName),
    /// It waits (nothing to do now).
    Held,
}

/// What the session does for a player, in order, when waits end.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// Show the game the player's new name.
    Rename(PlayerName),
    /// Apply the player's event.
    Event(RemoteEvent),
}

impl NameOrder {
    fn entry(&mut self, slot: u8) -> &mut SlotNames {
        if let Some(i) = self.slots.iter().position(|s| s.slot == slot) {
            return &mut self.slots[i];
        }
        self.slots.push(SlotNames {
            slot,
            told: VecDeque::new(),
            waiting: VecDeque::new(),
            since: None,
            line_since: None,
        });
        self.slots.last_mut().expect("just pushed")
    }

    /// The player in `slot` was seated with `name` (the server's `add ip:` line).
    pub fn seated(&mut self, slot: u8, name: PlayerName) {
        self.slots.retain(|s| s.slot != slot);
        self.entry(slot).told.push_back(Told { name, shown: true });
    }

    /// A server's line gave the player in `slot` the name `name`; the game shows `shown`.
    /// Returns what may go on now, in order: the rename once the player's stream has reached
    /// it, and the events that waited for it.
    pub fn line(
        &mut self,
        slot: u8,
        name: PlayerName,
        shown: PlayerName,
        now: Instant,
    ) -> Vec<Step> {
        let entry = self.entry(slot);
        if entry.told.len() == MAX_TOLD {
            entry.told.pop_front();
        }
        // Shown already only if it is the name the game has and nothing before it waits (a
        // player that renamed and renamed back waits for both).
        let already = name == shown && entry.told.iter().all(|t| t.shown);
        entry.told.push_back(Told {
            name,
            shown: already,
        });
        let waiting_before = entry.line_since.is_some();
        if !already && !waiting_before {
            entry.line_since = Some(now);
        }
        let steps = Self::release(entry, Some(shown));
        // Counted only when the stream has not reached the name yet.
        let waits = !waiting_before && entry.line_since.is_some();
        self.names_held += u64::from(waits);
        steps
    }

    /// An event from the seated player in `slot`, whose name the game shows as `shown`: pass
    /// it, show a rename, or keep it waiting.
    pub fn gate(&mut self, slot: u8, event: RemoteEvent, shown: PlayerName, now: Instant) -> Gate {
        let entry = self.entry(slot);
        if !entry.waiting.is_empty() {
            if entry.waiting.len() >= MAX_WAITING {
                // Release everything rather than grow: handled by the caller's timer too.
                entry.since = Some(now.checked_sub(NAME_HOLD).unwrap_or(now));
            }
            entry.waiting.push_back(event);
            self.held += 1;
            return Gate::Held;
        }
        match event {
            RemoteEvent::PlayerName(name) => match Self::reached(entry, name, Some(shown)) {
                Some(true) => Gate::Rename(name),
                Some(false) => Gate::Pass(RemoteEvent::PlayerName(name)),
                None => {
                    entry.waiting.push_back(RemoteEvent::PlayerName(name));
                    entry.since = Some(now);
                    self.held += 1;
                    Gate::Held
                }
            },
            event => Gate::Pass(event),
        }
    }

    /// Whether the player's stream reaching the name `name` is told: a line gave it (the names
    /// up to it are forgotten; Some(true) when the game was not shown it yet), or it is the
    /// name shown with no line pending (Some(false)). None: it waits for a line. With `shown`
    /// None the wait ends: a name no line gave is passed over.
    fn reached(entry: &mut SlotNames, name: PlayerName, shown: Option<PlayerName>) -> Option<bool> {
        if let Some(i) = entry.told.iter().position(|t| t.name == name) {
            let show = !entry.told[i].shown;
            entry.told.drain(..=i);
            if entry.told.iter().all(|t| t.shown) {
                entry.line_since = None;
            }
            return Some(show);
        }
        match shown {
            Some(shown) => (entry.told.is_empty() && name == shown).then_some(false),
            None => Some(false),
        }
    }

    /// The waiting events of `entry` that may go on, with the renames among them: up to the
    /// next RE_PLAYERNAME not told yet, the game showing `shown` (all of them when `shown` is
    /// None: the wait ends).
    fn release(entry: &mut SlotNames, mut shown: Option<PlayerName>) -> Vec<Step> {
        let mut out = Vec::new();
        while let Some(event) = entry.waiting.pop_front() {
            match event {
                RemoteEvent::PlayerName(name) => match Self::reached(entry, name, shown) {
                    None => {
                        entry.waiting.push_front(RemoteEvent::PlayerName(name));
                        break;
                    }
                    Some(true) => {
                        out.push(Step::Rename(name));
                        shown = shown.map(|_| name);
                    }
                    Some(false) => {}
                },
                event => out.push(Step::Event(event)),
            }
        }
        if entry.waiting.is_empty() {
            entry.since = None;
        }
        out
    }

    /// Show the newest line name the game was not shown yet (the wait for the player's stream
    /// ends): that name, if any.
    fn show_told(entry: &mut SlotNames) -> Option<PlayerName> {
        let last = entry.told.iter().rev().find(|t| !t.shown).map(|t| t.name);
        for told in &mut entry.told {
            told.shown = true;
        }
        entry.line_since = None;
        last
    }

    /// End `entry`'s waits: the newest line name not shown yet, then every waiting event.
    fn end_waits(entry: &mut SlotNames) -> Vec<Step> {
        let mut out: Vec<Step> = Self::show_told(entry)
            .map(Step::Rename)
            .into_iter()
            .collect();
        out.extend(Self::release(entry, None));
        out
    }

    /// The player in `slot` left (or moved): what waited, in order, to be shown before the
    /// game hears it left; its names are forgotten.
    pub fn departed(&mut self, slot: u8) -> Vec<Step> {
        let Some(i) = self.slots.iter().position(|s| s.slot == slot) else {
            return Vec::new();
        };
        let mut entry = self.slots.remove(i);
        Self::end_waits(&mut entry)
    }

    /// Waits that began [`NAME_HOLD`] ago or more end: what they held, per slot, in order.
    pub fn expired(&mut self, now: Instant) -> Vec<(u8, Step)> {
        let due = |since: Option<Instant>| {
            since.is_some_and(|since| now.saturating_duration_since(since) >= NAME_HOLD)
        };
        let mut out = Vec::new();
        for entry in &mut self.slots {
            let slot = entry.slot;
            if due(entry.line_since) {
                self.names_timed_out += 1;
                out.extend(Self::show_told(entry).map(|name| (slot, Step::Rename(name))));
            }
            if due(entry.since) {
                self.timed_out += 1;
                out.extend(
                    Self::release(entry, None)
                        .into_iter()
                        .map(|step| (slot, step)),
                );
            }
        }
        out
    }

    /// Everything that waits (the session ends).
    pub fn take_all(&mut self) -> Vec<(u8, Step)> {
        let mut out = Vec::new();
        for entry in &mut self.slots {
            let slot = entry.slot;
            out.extend(Self::end_waits(entry).into_iter().map(|step| (slot, step)));
        }
        out
    }

    /// When the oldest wait ends.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.slots
            .iter()
            .flat_map(|s| [s.since, s.line_since])
            .flatten()
            .min()
            .map(|since| since + NAME_HOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> PlayerName {
        PlayerName::new(text.as_bytes()).unwrap()
    }

    use crate::session::early::tests::text;

    /// Ann seated in slot 1, bob in slot 2.
    fn ann_and_bob() -> (NameOrder, Instant) {
        let mut order = NameOrder::default();
        order.seated(1, name("ann"));
        order.seated(2, name("bob"));
        (order, Instant::now())
    }

    /// The known issue: through a slotserver a player's RE_PLAYERNAME and the text it said
    /// after renaming came over UDP before the server's `name ip:` line (TCP), and the game
    /// polled the text before the PLAYER_NAME. Now the text waits for the line.
    #[test]
    fn a_session_shows_a_text_said_after_a_rename_after_the_new_name() {
        use std::sync::Arc;

        use crate::session::{GameEvent, LocalPlayer, Session, SessionConfig};
        use crate::Node;

        let now = Instant::now();
        let me = LocalPlayer {
            slot: 0,
            token: 1,
            name: name("goose"),
        };
        let mut session =
            Session::new_mesh(SessionConfig::default(), Arc::new(|a, b| a == b), me, now);
        session.take_names_from_server();
        session.add_player(now, 1, Node::default(), 2, name("ann"), true);
        session.apply_remote_event(1, RemoteEvent::PlayerName(name("ann")));
        session.apply_remote_event(1, text(1));
        session.apply_remote_event(1, RemoteEvent::PlayerName(name("ace")));
        session.apply_remote_event(1, text(2));
        session.rename_player(now, 1, name("ace"));
        session.apply_remote_event(1, text(3));
        let mut seen = Vec::new();
        while let Some(event) = session.poll_event() {
            seen.push(event);
        }
        let remote = |event| GameEvent::Remote { slot: 1, event };
        assert_eq!(
            seen,
            vec![
                GameEvent::PlayerConnected {
                    slot: 1,
                    name: name("ann")
                },
                GameEvent::PlayerJoined { slot: 1 },
                remote(text(1)),
                GameEvent::PlayerName {
                    slot: 1,
                    name: name("ace")
                },
                remote(text(2)),
                remote(text(3)),
            ]
        );
    }

    #[test]
    fn events_after_a_rename_wait_for_the_line_with_that_name() {
        let now = Instant::now();
        let mut order = NameOrder::default();
        order.seated(3, name("ann"));
        // The greeting with the seated name passes, and so does an event.
        let greeting = RemoteEvent::PlayerName(name("ann"));
        assert_eq!(
            order.gate(3, greeting.clone(), name("ann"), now),
            Gate::Pass(greeting)
        );
        assert_eq!(
            order.gate(3, text(1), name("ann"), now),
            Gate::Pass(text(1))
        );
        // The rename comes over UDP before the line: it and what follows wait.
        assert_eq!(
            order.gate(3, RemoteEvent::PlayerName(name("ace")), name("ann"), now),
            Gate::Held
        );
        assert_eq!(order.gate(3, text(2), name("ann"), now), Gate::Held);
        // Another player's events do not wait.
        assert_eq!(
            order.gate(4, text(9), name("bob"), now),
            Gate::Pass(text(9))
        );
        assert_eq!(
            order.line(3, name("ace"), name("ann"), now),
            vec![Step::Rename(name("ace")), Step::Event(text(2))]
        );
        assert_eq!(
            order.gate(3, text(3), name("ace"), now),
            Gate::Pass(text(3))
        );
        assert_eq!(order.next_expiry(), None);
        assert_eq!((order.names_held, order.held), (0, 2));
    }

    /// Through a gameserver the line nearly always comes first (the relay batches a text for a
    /// moment): the game used to be shown the new name before what the player said under the
    /// old one.
    #[test]
    fn a_line_that_came_first_is_shown_where_the_stream_reaches_the_rename() {
        let (mut order, now) = ann_and_bob();
        assert!(order.line(1, name("ace"), name("ann"), now).is_empty());
        assert_eq!(order.next_expiry(), Some(now + NAME_HOLD));
        // Said before the rename: still under the old name.
        assert_eq!(
            order.gate(1, text(1), name("ann"), now),
            Gate::Pass(text(1))
        );
        assert_eq!(
            order.gate(1, RemoteEvent::PlayerName(name("ace")), name("ann"), now),
            Gate::Rename(name("ace"))
        );
        assert_eq!(
            order.gate(1, text(2), name("ace"), now),
            Gate::Pass(text(2))
        );
        assert_eq!(order.next_expiry(), None);
        assert_eq!(order.names_held, 1);
    }

    #[test]
    fn a_rename_and_a_rename_back_that_came_first_are_both_shown_in_their_places() {
        let (mut order, now) = ann_and_bob();
        assert!(order.line(1, name("ace"), name("ann"), now).is_empty());
        assert!(order.line(1, name("ann"), name("ann"), now).is_empty());
        for (n, shown) in [("ace", "ann"), ("ann", "ace")] {
            assert_eq!(
                order.gate(1, RemoteEvent::PlayerName(name(n)), name(shown), now),
                Gate::Rename(name(n))
            );
        }
        assert_eq!(
            order.gate(1, text(1), name("ann"), now),
            Gate::Pass(text(1))
        );
        assert_eq!(order.next_expiry(), None);
    }

    #[test]
    fn a_line_whose_rename_the_stream_does_not_reach_is_shown_after_the_hold_or_at_departure() {
        let (mut order, now) = ann_and_bob();
        assert!(order.line(1, name("ace"), name("ann"), now).is_empty());
        assert!(order.line(2, name("bee"), name("bob"), now).is_empty());
        assert_eq!(
            order.departed(2),
            vec![Step::Rename(name("bee"))],
            "shown before the player leaves"
        );
        assert!(order.expired(now + Duration::from_secs(1)).is_empty());
        assert_eq!(
            order.expired(now + NAME_HOLD),
            vec![(1, Step::Rename(name("ace")))]
        );
        assert_eq!(order.names_timed_out, 1);
        // The stream's rename coming late shows nothing again, and holds nothing.
        assert_eq!(
            order.gate(1, RemoteEvent::PlayerName(name("ace")), name("ace"), now),
            Gate::Pass(RemoteEvent::PlayerName(name("ace")))
        );
        assert_eq!(order.next_expiry(), None);
    }

    #[test]
    fn a_wait_ends_after_the_hold_and_when_the_player_leaves() {
        let (mut order, now) = ann_and_bob();
        for slot in [1, 2] {
            let rename = RemoteEvent::PlayerName(name("never"));
            assert_eq!(order.gate(slot, rename, name("x"), now), Gate::Held);
            assert_eq!(order.gate(slot, text(slot), name("x"), now), Gate::Held);
        }
        assert_eq!(order.next_expiry(), Some(now + NAME_HOLD));
        assert_eq!(order.departed(2), vec![Step::Event(text(2))]);
        assert!(order.expired(now + Duration::from_secs(1)).is_empty());
        assert_eq!(
            order.expired(now + NAME_HOLD),
            vec![(1, Step::Event(text(1)))]
        );
        assert_eq!(order.timed_out, 1);
        assert_eq!(
            order.gate(1, text(5), name("ann"), now),
            Gate::Pass(text(5))
        );
    }
}
