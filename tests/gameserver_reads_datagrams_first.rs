//! A real `parsecnet gameserver` reads a client's datagrams before that client's lines, whichever
//! its wake-up lists first: a client's last events, sent over UDP before its `remove me`, are
//! relayed, not dropped as a departed player's.
//!
//! The order is forced with SIGSTOP: while the server is stopped, the leaving client sends a
//! rename line, then its last events (held for the rename's answer, so they go in the last
//! packets of its `disconnect`), then `remove me`. Its TCP connection became readable first, so
//! the woken server's wake-up lists it before the UDP socket; a server reading the lines first
//! would remove the player and then drop its datagrams from an unknown sender.

use std::time::{Duration, Instant};

#[path = "../net-core/tests/support/live_servers.rs"]
mod live_servers;
mod support;

use live_servers::{
    client, console, heard_before_departure, numbered, numbers_heard, run_frames, until_seated,
    Player,
};
use support::processes::ServerProcess;

const SENT: u32 = 20;

#[test]
fn a_leaving_clients_last_datagrams_are_read_before_its_remove_me() {
    let server = ServerProcess::loopback_gameserver(&["--no-http"]);
    let mut players: Vec<Player> = ["lea", "sta"]
        .iter()
        .map(|name| Player {
            sub: client(name, "gameserver", server.tcp),
            events: Vec::new(),
        })
        .collect();
    until_seated(&mut players, Duration::from_secs(20));
    // Settled: the first number goes through.
    players[0].sub.queue_remote_event(numbered(0)).unwrap();
    assert!(
        run_frames(&mut players, Duration::from_secs(20), |ps| !numbers_heard(
            &ps[1]
        )
        .is_empty()),
        "the first number never arrived: {:?}",
        players[1].events
    );
    let leaver_slot = players[0].slot().expect("seated");

    server.signal("-STOP");
    console(&mut players[0].sub, "name leo");
    players[0].sub.maintain(Instant::now());
    std::thread::sleep(Duration::from_millis(20));
    for n in 1..=SENT {
        players[0].sub.queue_remote_event(numbered(n)).unwrap();
    }
    players[0].sub.maintain(Instant::now());
    std::thread::sleep(Duration::from_millis(20));
    console(&mut players[0].sub, "disconnect");
    players[0].sub.maintain(Instant::now());
    std::thread::sleep(Duration::from_millis(50));
    server.signal("-CONT");

    let all = run_frames(&mut players, Duration::from_secs(20), |ps| {
        let (numbers, after) = heard_before_departure(&ps[1], leaver_slot);
        after.is_some() && numbers.len() > SENT as usize
    });
    let (numbers, after) = heard_before_departure(&players[1], leaver_slot);
    assert!(
        all,
        "the staying client saw the departure: {}; numbers: {numbers:?}",
        after.is_some()
    );
    // Every number once, in order, and before the departure (the relay sends what it relays
    // before the line that says the player left).
    assert_eq!(
        (numbers, after),
        ((0..=SENT).collect::<Vec<_>>(), Some(0)),
        "{:?}",
        players[1].events
    );
}
