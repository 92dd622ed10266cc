//! A server's lines are handled after the datagrams that came before them (see
//! `Subsystem::drive_stream`), with a real subsystem on loopback UDP, a slotserver played by the
//! test on a real TCP connection, and another player's real UDP socket.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use super::Subsystem;
use crate::rmev::{ChatText, EarlierTokens, RemoteEvent, ResumeStep};
use crate::session::{GameEvent, Link, LinkConfig, PacketMeta};
use crate::wire::PacketType;

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

/// Bob's packet saying `text` (with the RE_RESUME hello every client's first packet says).
fn bobs_packet(text: &str) -> Vec<u8> {
    let mut link = Link::new(LinkConfig::default());
    let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::default()));
    assert!(link.queue_event(hello));
    let text = ChatText::new(text.as_bytes()).expect("a valid text");
    assert!(link.queue_event(RemoteEvent::SendText(text)));
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

#[test]
fn a_players_last_text_comes_before_the_line_that_says_it_left() {
    // A server sends what a player said before the line saying it left (the gameserver relays
    // it first; a slotserver's player sends its last packet before `remove me`). When the
    // datagram arrived after a frame's receive and the line before its stream read, the line
    // was handled first: the game got PLAYER_DISCONNECTED and then the text, from a slot
    // nobody was in (no name to show with it). Here both wait before a frame's stream read
    // (`drive_stream`, which a frame runs after its receive).
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
    let ann_addr = SocketAddr::from(([127, 0, 0, 1], ann_port));
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

    // Bob's last text, then the server's line that he left, both before ann's next look at
    // the connection: as if both came after her frame's receive.
    bob.send_to(&bobs_packet("bye"), ann_addr).unwrap();
    writeln!(tcp, "remove ip: 127.0.0.1 port: {bob_port}").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let options = ann.current_options();
    ann.drive_stream(Instant::now(), &options);
    ann.take_protocol_output(Instant::now());
    let mut name_at_text = None;
    while let Some(event) = ann.poll_event() {
        if matches!(event, GameEvent::Remote { slot, .. } if slot == BOB_SLOT) {
            name_at_text = ann.player_name(BOB_SLOT).map(|n| n.to_string());
        }
        seen.push(event);
    }
    let text = seen.iter().position(|e| {
        matches!(e, GameEvent::Remote { slot, event: RemoteEvent::SendText(t) }
            if *slot == BOB_SLOT && t.to_string() == "bye")
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
