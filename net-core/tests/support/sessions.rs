//! Pieces of the sans-IO session tests: star sessions' view of the gameserver (its address,
//! token and the node a session sees an address as), a client's star session and a peer's mesh
//! session, player names, and numbered reliable custom
//! events (type 7) read back in the order a session gave them.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::rmev::{CustomData, PlayerName, RemoteEvent};
use net_core::session::{GameEvent, LocalPlayer, NodeEq, Rejection, Session, SessionConfig};
use net_core::sim::Transmit;
use net_core::wire::decode_packet;
use net_core::Node;

/// The gameserver's token in the star-session tests.
pub const SERVER_TOKEN: u32 = 0x5e5e_0001;

/// The gameserver's address in the star-session tests.
pub fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 6522))
}

/// The session's view of an address (star sessions only compare the server's node).
pub fn node_of(addr: SocketAddr) -> Node {
    let mut node = Node::default();
    if let SocketAddr::V4(v4) = addr {
        node.bytes[..4].copy_from_slice(&v4.ip().octets());
        node.bytes[4..6].copy_from_slice(&v4.port().to_be_bytes());
    }
    node
}

/// A distinct node for a mesh-session test: `last` in its first byte.
pub fn test_node(last: u8) -> Node {
    let mut n = Node::default();
    n.bytes[0] = last;
    n
}

/// Every datagram `from` has to send now, as bytes.
pub fn datagrams(from: &mut Session, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 1400];
    let mut out = Vec::new();
    while let Some((_, len)) = from.poll_transmit(now, &mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

/// Hand `data`, a datagram from `from`, to `to`.
pub fn deliver(to: &mut Session, now: Instant, from: Node, data: &[u8]) -> Result<(), Rejection> {
    let mut events = Vec::new();
    let packet = decode_packet(data, &mut events).expect("a session's packet decodes");
    to.handle_packet(now, &from, &packet, &events)
}

/// Run both sessions' timers and exchange their packets for `rounds` rounds of 10 ms; `a` is
/// heard by `b` only when `a_reaches_b`, and `b` by `a` only when `b_reaches_a`. Returns how
/// many of `b`'s packets that reached `a` it refused.
pub fn exchange(
    now: &mut Instant,
    (a, a_node): (&mut Session, Node),
    (b, b_node): (&mut Session, Node),
    rounds: usize,
    (a_reaches_b, b_reaches_a): (bool, bool),
) -> usize {
    let mut refused = 0;
    for _ in 0..rounds {
        a.handle_timeout(*now);
        b.handle_timeout(*now);
        for data in datagrams(a, *now) {
            if a_reaches_b {
                let _ = deliver(b, *now, a_node, &data);
            }
        }
        for data in datagrams(b, *now) {
            if b_reaches_a {
                refused += usize::from(deliver(a, *now, b_node, &data).is_err());
            }
        }
        *now += Duration::from_millis(10);
    }
    refused
}

pub fn name(text: &str) -> PlayerName {
    PlayerName::new(text.as_bytes()).expect("short name")
}

/// A reliable custom event (type 7) carrying `number`.
pub fn numbered(number: u32) -> RemoteEvent {
    RemoteEvent::Custom {
        custom_type: 7,
        data: CustomData::new(&number.to_be_bytes()).expect("small"),
        reliable: true,
    }
}

/// The numbers of the custom events `session` has for the game now, in order (its other events
/// are polled and passed over).
pub fn numbers(session: &mut Session) -> Vec<u32> {
    let mut got = Vec::new();
    while let Some(event) = session.poll_event() {
        if let GameEvent::Remote {
            event: RemoteEvent::Custom { data, .. },
            ..
        } = event
        {
            got.push(u32::from_be_bytes(data.as_bytes().try_into().unwrap()));
        }
    }
    got
}

/// A client's star session (to the gameserver at `server_addr`) in `slot` with `token`, named
/// `player`, with default settings.
pub fn star_session(slot: u8, token: u32, player: &str, now: Instant) -> Session {
    let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
    let me = LocalPlayer {
        slot,
        token,
        name: name(player),
    };
    Session::new_star(
        SessionConfig::default(),
        node_eq,
        me,
        node_of(server_addr()),
        SERVER_TOKEN,
        now,
    )
}

/// A peer's mesh session in `slot` with `token`, named `player`, with default settings (nodes
/// compared as bytes).
pub fn mesh_session(slot: u8, token: u32, player: &str, now: Instant) -> Session {
    let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
    let me = LocalPlayer {
        slot,
        token,
        name: name(player),
    };
    Session::new_mesh(SessionConfig::default(), node_eq, me, now)
}

/// The next datagram `session` has to send now, for a simulated node (`sim::Endpoint`), written
/// through `buf`.
pub fn transmit(session: &mut Session, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
    let (to, len) = session.poll_transmit(now, buf)?;
    Some(Transmit {
        to,
        data: buf[..len].to_vec(),
    })
}
