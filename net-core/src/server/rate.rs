//! Rate limits of the servers: how many bytes a TCP connection may send per second, and how many
//! datagrams and bytes one UDP source address may send per second. Token buckets, sans-IO (the
//! caller passes `now`). What goes over a limit is refused by the caller, logged and counted.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The servers' rate limits (zero: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimits {
    /// Bytes per second one text-protocol connection may send (bursts up to 4 seconds' worth).
    pub tcp_bytes_per_sec: u32,
    /// Datagrams per second one UDP source address may send (bursts up to 2 seconds' worth).
    pub udp_datagrams_per_sec: u32,
    /// Bytes per second one UDP source address may send (bursts up to 2 seconds' worth).
    pub udp_bytes_per_sec: u32,
}

impl Default for RateLimits {
    /// Generous for a genuine client (a few lines a minute; a game at 60 Hz sends about 60-120
    /// datagrams of at most 1400 bytes a second), small for a flood.
    fn default() -> Self {
        RateLimits {
            tcp_bytes_per_sec: 64 * 1024,
            udp_datagrams_per_sec: 400,
            udp_bytes_per_sec: 256 * 1024,
        }
    }
}

/// A token bucket: `rate` units per second, holding at most `burst` units.
#[derive(Clone, Copy, Debug)]
pub struct Bucket {
    rate: f64,
    burst: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket. `rate` 0 means unlimited.
    pub fn new(rate: u32, burst: Duration, now: Instant) -> Bucket {
        let rate = f64::from(rate);
        let burst = (rate * burst.as_secs_f64()).max(rate);
        Bucket {
            rate,
            burst,
            level: burst,
            at: now,
        }
    }

    /// Take `amount` units if the bucket holds them; false (and nothing taken) if not.
    pub fn take(&mut self, now: Instant, amount: u64) -> bool {
        if self.rate == 0.0 {
            return true;
        }
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + elapsed * self.rate).min(self.burst);
        self.at = now.max(self.at);
        let amount = amount as f64;
        if amount > self.level {
            return false;
        }
        self.level -= amount;
        true
    }

    /// Whether the bucket is full again at `now` (its owner can be forgotten).
    pub fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level + elapsed * self.rate >= self.burst
    }
}

/// Burst of a TCP connection's byte bucket.
pub const TCP_BURST: Duration = Duration::from_secs(4);
/// Burst of a UDP source's buckets.
pub const UDP_BURST: Duration = Duration::from_secs(2);
/// UDP source addresses tracked at most; past this, the idle ones are forgotten, and if none is
/// idle, new sources share one overflow bucket (a spoofed flood cannot grow memory).
pub const MAX_UDP_SOURCES: usize = 4096;

/// What the UDP limiter says about a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Over the limit; `first` when the source was within it until now (log it once).
    Refuse {
        first: bool,
    },
}

/// One source's datagram and byte buckets, and whether it was over the limit last time.
#[derive(Clone, Copy, Debug)]
struct Source {
    datagrams: Bucket,
    bytes: Bucket,
    refusing: bool,
}

/// Per-source-address limits of a UDP socket.
#[derive(Debug)]
pub struct UdpLimiter {
    limits: RateLimits,
    sources: HashMap<SocketAddr, Source>,
    overflow: Source,
}

impl UdpLimiter {
    pub fn new(limits: RateLimits, now: Instant) -> UdpLimiter {
        UdpLimiter {
            limits,
            sources: HashMap::new(),
            overflow: Self::buckets(limits, now),
        }
    }

    fn buckets(limits: RateLimits, now: Instant) -> Source {
        Source {
            datagrams: Bucket::new(limits.udp_datagrams_per_sec, UDP_BURST, now),
            bytes: Bucket::new(limits.udp_bytes_per_sec, UDP_BURST, now),
            refusing: false,
        }
    }

    /// Whether a datagram of `len` bytes from `from` is within the limits (and counts it).
    pub fn check(&mut self, now: Instant, from: SocketAddr, len: usize) -> Verdict {
        if self.limits.udp_datagrams_per_sec == 0 && self.limits.udp_bytes_per_sec == 0 {
            return Verdict::Allow;
        }
        if !self.sources.contains_key(&from) && self.sources.len() >= MAX_UDP_SOURCES {
            self.sources
                .retain(|_, s| !(s.datagrams.is_full(now) && s.bytes.is_full(now)));
        }
        let limits = self.limits;
        let source = if self.sources.len() < MAX_UDP_SOURCES || self.sources.contains_key(&from) {
            self.sources
                .entry(from)
                .or_insert_with(|| Self::buckets(limits, now))
        } else {
            &mut self.overflow
        };
        // Both buckets must allow it; take from neither otherwise.
        let mut datagrams = source.datagrams;
        if !datagrams.take(now, 1) || !source.bytes.take(now, len as u64) {
            let first = !source.refusing;
            source.refusing = true;
            return Verdict::Refuse { first };
        }
        source.datagrams = datagrams;
        source.refusing = false;
        Verdict::Allow
    }

    /// Source addresses tracked now.
    pub fn tracked(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let t0 = Instant::now();
        let mut bucket = Bucket::new(100, Duration::from_secs(2), t0);
        assert!(bucket.take(t0, 200), "a full burst");
        assert!(!bucket.take(t0, 1), "then nothing");
        assert!(bucket.take(t0 + Duration::from_millis(500), 50));
        assert!(!bucket.take(t0 + Duration::from_millis(500), 1));
        assert!(
            !bucket.take(t0 + Duration::from_secs(10), 201),
            "never more than the burst"
        );
        assert!(bucket.is_full(t0 + Duration::from_secs(10)));
    }

    #[test]
    fn zero_rate_is_unlimited() {
        let t0 = Instant::now();
        let mut bucket = Bucket::new(0, TCP_BURST, t0);
        assert!(bucket.take(t0, u64::MAX / 2));
    }

    #[test]
    fn each_udp_source_has_its_own_budget_and_memory_stays_bounded() {
        let t0 = Instant::now();
        let limits = RateLimits {
            tcp_bytes_per_sec: 0,
            udp_datagrams_per_sec: 10,
            udp_bytes_per_sec: 1000,
        };
        let mut limiter = UdpLimiter::new(limits, t0);
        let a: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let verdicts: Vec<Verdict> = (0..50).map(|_| limiter.check(t0, a, 10)).collect();
        let allowed = verdicts.iter().filter(|v| **v == Verdict::Allow).count();
        assert_eq!(allowed, 20, "two seconds' worth of datagrams");
        assert_eq!(verdicts[20], Verdict::Refuse { first: true });
        assert_eq!(verdicts[21], Verdict::Refuse { first: false });
        assert_eq!(limiter.check(t0, b, 10), Verdict::Allow, "another source");
        assert!(
            matches!(limiter.check(t0, b, 5000), Verdict::Refuse { .. }),
            "byte burst"
        );
        let later = t0 + Duration::from_secs(1);
        assert_eq!(limiter.check(later, a, 10), Verdict::Allow, "refilled");
        for port in 0..(MAX_UDP_SOURCES as u16 + 500) {
            let from = SocketAddr::from(([10, 0, 0, 1], port));
            limiter.check(t0, from, 10);
        }
        assert!(limiter.tracked() <= MAX_UDP_SOURCES);
    }
}
