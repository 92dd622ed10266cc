//! A player that switched backend holds the game's events for each newcomer until that
//! newcomer's RE_RESUME answer says what to send again first (`session::resume`). The wait is
//! limited, but it must count from the newcomer's first packet, not from when a player list
//! seated it: a player another's list names may still be seconds away from its own game (its
//! slot request lost again and again), and when it arrives it is owed what was parked for its
//! earlier session. `PEER_RESUME` seed 166114 (20 % loss) lost six events this way: the other
//! player's seat waited 4.8 s for its reply, and the wait for its answer ran out 0.2 s after it
//! arrived, just as its answer was lost once.

mod support;

use std::time::Instant;

use support::sessions::{exchange, mesh_session, name, numbered, numbers, test_node as node};

#[test]
fn a_newcomer_seated_from_a_list_long_before_it_speaks_still_gets_what_was_parked_for_it() {
    let (a_node, b_node, a2_node, b2_node) = (node(1), node(2), node(3), node(4));
    let mut now = Instant::now();
    let mut a = mesh_session(0, 0xA1, "a", now);
    let mut b = mesh_session(1, 0xB1, "b", now);
    a.add_player(now, 1, b_node, 0xB1, name("b"), false);
    b.add_player(now, 0, a_node, 0xA1, name("a"), false);
    exchange(
        &mut now,
        (&mut a, a_node),
        (&mut b, b_node),
        20,
        (true, true),
    );
    // A sends numbers 1-30; the last ten never get through before both switch backend.
    for number in 1..=20 {
        a.queue_event(numbered(number)).expect("queued");
        exchange(
            &mut now,
            (&mut a, a_node),
            (&mut b, b_node),
            1,
            (true, true),
        );
    }
    for number in 21..=30 {
        a.queue_event(numbered(number)).expect("queued");
        exchange(
            &mut now,
            (&mut a, a_node),
            (&mut b, b_node),
            1,
            (false, true),
        );
    }
    let mut got = numbers(&mut b);
    assert_eq!(got, (1..=20).collect::<Vec<u32>>());
    let a_left = a.resume_state_for_next();
    let b_left = b.resume_state_for_next();

    // A's new session is told of B's new one by a list at once, and goes on numbering; B's new
    // session takes six seconds to be seated (longer than the wait for an answer) and until
    // then never sends A a packet.
    let mut a2 = mesh_session(0, 0xA2, "a", now);
    a2.set_resume_state(a_left);
    a2.add_player(now, 1, b2_node, 0xB2, name("b"), false);
    let mut b2 = mesh_session(1, 0xB2, "b", now);
    b2.set_resume_state(b_left);
    for number in 31..=40 {
        a2.queue_event(numbered(number)).expect("queued");
        exchange(
            &mut now,
            (&mut a2, a2_node),
            (&mut b2, b2_node),
            60,
            (false, false),
        );
    }
    assert!(numbers(&mut b2).is_empty());

    // B's new session is seated and the two meet: B gets 21-40, once each and in order.
    b2.add_player(now, 0, a2_node, 0xA2, name("a"), false);
    exchange(
        &mut now,
        (&mut a2, a2_node),
        (&mut b2, b2_node),
        100,
        (true, true),
    );
    got.extend(numbers(&mut b2));
    assert_eq!(
        got,
        (1..=40).collect::<Vec<u32>>(),
        "B got every number once, in order, across both of their switches"
    );
}
