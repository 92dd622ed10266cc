//! Loss at a low packet rate (keep-alives, every 0.5 s each way): a packet that does not arrive
//! counts as lost once a later packet is acknowledged without it and it is two retransmission
//! timeouts old, not only once 32 later packets are acknowledged (16 s at this rate, all that
//! time `status` showing loss 0.0%). It is counted once, also when it finally leaves the
//! acknowledgement window; and a packet that arrives late (after it was counted) counts as
//! acknowledged, not lost. Sans-IO, virtual time.

mod support;

use std::time::{Duration, Instant};

use net_core::session::{Link, LinkConfig};
use net_core::wire::decode_packet;
use support::link_parts::meta;

fn write(from: &mut Link, now: Instant) -> Vec<u8> {
    let mut buf = [0u8; 1400];
    let len = from.write_packet(now, &mut buf, meta(), None).unwrap();
    buf[..len].to_vec()
}

fn take(to: &mut Link, bytes: &[u8], now: Instant) {
    let mut events = Vec::new();
    let packet = decode_packet(bytes, &mut events).unwrap();
    to.handle_packet(now, &packet.header, None, &events, &mut |_| {});
}

struct Pair {
    a: Link,
    b: Link,
    now: Instant,
}

impl Pair {
    /// One round: a sends (delivered unless `drop_a`), 250 ms later b answers, 250 ms later.
    /// Returns a's packet.
    fn round(&mut self, drop_a: bool) -> Vec<u8> {
        let from_a = write(&mut self.a, self.now);
        if !drop_a {
            take(&mut self.b, &from_a, self.now + Duration::from_millis(1));
        }
        self.now += Duration::from_millis(250);
        let from_b = write(&mut self.b, self.now);
        take(&mut self.a, &from_b, self.now + Duration::from_millis(1));
        self.now += Duration::from_millis(250);
        from_a
    }
}

#[test]
fn a_lost_packet_counts_soon_and_once_and_a_late_one_not_at_all() {
    let mut pair = Pair {
        a: Link::new(LinkConfig::default()),
        b: Link::new(LinkConfig::default()),
        now: Instant::now(),
    };
    for _ in 0..10 {
        pair.round(false);
    }
    assert_eq!(pair.a.loss(), 0.0);
    assert!(
        pair.a.rto() < Duration::from_millis(500),
        "rto {:?}",
        pair.a.rto()
    );

    // One of a's packets is lost: within a few rounds (seconds, not 32 packets) it shows.
    pair.round(true);
    for _ in 0..3 {
        pair.round(false);
    }
    assert_eq!(pair.a.stats().packets_lost, 1, "{:?}", pair.a.stats());
    let loss = pair.a.loss();
    assert!(loss > 0.0, "loss shows: {loss}");
    // Once it leaves the acknowledgement window, it is not counted again.
    for _ in 0..40 {
        pair.round(false);
    }
    assert_eq!(pair.a.stats().packets_lost, 1, "{:?}", pair.a.stats());
    assert!(pair.a.loss() > 0.0);

    // A packet held back and delivered late: counted lost meanwhile, then acknowledged.
    let late = pair.round(true);
    for _ in 0..3 {
        pair.round(false);
    }
    assert_eq!(pair.a.stats().packets_lost, 2, "{:?}", pair.a.stats());
    take(&mut pair.b, &late, pair.now);
    pair.round(false);
    assert_eq!(
        pair.a.stats().packets_lost,
        1,
        "the late packet is not lost: {:?}",
        pair.a.stats()
    );
    for _ in 0..40 {
        pair.round(false);
    }
    assert_eq!(pair.a.stats().packets_lost, 1, "{:?}", pair.a.stats());
    let acked = pair.a.stats().packets_acked;
    assert_eq!(
        acked + 1,
        pair.a.stats().packets_sent,
        "every other packet is acknowledged, once: {:?}",
        pair.a.stats()
    );
}
