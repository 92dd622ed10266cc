//! A real `parsecnet gameserver` on 127.0.0.1 and players made of a TCP join (with the ` port:`
//! and ` token:` extensions) and a real UDP socket writing packets with the library's own link
//! and wire writer, against hostile and odd datagrams at the game port:
//!
//! - from a stranger: another player's slot with a wrong token, or with the right token while
//!   that player is alive; a replay of a genuine packet from a new port, before and after the
//!   genuine player changed port; the player's slot with its token or with the sender's own
//!   token from another player's socket;
//!   truncated, oversized (up to the largest UDP datagram) and garbage datagrams;
//! - once a player has been quiet for a moment: another player at another port of its host (two
//!   players behind one NAT) claiming its slot with what the server's `add` line told about it,
//!   which is not its token; and a sender at another host with its real token;
//!
//! the server keeps serving everyone, never forwards any of these as a player's, counts each
//! one in its status lines (`bad`, `unknown senders`, `wrong tokens`, docs/server-admin.md), and
//! a genuine player whose port changes (a NAT rebinding) keeps playing at its new port.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use net_core::rmev::{ChatText, EarlierTokens, RemoteEvent, ResumeStep};
use net_core::server::text_protocol::join_request;
use net_core::session::{Delivery, Link, LinkConfig, PacketMeta, REBIND_SILENCE};
use net_core::wire::{decode_packet, PacketType};

mod support;

use support::processes::{ServerProcess, LIMIT};

/// A player: its TCP connection's lines and its side of the UDP link with the server.
struct Player {
    name: &'static str,
    slot: u8,
    token: u32,
    _tcp: TcpStream,
    lines: Receiver<String>,
    seen_lines: Vec<String>,
    socket: UdpSocket,
    server: SocketAddr,
    link: Link,
    /// Every chat line received, with the slot it came as.
    chats: Vec<(Option<u8>, String)>,
    /// Its packets as sent, for the replays.
    sent: Vec<Vec<u8>>,
}

fn udp_socket(ip: &str) -> UdpSocket {
    let socket = UdpSocket::bind((ip, 0)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    socket
}

fn chat(text: &str) -> RemoteEvent {
    RemoteEvent::SendText(ChatText::new(text.as_bytes()).unwrap())
}

impl Player {
    fn join(server: &ServerProcess, name: &'static str, token: u32) -> Player {
        let socket = udp_socket("127.0.0.1");
        let port = socket.local_addr().unwrap().port();
        let mut tcp = TcpStream::connect(server.tcp).unwrap();
        let line = join_request(name, "linux", Some(port), Some(token));
        writeln!(tcp, "{line}").unwrap();
        let reader = BufReader::new(tcp.try_clone().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut player = Player {
            name,
            slot: 0,
            token,
            _tcp: tcp,
            lines,
            seen_lines: Vec::new(),
            socket,
            server: server.udp.expect("the gameserver's UDP port"),
            link: Link::new(LinkConfig::default()),
            chats: Vec::new(),
            sent: Vec::new(),
        };
        let accepted = player.line(|l| l.starts_with(&format!("join from {name} accepted")));
        let slot = accepted.split("slot: ").nth(1).unwrap().split(',').next();
        player.slot = slot.unwrap().parse().unwrap();
        // Its first packet says its RE_RESUME hello, as every client's does.
        let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::default()));
        player.send(PacketType::NodeAlive, vec![hello]);
        player
    }

    /// The first line from the server (since the last one taken) that `wanted` accepts.
    #[track_caller]
    fn line(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(i) = self.seen_lines.iter().position(|l| wanted(l)) {
                return self.seen_lines.remove(i);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen_lines.push(line),
                Err(_) => panic!("{}: no such line; got {:?}", self.name, self.seen_lines),
            }
        }
    }

    /// Its next packet (its slot and token), with `events`.
    fn packet(&mut self, kind: PacketType, events: Vec<RemoteEvent>) -> Vec<u8> {
        for event in events {
            assert!(self.link.queue_event(event));
        }
        let meta = PacketMeta {
            kind,
            sender_slot: Some(self.slot),
            joined: true,
            token: self.token,
            relay: false,
        };
        let mut buf = [0u8; 1400];
        let len = self
            .link
            .write_packet(Instant::now(), &mut buf, meta, None)
            .unwrap();
        self.sent.push(buf[..len].to_vec());
        buf[..len].to_vec()
    }

    fn send(&mut self, kind: PacketType, events: Vec<RemoteEvent>) {
        let packet = self.packet(kind, events);
        self.socket.send_to(&packet, self.server).unwrap();
    }

    /// Read what the server sent (for a moment), answering its link; acknowledgements and the
    /// answer to its hello go back at once.
    fn pump(&mut self) {
        let mut buf = [0u8; 2048];
        let mut events = Vec::new();
        let mut reply = false;
        while let Ok((n, from)) = self.socket.recv_from(&mut buf) {
            assert_eq!(from, self.server, "{}: a datagram from {from}", self.name);
            let packet =
                decode_packet(&buf[..n], &mut events).expect("the server's packets decode");
            assert_ne!(
                packet.header.sender_slot,
                Some(self.slot),
                "{} was sent its own events",
                self.name
            );
            let mut out = Vec::new();
            self.link.handle_packet(
                Instant::now(),
                &packet.header,
                packet.state.as_ref(),
                &events,
                &mut |d| out.push(d),
            );
            for delivery in out {
                reply = true;
                match delivery {
                    Delivery::Event {
                        origin,
                        event: RemoteEvent::SendText(text),
                    } => self
                        .chats
                        .push((origin, String::from_utf8_lossy(text.as_bytes()).into())),
                    Delivery::Event {
                        event: RemoteEvent::Resume(ResumeStep::Hello(_)),
                        ..
                    } => {
                        self.link.queue_event(RemoteEvent::Resume(ResumeStep::Done));
                    }
                    _ => {}
                }
            }
        }
        if reply {
            self.send(PacketType::NodeAlive, vec![]);
        }
    }

    fn has_chat(&self, from: u8, text: &str) -> bool {
        self.chats.contains(&(Some(from), text.to_string()))
    }
}

/// Pump every player until `done` holds.
#[track_caller]
fn until(players: &mut [&mut Player], what: &str, done: impl Fn(&[&mut Player]) -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done(players) {
        assert!(
            Instant::now() < deadline,
            "{what}: chats {:?}",
            players
                .iter()
                .map(|p| (p.name, &p.chats))
                .collect::<Vec<_>>()
        );
        for p in players.iter_mut() {
            p.pump();
        }
    }
}

/// Stay quiet (only reading) for longer than the relay's rebinding silence.
fn quiet_while_others_read(players: &mut [&mut Player]) {
    let until = Instant::now() + REBIND_SILENCE + Duration::from_millis(500);
    while Instant::now() < until {
        for p in players.iter_mut() {
            let mut buf = [0u8; 2048];
            // Read and drop: no acknowledgement goes out, so nobody's packet reaches the server.
            while p.socket.recv_from(&mut buf).is_ok() {}
        }
    }
}

/// The relay's status line (from `/players.json`) once it shows `wanted`.
#[track_caller]
fn status_showing(server: &ServerProcess, wanted: &str) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        let (_, json) = server.get("/players.json");
        if json.contains(wanted) {
            return json;
        }
        // The status lines on the pages are renewed every 5 s.
        assert!(Instant::now() < deadline, "no {wanted:?} in {json}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn hostile_datagrams_are_dropped_and_counted_and_a_player_whose_port_changes_keeps_playing() {
    let server = ServerProcess::loopback_gameserver(&[
        "--http-port",
        "0",
        "--alive-timeout",
        "3600",
        "--distance",
        "0",
    ]);
    let mut ann = Player::join(&server, "ann", 0x0A11);
    let mut bob = Player::join(&server, "bob", 0x0B22);
    let mut cid = Player::join(&server, "cid", 0x0C33);
    let udp = ann.server;
    // Bob is told an id for ann by the server, as every extended client is; her token is a
    // secret between her and the server.
    let add = bob.line(|l| l.starts_with("add ip: 127.0.0.1 name: ann in "));
    let ann_told: u32 = add.rsplit("token: ").next().unwrap().parse().unwrap();
    assert_ne!(ann_told, 0, "{add}");
    assert_ne!(
        ann_told, ann.token,
        "the server told bob ann's token: {add}"
    );
    let ann_token = ann.token;

    ann.send(PacketType::GameState, vec![chat("ann 1")]);
    let a = ann.slot;
    until(&mut [&mut ann, &mut bob, &mut cid], "ann 1", |p| {
        p[1].has_chat(a, "ann 1") && p[2].has_chat(a, "ann 1")
    });

    // Ann is alive (she just spoke). A stranger at another port of her host claims her slot,
    // with a wrong token, then with hers; it replays her packet; bob sends as ann from his own
    // socket; odd lengths from ann's own socket; garbage.
    let stranger = udp_socket("127.0.0.1");
    let mut forger = Link::new(LinkConfig::default());
    let mut forged = |token: u32, text: &str| {
        for _ in 0..1000 {
            // Sequences far past ann's, so only the token and the address can refuse them.
            let meta = PacketMeta {
                kind: PacketType::NodeAlive,
                sender_slot: Some(a),
                joined: true,
                token,
                relay: false,
            };
            forger
                .write_packet(Instant::now(), &mut [0u8; 1400], meta, None)
                .unwrap();
        }
        forger.queue_event(chat(text));
        let meta = PacketMeta {
            kind: PacketType::GameState,
            sender_slot: Some(a),
            joined: true,
            token,
            relay: false,
        };
        let mut buf = [0u8; 1400];
        let len = forger
            .write_packet(Instant::now(), &mut buf, meta, None)
            .unwrap();
        buf[..len].to_vec()
    };
    let first = ann.sent[1].clone();
    // Ann has just been heard.
    ann.send(PacketType::NodeAlive, vec![]);
    let mut unknown = 0;
    stranger
        .send_to(&forged(0x0BAD, "forged: wrong token"), udp)
        .unwrap();
    stranger
        .send_to(&forged(ann_token, "forged: ann is alive"), udp)
        .unwrap();
    stranger.send_to(&first, udp).unwrap();
    unknown += 3;
    bob.socket
        .send_to(&forged(ann_token, "forged: from bob's socket"), udp)
        .unwrap();
    bob.socket
        .send_to(&forged(bob.token, "forged: bob's token, ann's slot"), udp)
        .unwrap();
    let mut bad = 0;
    let genuine = ann.packet(PacketType::GameState, vec![chat("ann 2")]);
    for len in [0, 1, 23, 24, 30, genuine.len() - 1] {
        ann.socket.send_to(&genuine[..len], udp).unwrap();
        bad += 1;
    }
    for extra in [1, 3000, 65_507 - genuine.len()] {
        let mut grown = genuine.clone();
        grown.resize(genuine.len() + extra, 0x5A);
        ann.socket.send_to(&grown, udp).unwrap();
        bad += 1;
    }
    stranger.send_to(&[0xFF; 100], udp).unwrap();
    bad += 1;
    // Then her genuine packet, whose chat line everyone gets, after nothing forged.
    ann.socket.send_to(&genuine, udp).unwrap();
    until(&mut [&mut ann, &mut bob, &mut cid], "ann 2", |p| {
        p[1].has_chat(a, "ann 2") && p[2].has_chat(a, "ann 2")
    });

    // Ann's NAT gives her a new port. Her old packet replayed from another port is refused
    // before she moves (she is alive) and after (it is old), from her old port too.
    let old_socket = std::mem::replace(&mut ann.socket, udp_socket("127.0.0.1"));
    stranger.send_to(&first, udp).unwrap();
    unknown += 1;
    quiet_while_others_read(&mut [&mut ann, &mut bob, &mut cid]);
    ann.send(PacketType::GameState, vec![chat("ann 3")]);
    until(&mut [&mut ann, &mut bob, &mut cid], "ann 3", |p| {
        p[1].has_chat(a, "ann 3") && p[2].has_chat(a, "ann 3")
    });
    let before_move = ann.sent[ann.sent.len() - 2].clone();
    stranger.send_to(&before_move, udp).unwrap();
    old_socket.send_to(&before_move, udp).unwrap();
    unknown += 2;
    let c = cid.slot;
    cid.send(PacketType::GameState, vec![chat("cid 1")]);
    until(
        &mut [&mut ann, &mut bob, &mut cid],
        "cid 1 at ann's new port",
        |p| p[0].has_chat(c, "cid 1") && p[1].has_chat(c, "cid 1"),
    );
    // The others are told of the move with the same id, which a client takes as a move.
    let new_port = ann.socket.local_addr().unwrap().port();
    let moved = bob.line(|l| {
        l.starts_with(&format!(
            "add ip: 127.0.0.1 name: ann in {a} port: {new_port} "
        ))
    });
    assert!(moved.ends_with(&format!(" token: {ann_told}")), "{moved}");

    // Ann is quiet for a moment. Bob, at another port of her host (both behind one NAT), claims
    // her slot with what the server told him about her; then a thief at another host with her
    // real token (read off her traffic).
    quiet_while_others_read(&mut [&mut ann, &mut bob, &mut cid]);
    let neighbour = udp_socket("127.0.0.1");
    neighbour
        .send_to(&forged(ann_told, "forged: bob as ann behind her NAT"), udp)
        .unwrap();
    let thief = udp_socket("127.0.0.2");
    thief
        .send_to(&forged(ann_token, "forged: thief as ann"), udp)
        .unwrap();
    unknown += 2;
    ann.send(PacketType::GameState, vec![chat("ann 4")]);
    cid.send(PacketType::GameState, vec![chat("cid 2")]);
    until(
        &mut [&mut ann, &mut bob, &mut cid],
        "ann 4 and cid 2",
        |p| p[1].has_chat(a, "ann 4") && p[2].has_chat(a, "ann 4") && p[0].has_chat(c, "cid 2"),
    );
    let mut buf = [0u8; 2048];
    for (who, socket) in [("bob's second socket", &neighbour), ("the thief", &thief)] {
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        assert!(
            socket.recv_from(&mut buf).is_err(),
            "the server sent ann's packets to {who}"
        );
    }

    for p in [&ann, &bob, &cid] {
        let forged: Vec<_> = p
            .chats
            .iter()
            .filter(|(_, t)| t.starts_with("forged"))
            .collect();
        assert!(forged.is_empty(), "{} got {forged:?}", p.name);
    }
    // Every dropped datagram counted (impostors are among the unknown senders).
    let json = status_showing(&server, &format!("unknown senders {unknown},"));
    assert!(json.contains(&format!(", bad {bad},")), "{json}");
    assert!(json.contains("wrong tokens 2,"), "{json}");
    assert!(json.contains("clients moved 1"), "{json}");
}
