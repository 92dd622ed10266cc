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
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(100);

fn pair(asan: bool) {
    let mut build = Build::c("c/rejoin_pair.c");
    if asan {
        build = build.asan();
    }
    let program = build.build();
    let ports = free_loopback_ports(2);
    let games = ["actor", "watcher"]
        .iter()
        .enumerate()
        .map(|(i, role)| {
            let mut command = Command::new(&program);
            command.args([
                "--role",
                role,
                "--port",
                &ports[i].to_string(),
                "--peer",
                &format!("127.0.0.1:{}", ports[1 - i]),
            ]);
            (role.to_string(), command)
        })
        .collect();
    for run in run_together(games, TIMEOUT, asan) {
        run.output
            .assert_checks_passed("rejoin_pair", &format!("rejoin_pair {}", run.name));
    }
}

#[test]
fn rejoin_rename_bit_exact_states_and_a_second_life_on_the_same_port() {
    pair(false);
}

#[test]
fn rejoin_rename_bit_exact_states_and_a_second_life_on_the_same_port_under_asan() {
    pair(true);
}
