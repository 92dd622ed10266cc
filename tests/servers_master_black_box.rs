//! Registration with a masterserver as admins and players see it, with real processes on
//! 127.0.0.1: a `parsecnet masterserver`, slot- and gameservers started with `--master`, and
//! `parsecnet console` players.
//!
//! - A gameserver's `P/M` on the masterserver (JSON, HTML) follows players joining and leaving;
//!   a player finds it with `servers` and connects to the address that shows; a player whose
//!   protocol is the other kind is told so and leaves (it used to be "connected" to a game
//!   nobody could see it in).
//! - A server started before its masterserver registers once it is up, and again by itself
//!   after the masterserver is killed and started again on the same ports, with the player
//!   count of the moment.
//! - A server stopped with SIGTERM leaves the list, one killed with SIGKILL too; at
//!   `--max-servers` another server is refused and listed once an entry is free.
//!
//! Every wait is for a state, with a limit that only ends a hung run; no time is asserted.

use std::net::TcpListener;
use std::time::{Duration, Instant};

mod support;

use support::processes::{ConsoleProcess as Player, ServerProcess, LIMIT};
use support::text_client::Client;

/// A server on 127.0.0.1 with every port chosen by the system.
fn start(kind: &str, args: &[&str]) -> ServerProcess {
    let mut all = vec!["--bind", "127.0.0.1", "--port", "0", "--http-port", "0"];
    all.extend_from_slice(args);
    ServerProcess::start(kind, &all)
}

/// A masterserver on 127.0.0.1 at the given ports.
fn master_at(port: u16, http: u16) -> ServerProcess {
    ServerProcess::start(
        "masterserver",
        &[
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--http-port",
            &http.to_string(),
        ],
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The JSON list's entries (one a line, as the masterserver writes them).
fn entries(master: &ServerProcess) -> Vec<String> {
    let (head, body) = master.get("/servers.json");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    body.lines()
        .filter(|l| l.trim_start().starts_with("{\"name\": "))
        .map(str::to_string)
        .collect()
}

/// `"players": P, "max_players": M` of the entry named `name`, or `None` if it is not listed.
fn occupancy(master: &ServerProcess, name: &str) -> Option<String> {
    let entry = entries(master)
        .into_iter()
        .find(|e| e.contains(&format!("{{\"name\": \"{name}\", ")))?;
    let from = entry.find("\"players\": ")?;
    let to = entry[from..].find(", \"os\"")? + from;
    Some(entry[from..to].to_string())
}

fn count(players: u32, max: u32) -> Option<String> {
    Some(format!("\"players\": {players}, \"max_players\": {max}"))
}

/// Wait until `occupancy` of `name` is `wanted` (`None`: unlisted).
#[track_caller]
fn wait_for(master: &ServerProcess, name: &str, wanted: Option<String>) {
    let deadline = Instant::now() + LIMIT;
    loop {
        let now = occupancy(master, name);
        if now == wanted {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: wanted {wanted:?}, the list has {now:?}: {:?}",
            entries(master)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A console player of `subsys` connected to `server` in `slot`.
#[track_caller]
fn player(subsys: &str, name: &str, server: &str, slot: u8) -> Player {
    let mut p = Player::start();
    p.send(&format!("net.subsys {subsys}"));
    p.send("net.port 0");
    p.send(&format!("name {name}"));
    p.send(&format!("connect {server}"));
    p.expect("of the connection", |l| {
        l == format!("* connected: you are player {slot}")
    });
    p
}

#[test]
fn players_are_counted_and_find_and_join_a_registered_gameserver() {
    let master = start("masterserver", &[]);
    let at = master.tcp.to_string();
    let game = start(
        "gameserver",
        &[
            "--udp-port",
            "0",
            "--name",
            "Gamma Quadrant",
            "--max-players",
            "4",
            "--url",
            "http://gamma.example/?a=1&b=2",
            "--master",
            &at,
        ],
    );
    let game_at = game.tcp.to_string();
    let udp = game.udp.expect("a UDP port").port();
    wait_for(&master, "Gamma Quadrant", count(0, 4));

    let _alice = player("gameserver", "alice", &game_at, 0);
    let mut bob = player("gameserver", "bob", &game_at, 1);
    wait_for(&master, "Gamma Quadrant", count(2, 4));
    let page = master.get("/").1;
    assert!(page.contains("<td>2/4</td>"), "{page}");
    assert!(
        page.contains("<a href=\"http://gamma.example/?a=1&amp;b=2\" rel=\"nofollow noopener\">Gamma Quadrant</a>"),
        "{page}"
    );

    bob.send("disconnect");
    wait_for(&master, "Gamma Quadrant", count(1, 4));

    // Carol finds it with `servers` and takes the address from the table.
    let mut carol = Player::start();
    carol.send(&format!("net.master {at}"));
    carol.send("servers");
    let row = carol.expect("listing the gameserver", |l| {
        l.starts_with("Gamma Quadrant ")
    });
    assert!(row.contains(" 1/4 "), "{row}");
    assert!(row.contains(&format!("gameserver udp {udp}")), "{row}");
    assert!(row.ends_with(" http://gamma.example/?a=1&b=2"), "{row}");
    let listed = row
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {row}"))
        .to_string();
    assert_eq!(listed, game_at);

    // With the slotserver protocol she is told what the server is, and is not left seated.
    carol.send("net.subsys slotserver");
    carol.send("net.port 0");
    carol.send("name carol");
    carol.send(&format!("connect {listed}"));
    carol.expect("saying the server is a gameserver", |l| {
        l == format!(
            "! {game_at} is a gameserver, not a slotserver (it takes the game packets on UDP \
             port {udp}); choose `net.subsys gameserver`, then connect again"
        )
    });
    carol.send("net.subsys gameserver");
    carol.send(&format!("connect {listed}"));
    carol.expect("of the connection", |l| {
        l == "* connected: you are player 1"
    });
    wait_for(&master, "Gamma Quadrant", count(2, 4));
}

#[test]
fn a_slotserver_registers_with_a_late_masterserver_and_again_after_a_restart() {
    let (port, http) = (free_port(), free_port());
    let slot = start(
        "slotserver",
        &[
            "--name",
            "Late Bird",
            "--max-players",
            "3",
            "--master",
            &format!("127.0.0.1:{port}"),
        ],
    );
    let slot_at = slot.tcp.to_string();
    // Nothing listens yet: the server serves players all the same.
    let _alice = player("slotserver", "alice", &slot_at, 0);

    let mut master = master_at(port, http);
    wait_for(&master, "Late Bird", count(1, 3));

    master.kill();
    let _bob = player("slotserver", "bob", &slot_at, 1);
    let master = master_at(port, http);
    wait_for(&master, "Late Bird", count(2, 3));
}

#[test]
fn stopped_and_killed_servers_leave_the_list_and_a_full_list_takes_the_next() {
    let master = start("masterserver", &["--max-servers", "2"]);
    let at = master.tcp.to_string();
    let mut one = start("slotserver", &["--name", "One", "--master", &at]);
    wait_for(&master, "One", count(0, 16));
    let mut two = start(
        "gameserver",
        &["--udp-port", "0", "--name", "Two", "--master", &at],
    );
    wait_for(&master, "Two", count(0, 16));

    let mut full = Client::connect(master.tcp);
    full.ask(
        "version: 1.0 join me: Three os: linux maxplayers: 8 url: -",
        "masterserver full",
    );
    let _three = start("slotserver", &["--name", "Three", "--master", &at]);

    one.terminate();
    wait_for(&master, "One", None);
    wait_for(&master, "Three", count(0, 16));

    two.kill();
    wait_for(&master, "Two", None);
    assert_eq!(entries(&master).len(), 1, "{:?}", entries(&master));
}

/// `--master localhost:P --master 127.0.0.1:P` name one masterserver: the server is listed
/// there once, not twice (the names differ, the address they resolve to does not).
#[test]
fn two_names_of_one_masterserver_list_the_server_once() {
    let master = start("masterserver", &[]);
    let port = master.tcp.port();
    let slot = start(
        "slotserver",
        &[
            "--name",
            "Twin Names",
            "--master",
            &format!("localhost:{port}"),
            "--master",
            &format!("127.0.0.1:{port}"),
        ],
    );
    wait_for(&master, "Twin Names", count(0, 16));
    // A player's arrival reaches the list through the registration that was made; both
    // names were resolved and tried long before it does.
    let _alice = player("slotserver", "alice", &slot.tcp.to_string(), 0);
    wait_for(&master, "Twin Names", count(1, 16));
    let listed: Vec<String> = entries(&master)
        .into_iter()
        .filter(|e| e.contains("{\"name\": \"Twin Names\", "))
        .collect();
    assert_eq!(listed.len(), 1, "listed more than once: {listed:#?}");
}
