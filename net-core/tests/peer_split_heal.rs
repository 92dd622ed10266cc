//! A peer whose network was cut (not its process stopped) for longer than `net.timeout`: the
//! others drop it and it drops them, so it sits alone in a game of its own. When the cut heals
//! it must find its way back into the bigger game (it probes the players it dropped, whose
//! "you were dropped" answer makes it reconnect), without the bigger game being disturbed.
//! A 2/2 split stays split (nobody is alone), and probing stops by itself.

use std::time::Duration;

mod support;

use net_core::protocol::ClientProtocol;
use net_core::session::GameEvent;
use net_core::sim::{LinkProfile, Network};
use support::peer_node::{everyone_agrees, PeerNode};

fn profile() -> LinkProfile {
    LinkProfile {
        latency: Duration::from_millis(5),
        ..Default::default()
    }
}

/// `count` peers meet in one game (peer i starts 40 ms after peer i-1).
fn meet(count: usize, seed: u64) -> Network<PeerNode> {
    meet_over(count, seed, profile())
}

fn meet_over(count: usize, seed: u64, profile: LinkProfile) -> Network<PeerNode> {
    let mut net: Network<PeerNode> = Network::new(count, seed, profile);
    let start = net.now();
    for i in 0..count {
        let mut node = PeerNode::new(i);
        node.connect(net.now(), 0x100 + i as u32);
        net.start(i, node);
        net.run_until(start + Duration::from_millis(40 * (i as u64 + 1)), |_| {});
    }
    net.run_until(start + Duration::from_secs(10), |_| {});
    assert!(everyone_agrees(&net, count), "the {count} are in one game");
    net
}

fn describe(net: &Network<PeerNode>) -> String {
    net.running()
        .map(|(i, p)| format!("{i}: {}", p.proto.describe()))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn cut(net: &mut Network<PeerNode>, side_a: &[usize], side_b: &[usize], on: bool) {
    for &a in side_a {
        for &b in side_b {
            net.partition(a, b, on);
        }
    }
}

fn disconnects(peer: &PeerNode, since: usize) -> usize {
    peer.events[since..]
        .iter()
        .filter(|e| matches!(e, GameEvent::Disconnected { .. }))
        .count()
}

fn probes(peer: &PeerNode) -> u64 {
    peer.proto.stats().probes_sent
}

fn lone_peer_is_back_after_the_cut_heals(count: usize, lone: usize, seed: u64) {
    let mut net = meet(count, seed);
    // The lone one is joined: it stays joined.
    net.endpoint_mut(lone)
        .unwrap()
        .proto
        .session_mut()
        .unwrap()
        .join()
        .unwrap();
    net.run_for(Duration::from_secs(1));
    let rest: Vec<usize> = (0..count).filter(|&i| i != lone).collect();
    let lone_token = net.endpoint(lone).unwrap().token().unwrap();
    let rest_tokens: Vec<u32> = rest
        .iter()
        .map(|&i| net.endpoint(i).unwrap().token().unwrap())
        .collect();

    cut(&mut net, &[lone], &rest, true);
    net.run_for(Duration::from_secs(25));
    let alone = net.endpoint(lone).unwrap();
    assert!(
        alone.proto.session().unwrap().players().is_empty(),
        "the cut-off peer dropped the others: {}",
        describe(&net)
    );
    for &i in &rest {
        let peer = net.endpoint(i).unwrap();
        assert_eq!(
            peer.proto.session().unwrap().players().len(),
            count - 2,
            "peer {i} dropped the cut-off one and kept the rest: {}",
            describe(&net)
        );
    }
    let seen: Vec<usize> = (0..count)
        .map(|i| net.endpoint(i).unwrap().events.len())
        .collect();

    cut(&mut net, &[lone], &rest, false);
    net.run_for(Duration::from_secs(8));
    let back = net.endpoint(lone).unwrap();
    let after = &back.events[seen[lone]..];
    let told = after.iter().position(|e| {
        matches!(e, GameEvent::Disconnected { reason }
            if reason.starts_with("dropped by the other players") && reason.contains("reconnecting"))
    });
    let Some(told) = told else {
        panic!(
            "{count} players: the lone peer was never told it was dropped: {after:?}; {}",
            describe(&net)
        );
    };
    assert!(
        after[told..]
            .iter()
            .any(|e| matches!(e, GameEvent::Connected { .. })),
        "it connected again: {after:?}"
    );
    assert!(
        everyone_agrees(&net, count),
        "{count} players in one game again: {}",
        describe(&net)
    );
    assert!(back.proto.session().unwrap().is_joined(), "it stays joined");
    assert_ne!(back.token(), Some(lone_token), "a fresh session");
    for (k, &i) in rest.iter().enumerate() {
        let peer = net.endpoint(i).unwrap();
        assert_eq!(
            disconnects(peer, seen[i]),
            0,
            "the bigger game is not torn down: {:?}",
            &peer.events[seen[i]..]
        );
        assert_eq!(
            peer.token(),
            Some(rest_tokens[k]),
            "peer {i} kept its session"
        );
        assert!(
            peer.events[seen[i]..]
                .iter()
                .any(|e| matches!(e, GameEvent::PlayerConnected { .. })),
            "peer {i} saw the lone one come back"
        );
        assert_eq!(
            probes(peer),
            0,
            "peer {i} was never alone: it does not probe"
        );
    }
    let probed = probes(back);
    assert!(probed > 0, "it probed while alone");
    net.run_for(Duration::from_secs(5));
    assert_eq!(
        probes(net.endpoint(lone).unwrap()),
        probed,
        "back in the game, it probes no more"
    );
    assert!(everyone_agrees(&net, count), "{}", describe(&net));
}

#[test]
fn a_peer_cut_off_from_two_others_is_back_in_their_game_when_the_cut_heals() {
    // The lowest node and the highest (the first player, in slot 0).
    lone_peer_is_back_after_the_cut_heals(3, 0, 41);
    lone_peer_is_back_after_the_cut_heals(3, 2, 41);
}

#[test]
fn a_peer_cut_off_from_three_others_is_back_in_their_game_when_the_cut_heals() {
    lone_peer_is_back_after_the_cut_heals(4, 3, 42);
    lone_peer_is_back_after_the_cut_heals(4, 1, 42);
}

#[test]
fn two_players_cut_apart_meet_again_in_one_game() {
    // A long way apart (150 ms each way): their probes, about as often and at nearly the same
    // moments on both sides, cross on the wire.
    let far = LinkProfile {
        latency: Duration::from_millis(150),
        ..Default::default()
    };
    for seed in 0..8 {
        let mut net = meet_over(2, 50 + seed, far);
        cut(&mut net, &[0], &[1], true);
        // Each drops the other and is alone; the heal comes at a different phase of their
        // probes each seed.
        net.run_for(Duration::from_secs(25) + Duration::from_millis(137 * seed));
        let seen: Vec<usize> = (0..2)
            .map(|i| net.endpoint(i).unwrap().events.len())
            .collect();
        cut(&mut net, &[0], &[1], false);
        net.run_for(Duration::from_secs(8));
        assert!(
            everyone_agrees(&net, 2),
            "seed {seed}: one game again: {}",
            describe(&net)
        );
        // Only the lower one reconnects: the higher one keeps its game.
        let total: usize = (0..2)
            .map(|i| disconnects(net.endpoint(i).unwrap(), seen[i]))
            .sum();
        assert_eq!(total, 1, "seed {seed}: one of them reconnected");
    }
}

#[test]
fn a_two_two_split_stays_split_and_nobody_is_disturbed() {
    let mut net = meet(4, 43);
    cut(&mut net, &[0, 1], &[2, 3], true);
    net.run_for(Duration::from_secs(25));
    let seen: Vec<usize> = (0..4)
        .map(|i| net.endpoint(i).unwrap().events.len())
        .collect();
    cut(&mut net, &[0, 1], &[2, 3], false);
    net.run_for(Duration::from_secs(30));
    for (i, &since) in seen.iter().enumerate() {
        let peer = net.endpoint(i).unwrap();
        assert_eq!(
            peer.proto.session().unwrap().players().len(),
            1,
            "peer {i} stays in its game of two: {}",
            describe(&net)
        );
        assert_eq!(disconnects(peer, since), 0, "peer {i} was not disturbed");
        assert_eq!(probes(peer), 0, "peer {i} is not alone: it does not probe");
    }
}

#[test]
fn a_lone_first_player_does_not_probe() {
    let mut net: Network<PeerNode> = Network::new(2, 44, profile());
    let mut node = PeerNode::new(0);
    node.connect(net.now(), 0x100);
    net.start(0, node);
    net.run_for(Duration::from_secs(60));
    let peer = net.endpoint(0).unwrap();
    assert!(peer.proto.is_in_game());
    assert_eq!(probes(peer), 0);
    assert_eq!(
        net.stats().sent,
        peer.proto.stats().connects_sent,
        "only its connect requests went out"
    );
}

/// The players a lone peer dropped crashed: its probes go to dead ports, and a new process
/// that starts a game of its own on one of them is not disturbed by them. The probes stop by
/// themselves.
#[test]
fn probes_to_crashed_players_are_harmless_and_stop_by_themselves() {
    let mut net = meet(3, 45);
    net.crash(1);
    net.crash(2);
    net.run_for(Duration::from_secs(25));
    let lone = net.endpoint(0).unwrap();
    assert!(lone.proto.session().unwrap().players().is_empty());
    let early = probes(lone);
    assert!(early > 0, "the lone peer probes the players it dropped");

    // A new process on node 2 that cannot reach node 0 (its requests are lost): it starts a
    // game of its own, and node 0's probes reach it.
    net.set_profile(
        2,
        0,
        LinkProfile {
            loss: 1.0,
            ..profile()
        },
    );
    let mut fresh = PeerNode::new(2);
    fresh.connect(net.now(), 0x999);
    net.start(2, fresh);
    net.run_for(Duration::from_secs(30));
    let fresh = net.endpoint(2).unwrap();
    assert!(fresh.proto.is_in_game(), "{}", describe(&net));
    assert_eq!(
        fresh.events,
        vec![GameEvent::Connected { slot: 0 }],
        "the new process saw only its own game start"
    );
    assert!(
        fresh.proto.session().unwrap().stats().packets_rejected > 0,
        "the probes reached it and were refused"
    );
    let lone = net.endpoint(0).unwrap();
    assert!(probes(lone) > early, "still probing");
    assert_eq!(disconnects(lone, 0), 0);

    // Bounded: after a few minutes the probes stop.
    net.run_for(Duration::from_secs(600));
    let stopped = probes(net.endpoint(0).unwrap());
    net.run_for(Duration::from_secs(60));
    assert_eq!(
        probes(net.endpoint(0).unwrap()),
        stopped,
        "the probes stopped"
    );
    assert!(
        stopped <= 2 * 5 * 60 + 2,
        "about one a second to each: {stopped}"
    );
    assert!(net.endpoint(0).unwrap().proto.is_in_game());
}
