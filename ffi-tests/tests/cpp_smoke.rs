//! `cpp/smoke.cpp`: a C++11 program initializes, runs `help` and `status`, sends a datagram to
//! itself over UDP on loopback, receives it and shuts down. Run as built and under
//! AddressSanitizer.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::{run, run_asan};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn cpp_program_round_trips_a_datagram() {
    let program = Build::cpp("cpp/smoke.cpp").build();
    run(Command::new(program), TIMEOUT).assert_checks_passed("smoke", "smoke");
}

#[test]
fn cpp_program_round_trips_a_datagram_under_asan() {
    let program = Build::cpp("cpp/smoke.cpp").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    out.assert_checks_passed("smoke", "smoke (AddressSanitizer)");
}
