//! The receive rate a remote asked for (`net.rate`, told with RE_RATE): how many bytes a second
//! may go to it. Ship states are held back while the budget is spent (the newest is sent when it
//! refills, older ones are never sent: state is latest-wins); events and acknowledgements are
//! never held back for it, but what they take is spent from the same budget.

use std::time::{Duration, Instant};

/// A token bucket of bytes, refilled at the asked rate.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateBudget {
    /// Bytes per second the remote takes (0: unlimited).
    rate: u32,
    /// Bytes that may still go, at `at` (negative: over the rate by that much).
    level: f64,
    at: Option<Instant>,
}

impl RateBudget {
    /// The rate asked for (0: unlimited).
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// A new rate from the remote: the budget starts full.
    pub fn set_rate(&mut self, rate: u32) {
        *self = RateBudget {
            rate,
            level: 0.0,
            at: None,
        };
    }

    /// The rate for one of `senders` that share it (peer-to-peer: every other player sends to
    /// the remote, so each keeps to its part).
    fn share(&self, senders: usize) -> f64 {
        f64::from(self.rate) / senders.max(1) as f64
    }

    /// Most bytes saved up: a quarter second's worth, at least one small packet.
    fn burst(share: f64) -> f64 {
        (share / 4.0).max(160.0)
    }

    fn level(&self, now: Instant, share: f64) -> f64 {
        let burst = Self::burst(share);
        match self.at {
            None => burst,
            Some(at) => {
                (self.level + share * now.saturating_duration_since(at).as_secs_f64()).min(burst)
            }
        }
    }

    /// Whether a ship state may go now.
    pub fn allows_state(&self, now: Instant, senders: usize) -> bool {
        self.rate == 0 || self.level(now, self.share(senders)) >= 0.0
    }

    /// `bytes` went to the remote at `now`.
    pub fn spend(&mut self, now: Instant, senders: usize, bytes: usize) {
        if self.rate == 0 {
            return;
        }
        let share = self.share(senders);
        self.level = self.level(now, share) - bytes as f64;
        self.at = Some(now);
    }

    /// When a held-back state may go (None: it may go now, or there is no limit).
    pub fn state_ready_at(&self, senders: usize) -> Option<Instant> {
        let at = self.at?;
        if self.rate == 0 || self.level >= 0.0 {
            return None;
        }
        let share = self.share(senders).max(1.0);
        Some(at + Duration::from_secs_f64(-self.level / share))
    }
}
