//! A player's process dies and a new one starts on the same port while the others still list the
//! dead one there (for up to `net.timeout`). The new process, heard by no one, starts a game of
//! its own. Two things went wrong in that state (chaos seed 3101: two players reseated each
//! other every second for the whole 25 s, from tables that listed the dead process):
//! - The others' packets reach the new process, which tells each of them that it is not in its
//!   game ("not in the other players' game ...; reconnecting", `protocol::peer::strangers`).
//!   A told player reconnected through its old `connect` address, a player of the same stale
//!   game, which seated it again with the same entries. Now it connects to the teller.
//! - A player of the others' game that seats a newcomer sends copies of its reply to every
//!   player it lists, the dead one's port included. The new process merged that list into its
//!   own game, so it listed players who listed someone else in its place. A reply copy from a
//!   player that is not in this peer's game is now ignored.

use std::time::Duration;

mod support;

use net_core::protocol::ClientProtocol;
use net_core::session::GameEvent;
use net_core::sim::{LinkProfile, Network};
use support::peer_node::{everyone_agrees, PeerNode};

const NOTICE: &str = "not in the other players' game";

fn cut() -> LinkProfile {
    LinkProfile {
        loss: 1.0,
        ..LinkProfile::default()
    }
}

fn notices_received(peer: &PeerNode) -> usize {
    peer.events
        .iter()
        .filter(|e| matches!(e, GameEvent::Disconnected { reason } if reason.starts_with(NOTICE)))
        .count()
}

fn tokens_listed(peer: &PeerNode) -> Vec<u32> {
    peer.proto.session().map_or(Vec::new(), |s| {
        s.players().iter().map(|p| p.token).collect()
    })
}

fn describe(net: &Network<PeerNode>) -> String {
    net.running()
        .map(|(i, p)| {
            format!(
                "{i}: {} (token {:x?}, lists {:x?}, told {} times)",
                p.proto.describe(),
                p.token(),
                tokens_listed(p),
                notices_received(p)
            )
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Players 0 and 1 connect to each other's address and player 2 to player 0's; once the three
/// play, player 2's process dies and a new one (token 0x9999) starts on its port, connecting to
/// player 0. Its packets to the others are cut, so its requests go unanswered and it starts a
/// game of its own; the cut stays on (the caller heals it). Players 0 and 1 still list the dead
/// process in slot 2 and send it their packets.
fn restarted_player_alone_on_a_listed_port(nodes: usize, seed: u64) -> Network<PeerNode> {
    let mut net: Network<PeerNode> = Network::new(nodes, seed, LinkProfile::default());
    let start = net.now();
    for (i, target) in [1, 0, 0].into_iter().enumerate() {
        let mut node = PeerNode::new(i);
        node.connect_to(net.now(), 0x100 + i as u32, target);
        net.start(i, node);
        net.run_until(start + Duration::from_millis(40 * (i as u64 + 1)), |_| {});
    }
    net.run_until(start + Duration::from_secs(10), |_| {});
    assert!(everyone_agrees(&net, 3), "{}", describe(&net));

    net.set_profile(2, 0, cut());
    net.set_profile(2, 1, cut());
    net.crash(2);
    let mut node = PeerNode::new(2);
    node.connect_to(net.now(), 0x9999, 0);
    net.start(2, node);
    net.run_for(Duration::from_secs(5));
    let restarted = net.endpoint(2).unwrap();
    assert_eq!(
        restarted.proto.session().map(|s| s.players().len()),
        Some(0),
        "the new process plays alone: {}",
        describe(&net)
    );
    net
}

/// No player leaves its game again within `quiet`.
fn stays_settled(net: &mut Network<PeerNode>, quiet: Duration, what: &str) {
    let marks: Vec<(usize, usize)> = net.running().map(|(i, p)| (i, p.events.len())).collect();
    net.run_for(quiet);
    for (i, mark) in marks {
        let peer = net.endpoint(i).unwrap();
        let left = peer.events[mark..]
            .iter()
            .any(|e| matches!(e, GameEvent::Disconnected { .. }));
        assert!(
            !left,
            "{what}: player {i} left again: {:?}",
            &peer.events[mark..]
        );
    }
}

#[test]
fn players_told_by_a_new_process_on_a_listed_port_meet_in_its_game() {
    for seed in 3101..3107 {
        let mut net = restarted_player_alone_on_a_listed_port(3, seed);
        // Players 0 and 1 hear the notice 700 ms apart: the one told first, reconnecting through
        // the other, was seated again next to the dead process's entry, and so was the other in
        // turn. The entry never went silent for `net.timeout` (20 s) in anyone's new session.
        net.set_profile(2, 0, LinkProfile::default());
        net.run_for(Duration::from_millis(700));
        net.set_profile(2, 1, LinkProfile::default());
        net.run_for(Duration::from_secs(12));
        assert!(everyone_agrees(&net, 3), "seed {seed}: {}", describe(&net));
        let told: usize = (0..2)
            .map(|i| notices_received(net.endpoint(i).unwrap()))
            .sum();
        assert!(
            told >= 1,
            "seed {seed}: nobody was told: {}",
            describe(&net)
        );
        stays_settled(&mut net, Duration::from_secs(10), &format!("seed {seed}"));
        assert!(everyone_agrees(&net, 3), "seed {seed}: {}", describe(&net));
    }
}

#[test]
fn a_reply_copy_for_the_dead_process_does_not_seat_its_game_at_the_new_one() {
    for seed in 3201..3205 {
        let mut net = restarted_player_alone_on_a_listed_port(4, seed);
        // A newcomer asks player 1, which seats it and sends copies of its reply to players 0
        // and 2 (the dead process's entry: the new process gets it). The new process cannot
        // reach the newcomer either.
        net.set_profile(2, 3, cut());
        let mut newcomer = PeerNode::new(3);
        newcomer.connect_to(net.now(), 0x103, 1);
        net.start(3, newcomer);
        net.run_for(Duration::from_secs(2));
        let seated = tokens_listed(net.endpoint(1).unwrap());
        assert!(seated.contains(&0x103), "seed {seed}: {}", describe(&net));
        let restarted = net.endpoint(2).unwrap();
        assert_eq!(
            tokens_listed(restarted),
            Vec::<u32>::new(),
            "seed {seed}: the new process took the others' game from a reply copy: {}",
            describe(&net)
        );
        // Once its packets get through, the four meet in one game.
        for other in [0, 1, 3] {
            net.set_profile(2, other, LinkProfile::default());
        }
        net.run_for(Duration::from_secs(15));
        assert!(everyone_agrees(&net, 4), "seed {seed}: {}", describe(&net));
        stays_settled(&mut net, Duration::from_secs(10), &format!("seed {seed}"));
    }
}
