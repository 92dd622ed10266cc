//! `c/receive_lies.c` with the backend `c/bad/receive_lies.c`, whose receive returns a length
//! beyond the buffer, INT32_MAX, an unknown negative code and INT32_MIN: nothing is delivered,
//! each counts as a receive error, and switching back to UDP works. Plainly and under
//! AddressSanitizer (program and backend).

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::compile::shared_object;
use parsec_net_ffi_tests::process::{run, run_asan};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn lengths_beyond_the_buffer_and_unknown_codes_are_receive_errors() {
    let backend = shared_object(
        "c/bad/receive_lies.c",
        "bad",
        "libparsec_backend_receive_lies.so",
        false,
    );
    let mut command = Command::new(Build::c("c/receive_lies.c").build());
    command.arg(backend);
    run(command, TIMEOUT).assert_checks_passed("receive_lies", "receive_lies");
}

#[test]
fn lengths_beyond_the_buffer_and_unknown_codes_are_receive_errors_under_asan() {
    let backend = shared_object(
        "c/bad/receive_lies.c",
        "backends-asan",
        "libparsec_backend_receive_lies.so",
        true,
    );
    let mut command = Command::new(Build::c("c/receive_lies.c").asan().build());
    command.arg(backend);
    run_asan(command, TIMEOUT)
        .assert_checks_passed("receive_lies", "receive_lies (AddressSanitizer)");
}
