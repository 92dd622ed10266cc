//! `c/api_errors.c`: every exported function, given NULL pointers, impossible lengths, malformed
//! text and bad console lines, and called before NET_Init and after NET_Shutdown, returns its
//! documented error code with a one-line message, and `status` counts the bad input. Run as built,
//! under AddressSanitizer, and under valgrind.

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
        .find(|l| l.starts_with("api_errors: "))
        .unwrap_or("(no summary)");
    assert!(
        summary.ends_with(" 0 failed"),
        "{what}: {summary}\n{}",
        out.transcript()
    );
    println!("{what}: {summary}");
}

#[test]
fn bad_arguments_and_states_get_their_error_codes() {
    let program = Build::c("c/api_errors.c").build();
    assert_all_checks_passed(&run(Command::new(program), TIMEOUT), "api_errors");
}

#[test]
fn bad_arguments_and_states_get_their_error_codes_under_asan() {
    let program = Build::c("c/api_errors.c").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    assert_all_checks_passed(&out, "api_errors (AddressSanitizer)");
    assert!(!out.stderr.contains("Sanitizer"), "{}", out.transcript());
}

#[test]
fn bad_arguments_and_states_get_their_error_codes_under_valgrind() {
    let program = Build::c("c/api_errors.c").build();
    if let Some(out) = run_under_valgrind(&program, &[], TIMEOUT) {
        assert_all_checks_passed(&out, "api_errors (valgrind)");
    }
}
