//! The soak test's seeded choices, so a run can be repeated with the seed it printed: the
//! simulator's generator (`net_core::sim::Rng`) with the few helpers the client cycle needs.

use std::time::Duration;

/// The generator.
pub struct Rng(net_core::sim::Rng);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(net_core::sim::Rng::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A duration between `low` and `high` (inclusive, millisecond steps).
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let (lo, hi) = (low.as_millis() as u64, high.as_millis() as u64);
        Duration::from_millis(lo + self.next_u64() % (hi.saturating_sub(lo) + 1))
    }
}
