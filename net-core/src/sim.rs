//! A deterministic network simulator for sans-IO endpoints (tests and benchmarks only): virtual
//! time, per-link latency, jitter, loss, duplication and reordering, partitions, broadcast,
//! endpoints started and crashed at chosen instants. Same seed, same run.
//!
//! It never sleeps, never reads a clock after construction, and never touches a socket.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::Node;

/// Something that lives on a simulated node: a sans-IO protocol machine or a test double.
pub trait Endpoint {
    /// A datagram arrived.
    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]);
    /// The time returned by `poll_timeout` has come.
    fn handle_timeout(&mut self, now: Instant);
    /// The next datagram to send, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit>;
    /// When `handle_timeout` wants to be called next.
    fn poll_timeout(&self) -> Option<Instant>;
}

/// A datagram an endpoint wants sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub to: Node,
    pub data: Vec<u8>,
}

/// How a directed link behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkProfile {
    pub latency: Duration,
    /// Extra delay, uniform in 0..=jitter (reorders datagrams when larger than their spacing).
    pub jitter: Duration,
    /// Probability a datagram is lost (0.0-1.0).
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
}

impl Default for LinkProfile {
    fn default() -> Self {
        LinkProfile {
            latency: Duration::from_millis(10),
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
        }
    }
}

/// The node value of simulated node `index` (byte order gives a total order by index).
pub fn node(index: usize) -> Node {
    let mut n = Node::default();
    n.bytes[0] = b'S';
    n.bytes[1..3].copy_from_slice(&(index as u16).to_be_bytes());
    n
}

/// The broadcast node of the simulated network.
pub fn broadcast_node() -> Node {
    let mut n = Node::default();
    n.bytes[0] = b'S';
    n.bytes[1] = 0xFF;
    n.bytes[2] = 0xFF;
    n
}

/// Index of a simulated node value, if it is one.
pub fn node_index(n: &Node) -> Option<usize> {
    (n.bytes[0] == b'S' && *n != broadcast_node())
        .then(|| u16::from_be_bytes([n.bytes[1], n.bytes[2]]) as usize)
}

/// Ordering of simulated nodes (bytewise, i.e. by index).
pub fn compare_nodes(a: &Node, b: &Node) -> Ordering {
    a.bytes.cmp(&b.bytes)
}

/// Printable form of a simulated node ("sim:3").
pub fn print_node(n: &Node) -> String {
    match node_index(n) {
        Some(i) => format!("sim:{i}"),
        None if *n == broadcast_node() => "sim:broadcast".to_string(),
        None => format!("{:?}", &n.bytes[..4]),
    }
}

/// A small deterministic PRNG (xorshift64*), so runs depend only on the seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in 0..=max.
    pub fn duration(&mut self, max: Duration) -> Duration {
        if max.is_zero() {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.next_u64() % (max.as_nanos() as u64 + 1))
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[derive(Debug)]
struct InFlight {
    deliver_at: Instant,
    order: u64,
    from: usize,
    to: usize,
    data: Vec<u8>,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.deliver_at, self.order) == (other.deliver_at, other.order)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deliver_at, self.order).cmp(&(other.deliver_at, other.order))
    }
}

/// Counters of what the network did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkStats {
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub partitioned: u64,
    pub to_dead_nodes: u64,
}

/// A simulated network of endpoints.
pub struct Network<E: Endpoint> {
    start: Instant,
    now: Instant,
    endpoints: Vec<Option<E>>,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    order: u64,
    rng: Rng,
    default_profile: LinkProfile,
    profiles: HashMap<(usize, usize), LinkProfile>,
    partitions: HashSet<(usize, usize)>,
    stats: NetworkStats,
    /// Every endpoint was asked for its datagrams at `now` and nothing touched an endpoint
    /// since, so asking again would find nothing (`step` then skips it: polling every endpoint
    /// is most of a simulated step's work).
    collected: bool,
}

impl<E: Endpoint> Network<E> {
    /// An empty network with `nodes` nodes (none started) and a default link profile.
    pub fn new(nodes: usize, seed: u64, default_profile: LinkProfile) -> Network<E> {
        let start = Instant::now();
        Network {
            start,
            now: start,
            endpoints: (0..nodes).map(|_| None).collect(),
            in_flight: BinaryHeap::new(),
            order: 0,
            rng: Rng::new(seed),
            default_profile,
            profiles: HashMap::new(),
            partitions: HashSet::new(),
            stats: NetworkStats::default(),
            collected: false,
        }
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// Virtual time since the network was created.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    pub fn stats(&self) -> &NetworkStats {
        &self.stats
    }

    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    pub fn len(&self) -> usize {
        self.endpoints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    /// Add a node (not started); returns its index.
    pub fn add_node(&mut self) -> usize {
        self.collected = false;
        self.endpoints.push(None);
        self.endpoints.len() - 1
    }

    /// Put an endpoint on node `index` (starting it, or restarting it after a crash).
    pub fn start(&mut self, index: usize, endpoint: E) {
        self.collected = false;
        self.endpoints[index] = Some(endpoint);
    }

    /// Remove the endpoint of node `index` without it sending anything (a crash). Returns it.
    pub fn crash(&mut self, index: usize) -> Option<E> {
        self.collected = false;
        self.endpoints[index].take()
    }

    pub fn is_running(&self, index: usize) -> bool {
        self.endpoints[index].is_some()
    }

    pub fn endpoint(&self, index: usize) -> Option<&E> {
        self.endpoints[index].as_ref()
    }

    pub fn endpoint_mut(&mut self, index: usize) -> Option<&mut E> {
        self.collected = false;
        self.endpoints[index].as_mut()
    }

    /// Running endpoints with their indices.
    pub fn running(&self) -> impl Iterator<Item = (usize, &E)> {
        self.endpoints
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    /// Set the profile of the directed link `from -> to`.
    pub fn set_profile(&mut self, from: usize, to: usize, profile: LinkProfile) {
        self.profiles.insert((from, to), profile);
    }

    /// Cut (or restore) both directions between `a` and `b`.
    pub fn partition(&mut self, a: usize, b: usize, cut: bool) {
        for pair in [(a, b), (b, a)] {
            if cut {
                self.partitions.insert(pair);
            } else {
                self.partitions.remove(&pair);
            }
        }
    }

    /// Collect everything the endpoints want to send now and put it on the wire.
    fn collect_transmits(&mut self) {
        for from in 0..self.endpoints.len() {
            loop {
                let now = self.now;
                let Some(transmit) = self.endpoints[from]
                    .as_mut()
                    .and_then(|e| e.poll_transmit(now))
                else {
                    break;
                };
                self.send(from, transmit);
            }
        }
    }

    fn send(&mut self, from: usize, transmit: Transmit) {
        self.stats.sent += 1;
        let targets: Vec<usize> = if transmit.to == broadcast_node() {
            (0..self.endpoints.len()).filter(|&i| i != from).collect()
        } else {
            match node_index(&transmit.to) {
                Some(i) if i < self.endpoints.len() => vec![i],
                _ => {
                    self.stats.to_dead_nodes += 1;
                    return;
                }
            }
        };
        for to in targets {
            if self.partitions.contains(&(from, to)) {
                self.stats.partitioned += 1;
                continue;
            }
            let profile = *self
                .profiles
                .get(&(from, to))
                .unwrap_or(&self.default_profile);
            if self.rng.chance(profile.loss) {
                self.stats.lost += 1;
                continue;
            }
            let copies = if self.rng.chance(profile.duplicate) {
                self.stats.duplicated += 1;
                2
            } else {
                1
            };
            for _ in 0..copies {
                let delay = profile.latency + self.rng.duration(profile.jitter);
                self.order += 1;
                self.in_flight.push(Reverse(InFlight {
                    deliver_at: self.now + delay,
                    order: self.order,
                    from,
                    to,
                    data: transmit.data.clone(),
                }));
            }
        }
    }

    /// The earliest moment something happens: a delivery or an endpoint timeout.
    pub fn next_event(&self) -> Option<Instant> {
        let delivery = self.in_flight.peek().map(|Reverse(f)| f.deliver_at);
        let timeout = self
            .endpoints
            .iter()
            .flatten()
            .filter_map(|e| e.poll_timeout())
            .min();
        match (delivery, timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Advance to the next event (not beyond `limit`) and process everything due then.
    /// Returns false when nothing is scheduled before `limit` (time is then moved to `limit`).
    pub fn step(&mut self, limit: Instant) -> bool {
        if !self.collected {
            self.collect_transmits();
        }
        // Each endpoint's timeout, asked once: an endpoint no datagram reaches in this step
        // still has it when the timeouts are run below.
        let timeouts: Vec<Option<Instant>> = self
            .endpoints
            .iter()
            .map(|e| e.as_ref().and_then(|e| e.poll_timeout()))
            .collect();
        let delivery = self.in_flight.peek().map(|Reverse(f)| f.deliver_at);
        let next = match (delivery, timeouts.iter().flatten().min().copied()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(at) = next.filter(|&t| t <= limit) else {
            if limit > self.now {
                self.now = limit;
                self.collected = false;
            }
            return false;
        };
        self.now = self.now.max(at);
        let now = self.now;
        let mut reached = vec![false; self.endpoints.len()];
        while self
            .in_flight
            .peek()
            .is_some_and(|Reverse(f)| f.deliver_at <= now)
        {
            let Reverse(flight) = self.in_flight.pop().expect("peeked");
            match self.endpoints[flight.to].as_mut() {
                Some(endpoint) => {
                    self.stats.delivered += 1;
                    reached[flight.to] = true;
                    endpoint.handle_datagram(now, node(flight.from), &flight.data);
                }
                None => self.stats.to_dead_nodes += 1,
            }
        }
        for (i, endpoint) in self.endpoints.iter_mut().enumerate() {
            let Some(endpoint) = endpoint else { continue };
            let timeout = if reached[i] {
                endpoint.poll_timeout()
            } else {
                timeouts[i]
            };
            if timeout.is_some_and(|t| t <= now) {
                endpoint.handle_timeout(now);
            }
        }
        self.collect_transmits();
        self.collected = true;
        true
    }

    /// Run until virtual time `until`, calling `check` after every step (for invariants).
    pub fn run_until(&mut self, until: Instant, mut check: impl FnMut(&Self)) {
        while self.step(until) {
            check(self);
        }
        check(self);
    }

    /// Run for `duration` of virtual time.
    pub fn run_for(&mut self, duration: Duration) {
        let until = self.now + duration;
        self.run_until(until, |_| {});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echoes every datagram back once and counts what it got.
    struct Echo {
        got: Vec<Vec<u8>>,
        out: Vec<Transmit>,
    }

    impl Endpoint for Echo {
        fn handle_datagram(&mut self, _now: Instant, from: Node, data: &[u8]) {
            self.got.push(data.to_vec());
            if data[0] == b'?' {
                self.out.push(Transmit {
                    to: from,
                    data: b"!".to_vec(),
                });
            }
        }
        fn handle_timeout(&mut self, _now: Instant) {}
        fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
            self.out.pop()
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
    }

    fn echo() -> Echo {
        Echo {
            got: Vec::new(),
            out: Vec::new(),
        }
    }

    #[test]
    fn delivers_after_latency_and_replies_come_back() {
        let mut net = Network::new(2, 1, LinkProfile::default());
        net.start(0, echo());
        net.start(1, echo());
        net.endpoint_mut(0).unwrap().out.push(Transmit {
            to: node(1),
            data: b"?".to_vec(),
        });
        net.run_for(Duration::from_millis(100));
        assert_eq!(net.endpoint(1).unwrap().got, vec![b"?".to_vec()]);
        assert_eq!(net.endpoint(0).unwrap().got, vec![b"!".to_vec()]);
        assert_eq!(net.elapsed(), Duration::from_millis(100));
    }

    #[test]
    fn broadcast_reaches_every_other_running_node_and_partitions_cut() {
        let mut net = Network::new(4, 2, LinkProfile::default());
        for i in 0..3 {
            net.start(i, echo());
        }
        net.partition(0, 2, true);
        net.endpoint_mut(0).unwrap().out.push(Transmit {
            to: broadcast_node(),
            data: b"x".to_vec(),
        });
        net.run_for(Duration::from_millis(50));
        assert_eq!(net.endpoint(1).unwrap().got.len(), 1);
        assert!(net.endpoint(2).unwrap().got.is_empty());
        assert_eq!(net.stats().partitioned, 1);
        assert_eq!(net.stats().to_dead_nodes, 1, "node 3 is not running");
    }

    #[test]
    fn same_seed_same_run() {
        let run = |seed| {
            let profile = LinkProfile {
                loss: 0.3,
                duplicate: 0.2,
                jitter: Duration::from_millis(30),
                ..Default::default()
            };
            let mut net = Network::new(2, seed, profile);
            net.start(0, echo());
            net.start(1, echo());
            for i in 0..200u8 {
                net.endpoint_mut(0).unwrap().out.push(Transmit {
                    to: node(1),
                    data: vec![i],
                });
            }
            net.run_for(Duration::from_secs(1));
            (net.endpoint(1).unwrap().got.clone(), net.stats().clone())
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7).0, run(8).0);
        let (got, stats) = run(7);
        assert!(stats.lost > 20 && stats.duplicated > 10, "{stats:?}");
        assert_eq!(got.len() as u64, stats.delivered);
    }
}
