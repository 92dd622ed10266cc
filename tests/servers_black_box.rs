//! The three servers as an outside test sees them (SPEC section 6): the real `parsecnet`
//! binaries on 127.0.0.1 with ports picked by the kernel, driven by raw TCP clients that compare
//! every byte they receive. Each client reads exactly the bytes it expects next, in order, and
//! ends with a request whose reply must come next, so a missing, extra, reordered or misspelled
//! line (or a CR in a reply) fails the test.
//!
//! - slotserver and gameserver: a join (sent with CR LF) gets the accept line and the admin's
//!   four message lines, then one `add ip:` line per player already there; the others get
//!   `add ip: IP name: NAME in SLOT`, `name ip: IP name: NAME` and `remove ip: IP` in the order
//!   things happened; `name already taken` (join and rename), `server full`,
//!   `server version incompatible`, `you're not even joined` (remove and rename),
//!   `you sent an invalid request` (an unknown line, a 32-byte name; a 256-byte line also
//!   closes the connection), `removing you`; a closed connection frees its slot, the lowest free
//!   slot is given next, and the HTTP player list shows who is on.
//! - masterserver: the design's join, `players: P max: M`, `masterserver full` at
//!   `--max-servers`, `masterserver version incompatible`, `illegal request not processed`,
//!   `remove me` both ways; the HTML list shows `P/M` and the URL as a link, the JSON list has
//!   the server; a closed connection unlists it.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

mod support;

use support::processes::ServerProcess;
use support::text_client::{Client, IO_TIMEOUT};

const MESSAGES: [&str; 4] = [
    "Welcome to Gamma",
    "Rule one: fly",
    "",
    "Rule three: have fun",
];

/// A server on 127.0.0.1 with every port chosen by the system.
fn start(kind: &str, args: &[&str]) -> ServerProcess {
    let mut all = vec!["--bind", "127.0.0.1", "--port", "0", "--http-port", "0"];
    all.extend_from_slice(args);
    ServerProcess::start(kind, &all)
}

/// A raw TCP client of `server`'s protocol port.
fn client(server: &ServerProcess) -> Client {
    Client::connect(server.tcp)
}

fn accepted(name: &str, slot: u8, server: &str) -> Vec<String> {
    let mut lines = vec![format!(
        "join from {name} accepted, slot: {slot}, server name: {server}"
    )];
    lines.extend(MESSAGES.map(String::from));
    lines
}

fn refs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

fn slot_protocol_byte_for_byte(kind: &str) {
    let dir = std::env::temp_dir().join(format!("servers-black-box-{kind}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let messages = dir.join("motd.txt");
    std::fs::write(&messages, MESSAGES.join("\n") + "\n").unwrap();
    let mut args = vec![
        "--name",
        "Gamma Q",
        "--max-players",
        "2",
        "--messages",
        messages.to_str().unwrap(),
    ];
    if kind == "gameserver" {
        // Raw TCP clients send no UDP: keep them seated for the whole test.
        args.extend(["--udp-port", "0", "--alive-timeout", "3600"]);
    }
    let server = start(kind, &args);
    let ip = "127.0.0.1";

    let mut alice = client(&server);
    alice.send_raw(b"version: 1.0 join me: alice os: linux\r\n");
    alice.expect(&refs(&accepted("alice", 0, "Gamma Q")));

    let mut bob = client(&server);
    bob.ask("version: 1.0 join me: alice os: win", "name already taken");
    bob.send("version: 1.0 join me: bob os: win");
    let mut lines = accepted("bob", 1, "Gamma Q");
    lines.push(format!("add ip: {ip} name: alice in 0"));
    bob.expect(&refs(&lines));
    alice.expect(&[&format!("add ip: {ip} name: bob in 1")]);

    let mut carol = client(&server);
    carol.ask("version: 1.0 join me: carol os: x", "server full");
    carol.ask(
        "version: 2.0 join me: carol os: x",
        "server version incompatible",
    );
    carol.ask("remove me", "you're not even joined");
    carol.ask("my new name: carla", "you're not even joined");
    carol.ask("hello", "you sent an invalid request");
    carol.ask(
        &format!("version: 1.0 join me: {} os: x", "n".repeat(32)),
        "you sent an invalid request",
    );

    bob.ask("my new name: bobby", "new name accepted");
    alice.expect(&[&format!("name ip: {ip} name: bobby")]);
    bob.ask("my new name: alice", "name already taken");
    bob.ask("remove me", "removing you");
    alice.expect(&[&format!("remove ip: {ip}")]);
    bob.ask("remove me", "you're not even joined");

    // The lowest free slot, and the one who is there.
    carol.send("version: 1.0 join me: carol os: x");
    let mut lines = accepted("carol", 1, "Gamma Q");
    lines.push(format!("add ip: {ip} name: alice in 0"));
    carol.expect(&refs(&lines));
    alice.expect(&[&format!("add ip: {ip} name: carol in 1")]);
    drop(carol);
    alice.expect(&[&format!("remove ip: {ip}")]);

    // The slot carol's closed connection held is free again.
    let mut dave = client(&server);
    dave.send("version: 1.0 join me: dave os: x");
    let mut lines = accepted("dave", 1, "Gamma Q");
    lines.push(format!("add ip: {ip} name: alice in 0"));
    dave.expect(&refs(&lines));
    alice.expect(&[&format!("add ip: {ip} name: dave in 1")]);

    let mut eve = client(&server);
    eve.send("x".repeat(256).as_str());
    eve.expect(&["you sent an invalid request"]);
    eve.expect_closed();

    let (head, body) = server.get("/players.json");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    for field in [
        "\"player_count\": 2",
        "\"name\": \"alice\"",
        "\"name\": \"dave\"",
    ] {
        assert!(body.contains(field), "{field} missing: {body}");
    }
    let (head, body) = server.get("/players.html");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(body.contains("2/2 players"), "{body}");

    // Nothing else was sent to alice in between: her next reply comes next.
    alice.ask("remove me", "removing you");
    dave.expect(&[&format!("remove ip: {ip}")]);
    dave.ask("remove me", "removing you");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_slotserver_answers_every_line_byte_for_byte() {
    slot_protocol_byte_for_byte("slotserver");
}

#[test]
fn the_gameserver_answers_every_line_byte_for_byte() {
    slot_protocol_byte_for_byte("gameserver");
}

/// `list servers` (our extension) as the lines between the request and `end of list`.
fn listed(server: &ServerProcess) -> Vec<String> {
    let stream = TcpStream::connect(server.tcp).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut reader = BufReader::new(stream);
    reader.get_mut().write_all(b"list servers\n").unwrap();
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "no end of list");
        if line == "end of list\n" {
            return lines;
        }
        lines.push(line);
    }
}

#[test]
fn the_masterserver_answers_every_line_byte_for_byte() {
    let server = start("masterserver", &["--max-servers", "2"]);
    let join = |name: &str| {
        format!("version: 1.0 join me: {name} os: linux maxplayers: 16 url: http://{name}.example/")
    };

    let mut gamma = client(&server);
    gamma.ask("players: 1 max: 16", "illegal request not processed");
    gamma.send_raw(format!("{}\r\n", join("gamma")).as_bytes());
    gamma.expect(&["join accepted"]);
    gamma.ask("players: 3 max: 16", "players acknowledged.");
    gamma.ask("players: 17 max: 16", "illegal request not processed");
    gamma.ask(&join("gamma"), "illegal request not processed");

    let mut delta = client(&server);
    delta.ask(
        "version: 2.0 join me: delta os: linux maxplayers: 8 url: -",
        "masterserver version incompatible",
    );
    delta.ask("remove me", "you're not even joined");
    delta.ask(&join("delta"), "join accepted");
    let mut late = client(&server);
    late.ask(&join("late"), "masterserver full");
    late.ask("garbage", "illegal request not processed");

    let (head, html) = server.get("/");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(html.contains("3/16"), "{html}");
    assert!(
        html.contains("<a href=\"http://gamma.example/\""),
        "the URL as a link: {html}"
    );
    let (head, json) = server.get("/servers.json");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    for field in [
        "\"name\": \"gamma\"",
        "\"players\": 3",
        "\"max_players\": 16",
        "\"url\": \"http://gamma.example/\"",
        "\"server_count\": 2",
    ] {
        assert!(json.contains(field), "{field} missing: {json}");
    }

    delta.ask("remove me", "removing you");
    delta.ask("remove me", "you're not even joined");
    late.ask(&join("late"), "join accepted");
    drop(gamma);
    // Unlisted once its connection closed: only `late` is left (the request may overtake
    // the close, so ask until it shows).
    let mut names = Vec::new();
    for _ in 0..500 {
        names = listed(&server);
        if names.len() == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].ends_with(" name: late\n"), "{names:?}");
    assert!(names[0].contains(" players: 0 max: 16 "), "{names:?}");
    late.ask("remove me", "removing you");
}
