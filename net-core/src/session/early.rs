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

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::RemoteEvent;

/// How long an event from an unknown sender waits for its player to be seated.
pub const EARLY_HOLD: Duration = Duration::from_secs(5);
/// At most this many events wait at once.
pub const EARLY_MAX_EVENTS: usize = 1024;
/// A slot counts as "just left" for this long after its player was removed.
const DEPARTED_GRACE: Duration = Duration::from_secs(10);

/// The waiting events and the recently vacated slots.
#[derive(Default)]
pub struct EarlyEvents {
    waiting: VecDeque<(u8, RemoteEvent, Instant)>,
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
            self.waiting.pop_front().map(|(s, e, _)| (s, e))
        } else {
            None
        };
        self.waiting.push_back((slot, event, now));
        overflow
    }

    /// The player in `slot` was seated: its waiting events, in arrival order.
    pub fn seated(&mut self, slot: u8) -> Vec<RemoteEvent> {
        self.departed.retain(|&(s, _)| s != slot);
        let mut mine = Vec::new();
        self.waiting.retain(|(s, e, _)| {
            if *s == slot {
                mine.push(e.clone());
                false
            } else {
                true
            }
        });
        mine
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
        while let Some((_, _, since)) = self.waiting.front() {
            if now.saturating_duration_since(*since) < EARLY_HOLD {
                break;
            }
            if let Some((slot, event, _)) = self.waiting.pop_front() {
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
            .map(|(slot, event, _)| (slot, event))
            .collect()
    }

    /// When the oldest waiting event expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.waiting
            .front()
            .map(|(_, _, since)| *since + EARLY_HOLD)
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
        assert_eq!(early.seated(3), vec![text(1), text(3)]);
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
