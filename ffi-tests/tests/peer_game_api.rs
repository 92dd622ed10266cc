//! `c/game_api.c`: the game-interface calls (`NET_RmEv*`, ship state, player views, events,
//! names, the position callback) with NULL pointers, NaN and infinite floats, object id 0, list
//! id 16, oversize text, names and custom data, unknown flags and impossible player ids return
//! their documented error codes with a one-line message, before NET_Init, before connecting,
//! connected alone, after disconnecting and after NET_Shutdown; valid sends need a connection.
//! Run as built, under AddressSanitizer, and under valgrind.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::{run, run_asan, run_under_valgrind, Output};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

fn assert_all_checks_passed(out: &Output, what: &str) {
    out.assert_success(what);
    let summary = out
        .stdout
        .lines()
        .find(|l| l.starts_with("game_api: "))
        .unwrap_or("(no summary)");
    assert!(
        summary.ends_with(" 0 failed"),
        "{what}: {summary}\n{}",
        out.transcript()
    );
    println!("{what}: {summary}");
    for note in out.stdout.lines().filter(|l| l.starts_with("NOTE ")) {
        println!("{what}: {note}");
    }
}

#[test]
fn game_interface_from_c() {
    let program = Build::c("c/game_api.c").build();
    assert_all_checks_passed(&run(Command::new(program), TIMEOUT), "game_api");
}

#[test]
fn game_interface_from_c_under_asan() {
    let program = Build::c("c/game_api.c").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    assert_all_checks_passed(&out, "game_api (AddressSanitizer)");
    assert!(!out.stderr.contains("Sanitizer"), "{}", out.transcript());
}

#[test]
fn game_interface_from_c_under_valgrind() {
    let program = Build::c("c/game_api.c").build();
    if let Some(out) = run_under_valgrind(&program, &[], TIMEOUT) {
        assert_all_checks_passed(&out, "game_api (valgrind)");
    }
}
