//! IPv6 end to end, with real processes on ::1: a masterserver and a gameserver bound to ::1,
//! the gameserver registered with the masterserver at `[::1]:PORT`; two `parsecnet console`
//! players find it with `servers`, connect to `[::1]:PORT`, join and chat. Every address a
//! player or an admin reads is bracketed, so it can be typed back (`[::1]:6581`, never
//! `::1:6581`): the masterserver's JSON, the `servers` table, the `connect` reply, `status` and
//! `players`.
//!
//! Each step waits for the line it needs (with a generous limit that only ends a hung run).
//! Without IPv6 on the loopback interface the test says SKIPPED and why.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Only a hung run waits this long for a line.
const LIMIT: Duration = Duration::from_secs(30);

/// A `parsecnet` server on ::1 with every port chosen by the system; killed when dropped.
struct Server {
    child: Child,
    tcp: SocketAddr,
    http: SocketAddr,
}

impl Server {
    fn start(kind: &str, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .args([kind, "--bind", "::1", "--port", "0", "--http-port", "0"])
            .args(args)
            .env("PARSEC_NET_LOG", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("parsecnet runs");
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        // A server with --master first says where it registers.
        while line.is_empty() || line.starts_with("registering") {
            line.clear();
            reader.read_line(&mut line).unwrap();
        }
        // "KIND ['NAME' ]listening on TCP [::1]:P[, UDP ...], ... http://[::1]:H/..."
        let address_after = |marker: &str| -> Option<SocketAddr> {
            let rest = line.split(marker).nth(1)?;
            rest.split([',', ' ', '/']).next()?.parse().ok()
        };
        let (Some(tcp), Some(http)) = (address_after("on TCP "), address_after("http://")) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no addresses in {line:?}");
        };
        Server { child, tcp, http }
    }

    /// The body of `GET path`.
    fn get(&self, path: &str) -> String {
        let mut stream = TcpStream::connect(self.http).unwrap();
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `parsecnet console` reading commands from a pipe; its output lines arrive on a channel.
struct Player {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Player {
    fn start() -> Player {
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .arg("console")
            .env("PARSEC_NET_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("parsecnet console runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Player {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
    }

    /// Wait for a line that `wanted` accepts and return it (the lines before it are kept in
    /// `seen` for the failure message).
    fn expect(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    panic!(
                        "no line {what}; the console said:\n{}",
                        self.seen.join("\n")
                    )
                }
            }
        }
    }
}

impl Drop for Player {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn players_find_and_play_on_a_gameserver_on_ipv6_loopback() {
    if let Err(e) = UdpSocket::bind("[::1]:0") {
        eprintln!("SKIPPED: no IPv6 loopback here ({e})");
        return;
    }
    let master = Server::start("masterserver", &[]);
    let master_at = master.tcp.to_string();
    let game = Server::start(
        "gameserver",
        &["--udp-port", "0", "--name", "six", "--master", &master_at],
    );
    let game_at = game.tcp.to_string();
    assert!(game_at.starts_with("[::1]:"), "{game_at}");

    // The masterserver lists it at its bracketed address.
    let deadline = Instant::now() + LIMIT;
    let json = loop {
        let json = master.get("/servers.json");
        if json.contains("\"six\"") || Instant::now() > deadline {
            break json;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        json.contains(&format!("\"address\": \"{game_at}\"")) && json.contains("\"ip\": \"::1\""),
        "{json}"
    );
    assert!(master.get("/").contains(&format!("<td>{game_at}</td>")));

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .args([
            "gameserver",
            "--bind",
            "::",
            "--port",
            "0",
            "--http-port",
            "0",
        ])
        .args(["--udp-port", "0", "--name", "both"])
        .env("PARSEC_NET_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("parsecnet runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "... on TCP [::]:P, UDP [::]:U, HTML list at http://localhost:H/"
    let port = |marker: &str| -> u16 {
        line.split(marker)
            .nth(1)
            .and_then(|rest| rest.split([',', ' ', '/']).next())
            .and_then(|a| a.rsplit_once(':'))
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or_else(|| panic!("no {marker} address in {line:?}"))
    };
    let game = Server {
        tcp: SocketAddr::from(([127, 0, 0, 1], port("on TCP "))),
        http: SocketAddr::from(([127, 0, 0, 1], port("http://"))),
        child,
    };

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
    let json = game.get("/players.json");
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
