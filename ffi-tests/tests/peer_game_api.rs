//! `c/game_api.c`: the game-interface calls (`NET_RmEv*`, ship state, player views, events,
//! names, the position callback) with NULL pointers, NaN and infinite floats, object id 0, list
//! id 16, oversize text, names and custom data, unknown flags and impossible player ids return
//! their documented error codes with a one-line message, before NET_Init, before connecting,
//! connected alone, after disconnecting and after NET_Shutdown; valid sends need a connection.
//! Run as built, under AddressSanitizer, and under valgrind.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::{run, run_asan, run_under_valgrind};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn game_interface_from_c() {
    let program = Build::c("c/game_api.c").build();
    run(Command::new(program), TIMEOUT).assert_checks_passed("game_api", "game_api");
}

#[test]
fn game_interface_from_c_under_asan() {
    let program = Build::c("c/game_api.c").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    out.assert_checks_passed("game_api", "game_api (AddressSanitizer)");
}

#[test]
fn game_interface_from_c_under_valgrind() {
    let program = Build::c("c/game_api.c").build();
    if let Some(out) = run_under_valgrind(&program, &[], TIMEOUT) {
        out.assert_checks_passed("game_api", "game_api (valgrind)");
    }
}
