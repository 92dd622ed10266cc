//! What waits to be forwarded to one gameserver client: the burst buffer of the design. Packets
//! often reach the server in bursts; everything a burst carries for a client is buffered here,
//! then time-critical events (laser and missile creations) go first (taking along what their
//! sender said before them, so each sender's events keep their order), only the newest ship state
//! of each player is kept (outdated ones are dropped), and the other events wait at most
//! `delay` so they can share packets.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::{RemoteEvent, ShipState, MAX_SLOTS};

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
    critical: VecDeque<(u8, RemoteEvent)>,
    normal: VecDeque<(u8, RemoteEvent, Instant)>,
    states: [Option<ShipState>; MAX_SLOTS],
    stats: OutboxStats,
}

impl Outbox {
    pub fn stats(&self) -> &OutboxStats {
        &self.stats
    }

    /// Buffer an event from `origin`.
    pub fn push_event(&mut self, now: Instant, origin: u8, event: RemoteEvent) {
        if is_time_critical(&event) {
            // Events keep their order per sender: what `origin` said before goes first with it
            // (a laser never arrives before its shooter's join or name).
            let mut index = 0;
            while index < self.normal.len() {
                if self.normal[index].0 == origin {
                    let (o, e, _) = self.normal.remove(index).expect("index in range");
                    self.critical.push_back((o, e));
                } else {
                    index += 1;
                }
            }
            self.critical.push_back((origin, event));
        } else {
            self.normal.push_back((origin, event, now));
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

    /// Forget everything from `origin` (the player left).
    pub fn forget(&mut self, origin: u8) {
        self.critical.retain(|(o, _)| *o != origin);
        self.normal.retain(|(o, _, _)| *o != origin);
        if let Some(slot) = self.states.get_mut(usize::from(origin)) {
            *slot = None;
        }
    }

    /// Take what is due at `now`, in forwarding order: every critical event, then the other
    /// events that have waited `delay` (all of them once any has, so order among them holds).
    pub fn take_due_events(
        &mut self,
        now: Instant,
        delay: Duration,
        out: &mut Vec<(u8, RemoteEvent)>,
    ) {
        out.clear();
        self.stats.critical_forwarded += self.critical.len() as u64;
        out.extend(self.critical.drain(..));
        let oldest_due = self
            .normal
            .front()
            .is_some_and(|(_, _, at)| now.saturating_duration_since(*at) >= delay);
        if oldest_due {
            self.stats.events_forwarded += self.normal.len() as u64;
            out.extend(self.normal.drain(..).map(|(o, e, _)| (o, e)));
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
        self.normal.front().map(|(_, _, at)| *at + delay)
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
        outbox.push_event(now, 1, text("one says hi"));
        outbox.push_event(now, 2, text("two says hi"));
        outbox.push_event(now, 1, laser(7));
        outbox.push_event(now, 2, text("two again"));
        let mut out = Vec::new();
        // Before the delay: the laser goes, with what its sender said first; two's lines wait.
        outbox.take_due_events(now, Duration::from_millis(20), &mut out);
        assert_eq!(out, vec![(1, text("one says hi")), (1, laser(7))]);
        outbox.take_due_events(
            now + Duration::from_millis(20),
            Duration::from_millis(20),
            &mut out,
        );
        assert_eq!(out, vec![(2, text("two says hi")), (2, text("two again"))]);
        assert!(outbox.is_empty());
    }
}
