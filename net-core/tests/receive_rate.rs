//! `net.rate`: a client's receive rate (told with RE_RATE) is kept by the gameserver relay:
//! with three players sending state at 60 Hz, what goes to a client that asked for 2000 bytes/s
//! stays near that, it still gets states, and every reliable event arrives once and in order.
//! Sans-IO and virtual time.

use std::time::{Duration, Instant};

use net_core::relay::{RelayConfig, RelayCore};
use net_core::rmev::{ChatText, EarlierTokens, RemoteEvent, ResumeStep, ShipState};
use net_core::session::Delivery;
use net_core::wire::PacketType;

mod support;

use support::relay_client::{addr, RelayClient, SERVER_TOKEN};

struct Client {
    relay: RelayClient,
    bytes_in: usize,
    states_in: usize,
    texts: Vec<(u8, String)>,
}

impl Client {
    fn packet(
        &mut self,
        now: Instant,
        state: Option<ShipState>,
        events: Vec<RemoteEvent>,
    ) -> Vec<u8> {
        self.relay.packet(now, PacketType::GameState, state, events)
    }

    fn receive(&mut self, now: Instant, data: &[u8]) {
        self.bytes_in += data.len();
        let (_, out) = self.relay.receive(now, data);
        for d in out {
            match d {
                Delivery::State { .. } => self.states_in += 1,
                Delivery::Event {
                    origin: Some(o),
                    event: RemoteEvent::SendText(t),
                } => self
                    .texts
                    .push((o, String::from_utf8_lossy(t.as_bytes()).into_owned())),
                _ => {}
            }
        }
    }
}

/// Run 10 virtual seconds: clients 1-3 send a new state every 1/60 s and a chat line every
/// 100 ms; client 0 (asking for `rate`) answers every 50 ms. Returns client 0.
fn run(rate: u32) -> (Client, Vec<Vec<String>>) {
    let start = Instant::now();
    let mut relay = RelayCore::new(RelayConfig {
        server_token: SERVER_TOKEN,
        ..RelayConfig::default()
    });
    let mut clients: Vec<Client> = (0..4u8)
        .map(|slot| Client {
            relay: RelayClient::new(slot),
            bytes_in: 0,
            states_in: 0,
            texts: Vec::new(),
        })
        .collect();
    for c in &mut clients {
        let slot = c.relay.slot;
        relay.add_client(start, slot, addr(slot), 100 + u32::from(slot));
        let mut first = vec![RemoteEvent::Resume(ResumeStep::Hello(
            EarlierTokens::default(),
        ))];
        if slot == 0 {
            first.push(RemoteEvent::Rate(rate));
        }
        let p = c.packet(start, None, first);
        relay.handle_datagram(start, addr(slot), &p);
    }
    let mut sent: Vec<Vec<String>> = vec![Vec::new(); 4];
    let step = Duration::from_millis(1);
    let mut buf = [0u8; 1400];
    for ms in 1..=10_000u64 {
        let now = start + step * ms as u32;
        for slot in 1..4u8 {
            // 60 Hz, spread over the players.
            if (ms * 60 + u64::from(slot) * 300) % 1000 < 60 {
                let mut events = Vec::new();
                if ms % 100 == u64::from(slot) {
                    let line = format!("{slot}:{ms}");
                    sent[usize::from(slot)].push(line.clone());
                    events.push(RemoteEvent::SendText(
                        ChatText::new(line.as_bytes()).unwrap(),
                    ));
                }
                let state = ShipState {
                    pos: [ms as f32, f32::from(slot), 0.0],
                    ..ShipState::default()
                };
                let c = &mut clients[usize::from(slot)];
                let p = c.packet(now, Some(state), events);
                relay.handle_datagram(now, addr(slot), &p);
            }
        }
        if ms % 50 == 0 {
            let p = clients[0].packet(now, None, Vec::new());
            relay.handle_datagram(now, addr(0), &p);
        }
        if relay.poll_timeout().is_some_and(|t| t <= now) {
            relay.handle_timeout(now);
        }
        while let Some((to, len)) = relay.poll_transmit(now, &mut buf) {
            let slot = (to.port() - 7000) as usize;
            clients[slot].receive(now, &buf[..len]);
        }
    }
    let zero = clients.swap_remove(0);
    (zero, sent)
}

#[test]
fn a_client_with_a_receive_rate_gets_about_that_many_bytes_and_every_event_in_order() {
    let (unlimited, _) = run(0);
    let (limited, sent) = run(2000);
    // Unlimited: every state of three players at 60 Hz (over 10 kB/s).
    assert!(
        unlimited.bytes_in > 100_000,
        "unlimited got {} bytes",
        unlimited.bytes_in
    );
    // Limited: near 2000 bytes/s over 10 s (a quarter second's burst, packets of events).
    assert!(
        limited.bytes_in <= 2000 * 10 * 12 / 10,
        "a client asking for 2000 bytes/s got {} bytes in 10 s (unlimited: {})",
        limited.bytes_in,
        unlimited.bytes_in
    );
    // It still sees the others move, and every chat line arrives once, in order per sender.
    eprintln!(
        "unlimited {} limited {} states {}",
        unlimited.bytes_in, limited.bytes_in, limited.states_in
    );
    assert!(limited.states_in > 100, "states: {}", limited.states_in);
    for slot in 1..4u8 {
        let got: Vec<String> = limited
            .texts
            .iter()
            .filter(|(o, _)| *o == slot)
            .map(|(_, t)| t.clone())
            .collect();
        assert_eq!(
            got,
            sent[usize::from(slot)],
            "chat lines from player {slot}"
        );
    }
}

mod mesh {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use net_core::rmev::{PlayerName, ShipState};
    use net_core::session::{LocalPlayer, NodeEq, Session, SessionConfig};
    use net_core::wire::decode_packet;
    use net_core::Node;

    fn node(last: u8) -> Node {
        let mut n = Node::default();
        n.bytes[0] = last;
        n
    }

    /// A joined player whose ship changes every millisecond: how many packets with its state
    /// went to the other player in each second of `seconds`, calling `at_second(s, session)`
    /// at the start of each.
    fn states_per_second(seconds: u32, mut at_second: impl FnMut(u32, &mut Session)) -> Vec<usize> {
        let start = Instant::now();
        let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
        let me = LocalPlayer {
            slot: 0,
            token: 0x1111,
            name: PlayerName::new(b"mover").unwrap(),
        };
        let mut session = Session::new_mesh(SessionConfig::default(), node_eq, me, start);
        let other = PlayerName::new(b"other").unwrap();
        session.add_player(start, 1, node(2), 0x2222, other, true);
        session.join().expect("join");
        let mut buf = vec![0u8; 1400];
        let mut counts = vec![0; seconds as usize];
        let mut events = Vec::new();
        for ms in 0..seconds * 1000 {
            let now = start + Duration::from_millis(u64::from(ms));
            if ms % 1000 == 0 {
                at_second(ms / 1000, &mut session);
            }
            let state = ShipState {
                pos: [ms as f32, 0.0, 0.0],
                ..ShipState::default()
            };
            session.set_local_state(state);
            while let Some((_, len)) = session.poll_transmit(now, &mut buf) {
                let packet = decode_packet(&buf[..len], &mut events).unwrap();
                if packet.state.is_some() {
                    counts[(ms / 1000) as usize] += 1;
                }
            }
        }
        counts
    }

    #[test]
    fn a_send_frequency_changed_in_the_game_applies_from_then_on() {
        let counts = states_per_second(4, |s, session| {
            if s == 2 {
                session.set_send_interval(Duration::from_secs(1) / 5);
            }
        });
        // 20 Hz, then 5 Hz (one more or less at the edges of a second).
        assert!((19..=21).contains(&counts[1]), "{counts:?}");
        assert!((4..=6).contains(&counts[3]), "{counts:?}");
    }
}
