//! Through a gameserver: the server's player-list lines (`add ip:`, `remove ip:`, `name ip:`)
//! held in their order behind a `remove ip:` whose player is still seated here.
//!
//! The relay tells each departure in band, behind the player's last events (RE_VACATED), and
//! the session takes the departure from there. The TCP line can come first: a relayed event was
//! lost and is sent again, or the relay holds what it forwards to a newcomer until its hello.
//! The line then waits for the word, at most [`DEPARTURE_WAIT`] (a relay that never says it, a
//! UDP path that stays down), and the lines after it wait with it, so a newcomer in the same
//! slot is seated only after the player before it left.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::server_client::Update;

/// The longest a `remove ip:` line waits for the relay's word that the player left.
pub const DEPARTURE_WAIT: Duration = Duration::from_secs(5);

/// The lines waiting, and the counters `status` shows.
#[derive(Debug, Default)]
pub struct HeldUpdates {
    lines: VecDeque<Update>,
    /// When the departure at the front began to wait.
    since: Option<Instant>,
    /// Departures that waited for the relay's word.
    pub waited: u64,
    /// Departures applied without it, after `DEPARTURE_WAIT`.
    pub timed_out: u64,
}

impl HeldUpdates {
    pub fn push(&mut self, update: Update) {
        self.lines.push_back(update);
    }

    /// The line that is next in order.
    pub fn front(&self) -> Option<&Update> {
        self.lines.front()
    }

    /// The next line to apply at `now`, if it may be: `front_waits` says whether the front line
    /// is a `remove ip:` whose player is still seated (the relay's word has not come).
    pub fn next(&mut self, now: Instant, front_waits: bool) -> Option<Update> {
        if self.lines.is_empty() {
            return None;
        }
        if front_waits {
            let since = match self.since {
                Some(since) => since,
                None => {
                    self.waited += 1;
                    *self.since.insert(now)
                }
            };
            if now < since + DEPARTURE_WAIT {
                return None;
            }
            self.timed_out += 1;
            log::info!(
                "gameserver: the relay did not say within {} s that a player left; removing it \
                 on the server's line",
                DEPARTURE_WAIT.as_secs()
            );
        }
        self.since = None;
        self.lines.pop_front()
    }

    /// When the waiting departure is applied anyway.
    pub fn deadline(&self) -> Option<Instant> {
        self.since.map(|since| since + DEPARTURE_WAIT)
    }

    /// The connection they came on is over.
    pub fn clear(&mut self) {
        self.lines.clear();
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remove(ip: &str) -> Update {
        Update::Remove {
            ip: ip.to_string(),
            port: Some(7000),
        }
    }

    #[test]
    fn lines_pass_in_order_while_nothing_waits() {
        let mut held = HeldUpdates::default();
        let now = Instant::now();
        held.push(remove("1"));
        held.push(remove("2"));
        assert_eq!(held.next(now, false), Some(remove("1")));
        assert_eq!(held.next(now, false), Some(remove("2")));
        assert_eq!(held.next(now, false), None);
        assert_eq!((held.waited, held.timed_out), (0, 0));
    }

    #[test]
    fn a_departure_waits_for_the_word_and_at_most_the_wait() {
        let mut held = HeldUpdates::default();
        let now = Instant::now();
        held.push(remove("1"));
        held.push(remove("2"));
        assert_eq!(held.next(now, true), None);
        assert_eq!(held.deadline(), Some(now + DEPARTURE_WAIT));
        // The line behind waits too.
        assert_eq!(held.front(), Some(&remove("1")));
        let later = now + DEPARTURE_WAIT - Duration::from_millis(1);
        assert_eq!(held.next(later, true), None);
        assert_eq!(held.next(now + DEPARTURE_WAIT, true), Some(remove("1")));
        assert_eq!(held.deadline(), None);
        assert_eq!((held.waited, held.timed_out), (1, 1));
        // The word came for the next one: it passes at once, its wait counted.
        assert_eq!(held.next(later, true), None);
        assert_eq!(held.next(later, false), Some(remove("2")));
        assert_eq!((held.waited, held.timed_out), (2, 1));
    }
}
