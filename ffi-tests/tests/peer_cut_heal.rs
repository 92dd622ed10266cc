//! A peer whose cable is pulled for longer than the silence timeout, as real processes on a
//! private namespace LAN (`harness/netns.rs`) show it: three `c/peer_game.c` games (ann, bea,
//! cid; they join) meet by broadcast; cid's port on the LAN's bridge goes down. ann and bea drop
//! cid ("no packets for 5 s") and cid drops both, alone in a game of its own. The port comes
//! back up: cid, probing the players it dropped, is told by them (NET_EVENT_DISCONNECTED
//! "dropped by the other players: ...; reconnecting"), connects again by itself
//! (NET_EVENT_CONNECTED), and ann and bea see him come back (PLAYER_CONNECTED), joined; neither
//! of them leaves its game. Before the probes, cid stayed alone and the others without him for
//! good. Needs root; without it the test prints SKIPPED and passes.
//!
//! A second test cuts only ann and bea apart (a blackhole route to each other in each one's
//! namespace; both still reach cid): they drop each other, and when the routes go ann (the
//! lower address) is told, reconnects, and lists bea again; bea and cid stay in their game.
//!
//! The games set `net.timeout 5` (`TIMEOUT_LINE`): what happens after a silence does not depend
//! on its length, and the default 20 s is waited out once, by `peer_silence.rs` (real
//! processes) and `net-core/tests/peer_silent_return.rs`, instead of twice more here.
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
/// Longest wait for the silence timeout to pass.
const SILENCE: Duration = Duration::from_secs(90);
/// The silence timeout of every game here (the default is 20 s), and why a player is dropped.
const TIMEOUT_LINE: &str = "net.timeout 5";
const DROPPED: &str = "no packets for 5 s";

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
    game.wait_event_where(from, timeout, what)
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

/// Add or remove a blackhole route to host `to` in host `from`'s namespace (its packets to
/// that one host are dropped; everything else still flows).
fn blackhole(lan: &Lan, from: usize, to: usize, on: bool) {
    let status = Command::new("ip")
        .args(["-n", lan.namespace(from), "route"])
        .arg(if on { "add" } else { "del" })
        .arg("blackhole")
        .arg(format!("{}/32", lan.address(to)))
        .status()
        .expect("run ip");
    assert!(status.success(), "ip route blackhole {on}: {status}");
}

/// The games of a test; if the test fails, what every one of them printed goes to stderr (a
/// failure in one game's events is often explained by another's).
struct Games(Vec<LiveGame>);

impl std::ops::Deref for Games {
    type Target = Vec<LiveGame>;
    fn deref(&self) -> &Vec<LiveGame> {
        &self.0
    }
}

impl std::ops::DerefMut for Games {
    fn deref_mut(&mut self) -> &mut Vec<LiveGame> {
        &mut self.0
    }
}

impl Drop for Games {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for game in &self.0 {
                eprintln!(
                    "=== game {} ===\n{}",
                    game.name(),
                    game.process.transcript()
                );
            }
        }
    }
}

/// Three joined games meet on the LAN (ann, bea, cid, on hosts 0, 1, 2).
fn three_games(lan: &Lan, program: &std::path::Path) -> Games {
    let setup = vec![
        format!("net.udp.broadcast {}", lan.broadcast()),
        TIMEOUT_LINE.to_string(),
    ];
    let names = ["ann", "bea", "cid"];
    let games = Games(
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut command = lan.command(i, program);
                command.args(game_args(name, &setup, None, 2, 600_000, 0));
                command.arg("--control");
                LiveGame::spawn(name, command, false)
            })
            .collect(),
    );
    for game in games.iter() {
        wait_event(game, 0, STEP, |e| e.kind == "CONNECTED");
        for other in names.iter().filter(|n| **n != game.name()) {
            wait_event(game, 0, STEP, |e| {
                e.kind == "PLAYER_CONNECTED" && e.text == *other
            });
            wait_event(game, 0, STEP, |e| e.kind == "PLAYER_JOINED");
        }
    }
    games
}

fn slot_of(game: &LiveGame) -> i32 {
    events(game)
        .iter()
        .rev()
        .find(|e| e.kind == "CONNECTED")
        .map(|e| e.player)
        .unwrap_or_else(|| game.fail("not connected"))
}

#[test]
fn two_peers_cut_apart_from_each_other_only_are_in_one_game_again_when_the_cut_heals() {
    if skip_without("root for network namespaces") {
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(3);
    let mut games = three_games(&lan, &program);
    let slots: Vec<i32> = games.iter().map(slot_of).collect();

    let before: Vec<usize> = games.iter().map(|g| events(g).len()).collect();
    blackhole(&lan, 0, 1, true);
    blackhole(&lan, 1, 0, true);
    for (me, other) in [(0, 1), (1, 0)] {
        let i = wait_event(&games[me], before[me], SILENCE, |e| {
            e.kind == "PLAYER_DISCONNECTED" && e.player == slots[other]
        });
        assert_eq!(events(&games[me])[i].text, DROPPED);
    }

    let before: Vec<usize> = games.iter().map(|g| events(g).len()).collect();
    blackhole(&lan, 0, 1, false);
    blackhole(&lan, 1, 0, false);
    let ann = &games[0];
    let told = wait_event(ann, before[0], STEP, |e| e.kind == "DISCONNECTED");
    let text = &events(ann)[told].text;
    assert!(
        text.starts_with("dropped by the other players") && text.ends_with("reconnecting"),
        "ann's DISCONNECTED says why: {text:?}"
    );
    wait_event(ann, told + 1, STEP, |e| e.kind == "CONNECTED");
    for name in ["bea", "cid"] {
        wait_event(ann, told + 1, STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == name
        });
    }
    for (i, game) in games.iter().enumerate().skip(1) {
        wait_event(game, before[i], STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == "ann"
        });
        assert!(
            !events(game)[before[i]..]
                .iter()
                .any(|e| e.kind == "DISCONNECTED"),
            "{} stayed in its game",
            game.name()
        );
    }
    let (rc, players) = games[1].exec("players");
    assert_eq!(rc, 0, "{players}");
    assert!(
        players
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("ann")),
        "bea lists ann again: {players}"
    );

    while let Some(game) = games.pop() {
        let _ = game.quit(STEP);
    }
}

#[test]
fn a_peer_cut_off_for_longer_than_the_timeout_is_back_in_the_game_when_its_cable_returns() {
    if skip_without("root for network namespaces") {
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(3);
    let mut games = three_games(&lan, &program);
    let cid_slot = events(&games[2])
        .iter()
        .find(|e| e.kind == "CONNECTED")
        .map(|e| e.player)
        .expect("cid connected");

    // cid's cable is pulled: each side drops the other after 5 s.
    let before: Vec<usize> = games.iter().map(|g| events(g).len()).collect();
    cable(&lan, 2, false);
    for (k, game) in games[..2].iter().enumerate() {
        let i = wait_event(game, before[k], SILENCE, |e| {
            e.kind == "PLAYER_DISCONNECTED" && e.player == cid_slot
        });
        assert_eq!(events(game)[i].text, DROPPED);
    }
    // cid drops both (the lines are parsed as given: the game's own lookups would wait for
    // the lock held here).
    let mut dropped = 0;
    games[2].process.wait_until(SILENCE, |lines| {
        dropped = parse(&lines.join("\n")).events[before[2]..]
            .iter()
            .filter(|e| e.kind == "PLAYER_DISCONNECTED" && e.text == DROPPED)
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
            && text.contains("for 5 s;")
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
        let seen = wait_event(game, before[i], STEP, |e| {
            e.kind == "PLAYER_CONNECTED" && e.text == "cid"
        });
        // cid joins once it is connected: its JOIN reaches the others after its CONNECT.
        let slot = events(game)[seen].player;
        wait_event(game, seen + 1, STEP, |e| {
            e.kind == "PLAYER_JOINED" && e.player == slot
        });
        assert!(
            !events(game)[before[i]..]
                .iter()
                .any(|e| e.kind == "DISCONNECTED"),
            "{} stayed in its game",
            game.name()
        );
    }
    // cid is joined again, as the others see him (the table says so too).
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
