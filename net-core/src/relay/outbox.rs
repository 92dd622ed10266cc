//! What waits to be forwarded to one gameserver client: the burst buffer of the design. Packets
//! often reach the server in bursts; everything a burst carries for a client is buffered here,
//! then time-critical events (laser and missile creations) go first (taking along what their
//! sender said before them, so each sender's events keep their order), only the newest ship state
//! of each player is kept (outdated ones are dropped), and the other events wait at most
//! `delay` so they can share packets.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::{RemoteEvent, ShipState, MAX_SLOTS};

/// An event to forward: (origin slot, the relay's serial of it, event). One event sent to several
/// clients has one serial, so a client coming back gets it once (see `super::resume`).
pub type Relayed = (u8, u64, RemoteEvent);

/// Whether an event jumps the queue at the gameserver.
pub fn is_time_critical(event: &RemoteEvent) -> bool {
    matches!(
        event,
        RemoteEvent::CreateLaser { .. } | RemoteEvent::CreateMissile { .. }
    )
}

/// Counters of the burst handling.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutboxStats {
    pub critical_forwarded: u64,
    pub events_forwarded: u64,
    pub states_forwarded: u64,
    /// States replaced by a newer one before they could be forwarded.
    pub states_dropped: u64,
}

impl OutboxStats {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &OutboxStats) {
        self.critical_forwarded += other.critical_forwarded;
        self.events_forwarded += other.events_forwarded;
        self.states_forwarded += other.states_forwarded;
        self.states_dropped += other.states_dropped;
    }
}

/// The buffer for one destination client.
#[derive(Debug, Default)]
pub struct Outbox {
    critical: VecDeque<Relayed>,
    normal: VecDeque<(Relayed, Instant)>,
    states: [Option<ShipState>; MAX_SLOTS],
    stats: OutboxStats,
}

impl Outbox {
    pub fn stats(&self) -> &OutboxStats {
        &self.stats
    }

    /// Buffer an event.
    pub fn push_event(&mut self, now: Instant, relayed: Relayed) {
        let origin = relayed.0;
        if is_time_critical(&relayed.2) {
            // Events keep their order per sender: what `origin` said before goes first with it
            // (a laser never arrives before its shooter's join or name).
            let mut index = 0;
            while index < self.normal.len() {
                if self.normal[index].0 .0 == origin {
                    let (earlier, _) = self.normal.remove(index).expect("index in range");
                    self.critical.push_back(earlier);
                } else {
                    index += 1;
                }
            }
            self.critical.push_back(relayed);
        } else {
            self.normal.push_back((relayed, now));
        }
    }

    /// Buffer the newest state of `origin`, dropping an older one not yet forwarded.
    pub fn push_state(&mut self, origin: u8, state: ShipState) {
        if let Some(slot) = self.states.get_mut(usize::from(origin)) {
            if slot.replace(state).is_some() {
                self.stats.states_dropped += 1;
            }
        }
    }

    /// `origin` left: its state is dropped and its events (accepted from it, so they must be
    /// forwarded) are taken at once, in their order, before a newcomer may sit in its slot.
    pub fn take_departed(&mut self, origin: u8, out: &mut Vec<Relayed>) {
        out.clear();
        for relayed in std::mem::take(&mut self.critical) {
            if relayed.0 == origin {
                self.stats.critical_forwarded += 1;
                out.push(relayed);
            } else {
                self.critical.push_back(relayed);
            }
        }
        for (relayed, at) in std::mem::take(&mut self.normal) {
            if relayed.0 == origin {
                self.stats.events_forwarded += 1;
                out.push(relayed);
            } else {
                self.normal.push_back((relayed, at));
            }
        }
        if let Some(slot) = self.states.get_mut(usize::from(origin)) {
            *slot = None;
        }
    }

    /// Take what is due at `now`, in forwarding order: every critical event, then the other
    /// events that have waited `delay` (all of them once any has, so order among them holds).
    pub fn take_due_events(&mut self, now: Instant, delay: Duration, out: &mut Vec<Relayed>) {
        out.clear();
        self.stats.critical_forwarded += self.critical.len() as u64;
        out.extend(self.critical.drain(..));
        let oldest_due = self
            .normal
            .front()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) >= delay);
        if oldest_due {
            self.stats.events_forwarded += self.normal.len() as u64;
            out.extend(self.normal.drain(..).map(|(relayed, _)| relayed));
        }
    }

    /// Take the state waiting for `origin`.
    pub fn take_state(&mut self, origin: u8) -> Option<ShipState> {
        let state = self.states.get_mut(usize::from(origin))?.take();
        if state.is_some() {
            self.stats.states_forwarded += 1;
        }
        state
    }

    /// Origins with a state waiting.
    pub fn state_origins(&self) -> impl Iterator<Item = u8> + '_ {
        self.states
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i as u8)
    }

    /// When the oldest delayed event becomes due (critical events and states are forwarded in
    /// the pass that buffered them, so they need no timer).
    pub fn next_due(&self, delay: Duration) -> Option<Instant> {
        self.normal.front().map(|(_, at)| *at + delay)
    }

    pub fn is_empty(&self) -> bool {
        self.critical.is_empty()
            && self.normal.is_empty()
            && self.states.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rmev::ChatText;

    fn laser(id: u32) -> RemoteEvent {
        RemoteEvent::CreateLaser {
            object_id: id,
            class: 0,
            pos: [0.0; 3],
            dir: [1.0, 0.0, 0.0],
        }
    }

    fn text(t: &str) -> RemoteEvent {
        RemoteEvent::SendText(ChatText::new(t.as_bytes()).unwrap())
    }

    #[test]
    fn critical_events_go_first_but_each_sender_keeps_its_order() {
        let now = Instant::now();
        let mut outbox = Outbox::default();
        outbox.push_event(now, (1, 0, text("one says hi")));
        outbox.push_event(now, (2, 0, text("two says hi")));
        outbox.push_event(now, (1, 0, laser(7)));
        outbox.push_event(now, (2, 0, text("two again")));
        let mut out = Vec::new();
        // Before the delay: the laser goes, with what its sender said first; two's lines wait.
        outbox.take_due_events(now, Duration::from_millis(20), &mut out);
        assert_eq!(out, vec![(1, 0, text("one says hi")), (1, 0, laser(7))]);
        outbox.take_due_events(
            now + Duration::from_millis(20),
            Duration::from_millis(20),
            &mut out,
        );
        assert_eq!(
            out,
            vec![(2, 0, text("two says hi")), (2, 0, text("two again"))]
        );
        assert!(outbox.is_empty());
    }

    #[test]
    fn a_departed_senders_events_are_taken_in_order_and_its_state_dropped() {
        let now = Instant::now();
        let mut outbox = Outbox::default();
        outbox.push_event(now, (1, 0, text("one")));
        outbox.push_event(now, (2, 0, text("two")));
        outbox.push_event(now, (1, 0, laser(3)));
        outbox.push_event(now, (1, 0, text("one again")));
        outbox.push_state(1, ShipState::default());
        let mut out = Vec::new();
        outbox.take_departed(1, &mut out);
        assert_eq!(
            out,
            vec![
                (1, 0, text("one")),
                (1, 0, laser(3)),
                (1, 0, text("one again"))
            ]
        );
        assert_eq!(outbox.state_origins().count(), 0);
        outbox.take_due_events(now + Duration::from_secs(1), Duration::ZERO, &mut out);
        assert_eq!(out, vec![(2, 0, text("two"))]);
        assert!(outbox.is_empty());
    }
}
