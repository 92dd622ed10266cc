//! What a server's TCP connection brought while `net.sim` still held datagrams that came
//! before it: a real path delays the lines with those datagrams, so the protocol hears the lines
//! only once the datagrams have been handed on (a departing player's last events before the
//! line that says it left).

use std::collections::VecDeque;
use std::time::Instant;

use crate::protocol::StreamEvent;

/// The connection's events waiting for the receive path.
#[derive(Default)]
pub(super) struct IncomingHold {
    events: VecDeque<StreamEvent>,
    /// When the last datagram held when one of `events` came is handed on.
    until: Option<Instant>,
}

impl IncomingHold {
    /// Take what the connection brought now. `path_until`: when the last datagram the receive
    /// path holds now is due, if later than now. Events wait if it is, or if earlier ones wait
    /// (their order is kept).
    pub(super) fn take_in(&mut self, happened: &mut Vec<StreamEvent>, path_until: Option<Instant>) {
        if happened.is_empty() || (path_until.is_none() && self.events.is_empty()) {
            return;
        }
        self.events.extend(happened.drain(..));
        self.until = self.until.max(path_until);
    }

    /// The waiting events, oldest first, once the datagrams before them are due at `now` (or the
    /// receive path holds none beyond `now`: `path_until` None). Read the datagrams before
    /// handing these on.
    pub(super) fn take_due(
        &mut self,
        now: Instant,
        path_until: Option<Instant>,
    ) -> Option<VecDeque<StreamEvent>> {
        if self.events.is_empty() {
            return None;
        }
        let due = path_until.is_none() || self.until.is_none_or(|until| until <= now);
        if !due {
            return None;
        }
        self.until = None;
        Some(std::mem::take(&mut self.events))
    }

    /// The connection they came from is not the protocol's any more.
    pub(super) fn clear(&mut self) {
        self.events.clear();
        self.until = None;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn line(text: &str) -> StreamEvent {
        StreamEvent::Line(text.to_string())
    }

    #[test]
    fn events_pass_at_once_when_the_path_holds_nothing() {
        let mut hold = IncomingHold::default();
        let mut happened = vec![line("a")];
        hold.take_in(&mut happened, None);
        assert_eq!(happened, vec![line("a")]);
        assert!(hold.take_due(Instant::now(), None).is_none());
    }

    #[test]
    fn events_wait_for_the_datagrams_held_when_they_came_and_keep_their_order() {
        let t0 = Instant::now();
        let mut hold = IncomingHold::default();
        let mut happened = vec![line("remove ip: 1")];
        hold.take_in(&mut happened, Some(t0 + Duration::from_millis(100)));
        assert!(happened.is_empty());
        // A later line waits behind it even though the path holds nothing newer.
        let mut later = vec![line("add ip: 2")];
        hold.take_in(&mut later, Some(t0 + Duration::from_millis(50)));
        assert!(later.is_empty());
        let busy = Some(t0 + Duration::from_millis(150));
        assert!(hold
            .take_due(t0 + Duration::from_millis(99), busy)
            .is_none());
        let due = hold
            .take_due(t0 + Duration::from_millis(100), busy)
            .expect("due at the last held datagram's release");
        assert_eq!(
            due.into_iter().collect::<Vec<_>>(),
            vec![line("remove ip: 1"), line("add ip: 2")]
        );
        assert!(hold.is_empty());
    }

    #[test]
    fn events_go_once_the_path_holds_nothing_more() {
        let t0 = Instant::now();
        let mut hold = IncomingHold::default();
        let mut happened = vec![line("x")];
        hold.take_in(&mut happened, Some(t0 + Duration::from_secs(5)));
        // The path was drained (a backend switch hands everything on at once).
        assert!(hold.take_due(t0, None).is_some());
    }

    #[test]
    fn clearing_drops_what_waits() {
        let t0 = Instant::now();
        let mut hold = IncomingHold::default();
        let mut happened = vec![line("x")];
        hold.take_in(&mut happened, Some(t0 + Duration::from_secs(5)));
        hold.clear();
        assert!(hold.is_empty());
        assert!(hold.take_due(t0 + Duration::from_secs(9), None).is_none());
    }
}
