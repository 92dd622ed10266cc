//! The ship state of a joined player reaches the others even when it never changes and events
//! keep packets flowing: an unchanged state goes out again every keep-alive interval, counted
//! from when the state was last sent (not from the last packet of any kind). Without that, one
//! lost packet carrying the only copy of a still ship left the others without its state for
//! as long as the player kept firing (seen under 20% loss in the netem fault test).

use std::sync::Arc;
use std::time::{Duration, Instant};

use net_core::rmev::{CustomData, PlayerName, RemoteEvent, ShipState};
use net_core::session::{LocalPlayer, NodeEq, Session, SessionConfig};
use net_core::wire::decode_packet;
use net_core::Node;

fn node(last: u8) -> Node {
    let mut n = Node::default();
    n.bytes[0] = last;
    n
}

fn name(text: &str) -> PlayerName {
    PlayerName::new(text.as_bytes()).expect("short name")
}

/// A mesh session in slot 0 named `player`, with one other player (slot 1), joined.
fn joined(config: SessionConfig, player: &str, start: Instant) -> Session {
    let node_eq: NodeEq = Arc::new(|a: &Node, b: &Node| a == b);
    let mut session = Session::new_mesh(
        config,
        node_eq,
        LocalPlayer {
            slot: 0,
            token: 0x1111,
            name: name(player),
        },
        start,
    );
    session.add_player(start, 1, node(2), 0x2222, name("other"), true);
    session.join().expect("join");
    session
}

/// Run a joined player with a still ship that queues a reliable event every 50 ms for
/// `run_for`; the instants (from the start) of the packets to the other player carrying state.
fn state_instants(run_for: Duration) -> (Vec<Duration>, Duration) {
    let start = Instant::now();
    let config = SessionConfig::default();
    let mut session = joined(config, "still", start);
    session.set_local_state(ShipState::default());

    let mut buf = vec![0u8; 1400];
    let mut events = Vec::new();
    let mut with_state = Vec::new();
    let step = Duration::from_millis(10);
    let mut now = start;
    let mut serial = 0u32;
    while now - start < run_for {
        if (now - start).as_millis().is_multiple_of(50) {
            serial += 1;
            let data = CustomData::new(&serial.to_le_bytes()).expect("small");
            session
                .queue_event(RemoteEvent::Custom {
                    custom_type: 7,
                    data,
                    reliable: true,
                })
                .expect("queued");
        }
        session.handle_timeout(now);
        while let Some((to, len)) = session.poll_transmit(now, &mut buf) {
            assert_eq!(to, node(2), "the only remote");
            let packet = decode_packet(&buf[..len], &mut events).expect("own packet decodes");
            if packet.state.is_some() {
                with_state.push(now - start);
            }
        }
        now += step;
    }
    (with_state, config.keepalive_interval)
}

#[test]
fn an_unchanged_state_is_sent_again_while_events_keep_packets_flowing() {
    let run_for = Duration::from_secs(8);
    let (instants, interval) = state_instants(run_for);
    assert!(!instants.is_empty(), "the state never went out");
    // Every gap between two state copies is within twice the keep-alive interval (a copy rides
    // on the first packet after the interval, which may itself wait for a keep-alive).
    let mut previous = Duration::ZERO;
    for &at in &instants {
        assert!(
            at - previous <= 2 * interval,
            "no state copy between {previous:?} and {at:?} (keep-alive interval {interval:?}); \
             copies at {instants:?}"
        );
        previous = at;
    }
    assert!(
        run_for - previous <= 2 * interval,
        "no state copy after {previous:?} of {run_for:?}"
    );
}

/// The state is carried bit for bit (the game area is opaque, and a float is a float's bits):
/// a new state that differs from the last one only in the sign of a zero, which `==` on floats
/// takes for the same value, is a change and goes out. It used to be dropped as unchanged, so
/// the others kept +0.0 for good while the sender's own view said -0.0.
#[test]
fn a_state_differing_only_in_the_sign_of_a_zero_goes_out() {
    let start = Instant::now();
    let mut session = joined(SessionConfig::default(), "signed", start);
    let mut buf = vec![0u8; 1400];
    let mut events = Vec::new();
    let mut now = start;
    // The latest state the other would see, from every packet sent to it.
    let mut run = |session: &mut Session, now: &mut Instant| {
        let mut seen = None;
        for _ in 0..20 {
            session.handle_timeout(*now);
            while let Some((_, len)) = session.poll_transmit(*now, &mut buf) {
                let packet = decode_packet(&buf[..len], &mut events).expect("own packet decodes");
                if let Some(state) = packet.state {
                    seen = Some(state);
                }
            }
            *now += Duration::from_millis(10);
        }
        seen
    };
    let mut state = ShipState::default();
    state.pos[0] = 0.0;
    session.set_local_state(state);
    let first = run(&mut session, &mut now).expect("the first state went out");
    assert_eq!(first.pos[0].to_bits(), 0.0f32.to_bits());
    state.pos[0] = -0.0;
    session.set_local_state(state);
    assert_eq!(
        session.local_state().pos[0].to_bits(),
        (-0.0f32).to_bits(),
        "the session keeps the state as set"
    );
    let second = run(&mut session, &mut now).expect("the changed state went out");
    assert_eq!(
        second.pos[0].to_bits(),
        (-0.0f32).to_bits(),
        "the other gets -0.0, not +0.0"
    );
}
