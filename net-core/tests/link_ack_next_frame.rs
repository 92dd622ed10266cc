//! `LinkConfig::ack_with_next_frame`: an acknowledgement alone is not worth a packet at the
//! moment it became owed (a game's frame receives and sends at one `now`), only from the next
//! moment on, so it rides with the answer the game queues in between. Without the option (the
//! relay) the acknowledgement is due at once.

mod support;

use std::time::{Duration, Instant};

use net_core::rmev::{CustomData, RemoteEvent};
use net_core::session::{Delivery, Link, LinkConfig};
use net_core::wire::decode_packet;
use support::link_parts::{meta, reliable};

fn link(ack_with_next_frame: bool) -> Link {
    Link::new(LinkConfig {
        ack_with_next_frame,
        ..LinkConfig::default()
    })
}

/// `from` writes a packet at `now`; `to` takes it at `now`. Returns the events `to` delivered.
fn carry(from: &mut Link, to: &mut Link, now: Instant) -> usize {
    let mut buf = [0u8; 1400];
    let len = from.write_packet(now, &mut buf, meta(), None).unwrap();
    let mut events = Vec::new();
    let packet = decode_packet(&buf[..len], &mut events).unwrap();
    let mut delivered = 0;
    to.handle_packet(now, &packet.header, None, &events, &mut |d| {
        if let Delivery::Event { .. } = d {
            delivered += 1;
        }
    });
    delivered
}

#[test]
fn an_acknowledgement_alone_waits_for_the_next_moment_and_then_rides_with_the_answer() {
    let t0 = Instant::now();
    let (mut pinger, mut echoer) = (link(true), link(true));
    assert!(pinger.queue_event(reliable(1)));
    assert_eq!(carry(&mut pinger, &mut echoer, t0), 1);

    // The frame that received the ping: an acknowledgement is owed but not worth a packet yet.
    assert!(
        !echoer.wants_to_send(t0),
        "an ack alone went out in its own frame"
    );
    let due = echoer.ack_due_at().expect("an acknowledgement is owed");
    assert!(due > t0 && due - t0 <= Duration::from_micros(1));
    assert!(
        echoer.wants_to_send(due),
        "the ack must be due from the next moment"
    );

    // The game answered in between: one packet carries the answer and the acknowledgement.
    assert!(echoer.queue_event(reliable(2)));
    let t1 = t0 + Duration::from_millis(16);
    assert!(echoer.wants_to_send(t1));
    assert_eq!(carry(&mut echoer, &mut pinger, t1), 1);
    assert_eq!(
        echoer.ack_due_at(),
        None,
        "the answer carried the acknowledgement"
    );
    assert_eq!(echoer.stats().packets_sent, 1);
    assert_eq!(
        pinger.unacknowledged(),
        0,
        "the ping was acknowledged by the answer"
    );
}

#[test]
fn without_the_option_an_acknowledgement_is_due_at_once() {
    let t0 = Instant::now();
    let (mut sender, mut relay) = (link(false), link(false));
    assert!(sender.queue_event(reliable(1)));
    assert_eq!(carry(&mut sender, &mut relay, t0), 1);
    assert!(relay.wants_to_send(t0));
    assert_eq!(relay.ack_due_at(), Some(t0));
}

#[test]
fn an_unreliable_event_owes_no_acknowledgement() {
    let t0 = Instant::now();
    let (mut a, mut b) = (link(true), link(true));
    assert!(a.queue_event(RemoteEvent::Custom {
        custom_type: 1,
        data: CustomData::new(b"x").unwrap(),
        reliable: false,
    }));
    assert_eq!(carry(&mut a, &mut b, t0), 1);
    assert_eq!(b.ack_due_at(), None);
    assert!(!b.wants_to_send(t0 + Duration::from_secs(1)));
}
