//! A peer-to-peer player is followed to a new address only on its own host (a NAT port
//! change), never to another host, even by a packet with its slot, its token and a fresh
//! sequence: every player of a peer game knows the others' tokens.
//!
//! Five simulated nodes on three hosts: players at nodes 0 (host A), 1 (host B) and 2 (host
//! C); node 3 is a second socket on host C (the thief's), node 4 another port of host B (where
//! B's NAT maps it after a port change).

use std::sync::Arc;
use std::time::Duration;

mod support;

use net_core::protocol::ClientProtocol;
use net_core::session::GameEvent;
use net_core::sim::{self, LinkProfile, Network, Transmit};
use net_core::wire::{encode_packet, PacketHeader, PacketType};
use net_core::Node;
use support::peer_node::PeerNode;

/// The host of each simulated node.
const HOSTS: [usize; 5] = [0, 1, 2, 2, 1];

fn same_host(a: &Node, b: &Node) -> bool {
    let host = |n: &Node| sim::node_index(n).map(|i| HOSTS[i]);
    a == b || (host(a).is_some() && host(a) == host(b))
}

/// The players at `nodes` are in one game and see each other in their slots, under their
/// tokens (the thief's second socket is in no game).
fn agree(net: &Network<PeerNode>, nodes: [usize; 3]) -> bool {
    nodes.iter().all(|&i| {
        let Some(session) = net.endpoint(i).and_then(|p| p.proto.session()) else {
            return false;
        };
        session.players().len() == 2
            && nodes.iter().filter(|&&o| o != i).all(|&o| {
                let other = net.endpoint(o).unwrap();
                other.slot().is_some_and(|slot| {
                    session
                        .players()
                        .get(slot)
                        .is_some_and(|pl| Some(pl.token) == other.token())
                })
            })
    })
}

/// What `who` knows of the player in `slot`: its node, and how many players it moved and
/// how many impostors it refused.
fn seen_by(net: &Network<PeerNode>, who: usize, slot: u8) -> (Node, u64, u64) {
    let session = net.endpoint(who).unwrap().proto.session().unwrap();
    let player = session.players().get(slot).expect("the player is seated");
    let stats = session.stats();
    (player.node, stats.rebinds, stats.impostors)
}

/// Keep-alives with the victim's slot and token, sequences spread over the whole space (at
/// least half of them newer than anything the victim sent).
fn forged_keepalives(slot: u8, token: u32, round: u32) -> Vec<Vec<u8>> {
    (0..16u32)
        .map(|k| {
            let header = PacketHeader {
                kind: PacketType::NodeAlive,
                sender_slot: Some(slot),
                joined: true,
                sequence: (k << 28).wrapping_add(round + 1),
                ack: None,
                token,
            };
            let mut buf = vec![0u8; 1400];
            let len = encode_packet(&mut buf, &header, None, &[]).unwrap();
            buf.truncate(len);
            buf
        })
        .collect()
}

#[test]
fn another_player_cannot_take_over_a_quiet_peer_but_a_nat_port_change_is_followed() {
    let profile = LinkProfile {
        latency: Duration::from_millis(5),
        ..Default::default()
    };
    let mut net: Network<PeerNode> = Network::new(5, 77, profile);
    let start = net.now();
    for i in 0..3 {
        let mut node = PeerNode::new(i);
        node.same_host = Arc::new(same_host);
        node.connect(net.now(), 0x200 + i as u32);
        net.start(i, node);
        net.run_until(start + Duration::from_millis(40 * (i as u64 + 1)), |_| {});
    }
    net.start(3, PeerNode::new(3));
    net.run_until(start + Duration::from_secs(10), |_| {});
    assert!(agree(&net, [0, 1, 2]), "the three are in one game");
    let victim_slot = net.endpoint(1).unwrap().slot().unwrap();
    // The thief knows the victim's token from its own player table.
    let victim_token = net
        .endpoint(2)
        .unwrap()
        .proto
        .session()
        .unwrap()
        .players()
        .get(victim_slot)
        .unwrap()
        .token;
    assert_eq!(Some(victim_token), net.endpoint(1).unwrap().token());
    assert_eq!(seen_by(&net, 0, victim_slot).0, sim::node(1));

    // B falls quiet towards A (a burst of loss, 3 s, far below the 20 s timeout); the thief
    // sends as B from its second socket all along, 4 rounds a second.
    net.partition(0, 1, true);
    for round in 0..12u32 {
        for data in forged_keepalives(victim_slot, victim_token, round) {
            net.endpoint_mut(3).unwrap().outbox.push_back(Transmit {
                to: sim::node(0),
                data,
            });
        }
        let now = net.now();
        net.run_until(now + Duration::from_millis(250), |_| {});
    }
    let (node, rebinds, impostors) = seen_by(&net, 0, victim_slot);
    assert_eq!(
        node,
        sim::node(1),
        "A followed the quiet player B to the thief's socket (rebinds {rebinds})"
    );
    assert_eq!(rebinds, 0);
    assert!(
        impostors > 0,
        "the thief's packets are counted as impostors'"
    );

    // B is heard again, and is still B at A: nothing of it was refused or dropped.
    net.partition(0, 1, false);
    let now = net.now();
    net.run_until(now + Duration::from_secs(3), |_| {});
    assert!(agree(&net, [0, 1, 2]), "B is still in the game everywhere");
    let heard = net.endpoint(0).unwrap().proto.session().unwrap().players();
    assert!(
        net.now()
            .saturating_duration_since(heard.get(victim_slot).unwrap().last_heard)
            < Duration::from_secs(1),
        "A hears B at its own address"
    );

    // B's NAT maps it to another port of its host: everyone follows it there.
    let victim = net.crash(1).unwrap();
    net.start(4, victim);
    let now = net.now();
    net.run_until(now + Duration::from_secs(5), |_| {});
    for who in [0, 2] {
        let (node, rebinds, _) = seen_by(&net, who, victim_slot);
        assert_eq!(node, sim::node(4), "{who} followed B to its new port");
        assert_eq!(rebinds, 1, "{who}");
    }
    assert!(
        agree(&net, [0, 4, 2]),
        "the three are still in one game after the port change"
    );
    for who in [0, 2, 4] {
        let peer = net.endpoint(who).unwrap();
        assert!(
            !peer.events.iter().any(|e| matches!(
                e,
                GameEvent::PlayerDisconnected { .. } | GameEvent::Disconnected { .. }
            )),
            "{who}: nobody left: {:?}",
            peer.events
        );
    }
}
