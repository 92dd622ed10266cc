//! The link keeps the earliest send time of its unacknowledged events instead of walking the
//! in-flight window every frame: the retransmission deadline must follow the oldest event
//! still unacknowledged through losses, acknowledgements out of order and retransmissions.
//! (Debug builds also compare the kept time with a walk of the window at every check.)

mod support;

use std::time::{Duration, Instant};

use net_core::session::{Link, LinkConfig};
use net_core::wire::decode_packet;
use support::link_parts::{meta, reliable};

/// `from` writes a packet at `now`; returns its bytes.
fn write(from: &mut Link, now: Instant) -> Vec<u8> {
    let mut buf = [0u8; 1400];
    let len = from.write_packet(now, &mut buf, meta(), None).unwrap();
    buf[..len].to_vec()
}

/// `to` takes the packet `bytes` at `now`.
fn take(to: &mut Link, bytes: &[u8], now: Instant) {
    let mut events = Vec::new();
    let packet = decode_packet(bytes, &mut events).unwrap();
    to.handle_packet(now, &packet.header, None, &events, &mut |_| {});
}

#[test]
fn the_retransmission_deadline_follows_the_oldest_unacknowledged_event() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let (mut sender, mut receiver) = (
        Link::new(LinkConfig::default()),
        Link::new(LinkConfig::default()),
    );
    let rto = sender.rto();
    assert_eq!(sender.next_retransmit(t0), None);

    // Event 1 goes out at t0 and is lost; event 2 goes out at t0 + 10 ms and arrives.
    assert!(sender.queue_event(reliable(1)));
    let _lost = write(&mut sender, t0);
    assert_eq!(sender.next_retransmit(t0), Some(t0 + rto));
    assert!(sender.queue_event(reliable(2)));
    let second = write(&mut sender, t0 + ms(10));
    assert_eq!(
        sender.next_retransmit(t0 + ms(10)),
        Some(t0 + rto),
        "a newer send must not move the deadline of an older event"
    );
    take(&mut receiver, &second, t0 + ms(10));

    // The acknowledgement covers event 2 only: event 1 still sets the deadline.
    let ack = write(&mut receiver, t0 + ms(20));
    take(&mut sender, &ack, t0 + ms(20));
    let rto = sender.rto();
    assert_eq!(sender.next_retransmit(t0 + ms(20)), Some(t0 + rto));
    let just_before = t0 + rto - Duration::from_nanos(1);
    assert!(!sender.wants_to_send(just_before));
    assert!(sender.wants_to_send(t0 + rto));

    // A packet written before the deadline carries no retransmission.
    let early = write(&mut sender, just_before);
    assert_eq!(sender.stats().retransmissions, 0);
    take(&mut receiver, &early, just_before);
    assert_eq!(sender.next_retransmit(just_before), Some(t0 + rto));

    // At the deadline event 1 is sent again: the deadline moves to that send.
    let resent_at = t0 + rto;
    let resent = write(&mut sender, resent_at);
    assert_eq!(sender.stats().retransmissions, 1);
    assert_eq!(sender.next_retransmit(resent_at), Some(resent_at + rto));
    assert!(!sender.wants_to_send(resent_at));

    // Once it is acknowledged nothing is in flight.
    take(&mut receiver, &resent, resent_at);
    let ack = write(&mut receiver, resent_at + ms(5));
    take(&mut sender, &ack, resent_at + ms(5));
    assert_eq!(sender.next_retransmit(resent_at + ms(5)), None);
    assert_eq!(sender.unacknowledged(), 0);
}
