//! `c/contract_pair.c`: two games check, field by field, what the C contract promises about each
//! other, as a test written only against SPEC section 4 and docs/c-api.md would: every remote
//! event kind with extreme values (every field as sent, unused fields zero, sender's slot, in
//! order), the player events and their order, `NET_FetchOwner`, `NET_FetchPlayerName` and
//! `NET_GetPlayerState` of the other, and a last chat line sent right before `NETs_Disconnect`
//! arriving before the player leaves. Peer to peer on loopback, through a `parsecnet
//! gameserver`, and through a `parsecnet slotserver`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::peer::{
    free_loopback_ports, loopback_protocol_setup, run_together, scripted_game,
};
use parsec_net_ffi_tests::server::Server;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);
const DURATION_MS: &str = "30000";

fn game(program: &Path, name: &str, setup: &[String], peer: &str, extra: &[&str]) -> Command {
    scripted_game(program, name, setup, peer, DURATION_MS, extra)
}

fn setup(port: u16, protocol: Option<&str>) -> Vec<String> {
    loopback_protocol_setup(port, protocol)
}

fn check_both(games: Vec<(String, Command)>, what: &str) {
    for run in run_together(games, TIMEOUT, false) {
        run.output
            .assert_checks_passed("contract_pair", &format!("{what}: {}", run.name));
    }
}

#[test]
fn every_event_field_and_lookup_peer_to_peer() {
    let program = Build::c("c/contract_pair.c").build();
    let ports = free_loopback_ports(2);
    let peer = |i: usize| format!("127.0.0.1:{}", ports[1 - i]);
    let games = vec![
        (
            "alice".to_string(),
            game(
                &program,
                "alice",
                &setup(ports[0], None),
                &peer(0),
                &["--leave"],
            ),
        ),
        (
            "bob".to_string(),
            game(&program, "bob", &setup(ports[1], None), &peer(1), &[]),
        ),
    ];
    check_both(games, "peer to peer");
}

fn through_server(kind: &str) {
    let program = Build::c("c/contract_pair.c").build();
    let mut args = vec!["--port", "0", "--no-http", "--bind", "127.0.0.1"];
    if kind == "gameserver" {
        args.extend(["--udp-port", "0"]);
    }
    let server = Server::start(kind, &args);
    let address = server.tcp.to_string();
    let games = vec![
        (
            "alice".to_string(),
            game(
                &program,
                "alice",
                &setup(0, Some(kind)),
                &address,
                &["--leave", "--name-anywhere"],
            ),
        ),
        (
            "bob".to_string(),
            game(
                &program,
                "bob",
                &setup(0, Some(kind)),
                &address,
                &["--name-anywhere"],
            ),
        ),
    ];
    check_both(games, kind);
    server.stop();
}

#[test]
fn every_event_field_and_lookup_through_a_gameserver() {
    through_server("gameserver");
}

/// Through a slotserver a renamed player's name once flapped at the others (PLAYER_NAME new,
/// the old name, the new again) when a late RE_PLAYERNAME over the peer link came after the
/// server's `name ip:` line; the others' names now come from the server's lines only.
#[test]
fn every_event_field_and_lookup_through_a_slotserver() {
    through_server("slotserver");
}

/// The `EVENT` lines of a contract_pair output.
fn event_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("EVENT ")).collect()
}

/// SPEC section 8: "playback feeds it back through the same path, so the game sees exactly what
/// it saw live". Bob records the whole game with `record FILE` and ends with `NET_Shutdown`
/// (no `stop`): a fresh instance playing the file polls exactly the events bob polled live,
/// field by field (custom data compared by hash), and nothing more.
#[test]
fn a_demo_ended_by_shutdown_plays_exactly_the_events_polled_live() {
    let program = Build::c("c/contract_pair.c").build();
    let ports = free_loopback_ports(2);
    let dir = std::env::temp_dir().join(format!("pn-contract-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("bob.demo");
    let mut bob_setup = setup(ports[1], None);
    bob_setup.push(format!("record {}", file.display()));
    let games = vec![
        (
            "alice".to_string(),
            game(
                &program,
                "alice",
                &setup(ports[0], None),
                &format!("127.0.0.1:{}", ports[1]),
                &["--leave"],
            ),
        ),
        (
            "bob".to_string(),
            game(
                &program,
                "bob",
                &bob_setup,
                &format!("127.0.0.1:{}", ports[0]),
                &[],
            ),
        ),
    ];
    let runs = run_together(games, TIMEOUT, false);
    for run in &runs {
        run.output
            .assert_checks_passed("contract_pair", &format!("recording: {}", run.name));
    }
    let mut command = Command::new(&program);
    command.args(["--play", file.to_str().expect("a UTF-8 path")]);
    let played = parsec_net_ffi_tests::run(command, TIMEOUT);
    played.assert_checks_passed("contract_pair", "playback");
    let live = event_lines(&runs[1].output.stdout);
    let back = event_lines(&played.stdout);
    assert_eq!(
        live,
        back,
        "playback must show exactly the events bob polled live\n--- live ---\n{}\n--- played ---\n{}",
        runs[1].output.stdout,
        played.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}
