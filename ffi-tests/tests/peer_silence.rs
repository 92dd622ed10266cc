//! SPEC section 6, peer-to-peer: "NODE_ALIVE keeps unjoined peers; a silent peer is dropped"
//! (after 20 s by default), as real processes on 127.0.0.1 show it.
//!
//! Two `c/peer_game.c` games (alice, bob; they join) and a `parsecnet console` (carol; she never
//! types `join`) play peer to peer. bob is stopped with SIGSTOP: alice and carol each get one
//! PLAYER_DISCONNECTED for his slot saying "no packets for 20 s", while carol, unjoined and
//! silent but for NODE_ALIVE all that time, stays in alice's table. Then bob gets SIGCONT: his
//! packets are refused by players that dropped him, so they tell him; he gets
//! NET_EVENT_DISCONNECTED ("dropped by the other players: ...; reconnecting"), connects again
//! by himself (NET_EVENT_CONNECTED) and the others see him come back (PLAYER_CONNECTED).
//! Before that notice, the woken peer played on with players that refused every packet of
//! his, until his own 20 s timeout dropped them and left him alone in a game of his own.
//!
//! bob typed `net.sendfreq 5` in the game before he was stopped: his new game keeps it.
//!
//! No wall-clock bound is asserted: the test waits for events in order, with generous limits.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::live::{LiveGame, Running};
use parsec_net_ffi_tests::peer::{free_loopback_ports, game_args, loopback_setup, Event};
use parsec_net_ffi_tests::server::parsecnet;
use parsec_net_ffi_tests::Build;

/// Longest wait for a step that takes a few hundred milliseconds on an idle machine.
const STEP: Duration = Duration::from_secs(30);
/// Longest wait for the 20 s silence timeout to pass.
const SILENCE: Duration = Duration::from_secs(90);

fn live_game(program: &std::path::Path, name: &str, port: u16, peer: u16) -> LiveGame {
    let mut command = Command::new(program);
    command.args(game_args(
        name,
        &loopback_setup(port),
        Some(&format!("127.0.0.1:{peer}")),
        2,
        600_000,
        0,
    ));
    command.arg("--control");
    LiveGame::spawn(name, command, false)
}

fn events(game: &LiveGame) -> Vec<Event> {
    game.events_since(0)
}

fn slot_connected(game: &LiveGame) -> Option<i32> {
    events(game)
        .iter()
        .find(|e| e.kind == "CONNECTED")
        .map(|e| e.player)
}

/// Index in `game`'s events of the first event from `from` on that `what` accepts.
fn wait_event(
    game: &LiveGame,
    from: usize,
    timeout: Duration,
    what: impl Fn(&Event) -> bool,
) -> usize {
    game.wait_event_where(from, timeout, what)
}

fn console_fail(carol: &Running, message: &str) -> ! {
    panic!("carol (console): {message}\n{}", carol.transcript())
}

#[test]
fn a_stopped_peer_is_dropped_an_unjoined_one_is_kept_and_the_stopped_one_gets_back_in() {
    let program = Build::c("c/peer_game.c").build();
    let ports = free_loopback_ports(3);
    let mut alice = live_game(&program, "alice", ports[0], ports[1]);
    let mut bob = live_game(&program, "bob", ports[1], ports[0]);
    for game in [&alice, &bob] {
        wait_event(game, 0, STEP, |e| e.kind == "CONNECTED");
    }

    // carol: the console, never joined.
    let mut command = Command::new(parsecnet());
    command.arg("console");
    let mut carol = Running::spawn("carol", command, false);
    for line in loopback_setup(ports[2]) {
        carol.send(&line);
    }
    carol.send("name carol");
    carol.send(&format!("connect 127.0.0.1:{}", ports[0]));
    if carol
        .wait_for_line(0, STEP, |l| l.starts_with("* connected: you are player"))
        .is_none()
    {
        console_fail(&carol, "never connected");
    }
    for game in [&alice, &bob] {
        wait_event(game, 0, STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == "carol"
        });
    }
    let bob_slot = slot_connected(&bob).expect("bob connected");
    let carol_slot = events(&alice)
        .iter()
        .find(|e| e.kind == "PLAYER_CONNECTED" && e.text == "carol")
        .map(|e| e.player)
        .expect("alice saw carol");
    if carol
        .wait_for_line(0, STEP, |l| {
            l == format!("* bob (player {bob_slot}) joined the game")
        })
        .is_none()
    {
        console_fail(&carol, "never saw bob join");
    }

    // bob sets his send frequency in the game: it must still hold after he reconnects by himself.
    let (rc, reply) = bob.exec("net.sendfreq 5");
    assert_eq!(
        (rc, reply.as_str()),
        (0, "net.sendfreq = 5 Hz (in this game from now on)")
    );

    // bob stops: dropped for silence by alice and by carol.
    let alice_before = events(&alice).len();
    let carol_before = carol.line_count();
    bob.process.signal("STOP");
    let dropped = wait_event(&alice, alice_before, SILENCE, |e| {
        e.kind == "PLAYER_DISCONNECTED" && e.player == bob_slot
    });
    let dropped_event = &events(&alice)[dropped];
    assert_eq!(
        dropped_event.text, "no packets for 20 s",
        "alice: why bob was dropped"
    );
    let carol_saw = format!("* player {bob_slot} left: no packets for 20 s");
    if carol
        .wait_for_line(carol_before, STEP, |l| l == carol_saw)
        .is_none()
    {
        console_fail(&carol, &format!("never printed {carol_saw:?}"));
    }

    // Through those 20 s carol, unjoined, stayed: NODE_ALIVE kept her.
    let (rc, players) = alice.exec("players");
    assert_eq!(rc, 0, "players: {players}");
    let carol_row = players
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("carol"))
        .unwrap_or_else(|| alice.fail(&format!("carol not in alice's players: {players}")));
    assert_eq!(
        carol_row.split_whitespace().next(),
        Some(carol_slot.to_string().as_str()),
        "{players}"
    );
    assert_eq!(
        carol_row.split_whitespace().nth(2),
        Some("no"),
        "carol never joined: {players}"
    );
    assert!(
        !players
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("bob")),
        "bob is gone at alice: {players}"
    );

    // bob wakes up: told he was dropped, he connects again and the others see him back.
    let bob_before = events(&bob).len();
    let alice_before = events(&alice).len();
    bob.process.signal("CONT");
    let told = wait_event(&bob, bob_before, STEP, |e| e.kind == "DISCONNECTED");
    let told_event = &events(&bob)[told];
    assert!(
        told_event.text.starts_with("dropped by the other players")
            && told_event.text.contains("20 s")
            && told_event.text.ends_with("reconnecting"),
        "bob's DISCONNECTED says why: {:?}",
        told_event.text
    );
    wait_event(&bob, told + 1, STEP, |e| e.kind == "CONNECTED");
    wait_event(&alice, alice_before, STEP, |e| {
        e.kind == "PLAYER_CONNECTED" && e.text == "bob"
    });
    if carol
        .wait_for_line(carol_before, STEP, |l| {
            l.starts_with("* bob (player ") && l.ends_with(") connected")
        })
        .is_none()
    {
        console_fail(&carol, "never saw bob come back");
    }
    // bob, back, sees both again.
    let back = events(&bob);
    for name in ["alice", "carol"] {
        wait_event(&bob, told + 1, STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == name
        });
    }
    assert_eq!(
        back.iter().filter(|e| e.kind == "DISCONNECTED").count(),
        1,
        "bob was told once"
    );
    // carol was never dropped at alice.
    assert!(
        !events(&alice)
            .iter()
            .any(|e| e.kind == "PLAYER_DISCONNECTED" && e.player == carol_slot),
        "alice kept carol"
    );

    // bob's new game still sends at 5 Hz (to two players: about 10 packets a second; at the
    // default 20 Hz it would be about 40), as his `status` shows once its recent rate covers
    // only the new game.
    std::thread::sleep(Duration::from_secs(6));
    let (rc, status) = bob.exec("status");
    assert_eq!(rc, 0, "{status}");
    let game_line = status
        .lines()
        .find(|l| l.starts_with("game: "))
        .unwrap_or_else(|| bob.fail(&format!("no game line: {status}")));
    let rate: f64 = game_line
        .split("packets sent ")
        .nth(1)
        .and_then(|rest| rest.split('(').nth(1))
        .and_then(|rest| rest.split("/s)").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| bob.fail(&format!("no packet rate: {game_line}")));
    println!("bob after his reconnect: {game_line}");
    assert!(
        rate < 25.0,
        "bob's sendfreq 5 survives his reconnect: {game_line}"
    );
    assert!(status.contains("send frequency 5 Hz"), "{status}");

    carol.send("quit");
    let _ = carol.finish(STEP);
    let _ = bob.quit(STEP);
    let _ = alice.quit(STEP);
}
