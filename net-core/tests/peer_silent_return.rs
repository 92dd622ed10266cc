//! A peer that went silent for longer than the others' timeout (its process stopped, its
//! machine suspended, its cable pulled) and then talks again: the others dropped it after 20 s
//! of silence (PLAYER_DISCONNECTED "no packets for 20 s"), so its packets are refused there.
//! It must learn that, and get back into the game, instead of playing on with players that no
//! longer see it until its own timeout drops them and leaves it alone in a game of its own.
//!
//! A stopped process does not see the time pass: when it runs again it reads what waited in
//! its socket before its timers run, so it does not drop the others itself. The simulation
//! models that with a longer `net.timeout` on the silent peer while it is cut off.

use std::time::Duration;

mod support;

use net_core::protocol::ClientProtocol;
use net_core::session::{GameEvent, SessionConfig};
use net_core::sim::{LinkProfile, Network};
use support::peer_node::{everyone_agrees, PeerNode};

#[test]
fn a_peer_dropped_for_silence_is_told_when_it_talks_again_and_gets_back_in() {
    let mut net = three_met([20, 20, 120], 21, 5);
    let silent_token = net.endpoint(2).unwrap().token().unwrap();
    let silent_slot = net.endpoint(2).unwrap().slot().unwrap();

    // Peer 2 goes silent (both ways) for 25 s: the others drop it after their 20 s.
    for other in [0, 1] {
        net.partition(2, other, true);
    }
    let cut = net.now();
    net.run_until(cut + Duration::from_secs(25), |_| {});
    for i in [0, 1] {
        let peer = net.endpoint(i).unwrap();
        let session = peer.proto.session().unwrap();
        assert!(
            !session.players().iter().any(|p| p.token == silent_token),
            "peer {i} dropped the silent one: {}",
            peer.proto.describe()
        );
        assert!(peer.events.iter().any(|e| matches!(e,
            GameEvent::PlayerDisconnected { slot, reason }
                if *slot == silent_slot && reason == "no packets for 20 s")));
    }
    let seen = net.endpoint(2).unwrap().events.len();

    // It talks again: within a few seconds it knows it was dropped and is back in the game.
    for other in [0, 1] {
        net.partition(2, other, false);
    }
    let healed = net.now();
    net.run_until(healed + Duration::from_secs(8), |_| {});
    let back = net.endpoint(2).unwrap();
    let after: Vec<&GameEvent> = back.events[seen..].iter().collect();
    let told = after.iter().position(|e| {
        matches!(e, GameEvent::Disconnected { reason }
            if reason.contains("dropped") && reason.contains("reconnecting"))
    });
    let Some(told) = told else {
        panic!(
            "the returning peer was never told it was dropped: {after:?}; {}",
            back.proto.describe()
        );
    };
    assert!(
        after[told..]
            .iter()
            .any(|e| matches!(e, GameEvent::Connected { .. })),
        "it connected again: {after:?}"
    );
    assert_three_in_one_game(&net);
}

/// The three peers are in one game again.
fn assert_three_in_one_game(net: &Network<PeerNode>) {
    assert!(
        everyone_agrees(net, 3),
        "the three are in one game again: {} / {} / {}",
        net.endpoint(0).unwrap().proto.describe(),
        net.endpoint(1).unwrap().proto.describe(),
        net.endpoint(2).unwrap().proto.describe()
    );
}

/// Start three peers (node 2 the highest) with the given `net.timeout`s and one-way latency
/// (ms), and let them meet.
fn three_met(timeouts: [u64; 3], seed: u64, latency_ms: u64) -> Network<PeerNode> {
    let profile = LinkProfile {
        latency: Duration::from_millis(latency_ms),
        ..Default::default()
    };
    let mut net: Network<PeerNode> = Network::new(3, seed, profile);
    let start = net.now();
    for (i, secs) in timeouts.into_iter().enumerate() {
        let mut node = PeerNode::new(i);
        node.session_config = SessionConfig {
            peer_timeout: Duration::from_secs(secs),
            ..SessionConfig::default()
        };
        node.connect(net.now(), 0x100 + i as u32);
        net.start(i, node);
        net.run_until(start + Duration::from_millis(40 * (i as u64 + 1)), |_| {});
    }
    net.run_until(start + Duration::from_secs(10), |_| {});
    assert!(everyone_agrees(&net, 3), "the three are in one game");
    net
}

/// The process stopped (SIGSTOP, a debugger, a machine suspended) inside `NETs_MaintainNet`,
/// after the frame read the clock and before it received: when it runs again, that frame reads
/// what waited in the socket with the time from before the stop, and the next frame's timers
/// see the others silent since then. It must not drop them for that: the silence was its own.
/// (The C test `demo_player_table` met this about once in 60 runs: the stopped peer, at the
/// highest node, dropped the player that had dropped it, won the two games' contest over it,
/// and was never told it had been dropped.)
#[test]
fn a_peer_stopped_inside_a_frame_does_not_drop_the_others_for_its_own_silence() {
    // Node 1 drops the stopped node 2 after 2 s; node 0 keeps it (20 s), as in the C test.
    let mut net = three_met([20, 2, 2], 5, 1);
    let stopped_slot = net.endpoint(2).unwrap().slot().unwrap();
    let dropper_slot = net.endpoint(1).unwrap().slot().unwrap();
    let seen = net.endpoint(2).unwrap().events.len();
    let stop = net.now();
    net.endpoint_mut(2).unwrap().freeze(stop);
    net.run_until(stop + Duration::from_millis(2500), |_| {});
    assert!(
        net.endpoint(1).unwrap().events.iter().any(|e| matches!(e,
            GameEvent::PlayerDisconnected { slot, reason }
                if *slot == stopped_slot && reason == "no packets for 2 s")),
        "node 1 dropped the stopped peer"
    );
    net.endpoint_mut(2).unwrap().thaw();
    let woke = net.now();
    net.run_until(woke + Duration::from_secs(8), |_| {});

    let back = net.endpoint(2).unwrap();
    let after = &back.events[seen..];
    let dropped_others: Vec<&GameEvent> = after
        .iter()
        .filter(|e| matches!(e, GameEvent::PlayerDisconnected { reason, .. } if reason.starts_with("no packets")))
        .collect();
    assert!(
        dropped_others.is_empty(),
        "the stopped peer dropped others for its own silence: {dropped_others:?}"
    );
    assert!(
        after
            .iter()
            .any(|e| matches!(e, GameEvent::Disconnected { reason }
            if reason.contains("dropped") && reason.contains("reconnecting"))),
        "the stopped peer was told it had been dropped: {after:?}"
    );
    assert_three_in_one_game(&net);
    // Node 1 stayed in its game: it was the stopped peer that left and came back.
    assert_eq!(net.endpoint(1).unwrap().slot(), Some(dropper_slot));
    assert!(!net
        .endpoint(1)
        .unwrap()
        .events
        .iter()
        .any(|e| matches!(e, GameEvent::Disconnected { .. })));
}
