//! The player table when a slot's player is listed again (sans-IO, deterministic): a new
//! session (another token) in a slot someone holds must show the game the old player leaving
//! before the new one comes (PLAYER_DISCONNECTED, then PLAYER_CONNECTED), with the old player's
//! objects ownerless; the same player listed again (same token) keeps what the game was shown
//! (its ship state, its joined state), a new name there coming as PLAYER_NAME. Before, a
//! replacement showed only PLAYER_CONNECTED (the game never heard the old player leave, and
//! NET_FetchOwner still named the slot for its objects), and a same-token listing silently reset
//! the player's state and joined flag: the live lookups then showed what no event or recorded
//! state said, so a demo played back showed something else (SPEC section 8).

mod support;

use std::time::Instant;

use net_core::rmev::{RemoteEvent, ShipState};
use net_core::session::{GameEvent, Session};
use net_core::wire::decode_packet;
use net_core::Node;
use support::sessions::{mesh_session, name, numbered, numbers, test_node as node};

fn session(slot: u8, token: u32, who: &str, now: Instant) -> Session {
    mesh_session(slot, token, who, now)
}

fn events(session: &mut Session) -> Vec<GameEvent> {
    std::iter::from_fn(|| session.poll_event()).collect()
}

fn created(object_id: u32) -> RemoteEvent {
    RemoteEvent::CreateObject {
        object_id,
        class: 1,
        pos: [0.0; 3],
        orient: [0.0, 0.0, 0.0, 1.0],
        flags: 0,
    }
}

#[test]
fn a_new_session_in_a_held_slot_is_seen_replacing_the_old_player() {
    let now = Instant::now();
    let mut me = session(0, 0x1111, "me", now);
    me.add_player(now, 1, node(2), 0x2222, name("ann"), true);
    me.apply_remote_event(1, created(77));
    assert_eq!(me.owner_of(77), Some(1));
    events(&mut me);

    me.add_player(now, 1, node(3), 0x3333, name("bob"), false);
    let seen = events(&mut me);
    assert!(
        matches!(
            seen.as_slice(),
            [
                GameEvent::PlayerDisconnected { slot: 1, .. },
                GameEvent::PlayerConnected { slot: 1, name: bob },
            ] if *bob == name("bob")
        ),
        "the game must hear ann leave before bob comes: {seen:?}"
    );
    assert_eq!(me.owner_of(77), None, "ann's object left with her");
    assert_eq!(
        me.take_departure(1),
        Some((0x2222, name("ann"))),
        "ann stays shown until the game polls her departure"
    );
    let bob = me.players().get(1).expect("bob seated");
    assert_eq!((bob.token, bob.joined), (0x3333, false));
}

#[test]
fn the_same_player_listed_again_keeps_its_state_and_a_new_name_is_a_rename() {
    let now = Instant::now();
    let mut me = session(0, 0x1111, "me", now);
    let mut ann = session(1, 0x2222, "ann", now);
    me.add_player(now, 1, node(2), 0x2222, name("ann"), true);
    ann.add_player(now, 0, node(1), 0x1111, name("me"), false);
    ann.join().expect("ann joins");
    let state = ShipState {
        pos: [5.0, 6.0, 7.0],
        ..ShipState::default()
    };
    ann.set_local_state(state);
    let mut buf = vec![0u8; 1400];
    let mut wire = Vec::new();
    while let Some((_, len)) = ann.poll_transmit(now, &mut buf) {
        let packet = decode_packet(&buf[..len], &mut wire).expect("ann's packet decodes");
        me.handle_packet(now, &node(2), &packet, &wire)
            .expect("ann's packet is accepted");
    }
    let shown = me.players().get(1).expect("ann seated").state;
    assert_eq!(shown.pos, [5.0, 6.0, 7.0], "ann's state arrived");
    events(&mut me);

    // Listed again as she is (a server repeats her line, not joined as its lines always say).
    me.add_player(now, 1, node(2), 0x2222, name("ann"), false);
    assert_eq!(events(&mut me), vec![], "nothing changed for the game");
    let again = me.players().get(1).expect("ann still seated");
    assert!(
        again.state.same_bits(&shown),
        "her state as the game saw it"
    );
    assert!(again.joined, "still joined: nobody said she unjoined");

    // Listed again under another name: a rename.
    me.add_player(now, 1, node(4), 0x2222, name("anna"), false);
    assert_eq!(
        events(&mut me),
        vec![GameEvent::PlayerName {
            slot: 1,
            name: name("anna")
        }]
    );
    let again = me.players().get(1).expect("ann still seated");
    assert_eq!((again.name, again.node), (name("anna"), node(4)));
    assert!(again.state.same_bits(&shown));
}

/// Run both sessions for `steps` of 100 ms: timers, then every packet each has for the other
/// (`a`'s to `b` only when `a_to_b`).
fn run(
    a: (&mut Session, Node),
    b: (&mut Session, Node),
    now: &mut Instant,
    steps: u32,
    a_to_b: bool,
) {
    let (a, a_node) = a;
    let (b, b_node) = b;
    let mut buf = vec![0u8; 1400];
    let mut wire = Vec::new();
    for _ in 0..steps {
        *now += std::time::Duration::from_millis(100);
        for s in [&mut *a, &mut *b] {
            if s.poll_timeout().is_some_and(|t| t <= *now) {
                s.handle_timeout(*now);
            }
        }
        loop {
            let mut moved = false;
            while let Some((to, len)) = a.poll_transmit(*now, &mut buf) {
                if to == b_node && a_to_b {
                    let packet = decode_packet(&buf[..len], &mut wire).expect("decodes");
                    let _ = b.handle_packet(*now, &a_node, &packet, &wire);
                    moved = true;
                }
            }
            while let Some((to, len)) = b.poll_transmit(*now, &mut buf) {
                if to == a_node {
                    let packet = decode_packet(&buf[..len], &mut wire).expect("decodes");
                    let _ = a.handle_packet(*now, &b_node, &packet, &wire);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
    }
}

/// A player a list put in the wrong slot, displaced from it by the slot's real player and then
/// seated in its own slot (its packets say where it sits), goes on with the same link, even
/// when this player switches backend before the two finished resuming: everything the game
/// queued for it reaches it once, in order. Before, the first link was parked and a new one made
/// for the same player; the parked stream went into the new link's unfinished resumption, and
/// at the switch the new link's stream replaced it in the parking lot (one per pair of tokens):
/// the events queued on the first link were lost (`peer_resume` seed 74099).
#[test]
fn a_player_moved_out_of_a_slot_it_was_wrongly_listed_in_keeps_its_link() {
    let mut now = Instant::now();
    let (me_node, ann_node, bob_node, me2_node) = (node(1), node(2), node(3), node(4));
    let mut me = session(0, 0x1111, "me", now);
    let mut ann = session(2, 0x2222, "ann", now);
    ann.add_player(now, 0, me_node, 0x1111, name("me"), false);
    // A list put ann in slot 1, which is bob's. What the game queues now waits for her.
    me.add_player(now, 1, ann_node, 0x2222, name("ann"), false);
    me.queue_event(numbered(1)).expect("queued");
    me.queue_event(numbered(2)).expect("queued");

    // Bob's own packet claims slot 1: ann is displaced; then her packet seats her in slot 2.
    now += std::time::Duration::from_millis(20);
    me.displace_player(now, 1, "moved to another slot");
    me.add_player(now, 1, bob_node, 0x3333, name("bob"), false);
    me.add_player(now, 2, ann_node, 0x2222, name("ann"), false);
    me.queue_event(numbered(3)).expect("queued");
    // Ann's packets reach this player; its own do not reach her before it switches.
    run(
        (&mut me, me_node),
        (&mut ann, ann_node),
        &mut now,
        10,
        false,
    );

    // The switch: a new session picks up what this one left.
    let state = me.resume_state_for_next();
    let mut me2 = session(0, 0x4444, "me", now);
    me2.set_resume_state(state);
    ann.remove_player(0, "left the game");
    ann.add_player(now, 0, me2_node, 0x4444, name("me"), false);
    me2.add_player(now, 2, ann_node, 0x2222, name("ann"), false);
    me2.queue_event(numbered(4)).expect("queued");
    run(
        (&mut me2, me2_node),
        (&mut ann, ann_node),
        &mut now,
        30,
        true,
    );
    assert_eq!(
        numbers(&mut ann),
        vec![1, 2, 3, 4],
        "every number once, in order"
    );
}

/// A displaced player's link still gets what the game queues while it waits to be seated again:
/// seated in its own slot a moment later it goes on with nothing missing. Before, those events
/// went to no link at all.
#[test]
fn what_the_game_queues_while_a_player_is_displaced_still_reaches_it() {
    let mut now = Instant::now();
    let (me_node, ann_node, bob_node) = (node(1), node(2), node(3));
    let mut me = session(0, 0x1111, "me", now);
    let mut ann = session(2, 0x2222, "ann", now);
    ann.add_player(now, 0, me_node, 0x1111, name("me"), false);
    // A list put ann in slot 1, which is bob's.
    me.add_player(now, 1, ann_node, 0x2222, name("ann"), false);
    me.queue_event(numbered(1)).expect("queued");
    // Bob's own packet claims slot 1; the game goes on before ann's packet seats her in slot 2.
    now += std::time::Duration::from_millis(20);
    me.displace_player(now, 1, "moved to another slot");
    me.add_player(now, 1, bob_node, 0x3333, name("bob"), false);
    me.queue_event(numbered(2)).expect("queued");
    me.queue_event(numbered(3)).expect("queued");
    now += std::time::Duration::from_millis(300);
    me.add_player(now, 2, ann_node, 0x2222, name("ann"), false);
    me.queue_event(numbered(4)).expect("queued");
    run((&mut me, me_node), (&mut ann, ann_node), &mut now, 30, true);
    assert_eq!(
        numbers(&mut ann),
        vec![1, 2, 3, 4],
        "every number once, in order"
    );
}

/// A list seats a player's earlier session in the slot where this peer seated the player's new
/// one, and the next list puts the new one back (both were only listed, never heard from here).
/// What the game queues next waits for the new session's answer; when its hello names the
/// earlier session, that session's link is parked and resumed with it. That link, displaced at
/// once, was empty, and its parked stream used to say every event of its time was delivered:
/// the held events were then dropped as delivered (`peer_resume` seed 1327, six events lost).
#[test]
fn a_stale_list_that_seated_a_players_earlier_session_for_a_moment_loses_it_nothing() {
    let mut now = Instant::now();
    let (me_node, ann_node, ghost_node) = (node(1), node(2), node(3));
    let mut me = session(0, 0x1111, "me", now);
    // Ann's earlier session (token 0x9999, now gone) and her new one.
    let earlier = session(2, 0x9999, "ann", now);
    let mut ann = session(2, 0x2222, "ann", now);
    ann.set_resume_state(earlier.resume_state_for_next());
    ann.add_player(now, 0, me_node, 0x1111, name("me"), false);
    me.add_player(now, 2, ann_node, 0x2222, name("ann"), false);
    me.add_player(now, 2, ghost_node, 0x9999, name("ann"), false);
    me.add_player(now, 2, ann_node, 0x2222, name("ann"), false);
    for number in 1..=3 {
        me.queue_event(numbered(number)).expect("queued");
    }
    run((&mut me, me_node), (&mut ann, ann_node), &mut now, 30, true);
    assert_eq!(
        numbers(&mut ann),
        vec![1, 2, 3],
        "every number once, in order"
    );
}
