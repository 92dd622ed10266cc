//! A player's last events before it leaves a server game reach the others, before its
//! departure:
//! - also when `net.sim` lags the leaving player's datagrams or the receiver's: a simulated path
//!   delays the game's TCP lines with the datagrams sent or received before them, as a real
//!   path would, so the TCP `remove me` (and the server's `remove ip:` line) cannot overtake
//!   them;
//! - also when it leaves right after being seated, while its new links still hold the game's
//!   events for the others' RE_RESUME answers;
//! - also when `net.sim` drops a share of the receiver's datagrams: through a gameserver the
//!   relay's copies are sent again after the server's `remove ip:` line has gone out, and the
//!   client takes the departure from the relay's in-band word (RE_VACATED) behind them.
//!
//! Real servers in threads, real clients over UDP on loopback, through both servers.

use std::time::{Duration, Instant};

use net_core::session::GameEvent;

mod support;
use support::live_servers::*;

/// How many numbered reliable events the leaving player sends.
const SENT: u32 = 30;

/// Which player's path `net.sim` lags.
#[derive(Clone, Copy, Debug)]
enum Lagged {
    Leaver,
    Receiver,
}

fn last_events_come_before_the_departure(protocol: &'static str, lagged: Lagged, lag_ms: u32) {
    last_events_come_before_the_departure_with(protocol, lagged, lag_ms, 0)
}

fn last_events_come_before_the_departure_with(
    protocol: &'static str,
    lagged: Lagged,
    lag_ms: u32,
    loss_pct: u32,
) {
    let (server, mut players) = two_seated_players_on(protocol, ["lea", "sta"]);
    let leaver_slot = players[0].slot().expect("seated");
    let lagged_player = match lagged {
        Lagged::Leaver => 0,
        Lagged::Receiver => 1,
    };
    if lag_ms > 0 || loss_pct > 0 {
        console(
            &mut players[lagged_player].sub,
            &format!("net.sim lag {lag_ms} loss {loss_pct}"),
        );
    }
    // The first number, once the links are settled: a new link holds the game's events until
    // the other side has said what it still has of earlier links (RE_RESUME), a round trip
    // through the lagged path.
    players[0].sub.queue_remote_event(numbered(0)).unwrap();
    assert!(
        run_frames(&mut players, Duration::from_secs(10), |ps| !numbers_heard(
            &ps[1]
        )
        .is_empty()),
        "{protocol}, {lagged:?} lagged {lag_ms} ms: the first number never arrived"
    );
    // The others go out over a few frames; the last ones are queued in the frame that leaves.
    for n in 1..SENT {
        players[0].sub.queue_remote_event(numbered(n)).unwrap();
        if n % 10 == 9 {
            players[0].sub.maintain(Instant::now());
            players[1].sub.maintain(Instant::now());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    console(&mut players[0].sub, "disconnect");
    let left = run_frames(&mut players, Duration::from_secs(10), |ps| {
        heard_before_departure(&ps[1], leaver_slot).1.is_some()
    });
    // A moment more: a number arriving after the departure would show.
    run_frames(
        &mut players,
        Duration::from_millis(2 * lag_ms as u64 + 1000),
        |_| false,
    );
    let (numbers, after) = heard_before_departure(&players[1], leaver_slot);
    assert!(
        left,
        "{protocol}, {lagged:?} lagged {lag_ms} ms: the staying player never saw the other leave"
    );
    assert_eq!(
        (numbers, after),
        ((0..SENT).collect::<Vec<_>>(), Some(0)),
        "{protocol}, {lagged:?} lagged {lag_ms} ms: every number once, in order, all before the \
         PLAYER_DISCONNECTED"
    );
    drop(players);
    server.finish();
}

#[test]
fn a_leaving_players_lagged_last_events_come_before_its_departure_through_a_gameserver() {
    last_events_come_before_the_departure("gameserver", Lagged::Leaver, 150);
}

#[test]
fn a_lossy_receiver_gets_a_leaving_players_last_events_before_its_departure_through_a_gameserver() {
    last_events_come_before_the_departure_with("gameserver", Lagged::Receiver, 20, 30);
}

#[test]
fn a_lossy_receiver_gets_a_leaving_players_last_events_before_its_departure_through_a_slotserver() {
    last_events_come_before_the_departure_with("slotserver", Lagged::Receiver, 20, 30);
}

#[test]
fn a_leaving_players_lagged_last_events_come_before_its_departure_through_a_slotserver() {
    last_events_come_before_the_departure("slotserver", Lagged::Leaver, 150);
}

#[test]
fn a_lagged_receiver_gets_a_leaving_players_last_events_before_its_departure_through_a_gameserver()
{
    last_events_come_before_the_departure("gameserver", Lagged::Receiver, 150);
}

#[test]
fn a_lagged_receiver_gets_a_leaving_players_last_events_before_its_departure_through_a_slotserver()
{
    last_events_come_before_the_departure("slotserver", Lagged::Receiver, 150);
}

/// The leaver queues its numbers the moment it sees the other player and leaves in its next
/// frame: they all arrive, once and in order, before the departure. Through a gameserver the
/// relay holds what it forwards to a newcomer until the newcomer's first packet says whether it
/// is someone coming back, and the server's `remove ip:` line does not wait for that: the
/// client takes the departure from the relay's in-band word behind the player's last events.
fn events_queued_at_once_all_arrive(protocol: &'static str) {
    let (server, mut players) = two_seated_players_on(protocol, ["lea", "sta"]);
    let leaver_slot = players[0].slot().expect("seated");
    for n in 0..SENT {
        players[0].sub.queue_remote_event(numbered(n)).unwrap();
    }
    players[0].sub.maintain(Instant::now());
    console(&mut players[0].sub, "disconnect");
    let all = run_frames(&mut players, Duration::from_secs(10), |ps| {
        let (numbers, after) = heard_before_departure(&ps[1], leaver_slot);
        after.is_some() && numbers.len() >= SENT as usize
    });
    run_frames(&mut players, Duration::from_millis(300), |_| false);
    let (numbers, after) = heard_before_departure(&players[1], leaver_slot);
    assert!(
        all,
        "{protocol}: the staying player did not see the other leave and get its numbers"
    );
    assert_eq!(
        numbers,
        (0..SENT).collect::<Vec<_>>(),
        "{protocol}: every number once, in order"
    );
    assert_eq!(
        after,
        Some(0),
        "{protocol}: the numbers came before the PLAYER_DISCONNECTED"
    );
    drop(players);
    server.finish();
}

#[test]
fn a_player_leaving_right_after_being_seated_still_delivers_its_events_through_a_slotserver() {
    events_queued_at_once_all_arrive("slotserver");
}

#[test]
fn a_player_leaving_right_after_being_seated_still_delivers_its_events_through_a_gameserver() {
    events_queued_at_once_all_arrive("gameserver");
}

/// Through a gameserver, a player leaves and a newcomer takes its slot at once, while the
/// staying player's path drops a share of its datagrams: the staying player sees every number of
/// the leaver before the leaver's PLAYER_DISCONNECTED, then the newcomer's PLAYER_CONNECTED,
/// then the newcomer's join and numbers. Relayed events name only their slot: the relay's
/// in-band word that the leaver left (RE_VACATED) is what tells the two occupants apart.
#[test]
fn a_newcomer_in_a_leavers_slot_is_not_taken_for_the_leaver_through_a_gameserver() {
    let (server, mut players) = two_seated_players_on("gameserver", ["lea", "sta"]);
    let slot = players[0].slot().expect("seated");
    console(&mut players[1].sub, "net.sim lag 20 loss 30");
    for n in 0..SENT {
        players[0].sub.queue_remote_event(numbered(n)).unwrap();
    }
    players[0].sub.maintain(Instant::now());
    console(&mut players[0].sub, "disconnect");
    // The leaver's `remove me` reaches the server before the newcomer's join: the newcomer is
    // seated in the slot it freed.
    let until = Instant::now() + Duration::from_millis(100);
    while Instant::now() < until {
        players[0].sub.maintain(Instant::now());
        std::thread::sleep(Duration::from_millis(3));
    }
    players.push(Player {
        sub: client("new", "gameserver", server.addrs.tcp),
        events: Vec::new(),
    });
    assert!(
        run_frames(&mut players, Duration::from_secs(10), |ps| ps[2]
            .slot()
            .is_some()),
        "the newcomer was not seated"
    );
    assert_eq!(
        players[2].slot(),
        Some(slot),
        "the newcomer took the freed slot"
    );
    console(&mut players[2].sub, "join");
    for n in 100..110 {
        players[2].sub.queue_remote_event(numbered(n)).unwrap();
    }
    let all = run_frames(&mut players, Duration::from_secs(15), |ps| {
        numbers_heard(&ps[1]).len() >= SENT as usize + 10
    });
    run_frames(&mut players, Duration::from_millis(300), |_| false);
    let events = &players[1].events;
    assert!(
        all,
        "the staying player did not get every number: {events:?}"
    );
    let arrivals: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, GameEvent::PlayerConnected { slot: s, .. } if *s == slot))
        .map(|(i, _)| i)
        .collect();
    let left = events
        .iter()
        .position(|e| matches!(e, GameEvent::PlayerDisconnected { slot: s, .. } if *s == slot))
        .expect("the leaver's departure");
    let [_, came] = arrivals[..] else {
        panic!("two arrivals in the slot, the leaver's and the newcomer's: {events:?}");
    };
    let joined = events[came..]
        .iter()
        .position(|e| matches!(e, GameEvent::PlayerJoined { slot: s } if *s == slot));
    assert_eq!(
        numbers_in(&events[..left]),
        (0..SENT).collect::<Vec<_>>(),
        "the leaver's numbers, all before its departure: {events:?}"
    );
    assert!(left < came, "the departure before the arrival: {events:?}");
    assert!(
        joined.is_some(),
        "the newcomer's join, after its arrival: {events:?}"
    );
    assert_eq!(
        numbers_in(&events[came..]),
        (100..110).collect::<Vec<_>>(),
        "the newcomer's numbers, after its arrival: {events:?}"
    );
    drop(players);
    server.finish();
}
