//! "Not in the other players' game ...; reconnecting" (`protocol::peer::strangers`): a peer in
//! the game that keeps getting game packets from a token it never seated tells the sender so.
//! What the told player does depends on what it lists at the teller's address:
//! - another token: the process it lists there is gone and a new one answers (a player's
//!   process died and a new one started on the same port, heard by no one, in a game of its
//!   own). The told player drops that entry and plays on. Before, it left and reconnected
//!   through its old `connect` address, a player of the same stale game, which seated it again
//!   next to the dead entry; a new session's entries start "heard from now", so the entry never
//!   went silent for `net.timeout` and the notices went on for good (chaos seed 3101: two
//!   players reseated each other every second for 25 s).
//! - the teller itself: the told player's seat was never heard of in the teller's game. It
//!   leaves and connects to the teller (then the teller's other players, then its old address),
//!   unless the teller's list shows a full game. Before, it went to its old address, which can
//!   be a dead seater's.
//!
//! And a reply copy from a player that is not in this peer's game (sent to this address for the
//! dead process) is ignored; the new process merged it and listed players who listed someone else
//! in its place.

use std::time::Duration;

mod support;

use net_core::protocol::ClientProtocol;
use net_core::session::GameEvent;
use net_core::sim::{LinkProfile, Network};
use support::peer_node::{everyone_agrees, start_by_address, PeerNode};

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

/// Players 0 and 1 play; player 1's packets to player 0 are cut. A newcomer (node 2) connects to
/// player 1's address, and player 1 seats it and dies before its new player list reaches player
/// 0, which cannot hear the newcomer yet (the caller ends that).
fn newcomer_whose_seater_died(nodes: usize, seed: u64) -> Network<PeerNode> {
    let mut net = Network::<PeerNode>::new(nodes, seed, LinkProfile::default());
    start_by_address(&mut net, &[(0, 1), (1, 0)]);
    assert!(everyone_agrees(&net, 2), "seed {seed}: {}", describe(&net));
    net.set_profile(1, 0, cut());
    net.partition(0, 2, true);
    let mut newcomer = PeerNode::new(2);
    newcomer.connect_to(net.now(), 0x102, 1);
    net.start(2, newcomer);
    net.run_for(Duration::from_secs(1));
    assert!(
        tokens_listed(net.endpoint(2).unwrap()).contains(&0x100),
        "seed {seed}: the newcomer lists player 0: {}",
        describe(&net)
    );
    net.crash(1);
    net
}

/// Players 0 and 1 connect to each other's address and player 2 to player 0's; once the three
/// play, player 2's process dies and a new one (token 0x9999) starts on its port, connecting by
/// broadcast (one given player 0's address would knock there once alone, and join: see
/// `peer_movers.rs`). Its packets to the others are cut, so its requests go unanswered and it
/// starts a game of its own; the cut stays on (the caller heals it). Players 0 and 1 still list
/// the dead process in slot 2 and send it their packets.
fn restarted_player_alone_on_a_listed_port(nodes: usize, seed: u64) -> Network<PeerNode> {
    let mut net: Network<PeerNode> = Network::new(nodes, seed, LinkProfile::default());
    start_by_address(&mut net, &[(0, 1), (1, 0), (2, 0)]);
    assert!(everyone_agrees(&net, 3), "{}", describe(&net));

    net.set_profile(2, 0, cut());
    net.set_profile(2, 1, cut());
    net.crash(2);
    let mut node = PeerNode::new(2);
    node.connect(net.now(), 0x9999);
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

/// Players 0 and 1 still list the dead process at `restarted`'s address and nobody else there:
/// the entry went (PLAYER_DISCONNECTED), nobody left its game, and the two play on together.
fn dead_entry_dropped_in_place(net: &Network<PeerNode>, players: &[usize], seed: u64) {
    for &i in players {
        let peer = net.endpoint(i).unwrap();
        assert!(
            !tokens_listed(peer).contains(&0x102),
            "seed {seed}: player {i} still lists the dead process: {}",
            describe(net)
        );
        assert_eq!(notices_received(peer), 0, "seed {seed}: {:?}", peer.events);
        let gone = peer.events.iter().any(|e| {
            matches!(e, GameEvent::PlayerDisconnected { reason, .. } if reason.contains("another process"))
        });
        assert!(gone, "seed {seed}: player {i}: {:?}", peer.events);
        assert!(peer.proto.stats().replaced_players_dropped >= 1);
    }
}

#[test]
fn players_told_by_a_new_process_on_a_listed_port_drop_the_dead_entry_and_play_on() {
    for seed in 3101..3107 {
        let mut net = restarted_player_alone_on_a_listed_port(3, seed);
        // Players 0 and 1 hear the new process 700 ms apart (before, each was seated again by
        // the other in turn, next to the dead entry, for good).
        net.set_profile(2, 0, LinkProfile::default());
        net.run_for(Duration::from_millis(700));
        net.set_profile(2, 1, LinkProfile::default());
        net.run_for(Duration::from_secs(5));
        dead_entry_dropped_in_place(&net, &[0, 1], seed);
        let (low, high) = (net.endpoint(0).unwrap(), net.endpoint(1).unwrap());
        assert_eq!(
            tokens_listed(low),
            vec![0x101],
            "seed {seed}: {}",
            describe(&net)
        );
        assert_eq!(
            tokens_listed(high),
            vec![0x100],
            "seed {seed}: {}",
            describe(&net)
        );
        let restarted = net.endpoint(2).unwrap();
        assert_eq!(tokens_listed(restarted), Vec::<u32>::new(), "seed {seed}");
        stays_settled(&mut net, Duration::from_secs(10), &format!("seed {seed}"));
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
        // Once its packets get through, the three drop the dead entry and play on.
        for other in [0, 1, 3] {
            net.set_profile(2, other, LinkProfile::default());
        }
        net.run_for(Duration::from_secs(5));
        dead_entry_dropped_in_place(&net, &[0, 1, 3], seed);
        for i in [0, 1, 3] {
            assert_eq!(
                tokens_listed(net.endpoint(i).unwrap()).len(),
                2,
                "seed {seed}: {}",
                describe(&net)
            );
        }
        stays_settled(&mut net, Duration::from_secs(10), &format!("seed {seed}"));
    }
}

#[test]
fn players_told_by_a_new_process_in_a_full_game_stay_together_in_theirs() {
    for seed in 3301..3305 {
        // Players 3, 4 and 5 play a game of their own, out of reach of players 0-2.
        let mut net = Network::<PeerNode>::new(6, seed, LinkProfile::default());
        for a in 0..3 {
            for b in 3..6 {
                net.partition(a, b, true);
            }
        }
        start_by_address(&mut net, &[(0, 1), (1, 0), (2, 0), (3, 4), (4, 3), (5, 3)]);
        // Player 2's process dies; a new one on its port joins players 3-5 (the game is full)
        // and cannot reach players 0 and 1 meanwhile.
        net.crash(2);
        net.set_profile(2, 0, cut());
        net.set_profile(2, 1, cut());
        for b in 3..6 {
            net.partition(2, b, false);
        }
        let mut node = PeerNode::new(2);
        node.connect_to(net.now(), 0x9999, 3);
        net.start(2, node);
        net.run_for(Duration::from_secs(3));
        let full = net.endpoint(2).unwrap();
        assert_eq!(
            full.proto.session().map(|s| s.players().len()),
            Some(3),
            "seed {seed}: the new process is in the full game: {}",
            describe(&net)
        );
        // Told 700 ms apart, as in the first test.
        net.set_profile(2, 0, LinkProfile::default());
        net.run_for(Duration::from_millis(700));
        net.set_profile(2, 1, LinkProfile::default());
        net.run_for(Duration::from_secs(12));
        for i in [0, 1] {
            let peer = net.endpoint(i).unwrap();
            let listed = tokens_listed(peer);
            assert_eq!(listed.len(), 1, "seed {seed}: {}", describe(&net));
            assert!(
                peer.errors().is_empty(),
                "seed {seed}: player {i}: {:?}",
                peer.errors()
            );
        }
        let low = net.endpoint(0).unwrap();
        let high = net.endpoint(1).unwrap();
        assert_eq!(
            tokens_listed(low),
            vec![high.token().unwrap()],
            "seed {seed}: {}",
            describe(&net)
        );
        assert_eq!(
            tokens_listed(high),
            vec![low.token().unwrap()],
            "seed {seed}: {}",
            describe(&net)
        );
        stays_settled(&mut net, Duration::from_secs(10), &format!("seed {seed}"));
    }
}

#[test]
fn a_newcomer_whose_seater_died_before_telling_the_others_connects_to_the_player_that_told_it() {
    for seed in 3401..3405 {
        let mut net = newcomer_whose_seater_died(3, seed);
        net.partition(0, 2, false);
        // Player 0 tells it within a few seconds; before, it connected to its old address, the
        // dead player's, heard nothing and started a game of its own.
        net.run_for(Duration::from_secs(5));
        let (told, newcomer) = (net.endpoint(0).unwrap(), net.endpoint(2).unwrap());
        let together = tokens_listed(told).contains(&newcomer.token().unwrap_or(0))
            && tokens_listed(newcomer).contains(&0x100);
        assert!(together, "seed {seed}: {}", describe(&net));
        // Once both drop the dead player for silence (`net.timeout`, 20 s), the two are the game.
        net.run_for(Duration::from_secs(20));
        assert!(everyone_agrees(&net, 2), "seed {seed}: {}", describe(&net));
        assert!(
            notices_received(net.endpoint(2).unwrap()) >= 1,
            "seed {seed}: {}",
            describe(&net)
        );
        stays_settled(&mut net, Duration::from_secs(10), &format!("seed {seed}"));
    }
}

#[test]
fn a_newcomer_told_by_a_full_game_goes_back_to_its_own_address() {
    for seed in 3501..3505 {
        // As above, but while the newcomer cannot reach player 0, two more players join player
        // 0's game, which then holds four seats (the dead player 1's among them).
        let mut net = newcomer_whose_seater_died(5, seed);
        for i in [3, 4] {
            net.partition(i, 2, true);
            let mut node = PeerNode::new(i);
            node.connect_to(net.now(), 0x100 + i as u32, 0);
            net.start(i, node);
            net.run_for(Duration::from_secs(2));
        }
        let full = tokens_listed(net.endpoint(0).unwrap());
        assert_eq!(full.len(), 3, "seed {seed}: {}", describe(&net));
        net.partition(0, 2, false);
        // Told, it does not ask the full game (which would refuse it until it gave up); it goes
        // to its old address, hears nothing there, and plays a game of its own.
        net.run_for(Duration::from_secs(8));
        let newcomer = net.endpoint(2).unwrap();
        assert!(
            notices_received(newcomer) >= 1,
            "seed {seed}: {}",
            describe(&net)
        );
        assert!(
            newcomer.errors().is_empty(),
            "seed {seed}: {:?}",
            newcomer.errors()
        );
        assert!(newcomer.slot().is_some(), "seed {seed}: {}", describe(&net));
    }
}
