//! What the frame's input and output do when a player leaves, with a real subsystem (ann) on
//! loopback UDP, a slotserver played by the test on a real TCP connection, and the other
//! player (bob) a real UDP socket the test reads and writes:
//!
//! - a server's lines are handled after the datagrams that came before them (see
//!   `Subsystem::drive_stream`), so bob's last text comes before his departure;
//! - ann's `disconnect` sends copies of what her links still owe after her last packet (see
//!   `Session::farewell_copies`), so one lost datagram does not cost her last text.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use super::Subsystem;
use crate::rmev::{ChatText, EarlierTokens, RemoteEvent, ResumeStep};
use crate::session::{GameEvent, Link, LinkConfig, PacketMeta, FAREWELL_COPIES};
use crate::wire::{decode_packet, PacketType};

const LIMIT: Duration = Duration::from_secs(10);
const BOB_SLOT: u8 = 1;
const BOB_TOKEN: u32 = 0x0B0B;

fn console(sub: &mut Subsystem, line: &str) {
    let reply = sub.console_exec(line, Instant::now());
    assert!(reply.result.is_ok(), "{line}: {}", reply.output);
}

/// Frames of `sub` (events into `seen`) until `done`.
fn frames_until(
    sub: &mut Subsystem,
    seen: &mut Vec<GameEvent>,
    what: &str,
    mut done: impl FnMut(&mut Vec<GameEvent>) -> bool,
) {
    let deadline = Instant::now() + LIMIT;
    while !done(seen) {
        assert!(Instant::now() < deadline, "{what}: {seen:?}");
        sub.maintain(Instant::now());
        while let Some(event) = sub.poll_event() {
            seen.push(event);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn chat(text: &str) -> RemoteEvent {
    RemoteEvent::SendText(ChatText::new(text.as_bytes()).expect("a valid text"))
}

fn is_chat(event: &RemoteEvent, text: &str) -> bool {
    matches!(event, RemoteEvent::SendText(t) if t.to_string() == text)
}

/// Bob's first packet, saying `text` after the RE_RESUME hello every link starts with and the
/// answer to ann's (bob has no earlier session, so ann's events then flow to him).
fn bobs_packet(text: &str) -> Vec<u8> {
    let mut link = Link::new(LinkConfig::default());
    let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::default()));
    assert!(link.queue_event(hello));
    assert!(link.queue_event(RemoteEvent::Resume(ResumeStep::Done)));
    assert!(link.queue_event(chat(text)));
    let meta = PacketMeta {
        kind: PacketType::GameState,
        sender_slot: Some(BOB_SLOT),
        joined: false,
        token: BOB_TOKEN,
        relay: false,
    };
    let mut buf = [0u8; 1400];
    let len = link
        .write_packet(Instant::now(), &mut buf, meta, None)
        .expect("a packet");
    buf[..len].to_vec()
}

/// Ann in a slotserver game with bob, and what the test holds of it.
struct Game {
    ann: Subsystem,
    ann_addr: SocketAddr,
    /// The server's side of ann's connection.
    tcp: TcpStream,
    bob: UdpSocket,
    seen: Vec<GameEvent>,
}

impl Game {
    /// Ann connects to the test's slotserver, which seats her in slot 0 and bob (the test's
    /// socket) in `BOB_SLOT`.
    fn seated() -> Game {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let server = listener.local_addr().unwrap();
        let bob = UdpSocket::bind("127.0.0.1:0").unwrap();
        let bob_port = bob.local_addr().unwrap().port();
        let mut ann = Subsystem::new();
        for line in [
            "net.udp.bind 127.0.0.1".to_string(),
            "net.udp.ipv6 0".to_string(),
            "net.port 0".to_string(),
            "net.api udp".to_string(),
            "net.subsys slotserver".to_string(),
            "name ann".to_string(),
            format!("connect {server}"),
        ] {
            console(&mut ann, &line);
        }
        let mut seen = Vec::new();
        let mut tcp: Option<TcpStream> = None;
        frames_until(&mut ann, &mut seen, "ann connects", |_| {
            if tcp.is_none() {
                tcp = listener.accept().ok().map(|(s, _)| s);
            }
            tcp.is_some()
        });
        let mut tcp = tcp.unwrap();
        tcp.set_nonblocking(false).unwrap();
        tcp.set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let mut reader = BufReader::new(tcp.try_clone().unwrap());
        let mut join = String::new();
        frames_until(&mut ann, &mut seen, "ann's join line", |_| {
            let _ = reader.read_line(&mut join);
            join.ends_with('\n')
        });
        let ann_port: u16 = join
            .split(" port: ")
            .nth(1)
            .and_then(|p| p.split(' ').next())
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no port in {join:?}"));
        write!(
            tcp,
            "join from ann accepted, slot: 0, server name: fake udp: 0 token: 77\n\
             one\ntwo\nthree\nfour\n\
             add ip: 127.0.0.1 name: bob in {BOB_SLOT} port: {bob_port} token: {BOB_TOKEN}\n"
        )
        .unwrap();
        frames_until(&mut ann, &mut seen, "bob seated", |seen| {
            seen.iter()
                .any(|e| matches!(e, GameEvent::PlayerConnected { slot, .. } if *slot == BOB_SLOT))
        });
        seen.clear();
        Game {
            ann,
            ann_addr: SocketAddr::from(([127, 0, 0, 1], ann_port)),
            tcp,
            bob,
            seen,
        }
    }

    /// Every datagram that reaches bob's socket until it has been quiet for 300 ms.
    fn bobs_datagrams(&self) -> Vec<Vec<u8>> {
        self.bob
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok((len, _)) = self.bob.recv_from(&mut buf) {
            got.push(buf[..len].to_vec());
        }
        got
    }
}

#[test]
fn a_players_last_text_comes_before_the_line_that_says_it_left() {
    // A server sends what a player said before the line saying it left (the gameserver relays
    // it first; a slotserver's player sends its last packet before `remove me`). When the
    // datagram arrived after a frame's receive and the line before its stream read, the line
    // was handled first: the game got PLAYER_DISCONNECTED and then the text, from a slot
    // nobody was in (no name to show with it). Here both wait before a frame's stream read
    // (`drive_stream`, which a frame runs after its receive).
    let mut game = Game::seated();
    let bob_port = game.bob.local_addr().unwrap().port();
    game.bob
        .send_to(&bobs_packet("bye"), game.ann_addr)
        .unwrap();
    writeln!(game.tcp, "remove ip: 127.0.0.1 port: {bob_port}").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let ann = &mut game.ann;
    let options = ann.current_options();
    ann.drive_stream(Instant::now(), &options);
    ann.take_protocol_output(Instant::now());
    let mut name_at_text = None;
    while let Some(event) = ann.poll_event() {
        if matches!(event, GameEvent::Remote { slot, .. } if slot == BOB_SLOT) {
            name_at_text = ann.player_name(BOB_SLOT).map(|n| n.to_string());
        }
        game.seen.push(event);
    }
    let seen = &game.seen;
    let text = seen.iter().position(|e| {
        matches!(e, GameEvent::Remote { slot, event } if *slot == BOB_SLOT && is_chat(event, "bye"))
    });
    let left = seen
        .iter()
        .position(|e| matches!(e, GameEvent::PlayerDisconnected { slot, .. } if *slot == BOB_SLOT));
    assert!(
        matches!((text, left), (Some(t), Some(l)) if t < l),
        "bob's text, then his departure: {seen:?}"
    );
    // While the game handles the text, its sender is still named (docs/decisions.md, "Lookups
    // answer as of the last `NETs_MaintainNet`, except for a departing player").
    assert_eq!(name_at_text.as_deref(), Some("bob"));
}

#[test]
fn a_text_said_right_before_disconnect_goes_out_in_more_than_one_datagram() {
    // `disconnect` sends the events the game queued in one last packet, and nothing is
    // retransmitted once the player has left: a loss of that datagram cost the text. Now
    // copies follow it, each carrying every event still unacknowledged. (Through a slotserver
    // the server tells the others the player left; peer to peer the DISCONNECT comes after.)
    let mut game = Game::seated();
    // Bob is heard (a player's events wait until it is), and never acknowledges anything, so
    // ann's greeting stays owed too; what came before the text is not counted.
    game.bob.send_to(&bobs_packet("hi"), game.ann_addr).unwrap();
    frames_until(&mut game.ann, &mut game.seen, "bob's hi", |seen| {
        seen.iter()
            .any(|e| matches!(e, GameEvent::Remote { event, .. } if is_chat(event, "hi")))
    });
    let _ = game.bobs_datagrams();
    console(&mut game.ann, "say bye");
    console(&mut game.ann, "disconnect");
    let mut events = Vec::new();
    let mut carrying_bye = 0;
    let mut kinds = Vec::new();
    for datagram in game.bobs_datagrams() {
        let packet = decode_packet(&datagram, &mut events).expect("a valid packet");
        kinds.push(packet.header.kind);
        if events.iter().any(|e| is_chat(&e.event, "bye")) {
            assert!(
                events
                    .iter()
                    .all(|e| !is_chat(&e.event, "bye") || e.reliable_id.is_some()),
                "the text is reliable (one id in every copy)"
            );
            carrying_bye += 1;
        }
    }
    assert_eq!(
        carrying_bye,
        1 + FAREWELL_COPIES,
        "datagrams carrying the text (the last packet and its copies): {kinds:?}"
    );
}
