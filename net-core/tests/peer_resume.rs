//! Stream resumption in the network simulator: three peers play, each sending a numbered
//! reliable event every 20 ms, and one after another they switch packet backend (leave the game,
//! come back at a new address with what the old session left, `Session::resume_state_for_next`),
//! under loss, duplication and jitter. Every number a sender queued while a receiver was in its
//! game reaches that receiver exactly once and in order, across both of their switches; nothing
//! is ever delivered twice or out of order.

mod support;

use support::seeds::env_number;

use std::collections::BTreeMap;
use std::time::Duration;

use net_core::protocol::ClientProtocol;
use net_core::rmev::{
    ConnectRequest, CustomData, EarlierTokens, PlayerName, RemoteEvent, ResumeStep, ShipState,
};
use net_core::session::GameEvent;
use net_core::sim::{self, LinkProfile, Network, Rng, Transmit};
use net_core::wire::{encode_packet, PacketHeader, PacketType, WireEvent};
use support::peer_node::{random_token, PeerNode};

/// The numbered series' custom event type is 100 + the sender's player number.
const SERIES_TYPE: u16 = 100;

/// One player across its incarnations (a switch moves it to a new network node and token).
struct Player {
    node: usize,
    tokens: Vec<u32>,
    /// Events the game got, from every incarnation, in order.
    events: Vec<GameEvent>,
    next_number: u32,
    /// Each number this player's session accepted, with the players then in its game.
    sent: Vec<(u32, Vec<usize>)>,
}

fn series_event(player: usize, number: u32) -> RemoteEvent {
    RemoteEvent::Custom {
        custom_type: SERIES_TYPE + player as u16,
        data: CustomData::new(&number.to_be_bytes()).unwrap(),
        reliable: true,
    }
}

/// What `events` say `receiver` got from each sender, in arrival order.
fn received(events: &[GameEvent]) -> BTreeMap<usize, Vec<u32>> {
    let mut got: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for event in events {
        if let GameEvent::Remote {
            event: RemoteEvent::Custom {
                custom_type, data, ..
            },
            ..
        } = event
        {
            if let Some(sender) = custom_type.checked_sub(SERIES_TYPE) {
                let number = u32::from_be_bytes(data.as_bytes().try_into().unwrap());
                got.entry(usize::from(sender)).or_default().push(number);
            }
        }
    }
    got
}

struct Run {
    net: Network<PeerNode>,
    players: Vec<Player>,
    rng: Rng,
}

impl Run {
    fn start(seed: u64, loss: f64) -> Run {
        Run::start_with(3, seed, loss)
    }

    /// `count` players (at most 4, a full peer-to-peer game) meet and play for 6 s (longer while
    /// one still waits for its slot).
    fn start_with(count: usize, seed: u64, loss: f64) -> Run {
        let mut rng = Rng::new(seed);
        let profile = LinkProfile {
            latency: Duration::from_millis(2 + rng.below(20)),
            jitter: Duration::from_millis(rng.below(20)),
            loss,
            duplicate: 0.03,
        };
        let mut net: Network<PeerNode> = Network::new(count, seed, profile);
        let mut players = Vec::new();
        for index in 0..count {
            let token = random_token(&mut rng);
            let mut node = PeerNode::new(index);
            node.connect(net.now(), token);
            net.start(index, node);
            net.run_for(Duration::from_millis(30));
            players.push(Player {
                node: index,
                tokens: vec![token],
                events: Vec::new(),
                next_number: 1,
                sent: Vec::new(),
            });
        }
        let mut run = Run { net, players, rng };
        run.play_for(Duration::from_secs(6));
        // Under heavy loss a slave's requests and the master's replies can miss each other for
        // a few rounds (seed 76564: 7 of 9 datagrams lost in a row on one path): give it the
        // slot-request loop's length (20 requests about 670 ms apart) before calling it lost.
        for _ in 0..14 {
            if run.everyone_in_game() {
                break;
            }
            run.play_for(Duration::from_secs(1));
        }
        assert!(
            run.everyone_in_game(),
            "seed {seed}: the {count} players did not meet: {:?}",
            run.describe()
        );
        run
    }

    fn describe(&self) -> Vec<String> {
        self.net
            .running()
            .map(|(i, p)| {
                let players: Vec<String> = p
                    .proto
                    .session()
                    .map(|s| {
                        s.players()
                            .iter()
                            .map(|pl| format!("slot {} token {:x}", pl.slot, pl.token))
                            .collect()
                    })
                    .unwrap_or_default();
                format!(
                    "node {i} (token {:x?}): {}; {players:?}",
                    p.token(),
                    p.proto.describe()
                )
            })
            .collect()
    }

    /// Every running player's session lists all the others.
    fn everyone_in_game(&self) -> bool {
        let running = self
            .players
            .iter()
            .filter(|p| self.net.is_running(p.node))
            .count();
        self.players
            .iter()
            .filter(|p| self.net.is_running(p.node))
            .all(|p| {
                self.net
                    .endpoint(p.node)
                    .and_then(|n| n.proto.session())
                    .is_some_and(|s| s.players().len() + 1 == running)
            })
    }

    /// Which players the session of `player` has in its game now.
    fn present_for(&self, player: usize) -> Vec<usize> {
        let Some(session) = self
            .net
            .endpoint(self.players[player].node)
            .and_then(|n| n.proto.session())
        else {
            return Vec::new();
        };
        (0..self.players.len())
            .filter(|&other| other != player)
            .filter(|&other| {
                session
                    .players()
                    .iter()
                    .any(|p| self.players[other].tokens.last() == Some(&p.token))
            })
            .collect()
    }

    /// Run the game: every 20 ms each player in a session queues its next number.
    fn play_for(&mut self, duration: Duration) {
        let end = self.net.now() + duration;
        while self.net.now() < end {
            for player in 0..self.players.len() {
                let present = self.present_for(player);
                let number = self.players[player].next_number;
                let node = self.players[player].node;
                let accepted = self
                    .net
                    .endpoint_mut(node)
                    .and_then(|n| n.proto.session_mut())
                    .is_some_and(|s| s.queue_event(series_event(player, number)).is_ok());
                if accepted {
                    self.players[player].sent.push((number, present));
                    self.players[player].next_number += 1;
                }
            }
            let step = self.net.now() + Duration::from_millis(20);
            self.net.run_until(step, |_| {});
            self.collect_events();
        }
    }

    fn collect_events(&mut self) {
        for player in &mut self.players {
            if let Some(node) = self.net.endpoint_mut(player.node) {
                player.events.append(&mut node.events);
            }
        }
    }

    /// After the switches: play on for 6 s (everyone must be back in the game by then, or
    /// within the slot-request loop's length), stop sending, let every queue drain, and check
    /// what everyone got.
    fn settle(&mut self, what: &str) -> (usize, usize) {
        self.play_for(Duration::from_secs(6));
        // As at the start, a slave whose master's replies keep getting lost gets the rest of
        // its slot-request loop (seed 224734: six replies in a row lost under 20 % loss, the
        // seventh arrived 6.1 s after the switches).
        for _ in 0..8 {
            if self.everyone_in_game() {
                break;
            }
            self.play_for(Duration::from_secs(1));
        }
        assert!(
            self.everyone_in_game(),
            "{what}: not everyone came back: {:?}",
            self.describe()
        );
        self.drain_and_check(what, &[])
    }

    /// Stop sending, let every queue drain for 10 s, and check what everyone got (see `check`).
    fn drain_and_check(&mut self, what: &str, restarted: &[usize]) -> (usize, usize) {
        let end = self.net.now() + Duration::from_secs(10);
        self.net.run_until(end, |_| {});
        self.collect_events();
        self.check(what, restarted)
    }

    /// `player` switches backend: leaves, and connects again from a new node with a new token
    /// and what its session left.
    fn switch(&mut self, player: usize) {
        let old = self.players[player].node;
        let now = self.net.now();
        let node = self.net.endpoint_mut(old).expect("running");
        let resume = node
            .proto
            .session()
            .expect("in a session")
            .resume_state_for_next();
        node.proto.disconnect(now, "switching").expect("disconnect");
        node.drain();
        self.net.run_for(Duration::from_millis(1));
        self.collect_events();
        self.net.crash(old);
        let new = self.net.add_node();
        let token = random_token(&mut self.rng);
        support::sim_log::enter(new, self.net.now());
        support::sim_log::log_line(&format!("player {player} switches from node {old}"));
        let mut node = PeerNode::new(new);
        node.connect_resuming(self.net.now(), token, Some(resume));
        self.net.start(new, node);
        self.players[player].node = new;
        self.players[player].tokens.push(token);
    }

    /// Every owed number arrived exactly once and in order; nothing arrived twice or out of
    /// order. Players in `restarted` lost their streams on purpose: what they were owed or owed
    /// others is not checked, only order and uniqueness. Returns (owed, delivered) counts.
    fn check(&self, what: &str, restarted: &[usize]) -> (usize, usize) {
        let mut owed_total = 0;
        let mut delivered_total = 0;
        for (receiver, r) in self.players.iter().enumerate() {
            let got = received(&r.events);
            for (sender, s) in self.players.iter().enumerate() {
                if sender == receiver {
                    continue;
                }
                let numbers = got.get(&sender).cloned().unwrap_or_default();
                let bad: Vec<&[u32]> = numbers.windows(2).filter(|w| w[0] >= w[1]).collect();
                assert!(
                    bad.is_empty(),
                    "{what}: {receiver} got {sender}'s numbers twice or out of order at {bad:?} (of {})",
                    numbers.len()
                );
                if restarted.contains(&sender) || restarted.contains(&receiver) {
                    delivered_total += numbers.len();
                    continue;
                }
                let owed: Vec<u32> = s
                    .sent
                    .iter()
                    .filter(|(_, present)| present.contains(&receiver))
                    .map(|(n, _)| *n)
                    .collect();
                let missing: Vec<u32> = owed
                    .iter()
                    .copied()
                    .filter(|n| numbers.binary_search(n).is_err())
                    .collect();
                assert!(
                    missing.is_empty(),
                    "{what}: {receiver} never got {} of {sender}'s numbers it was owed: {missing:?}",
                    missing.len()
                );
                owed_total += owed.len();
                delivered_total += numbers.len();
            }
        }
        (owed_total, delivered_total)
    }
}

fn switching_run(seed: u64, loss: f64) -> (usize, usize) {
    let mut run = Run::start(seed, loss);
    // One after another, 100 ms apart, like players typing `net.api` on a LAN.
    for player in 0..3 {
        run.switch(player);
        run.play_for(Duration::from_millis(100));
    }
    run.settle(&format!("seed {seed}"))
}

/// Seeds beyond the default range that once broke a game (3,000 seeds searched), run every
/// time: 428 and 1134 left a player's ghost in its slot at one peer after its DISCONNECT was
/// lost, which then refused the player coming back in that slot (a split mesh: 302 events
/// never delivered); 2198 moved a player listed in the wrong slot to the slot it claimed with
/// a fresh link, whose restarted sequence and ids the player dropped as old (3 events lost);
/// 1439 and 1444 (searched up to 4,000): the highest player seated a switching player and
/// switched away itself before its new player list reached the third, so the switched player
/// listed the third, which rejected its packets as from an unknown sender, and neither ever
/// seated the other; 166114 (searched up to 166,114): a switched player's new session was
/// listed by the others 4.8 s before its own seat was confirmed, and the wait for its RE_RESUME
/// answer, counted from the listing, ran out just after it spoke, so what was parked for its
/// earlier session was given up (6 events lost); 43834: a player removed on another's hello
/// naming it, whose link never heard from it, was kept aside after that hello had looked for
/// what to resume, so the events held for it were never resumed (2 lost; found in the sweep
/// of the change that keeps such links aside); 224734 (searched up to 259,999): six replies in
/// a row to a slave lost, which came back only after the 6 s `settle` allowed (see there).
const REGRESSION_SEEDS: [u64; 8] = [428, 1134, 2198, 1439, 1444, 166114, 43834, 224734];

#[test]
fn switching_players_keep_every_owed_event_exactly_once_and_in_order_under_loss() {
    // PEER_RESUME_FIRST and PEER_RESUME_RUNS search other seeds (docs/fuzzing.md).
    let runs = env_number("PEER_RESUME_RUNS").unwrap_or(100);
    let first = env_number("PEER_RESUME_FIRST").unwrap_or(0);
    let (mut owed, mut delivered) = (0, 0);
    for seed in (first..first + runs).chain(REGRESSION_SEEDS) {
        let loss = (seed % 5) as f64 * 0.05;
        let (o, d) = switching_run(seed, loss);
        owed += o;
        delivered += d;
    }
    println!("{runs} runs: {owed} owed events all delivered once, in order ({delivered} delivered in all)");
}

/// Three or four players (a full game) switch at random moments, one to four times in all, the
/// same player perhaps twice in a row, 50 ms to 1.5 s apart, under 0-20% loss.
fn random_switches_run(seed: u64) -> (usize, usize) {
    let mut rng = Rng::new(seed ^ 0x5717C4);
    let loss = rng.unit() * 0.2;
    let players = 3 + rng.below(2) as usize;
    let mut run = Run::start_with(players, seed, loss);
    for _ in 0..1 + rng.below(4) {
        // A player still coming back from its last switch has no session to leave yet.
        let in_session: Vec<usize> = (0..run.players.len())
            .filter(|&p| {
                run.net
                    .endpoint(run.players[p].node)
                    .is_some_and(|n| n.proto.session().is_some())
            })
            .collect();
        if let Some(&player) = in_session.get(rng.below(in_session.len().max(1) as u64) as usize) {
            run.switch(player);
        }
        let gap = Duration::from_millis(50 + rng.below(1450));
        run.play_for(gap);
    }
    run.settle(&format!("seed {seed} (random switches, loss {loss:.2})"))
}

#[test]
fn randomly_timed_switches_keep_every_owed_event_exactly_once_and_in_order() {
    // PEER_SWITCH_FIRST and PEER_SWITCH_RUNS search other seeds (docs/fuzzing.md).
    let runs = env_number("PEER_SWITCH_RUNS").unwrap_or(40);
    let first = env_number("PEER_SWITCH_FIRST").unwrap_or(0);
    // Seeds that once failed: a newcomer that had yielded to another newcomer waited out its
    // slot requests (13 s) after that one, seated and holding its request, switched away
    // (219 1059 3333 3999 8188 9119); a player that reconnected at the same address after a
    // slot conflict took a packet another player had written for its earlier session, and
    // lost an event of the new link that had the same sequence (3451); a player coming back
    // was refused as full by the highest player, which still seated its earlier session and had
    // its request only forwarded by the others, without the hello naming that session (4122
    // 4434 5433 7132 7716 7920); a player whose claim on a departed player's seat was still
    // undecided gave a newcomer a list with the departed player and not its new session, and
    // the two never met (226 4459); a player that had just seated a newcomer at a higher node
    // left the others' requests to it before it had heard from it, and one of them ended its
    // connect loop meanwhile and started a game of its own (12352); a newcomer that had yielded
    // to another newcomer, which was seated before the request reached it and then switched
    // away, asked the dead node for its slot while a third newcomer at a higher node started a
    // game alone (23365); a player a peer had seated in a slot another had already given was
    // moved out of it by the slot's real player and seated again in its own with a new link,
    // and the events queued on the first were lost when the peer switched before the two had
    // finished resuming (74099); a player's goodbye named the slot it believed it held, not the
    // one a peer listed it in, was refused there, and its next session was refused in that
    // slot for as long as the stale entry lived (3594, passing once and broken since); a
    // player seated a newcomer with a list that still named a switched player's earlier session,
    // then learnt the new session from its own packets but told nobody, and the newcomer and the
    // switched player never met (74864); a player that lost a slot conflict reconnected from
    // the same node under a new token, its connect request to a newcomer was lost, and the
    // newcomer, which listed its earlier session there, refused the new one's packets (and so
    // its RE_RESUME) until both gave up waiting for answers (224347); a newcomer seated with a
    // list that still named a switched player's earlier session kept that entry, never heard
    // from, when the seater's next list named the new session, while the new session kept the
    // newcomer's earlier session in its slot: each waited for the other's first packet
    // (322048); a list seated a player's earlier session for a moment in place of its new one,
    // and that empty link, parked when the new one's hello named it, said the events queued
    // meanwhile were delivered (1327, 20157: found while fixing 322048); a list naming a
    // player's own earlier session in the slot it had just given a newcomer displaced the
    // newcomer, whose reply was lost, and nobody sat there any more: the newcomer waited out its
    // slot-request loop (49118, found in the sweep of the same change).
    const REGRESSIONS: [u64; 25] = [
        219, 226, 1059, 3333, 3451, 3594, 3999, 4122, 4434, 4459, 5433, 7132, 7716, 7920, 8188,
        9119, 12352, 23365, 74099, 74864, 224347, 322048, 1327, 20157, 49118,
    ];
    let mut owed = 0;
    for seed in REGRESSIONS.into_iter().chain(first..first + runs) {
        owed += random_switches_run(seed).0;
    }
    println!("{runs} runs: {owed} owed events all delivered once, in order");
}

#[test]
fn a_player_that_comes_back_without_what_its_session_left_gets_no_old_events_twice() {
    // The player reconnects with nothing carried (a restart): the others' parked streams find no
    // match and nothing old is sent again; new events flow as usual.
    let mut run = Run::start(7, 0.1);
    let old = run.players[2].node;
    let now = run.net.now();
    run.net
        .endpoint_mut(old)
        .unwrap()
        .proto
        .disconnect(now, "restart")
        .unwrap();
    run.net.run_for(Duration::from_millis(1));
    run.collect_events();
    run.net.crash(old);
    let new = run.net.add_node();
    let token = random_token(&mut run.rng);
    let mut node = PeerNode::new(new);
    node.connect(run.net.now(), token);
    run.net.start(new, node);
    // A restart is a new player.
    run.players.push(Player {
        node: new,
        tokens: vec![token],
        events: Vec::new(),
        next_number: 1,
        sent: Vec::new(),
    });
    run.play_for(Duration::from_secs(6));
    assert!(run.everyone_in_game(), "{:?}", run.describe());
    // Ordered and without duplicates everywhere; between the others and the new player,
    // everything owed arrives.
    let (owed, _) = run.drain_and_check("seed 7", &[2]);
    assert!(owed > 500, "the new player and the others exchanged {owed}");
}

#[test]
fn a_peer_that_missed_a_goodbye_lets_the_player_back_into_its_old_slot() {
    // Player 2's DISCONNECT never reaches player 0, so player 0 keeps a ghost of it, heard
    // from moments ago, in the slot the others free and seat player 2 in again when it comes
    // back from its switch. Player 0 must not refuse the returning player as an impostor.
    // Its connect requests are lost to player 0 too (else they would name the ghost as its
    // earlier session, and player 0 would retire it at once).
    let mut run = Run::start(11, 0.0);
    let ghost_holder = run.players[0].node;
    let old = run.players[2].node;
    run.net.partition(old, ghost_holder, true);
    run.switch(2);
    let new = run.players[2].node;
    run.net.partition(new, ghost_holder, true);
    run.play_for(Duration::from_millis(500));
    run.net.partition(new, ghost_holder, false);
    run.play_for(Duration::from_secs(6));
    assert!(run.everyone_in_game(), "{:?}", run.describe());
    // It came back once and stayed: not bounced by a slot conflict into reconnecting under
    // yet another token.
    let returned = *run.players[2].tokens.last().unwrap();
    let back = run.net.endpoint(run.players[2].node).unwrap();
    assert_eq!(back.token(), Some(returned), "{:?}", run.describe());
    let holder = &run.net.endpoint(ghost_holder).unwrap().proto;
    assert!(
        holder
            .session()
            .unwrap()
            .players()
            .iter()
            .any(|p| p.token == returned),
        "{:?}",
        run.describe()
    );
    assert_eq!(holder.stats().slot_conflicts, 0);
    assert_eq!(
        holder.stats().silent_holders_replaced,
        1,
        "the ghost gave way once it was silent: {:?}",
        holder.stats()
    );
    let (owed, _) = run.drain_and_check("seed 11", &[]);
    assert!(owed > 0);
}

#[test]
fn a_full_game_lets_a_player_back_in_that_a_peer_still_seats() {
    // Four players, the most a peer-to-peer game seats. Player 3's DISCONNECT never reaches
    // player 2, which therefore still seats it, finds the game full, and (as the highest node,
    // the first to answer) would refuse it when it comes back. Its connect request names its
    // earlier session, so player 2 retires that first.
    let mut run = Run::start_with(4, 21, 0.0);
    let stale = run.players[2].node;
    let old = run.players[3].node;
    run.net.partition(old, stale, true);
    run.switch(3);
    run.play_for(Duration::from_secs(6));
    assert!(run.everyone_in_game(), "{:?}", run.describe());
    let errors: Vec<&GameEvent> = run.players[3]
        .events
        .iter()
        .filter(|e| matches!(e, GameEvent::Error { .. }))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let peer = &run.net.endpoint(stale).unwrap().proto;
    assert_eq!(
        peer.stats().earlier_sessions_retired,
        1,
        "{:?}",
        peer.stats()
    );
    let (owed, _) = run.drain_and_check("seed 21", &[]);
    assert!(owed > 0);
}

#[test]
fn a_joined_player_is_joined_again_after_its_switch_and_its_ship_flies_on() {
    // Everyone joined; player 1 flies somewhere and switches backend. Its next session joins
    // again by itself (the switch is transparent to the game): the others see it join once and
    // get its ship state, and it sees each of them join once.
    let ship = ShipState {
        pos: [4.0, 5.0, 6.0],
        ..ShipState::default()
    };
    let mut run = Run::start(3, 0.05);
    for player in 0..3 {
        let node = run.players[player].node;
        let session = run.net.endpoint_mut(node).unwrap().proto.session_mut();
        let session = session.expect("in the game");
        session.join().unwrap();
        if player == 1 {
            session.set_local_state(ship);
        }
    }
    run.play_for(Duration::from_secs(1));
    run.switch(1);
    run.settle("seed 3 (joined players)");
    let back = run.net.endpoint(run.players[1].node).unwrap();
    let back = back.proto.session().expect("back in the game");
    assert!(back.is_joined(), "{:?}", run.describe());
    // What the game of `who` heard about `slot` since it last appeared there.
    let joins_since_seated = |who: usize, slot: u8| {
        let events = &run.players[who].events;
        let seated = events
            .iter()
            .rposition(|e| matches!(e, GameEvent::PlayerConnected { slot: s, .. } if *s == slot))
            .unwrap_or_else(|| panic!("{who} never saw slot {slot}: {events:?}"));
        events[seated..]
            .iter()
            .filter(|e| {
                matches!(e, GameEvent::PlayerJoined { slot: s } | GameEvent::PlayerUnjoined { slot: s, .. } if *s == slot)
            })
            .count()
    };
    for other in [0, 2] {
        let session = run.net.endpoint(run.players[other].node).unwrap();
        let session = session.proto.session().unwrap();
        let seen = session
            .players()
            .iter()
            .find(|p| p.token == back.my_token())
            .expect("the others seat it again");
        assert!(seen.joined, "{other} sees it unjoined");
        assert_eq!(seen.state, ship, "{other} has its ship state");
        assert_eq!(
            joins_since_seated(other, seen.slot),
            1,
            "{other} heard it join once"
        );
        assert_eq!(
            joins_since_seated(1, session.my_slot()),
            1,
            "it heard {other} join once"
        );
    }
}

/// A CONNECT from `from` with `token`, asking for a seat and naming `victim` as the sender's
/// earlier session (the RE_RESUME hello of a backend switch), as anyone can write it: every
/// player is told the others' tokens.
fn forged_resume_connect(token: u32, from: usize, victim: u32) -> Vec<u8> {
    let header = PacketHeader {
        kind: PacketType::Connect,
        sender_slot: None,
        joined: false,
        sequence: 1,
        ack: None,
        token,
    };
    let events = [
        WireEvent {
            reliable_id: Some(1),
            event: RemoteEvent::ConnectQueue(vec![ConnectRequest {
                token,
                node: sim::node(from),
                name: PlayerName::new(b"forger").unwrap(),
            }]),
        },
        WireEvent {
            reliable_id: Some(1),
            event: RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::new([victim]))),
        },
    ];
    let mut buf = vec![0u8; 1400];
    let len = encode_packet(&mut buf, &header, None, &events).unwrap();
    buf.truncate(len);
    buf
}

impl Run {
    /// `from` sends `data` to the nodes `to`, ten times 330 ms apart (a connect loop), while
    /// the game goes on.
    fn send_repeatedly(&mut self, from: usize, to: &[usize], data: &[u8]) {
        for _ in 0..10 {
            for &target in to {
                self.net
                    .endpoint_mut(from)
                    .unwrap()
                    .outbox
                    .push_back(Transmit {
                        to: sim::node(target),
                        data: data.to_vec(),
                    });
            }
            self.play_for(Duration::from_millis(330));
        }
    }

    /// Whether the game of `who` saw anyone leave.
    fn saw_a_departure(&self, who: usize) -> bool {
        self.players[who]
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::PlayerDisconnected { .. }))
    }

    /// `who` saw nobody leave and retired no earlier session; with `refused`, it also refused
    /// at least one claim of an earlier session.
    #[track_caller]
    fn assert_kept_everyone(&self, who: usize, refused: bool) {
        assert!(
            !self.saw_a_departure(who),
            "{who}: {:?}",
            self.players[who].events
        );
        let node = self.net.endpoint(self.players[who].node).unwrap();
        let stats = node.proto.stats();
        assert_eq!(stats.earlier_sessions_retired, 0, "{who}: {stats:?}");
        if refused {
            assert!(stats.earlier_claims_refused >= 1, "{who}: {stats:?}");
        }
    }

    /// Whether the session of `who` seats `token`.
    fn seats(&self, who: usize, token: u32) -> bool {
        self.net
            .endpoint(self.players[who].node)
            .and_then(|n| n.proto.session())
            .is_some_and(|s| s.players().iter().any(|p| p.token == token))
    }
}

#[test]
fn a_stranger_naming_a_live_player_as_its_earlier_session_does_not_remove_it() {
    // A node outside the game sniffed player 1's token and asks to connect as player 1's next
    // session. Player 1 is alive at its own node: the others keep it and count the claim.
    let mut run = Run::start(5, 0.0);
    let victim = run.players[1].tokens[0];
    let stranger = run.net.add_node();
    run.net.start(stranger, PeerNode::new(stranger));
    let forged = forged_resume_connect(0x5151, stranger, victim);
    run.send_repeatedly(stranger, &[0, 2], &forged);
    run.play_for(Duration::from_secs(2));
    for who in [0, 2] {
        assert!(run.seats(who, victim), "{who}: {:?}", run.describe());
        run.assert_kept_everyone(who, true);
    }
    let (owed, _) = run.drain_and_check("seed 5 (a stranger's claim)", &[]);
    assert!(owed > 0);
}

#[test]
fn a_player_naming_another_live_player_as_its_earlier_session_does_not_remove_it() {
    // Player 0 is in the game and knows player 1's token from the player lists. It names it as
    // its earlier session twice: in connect requests to player 2, and in a RE_RESUME hello on
    // its links to everyone. Player 2 keeps player 1 and counts both claims.
    let mut run = Run::start(6, 0.0);
    let (forger, victim) = (run.players[0].tokens[0], run.players[1].tokens[0]);
    let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::new([victim])));
    let session = run
        .net
        .endpoint_mut(0)
        .unwrap()
        .proto
        .session_mut()
        .unwrap();
    session.queue_event(hello).unwrap();
    let forged = forged_resume_connect(forger, 0, victim);
    run.send_repeatedly(0, &[2], &forged);
    run.play_for(Duration::from_secs(2));
    assert!(run.seats(2, victim), "{:?}", run.describe());
    assert!(run.seats(2, forger), "{:?}", run.describe());
    assert!(!run.saw_a_departure(2), "{:?}", run.players[2].events);
    let peer = &run.net.endpoint(2).unwrap().proto;
    assert_eq!(
        peer.stats().earlier_sessions_retired,
        0,
        "{:?}",
        peer.stats()
    );
    assert!(
        peer.stats().earlier_claims_refused >= 1,
        "{:?}",
        peer.stats()
    );
    let session = peer.session().unwrap().stats();
    assert_eq!(session.earlier_claims_refused, 1, "{session:?}");
    let (owed, _) = run.drain_and_check("seed 6 (a player's claim)", &[]);
    assert!(owed > 0);
}

impl Run {
    /// A newcomer at a new node starts connecting with a new token; the network runs until one
    /// of the players has its request queued but has not seated it yet (the highest player
    /// seats it at once, the others when they snoop its reply). Returns (the newcomer's node,
    /// its token, that player).
    fn newcomer_queued_somewhere(&mut self) -> (usize, u32, usize) {
        let newcomer = self.net.add_node();
        let token = random_token(&mut self.rng);
        let mut node = PeerNode::new(newcomer);
        node.connect(self.net.now(), token);
        self.net.start(newcomer, node);
        let deadline = self.net.now() + Duration::from_secs(3);
        loop {
            assert!(
                self.net.step(deadline),
                "no player ever had the newcomer's request only queued: {:?}",
                self.describe()
            );
            let queued_only = (0..self.players.len()).find(|&who| {
                let proto = &self.net.endpoint(self.players[who].node).unwrap().proto;
                proto.queue().get(token).is_some() && !self.seats(who, token)
            });
            if let Some(who) = queued_only {
                return (newcomer, token, who);
            }
        }
    }

    /// Whether every player seats `token`.
    fn everyone_seats(&self, token: u32) -> bool {
        (0..self.players.len()).all(|who| self.seats(who, token))
    }
}

#[test]
fn a_stranger_naming_a_connecting_newcomer_as_its_earlier_session_does_not_stop_it() {
    // A newcomer is connecting; a player has its request queued and has not seated it yet. A
    // stranger who saw the newcomer's token asks that player to connect as the newcomer's next
    // session, right then and on through its connect loop. The newcomer still repeats its
    // request from its own node, so the claim is refused (counted) and the newcomer is seated
    // by everyone. (A hello that overtakes the newcomer's first request is
    // `a_stranger_naming_a_newcomer_before_its_first_request_arrives_does_not_stop_it`.)
    let mut run = Run::start(5, 0.0);
    let (newcomer, token, target) = run.newcomer_queued_somewhere();
    let stranger = run.net.add_node();
    run.net.start(stranger, PeerNode::new(stranger));
    let instant = LinkProfile {
        latency: Duration::ZERO,
        ..LinkProfile::default()
    };
    run.net
        .set_profile(stranger, run.players[target].node, instant);
    let forged = forged_resume_connect(0x5151, stranger, token);
    run.net
        .endpoint_mut(stranger)
        .unwrap()
        .outbox
        .push_back(Transmit {
            to: sim::node(run.players[target].node),
            data: forged.clone(),
        });
    run.net.step(run.net.now());
    let proto = &run.net.endpoint(run.players[target].node).unwrap().proto;
    assert!(
        proto.queue().get(token).is_some(),
        "{target} dropped the newcomer's request at the forged claim: {:?}",
        proto.stats()
    );
    run.send_repeatedly(stranger, &[run.players[target].node], &forged);
    run.play_for(Duration::from_secs(2));
    let node = run.net.endpoint(newcomer).unwrap();
    assert!(node.proto.is_in_game(), "{:?}", run.describe());
    assert!(node.errors().is_empty(), "{:?}", node.errors());
    assert!(run.everyone_seats(token), "{:?}", run.describe());
    for who in 0..3 {
        run.assert_kept_everyone(who, false);
    }
    let stats = run.net.endpoint(run.players[target].node).unwrap();
    let stats = stats.proto.stats();
    assert!(stats.earlier_claims_refused >= 1, "{target}: {stats:?}");
}

#[test]
fn a_stranger_naming_a_newcomer_before_its_first_request_arrives_does_not_stop_it() {
    // A stranger who learnt a newcomer's token names it as its earlier session to every player
    // before the newcomer's first request reaches any of them (its packet overtook the
    // newcomer's), and on through its connect loop. The players know the token neither as a
    // player nor as a request yet: they only watch it. The newcomer's requests then show up
    // from its own node, so the claim is refused (counted) and the newcomer is seated by all.
    // Two players, so the stranger's own request (seated, never confirmed) does not fill the
    // game.
    let mut run = Run::start_with(2, 112, 0.0);
    let stranger = run.net.add_node();
    run.net.start(stranger, PeerNode::new(stranger));
    let newcomer = run.net.add_node();
    let token = random_token(&mut run.rng);
    let forged = forged_resume_connect(0x5151, stranger, token);
    let everyone: Vec<usize> = run.players.iter().map(|p| p.node).collect();
    for &target in &everyone {
        let endpoint = run.net.endpoint_mut(stranger).unwrap();
        endpoint.outbox.push_back(Transmit {
            to: sim::node(target),
            data: forged.clone(),
        });
    }
    run.play_for(Duration::from_millis(100));
    for &who in &everyone {
        let proto = &run.net.endpoint(who).unwrap().proto;
        assert_eq!(proto.stats().earlier_sessions_retired, 0, "{who}");
    }
    let mut node = PeerNode::new(newcomer);
    node.connect(run.net.now(), token);
    run.net.start(newcomer, node);
    run.send_repeatedly(stranger, &everyone, &forged);
    run.play_for(Duration::from_secs(2));
    let node = run.net.endpoint(newcomer).unwrap();
    assert!(node.proto.is_in_game(), "{:?}", run.describe());
    assert!(node.errors().is_empty(), "{:?}", node.errors());
    assert!(run.everyone_seats(token), "{:?}", run.describe());
    for who in 0..run.players.len() {
        run.assert_kept_everyone(who, true);
    }
}

#[test]
fn a_newcomer_that_switches_backend_while_connecting_is_seated_once() {
    // A newcomer is connecting; a player has its request queued and has not seated it yet (the
    // highest player has seated it already). It switches backend: its old node falls silent
    // (its withdrawal is lost) and it asks again from a new node with a new token, naming the
    // old one. Every player seats the new session and none keeps the old request or seat.
    let mut run = Run::start(5, 0.0);
    let (old, old_token, _) = run.newcomer_queued_somewhere();
    let resume = run
        .net
        .endpoint(old)
        .unwrap()
        .proto
        .resume_state_for_next()
        .expect("a connecting player has a resume state");
    run.net.crash(old);
    let new = run.net.add_node();
    let token = random_token(&mut run.rng);
    let mut node = PeerNode::new(new);
    node.connect_resuming(run.net.now(), token, Some(resume));
    run.net.start(new, node);
    run.play_for(Duration::from_secs(6));
    let node = run.net.endpoint(new).unwrap();
    assert!(node.proto.is_in_game(), "{:?}", run.describe());
    assert!(node.errors().is_empty(), "{:?}", node.errors());
    assert!(run.everyone_seats(token), "{:?}", run.describe());
    for who in 0..3 {
        assert!(!run.seats(who, old_token), "{who}: {:?}", run.describe());
        let proto = &run.net.endpoint(run.players[who].node).unwrap().proto;
        assert!(proto.queue().get(old_token).is_none(), "{who}");
        assert_eq!(proto.stats().earlier_claims_refused, 0, "{who}");
    }
}

/// A link profile that drops everything (one direction of a partition).
fn cut() -> LinkProfile {
    LinkProfile {
        loss: 1.0,
        ..LinkProfile::default()
    }
}

#[test]
fn a_request_forwarded_to_the_highest_player_carries_the_hello_so_it_is_not_refused_as_full() {
    // A full game of four. Player 0 switches backend; its goodbye never reaches player 3 (the
    // highest node, which answers requests), and neither do its new session's requests: player 3
    // hears of it only through the others, which forward its request. Player 3 still seats the
    // earlier session, so without the hello the game looks full there and it refuses the player
    // (seeds 4122 4434 5433 7132 7716 7920, where the player then gave up). With the hello
    // forwarded, player 3 retires the earlier session once it is silent and seats the player.
    let mut run = Run::start_with(4, 31, 0.0);
    let high = run.players[3].node;
    let (old, old_token) = (run.players[0].node, run.players[0].tokens[0]);
    run.net.set_profile(old, high, cut());
    run.switch(0);
    let new = run.players[0].node;
    run.net.set_profile(new, high, cut());
    let deadline = run.net.now() + Duration::from_secs(4);
    while !run.net.endpoint(new).unwrap().proto.is_in_game() {
        assert!(run.net.step(deadline), "never seated: {:?}", run.describe());
    }
    run.net.set_profile(new, high, LinkProfile::default());
    let token = run.players[0].tokens[1];
    run.play_for(Duration::from_secs(3));
    let proto = &run.net.endpoint(high).unwrap().proto;
    assert_eq!(proto.stats().refusals_sent, 0, "{:?}", proto.stats());
    assert!(
        proto.stats().earlier_sessions_retired >= 1,
        "{:?}",
        proto.stats()
    );
    let node = run.net.endpoint(new).unwrap();
    assert_eq!(node.proto.stats().refusals_received, 0);
    assert!(node.errors().is_empty(), "{:?}", node.errors());
    for who in 1..4 {
        assert!(run.seats(who, token), "{who}: {:?}", run.describe());
        assert!(!run.seats(who, old_token), "{who}: {:?}", run.describe());
    }
    run.settle("seed 31 (a forwarded request with its hello)");
}

#[test]
fn a_newcomer_is_not_given_a_player_whose_seat_another_player_claims() {
    // Player 0 switches backend; its goodbye never reaches player 2 (the highest node), which
    // so has the new session's claim on its earlier seat pending (the seat's holder has not
    // been silent long enough yet). A newcomer connects right then. Player 2 must not answer it
    // with the list it has, which still shows the player that left and not its new session
    // (seeds 226 4459: the newcomer kept the departed player, the new session and the newcomer
    // never learnt of each other, and the game split once player 2 switched too). It answers
    // once the claim is decided.
    let mut run = Run::start_with(3, 41, 0.0);
    let high = run.players[2].node;
    let (old, old_token) = (run.players[0].node, run.players[0].tokens[0]);
    run.net.set_profile(old, high, cut());
    run.switch(0);
    let back = run.players[0].node;
    run.play_for(Duration::from_millis(100));
    assert!(run.seats(2, old_token), "{:?}", run.describe());
    let newcomer = run.net.add_node();
    // The two connecting players do not meet before they are in the game.
    run.net.partition(back, newcomer, true);
    let token = random_token(&mut run.rng);
    let mut node = PeerNode::new(newcomer);
    node.connect(run.net.now(), token);
    run.net.start(newcomer, node);
    let deadline = run.net.now() + Duration::from_secs(4);
    while !run.net.endpoint(newcomer).unwrap().proto.is_in_game() {
        assert!(run.net.step(deadline), "never seated: {:?}", run.describe());
    }
    let session = run.net.endpoint(newcomer).unwrap().proto.session().unwrap();
    assert!(
        !session.players().iter().any(|p| p.token == old_token),
        "the newcomer seats the player that left: {:?}",
        run.describe()
    );
    run.net.partition(back, newcomer, false);
    run.players.push(Player {
        node: newcomer,
        tokens: vec![token],
        events: Vec::new(),
        next_number: 1,
        sent: Vec::new(),
    });
    run.settle("seed 41 (a newcomer while a claim is undecided)");
}

#[test]
fn a_player_does_not_leave_a_request_to_a_higher_newcomer_it_never_heard_from() {
    // The highest player seats a newcomer at a higher node whose reply never arrives (nothing
    // reaches the newcomer), so the newcomer is not in the game and answers nobody. A second
    // newcomer connects right then. The player must answer it itself, not forward its request
    // to the first newcomer and wait for that one's reply (up to six times, 2 s): seed 12352,
    // where the player had seated the first newcomer when a claim on a seat was decided, held
    // the others' requests for it, and one of them ended its connect loop meanwhile and started
    // a game of its own that the player never learnt of.
    let mut run = Run::start_with(2, 53, 0.0);
    let high = run.players[1].node;
    let first = run.net.add_node();
    for p in 0..2 {
        run.net.set_profile(run.players[p].node, first, cut());
    }
    let first_token = random_token(&mut run.rng);
    let mut node = PeerNode::new(first);
    node.connect(run.net.now(), first_token);
    run.net.start(first, node);
    let deadline = run.net.now() + Duration::from_secs(2);
    while !run.seats(1, first_token) {
        assert!(run.net.step(deadline), "never seated: {:?}", run.describe());
    }
    let deferred = run
        .net
        .endpoint(high)
        .unwrap()
        .proto
        .stats()
        .replies_deferred;
    let second = run.net.add_node();
    // The two newcomers do not meet while connecting.
    run.net.partition(first, second, true);
    let token = random_token(&mut run.rng);
    let mut node = PeerNode::new(second);
    node.connect(run.net.now(), token);
    run.net.start(second, node);
    let deadline = run.net.now() + Duration::from_secs(3);
    while !run.net.endpoint(second).unwrap().proto.is_in_game() {
        assert!(run.net.step(deadline), "never seated: {:?}", run.describe());
    }
    let proto = &run.net.endpoint(high).unwrap().proto;
    assert_eq!(
        proto.stats().replies_deferred,
        deferred,
        "the highest player waited for a newcomer it never heard from: {:?}",
        proto.stats()
    );
    assert!(run.seats(1, token), "{:?}", run.describe());
}

impl Run {
    /// Two players (0, and 1 at the higher node, which answers requests at once) play; player
    /// 1's packets to player 0 are cut and a newcomer's to player 0 too, so only player 1 hears
    /// the newcomer and seats it, and its new player list for player 0 is lost. Runs until the
    /// newcomer is in the game (it lists player 0, which does not list it). Returns the
    /// newcomer's player number.
    fn newcomer_seated_behind_players_back(&mut self) -> usize {
        let (low, high) = (self.players[0].node, self.players[1].node);
        self.net.set_profile(high, low, cut());
        let newcomer = self.net.add_node();
        self.net.partition(low, newcomer, true);
        let token = random_token(&mut self.rng);
        let mut node = PeerNode::new(newcomer);
        node.connect(self.net.now(), token);
        self.net.start(newcomer, node);
        let deadline = self.net.now() + Duration::from_secs(2);
        while !self.net.endpoint(newcomer).unwrap().proto.is_in_game() {
            assert!(
                self.net.step(deadline),
                "never seated: {:?}",
                self.describe()
            );
        }
        assert!(self.seats(1, token), "{:?}", self.describe());
        assert!(!self.seats(0, token), "{:?}", self.describe());
        self.players.push(Player {
            node: newcomer,
            tokens: vec![token],
            events: Vec::new(),
            next_number: 1,
            sent: Vec::new(),
        });
        self.players.len() - 1
    }

    fn notices_of_strangers(&self, who: usize) -> u64 {
        let node = self.net.endpoint(self.players[who].node).unwrap();
        node.proto.stats().stranger_notices_sent
    }
}

#[test]
fn a_newcomer_whose_seat_the_others_never_heard_of_connects_again() {
    // Player 1 seats a newcomer and leaves the game right after (its player quits or switches
    // away) before its new player list reached player 0 (seeds 1439 1444 of the switching
    // players: the highest player seated a switching player and switched away itself). The
    // newcomer lists player 0 and sends it its packets; player 0 rejects every one (an unknown
    // sender) and sends it nothing: each in a game of its own, for good. Player 0 now tells it,
    // and it connects again, into player 0's game.
    let mut run = Run::start_with(2, 61, 0.0);
    let newcomer = run.newcomer_seated_behind_players_back();
    let (low, high) = (run.players[0].node, run.players[1].node);
    run.net.set_profile(high, low, LinkProfile::default());
    let now = run.net.now();
    let leaving = run.net.endpoint_mut(high).unwrap();
    leaving.proto.disconnect(now, "quitting").unwrap();
    run.net.run_for(Duration::from_millis(1));
    run.collect_events();
    run.net.crash(high);
    run.net.partition(low, run.players[newcomer].node, false);
    run.play_for(Duration::from_secs(6));
    assert!(run.everyone_in_game(), "{:?}", run.describe());
    assert!(run.notices_of_strangers(0) >= 1);
    let told = run.players[newcomer].events.iter().any(|e| {
        matches!(e, GameEvent::Disconnected { reason } if reason.starts_with("not in the other players' game"))
    });
    assert!(told, "{:?}", run.players[newcomer].events);
    let node = run.net.endpoint(run.players[newcomer].node).unwrap();
    assert!(node.errors().is_empty(), "{:?}", node.errors());
    // What the newcomer queued for player 0 while it listed it arrives after all (the player
    // that left is not checked: its packets to player 0 were cut).
    let (owed, _) = run.drain_and_check("seed 61 (a seat nobody else heard of)", &[1]);
    assert!(owed > 0);
}

#[test]
fn a_newcomer_whose_seat_the_others_hear_of_late_is_not_told_to_go() {
    // As above, but player 1 stays and its list reaches player 0 once the cut ends, 800 ms on
    // (the newcomer's packets have been rejected there meanwhile): player 0 seats it from the
    // list and tells it nothing; it keeps its first session.
    let mut run = Run::start_with(2, 62, 0.0);
    let newcomer = run.newcomer_seated_behind_players_back();
    let (low, high) = (run.players[0].node, run.players[1].node);
    run.net.partition(low, run.players[newcomer].node, false);
    run.play_for(Duration::from_millis(800));
    run.net.set_profile(high, low, LinkProfile::default());
    run.play_for(Duration::from_secs(6));
    assert!(run.everyone_in_game(), "{:?}", run.describe());
    assert_eq!(run.notices_of_strangers(0), 0);
    let node = run.net.endpoint(run.players[newcomer].node).unwrap();
    assert_eq!(node.token(), Some(run.players[newcomer].tokens[0]));
    assert!(!run.saw_a_departure(0), "{:?}", run.players[0].events);
    let (owed, _) = run.drain_and_check("seed 62 (a seat heard of late)", &[]);
    assert!(owed > 0);
}
