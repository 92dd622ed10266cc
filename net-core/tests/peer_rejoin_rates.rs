//! `net.sendfreq` and `net.rate` (and `name`, the last test) typed in a peer-to-peer game stay in force when the peer
//! reconnects by itself (here: it was silent longer than the other's timeout, was dropped, is
//! told so when it talks again and reconnects; then after `net.api udp`). Before, the new session was made from the values
//! of the moment `connect` was typed: back to 20 Hz and an unlimited receive rate, while `status`
//! still showed the player's settings. Two games over the real UDP backend on loopback, driven in
//! virtual time (each frame 1/60 s later; the silent one simply gets no frames).

use std::time::{Duration, Instant};

use net_core::session::GameEvent;
use net_core::Subsystem;

#[path = "support/loopback.rs"]
mod loopback;
use loopback::loopback_game;

const FRAME: Duration = Duration::from_nanos(1_000_000_000 / 60);

fn exec(sub: &mut Subsystem, now: Instant, line: &str) -> String {
    let reply = sub.console_exec(line, now);
    assert!(reply.result.is_ok(), "{line}: {}", reply.output);
    reply.output
}

/// Run frames of the games in `running` (indexes into `subs`) until `done` or `limit` virtual
/// time passed; every event each got goes to its list.
fn run(
    subs: &mut [Subsystem; 2],
    events: &mut [Vec<GameEvent>; 2],
    running: &[usize],
    now: &mut Instant,
    limit: Duration,
    mut done: impl FnMut(&[Subsystem; 2], &[Vec<GameEvent>; 2]) -> bool,
) -> bool {
    let end = *now + limit;
    let mut frame = 0u32;
    while *now < end {
        *now += FRAME;
        for &i in running {
            subs[i].maintain(*now);
            while let Some(event) = subs[i].poll_event() {
                events[i].push(event);
            }
        }
        if done(subs, events) {
            return true;
        }
        frame += 1;
        if frame.is_multiple_of(4) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    false
}

fn connected_count(events: &[GameEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, GameEvent::Connected { .. }))
        .count()
}

/// (send interval, receive rate) of the game's session, and the receive rate the other game
/// keeps to for it.
fn rates(subs: &[Subsystem; 2]) -> (Duration, u32, u32) {
    let session = subs[1].protocol_module().and_then(|p| p.session()).unwrap();
    let config = session.config();
    let slot = session.my_slot();
    let other = subs[0].protocol_module().and_then(|p| p.session()).unwrap();
    (
        config.send_interval,
        config.receive_rate,
        other.remote_rate(Some(slot)),
    )
}

/// ada and cy on loopback, in one game. cy has a long timeout: a stopped process does not see
/// time pass, it reads what waited before its own timers run (modelled, as in
/// peer_silent_return.rs, with a long timeout on the silent one).
fn connected_pair() -> ([Subsystem; 2], [Vec<GameEvent>; 2], Instant) {
    let (a, a_addr) = loopback_game("ada");
    let (c, c_addr) = loopback_game("cy");
    let mut subs = [a, c];
    let mut events = [Vec::new(), Vec::new()];
    let mut now = Instant::now();
    exec(&mut subs[1], now, "net.timeout 120");
    exec(&mut subs[0], now, &format!("connect {c_addr}"));
    exec(&mut subs[1], now, &format!("connect {a_addr}"));
    let both = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(20),
        |_, ev| ev.iter().all(|e| connected_count(e) == 1),
    );
    assert!(both, "both connect: {events:?}");
    (subs, events, now)
}

/// cy gets no frames for 25 s, and ada drops it after its 20 s. Returns where in ada's events
/// the drop is.
fn freeze_cy_until_ada_drops_it(
    subs: &mut [Subsystem; 2],
    events: &mut [Vec<GameEvent>; 2],
    now: &mut Instant,
) -> usize {
    run(subs, events, &[0], now, Duration::from_secs(25), |_, _| {
        false
    });
    events[0]
        .iter()
        .position(|e| matches!(e, GameEvent::PlayerDisconnected { .. }))
        .unwrap_or_else(|| panic!("ada dropped cy: {:?}", events[0]))
}

#[test]
fn rates_typed_in_a_game_survive_the_peers_own_reconnect() {
    let (mut subs, mut events, mut now) = connected_pair();

    // In the game, cy sets 5 Hz and 3000 bytes/s: in force at once, and ada keeps to it.
    let reply = exec(&mut subs[1], now, "net.sendfreq 5");
    assert_eq!(reply, "net.sendfreq = 5 Hz (in this game from now on)");
    exec(&mut subs[1], now, "net.rate 3000");
    let told = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(5),
        |s, _| rates(s).2 == 3000,
    );
    assert!(told, "ada keeps to cy's rate: {:?}", rates(&subs));
    assert_eq!(rates(&subs), (Duration::from_millis(200), 3000, 3000));

    // cy gets no frames for 25 s: ada drops it after its 20 s.
    freeze_cy_until_ada_drops_it(&mut subs, &mut events, &mut now);

    // cy runs again: it is told, reconnects by itself, and its settings still hold.
    let back = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(20),
        |s, ev| {
            connected_count(&ev[1]) == 2
                && s[0]
                    .protocol_module()
                    .and_then(|p| p.session())
                    .is_some_and(|session| !session.players().is_empty())
        },
    );
    assert!(back, "cy reconnected: {:?}", events[1]);
    let kept = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(5),
        |s, _| rates(s).2 == 3000,
    );
    assert!(
        kept,
        "after its own reconnect cy still asks for 3000 bytes/s and sends at 5 Hz: {:?}",
        rates(&subs)
    );
    assert_eq!(rates(&subs), (Duration::from_millis(200), 3000, 3000));
    let settings = exec(&mut subs[1], now, "status");
    assert!(
        settings.contains("send frequency 5 Hz, rate 3000 bytes/s"),
        "{settings}"
    );

    // A backend switch in the game (`net.api udp`) reconnects too: the settings hold.
    exec(&mut subs[1], now, "net.api udp");
    let switched = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(20),
        |s, ev| connected_count(&ev[1]) == 3 && rates(s).2 == 3000,
    );
    assert!(switched, "cy is back after the switch: {:?}", events[1]);
    assert_eq!(rates(&subs), (Duration::from_millis(200), 3000, 3000));
}

/// Typed while the connect is under way (`(from the next connect)`): the game it gets into uses
/// it. Before, that game used the values of the moment `connect` was typed.
#[test]
fn rates_typed_while_connecting_apply_to_that_game() {
    let (a, a_addr) = loopback_game("ada");
    let (c, c_addr) = loopback_game("cy");
    let mut subs = [a, c];
    let mut events = [Vec::new(), Vec::new()];
    let mut now = Instant::now();
    exec(&mut subs[0], now, &format!("connect {c_addr}"));
    exec(&mut subs[1], now, &format!("connect {a_addr}"));
    let reply = exec(&mut subs[1], now, "net.sendfreq 10");
    assert_eq!(reply, "net.sendfreq = 10 Hz (from the next connect)");
    exec(&mut subs[1], now, "net.rate 5000");
    let both = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(20),
        |s, ev| ev.iter().all(|e| connected_count(e) == 1) && rates(s).2 == 5000,
    );
    assert!(both, "both connect, ada keeps to cy's rate: {events:?}");
    assert_eq!(rates(&subs), (Duration::from_millis(100), 5000, 5000));
}

/// A name typed in a peer-to-peer game (`name`) is the one the peer reconnects under when it
/// reconnects by itself (dropped after a silence; here as in the test above). Before, the new
/// session and its connect requests carried the name of the moment `connect` was typed: the
/// other player seated it under its old name and got the new one as a rename right after (found
/// by `ffi-tests peer_chaos` seed 3042, where a newcomer seated in the meantime got the old
/// name last and kept it).
#[test]
fn a_name_typed_in_a_game_is_the_one_the_peer_reconnects_under() {
    let (mut subs, mut events, mut now) = connected_pair();

    exec(&mut subs[1], now, "name cyrus");
    let renamed = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(5),
        |_, ev| {
            ev[0].iter().any(
                |e| matches!(e, GameEvent::PlayerName { name, .. } if name.to_string() == "cyrus"),
            )
        },
    );
    assert!(renamed, "ada is told cy's new name: {:?}", events[0]);

    // cy gets no frames for 25 s: ada drops it.
    let dropped_at = freeze_cy_until_ada_drops_it(&mut subs, &mut events, &mut now);

    // cy runs again and reconnects by itself: ada seats it as cyrus, and hears no other name.
    let back = run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(20),
        |_, ev| connected_count(&ev[1]) == 2,
    );
    assert!(back, "cy reconnected: {:?}", events[1]);
    run(
        &mut subs,
        &mut events,
        &[0, 1],
        &mut now,
        Duration::from_secs(2),
        |_, _| false,
    );
    let names: Vec<String> = events[0][dropped_at..]
        .iter()
        .filter_map(|e| match e {
            GameEvent::PlayerConnected { name, .. } | GameEvent::PlayerName { name, .. } => {
                Some(name.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        ["cyrus"],
        "ada's events about cy after the drop: {:?}",
        &events[0][dropped_at..]
    );
    let status = exec(&mut subs[1], now, "status");
    assert!(!status.contains("\"cy\""), "{status}");
}
