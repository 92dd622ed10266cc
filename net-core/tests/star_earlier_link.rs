//! Through a gameserver, a client that reconnects at the same address with a new token gets a
//! new link from the relay, while packets the relay wrote for its earlier session may still be
//! on the way. They carry the server's token, which never changes, so such a packet looked like
//! one of the new link's: both links numbered their packets from 1, the late packet's sequence
//! counted as received on the new link, the new link's own packet with that sequence was then
//! dropped as a duplicate yet acknowledged, and the reliable events in it were never delivered.
//! (The peer-to-peer and slotserver meshes had the same problem; see `session_earlier_link.rs`.)
//! Sans-IO and deterministic: no loss, every datagram delivered at once, except the late ones.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use net_core::relay::{RelayConfig, RelayCore};
use net_core::session::{Rejection, Session};
use net_core::wire::decode_packet;
use support::sessions::{
    name, node_of, numbered, numbers, server_addr, star_session, SERVER_TOKEN,
};

const STEP: Duration = Duration::from_millis(10);

fn a_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2], 6526))
}

/// Both of B's sessions are here.
fn b_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 3], 6526))
}

/// A client's star session in `slot`, seated next to the player in `other` (as the server's
/// TCP lines would seat it).
fn client(slot: u8, token: u32, other: (u8, SocketAddr, u32), now: Instant) -> Session {
    let mut session = star_session(slot, token, "p", now);
    let (slot, addr, token) = other;
    session.add_player(now, slot, node_of(addr), token, name("o"), true);
    session
}

fn deliver(to: &mut Session, now: Instant, data: &[u8]) -> Result<(), Rejection> {
    let mut events = Vec::new();
    let packet = decode_packet(data, &mut events).expect("the relay's packet decodes");
    to.handle_packet(now, &node_of(server_addr()), &packet, &events)
}

/// Every datagram a client has for the server now, handed to the relay.
fn to_relay(relay: &mut RelayCore, now: Instant, from: SocketAddr, session: &mut Session) {
    let mut buf = vec![0u8; 1400];
    if session.poll_timeout().is_some_and(|t| t <= now) {
        session.handle_timeout(now);
    }
    while let Some((_, len)) = session.poll_transmit(now, &mut buf) {
        relay.handle_datagram(now, from, &buf[..len]);
    }
}

/// Every datagram the relay has now, by destination.
fn from_relay(relay: &mut RelayCore, now: Instant) -> Vec<(SocketAddr, Vec<u8>)> {
    if relay.poll_timeout().is_some_and(|t| t <= now) {
        relay.handle_timeout(now);
    }
    let mut buf = vec![0u8; 1400];
    let mut out = Vec::new();
    while let Some((to, len)) = relay.poll_transmit(now, &mut buf) {
        out.push((to, buf[..len].to_vec()));
    }
    out
}

#[test]
fn a_relay_packet_written_for_an_earlier_session_at_the_same_address_is_not_taken() {
    let mut now = Instant::now();
    let mut relay = RelayCore::new(RelayConfig {
        server_token: SERVER_TOKEN,
        event_delay: Duration::ZERO,
        ..RelayConfig::default()
    });
    let (a_token, b1_token, b2_token) = (0xA, 0xB1, 0xB2);
    relay.add_client(now, 0, a_addr(), a_token);
    relay.add_client(now, 1, b_addr(), b1_token);
    let mut a = client(0, a_token, (1, b_addr(), b1_token), now);
    let mut b1 = client(1, b1_token, (0, a_addr(), a_token), now);

    // A's numbers reach B's first session through the relay for a while; B acknowledges.
    let mut number = 0;
    for _ in 0..30 {
        number += 1;
        a.queue_event(numbered(number)).expect("queued");
        to_relay(&mut relay, now, a_addr(), &mut a);
        to_relay(&mut relay, now, b_addr(), &mut b1);
        for (to, data) in from_relay(&mut relay, now) {
            if to == b_addr() {
                let _ = deliver(&mut b1, now, &data);
            } else {
                let _ = deliver(&mut a, now, &data);
            }
        }
        now += STEP;
    }
    assert_eq!(numbers(&mut b1), (1..=number).collect::<Vec<_>>());

    // One more number for B's first session, still in flight when B reconnects at the same
    // address with a new token, in the same slot.
    number += 1;
    a.queue_event(numbered(number)).expect("queued");
    to_relay(&mut relay, now, a_addr(), &mut a);
    let late: Vec<Vec<u8>> = from_relay(&mut relay, now)
        .into_iter()
        .filter(|(to, _)| *to == b_addr())
        .map(|(_, data)| data)
        .collect();
    assert!(!late.is_empty(), "a packet for B's first session");
    now += STEP;
    relay.remove_client(now, 1);
    relay.add_client(now, 1, b_addr(), b2_token);
    a.remove_player(1, "reconnecting");
    a.add_player(now, 1, node_of(b_addr()), b2_token, name("o"), true);
    let mut b2 = client(1, b2_token, (0, a_addr(), a_token), now);
    let first_owed = number + 1;

    let mut late = Some(late);
    for round in 0..200 {
        if round < 100 {
            number += 1;
            a.queue_event(numbered(number)).expect("queued");
        }
        to_relay(&mut relay, now, a_addr(), &mut a);
        to_relay(&mut relay, now, b_addr(), &mut b2);
        for (to, data) in from_relay(&mut relay, now) {
            if to != b_addr() {
                let _ = deliver(&mut a, now, &data);
                continue;
            }
            // The late packets arrive once the new link has started, before its next packet.
            if round > 0 {
                if let Some(late) = late.take() {
                    for old in late {
                        assert_eq!(
                            deliver(&mut b2, now, &old),
                            Err(Rejection::OtherLink),
                            "a packet for the earlier session"
                        );
                    }
                }
            }
            let _ = deliver(&mut b2, now, &data);
        }
        now += STEP;
    }
    assert!(late.is_none(), "the late packets were delivered");
    let got = numbers(&mut b2);
    let owed: Vec<u32> = (first_owed..=number).collect();
    assert_eq!(got, owed, "the new session got every number once, in order");
}
