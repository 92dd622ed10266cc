//! Two links (sans-IO reliable channels) over the simulated network: under loss, duplication and
//! reordering, reliable events arrive exactly once and in order, unreliable state converges to
//! the latest, duplicates and stale packets are discarded, and RTT and loss are measured.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use net_core::rmev::{CustomData, RemoteEvent, ShipState};
use net_core::session::{Delivery, Link, LinkConfig, PacketMeta};
use net_core::sim::{self, Endpoint, LinkProfile, Network, Transmit};
use net_core::wire::{decode_packet, PacketType, WireEvent};
use net_core::Node;

/// One side: a link to the other node, sending a packet every tick and whenever the link has
/// something to say, and recording what it delivers.
struct LinkEndpoint {
    link: Link,
    peer: Node,
    token: u32,
    tick: Duration,
    next_tick: Instant,
    tick_pending: bool,
    moving: bool,
    burst_at: Option<Instant>,
    burst_count: u32,
    state: ShipState,
    delivered: Vec<u32>,
    unreliable: Vec<u32>,
    latest_state: Option<ShipState>,
    decode_scratch: Vec<WireEvent>,
    decode_errors: u32,
    pending_new: VecDeque<RemoteEvent>,
}

impl LinkEndpoint {
    fn new(peer: Node, token: u32, now: Instant) -> LinkEndpoint {
        LinkEndpoint {
            link: Link::new(LinkConfig::default()),
            peer,
            token,
            tick: Duration::from_millis(20),
            next_tick: now,
            tick_pending: false,
            moving: true,
            burst_at: None,
            burst_count: 0,
            state: ShipState::default(),
            delivered: Vec::new(),
            unreliable: Vec::new(),
            latest_state: None,
            decode_scratch: Vec::new(),
            decode_errors: 0,
            pending_new: VecDeque::new(),
        }
    }

    /// Feed queued events to the link a few hundred at a time (as a game would over frames).
    fn feed(&mut self) {
        for _ in 0..200 {
            match self.pending_new.pop_front() {
                Some(ev) => assert!(self.link.queue_event(ev)),
                None => break,
            }
        }
    }
}

fn meta(token: u32) -> PacketMeta {
    PacketMeta {
        kind: PacketType::GameState,
        sender_slot: Some(0),
        joined: true,
        token,
        relay: false,
    }
}

fn custom(seq: u32, reliable: bool) -> RemoteEvent {
    RemoteEvent::Custom {
        custom_type: 7,
        data: CustomData::new(&seq.to_be_bytes()).unwrap(),
        reliable,
    }
}

fn seq_of(event: &RemoteEvent) -> u32 {
    match event {
        RemoteEvent::Custom { data, .. } => u32::from_be_bytes(data.as_bytes().try_into().unwrap()),
        other => panic!("unexpected event {other:?}"),
    }
}

impl Endpoint for LinkEndpoint {
    fn handle_datagram(&mut self, now: Instant, _from: Node, data: &[u8]) {
        let mut events = std::mem::take(&mut self.decode_scratch);
        match decode_packet(data, &mut events) {
            Ok(packet) => {
                let (delivered, unreliable, latest) = (
                    &mut self.delivered,
                    &mut self.unreliable,
                    &mut self.latest_state,
                );
                self.link.handle_packet(
                    now,
                    &packet.header,
                    packet.state.as_ref(),
                    &events,
                    &mut |d| match d {
                        Delivery::State { state, .. } => *latest = Some(state),
                        Delivery::Event { event, .. } if event.is_reliable() => {
                            delivered.push(seq_of(&event))
                        }
                        Delivery::Event { event, .. } => unreliable.push(seq_of(&event)),
                    },
                );
            }
            Err(_) => self.decode_errors += 1,
        }
        self.decode_scratch = events;
    }

    fn handle_timeout(&mut self, now: Instant) {
        if now >= self.next_tick {
            self.next_tick = now + self.tick;
            self.tick_pending = true;
            if self.moving {
                self.state.pos[0] += 1.0;
            }
            self.feed();
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let tick_due = std::mem::take(&mut self.tick_pending);
        if self.burst_at != Some(now) {
            self.burst_at = Some(now);
            self.burst_count = 0;
        }
        // A packet per tick, plus up to 4 more at the same instant when the link has data.
        let wants = self.link.wants_to_send(now) && self.burst_count < 4;
        if !(tick_due || wants) {
            return None;
        }
        self.burst_count += 1;
        let mut buf = [0u8; 1400];
        let len = self
            .link
            .write_packet(now, &mut buf, meta(self.token), Some(&self.state))
            .expect("encode");
        Some(Transmit {
            to: self.peer,
            data: buf[..len].to_vec(),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let retransmit = self.link.next_retransmit(self.next_tick);
        Some(retransmit.map_or(self.next_tick, |t| t.min(self.next_tick)))
    }
}

fn run(seed: u64, profile: LinkProfile, events: u32) -> Network<LinkEndpoint> {
    let mut net = Network::new(2, seed, profile);
    let now = net.now();
    let mut a = LinkEndpoint::new(sim::node(1), 11, now);
    let b = LinkEndpoint::new(sim::node(0), 22, now);
    for seq in 1..=events {
        a.pending_new.push_back(custom(seq, true));
        if seq % 10 == 0 {
            a.pending_new.push_back(custom(seq, false));
        }
    }
    net.start(0, a);
    net.start(1, b);
    let deadline = now + Duration::from_secs(600);
    while net.now() < deadline {
        net.run_for(Duration::from_millis(500));
        let a = net.endpoint(0).unwrap();
        let b = net.endpoint(1).unwrap();
        if a.pending_new.is_empty()
            && a.link.unacknowledged() == 0
            && b.delivered.len() as u32 >= events
        {
            break;
        }
    }
    // The ship stops; its last state must reach the other side despite loss and reordering.
    net.endpoint_mut(0).unwrap().moving = false;
    net.run_for(Duration::from_secs(2));
    net
}

#[test]
fn ten_thousand_reliable_events_arrive_exactly_once_in_order_under_loss_duplication_and_reordering()
{
    let profile = LinkProfile {
        latency: Duration::from_millis(20),
        jitter: Duration::from_millis(40),
        loss: 0.20,
        duplicate: 0.05,
    };
    for seed in [1, 2, 3] {
        let net = run(seed, profile, 10_000);
        let a = net.endpoint(0).unwrap();
        let b = net.endpoint(1).unwrap();
        assert_eq!(b.delivered.len(), 10_000, "seed {seed}: all delivered");
        assert!(
            b.delivered.iter().copied().eq(1..=10_000),
            "seed {seed}: exactly once, in order"
        );
        assert_eq!(
            a.link.unacknowledged(),
            0,
            "seed {seed}: everything acknowledged"
        );
        // The network really did lose, duplicate and reorder.
        let stats = net.stats();
        assert!(
            stats.lost > 100 && stats.duplicated > 20,
            "seed {seed}: {stats:?}"
        );
        assert!(
            b.link.stats().duplicate_packets > 0,
            "seed {seed}: duplicates were seen and discarded"
        );
        assert!(a.link.stats().retransmissions > 0, "seed {seed}");
        // State converges to the latest.
        assert_eq!(b.latest_state, Some(a.state), "seed {seed}: latest state");
        assert!(
            b.link.stats().outdated_states > 0,
            "seed {seed}: reordered older states were dropped"
        );
        // Unreliable events: at most once, never duplicated, in increasing order when they come.
        assert!(
            b.unreliable.windows(2).all(|w| w[0] != w[1]),
            "seed {seed}: no duplicate unreliable events"
        );
        // Loss and RTT are measured from acknowledgements.
        let loss = a.link.loss();
        assert!(
            (0.05..0.6).contains(&loss),
            "seed {seed}: measured loss {loss}"
        );
        let rtt = a.link.rtt().expect("rtt measured");
        assert!(rtt >= Duration::from_millis(40), "seed {seed}: rtt {rtt:?}");
        assert_eq!(a.decode_errors + b.decode_errors, 0);
    }
}

#[test]
fn a_clean_link_delivers_everything_without_retransmitting() {
    let profile = LinkProfile {
        latency: Duration::from_millis(10),
        ..Default::default()
    };
    let net = run(9, profile, 2_000);
    let a = net.endpoint(0).unwrap();
    let b = net.endpoint(1).unwrap();
    assert!(b.delivered.iter().copied().eq(1..=2_000));
    assert_eq!(
        b.unreliable.len(),
        200,
        "no loss: every unreliable event arrives"
    );
    assert_eq!(a.link.stats().retransmissions, 0);
    assert_eq!(a.link.loss(), 0.0);
    let rtt = a.link.rtt().unwrap();
    assert!(
        rtt >= Duration::from_millis(20) && rtt < Duration::from_millis(80),
        "{rtt:?}"
    );
}

#[test]
fn replayed_and_very_old_packets_are_discarded_whole() {
    let now = Instant::now();
    let mut a = Link::new(LinkConfig::default());
    let mut b = Link::new(LinkConfig::default());
    let mut packets = Vec::new();
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    let mut feed = |b: &mut Link, bytes: &[u8], got: &mut Vec<u32>| {
        let packet = decode_packet(bytes, &mut scratch).unwrap();
        b.handle_packet(now, &packet.header, None, &scratch, &mut |d| {
            if let Delivery::Event { event, .. } = d {
                got.push(seq_of(&event));
            }
        })
    };
    // Each packet arrives and is acknowledged (a link keeps at most 32 packets of reliable
    // events unacknowledged).
    for seq in 1..=40u32 {
        a.queue_event(custom(seq, true));
        let mut buf = [0u8; 1400];
        let len = a.write_packet(now, &mut buf, meta(5), None).unwrap();
        packets.push(buf[..len].to_vec());
        feed(&mut b, &buf[..len], &mut got);
        let len = b.write_packet(now, &mut buf, meta(6), None).unwrap();
        let mut events = Vec::new();
        let packet = decode_packet(&buf[..len], &mut events).unwrap();
        a.handle_packet(now, &packet.header, None, &events, &mut |_| {});
    }
    use net_core::session::PacketVerdict;
    assert_eq!(
        feed(&mut b, &packets[39], &mut got),
        PacketVerdict::Duplicate,
        "replay of the newest"
    );
    assert_eq!(
        feed(&mut b, &packets[20], &mut got),
        PacketVerdict::Duplicate,
        "replay within the ack window"
    );
    assert_eq!(
        feed(&mut b, &packets[2], &mut got),
        PacketVerdict::Stale,
        "older than the ack window"
    );
    assert!(
        got.iter().copied().eq(1..=40),
        "nothing delivered twice: {got:?}"
    );
    assert_eq!(b.stats().duplicate_packets, 2);
    assert_eq!(b.stats().stale_packets, 1);
}

/// Write `from`'s next packet at `now` and hand it to `to` at `arrives`.
fn carry(from: &mut Link, to: &mut Link, now: Instant, arrives: Instant) {
    let mut buf = [0u8; 1400];
    let state = ShipState::default();
    let len = from
        .write_packet(now, &mut buf, meta(5), Some(&state))
        .unwrap();
    let mut scratch = Vec::new();
    let packet = decode_packet(&buf[..len], &mut scratch).unwrap();
    to.handle_packet(
        arrives,
        &packet.header,
        packet.state.as_ref(),
        &scratch,
        &mut |_| {},
    );
}

#[test]
fn rtt_comes_from_promptly_acknowledged_packets_not_from_state_acknowledged_at_leisure() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut a = Link::new(LinkConfig::default());
    let mut b = Link::new(LinkConfig::default());
    // A sends state alone; B, idle, acknowledges it with its keepalive half a second later.
    carry(&mut a, &mut b, t0, t0 + ms(10));
    assert!(
        !b.wants_to_send(t0 + ms(10)),
        "state alone owes no prompt ack"
    );
    carry(&mut b, &mut a, t0 + ms(500), t0 + ms(510));
    assert_eq!(
        a.stats().packets_acked,
        1,
        "the state packet was acknowledged"
    );
    assert_eq!(a.rtt(), None, "510 ms of B's leisure is not a round trip");
    // A reliable event owes an acknowledgement at once: that one measures the path.
    let t1 = t0 + ms(1000);
    assert!(a.queue_event(custom(1, true)));
    carry(&mut a, &mut b, t1, t1 + ms(10));
    assert!(b.wants_to_send(t1 + ms(10)), "a reliable event owes an ack");
    carry(&mut b, &mut a, t1 + ms(10), t1 + ms(20));
    assert_eq!(a.rtt(), Some(ms(20)));
    // A later leisurely acknowledgement of state does not drag the estimate up.
    carry(&mut a, &mut b, t1 + ms(100), t1 + ms(110));
    carry(&mut b, &mut a, t1 + ms(600), t1 + ms(610));
    assert_eq!(a.stats().packets_acked, 3);
    assert_eq!(a.rtt(), Some(ms(20)));
}
