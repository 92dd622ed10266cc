//! A burst of large reliable events, sans-IO and deterministic: two joined mesh sessions in the
//! network simulator (virtual time), one queues ~250 reliable 256-byte custom events in one
//! frame. The acknowledgement header covers the latest sequence and the 32 before it, and the
//! receiver reads a whole burst in one frame and answers once, so a link must not have more
//! packets with unacknowledged reliable events in flight than that: it used to send the whole
//! burst at once (about 125 packets of the IPX payload, 50 of the UDP one), every packet older
//! than the last 33 was counted as lost though it arrived, and its events were sent again
//! (`status` showed loss 24% on UDP and 55-64% on IPX on a lossless LAN).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::rmev::{CustomData, PlayerName, RemoteEvent, ShipState};
use net_core::session::{
    GameEvent, LinkStats, LocalPlayer, NodeEq, Session, SessionConfig, RELIABLE_PACKET_WINDOW,
};
use net_core::sim::{self, Endpoint, LinkProfile, Network, Transmit};
use net_core::wire::decode_packet;
use net_core::Node;
use support::sessions::transmit;

/// The payloads of the two built-in backends: IPX and UDP.
const IPX_PAYLOAD: usize = 546;
const UDP_PAYLOAD: usize = 1400;
const BURST: u32 = 250;
const FRAME: Duration = Duration::from_millis(16);

/// A mesh session on a simulated node, keeping what it delivered to the game.
struct SessionNode {
    session: Session,
    got: Vec<GameEvent>,
    buf: Vec<u8>,
    /// The game's next frame: the ship moves a little (the state changes every frame).
    next_frame: Instant,
    frame: u32,
}

impl SessionNode {
    fn new(slot: u8, payload: usize, now: Instant) -> SessionNode {
        let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
        let config = SessionConfig {
            max_payload: payload,
            ..SessionConfig::default()
        };
        let session = Session::new_mesh(
            config,
            node_eq,
            LocalPlayer {
                slot,
                token: 0x100 + u32::from(slot),
                name: PlayerName::new(format!("p{slot}").as_bytes()).unwrap(),
            },
            now,
        );
        SessionNode {
            session,
            got: Vec::new(),
            buf: vec![0; payload],
            next_frame: now,
            frame: 0,
        }
    }

    /// The numbers of the burst's events the game got, in order.
    fn numbers(&self) -> Vec<u32> {
        self.got
            .iter()
            .filter_map(|e| match e {
                GameEvent::Remote {
                    event: RemoteEvent::Custom { data, .. },
                    ..
                } => Some(u32::from_be_bytes(data.as_bytes()[..4].try_into().unwrap())),
                _ => None,
            })
            .collect()
    }

    fn link_stats(&self, slot: u8) -> LinkStats {
        self.session.link(slot).expect("a link").stats().clone()
    }
}

impl Endpoint for SessionNode {
    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]) {
        let mut events = Vec::new();
        let packet = decode_packet(data, &mut events).expect("a session's packet decodes");
        self.session
            .handle_packet(now, &from, &packet, &events)
            .expect("taken");
        while let Some(event) = self.session.poll_event() {
            self.got.push(event);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if now >= self.next_frame {
            self.frame += 1;
            let mut state = ShipState::default();
            state.pos[0] = self.frame as f32;
            self.session.set_local_state(state);
            self.next_frame = now + FRAME;
        }
        self.session.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        transmit(&mut self.session, now, &mut self.buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let session = self.session.poll_timeout();
        Some(session.map_or(self.next_frame, |t| t.min(self.next_frame)))
    }
}

/// Reliable 256-byte custom event number `n`.
fn large(n: u32) -> RemoteEvent {
    let mut data = [0xA5u8; 256];
    data[..4].copy_from_slice(&n.to_be_bytes());
    RemoteEvent::Custom {
        custom_type: 9,
        data: CustomData::new(&data).unwrap(),
        reliable: true,
    }
}

/// Two joined players (node 0 in slot 0, node 1 in slot 1) that found each other and settled
/// (resume hellos answered, states flowing).
fn two_players(payload: usize, seed: u64, profile: LinkProfile) -> Network<SessionNode> {
    let mut net: Network<SessionNode> = Network::new(2, seed, profile);
    let now = net.now();
    for (me, other) in [(0u8, 1u8), (1, 0)] {
        let mut node = SessionNode::new(me, payload, now);
        node.session.add_player(
            now,
            other,
            sim::node(usize::from(other)),
            0x100 + u32::from(other),
            PlayerName::new(format!("p{other}").as_bytes()).unwrap(),
            true,
        );
        node.session.join().unwrap();
        net.start(usize::from(me), node);
    }
    net.run_for(Duration::from_secs(2));
    net
}

/// Node 0 queues the burst in one frame; returns what node 0's link to node 1 counted before.
fn queue_burst(net: &mut Network<SessionNode>) -> LinkStats {
    let sender = net.endpoint_mut(0).unwrap();
    let before = sender.link_stats(1);
    for n in 0..BURST {
        sender.session.queue_event(large(n)).expect("queued");
    }
    before
}

fn lossless_burst(payload: usize) {
    let mut net = two_players(payload, 1, LinkProfile::default());
    let before = queue_burst(&mut net);
    net.run_for(Duration::from_secs(5));
    let receiver = net.endpoint(1).unwrap();
    assert_eq!(
        receiver.numbers(),
        (0..BURST).collect::<Vec<_>>(),
        "every event once, in order"
    );
    let sender = net.endpoint(0).unwrap();
    let after = sender.link_stats(1);
    assert_eq!(net.stats().lost, 0);
    assert_eq!(
        after.packets_lost - before.packets_lost,
        0,
        "no packet counted lost on a lossless link ({after:?})"
    );
    assert_eq!(
        after.retransmissions - before.retransmissions,
        0,
        "nothing sent twice on a lossless link ({after:?})"
    );
    assert_eq!(after.reliable_sent - before.reliable_sent, u64::from(BURST));
    let link = sender.session.link(1).unwrap();
    assert_eq!(link.loss(), 0.0, "status shows no loss");
    assert_eq!(link.unacknowledged(), 0, "all acknowledged");
    // The other way too: the receiver's packets were all acknowledged.
    assert_eq!(receiver.link_stats(0).packets_lost, 0);
}

#[test]
fn a_burst_of_large_reliable_events_over_ipx_payloads_is_sent_once_and_counts_no_loss() {
    lossless_burst(IPX_PAYLOAD);
}

#[test]
fn a_burst_of_large_reliable_events_over_udp_payloads_is_sent_once_and_counts_no_loss() {
    lossless_burst(UDP_PAYLOAD);
}

/// A state-only packet is never held back by a full window: while the burst waits for
/// acknowledgements, the receiver still gets the sender's newest state every tick.
#[test]
fn states_keep_flowing_while_the_burst_waits_for_acknowledgements() {
    let profile = LinkProfile {
        latency: Duration::from_millis(100),
        ..LinkProfile::default()
    };
    let mut net = two_players(IPX_PAYLOAD, 2, profile);
    let before = queue_burst(&mut net);
    // Less than one round trip: the first window went out, its acknowledgement is not back.
    net.run_for(Duration::from_millis(190));
    let sender = net.endpoint(0).unwrap().link_stats(1);
    let packets = sender.packets_sent - before.packets_sent;
    let events = sender.reliable_sent - before.reliable_sent;
    // A 256-byte event and its header take most of an IPX payload: one event a packet.
    assert!(
        events <= RELIABLE_PACKET_WINDOW,
        "the burst is held back: at most one window of packets went, not {events} events"
    );
    assert!(
        packets >= events + 2,
        "state packets still went every tick while the window was full ({packets} packets, \
         {events} events)"
    );
    net.run_for(Duration::from_secs(10));
    assert_eq!(
        net.endpoint(1).unwrap().numbers(),
        (0..BURST).collect::<Vec<_>>()
    );
    let after = net.endpoint(0).unwrap().link_stats(1);
    assert_eq!(after.packets_lost - before.packets_lost, 0, "{after:?}");
    assert_eq!(
        after.retransmissions - before.retransmissions,
        0,
        "{after:?}"
    );
}

/// Under real loss the window still lets every event through, exactly once and in order, and
/// the lost ones are retransmitted.
#[test]
fn a_burst_under_loss_arrives_exactly_once_and_in_order() {
    for (seed, loss, payload) in [
        (11, 0.10, IPX_PAYLOAD),
        (12, 0.20, IPX_PAYLOAD),
        (13, 0.15, UDP_PAYLOAD),
        (14, 0.20, UDP_PAYLOAD),
    ] {
        let mut net = two_players(payload, seed, LinkProfile::default());
        let profile = LinkProfile {
            loss,
            ..LinkProfile::default()
        };
        net.set_profile(0, 1, profile);
        net.set_profile(1, 0, profile);
        let before = queue_burst(&mut net);
        net.run_for(Duration::from_secs(15));
        assert_eq!(
            net.endpoint(1).unwrap().numbers(),
            (0..BURST).collect::<Vec<_>>(),
            "seed {seed}: every event once, in order"
        );
        let after = net.endpoint(0).unwrap().link_stats(1);
        assert!(net.stats().lost > 0);
        assert!(
            after.retransmissions > before.retransmissions,
            "seed {seed}: lost events were sent again"
        );
        assert_eq!(net.endpoint(0).unwrap().session.unacknowledged(), 0);
    }
}

/// The relay's side of the same window: it writes one packet per origin with something to
/// send, and asks `pending_origins` which. Once the window is full, an origin whose next event
/// is a held reliable one has nothing to send (no empty packets), while an origin with an
/// unreliable event still does; an acknowledgement opens the window again.
#[test]
fn a_relay_link_stops_at_the_window_and_goes_on_when_acknowledged() {
    use net_core::session::{Link, LinkConfig, PacketMeta};
    use net_core::wire::PacketType;

    let relay_meta = |origin: u8| PacketMeta {
        kind: PacketType::GameState,
        sender_slot: Some(origin),
        joined: true,
        token: 0x5e5e,
        relay: true,
    };
    let now = Instant::now();
    let mut relay = Link::new(LinkConfig::default());
    let mut client = Link::new(LinkConfig::default());
    for n in 0..BURST {
        assert!(relay.queue_relayed(3, u64::from(n), large(n)));
    }
    let mut buf = vec![0u8; IPX_PAYLOAD];
    let mut packets = Vec::new();
    let mut origins = Vec::new();
    loop {
        origins.clear();
        relay.pending_origins(now, &mut origins);
        if origins.is_empty() {
            break;
        }
        assert_eq!(origins, [Some(3)]);
        let len = relay
            .write_packet(now, &mut buf, relay_meta(3), None)
            .unwrap();
        packets.push(buf[..len].to_vec());
        assert!(
            packets.len() <= BURST as usize,
            "the relay keeps writing packets"
        );
    }
    assert_eq!(packets.len() as u64, RELIABLE_PACKET_WINDOW);
    assert!(!relay.has_new_events());
    // An unreliable event of another origin is not held back.
    let unreliable = RemoteEvent::Custom {
        custom_type: 9,
        data: CustomData::new(b"now").unwrap(),
        reliable: false,
    };
    assert!(relay.queue_relayed(5, 0, unreliable));
    relay.pending_origins(now, &mut origins);
    assert_eq!(origins, [Some(5)]);
    relay
        .write_packet(now, &mut buf, relay_meta(5), None)
        .unwrap();
    // The client reads the window in one frame and answers once: all acknowledged.
    let mut delivered = 0;
    for data in &packets {
        let mut events = Vec::new();
        let packet = decode_packet(data, &mut events).unwrap();
        client.handle_packet(
            now,
            &packet.header,
            packet.state.as_ref(),
            &events,
            &mut |_| delivered += 1,
        );
    }
    let sent = relay.stats().reliable_sent;
    assert!(sent >= RELIABLE_PACKET_WINDOW && sent < u64::from(BURST));
    assert_eq!(delivered, sent);
    let client_meta = PacketMeta {
        kind: PacketType::GameState,
        sender_slot: Some(1),
        joined: true,
        token: 0x101,
        relay: false,
    };
    let later = now + Duration::from_millis(20);
    let len = client
        .write_packet(later, &mut buf, client_meta, None)
        .unwrap();
    let mut events = Vec::new();
    let packet = decode_packet(&buf[..len], &mut events).unwrap();
    relay.handle_packet(
        later,
        &packet.header,
        packet.state.as_ref(),
        &events,
        &mut |_| {},
    );
    assert_eq!(relay.stats().packets_lost, 0);
    assert_eq!(relay.stats().reliable_acked, sent);
    origins.clear();
    relay.pending_origins(later, &mut origins);
    assert_eq!(origins, [Some(3)], "the window is open again");
}
