//! The link conditioner (`net.sim`): makes any backend behave like a worse network, on the send
//! and the receive path, for players trying their game under bad conditions and for tests:
//! added latency with jitter, loss, duplication and reordering. Off by default; when off it
//! costs one branch per datagram.
//!
//! It keeps datagrams it delays in a queue ordered by release time; it never blocks and never
//! changes a datagram's bytes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::error::{NetError, NetResult};
use crate::sim::Rng;
use crate::Node;

/// How the conditioner treats datagrams in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Conditions {
    pub lag: Duration,
    pub jitter: Duration,
    /// Probabilities 0.0-1.0.
    pub loss: f64,
    pub duplicate: f64,
    /// Probability a datagram is held back an extra `lag + jitter` so later ones overtake it.
    pub reorder: f64,
}

impl Conditions {
    pub fn is_off(&self) -> bool {
        *self == Conditions::default()
    }

    /// Parse `lag MS jitter MS loss PCT dup PCT reorder PCT` (any subset, any order), or `off`.
    pub fn parse(args: &str) -> NetResult<Conditions> {
        let args = args.trim();
        if args.eq_ignore_ascii_case("off") {
            return Ok(Conditions::default());
        }
        let words: Vec<&str> = args.split_whitespace().collect();
        if words.is_empty() || !words.len().is_multiple_of(2) {
            return Err(NetError::invalid("expected pairs like 'lag 50 loss 5'"));
        }
        let mut c = Conditions::default();
        for pair in words.chunks(2) {
            let value: f64 = pair[1]
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    NetError::invalid(format!("'{}' is not a number for {}", pair[1], pair[0]))
                })?;
            let percent = |v: f64| {
                if v > 100.0 {
                    Err(NetError::invalid(format!(
                        "{} {v}: a percentage is 0-100",
                        pair[0]
                    )))
                } else {
                    Ok(v / 100.0)
                }
            };
            let millis = |v: f64| {
                if v > 10_000.0 {
                    Err(NetError::invalid(format!(
                        "{} {v}: at most 10000 ms",
                        pair[0]
                    )))
                } else {
                    Ok(Duration::from_secs_f64(v / 1000.0))
                }
            };
            // Read in any letter case, like the command names.
            match pair[0].to_ascii_lowercase().as_str() {
                "lag" => c.lag = millis(value)?,
                "jitter" => c.jitter = millis(value)?,
                "loss" => c.loss = percent(value)?,
                "dup" => c.duplicate = percent(value)?,
                "reorder" => c.reorder = percent(value)?,
                other => {
                    return Err(NetError::invalid(format!(
                        "unknown condition '{other}' (lag, jitter, loss, dup, reorder)"
                    )))
                }
            }
        }
        Ok(c)
    }
}

impl std::fmt::Display for Conditions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_off() {
            return f.write_str("off");
        }
        write!(
            f,
            "lag {} ms jitter {} ms loss {}% dup {}% reorder {}%",
            self.lag.as_millis(),
            self.jitter.as_millis(),
            percent(self.loss),
            percent(self.duplicate),
            percent(self.reorder)
        )
    }
}

/// A probability as the percentage typed: `loss 7` is kept as 0.07, which times 100 is
/// 7.000000000000001 in binary floating point; shown to six decimals at most.
fn percent(probability: f64) -> f64 {
    (probability * 100.0 * 1e6).round() / 1e6
}

/// Counters of what the conditioner did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConditionerStats {
    pub dropped: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub delayed: u64,
}

struct Held {
    release: Instant,
    order: u64,
    node: Node,
    data: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.release, self.order) == (other.release, other.order)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.release, self.order).cmp(&(other.release, other.order))
    }
}

/// One direction's conditioner.
pub struct Conditioner {
    conditions: Conditions,
    held: BinaryHeap<Reverse<Held>>,
    order: u64,
    rng: Rng,
    stats: ConditionerStats,
}

/// Most datagrams held at once (beyond this, new ones are dropped and counted).
const MAX_HELD: usize = 16_384;

impl Conditioner {
    pub fn new(seed: u64) -> Conditioner {
        Conditioner {
            conditions: Conditions::default(),
            held: BinaryHeap::new(),
            order: 0,
            rng: Rng::new(seed),
            stats: ConditionerStats::default(),
        }
    }

    pub fn conditions(&self) -> Conditions {
        self.conditions
    }

    pub fn set(&mut self, conditions: Conditions) {
        self.conditions = conditions;
    }

    pub fn is_off(&self) -> bool {
        self.conditions.is_off() && self.held.is_empty()
    }

    pub fn stats(&self) -> &ConditionerStats {
        &self.stats
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Take a datagram in: it is dropped, or held (once or twice) until its release time.
    pub fn push(&mut self, now: Instant, node: Node, mut data: Vec<u8>) {
        let c = self.conditions;
        if self.rng.chance(c.loss) {
            self.stats.dropped += 1;
            return;
        }
        let copies = if self.rng.chance(c.duplicate) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for copy in 0..copies {
            if self.held.len() >= MAX_HELD {
                self.stats.dropped += 1;
                return;
            }
            // The duplicate (if any) is a copy; the last one takes the original bytes.
            let bytes = if copy + 1 == copies {
                std::mem::take(&mut data)
            } else {
                data.clone()
            };
            let mut delay = c.lag + self.rng.duration(c.jitter);
            if self.rng.chance(c.reorder) {
                self.stats.reordered += 1;
                delay += c.lag + c.jitter + Duration::from_millis(1);
            }
            if !delay.is_zero() {
                self.stats.delayed += 1;
            }
            self.order += 1;
            self.held.push(Reverse(Held {
                release: now + delay,
                order: self.order,
                node,
                data: bytes,
            }));
        }
    }

    /// The next datagram whose release time has come.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Node, Vec<u8>)> {
        if self.held.peek().is_some_and(|Reverse(h)| h.release <= now) {
            let Reverse(held) = self.held.pop().expect("peeked");
            return Some((held.node, held.data));
        }
        None
    }

    /// Take every held datagram at once, in release order (a switch must not lose them).
    pub fn drain_all(&mut self) -> Vec<(Node, Vec<u8>)> {
        let mut all = Vec::with_capacity(self.held.len());
        while let Some(Reverse(held)) = self.held.pop() {
            all.push((held.node, held.data));
        }
        all
    }

    /// When the next held datagram is due.
    pub fn next_release(&self) -> Option<Instant> {
        self.held.peek().map(|Reverse(h)| h.release)
    }

    /// When the last datagram held now is due (None: nothing is held).
    pub fn last_release(&self) -> Option<Instant> {
        self.held.iter().map(|Reverse(h)| h.release).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_in_any_order_and_refuses_bad_values() {
        let c = Conditions::parse("loss 20 lag 50 jitter 10 dup 5 reorder 3").unwrap();
        assert_eq!(c.lag, Duration::from_millis(50));
        assert_eq!(c.jitter, Duration::from_millis(10));
        assert!(
            (c.loss - 0.2).abs() < 1e-9
                && (c.duplicate - 0.05).abs() < 1e-9
                && (c.reorder - 0.03).abs() < 1e-9
        );
        assert_eq!(Conditions::parse("off").unwrap(), Conditions::default());
        for bad in [
            "",
            "lag",
            "lag x",
            "loss 101",
            "lag -1",
            "speed 3",
            "lag 20000",
            "lag NaN",
        ] {
            assert!(Conditions::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            c.to_string(),
            "lag 50 ms jitter 10 ms loss 20% dup 5% reorder 3%"
        );
        // Shown as typed, not as the nearest binary fraction times 100 (7.000000000000001%).
        let c = Conditions::parse("loss 7 dup 0.5 reorder 14").unwrap();
        assert_eq!(
            c.to_string(),
            "lag 0 ms jitter 0 ms loss 7% dup 0.5% reorder 14%"
        );
    }

    #[test]
    fn delays_drops_duplicates_and_reorders() {
        let start = Instant::now();
        let mut c = Conditioner::new(7);
        c.set(Conditions {
            lag: Duration::from_millis(30),
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
        });
        c.push(start, Node::default(), vec![1]);
        assert!(c.pop_due(start + Duration::from_millis(29)).is_none());
        assert_eq!(
            c.pop_due(start + Duration::from_millis(30)).map(|(_, d)| d),
            Some(vec![1])
        );
        c.set(Conditions {
            loss: 0.3,
            duplicate: 0.2,
            reorder: 0.2,
            lag: Duration::from_millis(5),
            jitter: Duration::from_millis(5),
        });
        for i in 0..1000u32 {
            c.push(start, Node::default(), i.to_be_bytes().to_vec());
        }
        let mut out = Vec::new();
        while let Some((_, d)) = c.pop_due(start + Duration::from_secs(1)) {
            out.push(u32::from_be_bytes(d.try_into().unwrap()));
        }
        let s = c.stats();
        assert!(s.dropped > 200 && s.dropped < 400, "{s:?}");
        assert!(s.duplicated > 80, "{s:?}");
        assert_eq!(out.len() as u64, 1000 - s.dropped + s.duplicated);
        assert!(
            out.windows(2).any(|w| w[0] > w[1]),
            "some datagrams were reordered"
        );
    }
}
