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
    let out = run(Command::new(program), TIMEOUT);
    out.assert_success("smoke");
    assert!(
        out.stdout.contains("smoke: 0 failed"),
        "{}",
        out.transcript()
    );
}

#[test]
fn cpp_program_round_trips_a_datagram_under_asan() {
    let program = Build::cpp("cpp/smoke.cpp").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    out.assert_success("smoke (AddressSanitizer)");
    assert!(
        out.stdout.contains("smoke: 0 failed"),
        "{}",
        out.transcript()
    );
    assert!(!out.stderr.contains("Sanitizer"), "{}", out.transcript());
}
