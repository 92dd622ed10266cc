//! A player seats another player's earlier session from a stale list and sends to its node,
//! where that player's new session already runs; the new session knows the sender's token and
//! takes those packets as its own link's (a packet names only its sender's token). The earlier
//! session's link never hears back: the new session's packets are refused for their token. When
//! the sender then seats the new session in its place, it must go on with that link: a new link
//! numbers its reliable events from the start again, and the receiver drops the first ones as
//! events it had, so the greeting with the sender's new name was dropped and the receiver kept
//! showing the name from before a rename (`peer_chaos` seed 3452, real processes). Everything
//! the sender says reaches the new session once and in order, and its name is the new one.

mod support;

use std::time::Instant;

use net_core::session::Session;

use support::sessions::{exchange, mesh_session, name, numbered, numbers, test_node as node};

#[test]
fn a_new_session_at_a_node_goes_on_with_the_link_that_never_heard_from_its_earlier_one() {
    let (n1, n2) = (node(1), node(2));
    let mut now = Instant::now();
    // Both players' first sessions play; then both switch, and p2 comes back at the same node.
    let mut p1_first = mesh_session(0, 0x1A, "p1", now);
    let mut p2_first = mesh_session(1, 0x2A, "p2", now);
    p1_first.add_player(now, 1, n2, 0x2A, name("p2"), false);
    p2_first.add_player(now, 0, n1, 0x1A, name("p1"), false);
    for number in 1..=5 {
        p1_first.queue_event(numbered(number)).expect("queued");
    }
    exchange(
        &mut now,
        (&mut p1_first, n1),
        (&mut p2_first, n2),
        30,
        (true, true),
    );
    let mut got = numbers(&mut p2_first);
    let mut p1 = mesh_session(0, 0x1B, "p1", now);
    p1.set_resume_state(p1_first.resume_state_for_next());
    let mut p2 = mesh_session(1, 0x2B, "p2", now);
    p2.set_resume_state(p2_first.resume_state_for_next());

    // p1 seats p2's first session from a stale list; p2 knows p1's new token. For 7 s p2 takes
    // p1's packets and p1 refuses p2's; p1 goes on numbering, then renames itself.
    p1.add_player(now, 1, n2, 0x2A, name("p2"), false);
    p2.add_player(now, 0, n1, 0x1B, name("p1"), false);
    for number in 6..=8 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    let refused = exchange(&mut now, (&mut p1, n1), (&mut p2, n2), 700, (true, true));
    assert!(refused > 0, "p1 refused none of p2's packets");
    p1.set_name(name("p1r1")).expect("renamed");
    exchange(&mut now, (&mut p1, n1), (&mut p2, n2), 50, (true, true));

    // p1 learns of p2's new session and seats it in place of the first.
    p1.remove_player(1, "came back at a new address");
    p1.add_player(now, 1, n2, 0x2B, name("p2"), false);
    for number in 9..=11 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    exchange(&mut now, (&mut p1, n1), (&mut p2, n2), 300, (true, true));
    got.extend(numbers(&mut p2));
    assert_eq!(
        got,
        (1..=11).collect::<Vec<u32>>(),
        "p2 got every number once, in order"
    );
    assert_eq!(
        p2.players().get(0).map(|p| p.name),
        Some(name("p1r1")),
        "p2 shows p1's new name"
    );
}

/// The other side of the rule above (`peer_chaos` seed 3740, real processes): a dead process's
/// session, seated at a node and never heard from, is dropped as stale once the process now at
/// that node has been seated in another slot under a session of its own (until then its
/// packets were refused: the node's seat held another token). That session gets everything on
/// its own link. When the process later leaves and comes back under a new session, the new
/// session must not go on with the dead session's link, whose events (held for a player that
/// never spoke) the process already had: before, it got them all again.
#[test]
fn a_link_that_never_heard_is_not_continued_when_its_node_went_on_to_a_session_of_its_own() {
    let got = reconnect_after_the_dead_session_goes(|p1, _| p1.remove_player(1, "reconnected"));
    assert_eq!(
        got,
        (1..=5).collect::<Vec<u32>>(),
        "every number once, in order"
    );
}

/// The same when a player list puts someone else in the dead session's slot (its link is kept
/// aside for a moment in case the list was wrong): the reconnected session does not go on
/// with it either.
#[test]
fn a_displaced_link_that_never_heard_is_not_continued_when_its_node_went_on() {
    let got = reconnect_after_the_dead_session_goes(|p1, now| {
        p1.displace_player(now, 1, "replaced by a new player")
    });
    assert_eq!(
        got,
        (1..=5).collect::<Vec<u32>>(),
        "every number once, in order"
    );
}

/// p1 seats a dead session (token 0x2A) at n2 in slot 1, then the live process at n2 (0x2B) in
/// slot 2, and queues numbers 1-3; `drop_dead` takes the dead session out once p2's packets
/// were refused for a while. Then p2 gets 1-3, leaves (`disconnect`) and comes back
/// (`connect`) under a new session (0x2C, which starts afresh: no earlier session to resume),
/// seated in slot 1 within the 5 s a kept-aside link waits; p1 queues 4 and 5. The numbers the
/// process at n2 got, over both sessions.
fn reconnect_after_the_dead_session_goes(drop_dead: impl Fn(&mut Session, Instant)) -> Vec<u32> {
    let (n1, n2) = (node(1), node(2));
    let mut now = Instant::now();
    let mut p1 = mesh_session(0, 0x1A, "p1", now);
    p1.add_player(now, 1, n2, 0x2A, name("p2"), false);
    let mut p2 = mesh_session(2, 0x2B, "p2", now);
    p1.add_player(now, 2, n2, 0x2B, name("p2"), false);
    p2.add_player(now, 0, n1, 0x1A, name("p1"), false);
    for number in 1..=3 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    let refused = exchange(&mut now, (&mut p1, n1), (&mut p2, n2), 30, (true, true));
    assert!(refused > 0, "p1 took p2's packets while slot 1 held n2");
    drop_dead(&mut p1, now);
    exchange(&mut now, (&mut p1, n1), (&mut p2, n2), 100, (true, true));
    let mut got = numbers(&mut p2);
    assert_eq!(got, vec![1, 2, 3], "p2 got the numbers on its own link");

    p1.remove_player(2, "left the game");
    let mut p2_again = mesh_session(1, 0x2C, "p2", now);
    p1.add_player(now, 1, n2, 0x2C, name("p2"), false);
    p2_again.add_player(now, 0, n1, 0x1A, name("p1"), false);
    for number in 4..=5 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    exchange(
        &mut now,
        (&mut p1, n1),
        (&mut p2_again, n2),
        300,
        (true, true),
    );
    got.extend(numbers(&mut p2_again));
    got
}

/// Two links that never heard from one node (`peer_chaos` seed 3883, real processes): p1 seats
/// a dead session at n2 (0x2A, slot 3) and queues 1-3 to it; then, from a list, it seats the
/// first session of the process now there (0x2B, slot 0), which withdraws its request at once;
/// the dead one is dropped too. Both links are kept aside for a new session at n2. The process
/// comes back (0x2C) and goes on with its own first link and gets 4 and 5; then it switches
/// backend (0x2D, resuming 0x2C). That session must not go on with the dead session's link,
/// whose 1-3 were never the process's: before, it got them after 5.
#[test]
fn a_second_link_that_never_heard_is_not_continued_once_its_node_went_on_with_the_first() {
    let (n1, n2) = (node(1), node(2));
    let mut now = Instant::now();
    let mut p1 = mesh_session(1, 0x1A, "p1", now);
    p1.add_player(now, 3, n2, 0x2A, name("p2"), false);
    for number in 1..=3 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    now += std::time::Duration::from_millis(500);
    p1.add_player(now, 0, n2, 0x2B, name("p2"), false);
    now += std::time::Duration::from_millis(100);
    p1.remove_player(0, "stopped connecting");
    p1.remove_player(3, "reconnected");

    let mut p2 = mesh_session(0, 0x2C, "p2", now);
    p1.add_player(now, 0, n2, 0x2C, name("p2"), false);
    p2.add_player(now, 1, n1, 0x1A, name("p1"), false);
    for number in 4..=5 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    exchange(&mut now, (&mut p1, n1), (&mut p2, n2), 100, (true, true));
    let mut got = numbers(&mut p2);
    assert_eq!(
        got,
        vec![4, 5],
        "p2 got the numbers queued after it was seated"
    );

    // A backend switch: the next session resumes this one.
    let mut p2_next = mesh_session(0, 0x2D, "p2", now);
    p2_next.set_resume_state(p2.resume_state_for_next());
    p1.remove_player(0, "left the game");
    p1.add_player(now, 0, n2, 0x2D, name("p2"), false);
    p2_next.add_player(now, 1, n1, 0x1A, name("p1"), false);
    for number in 6..=7 {
        p1.queue_event(numbered(number)).expect("queued");
    }
    exchange(
        &mut now,
        (&mut p1, n1),
        (&mut p2_next, n2),
        300,
        (true, true),
    );
    got.extend(numbers(&mut p2_next));
    assert_eq!(got, vec![4, 5, 6, 7], "every number once, in order");
}
