//! `c/api_errors.c`: every exported function, given NULL pointers, impossible lengths, malformed
//! text and bad console lines, and called before NET_Init and after NET_Shutdown, returns its
//! documented error code with a one-line message, and `status` counts the bad input. Run as built,
//! under AddressSanitizer, and under valgrind.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::{run, run_asan, run_under_valgrind};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn bad_arguments_and_states_get_their_error_codes() {
    let program = Build::c("c/api_errors.c").build();
    run(Command::new(program), TIMEOUT).assert_checks_passed("api_errors", "api_errors");
}

#[test]
fn bad_arguments_and_states_get_their_error_codes_under_asan() {
    let program = Build::c("c/api_errors.c").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    out.assert_checks_passed("api_errors", "api_errors (AddressSanitizer)");
}

#[test]
fn bad_arguments_and_states_get_their_error_codes_under_valgrind() {
    let program = Build::c("c/api_errors.c").build();
    if let Some(out) = run_under_valgrind(&program, &[], TIMEOUT) {
        out.assert_checks_passed("api_errors", "api_errors (valgrind)");
    }
}
