//! The gameserver relay, sans-IO and deterministic: burst handling (missile first, stale state
//! dropped, other events delayed within the bound), distance filtering through the spatial
//! index, NODE_ALIVE consumed with alive counters, and reliable events kept reliable end to end
//! through the server under loss.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use net_core::relay::{RelayConfig, RelayCore};
use net_core::rmev::{ChatText, CustomData, EarlierTokens, RemoteEvent, ResumeStep, ShipState};
use net_core::session::{Delivery, Link, LinkConfig, PacketMeta};
use net_core::wire::{decode_packet, PacketType};

mod support;

use support::relay_client::{addr, token, RelayClient as Client, SERVER_TOKEN};

/// Take a packet from the server (it must carry the server's token): what the link delivered.
fn receive(client: &mut Client, now: Instant, data: &[u8]) -> Vec<Delivery> {
    let (token, out) = client.receive(now, data);
    assert_eq!(token, SERVER_TOKEN);
    out
}

/// A client that has said its RE_RESUME hello, as every client does with its first packet (the
/// relay holds events for a new client until then: it may be someone coming back).
fn greeted(relay: &mut RelayCore, slot: u8, now: Instant) -> Client {
    let mut client = Client::new(slot);
    let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::default()));
    let p = client.packet(now, PacketType::NodeAlive, None, vec![hello]);
    relay.handle_datagram(now, addr(slot), &p);
    client
}

fn relay(distance: f32, slots: &[u8], now: Instant) -> RelayCore {
    let mut relay = RelayCore::new(RelayConfig {
        distance,
        server_token: SERVER_TOKEN,
        ..RelayConfig::default()
    });
    for &slot in slots {
        relay.add_client(now, slot, addr(slot), token(slot));
    }
    relay
}

fn state_at(x: f32) -> ShipState {
    ShipState {
        pos: [x, 0.0, 0.0],
        ..ShipState::default()
    }
}

fn text(t: &str) -> RemoteEvent {
    RemoteEvent::SendText(ChatText::new(t.as_bytes()).unwrap())
}

fn missile(id: u32) -> RemoteEvent {
    RemoteEvent::CreateMissile {
        object_id: id,
        class: 1,
        pos: [0.0; 3],
        dir: [1.0, 0.0, 0.0],
        target_id: 0,
    }
}

/// A client coming back under a new token at a new address: its own link, one event a packet.
struct Returning {
    link: Link,
    slot: u8,
    token: u32,
    at: SocketAddr,
}

impl Returning {
    fn new(slot: u8, token: u32, at: SocketAddr) -> Returning {
        Returning {
            link: Link::new(LinkConfig::default()),
            slot,
            token,
            at,
        }
    }

    fn send(&mut self, relay: &mut RelayCore, now: Instant, event: RemoteEvent) {
        self.link.queue_event(event);
        let meta = PacketMeta {
            kind: PacketType::NodeAlive,
            sender_slot: Some(self.slot),
            joined: true,
            token: self.token,
            relay: false,
        };
        let mut buf = [0u8; 1400];
        let len = self.link.write_packet(now, &mut buf, meta, None).unwrap();
        relay.handle_datagram(now, self.at, &buf[..len]);
    }
}

/// Everything the relay sends to `slot` now, decoded by that client.
fn drain_to(relay: &mut RelayCore, client: &mut Client, now: Instant) -> Vec<Vec<Delivery>> {
    let mut packets = Vec::new();
    let mut buf = [0u8; 1400];
    let mut others = Vec::new();
    while let Some((to, len)) = relay.poll_transmit(now, &mut buf) {
        if to == addr(client.slot) {
            packets.push(receive(client, now, &buf[..len]));
        } else {
            others.push(to);
        }
    }
    packets
}

/// The chat lines in everything the relay sends to `client` now.
fn texts_to(relay: &mut RelayCore, client: &mut Client, now: Instant) -> Vec<String> {
    drain_to(relay, client, now)
        .into_iter()
        .flatten()
        .filter_map(|d| match d {
            Delivery::Event {
                event: RemoteEvent::SendText(t),
                ..
            } => Some(String::from_utf8_lossy(t.as_bytes()).into_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_burst_forwards_the_missile_first_drops_the_stale_state_and_delays_anothers_text() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1, 2], now);
    let (mut a, mut b, mut c) = (
        greeted(&mut relay, 0, now),
        greeted(&mut relay, 1, now),
        greeted(&mut relay, 2, now),
    );
    // A burst: an old state from A, text from C, then a newer state from A with a missile
    // creation, all arriving before the server's next forwarding pass.
    let p1 = a.packet(now, PacketType::GameState, Some(state_at(1.0)), vec![]);
    let p2 = c.packet(now, PacketType::GameState, None, vec![text("hello")]);
    let p3 = a.packet(
        now,
        PacketType::GameState,
        Some(state_at(2.0)),
        vec![missile(9)],
    );
    for (p, from) in [(&p1, 0), (&p2, 2), (&p3, 0)] {
        relay.handle_datagram(now, addr(from), p);
    }
    assert!(
        relay.poll_timeout().is_some_and(|t| t <= now),
        "a forwarding pass is due at once"
    );
    relay.handle_timeout(now);
    // Everything B gets from the first pass (the relay's own greeting events, queued before,
    // are delivered first: B's link delivers in the order the relay queued).
    let first: Vec<Delivery> = drain_to(&mut relay, &mut b, now)
        .into_iter()
        .flatten()
        .collect();
    let from_a: Vec<&Delivery> = first
        .iter()
        .filter(|d| {
            matches!(
                d,
                Delivery::State {
                    origin: Some(0),
                    ..
                } | Delivery::Event {
                    origin: Some(0),
                    ..
                }
            )
        })
        .collect();
    assert_eq!(
        from_a,
        [
            &Delivery::State {
                origin: Some(0),
                state: state_at(2.0)
            },
            &Delivery::Event {
                origin: Some(0),
                event: missile(9)
            }
        ],
        "A's missile and newest state go out at once, the stale state not at all: {first:?}"
    );
    assert!(
        !first.iter().any(|d| matches!(
            d,
            Delivery::Event {
                event: RemoteEvent::SendText(_),
                ..
            }
        )),
        "the text waits"
    );
    assert_eq!(
        relay.outbox_stats().states_dropped,
        2,
        "the stale state was dropped (at B and at C)"
    );
    // The text follows within the delay bound.
    let later = now + relay.config().event_delay;
    assert!(relay.poll_timeout().is_some_and(|t| t <= later));
    relay.handle_timeout(later);
    let second: Vec<Delivery> = drain_to(&mut relay, &mut b, later)
        .into_iter()
        .flatten()
        .collect();
    assert!(
        second.contains(&Delivery::Event {
            origin: Some(2),
            event: text("hello")
        }),
        "{second:?}"
    );
    // A state older than one already forwarded is dropped (it arrives late, reordered).
    let old = a.packet(now, PacketType::GameState, Some(state_at(1.5)), vec![]);
    let newer = a.packet(now, PacketType::GameState, Some(state_at(3.0)), vec![]);
    relay.handle_datagram(later, addr(0), &newer);
    relay.handle_datagram(later, addr(0), &old);
    relay.handle_timeout(later);
    let third: Vec<Delivery> = drain_to(&mut relay, &mut b, later)
        .into_iter()
        .flatten()
        .collect();
    let states: Vec<&Delivery> = third
        .iter()
        .filter(|d| matches!(d, Delivery::State { .. }))
        .collect();
    assert_eq!(
        states,
        vec![&Delivery::State {
            origin: Some(0),
            state: state_at(3.0)
        }]
    );
    // The server's totals keep counting what was forwarded to clients that have left.
    let before = relay.outbox_stats();
    assert!(before.states_forwarded > 0 && before.critical_forwarded > 0);
    for slot in 0..3 {
        relay.remove_client(later, slot);
    }
    assert_eq!(relay.client_count(), 0);
    assert_eq!(
        relay.outbox_stats(),
        before,
        "the totals outlive the clients"
    );
}

#[test]
fn state_goes_only_to_clients_within_the_distance() {
    let now = Instant::now();
    let mut relay = relay(1000.0, &[0, 1, 2], now);
    let mut clients: Vec<Client> = (0..3).map(|s| greeted(&mut relay, s, now)).collect();
    // Everyone joins (spectators watch everything) and reports a position: 0 at x=0, 1 nearby
    // at x=100, 2 far away at x=10000.
    for (i, x) in [(0usize, 0.0f32), (1, 100.0), (2, 10_000.0)] {
        let joined = RemoteEvent::PlayerStatus {
            joined: true,
            flag: 0,
        };
        let p = clients[i].packet(now, PacketType::GameState, Some(state_at(x)), vec![joined]);
        relay.handle_datagram(now, addr(i as u8), &p);
    }
    relay.handle_timeout(now);
    let mut buf = [0u8; 1400];
    while relay.poll_transmit(now, &mut buf).is_some() {}
    let t = now + Duration::from_millis(50);
    let p = clients[0].packet(t, PacketType::GameState, Some(state_at(5.0)), vec![]);
    relay.handle_datagram(t, addr(0), &p);
    relay.handle_timeout(t);
    let mut got_near = false;
    let mut got_far = false;
    while let Some((to, len)) = relay.poll_transmit(t, &mut buf) {
        let slot = (to.port() - 7000) as u8;
        for d in receive(&mut clients[usize::from(slot)], t, &buf[..len]) {
            if d == (Delivery::State {
                origin: Some(0),
                state: state_at(5.0),
            }) {
                got_near |= slot == 1;
                got_far |= slot == 2;
            }
        }
    }
    assert!(got_near, "the near client gets the state");
    assert!(!got_far, "the far client does not");
    assert!(relay.stats().states_filtered_by_distance >= 1);
}

#[test]
fn node_alive_is_consumed_and_silent_clients_are_reported() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1], now);
    let (mut a, mut b) = (greeted(&mut relay, 0, now), greeted(&mut relay, 1, now));
    for i in 0..5u64 {
        let t = now + Duration::from_millis(100 * i);
        let p = a.packet(t, PacketType::NodeAlive, None, vec![]);
        relay.handle_datagram(t, addr(0), &p);
        relay.handle_timeout(t);
        for packets in drain_to(&mut relay, &mut b, t) {
            assert!(packets.iter().all(|d| !matches!(
                d,
                Delivery::State {
                    origin: Some(0),
                    ..
                } | Delivery::Event {
                    origin: Some(0),
                    ..
                }
            )));
        }
    }
    // The five above and the two hellos (sent by clients that have not joined).
    assert_eq!(relay.stats().node_alive_consumed, 5 + 2);
    // Client 1 sent only its hello; client 0 stops now. After the alive timeout both are
    // reported, 1 first (silent longer).
    let later = now + relay.config().alive_timeout + Duration::from_millis(450);
    relay.handle_timeout(later);
    let mut silent = Vec::new();
    while let Some(slot) = relay.poll_silent() {
        silent.push(slot);
    }
    assert_eq!(silent, vec![0, 1]);
    relay.remove_client(later, 0);
    assert_eq!(relay.client_count(), 1);
}

#[test]
fn reliable_events_stay_reliable_end_to_end_through_the_server_under_loss() {
    let start = Instant::now();
    let mut relay = relay(0.0, &[0, 1], start);
    let (mut a, mut b) = (greeted(&mut relay, 0, start), greeted(&mut relay, 1, start));
    let mut received = Vec::new();
    let mut buf = [0u8; 1400];
    let mut dropped = 0u32;
    let mut counter = 0u32;
    let mut lose = || {
        counter += 1;
        counter.is_multiple_of(4)
    };
    let total = 500u32;
    let mut next = 1u32;
    for step in 0..4000u64 {
        let now = start + Duration::from_millis(5 * step);
        // A sends a few new events each step, plus retransmissions.
        let mut new = Vec::new();
        for _ in 0..3 {
            if next <= total {
                new.push(RemoteEvent::Custom {
                    custom_type: 1,
                    data: CustomData::new(&next.to_be_bytes()).unwrap(),
                    reliable: true,
                });
                next += 1;
            }
        }
        let p = a.packet(now, PacketType::GameState, None, new);
        if lose() {
            dropped += 1;
        } else {
            relay.handle_datagram(now, addr(0), &p);
        }
        // B answers (acks) every step.
        let pb = b.packet(now, PacketType::NodeAlive, None, vec![]);
        if !lose() {
            relay.handle_datagram(now, addr(1), &pb);
        }
        relay.handle_timeout(now);
        while let Some((to, len)) = relay.poll_transmit(now, &mut buf) {
            if lose() {
                dropped += 1;
                continue;
            }
            let target = if to == addr(0) { &mut a } else { &mut b };
            let mut events = Vec::new();
            let packet = decode_packet(&buf[..len], &mut events).unwrap();
            target.link.handle_packet(
                now,
                &packet.header,
                packet.state.as_ref(),
                &events,
                &mut |d| {
                    if let Delivery::Event {
                        origin: Some(0),
                        event: RemoteEvent::Custom { data, .. },
                    } = d
                    {
                        received.push(u32::from_be_bytes(data.as_bytes().try_into().unwrap()));
                    }
                },
            );
        }
        if received.len() as u32 == total && a.link.unacknowledged() == 0 {
            break;
        }
    }
    assert!(dropped > 100, "the test really lost packets ({dropped})");
    assert_eq!(received.len() as u32, total, "every event arrived");
    assert!(
        received.iter().copied().eq(1..=total),
        "exactly once and in order"
    );
    assert_eq!(
        a.link.unacknowledged(),
        0,
        "the server acknowledged everything"
    );
}

#[test]
fn a_client_may_move_to_a_new_address_only_with_its_token_a_fresh_sequence_and_after_silence() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1], now);
    let mut a = greeted(&mut relay, 0, now);
    let elsewhere = SocketAddr::from(([127, 0, 0, 1], 9999));
    let first = a.packet(now, PacketType::NodeAlive, None, vec![]);
    relay.handle_datagram(now, addr(0), &first);
    // While the real address is alive, the same client's packets from elsewhere are refused.
    let p = a.packet(now, PacketType::NodeAlive, None, vec![]);
    relay.handle_datagram(now + Duration::from_millis(100), elsewhere, &p);
    assert_eq!(relay.stats().impostors, 1);
    assert_eq!(relay.stats().address_changes, 0);
    // A spoofer with a wrong token is refused even after silence.
    let later = now + Duration::from_secs(2);
    let mut spoof = Client::new(0);
    let mut forged = spoof.packet(later, PacketType::NodeAlive, None, vec![]);
    forged[20..24].copy_from_slice(&0xDEAD_u32.to_be_bytes());
    relay.handle_datagram(later, elsewhere, &forged);
    // A replay of an old packet from a new address is refused (not fresh).
    relay.handle_datagram(later, SocketAddr::from(([127, 0, 0, 1], 9998)), &first);
    assert_eq!(relay.stats().address_changes, 0);
    assert!(relay.stats().impostors >= 3, "{:?}", relay.stats());
    // The genuine client after its address went quiet (a NAT rebinding) is followed.
    let p = a.packet(later, PacketType::NodeAlive, None, vec![text("moved")]);
    relay.handle_datagram(later, elsewhere, &p);
    assert_eq!(relay.stats().address_changes, 1);
    relay.handle_timeout(later + Duration::from_millis(50));
    let mut buf = [0u8; 1400];
    let mut to_a = 0;
    while let Some((to, _)) = relay.poll_transmit(later, &mut buf) {
        if to == elsewhere {
            to_a += 1;
        }
        assert_ne!(to, addr(0), "nothing goes to the old address any more");
    }
    assert!(to_a > 0, "the server answers at the new address");
}

/// Every extended client learns the others' tokens from the server's `add` lines, so a token
/// alone does not prove who sends: a player that went quiet for a moment must not be taken over
/// by someone at another host who claims its slot with its token (it would speak for it and get
/// its packets). A NAT port change keeps the host's address, and the player's TCP connection
/// (which a new address would end) is from that address too.
#[test]
fn a_silent_client_is_not_followed_to_another_host_even_with_its_token() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1, 2], now);
    let mut a = greeted(&mut relay, 0, now);
    let mut c = greeted(&mut relay, 2, now);
    relay.handle_timeout(now);
    drain_to(&mut relay, &mut c, now);
    // Another player (it knows slot 0's token) at another host, after slot 0 was quiet.
    let later = now + Duration::from_secs(2);
    let mut thief = Client::new(0);
    for _ in 0..1000 {
        thief.packet(later, PacketType::NodeAlive, None, vec![]);
    }
    let forged = thief.packet(later, PacketType::GameState, None, vec![text("I am a")]);
    let elsewhere = SocketAddr::from(([192, 0, 2, 7], 7000));
    relay.handle_datagram(later, elsewhere, &forged);
    assert_eq!(relay.stats().address_changes, 0, "{:?}", relay.stats());
    assert_eq!(relay.stats().impostors, 1);
    assert_eq!(relay.poll_moved(), None);
    relay.handle_timeout(later + Duration::from_millis(50));
    assert!(
        texts_to(&mut relay, &mut c, later).is_empty(),
        "the thief spoke for slot 0"
    );
    // The genuine player, back from a new port of its own host, is followed.
    let moved = SocketAddr::from(([127, 0, 0, 1], 9999));
    let p = a.packet(later, PacketType::GameState, None, vec![text("still a")]);
    relay.handle_datagram(later, moved, &p);
    assert_eq!(relay.poll_moved(), Some((0, moved)));
    relay.handle_timeout(later + Duration::from_millis(100));
    assert_eq!(texts_to(&mut relay, &mut c, later), ["still a"]);
}

/// A player that comes back (a backend switch) may be seated in another slot than before. What
/// its old link still owed it can include what the earlier player of its new slot said: sent
/// under its own slot, the client would take it for its own. Those events are dropped.
#[test]
fn a_client_coming_back_in_another_slot_is_never_sent_the_events_of_that_slots_earlier_player() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1, 2], now);
    let mut a = greeted(&mut relay, 0, now);
    let _b = greeted(&mut relay, 1, now);
    let mut c = greeted(&mut relay, 2, now);
    relay.handle_timeout(now);
    // C speaks; B never gets it (its packets are lost), then B leaves, then C.
    let p = c.packet(now, PacketType::GameState, None, vec![text("from c")]);
    relay.handle_datagram(now, addr(2), &p);
    relay.handle_timeout(now + Duration::from_millis(30));
    assert_eq!(
        texts_to(&mut relay, &mut a, now),
        ["from c"],
        "A got it (B's packet was lost)"
    );
    relay.remove_client(now, 1);
    relay.remove_client(now, 2);
    // B comes back under a new token and is seated in slot 2 this time.
    let later = now + Duration::from_millis(100);
    let back_at = SocketAddr::from(([127, 0, 0, 1], 7100));
    relay.add_client(later, 2, back_at, 0xB2);
    let mut back = Returning::new(2, 0xB2, back_at);
    let earlier = EarlierTokens::new([token(1)]);
    back.send(
        &mut relay,
        later,
        RemoteEvent::Resume(ResumeStep::Hello(earlier)),
    );
    back.send(&mut relay, later, RemoteEvent::Resume(ResumeStep::Done));
    relay.handle_timeout(later + Duration::from_millis(30));
    let mut buf = [0u8; 1400];
    let mut events = Vec::new();
    let mut sent = 0;
    while let Some((to, len)) = relay.poll_transmit(later, &mut buf) {
        if to != back_at {
            continue;
        }
        sent += 1;
        let packet = decode_packet(&buf[..len], &mut events).unwrap();
        assert_ne!(
            packet.header.sender_slot,
            Some(2),
            "the player back in slot 2 was sent slot 2's earlier player's events as its own: {events:?}"
        );
    }
    assert!(sent > 0, "the relay answers the player that came back");
    assert_eq!(
        relay.resume_stats().resumed,
        1,
        "{:?}",
        relay.resume_stats()
    );
}

#[test]
fn a_client_that_arrives_late_hears_who_has_joined_already() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0], now);
    let mut a = greeted(&mut relay, 0, now);
    let joined = RemoteEvent::PlayerStatus {
        joined: true,
        flag: 0,
    };
    let p = a.packet(now, PacketType::GameState, None, vec![joined.clone()]);
    relay.handle_datagram(now, addr(0), &p);
    relay.handle_timeout(now);
    let mut buf = [0u8; 1400];
    while relay.poll_transmit(now, &mut buf).is_some() {}
    // B connects after A joined: the server tells it, within the event delay.
    let later = now + Duration::from_secs(1);
    relay.add_client(later, 1, addr(1), token(1));
    let mut b = greeted(&mut relay, 1, later);
    let due = later + relay.config().event_delay;
    assert!(relay.poll_timeout().is_some_and(|t| t <= due));
    relay.handle_timeout(due);
    let got: Vec<Delivery> = drain_to(&mut relay, &mut b, due)
        .into_iter()
        .flatten()
        .collect();
    assert!(
        got.contains(&Delivery::Event {
            origin: Some(0),
            event: joined
        }),
        "{got:?}"
    );
}

#[test]
fn a_client_coming_back_while_its_earlier_self_is_listed_never_gets_its_own_events() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1], now);
    let mut old_a = greeted(&mut relay, 0, now);
    let mut b = greeted(&mut relay, 1, now);
    // A switches backend: it joins again in slot 2 from the same host, under a new token,
    // before the server's TCP side has seen its old connection (slot 0) close.
    let later = now + Duration::from_millis(100);
    relay.add_client(later, 2, addr(2), token(2));
    // A packet of its earlier session, sent just before the switch, arrives now: the relay
    // still sees slot 0 as another player, and holds its text for the newcomer.
    let p = old_a.packet(later, PacketType::GameState, None, vec![text("mine")]);
    relay.handle_datagram(later, addr(0), &p);
    relay.handle_timeout(later + relay.config().event_delay);
    // The newcomer's hello names its earlier token: it was slot 0.
    let mut new_a = Client::new(2);
    let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::new([token(0)])));
    let p = new_a.packet(later, PacketType::NodeAlive, None, vec![hello]);
    relay.handle_datagram(later, addr(2), &p);
    let mut to_new_a = Vec::new();
    let mut to_b = Vec::new();
    let mut at = later;
    for round in 0..20 {
        at += Duration::from_millis(50);
        // Both acknowledge what they got; A ends its side of the resumption ("done": it kept
        // nothing of its old link to answer for).
        let done = vec![RemoteEvent::Resume(ResumeStep::Done)];
        let p = new_a.packet(
            at,
            PacketType::NodeAlive,
            None,
            if round == 0 { done } else { Vec::new() },
        );
        relay.handle_datagram(at, addr(2), &p);
        let p = b.packet(at, PacketType::NodeAlive, None, Vec::new());
        relay.handle_datagram(at, addr(1), &p);
        if relay.poll_timeout().is_some_and(|t| t <= at) {
            relay.handle_timeout(at);
        }
        let mut buf = [0u8; 1400];
        while let Some((to, len)) = relay.poll_transmit(at, &mut buf) {
            if to == addr(2) {
                to_new_a.extend(receive(&mut new_a, at, &buf[..len]));
            } else if to == addr(1) {
                to_b.extend(receive(&mut b, at, &buf[..len]));
            }
        }
    }
    let mine = |d: &Delivery| matches!(d, Delivery::Event { event, .. } if *event == text("mine"));
    assert_eq!(
        to_b.iter().filter(|d| mine(d)).count(),
        1,
        "the other player gets it once: {to_b:?}"
    );
    assert!(
        !to_new_a.iter().any(mine),
        "A got its own text back: {to_new_a:?}"
    );
    assert!(
        to_new_a.iter().any(|d| matches!(
            d,
            Delivery::Event {
                event: RemoteEvent::Resume(ResumeStep::Done),
                ..
            }
        )),
        "the resumption ran: {to_new_a:?}"
    );
}

#[test]
fn an_ipv4_client_heard_on_a_dual_stack_socket_is_the_client_seated_at_its_ipv4_address() {
    // A gameserver bound to `::` seats an IPv4 player at a.b.c.d (the TCP side names IPv4
    // clients as IPv4) but hears its datagrams from ::ffff:a.b.c.d. They are that player's
    // from its first packet on: not an unknown sender until a second of silence lets it
    // "move" to the mapped address.
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1], now);
    let mut b = greeted(&mut relay, 1, now);
    let mapped = |slot: u8| {
        let std::net::IpAddr::V4(v4) = addr(slot).ip() else {
            unreachable!("addr() is IPv4")
        };
        SocketAddr::new(v4.to_ipv6_mapped().into(), addr(slot).port())
    };
    let mut a = Client::new(0);
    let hello = RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::default()));
    let p = a.packet(now, PacketType::NodeAlive, None, vec![hello]);
    relay.handle_datagram(now, mapped(0), &p);
    let p = a.packet(now, PacketType::NodeAlive, None, vec![text("first")]);
    relay.handle_datagram(now, mapped(0), &p);
    let stats = relay.stats();
    assert_eq!(
        (
            stats.unknown_senders,
            stats.impostors,
            stats.address_changes
        ),
        (0, 0, 0),
        "{stats:?}"
    );
    relay.handle_timeout(now + Duration::from_millis(50));
    let texts = texts_to(&mut relay, &mut b, now + Duration::from_millis(50));
    assert_eq!(texts, ["first"], "the other player hears it at once");
}

/// Regression: a player that joined over TCP without our ` token:` extension (the design's join
/// line, or ` port: P` alone, which the join line allows) is seated with token 0, and every
/// packet it then sent (with its own non-zero token, as every packet carries one) was refused
/// as a wrong token: it could never play through the gameserver. Its first packet from its
/// seated address now sets its token, as a client's session does for a player a server listed
/// without one; after that, another token from that address is still refused.
#[test]
fn a_client_seated_without_a_token_is_known_by_its_first_packets_token() {
    let now = Instant::now();
    let mut relay = RelayCore::new(RelayConfig {
        distance: 0.0,
        server_token: SERVER_TOKEN,
        ..RelayConfig::default()
    });
    relay.add_client(now, 0, addr(0), 0);
    relay.add_client(now, 1, addr(1), token(1));
    let mut b = greeted(&mut relay, 1, now);
    let mut a = greeted(&mut relay, 0, now);
    let p = a.packet(now, PacketType::GameState, None, vec![text("hello")]);
    relay.handle_datagram(now, addr(0), &p);
    assert_eq!(relay.stats().wrong_tokens, 0, "{:?}", relay.stats());
    let later = now + Duration::from_millis(50);
    relay.handle_timeout(later);
    let texts = texts_to(&mut relay, &mut b, later);
    assert_eq!(texts, ["hello"], "the other player hears it");

    // Its token is now the one it used: a packet from its address with another is refused.
    let mut impostor = Client::new(0);
    let mut p = impostor.packet(later, PacketType::GameState, None, vec![text("not me")]);
    p[20..24].copy_from_slice(&0xDEADu32.to_be_bytes());
    relay.handle_datagram(later, addr(0), &p);
    assert_eq!(relay.stats().wrong_tokens, 1, "{:?}", relay.stats());
}

/// What `client` gets from the relay now: (origin slot, event) of every event, in order.
/// (The relay's forwarding pass runs first.)
fn events_to(
    relay: &mut RelayCore,
    client: &mut Client,
    now: Instant,
) -> Vec<(Option<u8>, RemoteEvent)> {
    relay.handle_timeout(now);
    drain_to(relay, client, now)
        .into_iter()
        .flatten()
        .filter_map(|d| match d {
            Delivery::Event { origin, event } => Some((origin, event)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_departure_is_told_in_band_behind_the_leavers_events_to_every_other_client() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1], now);
    let (mut a, mut b) = (greeted(&mut relay, 0, now), greeted(&mut relay, 1, now));
    // The leaver's chat waits in the others' burst buffers when it leaves.
    let p = a.packet(now, PacketType::GameState, None, vec![text("bye")]);
    relay.handle_datagram(now, addr(0), &p);
    relay.remove_client(now, 0);
    let vacated = RemoteEvent::Vacated { told: 0 };
    let to_b: Vec<_> = events_to(&mut relay, &mut b, now)
        .into_iter()
        .filter(|(origin, _)| *origin == Some(0))
        .collect();
    assert_eq!(to_b, vec![(Some(0), text("bye")), (Some(0), vacated)]);
    // Removing an empty slot tells nothing.
    relay.remove_client(now, 0);
    assert!(
        events_to(&mut relay, &mut b, now + Duration::from_millis(50))
            .iter()
            .all(|(_, e)| !matches!(e, RemoteEvent::Vacated { .. }))
    );
}

#[test]
fn a_departure_names_the_id_the_others_know_the_player_by_and_a_forged_one_is_dropped() {
    let now = Instant::now();
    let mut relay = RelayCore::new(RelayConfig {
        server_token: SERVER_TOKEN,
        ..RelayConfig::default()
    });
    relay.add_client_told(now, 0, addr(0), token(0), 4242);
    relay.add_client_told(now, 1, addr(1), token(1), 4343);
    let (mut a, mut b) = (greeted(&mut relay, 0, now), greeted(&mut relay, 1, now));
    // A client cannot tell another's departure: the relay alone says it.
    let forged = a.packet(
        now,
        PacketType::GameState,
        None,
        vec![RemoteEvent::Vacated { told: 4343 }],
    );
    relay.handle_datagram(now, addr(0), &forged);
    assert!(
        events_to(&mut relay, &mut b, now + Duration::from_millis(50))
            .iter()
            .all(|(origin, _)| origin.is_none())
    );
    assert_eq!(relay.stats().forged_departures, 1);
    relay.remove_client(now, 0);
    assert_eq!(
        events_to(&mut relay, &mut b, now + Duration::from_millis(100)),
        vec![(Some(0), RemoteEvent::Vacated { told: 4242 })]
    );
    assert_eq!(relay.stats().departures_told, 1);
}

#[test]
fn a_departure_not_yet_acknowledged_is_carried_to_the_clients_next_session_behind_the_events() {
    let now = Instant::now();
    let mut relay = relay(0.0, &[0, 1], now);
    let mut a = greeted(&mut relay, 0, now);
    let _b = greeted(&mut relay, 1, now);
    relay.handle_timeout(now);
    // A says goodbye and leaves; B gets neither the text nor the departure (its packets are
    // lost), then B switches backend: its old link is parked with both.
    let p = a.packet(now, PacketType::GameState, None, vec![text("bye")]);
    relay.handle_datagram(now, addr(0), &p);
    relay.handle_timeout(now + Duration::from_millis(30));
    relay.remove_client(now, 0);
    relay.handle_timeout(now + Duration::from_millis(40));
    while relay.poll_transmit(now, &mut [0u8; 1400]).is_some() {}
    relay.remove_client(now, 1);
    // B comes back under a new token in slot 3 and has delivered nothing of the old link.
    let later = now + Duration::from_millis(100);
    let back_at = SocketAddr::from(([127, 0, 0, 1], 7100));
    relay.add_client(later, 3, back_at, 0xB2);
    let mut back = Returning::new(3, 0xB2, back_at);
    for event in [
        RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::new([token(1)]))),
        RemoteEvent::Resume(ResumeStep::Answer {
            yours: SERVER_TOKEN,
            mine: token(1),
            delivered: 0,
        }),
        RemoteEvent::Resume(ResumeStep::Done),
    ] {
        back.send(&mut relay, later, event);
    }
    relay.handle_timeout(later + Duration::from_millis(30));
    let mut buf = [0u8; 1400];
    let mut carried = Vec::new();
    while let Some((to, len)) = relay.poll_transmit(later, &mut buf) {
        if to != back_at {
            continue;
        }
        let mut events = Vec::new();
        let packet = decode_packet(&buf[..len], &mut events).unwrap();
        for e in events {
            if packet.header.sender_slot == Some(0) {
                carried.push(e.event);
            }
        }
    }
    assert_eq!(carried, [text("bye"), RemoteEvent::Vacated { told: 0 }]);
    assert_eq!(
        relay.resume_stats().resumed,
        1,
        "{:?}",
        relay.resume_stats()
    );
}
