//! A peer whose cable is pulled for longer than the 20 s silence timeout, as real processes on a
//! private namespace LAN (`harness/netns.rs`) show it: three `c/peer_game.c` games (ann, bea,
//! cid; they join) meet by broadcast; cid's port on the LAN's bridge goes down. ann and bea drop
//! cid ("no packets for 20 s") and cid drops both, alone in a game of its own. The port comes
//! back up: cid, probing the players it dropped, is told by them (NET_EVENT_DISCONNECTED
//! "dropped by the other players: ...; reconnecting"), connects again by itself
//! (NET_EVENT_CONNECTED), and ann and bea see him come back (PLAYER_CONNECTED), joined; neither
//! of them leaves its game. Before the probes, cid stayed alone and the others without him for
//! good. Needs root; without it the test prints SKIPPED and passes.
//!
//! No wall-clock bound is asserted: the test waits for events in order, with generous limits.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::netns::{skip_without, Lan};
use parsec_net_ffi_tests::peer::{game_args, parse, Event};
use parsec_net_ffi_tests::Build;

/// Longest wait for a step that takes a few hundred milliseconds on an idle machine.
const STEP: Duration = Duration::from_secs(30);
/// Longest wait for the 20 s silence timeout to pass.
const SILENCE: Duration = Duration::from_secs(90);

fn events(game: &LiveGame) -> Vec<Event> {
    game.events_since(0)
}

/// Index in `game`'s events of the first event from `from` on that `what` accepts.
fn wait_event(
    game: &LiveGame,
    from: usize,
    timeout: Duration,
    what: impl Fn(&Event) -> bool,
) -> usize {
    let mut found = None;
    game.process.wait_until(timeout, |lines| {
        found = parse(&lines.join("\n"))
            .events
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, e)| what(e))
            .map(|(i, _)| i);
        found.is_some()
    });
    found.unwrap_or_else(|| game.fail("the awaited event never came"))
}

/// Set host `host`'s port on the LAN's bridge down (its cable pulled) or up again.
fn cable(lan: &Lan, host: usize, up: bool) {
    let status = Command::new("ip")
        .args(["-n", lan.bridge_namespace(), "link", "set"])
        .arg(lan.bridge_port(host))
        .arg(if up { "up" } else { "down" })
        .status()
        .expect("run ip");
    assert!(status.success(), "ip link set {up}: {status}");
}

#[test]
fn a_peer_cut_off_for_longer_than_the_timeout_is_back_in_the_game_when_its_cable_returns() {
    if skip_without("root for network namespaces") {
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(3);
    let setup = vec![format!("net.udp.broadcast {}", lan.broadcast())];
    let names = ["ann", "bea", "cid"];
    let mut games: Vec<LiveGame> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.args(game_args(name, &setup, None, 2, 600_000, 0));
            command.arg("--control");
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        wait_event(game, 0, STEP, |e| e.kind == "CONNECTED");
        for other in names.iter().filter(|n| **n != game.name()) {
            wait_event(game, 0, STEP, |e| {
                e.kind == "PLAYER_CONNECTED" && e.text == *other
            });
            wait_event(game, 0, STEP, |e| e.kind == "PLAYER_JOINED");
        }
    }
    let cid_slot = events(&games[2])
        .iter()
        .find(|e| e.kind == "CONNECTED")
        .map(|e| e.player)
        .expect("cid connected");

    // cid's cable is pulled: each side drops the other after 20 s.
    let before: Vec<usize> = games.iter().map(|g| events(g).len()).collect();
    cable(&lan, 2, false);
    for (k, game) in games[..2].iter().enumerate() {
        let i = wait_event(game, before[k], SILENCE, |e| {
            e.kind == "PLAYER_DISCONNECTED" && e.player == cid_slot
        });
        assert_eq!(events(game)[i].text, "no packets for 20 s");
    }
    // cid drops both (the lines are parsed as given: the game's own lookups would wait for
    // the lock held here).
    let mut dropped = 0;
    games[2].process.wait_until(SILENCE, |lines| {
        dropped = parse(&lines.join("\n")).events[before[2]..]
            .iter()
            .filter(|e| e.kind == "PLAYER_DISCONNECTED" && e.text == "no packets for 20 s")
            .count();
        dropped == 2
    });
    assert_eq!(dropped, 2, "cid dropped ann and bea");

    // The cable comes back: cid is told, reconnects, and the others see him again.
    let before: Vec<usize> = games.iter().map(|g| events(g).len()).collect();
    cable(&lan, 2, true);
    let cid = &games[2];
    let told = wait_event(cid, before[2], STEP, |e| e.kind == "DISCONNECTED");
    let text = &events(cid)[told].text;
    assert!(
        text.starts_with("dropped by the other players")
            && text.contains("20 s")
            && text.ends_with("reconnecting"),
        "cid's DISCONNECTED says why: {text:?}"
    );
    wait_event(cid, told + 1, STEP, |e| e.kind == "CONNECTED");
    for name in ["ann", "bea"] {
        wait_event(cid, told + 1, STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == name
        });
    }
    for (i, game) in games[..2].iter().enumerate() {
        wait_event(game, before[i], STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == "cid"
        });
        assert!(
            !events(game)[before[i]..]
                .iter()
                .any(|e| e.kind == "DISCONNECTED"),
            "{} stayed in its game",
            game.name()
        );
    }
    // cid is joined again, as the others see him.
    let (rc, players) = games[0].exec("players");
    assert_eq!(rc, 0, "{players}");
    let row = players
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("cid"))
        .unwrap_or_else(|| games[0].fail(&format!("cid not in ann's players: {players}")));
    assert_eq!(row.split_whitespace().nth(2), Some("yes"), "{players}");

    while let Some(game) = games.pop() {
        let _ = game.quit(STEP);
    }
}
