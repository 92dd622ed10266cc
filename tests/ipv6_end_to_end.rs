//! IPv6 end to end, with real processes on ::1: a masterserver and a gameserver bound to ::1,
//! the gameserver registered with the masterserver at `[::1]:PORT`; two `parsecnet console`
//! players find it with `servers`, connect to `[::1]:PORT`, join and chat. Every address a
//! player or an admin reads is bracketed, so it can be typed back (`[::1]:6581`, never
//! `::1:6581`): the masterserver's JSON, the `servers` table, the `connect` reply, `status` and
//! `players`.
//!
//! Each step waits for the line it needs (with a generous limit that only ends a hung run).
//! Without IPv6 on the loopback interface the test says SKIPPED and why.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

mod support;

use support::processes::{ConsoleProcess as Player, ServerProcess as Server, LIMIT};

/// A server on ::1 with every port chosen by the system.
fn on_ipv6_loopback(kind: &str, args: &[&str]) -> Server {
    let mut all = vec!["--bind", "::1", "--port", "0", "--http-port", "0"];
    all.extend_from_slice(args);
    Server::start(kind, &all)
}

#[test]
fn players_find_and_play_on_a_gameserver_on_ipv6_loopback() {
    if let Err(e) = UdpSocket::bind("[::1]:0") {
        eprintln!("SKIPPED: no IPv6 loopback here ({e})");
        return;
    }
    let master = on_ipv6_loopback("masterserver", &[]);
    let master_at = master.tcp.to_string();
    let game = on_ipv6_loopback(
        "gameserver",
        &["--udp-port", "0", "--name", "six", "--master", &master_at],
    );
    let game_at = game.tcp.to_string();
    assert!(game_at.starts_with("[::1]:"), "{game_at}");

    // The masterserver lists it at its bracketed address.
    let deadline = Instant::now() + LIMIT;
    let json = loop {
        let json = master.get("/servers.json").1;
        if json.contains("\"six\"") || Instant::now() > deadline {
            break json;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        json.contains(&format!("\"address\": \"{game_at}\"")) && json.contains("\"ip\": \"::1\""),
        "{json}"
    );
    assert!(master.get("/").1.contains(&format!("<td>{game_at}</td>")));

    let mut alice = Player::start();
    alice.send("net.subsys gameserver");
    alice.send("net.port 0");
    alice.send("name alice");
    alice.send(&format!("net.master {master_at}"));
    alice.send("servers");
    let row = alice.expect("listing the gameserver", |l| l.starts_with("six "));
    assert!(row.contains(&format!(" {game_at} ")), "{row}");
    alice.send(&format!("net.server {game_at}"));
    alice.send("connect");
    alice.expect("saying where it connects", |l| {
        l == format!("connecting to the gameserver at {game_at}")
    });
    alice.expect("of the connection", |l| {
        l == "* connected: you are player 0"
    });
    alice.send("join");
    alice.expect("of the join", |l| l == "joined the game");

    let mut bob = Player::start();
    bob.send("net.subsys gameserver");
    bob.send("net.port 0");
    bob.send("name bob");
    bob.send(&format!("connect {game_at}"));
    bob.expect("of the connection", |l| {
        l == "* connected: you are player 1"
    });
    bob.send("join");
    bob.expect("of alice", |l| l == "* alice (player 0) joined the game");
    bob.send("say hello over IPv6");
    alice.expect("of bob's chat", |l| l == "<bob> hello over IPv6");
    alice.send("say hello back");
    bob.expect("of alice's chat", |l| l == "<alice> hello back");

    alice.send("status");
    let line = alice.expect("of the protocol", |l| l.starts_with("protocol: "));
    assert!(
        line.contains(&format!("(on 'six' ({game_at}), slot 0,")),
        "{line}"
    );
    alice.send("players");
    let row = alice.expect("of bob in the table", |l| l.contains(" bob "));
    assert!(row.contains(" [::1]:"), "{row}");
}

#[test]
fn an_ipv4_and_an_ipv6_player_share_a_game_on_a_dual_stack_gameserver() {
    if let Err(e) = UdpSocket::bind("[::1]:0") {
        eprintln!("SKIPPED: no IPv6 loopback here ({e})");
        return;
    }
    // Bound to `::`: IPv6, and IPv4 as ::ffff:a.b.c.d (Linux maps by default).
    // "... on TCP [::]:P, UDP [::]:U, HTML list at http://localhost:H/": reached on 127.0.0.1.
    let game = Server::start(
        "gameserver",
        &[
            "--bind",
            "::",
            "--port",
            "0",
            "--http-port",
            "0",
            "--udp-port",
            "0",
            "--name",
            "both",
        ],
    );

    let mut four = Player::start();
    four.send("net.subsys gameserver");
    four.send("net.port 0");
    four.send("net.udp.ipv6 0");
    four.send("name four");
    four.send(&format!("connect 127.0.0.1:{}", game.tcp.port()));
    four.expect("of the connection", |l| {
        l == "* connected: you are player 0"
    });
    four.send("join");
    four.send("say first words");

    let mut six = Player::start();
    six.send("net.subsys gameserver");
    six.send("net.port 0");
    six.send("name six");
    six.send(&format!("connect [::1]:{}", game.tcp.port()));
    six.expect("of the connection", |l| {
        l == "* connected: you are player 1"
    });
    six.send("join");
    six.send("say hi four");
    four.expect("of six's chat", |l| l == "<six> hi four");
    four.send("say hi six");
    six.expect("of four's chat", |l| l == "<four> hi six");
    six.send("players");
    let row = six.expect("of four in the table", |l| l.contains(" four "));
    assert!(row.contains(" 127.0.0.1:"), "shown as IPv4: {row}");
    four.send("players");
    let row = four.expect("of six in the table", |l| l.contains(" six "));
    assert!(row.contains(" [::1]:"), "{row}");

    // The IPv4 player's datagrams (from ::ffff:127.0.0.1) were its own from the first one: none
    // was refused as from an unknown sender, and it never "moved" to the mapped address.
    let json = game.get("/players.json").1;
    let relay = json
        .split('"')
        .find(|s| s.starts_with("relay: "))
        .unwrap_or_else(|| panic!("no relay status in {json}"));
    assert!(relay.contains("unknown senders 0,"), "{relay}");
    assert!(
        json.contains("\"address\": \"127.0.0.1\"") && json.contains("\"address\": \"::1\""),
        "{json}"
    );
}
