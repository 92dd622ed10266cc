//! `c/three_games.c`: a black-box audit written from SPEC sections 4, 6 and 8 and docs/c-api.md.
//! Three games at once on loopback, three players each: peer to peer, through a `parsecnet
//! gameserver` and through a `parsecnet slotserver`. Every player sends every remote event kind
//! (custom events of 0, 1, 255 and 256 bytes reliable and unreliable, a rename in the middle, a
//! 255-byte text) and every receiver checks every field, the order per sender, the position the
//! sender's position callback gave at send time, `NET_FetchOwner`, `NET_GetPlayerState` (also
//! of the own and of unknown ids) and `NET_FetchPlayerName`; refused bounds and NULL pointers
//! in a game. The three players' `VIEW` lines (names by slot) must agree in each game.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::peer::{
    free_loopback_ports, loopback_protocol_setup, run_together, scripted_game, GameRun,
};
use parsec_net_ffi_tests::server::Server;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(90);
const DURATION_MS: &str = "60000";
const NAMES: [&str; 3] = ["ann", "bea", "cid"];

fn game(program: &Path, name: &str, setup: &[String], peer: &str, extra: &[&str]) -> Command {
    scripted_game(program, name, setup, peer, DURATION_MS, extra)
}

fn setup(port: u16, protocol: Option<&str>) -> Vec<String> {
    loopback_protocol_setup(port, protocol)
}

/// The three players of a peer-to-peer game: ann and bea connect to each other, cid to ann.
fn peer_players(program: &Path, tag: &str) -> Vec<(String, Command)> {
    let ports = free_loopback_ports(3);
    let peers = [ports[1], ports[0], ports[0]];
    (0..3)
        .map(|i| {
            let name = format!("{}{tag}", NAMES[i]);
            let command = game(
                program,
                &name,
                &setup(ports[i], None),
                &format!("127.0.0.1:{}", peers[i]),
                &["--name-in-place"],
            );
            (format!("peer {name}"), command)
        })
        .collect()
}

fn server_players(
    program: &Path,
    kind: &str,
    tag: &str,
    server: &Server,
) -> Vec<(String, Command)> {
    let address = server.tcp.to_string();
    (0..3)
        .map(|i| {
            let name = format!("{}{tag}", NAMES[i]);
            let command = game(program, &name, &setup(0, Some(kind)), &address, &[]);
            (format!("{kind} {name}"), command)
        })
        .collect()
}

fn start_server(kind: &str) -> Server {
    let mut args = vec!["--port", "0", "--no-http", "--bind", "127.0.0.1"];
    if kind == "gameserver" {
        args.extend(["--udp-port", "0"]);
    }
    Server::start(kind, &args)
}

/// Every player passed its checks, and the players of each game (three consecutive runs) see
/// the same names in the same slots.
fn check(runs: &[GameRun]) {
    for run in runs {
        run.output.assert_checks_passed("three_games", &run.name);
    }
    for players in runs.chunks(3) {
        let views: Vec<&str> = players
            .iter()
            .map(|run| {
                run.output
                    .stdout
                    .lines()
                    .find(|l| l.starts_with("VIEW"))
                    .unwrap_or("(no VIEW line)")
            })
            .collect();
        assert!(
            views
                .iter()
                .all(|v| *v == views[0] && v.matches('=').count() == 3),
            "NET_FetchPlayerName must agree across the three players: {views:#?}"
        );
    }
}

#[test]
fn three_players_in_three_games_at_once() {
    let program = Build::c("c/three_games.c").build();
    let gameserver = start_server("gameserver");
    let slotserver = start_server("slotserver");
    let mut games = peer_players(&program, "-p");
    games.extend(server_players(&program, "gameserver", "-g", &gameserver));
    games.extend(server_players(&program, "slotserver", "-s", &slotserver));
    let runs = run_together(games, TIMEOUT, false);
    check(&runs);
    gameserver.stop();
    slotserver.stop();
}

#[test]
fn three_players_peer_to_peer_under_asan() {
    let program = Build::c("c/three_games.c").asan().build();
    let runs = run_together(peer_players(&program, "-a"), TIMEOUT, true);
    check(&runs);
}

#[test]
fn three_players_through_a_slotserver_under_asan() {
    let program = Build::c("c/three_games.c").asan().build();
    let slotserver = start_server("slotserver");
    let runs = run_together(
        server_players(&program, "slotserver", "-a", &slotserver),
        TIMEOUT,
        true,
    );
    check(&runs);
    slotserver.stop();
}
