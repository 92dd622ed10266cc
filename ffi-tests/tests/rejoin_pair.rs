//! `c/rejoin_pair.c`: two games on loopback, written only against SPEC sections 4 and 8 and
//! docs/c-api.md. The actor leaves and joins again with unjoin flags 0, 7 and 255 (a second
//! unjoin refused, a second join changing nothing), renames itself with `NET_SetPlayerName` +
//! `NETs_UpdateName`, and sets three ship states that differ only in the sign of a zero and in
//! one bit of the game area; the watcher sees each JOINED/UNJOINED (with its flag) and the
//! PLAYER_NAME exactly once, in order, and every state bit for bit. Then the actor calls
//! `NET_Shutdown` in the middle of the game (the watcher gets PLAYER_DISCONNECTED), and both
//! `NET_Init` and play the whole round again in the same processes, on the same ports. Plainly
//! and under AddressSanitizer.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::peer::{free_loopback_ports, run_together};
use parsec_net_ffi_tests::server::Server;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(100);

/// Run the actor and the watcher. `server`: play through a `parsecnet` server of that kind
/// (both on port 0, `--peer` the server) instead of peer to peer on fixed ports.
fn pair(asan: bool, server: Option<&str>, extra: &[&str]) {
    let mut build = Build::c("c/rejoin_pair.c");
    if asan {
        build = build.asan();
    }
    let program = build.build();
    let ports = free_loopback_ports(2);
    let running = server.map(|kind| {
        let mut args = vec!["--port", "0", "--no-http", "--bind", "127.0.0.1"];
        if kind == "gameserver" {
            args.extend(["--udp-port", "0"]);
        }
        Server::start(kind, &args)
    });
    let games = ["actor", "watcher"]
        .iter()
        .enumerate()
        .map(|(i, role)| {
            let mut command = Command::new(&program);
            command.args(["--role", role]);
            match (server, &running) {
                (Some(kind), Some(running)) => {
                    command.args(["--port", "0", "--peer", &running.tcp.to_string()]);
                    command.args(["--exec", &format!("net.subsys {kind}")]);
                }
                _ => {
                    command.args([
                        "--port",
                        &ports[i].to_string(),
                        "--peer",
                        &format!("127.0.0.1:{}", ports[1 - i]),
                    ]);
                }
            }
            command.args(extra);
            (role.to_string(), command)
        })
        .collect();
    for run in run_together(games, TIMEOUT, asan) {
        run.output
            .assert_checks_passed("rejoin_pair", &format!("rejoin_pair {}", run.name));
    }
    if let Some(running) = running {
        running.stop();
    }
}

#[test]
fn rejoin_rename_bit_exact_states_and_a_second_life_on_the_same_port() {
    pair(false, None, &[]);
}

#[test]
fn rejoin_rename_bit_exact_states_and_a_second_life_on_the_same_port_under_asan() {
    pair(true, None, &[]);
}

/// The unjoins, joins and the rename all in one frame: still each event once, in order.
#[test]
fn unjoins_joins_and_a_rename_in_one_frame() {
    pair(false, None, &["--same-frame"]);
}

/// A watcher whose frames run late (60 ms each, as on a loaded machine) gets the actor's chat
/// line "state Sn" in the same `NETs_MaintainNet` as the packets sent after it; every state must
/// still be seen bit for bit, because the actor sets the next one only once the watcher said it
/// saw the last. (Under load the test once read S3 while handling "state S2".)
#[test]
fn a_watcher_running_late_still_sees_every_state_bit_for_bit() {
    pair(false, None, &["--watcher-frame-ms", "60"]);
}

/// Through a server the name comes once the server accepted it, not in order with the events
/// around it, and (gameserver) a state may be overtaken by a later one before the watcher reads it.
#[test]
fn rejoin_rename_and_bit_exact_states_through_a_gameserver() {
    // Its --distance (10000) would keep a ship at FLT_MAX from the watcher's view.
    pair(
        false,
        Some("gameserver"),
        &["--near-states", "--server-order"],
    );
}

#[test]
fn rejoin_rename_and_bit_exact_states_through_a_slotserver() {
    pair(false, Some("slotserver"), &["--server-order"]);
}
