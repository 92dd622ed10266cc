//! Players that leave their game to connect again, and the players they leave behind; and a
//! peer alone in a game of its own that knocks at its `connect` address (simulated).
//!
//! - Two games of two on one network (each pair connected to each other's address). A player of
//!   the first is told by a player of the second that it is not in that game (a stranger
//!   notice, forged here: in a real run it comes from a game whose startup went wrong) and moves
//!   there. Its mate, alone now, probes it, and the mover asks it over: all four end in one game.
//!   Before, the mate stayed alone in its game for good.
//! - A peer whose connect loop ended while the peer at its `connect` address was stopped plays
//!   alone; once that peer runs again and plays, the lone one knocks there and moves in.

use std::time::Duration;

mod support;

use net_core::protocol::ClientProtocol;
use net_core::rmev::{ChatText, ConnectRequest, PlayerListEntry, PlayerName, RemoteEvent};
use net_core::session::GameEvent;
use net_core::sim::{self, LinkProfile, Network, Transmit};
use net_core::wire::{encode_packet, PacketHeader, PacketType, WireEvent};
use support::peer_node::{everyone_agrees, start_by_address, PeerNode};

/// What a peer says to a player that thinks it is in its game while it was never seated there.
const STRANGER_NOTICE: &str =
    "not in the other players' game (the player that let you in left before telling them); reconnecting";

/// What the one left behind is told when the mover asks it over.
const MOVED_NOTICE: &str = "players of your game moved to another one; reconnecting";

fn describe(net: &Network<PeerNode>) -> String {
    net.running()
        .map(|(i, p)| format!("p{i}: {} {:?}", p.proto.describe(), p.errors()))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The player list of the game `peer` plays in, itself included.
fn list_of(peer: &PeerNode) -> Vec<PlayerListEntry> {
    let session = peer.proto.session().expect("in a game");
    let me = PlayerListEntry {
        slot: session.my_slot(),
        joined: false,
        token: peer.token().expect("in a game"),
        node: sim::node(peer.index),
        name: PlayerName::new(format!("p{}", peer.index).as_bytes()).unwrap(),
    };
    std::iter::once(me)
        .chain(session.players().iter().map(|p| p.list_entry()))
        .collect()
}

/// The notice `teller` would send `told` (token `told_token`) if `told` sent it game packets.
fn stranger_notice(teller: &PeerNode, told: usize, told_token: u32) -> Transmit {
    let header = PacketHeader {
        kind: PacketType::ConnectRefused,
        sender_slot: teller.slot(),
        joined: false,
        sequence: 7,
        ack: None,
        token: teller.token().unwrap(),
    };
    let events: Vec<WireEvent> = [
        RemoteEvent::ConnectQueue(vec![ConnectRequest {
            token: told_token,
            node: sim::node(told),
            name: Default::default(),
        }]),
        RemoteEvent::SendText(ChatText::new(STRANGER_NOTICE.as_bytes()).unwrap()),
        RemoteEvent::PlayerList(list_of(teller)),
    ]
    .into_iter()
    .map(|event| WireEvent {
        reliable_id: event.is_reliable().then_some(1),
        event,
    })
    .collect();
    let mut buf = vec![0u8; 1400];
    let len = encode_packet(&mut buf, &header, None, &events).unwrap();
    buf.truncate(len);
    Transmit {
        to: sim::node(told),
        data: buf,
    }
}

/// Player `i` never left its game (no `NET_EVENT_DISCONNECTED`).
fn assert_stayed_in_its_game(net: &Network<PeerNode>, i: usize) {
    let peer = net.endpoint(i).unwrap();
    assert!(
        !peer
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::Disconnected { .. })),
        "player {i} stayed in its game: {:?}",
        peer.events
    );
}

/// Players 0 and 1 in one game, 2 and 3 in another (tokens 0x100 + node); then player 2 tells
/// player 0 it is not in its game.
fn two_games_and_a_mover() -> Network<PeerNode> {
    let mut net: Network<PeerNode> = Network::new(4, 9, LinkProfile::default());
    start_by_address(&mut net, &[(0, 1), (1, 0)]);
    start_by_address(&mut net, &[(2, 3), (3, 2)]);
    let games: Vec<usize> = net
        .running()
        .map(|(_, p)| p.proto.session().map_or(0, |s| s.players().len()))
        .collect();
    assert_eq!(games, [1, 1, 1, 1], "two games of two: {}", describe(&net));
    let notice = stranger_notice(net.endpoint(2).unwrap(), 0, 0x100);
    net.endpoint_mut(2).unwrap().outbox.push_back(notice);
    net
}

#[test]
fn a_player_whose_only_mate_moved_to_another_game_is_asked_over_and_follows() {
    let mut net = two_games_and_a_mover();
    net.run_for(Duration::from_secs(10));
    assert!(
        everyone_agrees(&net, 4),
        "one game of four: {}",
        describe(&net)
    );
    let left_behind = net.endpoint(1).unwrap();
    assert!(
        left_behind
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::Disconnected { reason } if reason == MOVED_NOTICE)),
        "player 1 was asked over: {:?}",
        left_behind.events
    );
    assert_eq!(left_behind.proto.stats().movers_probed, 1);
    assert!(net.endpoint(0).unwrap().proto.stats().left_behind_invited >= 1);
    // The game the two moved into only saw players arrive.
    for i in [2, 3] {
        assert_stayed_in_its_game(&net, i);
    }
}

#[test]
fn players_left_behind_whose_game_wins_are_not_asked_over() {
    // Four in the first game (0, 1, 4, 5), two in the second (2, 3). Player 0 moves to the
    // second: three there, three left behind, who probe it. Of two games as big, the one holding
    // the highest node wins: the one left behind (node 5). Nobody is asked over; both play on.
    let mut net: Network<PeerNode> = Network::new(6, 11, LinkProfile::default());
    start_by_address(&mut net, &[(0, 5), (1, 5), (4, 5), (5, 0)]);
    start_by_address(&mut net, &[(2, 3), (3, 2)]);
    let size = |net: &Network<PeerNode>, i: usize| {
        net.endpoint(i)
            .and_then(|p| p.proto.session())
            .map_or(0, |s| s.players().len() + 1)
    };
    assert_eq!(
        size(&net, 5),
        4,
        "four in the first game: {}",
        describe(&net)
    );
    let notice = stranger_notice(net.endpoint(2).unwrap(), 0, 0x100);
    net.endpoint_mut(2).unwrap().outbox.push_back(notice);
    net.run_for(Duration::from_secs(10));
    for i in 0..6 {
        assert_eq!(
            size(&net, i),
            3,
            "player {i} in a game of three: {}",
            describe(&net)
        );
    }
    for i in [1, 4, 5] {
        assert_stayed_in_its_game(&net, i);
        let peer = net.endpoint(i).unwrap();
        assert_eq!(
            peer.proto.stats().movers_probed,
            1,
            "player {i} probed the mover"
        );
    }
    assert_eq!(
        net.endpoint(0).unwrap().proto.stats().left_behind_invited,
        0
    );
}

#[test]
fn a_peer_whose_connect_address_was_stopped_through_its_loop_knocks_there_and_joins() {
    // Players 0 and 1 play. Player 0's process stops for 5 s; meanwhile player 2 connects to
    // its address, hears nothing for its whole connect loop (3.3 s) and plays alone. Once player
    // 0 runs again, the lone player knocks there and moves into the game.
    let mut net: Network<PeerNode> = Network::new(3, 13, LinkProfile::default());
    start_by_address(&mut net, &[(0, 1), (1, 0)]);
    let stop = net.now();
    net.endpoint_mut(0).unwrap().freeze(stop);
    let mut lone = PeerNode::new(2);
    lone.connect_to(net.now(), 0x102, 0);
    net.start(2, lone);
    net.run_for(Duration::from_secs(5));
    let lone = net.endpoint(2).unwrap();
    assert_eq!(
        lone.proto.session().map(|s| s.players().len()),
        Some(0),
        "player 2 plays alone while player 0 is stopped: {}",
        describe(&net)
    );
    net.endpoint_mut(0).unwrap().thaw();
    net.run_for(Duration::from_secs(5));
    assert!(
        everyone_agrees(&net, 3),
        "one game of three: {}",
        describe(&net)
    );
    for i in [0, 1] {
        assert_stayed_in_its_game(&net, i);
    }
    let lone = net.endpoint(2).unwrap();
    assert!(lone.proto.stats().knocks_answered == 1, "{:?}", lone.events);
    assert!(
        lone.events
            .iter()
            .any(|e| matches!(e, GameEvent::Disconnected { reason }
            if reason == "the game at your connect address answered at last; reconnecting")),
        "{:?}",
        lone.events
    );
}

#[test]
fn a_peer_alone_after_its_only_mate_quit_knocks_at_its_address_and_joins_its_next_game() {
    // Players 0 and 1 play (1 connected to 0's address). Player 0 quits; player 1 plays on
    // alone and knocks at player 0's address. Player 0's game starts again there (a new process
    // connecting by broadcast, alone at first) and player 2 joins it: player 1 moves in.
    let mut net: Network<PeerNode> = Network::new(3, 17, LinkProfile::default());
    start_by_address(&mut net, &[(0, 1), (1, 0)]);
    let now = net.now();
    net.endpoint_mut(0)
        .unwrap()
        .proto
        .disconnect(now, "quit")
        .unwrap();
    net.run_for(Duration::from_secs(2));
    net.crash(0);
    net.partition(0, 1, true);
    let mut again = PeerNode::new(0);
    again.connect(net.now(), 0x200);
    net.start(0, again);
    net.run_for(Duration::from_secs(4));
    let mut third = PeerNode::new(2);
    third.connect_to(net.now(), 0x202, 0);
    net.start(2, third);
    net.run_for(Duration::from_secs(4));
    net.partition(0, 1, false);
    net.run_for(Duration::from_secs(5));
    assert!(
        everyone_agrees(&net, 3),
        "one game of three: {}",
        describe(&net)
    );
    assert_eq!(net.endpoint(1).unwrap().proto.stats().knocks_answered, 1);
}

#[test]
fn two_lone_peers_knocking_at_each_other_end_in_one_game() {
    // Players 0 and 1 connect to each other's address while the path between them is cut: each
    // ends its loop alone and knocks at the other, 40 ms apart. With 60 ms each way the knocks
    // cross once the path heals: each answers the other's knock by seating it, so each game
    // lists both, in slot 0 and 1 the other way round, and the slot-conflict rule sends the
    // higher token to connect again. Had both taken the other's offer, they would have
    // swapped games.
    let slow = LinkProfile {
        latency: Duration::from_millis(60),
        ..LinkProfile::default()
    };
    let mut net: Network<PeerNode> = Network::new(2, 19, slow);
    net.partition(0, 1, true);
    start_by_address(&mut net, &[(0, 1), (1, 0)]);
    let alone = |net: &Network<PeerNode>, i: usize| {
        net.endpoint(i)
            .and_then(|p| p.proto.session())
            .is_some_and(|s| s.players().is_empty())
    };
    assert!(alone(&net, 0) && alone(&net, 1), "{}", describe(&net));
    net.partition(0, 1, false);
    net.run_for(Duration::from_secs(5));
    assert!(
        everyone_agrees(&net, 2),
        "one game of two: {}",
        describe(&net)
    );
    let left = |i: usize| {
        net.endpoint(i)
            .unwrap()
            .events
            .iter()
            .filter(|e| matches!(e, GameEvent::Disconnected { .. }))
            .count()
    };
    assert_eq!(
        left(0) + left(1),
        1,
        "exactly one of the two left its game once"
    );
}
