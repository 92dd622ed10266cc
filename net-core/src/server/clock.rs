//! Time helpers the sans-IO server cores share: wall-clock times derived from the `Instant`s the
//! owner passes in (the clock is read once, at the first use, or set by the owner), and
//! deadlines of timeouts that may be disabled.

use std::time::{Duration, Instant, SystemTime};

/// Maps the cores' `Instant`s to wall-clock times from one base pair.
#[derive(Debug, Default)]
pub struct WallClock {
    base: Option<(Instant, SystemTime)>,
}

impl WallClock {
    /// A clock whose `instant` is the wall time `wall` (tests set both).
    pub fn starting_at(instant: Instant, wall: SystemTime) -> WallClock {
        WallClock {
            base: Some((instant, wall)),
        }
    }

    /// The wall time at `now` (the system clock is read at the first call without a base).
    pub fn at(&mut self, now: Instant) -> SystemTime {
        let (base_instant, base_wall) = *self.base.get_or_insert_with(|| (now, SystemTime::now()));
        match now.checked_duration_since(base_instant) {
            Some(d) => base_wall + d,
            None => base_wall
                .checked_sub(base_instant.duration_since(now))
                .unwrap_or(base_wall),
        }
    }
}

/// `start + timeout`, or `None` when the timeout is zero (disabled).
pub fn deadline(start: Instant, timeout: Duration) -> Option<Instant> {
    (!timeout.is_zero()).then(|| start + timeout)
}
