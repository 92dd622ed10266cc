//! Which deadline closes a text connection, and how many each closed: shared by the slot and
//! gameserver core (`slots.rs`) and the masterserver core (`crate::master::core`), which differ
//! only in what their deadlines are and in the words they log.
//!
//! A connection is closed for the deadline that came first, whenever the timers happen to run,
//! so the reason (and the counter) never depends on how late a sweep was.

use std::time::Instant;

/// Why the clock closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// It did not join (or send a request) in time after connecting.
    Handshake,
    /// It started a line and did not finish it in time.
    Line,
    /// A joined player or listed server was silent for the idle timeout.
    Idle,
}

/// The earliest of a connection's deadlines and its kind; on a tie the one listed first wins.
/// `None` when every deadline is disabled.
pub fn earliest(deadlines: &[(Option<Instant>, Expiry)]) -> Option<(Instant, Expiry)> {
    deadlines
        .iter()
        .filter_map(|&(at, expiry)| at.map(|at| (at, expiry)))
        .reduce(|first, other| if other.0 < first.0 { other } else { first })
}

/// Connections closed by each kind of deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpiryCounts {
    pub handshake: u64,
    pub line: u64,
    pub idle: u64,
}

impl ExpiryCounts {
    pub fn count(&mut self, expiry: Expiry) {
        match expiry {
            Expiry::Handshake => self.handshake += 1,
            Expiry::Line => self.line += 1,
            Expiry::Idle => self.idle += 1,
        }
    }

    /// The counters by the names the servers report.
    pub fn named(&self) -> [(&'static str, u64); 3] {
        [
            ("handshake_timeouts", self.handshake),
            ("line_timeouts", self.line),
            ("idle_timeouts", self.idle),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_first_deadline_wins_and_ties_go_to_the_first_listed() {
        let t = Instant::now();
        let s = |secs| Some(t + Duration::from_secs(secs));
        let found = earliest(&[(s(10), Expiry::Handshake), (s(5), Expiry::Line)]);
        assert_eq!(found, Some((t + Duration::from_secs(5), Expiry::Line)));
        let tie = earliest(&[(s(5), Expiry::Idle), (s(5), Expiry::Line)]);
        assert_eq!(tie.map(|(_, e)| e), Some(Expiry::Idle));
        assert_eq!(
            earliest(&[(None, Expiry::Idle), (s(7), Expiry::Line)]).map(|(_, e)| e),
            Some(Expiry::Line)
        );
        assert_eq!(
            earliest(&[(None, Expiry::Idle), (None, Expiry::Line)]),
            None
        );
        assert_eq!(earliest(&[]), None);
    }

    #[test]
    fn each_kind_is_counted_under_its_name() {
        let mut counts = ExpiryCounts::default();
        for e in [Expiry::Line, Expiry::Idle, Expiry::Line] {
            counts.count(e);
        }
        assert_eq!(
            counts.named(),
            [
                ("handshake_timeouts", 0),
                ("line_timeouts", 2),
                ("idle_timeouts", 1)
            ]
        );
    }
}
