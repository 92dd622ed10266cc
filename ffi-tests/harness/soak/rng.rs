//! A small seeded pseudo-random generator (xorshift64*) for the soak test's choices, so a run can
//! be repeated with the seed it printed.

use std::time::Duration;

/// The generator's state.
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed` (0 is replaced, as xorshift cannot leave it).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
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
