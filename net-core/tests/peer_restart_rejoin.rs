//! A player's process dies and a new one starts on the same port and connects to a player of the
//! game (what a player does after a crash: start the game again and join). The players it asks
//! still list the dead process at that address until they notice it is gone, so the player list
//! that seats the new process may still name the dead one, at the new process's own address.
//!
//! That entry is this process's dead predecessor, never a player: no live process can share its
//! address. The new process does not seat it (no PLAYER_CONNECTED for a player "at" its own
//! address, shown for 20 s until `net.timeout` dropped it), and the game settles with the new
//! process in the dead one's place.

use std::time::Duration;

mod support;

use net_core::protocol::peer::{PeerProtocol, PeerTimings};
use net_core::protocol::ClientProtocol;
use net_core::rmev::{PlayerListEntry, PlayerName, RemoteEvent};
use net_core::session::GameEvent;
use net_core::sim::{self, LinkProfile, Network, Transmit};
use net_core::wire::{encode_packet, PacketHeader, PacketType, WireEvent};
use support::peer_node::{everyone_agrees, start_by_address, PeerNode};

const NEW_TOKEN: u32 = 0x9999;

fn tokens_listed(peer: &PeerNode) -> Vec<u32> {
    peer.proto.session().map_or(Vec::new(), |s| {
        s.players().iter().map(|p| p.token).collect()
    })
}

fn describe(net: &Network<PeerNode>) -> String {
    net.running()
        .map(|(i, p)| format!("{i}: {} lists {:x?}", p.proto.describe(), tokens_listed(p)))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// `players` peers play (player 0 connects to 1, the others to 0); player `dead`'s process dies
/// and a new one starts on its port `restart_after` later and connects to another player (0, or
/// 1 if 0 died), with `timings`. Runs 10 s more and checks that the new process never saw a player at its own
/// address, that nobody left its game, and that everyone agrees, the new process in the game.
fn restart_and_rejoin(
    players: usize,
    dead: usize,
    restart_after: Duration,
    seed: u64,
    timings: PeerTimings,
) {
    let mut net: Network<PeerNode> = Network::new(players, seed, LinkProfile::default());
    let starts: Vec<(usize, usize)> = (0..players).map(|i| (i, usize::from(i == 0))).collect();
    start_by_address(&mut net, &starts);
    assert!(
        everyone_agrees(&net, players),
        "seed {seed}: {}",
        describe(&net)
    );

    let dead_token = 0x100 + dead as u32;
    let marks: Vec<(usize, usize)> = (0..players)
        .filter(|&i| i != dead)
        .map(|i| (i, net.endpoint(i).unwrap().events.len()))
        .collect();
    net.crash(dead);
    net.run_for(restart_after);
    let mut node = PeerNode::new(dead);
    node.proto = PeerProtocol::new(timings);
    node.connect_to(net.now(), NEW_TOKEN, usize::from(dead == 0));
    net.start(dead, node);
    net.run_for(Duration::from_secs(10));

    // The dead process's entry is its own address's: the only way to tell it from a player is
    // that it was never shown. One PLAYER_CONNECTED for each other player, none more.
    let restarted = net.endpoint(dead).unwrap();
    let connected = restarted
        .events
        .iter()
        .filter(|e| matches!(e, GameEvent::PlayerConnected { .. }))
        .count();
    assert_eq!(
        connected,
        players - 1,
        "seed {seed}, restart after {restart_after:?}: one PLAYER_CONNECTED for each other \
         player, none for the dead predecessor: {:?}; {}",
        restarted.events,
        describe(&net)
    );
    assert!(
        everyone_agrees(&net, players),
        "seed {seed}, restart after {restart_after:?}: {}",
        describe(&net)
    );
    // Seated by the game it asked: not a game of its own that the others then had to join.
    let connects = restarted
        .events
        .iter()
        .filter(|e| matches!(e, GameEvent::Connected { .. }))
        .count();
    let left = |e: &GameEvent| matches!(e, GameEvent::Disconnected { .. });
    assert!(
        connects == 1 && !restarted.events.iter().any(left),
        "seed {seed}, restart after {restart_after:?}: {:?}",
        restarted.events
    );
    for (i, mark) in marks {
        let events = &net.endpoint(i).unwrap().events[mark..];
        assert!(
            !events.iter().any(left),
            "seed {seed}: player {i} left its game: {events:?}"
        );
    }
    for (i, peer) in net.running() {
        assert!(
            !tokens_listed(peer).contains(&dead_token),
            "seed {seed}: player {i} still lists the dead process: {}",
            describe(&net)
        );
    }
}

#[test]
fn a_restarted_process_is_not_shown_its_dead_predecessor_and_takes_its_place() {
    // The dead process at the highest address and at the lowest: a player answers a newcomer
    // after the live higher-ranked ones had their turn, and the dead one never takes its turn.
    // With default timings and with a connect loop (3 requests 100 ms apart) shorter than the
    // time the others take to count the dead process as gone (1.34 s).
    let quick = PeerTimings {
        connect_tries: 3,
        connect_interval: Duration::from_millis(100),
        ..PeerTimings::default()
    };
    for seed in 0..6 {
        for after_ms in [100, 1_000, 5_000] {
            let after = Duration::from_millis(after_ms);
            for (players, dead) in [(2, 1), (2, 0), (3, 2), (3, 0)] {
                for timings in [PeerTimings::default(), quick] {
                    restart_and_rejoin(players, dead, after, seed, timings);
                }
            }
        }
    }
}

#[test]
fn in_a_full_game_the_restarted_process_takes_the_dead_ones_seat() {
    for seed in 10..16 {
        for after_ms in [100, 300, 500] {
            let after = Duration::from_millis(after_ms);
            restart_and_rejoin(4, 3, after, seed, PeerTimings::default());
            restart_and_rejoin(4, 0, after, seed, PeerTimings::default());
        }
    }
}

/// A CONNECT_REPLY from node 0 (token 0x100, slot 0) listing `(slot, token, node)` entries.
fn reply_from_node_0(sequence: u32, entries: &[(u8, u32, usize)]) -> Transmit {
    let list = entries
        .iter()
        .map(|&(slot, token, node)| PlayerListEntry {
            slot,
            joined: false,
            token,
            node: sim::node(node),
            name: PlayerName::new(format!("p{slot}").as_bytes()).unwrap(),
        })
        .collect();
    let header = PacketHeader {
        kind: PacketType::ConnectReply,
        sender_slot: Some(0),
        joined: false,
        sequence,
        ack: None,
        token: 0x100,
    };
    let events = [WireEvent {
        reliable_id: Some(1),
        event: RemoteEvent::PlayerList(list),
    }];
    let mut buf = vec![0u8; 1400];
    let len = encode_packet(&mut buf, &header, None, &events).unwrap();
    buf.truncate(len);
    Transmit {
        to: sim::node(1),
        data: buf,
    }
}

/// A newcomer at node 1 (token 0x101) seated in slot 1 by a reply from node 0 that also lists
/// `first_extra`, then sent a copy of a later reply that also lists `later_extra` (entries
/// `(slot, token, node)`). Returns the tokens it seats.
fn seated_from_replies(
    first_extra: &[(u8, u32, usize)],
    later_extra: &[(u8, u32, usize)],
) -> Vec<u32> {
    let mut net: Network<PeerNode> = Network::new(3, 5, LinkProfile::default());
    // Node 0 only sends the crafted replies: its own peer never connects.
    net.start(0, PeerNode::new(0));
    let mut newcomer = PeerNode::new(1);
    newcomer.connect_to(net.now(), 0x101, 0);
    net.start(1, newcomer);
    net.run_for(Duration::from_millis(50));
    let base = [(0, 0x100, 0), (1, 0x101, 1)];
    for (sequence, extra) in [(1, first_extra), (2, later_extra)] {
        let entries = [&base[..], extra].concat();
        let reply = reply_from_node_0(sequence, &entries);
        net.endpoint_mut(0).unwrap().outbox.push_back(reply);
        net.run_for(Duration::from_millis(100));
    }
    let newcomer = net.endpoint(1).unwrap();
    assert_eq!(
        newcomer.slot(),
        Some(1),
        "seated by the reply: {:?}",
        newcomer.events
    );
    let mut tokens = tokens_listed(newcomer);
    tokens.sort_unstable();
    tokens
}

#[test]
fn a_list_entry_at_the_players_own_address_under_another_token_is_never_seated() {
    // The list of a player that has not yet noticed the death (the one that seats this process,
    // or a later one) may name the dead process at this process's address.
    let ghost_here = [(2, 0xDEAD, 1)];
    let ghost_elsewhere = [(2, 0xDEAD, 2)];
    assert_eq!(
        seated_from_replies(&ghost_here, &[]),
        vec![0x100],
        "the entry at its own address, in the reply that seats it"
    );
    assert_eq!(
        seated_from_replies(&[], &ghost_here),
        vec![0x100],
        "the entry at its own address, in a later list"
    );
    // Anywhere else the same entry is a player.
    assert_eq!(
        seated_from_replies(&ghost_elsewhere, &[]),
        vec![0x100, 0xDEAD]
    );
    assert_eq!(
        seated_from_replies(&[], &ghost_elsewhere),
        vec![0x100, 0xDEAD]
    );
}
