//! A peer-to-peer node in the network simulator (`net_core::sim`): the peer protocol machine
//! plus the events it gave the game, shared by the simulated peer tests.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::protocol::peer::{PeerProtocol, PeerTimings};
use net_core::protocol::{ClientProtocol, ConnectParams};
use net_core::rmev::PlayerName;
use net_core::session::{GameEvent, NodeSameHost, ResumeState, SessionConfig};
use net_core::sim::{self, Endpoint, Rng, Transmit};
use net_core::Node;

use super::sim_log;

/// A datagram that waits in a frozen node's socket: its sender and bytes.
type Waiting = (Node, Vec<u8>);

pub struct PeerNode {
    pub proto: PeerProtocol,
    /// The simulated network node (address) it uses.
    pub index: usize,
    pub events: Vec<GameEvent>,
    /// Datagrams a test puts on the wire from this node (sent before the protocol's own).
    pub outbox: VecDeque<Transmit>,
    /// The session settings its next connect uses (`net.timeout` and the like).
    pub session_config: SessionConfig,
    /// Which simulated nodes are on one host (its next connect uses it): by default every
    /// node is a host of its own.
    pub same_host: NodeSameHost,
    /// While its process is stopped inside a frame (see `freeze`): the clock that frame read,
    /// and the datagrams that wait in its socket meanwhile.
    frozen: Option<(Instant, Vec<Waiting>)>,
    buf: Vec<u8>,
}

impl PeerNode {
    pub fn new(index: usize) -> PeerNode {
        PeerNode {
            proto: PeerProtocol::new(PeerTimings::default()),
            index,
            events: Vec::new(),
            outbox: VecDeque::new(),
            session_config: SessionConfig::default(),
            same_host: Arc::new(|a: &Node, b: &Node| a == b),
            frozen: None,
            buf: vec![0; 1400],
        }
    }

    pub fn drain(&mut self) {
        while let Some(event) = self.proto.poll_event() {
            self.events.push(event);
        }
    }

    pub fn connect(&mut self, now: Instant, token: u32) {
        self.connect_resuming(now, token, None);
    }

    /// Connect, picking up what an earlier session left (a backend switch).
    pub fn connect_resuming(&mut self, now: Instant, token: u32, resume: Option<ResumeState>) {
        self.connect_with(now, token, None, resume);
    }

    /// Connect by sending the requests to the node of one player (`connect HOST:PORT`), not by
    /// broadcast.
    pub fn connect_to(&mut self, now: Instant, token: u32, target: usize) {
        self.connect_with(now, token, Some(sim::node(target)), None);
    }

    fn connect_with(
        &mut self,
        now: Instant,
        token: u32,
        target: Option<Node>,
        resume: Option<ResumeState>,
    ) {
        sim_log::enter(self.index, now);
        sim_log::log_line(&format!(
            "connect as token {token:x} to {:?}, resuming: {}",
            target.as_ref().and_then(sim::node_index),
            resume.is_some()
        ));
        let params = ConnectParams {
            target,
            broadcast: Some(sim::broadcast_node()),
            local_node: sim::node(self.index),
            name: PlayerName::new(format!("p{}", self.index).as_bytes()).unwrap(),
            token,
            order: Arc::new(sim::compare_nodes),
            same_host: Arc::clone(&self.same_host),
            session: self.session_config,
            server: None,
            game_port: 0,
            resolve: Arc::new(|_, _| None),
            resume: resume.map(Arc::new),
        };
        self.proto.connect(now, params).expect("connect starts");
    }

    /// Stop the process in the middle of a frame, after the frame read the clock (`now`) and
    /// before it received: nothing runs and nothing is sent until `thaw`, and what arrives
    /// waits in the socket.
    pub fn freeze(&mut self, now: Instant) {
        self.frozen = Some((now, Vec::new()));
    }

    /// Wake the process: the stopped frame goes on with the clock it read before the stop, so
    /// it reads everything that waited with that time, runs its timers and sends; the frames
    /// after it read the clock again.
    pub fn thaw(&mut self) {
        let Some((then, waiting)) = self.frozen.take() else {
            return;
        };
        sim_log::enter(self.index, then);
        for (from, data) in waiting {
            sim_log::packet("<- (waited)", &from, &data);
            self.proto.handle_datagram(then, from, &data);
        }
        if self.proto.poll_timeout().is_some_and(|t| t <= then) {
            self.proto.handle_timeout(then);
        }
        self.drain();
    }

    pub fn slot(&self) -> Option<u8> {
        self.proto.session().map(|s| s.my_slot())
    }

    pub fn token(&self) -> Option<u32> {
        self.proto.session().map(|s| s.my_token())
    }

    pub fn errors(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                GameEvent::Error { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl Endpoint for PeerNode {
    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]) {
        if let Some((_, waiting)) = self.frozen.as_mut() {
            waiting.push((from, data.to_vec()));
            return;
        }
        sim_log::enter(self.index, now);
        sim_log::packet("<-", &from, data);
        self.proto.handle_datagram(now, from, data);
        self.drain();
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.frozen.is_some() {
            return;
        }
        sim_log::enter(self.index, now);
        self.proto.handle_timeout(now);
        self.drain();
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.frozen.is_some() {
            return None;
        }
        sim_log::enter(self.index, now);
        if let Some(transmit) = self.outbox.pop_front() {
            sim_log::packet("-> (test)", &transmit.to, &transmit.data);
            return Some(transmit);
        }
        let (to, len) = self.proto.poll_transmit(now, &mut self.buf)?;
        sim_log::packet("->", &to, &self.buf[..len]);
        Some(Transmit {
            to,
            data: self.buf[..len].to_vec(),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.frozen.is_some() {
            return None;
        }
        self.proto.poll_timeout()
    }
}

pub fn random_token(rng: &mut Rng) -> u32 {
    loop {
        let t = rng.next_u64() as u32;
        if t != 0 {
            return t;
        }
    }
}

/// Every running peer is in the game and sees all the others (`expected` in all) in the slots
/// they hold, under their tokens.
pub fn everyone_agrees(net: &sim::Network<PeerNode>, expected: usize) -> bool {
    let peers: Vec<&PeerNode> = net.running().map(|(_, p)| p).collect();
    if peers.len() != expected || peers.iter().any(|p| p.slot().is_none()) {
        return false;
    }
    peers.iter().all(|p| {
        let session = p.proto.session().unwrap();
        session.players().len() == expected - 1
            && peers.iter().filter(|o| o.index != p.index).all(|o| {
                session
                    .players()
                    .get(o.slot().unwrap())
                    .is_some_and(|pl| Some(pl.token) == o.token())
            })
    })
}

/// Start peers `(index, target)` 40 ms apart, each connecting to its target's address (token
/// 0x100 + index), and run until 10 s after the first started.
pub fn start_by_address(net: &mut sim::Network<PeerNode>, peers: &[(usize, usize)]) {
    let start = net.now();
    for (n, &(i, target)) in peers.iter().enumerate() {
        let mut node = PeerNode::new(i);
        node.connect_to(net.now(), 0x100 + i as u32, target);
        net.start(i, node);
        net.run_until(start + Duration::from_millis(40 * (n as u64 + 1)), |_| {});
    }
    net.run_until(start + Duration::from_secs(10), |_| {});
}
