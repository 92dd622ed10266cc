//! Events that arrive before their sender is known (star sessions). Through a gameserver a
//! client learns of another player from the server's TCP line (`add ip:`) while that player's
//! events come relayed over UDP; the two channels race, so events can come first. They wait here
//! until the player is seated, so the game always sees a player's NET_EVENT_PLAYER_CONNECTED
//! (with its name) before anything it says. Bounded in count and time: an event whose sender is
//! still unknown after [`EARLY_HOLD`] (or that is pushed out by a full buffer) is delivered
//! anyway, since nothing accepted may be lost. Events of a slot whose player left a moment ago
//! (late retransmissions) are not held: they belong to the departed player, not a newcomer;
//! unless the relay said the departure in band (RE_VACATED): everything of the player came
//! before that word, so what comes after it is the next occupant's and waits for its seat.
//! The word can even come before the player's `add ip:` line (a client that was stopped reads
//! its datagrams before its TCP lines): what waits for the slot then is marked as that player's
//! and goes to it alone, once it is seated, and what comes after waits for the next occupant.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::RemoteEvent;

/// How long an event from an unknown sender waits for its player to be seated.
pub const EARLY_HOLD: Duration = Duration::from_secs(5);
/// At most this many events wait at once.
pub const EARLY_MAX_EVENTS: usize = 1024;
/// A slot counts as "just left" for this long after its player was removed.
const DEPARTED_GRACE: Duration = Duration::from_secs(10);

/// One waiting event: its slot, the event, since when it waits, and the id of the player the
/// relay said left that slot after it (None: not known yet).
type Waiting = (u8, RemoteEvent, Instant, Option<u32>);

/// The waiting events and the recently vacated slots.
#[derive(Default)]
pub struct EarlyEvents {
    waiting: VecDeque<Waiting>,
    /// Slots whose player left, and when (None: stamped by the next `advance`).
    departed: Vec<(u8, Option<Instant>)>,
    /// Events that waited here at all.
    pub held: u64,
    /// Events delivered although their sender was still unknown (time or space ran out).
    pub released_unknown: u64,
}

impl EarlyEvents {
    /// Whether an event from `slot` (not seated now) should wait for its player.
    pub fn should_hold(&self, slot: u8, now: Instant) -> bool {
        !self.departed.iter().any(|&(s, at)| {
            s == slot && at.is_none_or(|at| now.saturating_duration_since(at) < DEPARTED_GRACE)
        })
    }

    /// Keep `event` from `slot`; returns the oldest waiting event when the buffer was full (to
    /// be delivered now).
    pub fn push(
        &mut self,
        slot: u8,
        event: RemoteEvent,
        now: Instant,
    ) -> Option<(u8, RemoteEvent)> {
        self.held += 1;
        let overflow = if self.waiting.len() >= EARLY_MAX_EVENTS {
            self.released_unknown += 1;
            self.waiting.pop_front().map(|(s, e, _, _)| (s, e))
        } else {
            None
        };
        self.waiting.push_back((slot, event, now, None));
        overflow
    }

    /// The player `token` (its id in the server's lines; 0: not known) was seated in `slot`: its
    /// waiting events, in arrival order. When the relay said that this very player left (before
    /// its line came), only what came before that word is its; else whatever waits unmarked.
    pub fn seated(&mut self, slot: u8, token: u32) -> Vec<RemoteEvent> {
        self.departed.retain(|&(s, _)| s != slot);
        let left_already = token != 0
            && self
                .waiting
                .iter()
                .any(|(s, _, _, owner)| *s == slot && *owner == Some(token));
        let mut taken = Vec::new();
        self.waiting.retain(|(s, e, _, owner)| {
            let mine = match owner {
                Some(owner) => left_already && *owner == token,
                None => !left_already,
            };
            if *s == slot && mine {
                taken.push(e.clone());
                false
            } else {
                true
            }
        });
        taken
    }

    /// The relay said the player `told` left `slot` (RE_VACATED; 0: whoever sat there): the
    /// slot is not one whose player just left (what comes from it now is the next occupant's,
    /// and waits for its seat). What waits for the slot came before the word: it is marked as
    /// `told`'s, for that player's seat; without an id it is handed back to be delivered now.
    pub fn vacated(&mut self, slot: u8, told: u32) -> Vec<RemoteEvent> {
        self.departed.retain(|&(s, _)| s != slot);
        if told == 0 {
            return self.seated(slot, 0);
        }
        for (s, _, _, owner) in &mut self.waiting {
            if *s == slot && owner.is_none() {
                *owner = Some(told);
            }
        }
        Vec::new()
    }

    /// The player in `slot` left (just now: the next [`EarlyEvents::advance`] stamps the time).
    pub fn departed(&mut self, slot: u8) {
        self.departed.retain(|&(s, _)| s != slot);
        self.departed.push((slot, None));
    }

    /// The recently vacated slots, for the next session of a backend switch.
    pub fn departures(&self) -> Vec<(u8, Option<Instant>)> {
        self.departed.clone()
    }

    /// Take over the recently vacated slots of the session before a backend switch: the server
    /// carries events of those players over to this session's link.
    pub fn inherit(&mut self, departures: &[(u8, Option<Instant>)]) {
        for &(slot, at) in departures {
            if !self.departed.iter().any(|&(s, _)| s == slot) {
                self.departed.push((slot, at));
            }
        }
    }

    /// The session's clock moved to `now`: stamp fresh departures, forget old ones.
    pub fn advance(&mut self, now: Instant) {
        for (_, at) in &mut self.departed {
            at.get_or_insert(now);
        }
        self.departed.retain(|&(_, at)| {
            at.is_some_and(|at| now.saturating_duration_since(at) < DEPARTED_GRACE)
        });
    }

    /// Events that waited [`EARLY_HOLD`] without their player being seated, oldest first.
    pub fn expired(&mut self, now: Instant) -> Vec<(u8, RemoteEvent)> {
        let mut out = Vec::new();
        while let Some((_, _, since, _)) = self.waiting.front() {
            if now.saturating_duration_since(*since) < EARLY_HOLD {
                break;
            }
            if let Some((slot, event, _, _)) = self.waiting.pop_front() {
                self.released_unknown += 1;
                out.push((slot, event));
            }
        }
        out
    }

    /// Every waiting event, oldest first, whoever sent it (the session ends: nothing accepted
    /// may be lost with it).
    pub fn take_all(&mut self) -> Vec<(u8, RemoteEvent)> {
        self.released_unknown += self.waiting.len() as u64;
        self.waiting
            .drain(..)
            .map(|(slot, event, _, _)| (slot, event))
            .collect()
    }

    /// When the oldest waiting event expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.waiting
            .front()
            .map(|(_, _, since, _)| *since + EARLY_HOLD)
    }

    /// How many events wait now.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A reliable custom event numbered `n` (type and one data byte).
    pub(crate) fn text(n: u8) -> RemoteEvent {
        RemoteEvent::Custom {
            custom_type: u16::from(n),
            data: crate::rmev::CustomData::new(&[n]).expect("small"),
            reliable: true,
        }
    }

    #[test]
    fn seated_players_get_their_events_in_order_and_others_keep_waiting() {
        let now = Instant::now();
        let mut early = EarlyEvents::default();
        assert!(early.push(3, text(1), now).is_none());
        assert!(early.push(4, text(2), now).is_none());
        assert!(early.push(3, text(3), now).is_none());
        assert_eq!(early.seated(3, 77), vec![text(1), text(3)]);
        assert_eq!(early.len(), 1);
        assert_eq!(early.expired(now + EARLY_HOLD), vec![(4, text(2))]);
        assert_eq!(early.released_unknown, 1);
        assert!(early.is_empty());
        early.push(7, text(4), now);
        early.push(8, text(5), now);
        assert_eq!(early.take_all(), vec![(7, text(4)), (8, text(5))]);
        assert_eq!(early.released_unknown, 3);
        assert!(early.is_empty());
    }

    #[test]
    fn what_came_before_a_players_departure_word_is_its_alone_and_the_rest_waits_for_the_next() {
        let now = Instant::now();
        let mut early = EarlyEvents::default();
        early.push(3, text(1), now);
        early.push(3, text(2), now);
        early.departed(3);
        // The relay says player 77 left slot 3, before its `add ip:` line came.
        early.vacated(3, 77);
        assert!(early.should_hold(3, now), "the next occupant's events wait");
        early.push(3, text(3), now);
        // Another player seated there is not given 77's events, only what came after.
        let mut other = EarlyEvents::default();
        other.push(3, text(1), now);
        other.vacated(3, 77);
        other.push(3, text(3), now);
        assert_eq!(other.seated(3, 88), vec![text(3)]);
        assert_eq!(other.len(), 1);
        // 77 itself, seated late, gets its own; the next occupant the rest.
        assert_eq!(early.seated(3, 77), vec![text(1), text(2)]);
        assert_eq!(early.seated(3, 88), vec![text(3)]);
        assert!(early.is_empty());
    }

    #[test]
    fn a_full_buffer_hands_back_the_oldest_and_a_departed_slot_is_not_held() {
        let now = Instant::now();
        let mut early = EarlyEvents::default();
        for i in 0..EARLY_MAX_EVENTS {
            assert!(early.push(1, text((i % 200) as u8), now).is_none());
        }
        assert_eq!(early.push(2, text(9), now), Some((1, text(0))));
        early.departed(5);
        assert!(!early.should_hold(5, now));
        early.advance(now);
        assert!(!early.should_hold(5, now + Duration::from_secs(1)));
        assert!(early.should_hold(5, now + DEPARTED_GRACE));
        assert!(early.should_hold(6, now));
    }
}
