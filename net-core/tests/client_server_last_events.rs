//! A player's last events before it leaves a server game reach the others, before its
//! departure:
//! - also when `net.sim` lags the leaving player's datagrams or the receiver's: a simulated path
//!   delays the game's TCP lines with the datagrams sent or received before them, as a real
//!   path would, so the TCP `remove me` (and the server's `remove ip:` line) cannot overtake
//!   them;
//! - also when it leaves right after being seated, while its new links still hold the game's
//!   events for the others' RE_RESUME answers.
//!
//! Real servers in threads, real clients over UDP on loopback, through both servers.

use std::time::{Duration, Instant};

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
    let (server, mut players) = two_seated_players_on(protocol, ["lea", "sta"]);
    let leaver_slot = players[0].slot().expect("seated");
    let lagged_player = match lagged {
        Lagged::Leaver => 0,
        Lagged::Receiver => 1,
    };
    if lag_ms > 0 {
        console(
            &mut players[lagged_player].sub,
            &format!("net.sim lag {lag_ms}"),
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
        Duration::from_millis(2 * lag_ms as u64),
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
/// frame: they all arrive, once and in order. Through a slotserver (peer to peer) they come
/// before the departure; through a gameserver they may come after it, as events of a departed
/// player (delivered anyway): the relay holds what it forwards to a newcomer until the
/// newcomer's first packet says whether it is someone coming back, and the departure line does
/// not wait for that.
fn events_queued_at_once_all_arrive(protocol: &'static str, before_departure: bool) {
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
    if before_departure {
        assert_eq!(
            after,
            Some(0),
            "{protocol}: the numbers came before the PLAYER_DISCONNECTED"
        );
    }
    drop(players);
    server.finish();
}

#[test]
fn a_player_leaving_right_after_being_seated_still_delivers_its_events_through_a_slotserver() {
    events_queued_at_once_all_arrive("slotserver", true);
}

#[test]
fn a_player_leaving_right_after_being_seated_still_delivers_its_events_through_a_gameserver() {
    events_queued_at_once_all_arrive("gameserver", false);
}
