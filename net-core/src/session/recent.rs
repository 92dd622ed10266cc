//! The recent packet rates `status` shows ("packets sent N (x/s) accepted M (y/s)"): the
//! session's counters are sampled at frames (at most every `SAMPLE_EVERY`, into a fixed ring, no
//! allocation) and a rate is the change since the oldest sample within the last `RATE_WINDOW`,
//! divided by the time since it. So after a burst and then silence the figures fall to 0 within
//! the window, and a new game (a new session) starts from its own counters, not the process's
//! uptime.

use std::time::{Duration, Instant};

/// The window the per-second figures of `status` cover (about; the base sample is between
/// `RATE_WINDOW - SAMPLE_EVERY` and `RATE_WINDOW` old once the game has run that long).
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// How often a frame keeps a sample.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// Enough samples to cover the window at `SAMPLE_EVERY`, and one more.
const SAMPLES: usize = (RATE_WINDOW.as_millis() / SAMPLE_EVERY.as_millis()) as usize + 2;

/// The shortest time a rate is divided by: a figure read right after a sample is not the
/// count of a few milliseconds blown up.
const MIN_SPAN: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    sent: u64,
    accepted: u64,
}

/// Samples of (packets sent, packets accepted) over the last few seconds.
#[derive(Clone, Debug)]
pub struct RecentRates {
    samples: [Option<Sample>; SAMPLES],
    /// Where the next sample goes (the ring's oldest once full).
    next: usize,
}

impl RecentRates {
    /// A session starting at `now` with nothing counted yet.
    pub fn new(now: Instant) -> RecentRates {
        let mut rates = RecentRates {
            samples: [None; SAMPLES],
            next: 0,
        };
        rates.keep(now, 0, 0);
        rates
    }

    fn keep(&mut self, at: Instant, sent: u64, accepted: u64) {
        self.samples[self.next] = Some(Sample { at, sent, accepted });
        self.next = (self.next + 1) % SAMPLES;
    }

    fn newest(&self) -> Option<Sample> {
        self.samples[(self.next + SAMPLES - 1) % SAMPLES]
    }

    /// A frame: keep the counters if the newest sample is `SAMPLE_EVERY` old.
    pub fn sample(&mut self, now: Instant, sent: u64, accepted: u64) {
        let due = self
            .newest()
            .is_none_or(|s| s.at.checked_add(SAMPLE_EVERY).is_none_or(|due| due <= now));
        if due {
            self.keep(now, sent, accepted);
        }
    }

    /// Packets sent and accepted per second over the last `RATE_WINDOW` (from the oldest sample
    /// in it; with none in it, frames stopped: from the newest one), given the counters now.
    pub fn rates(&self, now: Instant, sent: u64, accepted: u64) -> (f64, f64) {
        let usable = || self.samples.iter().flatten().filter(|s| s.at <= now);
        let in_window = usable()
            .filter(|s| now.saturating_duration_since(s.at) <= RATE_WINDOW)
            .min_by_key(|s| s.at);
        let Some(base) = in_window.or_else(|| usable().max_by_key(|s| s.at)) else {
            return (0.0, 0.0);
        };
        let span = now
            .saturating_duration_since(base.at)
            .max(MIN_SPAN)
            .as_secs_f64();
        (
            sent.saturating_sub(base.sent) as f64 / span,
            accepted.saturating_sub(base.accepted) as f64 / span,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// 20 packets a second each way for 10 s, sampled at 60 frames a second.
    fn steady(start: Instant) -> (RecentRates, Instant, u64) {
        let mut rates = RecentRates::new(start);
        let mut count = 0;
        let mut now = start;
        for frame in 1..=600u64 {
            now = start + ms(frame * 1000 / 60);
            count = frame / 3;
            rates.sample(now, count, count);
        }
        (rates, now, count)
    }

    #[test]
    fn steady_rate_is_the_rate() {
        let (rates, now, count) = steady(Instant::now());
        let (sent, accepted) = rates.rates(now, count, count);
        assert!((19.0..=21.0).contains(&sent), "{sent}");
        assert!((19.0..=21.0).contains(&accepted), "{accepted}");
    }

    #[test]
    fn silence_falls_to_zero_within_the_window() {
        let (mut rates, mut now, count) = steady(Instant::now());
        let end = now + RATE_WINDOW + SAMPLE_EVERY;
        while now < end {
            now += ms(16);
            rates.sample(now, count, count);
        }
        assert_eq!(rates.rates(now, count, count), (0.0, 0.0));
    }

    #[test]
    fn frames_that_stopped_give_the_change_since_the_last_one() {
        let (rates, now, count) = steady(Instant::now());
        let later = now + Duration::from_secs(60);
        assert_eq!(rates.rates(later, count, count), (0.0, 0.0));
        let (sent, _) = rates.rates(later, count + 60, count);
        assert!((0.9..=1.1).contains(&sent), "{sent}");
    }

    #[test]
    fn a_new_session_counts_from_its_start() {
        let start = Instant::now();
        let mut rates = RecentRates::new(start);
        rates.sample(start + ms(500), 10, 10);
        let (sent, _) = rates.rates(start + ms(1000), 20, 20);
        assert!((19.0..=21.0).contains(&sent), "{sent}");
        // Right after the start: not a few packets blown up to thousands a second.
        let (sent, _) = RecentRates::new(start).rates(start + ms(1), 2, 0);
        assert!(sent <= 20.0, "{sent}");
    }
}
