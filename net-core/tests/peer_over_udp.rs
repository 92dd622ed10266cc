//! The peer-to-peer protocol end to end over the real UDP backend on loopback, driven through
//! the console and the subsystem exactly as the C API drives it: two instances connect with
//! `connect HOST:PORT`, join, exchange ship state and chat; time-critical events carry the
//! position the game reports at send time; a recorded session plays back as the same events.

use std::time::{Duration, Instant};

use net_core::rmev::{RemoteEvent, ShipState};
use net_core::session::GameEvent;
use net_core::Subsystem;

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{console, loopback_game};

/// Run both frame loops until `done` holds or the time is up.
fn run_until(
    subs: &mut [&mut Subsystem],
    limit: Duration,
    mut done: impl FnMut(&mut [&mut Subsystem]) -> bool,
) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        for sub in subs.iter_mut() {
            sub.maintain(Instant::now());
        }
        if done(subs) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

fn drain(sub: &mut Subsystem, into: &mut Vec<GameEvent>) {
    while let Some(event) = sub.poll_event() {
        into.push(event);
    }
}

fn slot_of(events: &[GameEvent]) -> Option<u8> {
    events.iter().find_map(|e| match e {
        GameEvent::Connected { slot } => Some(*slot),
        _ => None,
    })
}

/// Two peers ("ada" and "bo") connected to each other, with the events each got so far.
struct Pair {
    a: Subsystem,
    b: Subsystem,
    ev_a: Vec<GameEvent>,
    ev_b: Vec<GameEvent>,
}

impl Pair {
    /// Start both, run `setup` console lines on each, connect them to each other and wait (at
    /// most `limit`) until both have a slot.
    fn connected(setup: &[&str], limit: Duration) -> Pair {
        let (mut a, a_addr) = loopback_game("ada");
        let (mut b, b_addr) = loopback_game("bo");
        for line in setup {
            console(&mut a, line);
            console(&mut b, line);
        }
        console(&mut a, &format!("connect {b_addr}"));
        console(&mut b, &format!("connect {a_addr}"));
        let mut pair = Pair {
            a,
            b,
            ev_a: Vec::new(),
            ev_b: Vec::new(),
        };
        assert!(
            pair.run_until(limit, |p| slot_of(&p.ev_a).is_some()
                && slot_of(&p.ev_b).is_some()),
            "not connected: {:?} {:?}",
            pair.ev_a,
            pair.ev_b
        );
        pair
    }

    /// Run both frame loops, collecting each side's events, until `done` holds or the time is
    /// up.
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            self.a.maintain(Instant::now());
            self.b.maintain(Instant::now());
            drain(&mut self.a, &mut self.ev_a);
            drain(&mut self.b, &mut self.ev_b);
            if done(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }
}

/// A reliable custom event of `custom_type` carrying the number `n`.
fn numbered(custom_type: u16, n: u32) -> RemoteEvent {
    RemoteEvent::Custom {
        custom_type,
        data: net_core::rmev::CustomData::new(&n.to_be_bytes()).unwrap(),
        reliable: true,
    }
}

/// The numbers carried by the custom events of `custom_type` in `events`, in order.
fn series_in(events: &[GameEvent], custom_type: u16) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            GameEvent::Remote {
                event:
                    RemoteEvent::Custom {
                        custom_type: t,
                        data,
                        ..
                    },
                ..
            } if *t == custom_type => Some(u32::from_be_bytes(data.as_bytes().try_into().ok()?)),
            _ => None,
        })
        .collect()
}

/// Whether `events` hold the chat line `text`.
fn heard(events: &[GameEvent], text: &str) -> bool {
    events.iter().any(|e| {
        matches!(e, GameEvent::Remote { event: RemoteEvent::SendText(t), .. }
            if t.as_bytes() == text.as_bytes())
    })
}

#[test]
fn two_peers_on_loopback_connect_join_and_exchange_state_text_and_positions() {
    let (mut a, a_addr) = loopback_game("alice");
    let (mut b, b_addr) = loopback_game("bob");
    console(&mut a, &format!("connect {b_addr}"));
    console(&mut b, &format!("connect {a_addr}"));
    let (mut ev_a, mut ev_b) = (Vec::new(), Vec::new());
    let connected = run_until(&mut [&mut a, &mut b], Duration::from_secs(20), |subs| {
        let [a, b] = subs else { unreachable!() };
        drain(a, &mut ev_a);
        drain(b, &mut ev_b);
        slot_of(&ev_a).is_some() && slot_of(&ev_b).is_some()
    });
    assert!(connected, "both connect: {ev_a:?} {ev_b:?}");
    let (slot_a, slot_b) = (slot_of(&ev_a).unwrap(), slot_of(&ev_b).unwrap());
    assert_ne!(slot_a, slot_b);
    let status = console(&mut a, "status");
    assert!(status.contains("game: slot"), "{status}");
    // Where the UDP backend is bound, as it describes its socket.
    let bound = format!("local node {a_addr}\nbinding: IPv4 {a_addr}, broadcast 255.255.255.255\n");
    assert!(status.contains(&bound), "{status}");
    console(&mut a, "join");
    console(&mut b, "join");

    // State: b sees a's latest ship.
    let mut game = [0u8; 32];
    game[0] = 42;
    let state = ShipState {
        pos: [1.0, 2.0, 3.0],
        game,
        ..Default::default()
    };
    a.set_local_state(state).unwrap();
    // A time-critical event: the position the game reports at send time is what goes out.
    a.game_mut()
        .set_position_callback(Some(Box::new(|id| (id == 77).then_some([9.0, 8.0, 7.0]))));
    a.queue_remote_event(RemoteEvent::CreateLaser {
        object_id: 77,
        class: 3,
        pos: [1.0, 1.0, 1.0],
        dir: [0.0, 0.0, 1.0],
    })
    .unwrap();
    let echo = console(&mut a, "say hello bob");
    assert_eq!(
        echo,
        format!("<{}> hello bob", a.game().name()),
        "say echoes the line"
    );
    let got = run_until(&mut [&mut a, &mut b], Duration::from_secs(10), |subs| {
        drain(subs[1], &mut ev_b);
        let has_text = ev_b.iter().any(|e| matches!(e, GameEvent::Remote { event: RemoteEvent::SendText(t), .. } if t.to_string() == "hello bob"));
        let state_ok = subs[1].player_state(slot_a).is_ok_and(|s| s == state);
        has_text && state_ok
    });
    assert!(got, "b got the text and the state: {ev_b:?}");
    let laser = ev_b.iter().find_map(|e| match e {
        GameEvent::Remote {
            slot,
            event: RemoteEvent::CreateLaser {
                object_id: 77, pos, ..
            },
        } => Some((*slot, *pos)),
        _ => None,
    });
    assert_eq!(
        laser,
        Some((slot_a, [9.0, 8.0, 7.0])),
        "position refreshed at send time"
    );
    assert_eq!(b.owner_of(77), Some(slot_a));
    assert_eq!(b.player_name(slot_a).unwrap().to_string(), "alice");
    assert!(ev_b
        .iter()
        .any(|e| matches!(e, GameEvent::PlayerJoined { slot } if *slot == slot_a)));
    assert!(console(&mut b, "players").contains("alice"));

    // Leaving is seen by the other side.
    console(&mut a, "disconnect");
    let gone = run_until(&mut [&mut a, &mut b], Duration::from_secs(5), |subs| {
        drain(subs[1], &mut ev_b);
        ev_b.iter()
            .any(|e| matches!(e, GameEvent::PlayerDisconnected { slot, .. } if *slot == slot_a))
    });
    assert!(gone, "{ev_b:?}");
    let _ = slot_b;
}

#[test]
fn a_recorded_session_plays_back_as_the_same_events() {
    let dir = std::env::temp_dir().join(format!("pn-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.demo");
    let (mut a, a_addr) = loopback_game("ann");
    let (mut b, _) = loopback_game("ben");
    console(&mut b, &format!("record {}", file.display()));
    console(&mut a, "connect 127.0.0.1:9");
    console(&mut b, &format!("connect {a_addr}"));
    let mut live = Vec::new();
    let mut a_events = Vec::new();
    run_until(&mut [&mut a, &mut b], Duration::from_secs(20), |subs| {
        drain(subs[0], &mut a_events);
        drain(subs[1], &mut live);
        slot_of(&live).is_some() && slot_of(&a_events).is_some()
    });
    assert!(slot_of(&live).is_some(), "{live:?}");
    console(&mut a, "join");
    console(&mut a, "say one");
    console(&mut a, "say two");
    a.queue_remote_event(RemoteEvent::KillObject {
        object_id: 5,
        list_id: 2,
    })
    .unwrap();
    console(&mut a, "unjoin 3");
    run_until(&mut [&mut a, &mut b], Duration::from_secs(10), |subs| {
        drain(subs[1], &mut live);
        live.iter()
            .any(|e| matches!(e, GameEvent::PlayerUnjoined { flag: 3, .. }))
    });
    console(&mut b, "stop");
    assert!(
        live.iter()
            .any(|e| matches!(e, GameEvent::PlayerUnjoined { flag: 3, .. })),
        "{live:?}"
    );

    // Play it back in a fresh instance: the same events in the same order.
    let mut c = Subsystem::new();
    let out = console(&mut c, &format!("play {}", file.display()));
    assert!(out.contains("playing"), "{out}");
    let mut played = Vec::new();
    run_until(&mut [&mut c], Duration::from_secs(30), |subs| {
        drain(subs[0], &mut played);
        !subs[0].game().is_playing()
    });
    drain(&mut c, &mut played);
    assert_eq!(played, live, "playback shows exactly what was seen live");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn switching_the_backend_in_a_session_reconnects_and_loses_no_queued_event() {
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    // Events queued but not yet sent when the player switches the backend.
    for i in 0..50u32 {
        pair.a.queue_remote_event(numbered(5, i)).unwrap();
    }
    let out = console(&mut pair.a, "net.api udp");
    assert!(out.contains("left the game"), "{out}");
    let reconnected = pair.run_until(Duration::from_secs(20), |p| {
        series_in(&p.ev_b, 5).len() >= 50
    });
    let got = series_in(&pair.ev_b, 5);
    assert!(reconnected, "b got {} of 50: {:?}", got.len(), pair.ev_b);
    assert_eq!(
        got,
        (0..50).collect::<Vec<_>>(),
        "every queued event, in order, once"
    );
    assert_left_once_and_came_back_once(&pair.ev_a);
}

#[test]
fn a_backend_that_cannot_be_loaded_is_refused_without_leaving_the_game() {
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    let (before_a, before_b) = (pair.ev_a.len(), pair.ev_b.len());
    let reply = pair.a.console_exec("net.api udpp", Instant::now());
    assert!(reply.result.is_err(), "{}", reply.output);
    assert!(
        reply.output.contains("no backend named 'udpp'") && reply.output.contains("keeping udp"),
        "{}",
        reply.output
    );
    // Still in the same game: the next event arrives, and neither side saw anyone leave.
    pair.a.say("still here").unwrap();
    let arrived = pair.run_until(Duration::from_secs(10), |p| heard(&p.ev_b, "still here"));
    assert!(arrived, "{:?}", pair.ev_b);
    let (after_a, after_b) = (&pair.ev_a[before_a..], &pair.ev_b[before_b..]);
    let left = after_a.iter().chain(after_b).any(|e| {
        matches!(
            e,
            GameEvent::Disconnected { .. }
                | GameEvent::Connected { .. }
                | GameEvent::PlayerDisconnected { .. }
        )
    });
    assert!(!left, "{after_a:?} {after_b:?}");
    let status = console(&mut pair.a, "status");
    assert!(status.contains("switches: 1 done, 1 failed"), "{status}");
}

#[test]
fn a_backend_whose_socket_cannot_open_is_refused_without_leaving_the_game() {
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    let (before_a, before_b) = (pair.ev_a.len(), pair.ev_b.len());
    // Queued before the refused switch: each arrives once, in order.
    for i in 0..20u32 {
        pair.a.queue_remote_event(numbered(7, i)).unwrap();
    }
    // The library loads, but its open fails (an address this host does not have): the switch
    // is refused before the game is left, as for a library that cannot be loaded.
    console(&mut pair.a, "net.udp.bind 203.0.113.1");
    let reply = pair.a.console_exec("net.api udp", Instant::now());
    assert!(reply.result.is_err(), "{}", reply.output);
    assert!(
        reply.output.contains("203.0.113.1")
            && reply.output.contains("keeping udp")
            && !reply.output.contains('\n'),
        "{}",
        reply.output
    );
    // Still in the game: chat is accepted at once, and the series arrives.
    pair.a.say("still here").unwrap();
    for i in 20..40u32 {
        pair.a.queue_remote_event(numbered(7, i)).unwrap();
    }
    let arrived = pair.run_until(Duration::from_secs(10), |p| {
        heard(&p.ev_b, "still here") && series_in(&p.ev_b, 7).len() >= 40
    });
    assert!(arrived, "{:?}", pair.ev_b);
    assert_eq!(series_in(&pair.ev_b, 7), (0..40).collect::<Vec<_>>());
    let (after_a, after_b) = (&pair.ev_a[before_a..], &pair.ev_b[before_b..]);
    let left = after_a.iter().chain(after_b).any(|e| {
        matches!(
            e,
            GameEvent::Disconnected { .. }
                | GameEvent::Connected { .. }
                | GameEvent::PlayerDisconnected { .. }
        )
    });
    assert!(!left, "{after_a:?} {after_b:?}");
    let status = console(&mut pair.a, "status");
    assert!(status.contains("switches: 1 done, 1 failed"), "{status}");
}

#[test]
fn changing_the_local_port_in_a_game_keeps_the_game_both_ways() {
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    let old = pair.a.local_node().unwrap();
    let out = console(&mut pair.a, "net.port 0");
    assert_ne!(pair.a.local_node().unwrap(), old, "{out}");
    pair.a.say("from the new port").unwrap();
    let arrived = pair.run_until(Duration::from_secs(10), |p| {
        heard(&p.ev_b, "from the new port")
    });
    assert!(arrived, "{:?}", pair.ev_b);
    pair.b.say("to the new port").unwrap();
    let arrived = pair.run_until(Duration::from_secs(10), |p| {
        heard(&p.ev_a, "to the new port")
    });
    assert!(arrived, "{:?}", pair.ev_a);
    let left = pair.ev_a.iter().chain(&pair.ev_b).any(|e| {
        matches!(
            e,
            GameEvent::Disconnected { .. } | GameEvent::PlayerDisconnected { .. }
        )
    });
    assert!(!left, "{:?} {:?}", pair.ev_a, pair.ev_b);
}

#[test]
fn under_the_link_conditioner_every_reliable_event_arrives_once_in_order() {
    let mut pair = Pair::connected(
        &["net.sim lag 15 jitter 20 loss 20 dup 5 reorder 5"],
        Duration::from_secs(30),
    );
    let total = 500u32;
    let mut next = 0u32;
    let done = pair.run_until(Duration::from_secs(60), |p| {
        for _ in 0..5 {
            if next < total {
                p.a.queue_remote_event(numbered(9, next)).unwrap();
                next += 1;
            }
        }
        series_in(&p.ev_b, 9).len() as u32 >= total
    });
    let got = series_in(&pair.ev_b, 9);
    assert!(done, "got {} of {total}", got.len());
    assert_eq!(
        got,
        (0..total).collect::<Vec<_>>(),
        "exactly once, in order"
    );
    let status = console(&mut pair.a, "status");
    assert!(status.contains("net.sim: lag 15 ms"), "{status}");
    let (send, receive) = pair.a.packets().conditioner_stats();
    assert!(
        send.dropped > 0 && receive.dropped > 0 && send.duplicated + receive.duplicated > 0,
        "{send:?} {receive:?}"
    );
}

#[test]
fn events_waiting_in_the_socket_of_a_player_who_switches_backend_arrive_once() {
    // b's events are in a's socket, unread, when a types `net.api udp`: the switch reads them
    // (their acknowledgements matter), so they must reach a's game, exactly once.
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    let mut next = 0u32;
    for round in 0..3 {
        for _ in 0..20 {
            pair.b.queue_remote_event(numbered(6, next)).unwrap();
            next += 1;
        }
        pair.b.maintain(Instant::now());
        std::thread::sleep(Duration::from_millis(30));
        let out = console(&mut pair.a, "net.api udp");
        assert!(out.contains("left the game"), "round {round}: {out}");
        let sent = next as usize;
        let done = pair.run_until(Duration::from_secs(20), |p| {
            let connected = p
                .ev_a
                .iter()
                .filter(|e| matches!(e, GameEvent::Connected { .. }))
                .count();
            series_in(&p.ev_a, 6).len() >= sent && connected == round + 2
        });
        assert!(
            done,
            "round {round}: a got {:?} of {sent}",
            series_in(&pair.ev_a, 6)
        );
    }
    pair.run_until(Duration::from_millis(300), |_| false);
    assert_eq!(
        series_in(&pair.ev_a, 6),
        (0..next).collect::<Vec<_>>(),
        "every event b sent, once and in order"
    );
}

/// How often `events` say the player in `slot` joined or unjoined since it last appeared there.
fn joins_since_seated(events: &[GameEvent], slot: u8) -> Option<usize> {
    let seated = events
        .iter()
        .rposition(|e| matches!(e, GameEvent::PlayerConnected { slot: s, .. } if *s == slot))?;
    Some(
        events[seated..]
            .iter()
            .filter(|e| {
                matches!(e, GameEvent::PlayerJoined { slot: s } | GameEvent::PlayerUnjoined { slot: s, .. } if *s == slot)
            })
            .count(),
    )
}

#[test]
fn a_joined_player_stays_joined_across_backend_switches_and_its_ship_flies_on() {
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    console(&mut pair.a, "join");
    console(&mut pair.b, "join");
    let ship = ShipState {
        pos: [3.0, 1.0, 4.0],
        ..ShipState::default()
    };
    pair.a.set_local_state(ship).unwrap();
    // b sees ada joined with her ship.
    let ada_at_b = |p: &Pair| {
        let session = p.b.protocol_module()?.session()?;
        let ada = session
            .players()
            .iter()
            .find(|x| x.name.to_string() == "ada")?;
        (ada.joined && p.b.player_state(ada.slot).is_ok_and(|s| s == ship)).then_some(ada.slot)
    };
    assert!(pair.run_until(Duration::from_secs(10), |p| ada_at_b(p).is_some()));
    for round in 0..2 {
        let out = console(&mut pair.a, "net.api udp");
        assert!(out.contains("left the game"), "round {round}: {out}");
        let connects = round + 2;
        // Back in the game, without her game doing anything.
        let back = pair.run_until(Duration::from_secs(20), |p| {
            let reconnected = p
                .ev_a
                .iter()
                .filter(|e| matches!(e, GameEvent::Connected { .. }))
                .count()
                == connects;
            reconnected && ada_at_b(p).is_some()
        });
        assert!(back, "round {round}: {:?}\n{:?}", pair.ev_a, pair.ev_b);
        pair.run_until(Duration::from_millis(300), |_| false);
        let status = console(&mut pair.a, "status");
        assert!(!status.contains("not joined"), "round {round}: {status}");
        let ada = ada_at_b(&pair).expect("still there");
        assert_eq!(
            joins_since_seated(&pair.ev_b, ada),
            Some(1),
            "round {round}: b heard ada join once: {:?}",
            pair.ev_b
        );
        let bo = pair
            .a
            .protocol_module()
            .unwrap()
            .session()
            .unwrap()
            .players();
        let bo = bo.iter().next().expect("a sees bo").slot;
        assert_eq!(
            joins_since_seated(&pair.ev_a, bo),
            Some(1),
            "round {round}: ada heard bo (joined before she came back) join once: {:?}",
            pair.ev_a
        );
    }
}

/// The players named `name` in the player table of `sub` (its own entry is not in the table).
fn seated_named(sub: &Subsystem, name: &str) -> Vec<u8> {
    sub.protocol_module()
        .and_then(|p| p.session())
        .map(|s| {
            s.players()
                .iter()
                .filter(|p| p.name.to_string() == name)
                .map(|p| p.slot)
                .collect()
        })
        .unwrap_or_default()
}

/// How many connect replies `sub`'s peer protocol has sent.
fn replies_sent(sub: &Subsystem) -> u64 {
    sub.protocol_module()
        .unwrap()
        .counters()
        .into_iter()
        .find(|(name, _)| *name == "replies sent")
        .map_or(0, |(_, n)| n)
}

#[test]
fn a_second_backend_switch_while_the_first_reconnects_leaves_no_ghost_and_keeps_the_join() {
    // ada types `net.api udp` twice in a row: the second switch comes while the first one's
    // reconnect is under way, after bo has seated her (and told her so) but before bo's reply
    // reached her. bo must not keep that seat as a second ada beside the one that comes back,
    // ada must not find herself in her own player table, and she stays joined.
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    console(&mut pair.a, "join");
    console(&mut pair.b, "join");
    let joined = pair.run_until(Duration::from_secs(10), |p| {
        joins_since_seated(&p.ev_b, slot_of(&p.ev_a).unwrap()) == Some(1)
    });
    assert!(joined, "{:?}", pair.ev_b);
    // Her replies come late, but well within her connect loop (10 requests 100 ms apart).
    console(&mut pair.a, "net.sim lag 100");
    console(&mut pair.a, "net.peer.connect_interval 100");
    let out = console(&mut pair.a, "net.api udp");
    assert!(out.contains("left the game"), "{out}");
    // Until bo has seated the reconnecting ada (her reply is held by ada's lag).
    let left_at = pair.ev_b.len();
    let seated = pair.run_until(Duration::from_secs(10), |p| {
        p.ev_b[left_at..]
            .iter()
            .any(|e| matches!(e, GameEvent::PlayerConnected { .. }))
    });
    assert!(seated, "{:?}", pair.ev_b);
    assert!(
        !pair.ev_a[2..]
            .iter()
            .any(|e| matches!(e, GameEvent::Connected { .. })),
        "ada must still be reconnecting: {:?}",
        pair.ev_a
    );
    let replies_before = replies_sent(&pair.b);
    let out = console(&mut pair.a, "net.api udp");
    assert!(out.contains("left the game"), "{out}");
    let back = pair.run_until(Duration::from_secs(20), |p| {
        p.ev_a
            .iter()
            .filter(|e| matches!(e, GameEvent::Connected { .. }))
            .count()
            == 2
            && seated_named(&p.b, "ada").len() == 1
    });
    assert!(back, "{:?}\n{:?}", pair.ev_a, pair.ev_b);
    // Long enough for any late reply or player list to the second reconnect.
    pair.run_until(Duration::from_secs(2), |_| false);
    assert_eq!(
        seated_named(&pair.b, "ada").len(),
        1,
        "bo seats ada once: {}\n{:?}\n{:?}",
        console(&mut pair.b, "players"),
        pair.ev_a,
        pair.ev_b
    );
    assert!(
        seated_named(&pair.a, "ada").is_empty(),
        "ada is not a player in her own table: {}",
        console(&mut pair.a, "players")
    );
    let status = console(&mut pair.a, "status");
    assert!(!status.contains("not joined"), "{status}");
    // bo stopped offering the abandoned seat once the next request named it (he would resend
    // it up to net.peer.slot_tries = 20 times otherwise); the new seat's reply is resent a few
    // times under ada's lag until her first packet confirms it.
    let replies = replies_sent(&pair.b) - replies_before;
    assert!(
        replies <= 12,
        "bo sent {replies} replies after ada's second switch"
    );
    // Her game was told she left once, and that she is back once.
    assert_left_once_and_came_back_once(&pair.ev_a);
}

#[test]
fn net_subsys_says_whether_it_left_a_game_or_stopped_connecting() {
    // Still looking for players: there is no game to leave.
    let (mut lone, _) = loopback_game("lone");
    console(&mut lone, "connect 127.0.0.1:9");
    let out = console(&mut lone, "net.subsys gameserver");
    assert_eq!(
        out, "stopped connecting (peer) first; protocol gameserver selected",
        "{out}"
    );
    let out = console(&mut lone, "net.subsys peer");
    assert_eq!(out, "protocol peer selected");
    // In a game: it is left, and the others are told.
    let mut pair = Pair::connected(&[], Duration::from_secs(20));
    let out = console(&mut pair.a, "net.subsys gameserver");
    assert_eq!(
        out, "disconnected from the peer game first; protocol gameserver selected",
        "{out}"
    );
    let told = pair.run_until(Duration::from_secs(10), |p| {
        p.ev_b
            .iter()
            .any(|e| matches!(e, GameEvent::PlayerDisconnected { .. }))
    });
    assert!(told, "{:?}", pair.ev_b);
    assert!(
        matches!(pair.ev_a.last(), Some(GameEvent::Disconnected { reason }) if reason == "switching protocol to gameserver"),
        "{:?}",
        pair.ev_a
    );
}

#[test]
fn a_player_that_leaves_while_its_reconnect_is_seated_but_unanswered_leaves_no_ghost() {
    // ada switches backend; bo seats her reconnect, but his reply is still held by ada's lag
    // when she leaves (`disconnect`, or another protocol). Her reconnect never got a slot, so
    // it has no DISCONNECT to send: it withdraws its request instead, and bo frees the seat at
    // once (the silence timeout is set far beyond the test's limits, so only that can free it).
    for leave in ["disconnect", "net.subsys gameserver"] {
        let mut pair = Pair::connected(&["net.timeout 300"], Duration::from_secs(20));
        console(&mut pair.a, "net.sim lag 100");
        console(&mut pair.a, "net.peer.connect_interval 100");
        let out = console(&mut pair.a, "net.api udp");
        assert!(out.contains("left the game"), "{out}");
        let left_at = pair.ev_b.len();
        let seated = pair.run_until(Duration::from_secs(10), |p| {
            p.ev_b[left_at..]
                .iter()
                .any(|e| matches!(e, GameEvent::PlayerConnected { .. }))
        });
        assert!(seated, "{leave}: {:?}", pair.ev_b);
        assert!(
            !pair.ev_a[1..]
                .iter()
                .any(|e| matches!(e, GameEvent::Connected { .. })),
            "{leave}: ada must still be reconnecting: {:?}",
            pair.ev_a
        );
        let out = console(&mut pair.a, leave);
        assert!(
            leave == "disconnect" || out.starts_with("stopped connecting (peer) first"),
            "{out}"
        );
        let freed = pair.run_until(Duration::from_secs(30), |p| {
            seated_named(&p.b, "ada").is_empty()
        });
        assert!(
            freed,
            "{leave}: bo still seats ada: {}",
            console(&mut pair.b, "players")
        );
        // His game saw her leave, and her seated reconnect appear and leave, once each.
        let connected = pair.ev_b[left_at..]
            .iter()
            .filter(|e| matches!(e, GameEvent::PlayerConnected { .. }))
            .count();
        let disconnected = pair.ev_b[left_at..]
            .iter()
            .filter(|e| matches!(e, GameEvent::PlayerDisconnected { .. }))
            .count();
        assert_eq!(
            (connected, disconnected),
            (1, 2),
            "{leave}: {:?}",
            pair.ev_b
        );
        // Nothing brings her back: no late reply or player list seats her again.
        pair.run_until(Duration::from_secs(1), |_| false);
        assert!(seated_named(&pair.b, "ada").is_empty(), "{leave}");
        assert!(
            !pair.a.protocol_module().is_some_and(|p| p.is_active()),
            "{leave}"
        );
    }
}

/// The game was told it was connected, that it left once, and that it is back once.
fn assert_left_once_and_came_back_once(events: &[GameEvent]) {
    let connection: Vec<&GameEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                GameEvent::Connected { .. } | GameEvent::Disconnected { .. }
            )
        })
        .collect();
    assert!(
        matches!(
            connection.as_slice(),
            [
                GameEvent::Connected { .. },
                GameEvent::Disconnected { .. },
                GameEvent::Connected { .. }
            ]
        ),
        "{connection:?}"
    );
}

#[test]
fn a_name_chosen_while_connecting_is_the_one_the_others_see() {
    // bo renames itself after `connect`, before it has a slot: its connect requests carried
    // "bo", so the others must be told the new name once it is in the game, as `name` in the
    // game does (before, bo's own table said "bold" while ada's said "bo" for good).
    let (mut a, a_addr) = loopback_game("ada");
    let (mut b, b_addr) = loopback_game("bo");
    console(&mut a, &format!("connect {b_addr}"));
    console(&mut b, &format!("connect {a_addr}"));
    let reply = console(&mut b, "name bold");
    assert_eq!(
        reply,
        "name = bold (the others are told once you are in the game)"
    );
    let (mut ev_a, mut ev_b) = (Vec::new(), Vec::new());
    let mut b_slot = None;
    let seen = run_until(&mut [&mut a, &mut b], Duration::from_secs(15), |subs| {
        drain(subs[0], &mut ev_a);
        drain(subs[1], &mut ev_b);
        b_slot = b_slot.or(slot_of(&ev_b));
        b_slot.is_some_and(|slot| {
            subs[0]
                .player_name(slot)
                .is_some_and(|n| n.to_string() == "bold")
        })
    });
    assert!(seen, "ada never saw bo's new name: {ev_a:?} / {ev_b:?}");
    let slot = b_slot.unwrap();
    assert_eq!(b.player_name(slot).unwrap().to_string(), "bold");
    // Told as a rename of the name its requests carried.
    assert!(
        ev_a.iter().any(|e| matches!(e, GameEvent::PlayerName { slot: s, name } if *s == slot && name.to_string() == "bold")),
        "{ev_a:?}"
    );
}
