//! `net.rate` in a peer-to-peer game, with real processes on 127.0.0.1: three `c/peer_game.c`
//! games (alice, bob, carol) fly ships that change every frame, alice and bob sending at 60 Hz.
//! carol types `net.rate 2000` in the middle of the game (through the console): from then on
//! what reaches her stays near 2000 bytes a second in all, because each of the two others keeps
//! to its share (2000 / 2), not each to the whole rate; she still gets ship states; and the
//! others' traffic between themselves is not held back. Her `status` says so too: the packets
//! accepted per second it shows are a recent rate (they fall with the traffic), not an average
//! since the process started.
//!
//! The rates are measured by each process's own `status` (bytes received, and its `uptime:`),
//! over a few seconds, with loose bounds; no wall-clock bound is asserted.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::peer::{free_loopback_ports, game_args, loopback_setup};
use parsec_net_ffi_tests::Build;

/// Longest wait for a step that takes a few hundred milliseconds on an idle machine.
const STEP: Duration = Duration::from_secs(30);
/// How long each measurement runs (by the wall clock; the rate divides by the game's uptime).
const MEASURE: Duration = Duration::from_secs(4);

fn live_game(
    program: &std::path::Path,
    name: &str,
    port: u16,
    peer: u16,
    extra: &[&str],
) -> LiveGame {
    let mut setup = loopback_setup(port);
    setup.extend(extra.iter().map(|l| l.to_string()));
    let mut command = Command::new(program);
    command.args(game_args(
        name,
        &setup,
        Some(&format!("127.0.0.1:{peer}")),
        2,
        600_000,
        0,
    ));
    command.arg("--control");
    LiveGame::spawn(name, command, false)
}

/// The number after `word` in `text`.
fn number_after(text: &str, word: &str) -> f64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("no {word:?} in {text}"));
    text[at + word.len()..]
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {word:?} in {text}"))
}

/// (bytes received, uptime in seconds, states received) from the game's `status`.
fn received(game: &mut LiveGame) -> (f64, f64, String) {
    let (rc, status) = game.exec("status");
    assert_eq!(rc, 0, "status: {status}");
    let datagrams = status
        .lines()
        .find(|l| l.starts_with("datagrams: "))
        .unwrap_or_else(|| game.fail(&format!("no datagrams line: {status}")));
    let bytes = number_after(&datagrams[datagrams.find("received").unwrap()..], "(");
    (bytes, number_after(&status, "uptime: "), status)
}

/// Bytes a second `game` receives over about `MEASURE`, and the packets a second its `status`
/// then says it accepts (its recent rate).
fn receive_rate(game: &mut LiveGame) -> (f64, f64) {
    let (bytes0, t0, _) = received(game);
    std::thread::sleep(MEASURE);
    let (bytes1, t1, status) = received(game);
    assert!(t1 > t0, "the uptime went on: {status}");
    let game_line = status.lines().find(|l| l.starts_with("game: ")).unwrap();
    let accepted = number_after(&game_line[game_line.find(" accepted ").unwrap()..], "(");
    ((bytes1 - bytes0) / (t1 - t0), accepted)
}

/// The ship states of the player `name` that `game` has seen so far (its summary's frame).
fn frame_of(game: &mut LiveGame, name: &str) -> u32 {
    let summary = game.summary_now();
    let player = summary
        .players
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| game.fail(&format!("{name} is not in the summary")));
    player.frame
}

#[test]
fn each_peer_keeps_to_its_share_of_a_rate_typed_in_the_game() {
    let program = Build::c("c/peer_game.c").build();
    let ports = free_loopback_ports(3);
    let fast = ["net.sendfreq 60"];
    let alice = live_game(&program, "alice", ports[0], ports[1], &fast);
    let mut bob = live_game(&program, "bob", ports[1], ports[0], &fast);
    let mut carol = live_game(&program, "carol", ports[2], ports[0], &[]);
    for game in [&alice, &bob, &carol] {
        if !game.wait_complete(STEP) {
            game.fail("never met the two others");
        }
    }

    // Unlimited: two players at 60 Hz send carol far more than 2000 bytes a second.
    let (before, accepted_before) = receive_rate(&mut carol);
    assert!(
        before > 5000.0,
        "carol receives {before:.0} bytes/s before net.rate"
    );

    let (rc, reply) = carol.exec("net.rate 2000");
    assert_eq!((rc, reply.as_str()), (0, "net.rate = 2000 bytes/s"));
    // The others learn it with their next packets; give it a moment.
    std::thread::sleep(Duration::from_secs(1));
    let alice_frame = frame_of(&mut carol, "alice");
    let (limited, accepted_limited) = receive_rate(&mut carol);
    // Each of the two keeps to 1000 bytes/s (a quarter second's burst on top at most); if each
    // kept to the whole 2000 carol would get about 4000.
    assert!(
        limited < 3000.0,
        "carol receives {limited:.0} bytes/s after net.rate 2000 (before: {before:.0})"
    );
    assert!(
        limited > 400.0,
        "carol still gets something: {limited:.0} bytes/s"
    );
    // `status`'s packets accepted per second follow (a recent rate, not an average since the
    // start of the process).
    assert!(
        accepted_limited < accepted_before / 2.0,
        "carol accepts {accepted_limited:.1} packets/s after net.rate, {accepted_before:.1} before"
    );
    // Still ship states, newer ones.
    assert!(
        frame_of(&mut carol, "alice") > alice_frame,
        "carol still gets alice's ship"
    );
    // alice and bob, who set no rate, are not held back between themselves.
    let (bob_gets, _) = receive_rate(&mut bob);
    assert!(bob_gets > 2500.0, "bob receives {bob_gets:.0} bytes/s");

    println!("carol receives {before:.0} bytes/s ({accepted_before:.1} packets/s) unlimited, {limited:.0} ({accepted_limited:.1}/s) at net.rate 2000; bob {bob_gets:.0}");
    for game in [alice, bob, carol] {
        game.quit(STEP);
    }
}
