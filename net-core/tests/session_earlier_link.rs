//! A player that reconnects with a new token at the same address (a peer that lost a slot
//! conflict) gets a new link from every other player, while packets those players wrote for
//! its earlier session may still be on the way. The header names only the sender's token, so
//! such a packet looks like one of the new link's. It used to be taken: its sequence then
//! counted as received, the new link's own packet with that sequence was dropped as a
//! duplicate yet acknowledged, and the reliable events in it were never delivered (seed 3451 of
//! the randomly timed switches in `peer_resume.rs`: one event lost for good).

mod support;

use std::time::{Duration, Instant};

use net_core::session::{Rejection, Session};
use support::sessions::{
    datagrams, deliver, mesh_session, name, numbered, numbers, test_node as node,
};

fn session(slot: u8, token: u32, now: Instant) -> Session {
    mesh_session(slot, token, "p", now)
}

#[test]
fn a_packet_written_for_an_earlier_session_at_the_same_address_is_not_taken_by_the_new_one() {
    let start = Instant::now();
    let step = Duration::from_millis(10);
    let (a_node, b_node) = (node(1), node(2));
    let mut now = start;
    // A and B's first session talk for a while: A's packets to it acknowledge B's.
    let mut a = session(0, 0xA, now);
    let mut b1 = session(1, 0xB1, now);
    a.add_player(now, 1, b_node, 0xB1, name("b"), false);
    b1.add_player(now, 0, a_node, 0xA, name("a"), false);
    let mut number = 0;
    for _ in 0..20 {
        number += 1;
        a.queue_event(numbered(number)).expect("queued");
        for data in datagrams(&mut a, now) {
            deliver(&mut b1, now, a_node, &data).expect("taken");
        }
        for data in datagrams(&mut b1, now) {
            deliver(&mut a, now, b_node, &data).expect("taken");
        }
        now += step;
    }
    // One more packet for B's first session, still in flight when B reconnects at the same
    // address with a new token (both are seated again in the same slots).
    number += 1;
    a.queue_event(numbered(number)).expect("queued");
    let late = datagrams(&mut a, now);
    assert!(!late.is_empty());
    let mut b2 = session(1, 0xB2, now);
    a.add_player(now, 1, b_node, 0xB2, name("b"), false);
    b2.add_player(now, 0, a_node, 0xA, name("a"), false);
    let first_owed = number + 1;
    let mut late = Some(late);
    for round in 0..200 {
        if round < 100 {
            number += 1;
            a.queue_event(numbered(number)).expect("queued");
        }
        for data in datagrams(&mut a, now) {
            // The late packets arrive first, then after every packet of the new link.
            if let Some(late) = late.take() {
                for old in late {
                    assert_eq!(
                        deliver(&mut b2, now, a_node, &old),
                        Err(Rejection::OtherLink),
                        "a packet for the earlier session"
                    );
                }
            }
            let _ = deliver(&mut b2, now, a_node, &data);
        }
        for data in datagrams(&mut b2, now) {
            let _ = deliver(&mut a, now, b_node, &data);
        }
        now += step;
    }
    let got = numbers(&mut b2);
    let owed: Vec<u32> = (first_owed..=number).collect();
    assert_eq!(got, owed, "the new session got every number once, in order");
}
