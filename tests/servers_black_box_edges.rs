//! The three servers as an admin and an outside test meet them, beyond the design's replies that
//! `servers_black_box.rs` compares byte for byte: the real `parsecnet` binaries on 127.0.0.1
//! (ports chosen by the system), raw TCP and UDP clients.
//!
//! - a `--messages` file that ends with blank lines (an editor's) starts the server and sends
//!   the four lines; a fifth line with text still stops it;
//! - line framing: a line written a byte at a time, several lines in one write, CR LF, lines of
//!   exactly 255 and 256 bytes, an empty line, a NUL byte, bytes that are not UTF-8, a client
//!   that closes in the middle of a line; everyone else is served meanwhile;
//! - names: exactly 31 bytes, with spaces, differing only in case, free again once their player
//!   left; join twice on one connection, `remove me` then join again;
//! - masterserver: `players:` numbers that are negative, huge or over the maximum, and a
//!   server's name, OS and URL with HTML-special characters, escaped in the list;
//! - gameserver: UDP packets from an address that never joined are refused and counted.

use std::net::UdpSocket;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod support;

use support::processes::{loopback_slotserver, ServerProcess, LIMIT};
use support::text_client::Client;

const MESSAGES: [&str; 4] = ["first", "second", "", "fourth"];

/// A server on 127.0.0.1 with every port chosen by the system.
fn start(kind: &str, args: &[&str]) -> ServerProcess {
    let mut all = vec!["--bind", "127.0.0.1", "--port", "0", "--http-port", "0"];
    if kind == "gameserver" {
        // Raw TCP clients send no UDP: keep them seated for the whole test.
        all.extend(["--udp-port", "0", "--alive-timeout", "3600"]);
    }
    all.extend_from_slice(args);
    ServerProcess::start(kind, &all)
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("servers-edges-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn accepted(name: &str, slot: u8) -> Vec<String> {
    let mut lines = vec![format!(
        "join from {name} accepted, slot: {slot}, server name: parsec"
    )];
    lines.extend(MESSAGES.map(String::from));
    lines
}

fn refs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

fn join(name: &str) -> String {
    format!("version: 1.0 join me: {name} os: linux")
}

/// Regression: the empty last line an editor adds to a four-line messages file made it five
/// lines, and the server refused to start (`5 lines; at most 4 are sent`).
#[test]
fn a_messages_file_ending_in_blank_lines_starts_the_server() {
    let dir = temp_dir("motd");
    for (kind, text) in [
        ("slotserver", "first\nsecond\n\nfourth\n\n"),
        ("gameserver", "first\r\nsecond\r\n\r\nfourth\r\n\r\n  \r\n"),
    ] {
        let file = dir.join(format!("{kind}.txt"));
        std::fs::write(&file, text).unwrap();
        let server = start(kind, &["--messages", file.to_str().unwrap()]);
        let mut alice = Client::connect(server.tcp);
        alice.send(&join("alice"));
        alice.expect(&refs(&accepted("alice", 0)));
        alice.ask("remove me", "removing you");
    }

    // Still four lines at most: a fifth line with text stops the server, naming the file.
    let file = dir.join("five.txt");
    std::fs::write(&file, "1\n2\n3\n4\n5\n\n").unwrap();
    let out = loopback_slotserver()
        .args(["--messages", file.to_str().unwrap()])
        .env("PARSEC_NET_LOG", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "messages file {}: 5 lines; at most 4 are sent",
            file.display()
        )),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn framing(kind: &str) {
    let dir = temp_dir(kind);
    let file = dir.join("motd.txt");
    std::fs::write(&file, MESSAGES.join("\n") + "\n").unwrap();
    let server = start(
        kind,
        &["--max-players", "3", "--messages", file.to_str().unwrap()],
    );
    let ip = "127.0.0.1";

    // A line written a byte at a time.
    let mut alice = Client::connect(server.tcp);
    alice.stream.set_nodelay(true).unwrap();
    for byte in format!("{}\r\n", join("alice")).bytes() {
        alice.send_raw(&[byte]);
    }
    alice.expect(&refs(&accepted("alice", 0)));

    // Several lines in one write, answered in order.
    let mut bob = Client::connect(server.tcp);
    bob.send_raw(format!("{}\r\nmy new name: bobby\nremove me\r\n", join("bob")).as_bytes());
    let mut lines = accepted("bob", 1);
    lines.push(format!("add ip: {ip} name: alice in 0"));
    lines.extend(["new name accepted".into(), "removing you".into()]);
    bob.expect(&refs(&lines));
    alice.expect(&[
        &format!("add ip: {ip} name: bob in 1"),
        &format!("name ip: {ip} name: bobby"),
        &format!("remove ip: {ip}"),
    ]);

    // Empty lines, a NUL byte, bytes that are not UTF-8: each refused, the connection stays.
    bob.send_raw(b"\n\r\n\0\nmy new name: b\xffb\n\xc3\n");
    bob.expect(&["you sent an invalid request"; 5]);
    bob.ask("remove me", "you're not even joined");

    // A line of exactly 255 bytes (spaces around fields are ignored), with CR LF: a join.
    let line = format!("{:255}", join("carol"));
    bob.send_raw(format!("{line}\r\n").as_bytes());
    let mut lines = accepted("carol", 1);
    lines.push(format!("add ip: {ip} name: alice in 0"));
    bob.expect(&refs(&lines));
    alice.expect(&[&format!("add ip: {ip} name: carol in 1")]);

    // A client that closes in the middle of a line: nobody hears of it.
    let mut dave = Client::connect(server.tcp);
    dave.send_raw(b"version: 1.0 join me: da");
    drop(dave);

    // A line of 256 bytes (CR LF not counted): refused and closed, and its player leaves.
    bob.send_raw(format!("{line} \r\n").as_bytes());
    bob.expect(&["you sent an invalid request"]);
    bob.expect_closed();
    alice.expect(&[&format!("remove ip: {ip}")]);

    // Alice was served all along and got nothing else: her next reply comes next.
    alice.ask("my new name: alicia", "new name accepted");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_slotserver_frames_lines_as_a_tcp_stream_delivers_them() {
    framing("slotserver");
}

#[test]
fn the_gameserver_frames_lines_as_a_tcp_stream_delivers_them() {
    framing("gameserver");
}

fn names(kind: &str) {
    let dir = temp_dir(&format!("names-{kind}"));
    let file = dir.join("motd.txt");
    std::fs::write(&file, MESSAGES.join("\n")).unwrap();
    let server = start(
        kind,
        &["--max-players", "3", "--messages", file.to_str().unwrap()],
    );
    let ip = "127.0.0.1";
    let long = "L".repeat(31);

    let mut a = Client::connect(server.tcp);
    a.send(&join(&long));
    a.expect(&refs(&accepted(&long, 0)));
    a.ask(&join("again"), "you sent an invalid request");

    // Names differing only in case are different names; a name may hold spaces.
    let mut b = Client::connect(server.tcp);
    b.send(&join(&long.to_lowercase()));
    let mut lines = accepted(&long.to_lowercase(), 1);
    lines.push(format!("add ip: {ip} name: {long} in 0"));
    b.expect(&refs(&lines));
    a.expect(&[&format!("add ip: {ip} name: {} in 1", long.to_lowercase())]);
    b.ask("my new name: Sir  Fly  Alot", "new name accepted");
    a.expect(&[&format!("name ip: {ip} name: Sir  Fly  Alot")]);

    // A name is free again once its player left; `remove me` then a join on one connection.
    a.ask("remove me", "removing you");
    b.expect(&[&format!("remove ip: {ip}")]);
    b.ask(&format!("my new name: {long}"), "new name accepted");
    a.send(&join("Sir  Fly  Alot"));
    let mut lines = accepted("Sir  Fly  Alot", 0);
    lines.push(format!("add ip: {ip} name: {long} in 1"));
    a.expect(&refs(&lines));
    b.expect(&[&format!("add ip: {ip} name: Sir  Fly  Alot in 0")]);
    b.ask("remove me", "removing you");
    a.expect(&[&format!("remove ip: {ip}")]);
    a.ask("remove me", "removing you");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slotserver_names_are_31_bytes_case_sensitive_and_free_again() {
    names("slotserver");
}

#[test]
fn gameserver_names_are_31_bytes_case_sensitive_and_free_again() {
    names("gameserver");
}

#[test]
fn the_masterserver_refuses_odd_counts_and_escapes_what_servers_say() {
    let server = start("masterserver", &[]);
    let mut s = Client::connect(server.tcp);
    s.ask(
        "version: 1.0 join me: <b>A&B</b> \"q\" os: l<i>nux maxplayers: 16 url: http://x.example/?a=1&b=\"<s>\"",
        "join accepted",
    );
    for bad in [
        "players: 17 max: 16",
        "players: -1 max: 16",
        "players: 1 max: -16",
        "players: 99999999999999999999 max: 16",
        "players: 1 max: 65536",
        "players: 0 max: 0",
        "players: 1 max: 16 more",
    ] {
        s.ask(bad, "illegal request not processed");
    }
    s.ask("players: 7 max: 9", "players acknowledged.");

    let (_, html) = server.get("/");
    for escaped in [
        "<a href=\"http://x.example/?a=1&amp;b=&quot;&lt;s&gt;&quot;\"",
        "&lt;b&gt;A&amp;B&lt;/b&gt; &quot;q&quot;</a>",
        "l&lt;i&gt;nux",
        "7/9",
    ] {
        assert!(html.contains(escaped), "{escaped} missing: {html}");
    }
    assert!(!html.contains("<s>") && !html.contains("<b>A"), "{html}");
    for (head, json) in [server.get("/servers.json?x=1"), server.get("/?format=json")] {
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert!(
            json.contains("\"name\": \"\\u003cb\\u003eA\\u0026B\\u003c/b\\u003e \\\"q\\\"\""),
            "{json}"
        );
        assert!(
            json.contains("\"players\": 7, \"max_players\": 9"),
            "{json}"
        );
    }
    s.ask("remove me", "removing you");
}

#[test]
fn gameserver_udp_from_an_address_that_never_joined_is_refused_and_counted() {
    let server = start("gameserver", &[]);
    let (_, json) = server.get("/players.json");
    assert!(json.contains("unknown senders 0"), "{json}");
    let udp = server.udp.expect("the gameserver's UDP port");
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    // A well-formed GAME_STATE from slot 0 with some token, and a NODE_ALIVE.
    let packet = |kind: u8| {
        let mut p = b"PSN\x01".to_vec();
        p.extend([kind, 0, 0b010, 0]);
        p.extend(1u32.to_be_bytes());
        p.extend([0; 8]);
        p.extend(0x1234u32.to_be_bytes());
        p
    };
    for kind in [8, 9] {
        socket.send_to(&packet(kind), udp).unwrap();
    }
    // The status lines on the pages are renewed every 5 s: ask until they show the two.
    let deadline = Instant::now() + LIMIT;
    let mut json = String::new();
    while Instant::now() < deadline {
        json = server.get("/players.json").1;
        if json.contains("unknown senders 2") {
            assert!(json.contains("packets in 2 out 0"), "{json}");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("not counted as unknown senders: {json}");
}
