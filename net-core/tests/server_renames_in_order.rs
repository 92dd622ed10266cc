//! A player's name never goes back at the others when it renames through a slot or game
//! server, sans-IO and deterministic: the real client protocol (`ServerClient`) on the network
//! simulator in virtual time, the server's TCP lines handed to it by the test at chosen moments
//! (so either way of the race can be arranged), and, for a gameserver, the real relay.
//!
//! A rename reaches the others twice: the server's `name ip:` line (TCP) and the player's own
//! RE_PLAYERNAME (peer to peer, or through the relay), which also greets every newcomer with the
//! name in use. Whichever copy comes last used to win: a greeting or rename retransmitted late,
//! or lines late behind the packets, showed the others an older name again (PLAYER_NAME new,
//! old, new) and `NET_FetchPlayerName` returned it meanwhile. Each other player must see each
//! accepted name once, in the order it was set, and its table must never hold a superseded one.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::protocol::server_client::ServerClient;
use net_core::protocol::{ClientProtocol, ConnectParams, ProtocolKind, StreamCommand, StreamEvent};
use net_core::relay::{RelayConfig, RelayCore};
use net_core::rmev::PlayerName;
use net_core::session::{GameEvent, SessionConfig};
use net_core::sim::{self, Endpoint, LinkProfile, Network, Transmit};
use net_core::Node;

const ANN: usize = 0;
const BO: usize = 1;
/// The relay's simulated node (gameserver runs).
const RELAY: usize = 2;
const GAME_PORT: u16 = 6526;
const SERVER_TOKEN: u32 = 0x5e5e_0001;

fn ip_of(index: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, index as u8))
}

/// The address the relay knows simulated node `index` by.
fn addr_of(index: usize) -> SocketAddr {
    SocketAddr::new(ip_of(index), GAME_PORT)
}

fn token_of(index: usize) -> u32 {
    0x100 + index as u32
}

/// A game on a slot or game server, and what it told the game.
struct Client {
    proto: ServerClient,
    events: Vec<GameEvent>,
    buf: Vec<u8>,
}

impl Client {
    fn drain(&mut self) {
        while let Some(event) = self.proto.poll_event() {
            self.events.push(event);
        }
    }
}

/// The gameserver's relay on its simulated node (clients at `addr_of(index)`).
struct Relay {
    relay: RelayCore,
    buf: Vec<u8>,
}

enum Party {
    Client(Box<Client>),
    Relay(Box<Relay>),
}

impl Endpoint for Party {
    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]) {
        match self {
            Party::Client(c) => {
                c.proto.handle_datagram(now, from, data);
                c.drain();
            }
            Party::Relay(r) => {
                let from = addr_of(sim::node_index(&from).expect("a simulated node"));
                r.relay.handle_datagram(now, from, data);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Party::Client(c) => {
                c.proto.handle_timeout(now);
                c.drain();
            }
            Party::Relay(r) => r.relay.handle_timeout(now),
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self {
            Party::Client(c) => {
                let (to, len) = c.proto.poll_transmit(now, &mut c.buf)?;
                Some(Transmit {
                    to,
                    data: c.buf[..len].to_vec(),
                })
            }
            Party::Relay(r) => {
                let (to, len) = r.relay.poll_transmit(now, &mut r.buf)?;
                let IpAddr::V4(v4) = to.ip() else {
                    unreachable!("relay clients are IPv4 here")
                };
                Some(Transmit {
                    to: sim::node(usize::from(v4.octets()[3])),
                    data: r.buf[..len].to_vec(),
                })
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Party::Client(c) => c.proto.poll_timeout(),
            Party::Relay(r) => r.relay.poll_timeout(),
        }
    }
}

fn name(text: &str) -> PlayerName {
    PlayerName::new(text.as_bytes()).unwrap()
}

/// A game that asked to connect to the server (its TCP connection not open yet).
fn connecting(kind: ProtocolKind, index: usize, player: &str, now: Instant) -> Client {
    let mut proto = ServerClient::new(kind);
    let params = ConnectParams {
        target: None,
        broadcast: None,
        local_node: sim::node(index),
        name: name(player),
        token: token_of(index),
        order: Arc::new(sim::compare_nodes),
        same_host: Arc::new(|a: &Node, b: &Node| a == b),
        session: SessionConfig::default(),
        server: Some(("10.0.0.2".into(), 6582)),
        game_port: GAME_PORT,
        // 10.0.0.N is simulated node N, whatever the port.
        resolve: Arc::new(|ip: &str, _port: u16| {
            let ip: Ipv4Addr = ip.parse().ok()?;
            Some(sim::node(usize::from(ip.octets()[3])))
        }),
        resume: None,
    };
    proto.connect(now, params).expect("connect starts");
    Client {
        proto,
        events: Vec::new(),
        buf: vec![0; 1400],
    }
}

fn client(net: &mut Network<Party>, index: usize) -> &mut Client {
    match net.endpoint_mut(index) {
        Some(Party::Client(c)) => c,
        _ => panic!("node {index} is no client"),
    }
}

/// What the server sends the game at `index` now, line by line, in order (its TCP stream).
fn lines(net: &mut Network<Party>, index: usize, lines: &[String]) {
    let now = net.now();
    let c = client(net, index);
    for line in lines {
        c.proto.handle_stream(now, StreamEvent::Line(line.clone()));
    }
    c.drain();
}

/// The lines the game at `index` sent the server since last asked.
fn sent(net: &mut Network<Party>, index: usize) -> Vec<String> {
    let c = client(net, index);
    std::iter::from_fn(|| c.proto.poll_stream())
        .filter_map(|command| match command {
            StreamCommand::SendLine(line) => Some(line),
            _ => None,
        })
        .collect()
}

fn add_line(index: usize, player: &str) -> String {
    format!(
        "add ip: {} name: {player} in {index} port: {GAME_PORT} token: {}",
        ip_of(index),
        token_of(index)
    )
}

fn name_line(index: usize, player: &str) -> String {
    format!("name ip: {} name: {player} port: {GAME_PORT}", ip_of(index))
}

/// ann (slot 0) and bo (slot 1) in one game of `kind`, each seated in the other's table by
/// the server's `add ip:` lines; run until their links work.
fn two_seated(kind: ProtocolKind) -> Network<Party> {
    let mut net: Network<Party> = Network::new(3, 7, LinkProfile::default());
    let now = net.now();
    let mut relay = RelayCore::new(RelayConfig {
        server_token: SERVER_TOKEN,
        ..RelayConfig::default()
    });
    for (index, player) in [(ANN, "ann"), (BO, "bo")] {
        let mut c = connecting(kind, index, player, now);
        let peer = SocketAddr::new(ip_of(RELAY), 6582);
        c.proto.handle_stream(now, StreamEvent::Connected { peer });
        net.start(index, Party::Client(Box::new(c)));
        assert!(sent(&mut net, index)[0].contains(&format!("join me: {player} ")));
        // A slotserver has no UDP game port: it says 0, as the real one does.
        let udp = if kind == ProtocolKind::GameServer {
            6522
        } else {
            0
        };
        let mut answer = vec![format!(
            "join from {player} accepted, slot: {index}, server name: test udp: {udp} token: {SERVER_TOKEN}"
        )];
        answer.extend(std::iter::repeat_n(String::new(), 4));
        lines(&mut net, index, &answer);
        if kind == ProtocolKind::GameServer {
            relay.add_client(now, index as u8, addr_of(index), token_of(index));
        }
    }
    if kind == ProtocolKind::GameServer {
        net.start(
            RELAY,
            Party::Relay(Box::new(Relay {
                relay,
                buf: vec![0; 1400],
            })),
        );
    }
    lines(&mut net, ANN, &[add_line(BO, "bo")]);
    lines(&mut net, BO, &[add_line(ANN, "ann")]);
    net
}

/// The game-visible name of slot 0 (ann) at bo: what `NET_FetchPlayerName` returns.
fn ann_at_bo(net: &Network<Party>) -> String {
    match net.endpoint(BO) {
        Some(Party::Client(c)) => c
            .proto
            .session()
            .and_then(|s| s.players().get(0).map(|p| p.name.to_string()))
            .unwrap_or_default(),
        _ => panic!("bo is a client"),
    }
}

/// Run for `duration`, appending every change of ann's name in bo's table to `seen`.
fn run_watching(net: &mut Network<Party>, duration: Duration, seen: &mut Vec<String>) {
    let until = net.now() + duration;
    net.run_until(until, |net| {
        let now = ann_at_bo(net);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
    });
}

/// What bo's game heard about ann: connected (with the name) and renamed.
fn heard_about_ann(net: &mut Network<Party>) -> Vec<String> {
    client(net, BO)
        .events
        .iter()
        .filter_map(|e| match e {
            GameEvent::PlayerConnected { slot: 0, name } => Some(format!("connected {name}")),
            GameEvent::PlayerName { slot: 0, name } => Some(format!("name {name}")),
            _ => None,
        })
        .collect()
}

/// ann asks for `names` in turn (`my new name:`), as `name X` does.
fn ann_asks(net: &mut Network<Party>, names: &[&str]) {
    for n in names {
        client(net, ANN).proto.update_name(name(n)).unwrap();
    }
    let asked: Vec<String> = names.iter().map(|n| format!("my new name: {n}")).collect();
    assert_eq!(sent(net, ANN), asked);
}

fn lossy() -> LinkProfile {
    LinkProfile {
        loss: 1.0,
        ..LinkProfile::default()
    }
}

/// The link from `index` towards bo: the peer link (slotserver) or the relay's (gameserver).
fn towards_bo(kind: ProtocolKind) -> usize {
    if kind == ProtocolKind::GameServer {
        RELAY
    } else {
        ANN
    }
}

/// Two renames the server accepted at once; the others' lines come at once, while ann's
/// packets towards bo are lost for a while, so her RE_PLAYERNAMEs arrive (retransmitted) well
/// after the lines. bo is shown each name where ann's stream reaches it (after what she said
/// before renaming), so meanwhile it keeps the old one.
fn lines_first_packets_late(kind: ProtocolKind) {
    let mut net = two_seated(kind);
    let mut seen = Vec::new();
    run_watching(&mut net, Duration::from_secs(1), &mut seen);
    assert_eq!(seen, ["ann"]);
    net.set_profile(towards_bo(kind), BO, lossy());
    ann_asks(&mut net, &["anna", "annie"]);
    let accepted = "new name accepted".to_string();
    lines(&mut net, ANN, &[accepted.clone(), accepted]);
    lines(&mut net, BO, &[name_line(ANN, "anna")]);
    run_watching(&mut net, Duration::from_millis(100), &mut seen);
    lines(&mut net, BO, &[name_line(ANN, "annie")]);
    run_watching(&mut net, Duration::from_millis(400), &mut seen);
    assert_eq!(seen, ["ann"], "the lines' names wait for ann's stream");
    net.set_profile(towards_bo(kind), BO, LinkProfile::default());
    run_watching(&mut net, Duration::from_secs(3), &mut seen);
    // Both renames may come in one packet, so the table can go from ann to annie at once; it
    // never goes back.
    assert!(
        seen == ["ann", "anna", "annie"] || seen == ["ann", "annie"],
        "ann's name at bo over time: {seen:?}"
    );
    assert_eq!(
        heard_about_ann(&mut net),
        ["connected ann", "name anna", "name annie"]
    );
}

/// Two renames the server accepted: ann hears so at once and tells bo over UDP, but the
/// server's lines to bo come a second later (its TCP connection lost a segment).
fn packets_first_lines_late(kind: ProtocolKind) {
    let mut net = two_seated(kind);
    let mut seen = Vec::new();
    run_watching(&mut net, Duration::from_secs(1), &mut seen);
    ann_asks(&mut net, &["anna", "annie"]);
    let accepted = "new name accepted".to_string();
    lines(&mut net, ANN, &[accepted.clone(), accepted]);
    run_watching(&mut net, Duration::from_secs(1), &mut seen);
    lines(&mut net, BO, &[name_line(ANN, "anna")]);
    run_watching(&mut net, Duration::from_millis(300), &mut seen);
    lines(&mut net, BO, &[name_line(ANN, "annie")]);
    run_watching(&mut net, Duration::from_secs(1), &mut seen);
    assert_eq!(seen, ["ann", "anna", "annie"], "ann's name at bo over time");
    assert_eq!(
        heard_about_ann(&mut net),
        ["connected ann", "name anna", "name annie"]
    );
}

#[test]
fn slotserver_renames_arrive_once_in_order_when_the_packets_come_late() {
    lines_first_packets_late(ProtocolKind::SlotServer);
}

#[test]
fn slotserver_renames_arrive_once_in_order_when_the_lines_come_late() {
    packets_first_lines_late(ProtocolKind::SlotServer);
}

#[test]
fn gameserver_renames_arrive_once_in_order_when_the_relayed_packets_come_late() {
    lines_first_packets_late(ProtocolKind::GameServer);
}

#[test]
fn gameserver_renames_arrive_once_in_order_when_the_lines_come_late() {
    packets_first_lines_late(ProtocolKind::GameServer);
}

/// The contract_pair flap: ann greets bo with her name (RE_PLAYERNAME) when the server seats
/// him, but her packets to bo are lost for a while; she renames, the server tells bo at once,
/// and tells ann a little later (its TCP to her is slow). The greeting, retransmitted when the
/// loss ends, must not take bo back to "ann", and bo's table must never show it again.
#[test]
fn slotserver_a_late_greeting_does_not_bring_the_old_name_back() {
    let mut net = two_seated(ProtocolKind::SlotServer);
    net.set_profile(ANN, BO, lossy());
    let mut seen = Vec::new();
    run_watching(&mut net, Duration::from_millis(500), &mut seen);
    assert!(
        !client(&mut net, BO)
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::PlayerName { .. })),
        "the greeting has not arrived"
    );
    ann_asks(&mut net, &["anna"]);
    lines(&mut net, BO, &[name_line(ANN, "anna")]);
    net.set_profile(ANN, BO, LinkProfile::default());
    run_watching(&mut net, Duration::from_secs(2), &mut seen);
    lines(&mut net, ANN, &["new name accepted".to_string()]);
    run_watching(&mut net, Duration::from_secs(2), &mut seen);
    assert_eq!(seen, ["ann", "anna"], "ann's name at bo over time");
    assert_eq!(heard_about_ann(&mut net), ["connected ann", "name anna"]);
}
