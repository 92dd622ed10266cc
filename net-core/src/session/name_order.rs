//! Through a slot or game server, a player's names come from the server's lines (TCP: `add ip:`
//! with the name in use, then each accepted `name ip:`), its other events over UDP. A renaming
//! client holds the events it queues after the rename until the server answers, so its
//! RE_PLAYERNAME marks the rename's place in its reliable stream (see `Session::ask_rename`).
//! Here the receiving side keeps that place: when a player's RE_PLAYERNAME comes before the
//! server's line with that name, the player's following events wait for the line, so the game
//! sees the PLAYER_NAME before whatever the player queued after renaming. The name itself still
//! comes from the line only (one ordered source: an older name never comes back), and a line
//! that comes first is told at once (the name may then come before events queued before it).
//!
//! Every name a line gave and the player's stream has not reached yet is kept (`told`, the
//! `add ip:` name first), so a RE_PLAYERNAME whose line came first (or a newcomer's greeting
//! with the name `add ip:` gave) passes without waiting. Bounded: a wait longer than
//! [`NAME_HOLD`] ends (the events go on, the name comes whenever its line does), and at most
//! [`MAX_TOLD`] names are kept per player.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::{PlayerName, RemoteEvent};

/// How long a player's events wait for the server's line with the name it renamed itself to.
pub const NAME_HOLD: Duration = Duration::from_secs(5);
/// At most this many names told by lines are kept per player.
const MAX_TOLD: usize = 32;
/// At most this many events wait per player (then the wait ends).
const MAX_WAITING: usize = 1024;

#[derive(Debug)]
struct SlotNames {
    slot: u8,
    /// Names the server's lines gave that the player's stream has not reached yet, oldest
    /// first.
    told: VecDeque<PlayerName>,
    /// The player's events from a RE_PLAYERNAME not told yet on (that event first).
    waiting: VecDeque<RemoteEvent>,
    /// When the wait began.
    since: Option<Instant>,
}

/// Per player: the names told by the server's lines, and the events waiting for one.
#[derive(Debug, Default)]
pub struct NameOrder {
    slots: Vec<SlotNames>,
    /// Events that waited here at all.
    pub held: u64,
    /// Waits that ended without the server's line.
    pub timed_out: u64,
}

/// What to do with a player's event.
#[derive(Debug, PartialEq)]
pub enum Gate {
    /// Apply it now.
    Pass(RemoteEvent),
    /// It waits (nothing to do now).
    Held,
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
        });
        self.slots.last_mut().expect("just pushed")
    }

    /// The player in `slot` was seated with `name` (the server's `add ip:` line).
    pub fn seated(&mut self, slot: u8, name: PlayerName) {
        self.slots.retain(|s| s.slot != slot);
        self.entry(slot).told.push_back(name);
    }

    /// A server's line gave the player in `slot` the name `name` (now its `current` name).
    /// Returns the waiting events that may go on now, in order, to be applied as they are.
    pub fn line(&mut self, slot: u8, name: PlayerName, current: PlayerName) -> Vec<RemoteEvent> {
        let entry = self.entry(slot);
        if entry.told.len() == MAX_TOLD {
            entry.told.pop_front();
        }
        entry.told.push_back(name);
        Self::release(entry, Some(current))
    }

    /// An event from the seated player in `slot`, whose name is `current` now: pass it or keep
    /// it waiting.
    pub fn gate(
        &mut self,
        slot: u8,
        event: RemoteEvent,
        current: PlayerName,
        now: Instant,
    ) -> Gate {
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
            RemoteEvent::PlayerName(name) if !Self::reached(entry, name, current) => {
                entry.waiting.push_back(RemoteEvent::PlayerName(name));
                entry.since = Some(now);
                self.held += 1;
                Gate::Held
            }
            event => Gate::Pass(event),
        }
    }

    /// Whether the player's stream reaching the name `name` is already told: a line gave it
    /// (forget the names up to it), or it is the name in use with no line pending.
    fn reached(entry: &mut SlotNames, name: PlayerName, current: PlayerName) -> bool {
        if let Some(i) = entry.told.iter().position(|n| *n == name) {
            entry.told.drain(..=i);
            return true;
        }
        entry.told.is_empty() && name == current
    }

    /// The waiting events of `entry` that may go on: up to the next RE_PLAYERNAME not told yet,
    /// the player's name being `current` (all of them when `current` is None: the wait ends).
    fn release(entry: &mut SlotNames, current: Option<PlayerName>) -> Vec<RemoteEvent> {
        let mut out = Vec::new();
        while let Some(event) = entry.waiting.pop_front() {
            match event {
                RemoteEvent::PlayerName(name) => {
                    let told = match current {
                        Some(current) => Self::reached(entry, name, current),
                        None => true,
                    };
                    if !told {
                        entry.waiting.push_front(RemoteEvent::PlayerName(name));
                        break;
                    }
                    // The name itself comes from the lines: nothing for the game here.
                }
                event => out.push(event),
            }
        }
        if entry.waiting.is_empty() {
            entry.since = None;
        }
        out
    }

    /// The player in `slot` left (or moved): its waiting events, in order, to be applied before
    /// the game hears it left; its names are forgotten.
    pub fn departed(&mut self, slot: u8) -> Vec<RemoteEvent> {
        let Some(i) = self.slots.iter().position(|s| s.slot == slot) else {
            return Vec::new();
        };
        let mut entry = self.slots.remove(i);
        Self::release(&mut entry, None)
    }

    /// Waits that began [`NAME_HOLD`] ago or more end: their events, per slot, in order.
    pub fn expired(&mut self, now: Instant) -> Vec<(u8, RemoteEvent)> {
        let mut out = Vec::new();
        for entry in &mut self.slots {
            if entry
                .since
                .is_some_and(|since| now.saturating_duration_since(since) >= NAME_HOLD)
            {
                self.timed_out += 1;
                out.extend(
                    Self::release(entry, None)
                        .into_iter()
                        .map(|e| (entry.slot, e)),
                );
            }
        }
        out
    }

    /// Every waiting event (the session ends).
    pub fn take_all(&mut self) -> Vec<(u8, RemoteEvent)> {
        let mut out = Vec::new();
        for entry in &mut self.slots {
            out.extend(
                Self::release(entry, None)
                    .into_iter()
                    .map(|e| (entry.slot, e)),
            );
        }
        out
    }

    /// When the oldest wait ends.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| s.since)
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
        session.rename_player(1, name("ace"));
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
        assert_eq!(order.line(3, name("ace"), name("ace")), vec![text(2)]);
        assert_eq!(
            order.gate(3, text(3), name("ace"), now),
            Gate::Pass(text(3))
        );
        assert_eq!(order.next_expiry(), None);
    }

    #[test]
    fn a_line_that_came_first_lets_the_rename_pass_also_after_a_second_rename() {
        let now = Instant::now();
        let mut order = NameOrder::default();
        order.seated(1, name("ann"));
        assert!(order.line(1, name("ace"), name("ace")).is_empty());
        assert!(order.line(1, name("ann"), name("ann")).is_empty());
        for (n, current) in [("ace", "ann"), ("ann", "ann")] {
            let event = RemoteEvent::PlayerName(name(n));
            assert_eq!(
                order.gate(1, event.clone(), name(current), now),
                Gate::Pass(event)
            );
        }
        assert_eq!(
            order.gate(1, text(1), name("ann"), now),
            Gate::Pass(text(1))
        );
    }

    #[test]
    fn a_wait_ends_after_the_hold_and_when_the_player_leaves() {
        let now = Instant::now();
        let mut order = NameOrder::default();
        order.seated(1, name("ann"));
        order.seated(2, name("bob"));
        for slot in [1, 2] {
            let rename = RemoteEvent::PlayerName(name("never"));
            assert_eq!(order.gate(slot, rename, name("x"), now), Gate::Held);
            assert_eq!(order.gate(slot, text(slot), name("x"), now), Gate::Held);
        }
        assert_eq!(order.next_expiry(), Some(now + NAME_HOLD));
        assert_eq!(order.departed(2), vec![text(2)]);
        assert!(order.expired(now + Duration::from_secs(1)).is_empty());
        assert_eq!(order.expired(now + NAME_HOLD), vec![(1, text(1))]);
        assert_eq!(order.timed_out, 1);
        assert_eq!(
            order.gate(1, text(5), name("ann"), now),
            Gate::Pass(text(5))
        );
    }
}
