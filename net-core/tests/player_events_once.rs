//! What a game hears about another player, whichever protocol runs, sans-IO and deterministic:
//! PLAYER_JOINED / PLAYER_UNJOINED only when that player's joined state changes as the game
//! sees it, PLAYER_NAME only when its name changes. A newcomer to a game whose player already
//! joined hears PLAYER_CONNECTED (with the name) and PLAYER_JOINED once each, then one
//! PLAYER_NAME per rename, in a peer-to-peer game (the peer protocol in the simulator), a
//! slotserver game (mesh sessions seated as the server's `add ip:` lines seat them, renamed by
//! `name ip:` lines; the RE_PLAYERNAME copies change nothing there) and a gameserver game (star sessions through the relay).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::protocol::ClientProtocol;
use net_core::relay::{RelayConfig, RelayCore};
use net_core::session::{GameEvent, LocalPlayer, NodeEq, Session, SessionConfig};
use net_core::sim::{self, Endpoint, LinkProfile, Network, Transmit};
use net_core::wire::decode_packet;
use net_core::Node;
use support::peer_node::PeerNode;
use support::sessions::{name, node_of, server_addr, star_session, transmit, SERVER_TOKEN};

/// What the game heard about the player in `slot`, in order, with the slot left out (the
/// protocols seat players in different slots).
#[derive(Clone, Debug, PartialEq)]
enum Heard {
    Connected(String),
    Joined,
    Unjoined,
    Name(String),
    Disconnected,
}

fn heard_about(events: &[GameEvent], slot: u8) -> Vec<Heard> {
    events
        .iter()
        .filter(|e| e.slot() == Some(slot))
        .filter_map(|e| match e {
            GameEvent::PlayerConnected { name, .. } => Some(Heard::Connected(name.to_string())),
            GameEvent::PlayerJoined { .. } => Some(Heard::Joined),
            GameEvent::PlayerUnjoined { .. } => Some(Heard::Unjoined),
            GameEvent::PlayerName { name, .. } => Some(Heard::Name(name.to_string())),
            GameEvent::PlayerDisconnected { .. } => Some(Heard::Disconnected),
            _ => None,
        })
        .collect()
}

/// What every protocol must show a newcomer about "ann", who joined before it came, renamed
/// herself "anna", told everyone "anna" again, then unjoined.
fn expected() -> Vec<Heard> {
    vec![
        Heard::Connected("ann".into()),
        Heard::Joined,
        Heard::Name("anna".into()),
        Heard::Unjoined,
    ]
}

// ----- peer-to-peer: the peer protocol in the simulator ----------------------------------------

#[test]
fn peer_to_peer_newcomer_hears_a_joined_player_join_once_and_each_rename_once() {
    let mut net: Network<PeerNode> = Network::new(2, 1, LinkProfile::default());
    let mut ann = PeerNode::new(0);
    ann.connect(net.now(), 0xA11);
    net.start(0, ann);
    // Alone, ann becomes the master of her own game (after the connect loop) and joins.
    net.run_for(Duration::from_secs(5));
    let session = net.endpoint_mut(0).unwrap().proto.session_mut().unwrap();
    session.set_name(name("ann")).unwrap();
    session.join().unwrap();
    let mut newcomer = PeerNode::new(1);
    newcomer.connect(net.now(), 0xB22);
    net.start(1, newcomer);
    net.run_for(Duration::from_secs(5));
    let ann_slot = net.endpoint(0).unwrap().slot().unwrap();
    assert!(net.endpoint(1).unwrap().slot().is_some(), "newcomer seated");
    let session = net.endpoint_mut(0).unwrap().proto.session_mut().unwrap();
    session.set_name(name("anna")).unwrap();
    session.set_name(name("anna")).unwrap();
    session.unjoin(3).unwrap();
    net.run_for(Duration::from_secs(2));
    let events = &net.endpoint(1).unwrap().events;
    assert_eq!(heard_about(events, ann_slot), expected(), "{events:?}");
}

// ----- slotserver: mesh sessions seated by the server's lines ----------------------------------

/// A mesh session on a simulated node.
struct MeshNode {
    session: Session,
    events: Vec<GameEvent>,
    buf: Vec<u8>,
}

impl MeshNode {
    fn new(now: Instant, slot: u8, player: &str, token: u32) -> MeshNode {
        let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
        let me = LocalPlayer {
            slot,
            token,
            name: name(player),
        };
        MeshNode {
            session: Session::new_mesh(SessionConfig::default(), node_eq, me, now),
            events: Vec::new(),
            buf: vec![0; 1400],
        }
    }

    fn drain(&mut self) {
        while let Some(event) = self.session.poll_event() {
            self.events.push(event);
        }
    }
}

impl Endpoint for MeshNode {
    fn handle_datagram(&mut self, now: Instant, from: Node, data: &[u8]) {
        let mut events = Vec::new();
        let packet = decode_packet(data, &mut events).expect("valid packet");
        let _ = self.session.handle_packet(now, &from, &packet, &events);
        self.drain();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
        self.drain();
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        transmit(&mut self.session, now, &mut self.buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.session.poll_timeout()
    }
}

#[test]
fn slotserver_newcomer_hears_a_joined_player_join_once_and_each_rename_once() {
    let mut net: Network<MeshNode> = Network::new(2, 1, LinkProfile::default());
    let now = net.now();
    let mut ann = MeshNode::new(now, 0, "ann", 0xA11);
    ann.session.join().unwrap();
    let mut bo = MeshNode::new(now, 1, "bo", 0xB22);
    // As the slotserver client sets them up: names come from the server's lines.
    ann.session.take_names_from_server();
    bo.session.take_names_from_server();
    // The server's `add ip:` lines seat each in the other's game, not joined (the line does
    // not say).
    ann.session
        .add_player(now, 1, sim::node(1), 0xB22, name("bo"), false);
    bo.session
        .add_player(now, 0, sim::node(0), 0xA11, name("ann"), false);
    net.start(0, ann);
    net.start(1, bo);
    net.run_for(Duration::from_secs(1));
    // A rename the server accepted: its `name ip:` line and the RE_PLAYERNAME both reach bo.
    let ann = net.endpoint_mut(0).unwrap();
    ann.session.set_name(name("anna")).unwrap();
    ann.session.set_name(name("anna")).unwrap();
    ann.session.unjoin(3).unwrap();
    let now = net.now();
    let bo = net.endpoint_mut(1).unwrap();
    bo.session.rename_player(now, 0, name("anna"));
    bo.drain();
    net.run_for(Duration::from_secs(1));
    let events = &net.endpoint(1).unwrap().events;
    assert_eq!(heard_about(events, 0), expected(), "{events:?}");
}

// ----- gameserver: star sessions through the relay ---------------------------------------------

struct StarClient {
    session: Session,
    addr: SocketAddr,
    events: Vec<GameEvent>,
}

impl StarClient {
    fn join(relay: &mut RelayCore, now: Instant, slot: u8, player: &str) -> StarClient {
        let addr = SocketAddr::from(([10, 0, 0, 2 + slot], 7000));
        let token = 0x100 + u32::from(slot);
        let session = star_session(slot, token, player, now);
        relay.add_client(now, slot, addr, token);
        // As the gameserver client sets them up: names come from the server's lines.
        let mut session = session;
        session.take_names_from_server();
        StarClient {
            session,
            addr,
            events: Vec::new(),
        }
    }
}

/// A lossless network of star clients and the relay, 10 ms frames.
struct Star {
    now: Instant,
    relay: RelayCore,
    clients: Vec<StarClient>,
}

impl Star {
    fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration;
        let mut buf = vec![0u8; 1400];
        while self.now < end {
            self.now += Duration::from_millis(10);
            let now = self.now;
            if self.relay.poll_timeout().is_some_and(|t| t <= now) {
                self.relay.handle_timeout(now);
            }
            for client in &mut self.clients {
                if client.session.poll_timeout().is_some_and(|t| t <= now) {
                    client.session.handle_timeout(now);
                }
                while let Some((_, len)) = client.session.poll_transmit(now, &mut buf) {
                    self.relay.handle_datagram(now, client.addr, &buf[..len]);
                }
            }
            while let Some((to, len)) = self.relay.poll_transmit(now, &mut buf) {
                let Some(client) = self.clients.iter_mut().find(|c| c.addr == to) else {
                    continue;
                };
                let mut events = Vec::new();
                let packet = decode_packet(&buf[..len], &mut events).expect("valid packet");
                let _ =
                    client
                        .session
                        .handle_packet(now, &node_of(server_addr()), &packet, &events);
            }
            for client in &mut self.clients {
                while let Some(event) = client.session.poll_event() {
                    client.events.push(event);
                }
            }
        }
    }
}

#[test]
fn gameserver_newcomer_hears_a_joined_player_join_once_and_each_rename_once() {
    let now = Instant::now();
    let mut relay = RelayCore::new(RelayConfig {
        server_token: SERVER_TOKEN,
        ..RelayConfig::default()
    });
    let mut ann = StarClient::join(&mut relay, now, 0, "ann");
    ann.session.join().unwrap();
    let mut star = Star {
        now,
        relay,
        clients: vec![ann],
    };
    star.run_for(Duration::from_millis(500));
    let now = star.now;
    // bo connects; the server's `add ip:` lines seat each in the other's table (not joined).
    let mut bo = StarClient::join(&mut star.relay, now, 1, "bo");
    bo.session.add_player(
        now,
        0,
        node_of(star.clients[0].addr),
        0x100,
        name("ann"),
        false,
    );
    star.clients[0]
        .session
        .add_player(now, 1, node_of(bo.addr), 0x101, name("bo"), false);
    star.clients.push(bo);
    star.run_for(Duration::from_secs(1));
    // A rename the server accepted: its `name ip:` line and the relayed RE_PLAYERNAME.
    let ann = &mut star.clients[0].session;
    ann.set_name(name("anna")).unwrap();
    ann.set_name(name("anna")).unwrap();
    ann.unjoin(3).unwrap();
    let now = star.now;
    star.clients[1].session.rename_player(now, 0, name("anna"));
    star.run_for(Duration::from_secs(1));
    let events = &star.clients[1].events;
    assert_eq!(heard_about(events, 0), expected(), "{events:?}");
}
