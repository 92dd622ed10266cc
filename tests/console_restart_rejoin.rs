//! A player's game crashes (SIGKILL) in a peer-to-peer game and is started again on the same
//! port, then connects to the other player: real `parsecnet console` processes over UDP on
//! loopback. The restarted game is seated in the dead one's place and sees only the other
//! player, never its dead predecessor at its own address; the other game sees the dead one leave
//! and the new one arrive. (Before, the other game waited for the dead process's turn to answer,
//! past the restarted game's short connect loop, which then started a game of its own; with a
//! longer loop it was seated but listed the dead process as a player until `net.timeout`.) The
//! simulated cases and the full game are in `net-core/tests/peer_restart_rejoin.rs`.

use std::net::UdpSocket;

mod support;

use support::processes::ConsoleProcess;

/// Two distinct UDP ports on 127.0.0.1 that were free a moment ago (both held until both are
/// known, so they differ).
fn free_ports() -> (u16, u16) {
    let bind = || UdpSocket::bind("127.0.0.1:0").expect("a free port");
    let (a, b) = (bind(), bind());
    let port = |s: &UdpSocket| s.local_addr().expect("bound").port();
    (port(&a), port(&b))
}

/// A console game with quick peer timings on `port` (0: any), named `name`.
fn game(name: &str, port: u16) -> ConsoleProcess {
    let mut game = ConsoleProcess::start();
    for command in [
        "net.udp.bind 127.0.0.1".to_string(),
        "net.udp.ipv6 0".to_string(),
        format!("net.port {port}"),
        "net.peer.connect_tries 3".to_string(),
        "net.peer.connect_interval 100".to_string(),
        format!("name {name}"),
    ] {
        game.send(&command);
    }
    game
}

#[test]
fn a_game_restarted_on_its_port_takes_the_dead_ones_place() {
    let (port_a, port_b) = free_ports();
    let mut alpha = game("alpha", port_a);
    // Nobody answers at port_b yet: alpha runs a game of its own.
    alpha.send(&format!("connect 127.0.0.1:{port_b}"));
    alpha.expect("alpha's own game", |l| l == "* connected: you are player 0");

    let mut beta = game("beta", port_b);
    beta.send(&format!("connect 127.0.0.1:{port_a}"));
    beta.expect("beta seated", |l| l == "* connected: you are player 1");
    alpha.expect("beta shown to alpha", |l| {
        l == "* beta (player 1) connected"
    });

    beta.kill();
    let mut again = game("beta2", port_b);
    again.send(&format!("connect 127.0.0.1:{port_a}"));
    again.expect("the restarted game seated", |l| {
        l.starts_with("* connected: you are player")
    });
    again.expect("alpha shown to it", |l| l == "* alpha (player 0) connected");
    alpha.expect("the restarted game shown to alpha", |l| {
        l.starts_with("* beta2 (player") && l.ends_with(") connected")
    });
    // Once it has been silent about 1.3 s (or the new process answered at its address).
    let gone = alpha.expect("the dead process gone from alpha's game", |l| {
        l.starts_with("* player 1 left: ")
    });
    assert!(
        gone.ends_with("reconnected") || gone.contains("another process answers at its address"),
        "{gone}"
    );

    // Its player table, a few frames later (the line after it marks its end).
    again.send("wait 300");
    again.send("players");
    again.send("net.server");
    again.expect("the end of its player table", |l| l == "net.server = none");
    let shown: Vec<&String> = again
        .seen
        .iter()
        .filter(|l| l.starts_with("* ") && l.ends_with(" connected") && !l.contains("you are"))
        .collect();
    assert_eq!(
        shown,
        vec!["* alpha (player 0) connected"],
        "the restarted game is shown only alpha: {:?}",
        again.seen
    );
    let beta_rows = again
        .seen
        .iter()
        .filter(|l| l.contains("127.0.0.1:") && l.contains(" beta "))
        .count();
    assert_eq!(beta_rows, 0, "no dead beta in its table: {:?}", again.seen);
}
